"""What the doctor's tests run it against: a FakeMachine made of dictionaries (no Docker, none of the tools it
looks for, no download: the fake serves files), a FakeShell for the commands `--fix` runs, and
`run_doctor`, which parses its arguments with the real `blueprint` parser."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import stat
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

from cli import doctor
from cli.doctor import checks, install, machine_checks
from cli.doctor.checks import Check
from cli.doctor.docker import SYSTEMD_RUNNING
from cli.doctor.machine import DownloadError, release_arch
from cli.doctor.needs import resources_needed
from cli.main import parser
from cli.os_family import Command
from stacks import PHASE_STACKS

GIB = 1024**3


MIB = 1024**2


HOME = Path("/home/dev")


PORTS = {"blueprint:httpPort": 80, "blueprint:httpsPort": 443, "blueprint:sshPort": 2222}


TOOLS = ("docker", "kind", "pulumi", "kubectl", "uv")


ARCHES = ("amd64", "arm64")
"""The architectures of the release files `--fix` installs (cli/doctor/machine.py `release_arch`)."""


SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
"""PATH as a login shell sets it: no folder of the home among it."""


HEALTHY_OUTPUTS = {
    "docker": (0, "29.1.3\n"),
    "kind": (0, "kind v0.31.0 go1.25.5 linux/amd64\n"),
    "pulumi": (0, "v3.272.0\n"),
    "kubectl": (0, "Client Version: v1.35.0\nKustomize Version: v5.7.1\n"),
    "uv": (0, "uv 0.9.0\n"),
}


NEEDS = resources_needed(gitlab_nodes=3, runner_nodes=1, headlamp=False)
"""What the default node counts need: 10 GiB and 4 CPUs."""


INOTIFY_OK = {"/proc/sys/fs/inotify/max_user_watches": "524288\n", "/proc/sys/fs/inotify/max_user_instances": "512\n"}


ENGINE_UNDER_SYSTEMD = frozenset({SYSTEMD_RUNNING, "/usr/lib/systemd/system/docker.service", "/usr/bin/dockerd"})
"""A Linux booted with systemd, with Docker Engine installed (its unit, dockerd)."""


@dataclass(frozen=True, kw_only=True)
class FakeMachine:
    """A machine made of dictionaries. `outputs` is keyed by "argv[0] argv[1]" or by argv[0];
    `served` is what its downloads get, by URL. `tools` are the system's, always found; what `--fix`
    installs under `home_dir` is found, as on a real machine, only from a folder on `env`'s PATH,
    and before the system's (the install folders go first on PATH)."""

    system: str = "linux"
    machine: str = "x86_64"
    tools: dict[str, str] = field(default_factory=lambda: {name: f"/usr/bin/{name}" for name in TOOLS})
    outputs: dict[str, tuple[int, str]] = field(default_factory=lambda: dict(HEALTHY_OUTPUTS))
    busy: set[int] = field(default_factory=set)
    memory: int | None = 16 * GIB
    cpus: int | None = 8
    files: dict[str, str] = field(default_factory=lambda: dict(INOTIFY_OK))
    calls: list[list[str]] = field(default_factory=list)
    addresses: dict[str, str | None] = field(default_factory=dict)
    home_dir: Path = HOME
    served: dict[str, bytes] = field(default_factory=dict)
    downloads: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=lambda: {"PATH": SYSTEM_PATH})
    paths: set[str] = field(default_factory=lambda: set(ENGINE_UNDER_SYSTEMD))
    """What is there besides `files` (folders, binaries), for `exists`."""
    user_id: int | None = 1000
    user: str | None = "dev"
    free: int | None = 100 * GIB
    """Free bytes on every filesystem; None: not readable."""
    held: dict[str, int] = field(default_factory=dict)
    """Bytes on disk under each folder (the image cache's)."""
    read_only: set[str] = field(default_factory=set)
    refused: dict[str, str] = field(default_factory=dict)
    """Cache folders the mirrors would refuse, and why (`Machine.cache_refusal`)."""
    """Folders this user cannot write to."""

    def _installed(self, name: str) -> Path | None:
        """`name` as installed under the home folder, in a folder on PATH (the first such), else None."""
        for folder in self.env.get("PATH", "").split(os.pathsep):
            path = Path(folder, name)
            if folder and path.is_relative_to(self.home_dir) and path.is_file() and path.stat().st_mode & stat.S_IXUSR:
                return path
        return None

    def which(self, name: str) -> str | None:
        installed = self._installed(name)
        return str(installed) if installed else self.tools.get(name)

    def which_in(self, name: str, path: str) -> str | None:
        """On `path` in its order: a system tool in its folder, one in `paths`, or one installed under the home folder."""
        for folder in path.split(os.pathsep):
            found = Path(folder or ".", name)
            if str(found) in (self.tools.get(name), *self.paths) or (found.is_relative_to(self.home_dir) and found.is_file()):
                return str(found)
        return None

    def run(self, argv: Sequence[str], timeout: float) -> tuple[int, str]:
        self.calls.append(list(argv))
        if self._installed(argv[0]):  # what `--fix` installed works
            return HEALTHY_OUTPUTS[argv[0]]
        found = self.outputs.get(" ".join(argv)) or self.outputs.get(" ".join(argv[:2])) or self.outputs.get(argv[0])
        return found or (127, f"{argv[0]}: command not found")

    def run_apart(self, argv: Sequence[str], timeout: float) -> tuple[int, str]:
        return self.run(argv, timeout)

    def download(self, url: str, dest: Path) -> None:
        self.downloads.append(url)
        if url not in self.served:
            raise DownloadError(f"cannot download {url}: HTTPError: 404 Not Found")
        dest.write_bytes(self.served[url])

    def port_free(self, port: int) -> bool:
        return port not in self.busy

    def memory_bytes(self) -> int | None:
        return self.memory

    def cpu_count(self) -> int | None:
        return self.cpus

    def read_text(self, path: str) -> str | None:
        return self.files.get(path)

    def home(self) -> Path:
        return self.home_dir

    def resolve(self, name: str) -> str | None:
        return self.addresses.get(name, "127.0.0.1")

    def environ(self) -> dict[str, str]:
        return self.env

    def exists(self, path: str) -> bool:
        return path in self.paths or path in self.files

    def uid(self) -> int | None:
        return self.user_id

    def free_bytes(self, path: str) -> int | None:
        return self.free

    def used_bytes(self, path: str) -> int:
        return self.held.get(path, 0)

    def writable(self, path: str) -> bool:
        return path not in self.read_only

    def cache_refusal(self, path: str) -> str | None:
        return self.refused.get(path)

    def user_name(self) -> str | None:
        return self.user


def pulumi_tarball(binary: bytes = b"#!/bin/sh\necho v3.272.0\n") -> bytes:
    """What Pulumi's release tarball holds: pulumi/<binaries>; the same bytes each time (gzip's mtime
    0), so its SHA-256 can be pinned."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as zipped, tarfile.open(fileobj=zipped, mode="w") as archive:
        for name, data in (("pulumi/pulumi", binary), ("pulumi/pulumi-language-python", b"#!/bin/sh\n")):
            member = tarfile.TarInfo(name)
            member.size, member.mode = len(data), 0o755
            archive.addfile(member, io.BytesIO(data))
    return buffer.getvalue()


def release_file(tool: str) -> bytes:
    """The fake release file of `tool` `serve_releases` serves, on every system and arch."""
    return pulumi_tarball() if tool == install.PULUMI else f"#!/bin/sh\n# {tool}\n".encode()


REAL_PINS = install.PINS
"""The SHA-256s versions.py pins for the real release files."""

FAKE_PINS = {
    tool: {
        f"{version} {system}/{arch}": hashlib.sha256(release_file(tool)).hexdigest() for system in install.INSTALLS_ON for arch in ARCHES
    }
    for tool, version in install.VERSIONS.items()
}
"""Pins of the fake release files, which the doctor's tests pin in place of the real ones (conftest.py)."""


def serve_releases(machine: FakeMachine, tampered: str | None = None) -> FakeMachine:
    """Serve kind, kubectl and Pulumi for `machine`, as FAKE_PINS pins them; `tampered` is served
    altered after it was pinned."""
    arch = release_arch(machine)
    assert arch is not None
    for tool in (install.KIND, install.KUBECTL, install.PULUMI):
        release = install.downloads(machine, tool, arch)
        machine.served[release.url] = release_file(tool) + (b"tampered" if tool == tampered else b"")
    return machine


def without(machine: FakeMachine, *tools: str) -> FakeMachine:
    for tool in tools:
        machine.tools.pop(tool)
        machine.outputs.pop(tool, None)
    return machine


def checked(machine: FakeMachine) -> dict[str, Check]:
    results = machine_checks(machine, ports=PORTS, needs=NEEDS, pulumi_min_version=checks.PULUMI_MIN_VERSION, cluster_name="blueprint")
    return {check.name: check for check in results}


def doctor_output(argv: list[str], machine: FakeMachine) -> tuple[int, str]:
    out = io.StringIO()
    code = run_doctor(argv, machine=machine, out=out)
    return code, out.getvalue()


def engine_down(m: FakeMachine) -> FakeMachine:
    m.outputs["docker"] = (1, "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?")
    return m


def engine_forbidden(m: FakeMachine) -> FakeMachine:
    m.outputs["docker"] = (1, "permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock")
    return m


def old_pulumi(m: FakeMachine) -> FakeMachine:
    m.outputs["pulumi"] = (0, "v3.120.0\n")
    return m


def busy_https(m: FakeMachine) -> FakeMachine:
    m.busy.add(443)
    return m


def low_watches(m: FakeMachine) -> FakeMachine:
    m.files["/proc/sys/fs/inotify/max_user_watches"] = "8192\n"
    return m


INOTIFY_FIX = "`sudo sysctl fs.inotify.max_user_watches=524288 fs.inotify.max_user_instances=512`"


KUBECTL_URL = "https://dl.k8s.io/release/v1.35.0/bin/linux/amd64/kubectl"


KIND_URL = "https://github.com/kubernetes-sigs/kind/releases/download/v0.31.0/kind-linux-amd64"


USERNS_RESTRICTION = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"


def userns_restricted(m: FakeMachine) -> FakeMachine:
    m.files[USERNS_RESTRICTION] = "1\n"
    return m


@dataclass
class FakeShell:
    """What `--fix` runs, recorded; no command is really run. `fails` maps a shown command to its exit code."""

    fails: dict[str, int] = field(default_factory=dict)
    ran: list[Command] = field(default_factory=list)

    def __call__(self, command: Command, out: io.StringIO | TextIO) -> int:
        self.ran.append(command)
        code = self.fails.get(command.shown, 0)
        out.write(f"    output of {command.argv[1] if len(command.argv) > 1 else command.argv[0]}{' (error)' if code else ''}\n")
        return code

    @property
    def shown(self) -> list[str]:
        return [command.shown for command in self.ran]


def never_asked(prompt: str) -> str:
    raise AssertionError(f"asked {prompt!r}")


def on(os_release: str, home_dir: Path = HOME) -> FakeMachine:
    """A Linux machine whose os-release is `os_release`, its user `dev`."""
    machine = FakeMachine(home_dir=home_dir)
    machine.files["/etc/os-release"] = os_release
    machine.env["USER"] = "dev"
    return machine


def fix(
    machine: FakeMachine, *, terminal: bool, answer: str | None = None, yes: bool = False, shell: FakeShell | None = None
) -> tuple[str, FakeShell, list[str]]:
    shell = shell or FakeShell()
    asked: list[str] = []

    def ask(prompt: str) -> str:
        asked.append(prompt)
        assert answer is not None, "asked without an answer"
        return answer

    out = io.StringIO()
    run_doctor(
        ["--fix", *(["--yes"] if yes else []), "--phase", "1"], machine=machine, out=out, terminal=terminal, ask=ask, run_command=shell
    )
    return out.getvalue(), shell, asked


DEBIAN_DOCKER = [
    "sudo apt-get update",
    "sudo apt-get install -y docker.io",
    "sudo systemctl enable --now docker",
    "sudo usermod -aG docker dev",
]


def engine_missing(m: FakeMachine, paths: set[str]) -> FakeMachine:
    """Docker's CLI alone (its static client binary), its engine down; `paths`: what else is there."""
    return replace(engine_down(m), paths=paths)


def run_doctor(argv: list[str], **options: Any) -> int:
    """`blueprint doctor <argv>`, parsed by the real `blueprint` parser and run as cli/main.py runs it,
    against the fakes in `options` (machine, out, terminal, ask, run_command)."""
    args = parser().parse_args(["doctor", *argv])
    return doctor.run((args.stack,) if args.stack else PHASE_STACKS[args.phase], fix=args.fix, yes=args.yes, **options)


PODMAN_OUTPUTS = {
    "podman -v": (0, "podman version 5.8.2\n"),
    "podman info --format {{.Version.Version}}": (0, "5.8.2\n"),
    "podman info --format {{.Host.Security.Rootless}}": (0, "false\n"),
    "podman info --format {{.Host.MemTotal}}": (0, f"{16 * GIB}\n"),
    "podman info --format {{.Host.CPUs}}": (0, "8\n"),
}
"""A fake `podman` beside the fake `docker` (HEALTHY_OUTPUTS), answering with podman v5.8.2's `info` fields
(libpod/define/info.go: Version.Version, Host.Security.Rootless, Host.MemTotal, Host.CPUs)."""


def on_podman(m: FakeMachine, *, rootless: bool = False, docker: bool = False) -> FakeMachine:
    """`m` with rootful (or rootless) Podman, and without Docker unless `docker`."""
    if not docker:
        without(m, "docker")
    m.tools["podman"] = "/usr/bin/podman"
    m.outputs.update(PODMAN_OUTPUTS)
    if rootless:
        m.outputs["podman info --format {{.Host.Security.Rootless}}"] = (0, "true\n")
    return m
