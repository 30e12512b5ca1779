"""The container engine kind and blueprint's own containers run on: Docker or Podman
(`blueprint:containerEngine`; empty: Docker when it is here, else Podman, which kind is then told).

Docker is the default, and a Docker plan is what it was before Podman: the scripts' texts are the
`.sh` files as written, and no environment variable names the engine. On Podman, kind is told so by
KIND_EXPERIMENTAL_PROVIDER, and each script's text is its Podman dialect (`for_engine`): the same
script with `podman` for each `docker` command and Podman named in each message, plus the few
exact differences of Podman's CLI (PODMAN_FORMS). Why a dialect of the same text, not a second set
of scripts nor an `$ENGINE` variable: docs/design/decisions.md, entry 49.

Podman is supported rootful only (Linux: the root service; macOS: a rootful Podman machine): kind
calls its rootless mode experimental, and blueprint's host ports 80 and 443 and the pod-owned files
it removes from the host need root (`rootless_refusal`).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Mapping
from typing import Protocol

DOCKER = "docker"
PODMAN = "podman"
ENGINES = (DOCKER, PODMAN)
"""The values of `blueprint:containerEngine` besides "" (detect)."""
LABELS = {DOCKER: "Docker", PODMAN: "Podman"}
"""How messages name each engine."""

KIND_PROVIDER = "KIND_EXPERIMENTAL_PROVIDER"
"""The variable kind reads to choose its node provider (kind v0.31.0 pkg/internal/runtime/runtime.go
`GetDefault`); unset, kind detects Docker first, then nerdctl, then Podman (pkg/cluster/provider.go)."""

VERSION_PREFIXES = {DOCKER: "Docker version", PODMAN: "podman version"}
"""What `<engine> -v` prints first when that engine's CLI is there: kind's own test of each
(pkg/cluster/internal/providers/docker/util.go and podman/util.go `IsAvailable`). A `docker` that
is Podman's shim (podman-docker) prints "podman version", and so counts as no Docker, as kind says."""

ROOTLESS_FORMAT = "{{.Host.Security.Rootless}}"
"""`podman info` field that says whether the service runs rootless (podman v5.8.2 libpod/define/info.go
`SecurityInfo.Rootless`; kind's podman provider reads the same, podman/provider.go `Info`)."""

ROOTLESS_REASON = (
    "blueprint runs kind on rootful Podman only: kind calls its rootless mode experimental "
    "(kind docs/user/rootless.md), a rootless engine cannot publish the gateway on host ports 80 and 443, "
    "and it maps the pods' users to sub-UIDs, so the host cannot remove the files they own in the data folder"
)
"""Why rootless Podman is refused: said by the doctor and by phase1 before it registers anything."""


def kind_environment(engine: str) -> dict[str, str]:
    """What kind's commands add to their environment to run on `engine`: nothing for Docker (kind's
    own first choice, and the plan as it was), KIND_PROVIDER for Podman.
    """
    return {} if engine == DOCKER else {KIND_PROVIDER: engine}


def kind_env(engine: str, environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` for a `kind` command of blueprint's own on `engine`: any KIND_PROVIDER of the user's
    shell dropped, then `kind_environment`. blueprint's engine wins, so kind never makes or reads the
    cluster on another engine than the mirrors, the wipe and `status` use (decisions.md, entry 49).
    """
    return {**{key: value for key, value in environ.items() if key != KIND_PROVIDER}, **kind_environment(engine)}


PODMAN_FORMS = {
    # Podman's network has no IPAM block: its subnets and their lease ranges are `.Subnets`
    # (podman v5.8.2 docs/source/markdown/podman-network-inspect.1.md; libnetwork/types/network.go
    # `Subnet.LeaseRange`), and `--ip-range` gives them as <start>-<end> (`podman_ip_range`).
    "{{range .IPAM.Config}}{{.Subnet}}={{.IPRange}} {{end}}": (
        "{{range .Subnets}}{{.Subnet}}={{.LeaseRange.StartIP}}-{{.LeaseRange.EndIP}} {{end}}"
    ),
    # Podman's info has no SecurityOptions: it says rootless in one field (ROOTLESS_FORMAT).
    "info -f '{{.SecurityOptions}}' 2>/dev/null)\" in *rootless*)": "info -f '" + ROOTLESS_FORMAT + "' 2>/dev/null)\" in true)",
}
"""The exact texts of the Docker scripts that Podman's CLI says otherwise, and Podman's: each must be in
some script (a test checks it), so a script edited apart from its dialect fails the suite."""

_DOCKER_WORD = re.compile(r"(?<![\w.-])docker(?![\w.-])")
"""`docker` as a command or a word, never inside a name (docker.io, docker-ce, dockerd)."""
_DOCKER_NAME = re.compile(r"(?<![\w.-])Docker(?![\w.-])")


def for_engine(text: str, engine: str) -> str:
    """`text`, a script as written for Docker, for `engine`: itself for Docker; for Podman, PODMAN_FORMS
    applied, then `podman` for each `docker` and Podman for each Docker (the commands blueprint runs
    take the same arguments on both: RESEARCH table in docs/guide/podman.md).
    """
    if engine == DOCKER:
        return text
    for docker, podman in PODMAN_FORMS.items():
        text = text.replace(docker, podman)
    return _DOCKER_NAME.sub(LABELS[PODMAN], _DOCKER_WORD.sub(PODMAN, text))


def podman_ip_range(first: str, last: str) -> str:
    """`--ip-range` as Podman takes it and its inspect prints it back: `<start>-<end>`."""
    return f"{first}-{last}"


Run = Callable[[list[str]], "tuple[int, str]"]
"""Run an argv: its exit code and its output (stdout, stderr after it); 127 when it is not there."""


def run_host(argv: list[str], timeout: float = 20) -> tuple[int, str]:
    """The real `Run`: never an exception for a missing or silent command."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        return 127, f"{argv[0]}: not found"
    except subprocess.TimeoutExpired:
        return 124, f"`{' '.join(argv)}` did not answer within {timeout:g}s"
    except OSError as error:
        return 126, str(error)
    return done.returncode, done.stdout + done.stderr


def available(engine: str, run: Run) -> bool:
    """Whether `engine`'s CLI is here as kind tests it (VERSION_PREFIXES)."""
    code, said = run([engine, "-v"])
    return code == 0 and said.strip().startswith(VERSION_PREFIXES[engine])


def detected(run: Run) -> str | None:
    """Docker when it is here, else Podman, as kind tests each; None for neither. kind on its own would
    try nerdctl between them (kind v0.31.0 pkg/cluster/provider.go `DetectNodeProvider`), which blueprint
    does not run on: it names the engine to kind instead (`kind_environment`).
    """
    return next((engine for engine in ENGINES if available(engine, run)), None)


def chosen(configured: str, run: Run) -> str:
    """The engine `blueprint:containerEngine` = `configured` means here: itself, or, empty, the one
    detected; Docker when neither answers (whose absence the doctor and kind report as before).
    """
    return configured or detected(run) or DOCKER


def rootless_refusal(engine: str, run: Run) -> str | None:
    """Why `engine` cannot run the platform here, or None: Podman that says it is rootless. A Podman
    that does not answer is not refused here: kind and the doctor say what is wrong with it.
    """
    if engine != PODMAN:
        return None
    code, said = run([PODMAN, "info", "--format", ROOTLESS_FORMAT])
    if code == 0 and said.strip() == "true":
        return ROOTLESS_REASON
    return None


class EngineFacts(Protocol):
    """What the program asks of the machine about its engine (stacks/runtime.py: the plan stands in)."""

    def chosen(self, configured: str) -> str:
        """The engine `configured` means here (`chosen`)."""

    def refusal(self, engine: str) -> str | None:
        """Why `engine` cannot run the platform here, or None (`rootless_refusal`)."""


class HostEngine:
    """The engine facts of this machine."""

    def chosen(self, configured: str) -> str:
        return chosen(configured, run_host)

    def refusal(self, engine: str) -> str | None:
        return rootless_refusal(engine, run_host)
