"""`blueprint doctor`: is this machine ready for a real `pulumi up`?

Every prerequisite in README.md "Prerequisites" becomes one pass/fail line with the exact fix, so
a first run fails here, in a second, rather than twenty minutes into phase2. The checks only talk to
the machine through the small `Machine` protocol, so the tests run them against a fake one.

`--fix` installs what needs no root (Pulumi into ~/.pulumi, kind and kubectl into ~/.local/bin)
without asking: the user asked for it, and it touches only the home folder. It runs no installer
script: it downloads each pinned release file and the checksum its publisher puts beside it, and
installs the file only if its SHA-256 matches; on a mismatch it stops and installs nothing.
What needs root or the system's package manager (installing and starting Docker, the docker group,
the inotify limits) it does with the exact commands of the detected OS family (cli/os_family.py):
it shows them, asks once, runs them in order and stops at the first that fails; `--yes` runs them
without asking, and without a terminal to ask on and without `--yes` it only prints them. Ports,
memory and the names are the user's call: it says what to do.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import hashlib
import math
import os
import platform
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Protocol, TextIO

from cli import os_family
from cli.os_family import Command, OsFamily
from versions import KIND_NODE_IMAGE, KIND_VERSION, PULUMI_VERSION

GIB = 1024**3
MIB = 1024**2


@dataclass(frozen=True, kw_only=True)
class Request:
    """What one pod, or one container of it, asks the scheduler for, as Kubernetes quantities."""

    what: str
    cpu: str
    memory: str
    source: str
    ours: bool = False
    """Set by blueprint's own code (the offline plan shows it), not a default of a chart or of Kubernetes."""


# What the platform asks of Docker, in one place. kind gives every node the whole machine's CPUs and
# memory (kind#2805), so nothing stops an overcommitted cluster: the sum below is what Docker must
# really have. Jobs that run once (GitLab's migrations, the charts' certificate and secret jobs) are
# left out: GitLab's Rails pods wait in their init containers until the migrations are done.
# CI jobs are left out too: their pods request nothing (components/runner.py sets no `cpu_request`
# or `memory_request`, and GitLab Runner then sets none).
CLUSTER_REQUESTS = (
    Request(what="kube-apiserver", cpu="250m", memory="0", source="kubeadm phases/controlplane/manifests.go"),
    Request(what="kube-controller-manager", cpu="200m", memory="0", source="kubeadm phases/controlplane/manifests.go"),
    Request(what="kube-scheduler", cpu="100m", memory="0", source="kubeadm phases/controlplane/manifests.go"),
    Request(what="etcd", cpu="100m", memory="100Mi", source="kubeadm phases/etcd/local.go"),
    Request(what="CoreDNS (1 of 2 replicas)", cpu="100m", memory="70Mi", source="kubeadm phases/addons/dns/manifests.go"),
    Request(what="CoreDNS (2 of 2 replicas)", cpu="100m", memory="70Mi", source="kubeadm phases/addons/dns/manifests.go"),
)
PLATFORM_REQUESTS = (
    Request(what="GitLab webservice", cpu="300m", memory="2.5Gi", source="components/gitlab.py", ours=True),
    Request(what="GitLab workhorse", cpu="50m", memory="100Mi", source="components/gitlab.py", ours=True),
    Request(what="GitLab Sidekiq", cpu="200m", memory="1.5Gi", source="components/gitlab.py", ours=True),
    Request(what="GitLab Gitaly", cpu="100m", memory="400Mi", source="components/gitlab.py", ours=True),
    Request(what="GitLab Shell", cpu="20m", memory="64Mi", source="components/gitlab.py", ours=True),
    Request(what="GitLab KAS", cpu="20m", memory="128Mi", source="components/gitlab.py", ours=True),
    Request(what="GitLab registry", cpu="50m", memory="64Mi", source="components/gitlab.py", ours=True),
    Request(what="GitLab toolbox", cpu="50m", memory="350M", source="GitLab chart charts/gitlab/charts/toolbox/values.yaml"),
    Request(what="GitLab exporter", cpu="75m", memory="100M", source="GitLab chart charts/gitlab/charts/gitlab-exporter/values.yaml"),
    Request(what="Envoy Gateway controller", cpu="100m", memory="256Mi", source="envoyproxy/gateway charts/gateway-helm/values.yaml"),
    Request(what="Envoy proxy (the gateway)", cpu="100m", memory="512Mi", source="envoyproxy/gateway api/v1alpha1/shared_types.go"),
    Request(what="Envoy shutdown manager", cpu="10m", memory="32Mi", source="envoyproxy/gateway api/v1alpha1/shared_types.go"),
    Request(what="CloudNativePG operator", cpu="50m", memory="128Mi", source="components/postgres.py", ours=True),
    Request(what="PostgreSQL", cpu="250m", memory="512Mi", source="components/postgres.py", ours=True),
    Request(what="Valkey", cpu="50m", memory="128Mi", source="components/redis.py", ours=True),
    Request(what="MinIO", cpu="100m", memory="256Mi", source="components/minio.py", ours=True),
    Request(what="OpenBao", cpu="50m", memory="128Mi", source="components/openbao.py", ours=True),
    Request(what="GitLab Runner (CI jobs)", cpu="50m", memory="64Mi", source="components/runner.py", ours=True),
    Request(what="GitLab Runner (image builds)", cpu="50m", memory="64Mi", source="components/runner.py", ours=True),
)
HEADLAMP_REQUESTS = (Request(what="Headlamp", cpu="50m", memory="64Mi", source="components/headlamp.py", ours=True),)
NODE_OVERHEAD = (
    Request(what="kindnet", cpu="100m", memory="50Mi", source="kind pkg/build/nodeimage/const_cni.go"),
    Request(what="node-registry hosts keeper", cpu="5m", memory="8Mi", source="components/node_registry.py", ours=True),
    # kubelet and containerd are no pods and request nothing, yet hold memory on every node: these
    # are the bounds Kubernetes' own e2e test allows them on a node without pods (test/e2e/node/
    # kubelet_perf.go, "podsPerNode: 0"; set "generously", which leaves room for kube-proxy, which
    # requests nothing either). No CPU for them: CPU is shared, and a busy CPU only slows things.
    Request(what="kubelet", cpu="0", memory="200Mi", source="kubernetes test/e2e/node/kubelet_perf.go"),
    Request(what="containerd", cpu="0", memory="125Mi", source="kubernetes test/e2e/node/kubelet_perf.go"),
)
"""Per node: the kind cluster has the control plane, `gitlabNodes` and `runnerNodes` workers."""

_QUANTITY = re.compile(r"(\d+(?:\.\d+)?)(m|Mi|Gi|M|G)?")
_SCALE = {None: 1, "m": 1 / 1000, "Mi": MIB, "Gi": GIB, "M": 10**6, "G": 10**9}


def quantity(text: str) -> float:
    """A Kubernetes quantity (the few suffixes above) as a number: "250m" is 0.25, "2.5Gi" bytes."""
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise ValueError(f"not a Kubernetes quantity this table uses: {text!r}")
    return float(match.group(1)) * _SCALE[match.group(2)]


NODE_MEMORY_BYTES = round(sum(quantity(request.memory) for request in NODE_OVERHEAD))
"""What each node adds to the memory needed."""


@dataclass(frozen=True, kw_only=True)
class Needs:
    """What Docker must give the cluster: the sum of the tables above for one config."""

    memory_bytes: int
    millicpus: int
    nodes: int

    @property
    def cpus(self) -> int:
        """Whole CPUs, as Docker counts them."""
        return math.ceil(self.millicpus / 1000)

    @property
    def gib(self) -> int:
        """Whole GiB, as Docker Desktop's setting counts them."""
        return math.ceil(self.memory_bytes / GIB)

    @property
    def why(self) -> str:
        return f"{self.nodes} nodes + platform requests"


def resources_needed(*, gitlab_nodes: int, runner_nodes: int, headlamp: bool) -> Needs:
    """What a cluster of these node counts, with the platform on it, needs of Docker."""
    nodes = 1 + gitlab_nodes + runner_nodes
    requests = [*CLUSTER_REQUESTS, *PLATFORM_REQUESTS, *(HEADLAMP_REQUESTS if headlamp else ()), *NODE_OVERHEAD * nodes]
    return Needs(
        memory_bytes=round(sum(quantity(request.memory) for request in requests)),
        millicpus=round(sum(quantity(request.cpu) for request in requests) * 1000),
        nodes=nodes,
    )


def default_needs() -> Needs:
    """What the default config (Pulumi.yaml) needs."""
    from stacks.config.schema import default_string

    return resources_needed(
        gitlab_nodes=int(default_string("gitlabNodes")),
        runner_nodes=int(default_string("runnerNodes")),
        headlamp=default_string("headlamp") == "true",
    )


PULUMI_MIN_VERSION = "3.145.0"
"""The oldest CLI that runs this project. `toolchain: uv` arrived in 3.139.0; until 3.142.0 it dropped
environment variables on the way to the program (pulumi/pulumi#17849); and until 3.145.0 Pulumi
started dynamic providers, which blueprint's OpenBao and GitLab steps are, with the system Python
rather than the project's uv environment ("Fix dynamic providers when using Poetry or uv",
pulumi/pulumi#18126, CHANGELOG 3.145.0): they fail to import there."""

PULUMI_TOO_OLD = "older Pulumi CLIs run blueprint's dynamic providers with the system Python, not the project's uv environment"

KUBECTL_VERSION = KIND_NODE_IMAGE.split(":", 1)[1].split("@", 1)[0]
"""The node image's Kubernetes version, so kubectl is within the supported skew of the cluster."""

INOTIFY_MIN = {"max_user_watches": 524288, "max_user_instances": 512}
"""kind's known issues ("Pod errors due to too many open files"): below these, a cluster of several
nodes runs out of inotify watches and pods crash with "too many open files"."""

USERNS_RESTRICTION = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"
"""1 on Ubuntu 23.10 and later (the default since 24.04): an unprivileged process that AppArmor does
not confine cannot use a user namespace of its own (ubuntu.com/blog/ubuntu-23-10-restricted-
unprivileged-user-namespaces). Rootless BuildKit, which the image-build runner runs, is such a process:
kind runs its nodes with `apparmor=unconfined` (kind pkg/cluster/internal/providers/docker/
provision.go), the build container is `Unconfined` too (components/runner.py), and unconfined is
exactly what the restriction applies to, so RootlessKit fails with "fork/exec /proc/self/exe:
permission denied". BuildKit's fix is this sysctl at 0 (moby/buildkit docs/rootless.md at v0.24.0,
"Ubuntu, 24.04 or later"). The file is absent where AppArmor is not the kernel's LSM (Fedora's
SELinux, WSL2) and in Docker Desktop's VM, whose LinuxKit kernel has no LSM at all (`# CONFIG_SECURITY
is not set`, docker/for-mac#7250): nothing to fix there."""
INOTIFY_SYSCTL_FILE = "/etc/sysctl.d/99-kind.conf"
USERNS_SYSCTL_FILE = "/etc/sysctl.d/99-rootless-buildkit.conf"
"""Its own file: the inotify fix writes 99-kind.conf, and a `tee` into one would erase the other. 99
sorts after Ubuntu's own setting, so it wins at boot."""

# MemTotal excludes what the kernel reserves at boot, so a VM given exactly 10 GiB reports a little
# less; a few percent of slack keeps the fix we print ("give Docker 10 GiB") sufficient.
_MEMORY_SLACK = 0.95

_WSL_NOTE = "; on Windows, run blueprint inside WSL2, the supported way"
_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
_PULUMI_ARCH = {"amd64": "x64", "arm64": "arm64"}
"""Pulumi names its release files' architectures x64 and arm64 (pulumi/docs data/versions.json)."""
_SHA256 = re.compile(r"[0-9a-f]{64}")
_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")

DOCKER_CLI = "Docker CLI"
DOCKER_ENGINE = "Docker engine"
KIND = "kind"
PULUMI = "Pulumi CLI"
KUBECTL = "kubectl"
UV = "uv"
MEMORY = "memory"
CPUS = "CPUs"
INOTIFY = "inotify limits"
USERNS = "user namespaces"
NAMES = "platform names"
CONFIG = "stack config"
CACHE_FOLDER = "image cache folder"
CACHE_SPACE = "image cache space"

CACHE_FULL_BYTES = 8 * 1024**3
"""What the image cache holds once every image the platform pulls is in it, an estimate: the registry
mirrors store the layers as pulled (compressed). GitLab's CNG images (webservice, sidekiq and toolbox
at about 1 GiB each over shared layers, gitaly, shell, kas, registry, exporter, certificates, kubectl,
the Envoy gateway) make about 5 GiB; the data tier, the runner and its helper, BuildKit and the apps'
base images about 1.5 GiB more; the rest is room for a GitLab upgrade's new layers beside the old ones
(the cache keeps them: ttl 0). Not measured on a real pull: a lower bound to warn against, not a quota."""
CACHE_MARGIN_BYTES = 1024**3
"""Left free beyond what the cache still needs: a filesystem filled to its last byte fails whatever writes next."""
PHASE_STACKS = {"1": ("phase1",), "2": ("phase2",), "3": ("phase3",), "all": ("phase1", "phase2", "phase3")}
"""The stacks of each `--phase` (as `blueprint up` runs them)."""
STACKS = (*PHASE_STACKS["all"], "dev")
NAMES_NEEDED_BY = frozenset({"phase2", "phase3", "dev"})
"""The stacks that call GitLab from this machine through the gateway, and so need the platform's names to
resolve to 127.0.0.1 (the /etc/hosts line); phase1 only makes the cluster."""


class Machine(Protocol):
    """What the checks may ask of the machine; `RealMachine` answers for this one."""

    @property
    def system(self) -> str:
        """One of linux, darwin, windows."""
        ...

    @property
    def machine(self) -> str:
        """The CPU architecture as uname says it: x86_64, arm64, aarch64..."""
        ...

    def which(self, name: str) -> str | None: ...

    def run(self, argv: Sequence[str], timeout: float) -> tuple[int, str]:
        """Exit code and stdout+stderr; a missing binary is 127, never an exception."""
        ...

    def port_free(self, port: int) -> bool: ...

    def memory_bytes(self) -> int | None: ...

    def cpu_count(self) -> int | None:
        """The CPUs of this machine: what the CPU check falls back to when Docker does not answer."""
        ...

    def read_text(self, path: str) -> str | None: ...

    def home(self) -> Path: ...

    def resolve(self, name: str) -> str | None:
        """The address `name` resolves to on this machine, or None."""
        ...

    def environ(self) -> Mapping[str, str]:
        """The environment variables: WSL's WSL_DISTRO_NAME, sudo's SUDO_USER."""
        ...

    def exists(self, path: str) -> bool:
        """Whether `path` is there (a file or a folder)."""
        ...

    def free_bytes(self, path: str) -> int | None:
        """The bytes free to this user on the filesystem of the existing `path`; None when it cannot be read."""
        ...

    def used_bytes(self, path: str) -> int:
        """The bytes the files under the folder `path` take on disk (0 when it is not there)."""
        ...

    def writable(self, path: str) -> bool:
        """Whether this user may create and remove files in the existing folder `path`."""
        ...

    def cache_refusal(self, path: str) -> str | None:
        """Why the image cache's mirrors would refuse the folder `path` (`cli.image_cache.folder_refusal`), or None."""
        ...

    def uid(self) -> int | None:
        """The user id this runs as (0: root); None where there is none (Windows)."""
        ...

    def user_name(self) -> str | None:
        """The name of the user this runs as, from the password database (not $USER, which may be stale)."""
        ...

    def download(self, url: str, dest: Path) -> None:
        """Save what `url` serves (redirects followed) into `dest`; a `DownloadError` when it cannot."""
        ...


class DownloadError(Exception):
    """A file could not be downloaded; the message names the URL and why."""


class RealMachine:
    """The machine this runs on."""

    def __init__(self) -> None:
        self.system = platform.system().lower()
        self.machine = platform.machine().lower()

    def which(self, name: str) -> str | None:
        return shutil.which(name)

    def run(self, argv: Sequence[str], timeout: float) -> tuple[int, str]:
        return run_argv(argv, timeout, merged=True)

    def port_free(self, port: int) -> bool:
        # No SO_REUSEADDR: with it, a bind can succeed next to a listener and hide it.
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError as error:
                if error.errno != errno.EACCES:
                    return error.errno != errno.EADDRINUSE
            else:
                return True
        # Ports below 1024 need root to bind on Linux, yet Docker binds them for us: EACCES says
        # nothing about use, so ask whether anything answers there instead.
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return False
        except OSError:
            return True

    def memory_bytes(self) -> int | None:
        # Docker's own figure first: under Docker Desktop that is the VM's size, which is what
        # the cluster gets, not the laptop's.
        code, output = self.run(["docker", "info", "--format", "{{.MemTotal}}"], timeout=20)
        if code == 0 and output.strip().isdigit():
            return int(output.strip())
        if self.system == "linux":
            match = re.search(r"^MemTotal:\s+(\d+)\s+kB", self.read_text("/proc/meminfo") or "", re.MULTILINE)
            return int(match.group(1)) * 1024 if match else None
        if self.system == "darwin":
            code, output = self.run(["sysctl", "-n", "hw.memsize"], timeout=5)
            return int(output.strip()) if code == 0 and output.strip().isdigit() else None
        return None

    def cpu_count(self) -> int | None:
        return os.cpu_count()

    def read_text(self, path: str) -> str | None:
        try:
            return Path(path).read_text()
        except OSError:
            return None

    def home(self) -> Path:
        return Path.home()

    def environ(self) -> Mapping[str, str]:
        return os.environ

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def free_bytes(self, path: str) -> int | None:
        try:
            return shutil.disk_usage(path).free
        except OSError:
            return None

    def used_bytes(self, path: str) -> int:
        from cli.image_cache import size_on_disk

        return size_on_disk(Path(path))[0] if os.path.isdir(path) else 0

    def writable(self, path: str) -> bool:
        return os.path.isdir(path) and os.access(path, os.W_OK | os.X_OK)

    def cache_refusal(self, path: str) -> str | None:
        from cli.image_cache import folder_refusal

        return folder_refusal(Path(path))

    def uid(self) -> int | None:
        return os.getuid() if hasattr(os, "getuid") else None

    def user_name(self) -> str | None:
        try:
            import pwd  # not on Windows
        except ImportError:
            return None
        try:
            return pwd.getpwuid(os.getuid()).pw_name
        except KeyError:  # a uid the password database does not know (a container's)
            return None

    def resolve(self, name: str) -> str | None:
        import socket

        try:
            return socket.gethostbyname(name)
        except OSError:
            return None

    def download(self, url: str, dest: Path) -> None:
        import requests  # not at import time: `--help` should not wait for it

        try:
            with requests.get(url, stream=True, timeout=(15, 120)) as response:
                response.raise_for_status()
                with dest.open("wb") as handle:
                    for chunk in response.iter_content(chunk_size=1 << 20):
                        handle.write(chunk)
        except (requests.RequestException, OSError) as error:
            raise DownloadError(f"cannot download {url}: {type(error).__name__}: {_first_line(str(error))}") from None


@dataclass(frozen=True, kw_only=True)
class Check:
    """One prerequisite, checked."""

    name: str
    ok: bool
    found: str
    """What the machine has, in a few words (a passing check may carry a note here)."""
    fix: str = ""
    """The exact command or instruction that makes the check pass; empty when it passes."""
    advice: str = ""
    """For a passing check that may still bite (a WARN line): what to do if it does. It stops nothing."""
    commands: tuple[Command, ...] = ()
    """The commands of `fix` that `--fix` may run for the user (after showing them and asking)."""

    def __post_init__(self) -> None:
        if self.ok == bool(self.fix):
            raise ValueError(f"check {self.name!r}: a fix is required exactly when the check fails, got ok={self.ok} fix={self.fix!r}")


@dataclass(frozen=True, kw_only=True)
class FixStep:
    """One thing `--fix` does: install `download`, or, when it is None, print `what` for the user to do."""

    what: str
    download: Download | None = None
    commands: tuple[Command, ...] = ()
    """Commands to show, and run once the user agrees (`--yes` agrees for scripts)."""


def run_argv(argv: Sequence[str], timeout: float, *, merged: bool) -> tuple[int, str]:
    """Run `argv`: its exit code and what it said; never an exception for a program that is missing,
    cannot start or does not answer (127, 126, 124). `merged`: stdout and stderr as one stream; else
    stdout when it succeeds, stderr (or stdout) when it fails.
    """
    try:
        done = subprocess.run(
            list(argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merged else subprocess.PIPE,
            text=True,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError:
        return 127, f"{argv[0]}: command not found"
    except subprocess.TimeoutExpired:
        return 124, f"`{shlex.join(argv)}` did not answer within {timeout:g}s"
    except OSError as error:
        return 126, f"{argv[0]}: {error}"
    if merged or done.returncode == 0:
        return done.returncode, done.stdout
    return done.returncode, done.stderr or done.stdout


def _version(text: str) -> tuple[int, int, int] | None:
    match = _VERSION.search(text)
    return (int(match.group(1)), int(match.group(2)), int(match.group(3))) if match else None


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else "(no output)"


def _arch(machine: Machine) -> str | None:
    return _ARCH.get(machine.machine.lower())


@dataclass(frozen=True, kw_only=True)
class Download:
    """A pinned release file that `--fix` installs only once it matches its published SHA-256."""

    tool: str
    url: str
    checksum_url: str
    """The publisher's checksum file for it, beside it."""
    listed_as: str | None
    """The name the checksum file lists it under (a `sha256sum` list), or None when the file holds
    the bare digest."""
    target: Path
    """What it becomes: the executable (kind, kubectl), or, for Pulumi's tarball, the folder its
    `pulumi/` folder becomes."""
    unpack: bool = False


def kind_url(system: str, arch: str) -> str:
    """The release asset on GitHub: kind's release build writes `<asset>.sha256sum` beside each
    (kubernetes-sigs/kind hack/release/build/cross.sh: `shasum -a 256 "$f" > "$f".sha256sum`).
    """
    return f"https://github.com/kubernetes-sigs/kind/releases/download/{KIND_VERSION}/kind-{system}-{arch}"


def kubectl_url(system: str, arch: str) -> str:
    """The release binary; `<url>.sha256` holds its bare digest (kubernetes.io, "Install and Set Up
    kubectl": `echo "$(cat kubectl.sha256)  kubectl" | sha256sum --check`).
    """
    return f"https://dl.k8s.io/release/{KUBECTL_VERSION}/bin/{system}/{arch}/kubectl"


PULUMI_RELEASES = "https://get.pulumi.com/releases/sdk"
"""Where each Pulumi release's tarballs and its `pulumi-<version>-checksums.txt` (no "v" in that
name, a `sha256sum` list) are (pulumi/docs data/versions.json; pulumi/actions installs from there)."""


def pulumi_url(system: str, arch: str) -> str:
    return f"{PULUMI_RELEASES}/pulumi-v{PULUMI_VERSION}-{system}-{_PULUMI_ARCH[arch]}.tar.gz"


def downloads(machine: Machine, tool: str, arch: str) -> Download:
    """What `--fix` fetches for `tool` on this machine, and where it installs it."""
    local_bin = machine.home() / ".local" / "bin"
    if tool == KIND:
        url = kind_url(machine.system, arch)
        return Download(tool=tool, url=url, checksum_url=f"{url}.sha256sum", listed_as=url.rsplit("/", 1)[1], target=local_bin / "kind")
    if tool == KUBECTL:
        url = kubectl_url(machine.system, arch)
        return Download(tool=tool, url=url, checksum_url=f"{url}.sha256", listed_as=None, target=local_bin / "kubectl")
    url = pulumi_url(machine.system, arch)
    return Download(
        tool=tool,
        url=url,
        checksum_url=f"{PULUMI_RELEASES}/pulumi-{PULUMI_VERSION}-checksums.txt",
        listed_as=url.rsplit("/", 1)[1],
        target=machine.home() / ".pulumi" / "bin",
        unpack=True,
    )


INSTALLS_ON = ("linux", "darwin")
"""Where `--fix` installs: the release files it knows are these systems' (on Windows, run blueprint in WSL2)."""


def _download_fix(machine: Machine, tool: str, page: str) -> str:
    arch = _arch(machine)
    if arch is None or machine.system not in INSTALLS_ON:
        return f"download {tool} for {machine.system}/{machine.machine} from {page}"
    what = downloads(machine, tool, arch)
    where = "its pulumi/ folder as ~/.pulumi/bin" if what.unpack else f"as ~/.local/bin/{tool}, executable"
    return (
        f"`blueprint doctor --fix` (downloads {what.url}, checks it against its published SHA-256, installs it); or by hand: "
        f"download it and {what.checksum_url}, compare its SHA-256 (`sha256sum`), and install {where}"
    )


def machine_family(machine: Machine) -> OsFamily:
    """The OS family of `machine`, from its os-release, /proc/version and environment."""
    os_release = next((text for path in os_family.OS_RELEASE_FILES if (text := machine.read_text(path)) is not None), None)
    return os_family.detect(
        system=machine.system, os_release=os_release, proc_version=machine.read_text("/proc/version"), environ=machine.environ()
    )


def _shown(commands: Sequence[Command]) -> str:
    return ", then ".join(f"`{command.shown}`" for command in commands)


_RELOGIN = "then log out and in again (the docker group counts from your next login; `newgrp docker` gives it to one shell now)"
_WSL_DOCKER = (
    "install Docker Desktop on Windows with the WSL2 backend (https://docs.docker.com/desktop/setup/install/windows-install/) "
    "and turn on Settings > Resources > WSL integration for this distro: a Windows install, which `blueprint doctor --fix` "
    "does not do from WSL"
)


def _sudo_user(machine: Machine) -> str | None:
    """The user who ran this through sudo (root running it, SUDO_USER set), or None."""
    return machine.environ().get("SUDO_USER") if machine.uid() == 0 else None


def _user(machine: Machine) -> str | None:
    """Whom the docker group is for: the user who ran `sudo blueprint doctor --fix` (sudo's SUDO_USER; its
    $USER is root), else the one this runs as, by the password database's name.
    """
    return machine.environ().get("SUDO_USER") or machine.user_name()


SYSTEMD_RUNNING = "/run/systemd/system"
"""sd_booted(3): systemd is the init system exactly when this folder exists. It does not in a container,
nor in WSL2 unless /etc/wsl.conf turns systemd on: `systemctl` cannot start anything there."""
DOCKER_UNITS = tuple(
    f"{folder}/docker.service"
    for folder in (
        "/etc/systemd/system",
        "/run/systemd/system",
        "/usr/local/lib/systemd/system",
        "/usr/lib/systemd/system",
        "/lib/systemd/system",
    )
)
"""Where systemd looks for docker.service (systemd.unit(5), "System Unit Search Path"); Debian 12's docker.io
puts it in /lib/systemd/system."""
DOCKERD_PATHS = ("/usr/bin/dockerd", "/usr/sbin/dockerd", "/usr/local/bin/dockerd")
"""Where the engine's packages put dockerd, besides PATH: Debian's docker.io in /usr/sbin, which a user's PATH lacks."""
DOCKER_INIT_SCRIPT = "/etc/init.d/docker"
_NO_SYSTEMD = f"systemd does not run here (no {SYSTEMD_RUNNING}: a container, or WSL2 without systemd)"
_FOREGROUND = "run `sudo dockerd` in a terminal of its own (it stays in the foreground)"


def _dockerd(machine: Machine) -> str | None:
    return machine.which("dockerd") or next((path for path in DOCKERD_PATHS if machine.exists(path)), None)


def _engine_install(machine: Machine, family: OsFamily, name: str, found: str) -> Check | None:
    """The failing check `name` of a machine without Docker Engine, with its family's commands: install,
    start (systemd's unit where systemd runs, else the init script Debian's docker.io ships), and the
    docker group for the user; None for a family blueprint has no packages for.
    """
    install = os_family.docker_install(family)
    if not install:
        return None
    if machine.exists(SYSTEMD_RUNNING):
        start: tuple[Command, ...] = (os_family.DOCKER_START,)
    else:
        start = (os_family.DOCKER_SERVICE_START,) if family.key == os_family.DEBIAN else ()
    user = _user(machine)
    group = (os_family.docker_group(user),) if user and user != "root" else ()  # root needs no group
    commands = (*install, *start, *group)
    after = [] if start else [f"then start it: {_NO_SYSTEMD}, so {_FOREGROUND}"]
    after += [_RELOGIN] if group else [] if user == "root" else ["then add yourself to the docker group"]
    fix = f"install Docker Engine from {family.name}'s packages: {_shown(commands)}" + "".join(f"; {line}" for line in after)
    return Check(name=name, ok=False, found=found, fix=fix, commands=commands)


def _docker_install(machine: Machine, family: OsFamily) -> Check:
    """The failing check of a machine without Docker, with its family's install commands."""
    if family.wsl:
        return Check(name=DOCKER_CLI, ok=False, found="no `docker` on PATH", fix=_WSL_DOCKER)
    if family.key == os_family.MACOS and machine.which("brew") is not None:
        commands: tuple[Command, ...] = (os_family.MACOS_DOCKER_INSTALL, os_family.MACOS_DOCKER_OPEN)
        fix = f"install Docker Desktop with Homebrew: {_shown(commands)} (it opens Docker Desktop's window: accept its terms there)"
        return Check(name=DOCKER_CLI, ok=False, found="no `docker` on PATH", fix=fix, commands=commands)
    check = _engine_install(machine, family, DOCKER_CLI, "no `docker` on PATH")
    if check is not None:
        return check
    fix = {
        "darwin": "install Docker Desktop: https://docs.docker.com/desktop/setup/install/mac-install/ "
        f"(or, with Homebrew: `brew install --cask {os_family.MACOS_DOCKER_CASK}`)",
        "windows": "install Docker Desktop with the WSL2 backend: https://docs.docker.com/desktop/setup/install/windows-install/",
    }.get(
        machine.system,
        "install Docker Engine (https://docs.docker.com/engine/install/), then `sudo usermod -aG docker $USER`, log in again",
    )
    return Check(name=DOCKER_CLI, ok=False, found="no `docker` on PATH", fix=fix)


def _docker_down(machine: Machine, family: OsFamily, output: str) -> Check:
    """The failing engine check of a machine whose `docker info` failed, with its family's fix."""
    found = f"not reachable: {_first_line(output)}"
    if "permission denied" in output.lower():
        user = _user(machine)
        if family.known_linux and user:
            commands: tuple[Command, ...] = (os_family.docker_group(user),)
            return Check(name=DOCKER_ENGINE, ok=False, found=found, fix=f"{_shown(commands)}, {_RELOGIN}", commands=commands)
        fix = "`sudo usermod -aG docker $USER`, then log out and in again (or run `newgrp docker` in this shell)"
        return Check(name=DOCKER_ENGINE, ok=False, found=found, fix=fix)
    if family.wsl:
        fix = (
            "start Docker Desktop on Windows and wait until it says it is running; in its Settings > Resources > WSL integration, "
            f"turn this distro on (or, with Docker Engine installed in this distro and systemd on in WSL: `{os_family.DOCKER_START.shown}`)"
        )
        return Check(name=DOCKER_ENGINE, ok=False, found=found, fix=fix)
    if family.key == os_family.MACOS:
        commands = (os_family.MACOS_DOCKER_OPEN,)
        return Check(
            name=DOCKER_ENGINE,
            ok=False,
            found=found,
            fix=f"start Docker Desktop ({_shown(commands)}) and wait until it says it is running",
            commands=commands,
        )
    if machine.system == "windows":
        return Check(name=DOCKER_ENGINE, ok=False, found=found, fix="start Docker Desktop and wait until it says it is running")
    return _engine_down_on_linux(machine, family, found)


def _engine_down_on_linux(machine: Machine, family: OsFamily, found: str) -> Check:
    """Start the engine the way this Linux can: systemd's unit, else the init script; install it first
    where only the CLI is here (Docker's static client binaries, say), since no unit can start what is not.
    """
    dockerd = _dockerd(machine)
    unit = any(machine.exists(path) for path in DOCKER_UNITS)
    if dockerd is None and not unit:
        found = f"{found}; the Docker CLI is here, Docker Engine (dockerd) is not installed"
        check = _engine_install(machine, family, DOCKER_ENGINE, found)
        if check is not None:
            return check
        user = _user(machine)
        who = shlex.quote(user) if user else "$USER"
        fix = f"install Docker Engine (https://docs.docker.com/engine/install/), start it, then `sudo usermod -aG docker {who}`"
        return Check(name=DOCKER_ENGINE, ok=False, found=found, fix=fix)
    systemd = machine.exists(SYSTEMD_RUNNING)
    if systemd and unit:
        if family.known_linux:
            commands: tuple[Command, ...] = (os_family.DOCKER_START,)
            fix = f"{_shown(commands)} (starts it now and at every boot)"
            return Check(name=DOCKER_ENGINE, ok=False, found=found, fix=fix, commands=commands)
        fix = "`sudo systemctl start docker` (and `sudo systemctl enable docker` to start it at boot)"
        return Check(name=DOCKER_ENGINE, ok=False, found=found, fix=fix)
    if not systemd and machine.exists(DOCKER_INIT_SCRIPT):
        commands = (os_family.DOCKER_SERVICE_START,)
        fix = f"{_shown(commands)} ({_NO_SYSTEMD}: Docker's init script starts it; again after each restart)"
        return Check(name=DOCKER_ENGINE, ok=False, found=found, fix=fix, commands=commands)
    why = _NO_SYSTEMD + " and Docker has no init script" if not systemd else f"dockerd ({dockerd}) has no docker.service unit for systemd"
    return Check(name=DOCKER_ENGINE, ok=False, found=f"{found}; {why}", fix=f"start it the way it was installed: {_FOREGROUND}")


def _docker_checks(machine: Machine, family: OsFamily | None = None) -> list[Check]:
    family = family or machine_family(machine)
    if machine.which("docker") is None:
        install = _docker_install(machine, family)
        # The engine's line says the same fix, and runs nothing of its own: the CLI's commands install both.
        return [install, Check(name=DOCKER_ENGINE, ok=False, found="not checked: no Docker CLI", fix=install.fix)]
    cli = Check(name=DOCKER_CLI, ok=True, found=str(machine.which("docker")))
    code, output = machine.run(["docker", "info", "--format", "{{.ServerVersion}}"], timeout=20)
    if code == 0:
        return [cli, Check(name=DOCKER_ENGINE, ok=True, found=f"server {_first_line(output)}")]
    return [cli, _docker_down(machine, family, output)]


def _kind_check(machine: Machine) -> Check:
    fix = _download_fix(machine, KIND, f"https://github.com/kubernetes-sigs/kind/releases/tag/{KIND_VERSION}")
    if machine.which("kind") is None:
        return Check(name=KIND, ok=False, found="no `kind` on PATH", fix=fix)
    code, output = machine.run(["kind", "version"], timeout=10)
    found = _version(output)
    if code != 0 or found is None:
        return Check(name=KIND, ok=False, found=f"`kind version` failed: {_first_line(output)}", fix=fix)
    shown = "v{}.{}.{}".format(*found)
    if shown != KIND_VERSION:
        return Check(name=KIND, ok=True, found=f"{shown} (works; the node image is pinned for {KIND_VERSION}, expect a warning)")
    return Check(name=KIND, ok=True, found=shown)


def _pulumi_check(machine: Machine, minimum: str) -> Check:
    fix = _download_fix(machine, PULUMI, "https://www.pulumi.com/docs/iac/download-install/") + "; then put ~/.pulumi/bin first on PATH"
    if machine.which("pulumi") is None:
        return Check(name=PULUMI, ok=False, found="no `pulumi` on PATH", fix=fix)
    code, output = machine.run(["pulumi", "version"], timeout=20)
    found = _version(output)
    needed = _version(minimum)
    if code != 0 or found is None or needed is None:
        return Check(name=PULUMI, ok=False, found=f"`pulumi version` failed: {_first_line(output)}", fix=fix)
    shown = "v{}.{}.{}".format(*found)
    if found < needed:
        return Check(name=PULUMI, ok=False, found=f"{shown}, older than {minimum}: {PULUMI_TOO_OLD}", fix=fix)
    return Check(name=PULUMI, ok=True, found=shown)


def _kubectl_check(machine: Machine) -> Check:
    fix = _download_fix(machine, KUBECTL, "https://kubernetes.io/docs/tasks/tools/")
    if machine.which("kubectl") is None:
        return Check(name=KUBECTL, ok=False, found="no `kubectl` on PATH", fix=fix)
    code, output = machine.run(["kubectl", "version", "--client"], timeout=10)
    found = _version(output)
    if code != 0 or found is None:
        return Check(name=KUBECTL, ok=False, found=f"`kubectl version --client` failed: {_first_line(output)}", fix=fix)
    shown = "v{}.{}.{}".format(*found)
    wanted = _version(KUBECTL_VERSION)
    if wanted is not None and (found[0] != wanted[0] or abs(found[1] - wanted[1]) > 1):
        return Check(
            name=KUBECTL,
            ok=True,
            found=f"{shown}: more than one minor from the cluster's {KUBECTL_VERSION}, outside kubectl's supported skew; "
            f"blueprint's few kubectl calls work, but kubectl {KUBECTL_VERSION} is the one to use",
        )
    return Check(name=KUBECTL, ok=True, found=shown)


def _uv_check(machine: Machine) -> Check:
    if machine.which("uv") is None:
        fix = "`curl -LsSf https://astral.sh/uv/install.sh | sh` (or `pip install uv`)"
        return Check(name=UV, ok=False, found="no `uv` on PATH", fix=fix)
    _, output = machine.run(["uv", "--version"], timeout=10)
    return Check(name=UV, ok=True, found=_first_line(output))


def _port_check(machine: Machine, key: str, port: int, stack: str, cluster_name: str | None) -> Check:
    from stacks.config.schema import ways_to_set

    name = f"port {port} ({key})"
    if machine.port_free(port):
        return Check(name=name, ok=True, found="free")
    if cluster_name is not None and machine.which("docker") is not None:
        # After `pulumi up` the cluster's own node holds these ports: that is not a conflict.
        code, output = machine.run(["docker", "ps", "--filter", f"publish={port}", "--format", "{{.Names}}"], timeout=20)
        holders = output.split() if code == 0 else []
        if f"{cluster_name}-control-plane" in holders:
            return Check(name=name, ok=True, found=f"published by {cluster_name}-control-plane: the cluster is already up")
        if holders:
            return Check(
                name=name,
                ok=False,
                found=f"{key} {port} is in use by container {', '.join(holders)}",
                fix=f"`docker stop {shlex.quote(holders[0])}`, or {ways_to_set(stack, key.removeprefix('blueprint:'), '<free port>')}",
            )
    lookup = f"`netstat -ano | findstr :{port}`" if machine.system == "windows" else f"`sudo lsof -nP -iTCP:{port} -sTCP:LISTEN`"
    return Check(
        name=name,
        ok=False,
        found=f"{key} {port} is in use",
        fix=f"{ways_to_set(stack, key.removeprefix('blueprint:'), '<free port>')}; or stop what uses it ({lookup} shows it)",
    )


def _fewer_nodes(needs: Needs) -> str:
    """The other fix for too little memory, when the config has more nodes than the fewest."""
    if needs.nodes <= 3:  # the control plane and one worker of each role
        return ""
    return f"; or fewer nodes (blueprint:gitlabNodes, blueprint:runnerNodes): each needs {NODE_MEMORY_BYTES // MIB} MiB"


def _memory_check(machine: Machine, needs: Needs) -> Check:
    total = machine.memory_bytes()
    gib = needs.gib
    if total is None:
        return Check(name=MEMORY, ok=True, found=f"unknown (could not read it); make sure Docker has at least {gib} GiB ({needs.why})")
    found = f"{total / GIB:.1f} GiB total"
    if total >= needs.memory_bytes * _MEMORY_SLACK:
        return Check(name=MEMORY, ok=True, found=f"{found}, needs {gib} GiB ({needs.why})")
    fix = {
        "darwin": f"Docker Desktop > Settings > Resources: give Docker at least {gib} GiB (and {needs.cpus} CPUs), then Apply & restart",
        "windows": f"in %UserProfile%\\.wslconfig set `memory={gib}GB` under [wsl2], then `wsl --shutdown` and restart Docker Desktop",
    }.get(machine.system, f"close other applications, or use a machine with at least {gib} GiB")
    return Check(name=MEMORY, ok=False, found=f"{found}, needs {gib} GiB: {needs.why}", fix=fix + _fewer_nodes(needs))


def _cpu_check(machine: Machine, needs: Needs) -> Check:
    # Docker's own count first: under Docker Desktop that is the VM's, which is what the cluster gets.
    code, output = machine.run(["docker", "info", "--format", "{{.NCPU}}"], timeout=20)
    cpus = int(output.strip()) if code == 0 and output.strip().isdigit() else machine.cpu_count()
    wanted = needs.cpus
    if cpus is None:
        return Check(name=CPUS, ok=True, found=f"unknown (could not read it); make sure Docker has at least {wanted} CPUs ({needs.why})")
    if cpus >= wanted:
        return Check(name=CPUS, ok=True, found=f"{cpus}, needs {wanted} ({needs.why})")
    fix = {
        "darwin": f"Docker Desktop > Settings > Resources: give Docker at least {wanted} CPUs (and {needs.gib} GiB), then Apply & restart",
        "windows": f"in %UserProfile%\\.wslconfig set `processors={wanted}` under [wsl2], then `wsl --shutdown` and restart Docker Desktop",
    }.get(machine.system, f"use a machine with at least {wanted} CPUs (Docker Engine gives the cluster all of this one's)")
    return Check(name=CPUS, ok=False, found=f"{cpus}, needs {wanted}: {needs.why}", fix=fix)


def _inotify_check(machine: Machine) -> Check:
    current: dict[str, int | None] = {}
    for key in INOTIFY_MIN:
        text = (machine.read_text(f"/proc/sys/fs/inotify/{key}") or "").strip()
        current[key] = int(text) if text.isdigit() else None
    found = ", ".join(f"{key}={'unreadable' if value is None else value}" for key, value in current.items())
    if all(value is not None and value >= INOTIFY_MIN[key] for key, value in current.items()):
        return Check(name=INOTIFY, ok=True, found=found)
    # Never lower a limit that is already above the minimum.
    target = {key: max(INOTIFY_MIN[key], current[key] or 0) for key in INOTIFY_MIN}
    # The kernel's own interface, the same on every Linux family: `--fix` may run it on any.
    now = Command(argv=("sudo", "sysctl", *(f"fs.inotify.{key}={value}" for key, value in target.items())))
    lines = "".join(f"fs.inotify.{key} = {value}\n" for key, value in target.items())
    persist = Command(argv=("sudo", "tee", INOTIFY_SYSCTL_FILE), stdin=lines)
    fix = f"`{now.shown}`; to keep it after a reboot: `{persist.shown}`"
    minimum = ", ".join(f"{key} >= {value}" for key, value in INOTIFY_MIN.items())
    return Check(name=INOTIFY, ok=False, found=f"{found} (kind needs {minimum})", fix=fix, commands=(now, persist))


def _userns_check(machine: Machine) -> Check:
    """Can rootless BuildKit, in the image-build runner's jobs, create its user namespace?"""
    value = (machine.read_text(USERNS_RESTRICTION) or "").strip()
    if value != "1":
        found = "not restricted by AppArmor" if value in ("", "0") else f"kernel.apparmor_restrict_unprivileged_userns={value}"
        return Check(name=USERNS, ok=True, found=found)
    code, output = machine.run(["docker", "info", "--format", "{{.OperatingSystem}}"], timeout=20)
    if code == 0 and "Docker Desktop" in output:
        # Docker Desktop on Linux runs the cluster in its own VM: that kernel's setting is what counts.
        return Check(name=USERNS, ok=True, found="restricted here, but the cluster runs in Docker Desktop's VM, which has no AppArmor")
    setting = "kernel.apparmor_restrict_unprivileged_userns"
    persist = f"printf '%s\\n' {shlex.quote(f'{setting} = 0')} | sudo tee {shlex.quote(USERNS_SYSCTL_FILE)}"
    # A warning, not a failure: Ubuntu's apparmor package ships a `rootlesskit` profile that may let
    # BuildKit's /usr/bin/rootlesskit make its namespace anyway (docker/docker-ce-packaging#952), and
    # only the apps' image builds (phase3's pipelines) would fail: no reason to stop the platform's up.
    return Check(
        name=USERNS,
        ok=True,
        found=f"{setting}=1 (Ubuntu's default since 24.04): AppArmor may stop rootless BuildKit from creating its user "
        "namespace, and then the image builds of the apps' pipelines fail (`fork/exec /proc/self/exe: permission denied`)",
        advice=f"`sudo sysctl {setting}=0` (BuildKit's documented fix; it lifts Ubuntu's restriction for every unconfined program); "
        f"to keep it after a reboot: `{persist}`",
    )


def _names_check(machine: Machine, names: Sequence[str]) -> Check:
    """phase2 calls GitLab from this machine (the admin token, the runner), through the gateway on
    127.0.0.1: the platform's names must resolve there.
    """
    wrong = [name for name in names if not (machine.resolve(name) or "").startswith("127.")]
    if not wrong:
        return Check(name=NAMES, ok=True, found=f"{len(names)} names resolve to 127.0.0.1")
    line = f"127.0.0.1 {' '.join(names)}"
    return Check(
        name=NAMES,
        ok=False,
        found=f"{', '.join(wrong)} do{'es' if len(wrong) == 1 else ''} not resolve to 127.0.0.1",
        fix=f"add this line to /etc/hosts (C:\\Windows\\System32\\drivers\\etc\\hosts on Windows): {line}",
    )


def _nearest_existing(machine: Machine, folder: PurePosixPath) -> PurePosixPath:
    """`folder`, or its nearest ancestor that exists: where it will be made."""
    return next((path for path in (folder, *folder.parents) if machine.exists(str(path))), PurePosixPath(folder.anchor or "/"))


def image_cache_checks(machine: Machine, folder: Path | None, stack: str) -> list[Check]:
    """The image cache folder of `stack` (None: `imageCache` is false): writable, or creatable, and on a
    filesystem with room for what the cache still has to download (`CACHE_FULL_BYTES` less what it holds).
    """
    from cli.image_cache import shown_size
    from stacks.config.schema import ways_to_set

    if folder is None:
        return [Check(name=CACHE_SPACE, ok=True, found="off (blueprint:imageCache=false): every up downloads every image again")]
    path = PurePosixPath(folder)
    existing = _nearest_existing(machine, path)
    elsewhere = ways_to_set(stack, "imageCacheDir", "<a folder on a disk with more room>")
    off = ways_to_set(stack, "imageCache", "false")
    where = str(folder) if existing == path else f"{existing} (where {folder} will be made)"
    quoted = shlex.quote(str(folder))
    elsewhere_any = ways_to_set(stack, "imageCacheDir", "<folder>")
    if refusal := machine.cache_refusal(str(folder)):
        writable = Check(
            name=CACHE_FOLDER,
            ok=False,
            found=f"{folder} {refusal}: the image cache is made only of a new or empty folder of your own",
            fix=elsewhere_any,
        )
    elif not machine.writable(str(existing)):
        writable = Check(
            name=CACHE_FOLDER,
            ok=False,
            found=f"{where} is not a folder you can write to",
            fix=f'`sudo mkdir -p {quoted} && sudo chown "$(id -u):$(id -g)" {quoted}`; or {elsewhere_any}',
        )
    else:
        writable = Check(name=CACHE_FOLDER, ok=True, found=f"{where}: writable")
    free = machine.free_bytes(str(existing))
    if free is None:
        return [writable, Check(name=CACHE_SPACE, ok=True, found=f"unknown (cannot read the free space of {existing})")]
    held = machine.used_bytes(str(folder)) if existing == path else 0
    needed = max(CACHE_FULL_BYTES - held, 0) + CACHE_MARGIN_BYTES
    found = (
        f"{shown_size(free)} free on the filesystem of {existing}; the cache holds {shown_size(held)} of GitLab's and the "
        f"platform's images (about {shown_size(CACHE_FULL_BYTES)} in all), so it needs {shown_size(needed)}"
    )
    if free >= needed:
        return [writable, Check(name=CACHE_SPACE, ok=True, found=found)]
    fix = (
        f"free {shown_size(needed - free)} on that filesystem (`docker image prune -a` removes the images no container "
        "uses, if Docker keeps them there); "
        f"or put the cache on a disk with more room: {elsewhere}; or run without a cache (every up downloads every image "
        f"again): {off}"
    )
    return [writable, Check(name=CACHE_SPACE, ok=False, found=found, fix=fix)]


def checks(
    machine: Machine,
    *,
    ports: Mapping[str, int],
    needs: Needs,
    pulumi_min_version: str,
    stack: str = "phase1",
    cluster_name: str | None = None,
    names: Sequence[str] = (),
) -> list[Check]:
    """Every prerequisite of a real run, in README order. `ports` maps full config keys to host
    ports ("blueprint:httpsPort": 443); `stack` is the stack whose config sets them, for the
    `pulumi config set` fix; a port published by `cluster_name`'s own node counts as free; `needs`
    is what the config needs of Docker (`resources_needed`).
    """
    result = _docker_checks(machine, machine_family(machine))
    result += [_kind_check(machine), _pulumi_check(machine, pulumi_min_version), _kubectl_check(machine), _uv_check(machine)]
    result += [_port_check(machine, key, port, stack, cluster_name) for key, port in ports.items()]
    result += [_memory_check(machine, needs), _cpu_check(machine, needs)]
    if names:
        result.append(_names_check(machine, names))
    if machine.system == "linux":
        result.append(_inotify_check(machine))
        result.append(_userns_check(machine))
    if machine.system == "windows":
        result = [check if check.ok else replace(check, found=check.found + _WSL_NOTE) for check in result]
    if machine.uid() == 0:
        result = [_as_root(check) for check in result]
    return result


_SUDO = re.compile(r"(`|\| )sudo ")
"""`sudo` where a fix's text starts a command with it: at a backtick, or after a pipe."""


def _as_root(check: Check) -> Check:
    """`check` for a doctor run as root (`sudo blueprint doctor`, a container's root): its commands and
    their text without `sudo`, which root does not need and a container may not have.
    """
    return replace(
        check,
        commands=tuple(command.as_root() for command in check.commands),
        fix=_SUDO.sub(r"\1", check.fix),
        advice=_SUDO.sub(r"\1", check.advice),
    )


def fix_plan(failed: list[Check], machine: Machine) -> list[FixStep]:
    """What `--fix` does about `failed`: installs that need no root, in user folders, each checked
    against its published SHA-256; the commands of the OS family (Docker, the inotify limits), to
    run once the user agrees; everything else (ports, memory, names) as the check's own fix, to print.
    """
    arch = _arch(machine)
    can_install = machine.system in INSTALLS_ON and arch is not None
    steps: list[FixStep] = []
    on_path: list[str] = []
    run_by_commands = {check.fix for check in failed if check.commands}
    for check in failed:
        if check.ok:
            continue
        if not check.commands and check.fix in run_by_commands:
            continue  # the Docker engine's line when Docker is missing: the Docker CLI's commands install both
        if check.commands:
            steps.append(FixStep(what=f"{check.name}: {check.fix}", commands=check.commands))
        elif can_install and arch is not None and check.name in (KIND, KUBECTL, PULUMI) and (sudo_user := _sudo_user(machine)):
            # Under sudo the home is root's: the tools would land where the user's shell never looks.
            steps.append(
                FixStep(
                    what=f"{check.name}: not installed under sudo (it would go to root's home): run "
                    f"`uv run blueprint doctor --fix` as {sudo_user}, without sudo (it installs under your home)"
                )
            )
        elif can_install and arch is not None and check.name in (KIND, KUBECTL, PULUMI):
            download = downloads(machine, check.name, arch)
            version = PULUMI_VERSION if check.name == PULUMI else KIND_VERSION if check.name == KIND else KUBECTL_VERSION
            steps.append(FixStep(what=f"install {check.name} {version} as {download.target}", download=download))
            on_path.append("$HOME/.pulumi/bin" if check.name == PULUMI else "$HOME/.local/bin")
        else:
            steps.append(FixStep(what=f"{check.name}: {check.fix}"))
    if on_path:
        path = ":".join(dict.fromkeys(on_path))
        steps.append(FixStep(what=f'if they are not on PATH yet, add to ~/.bashrc or ~/.zshrc: export PATH="{path}:$PATH"'))
    if not can_install and any(check.name in (KIND, KUBECTL, PULUMI) for check in failed):
        why = f"there is no download for {machine.system}/{machine.machine}"
        steps.insert(0, FixStep(what=f"nothing can be installed automatically here ({why}): follow the instructions below"))
    return steps


class InstallError(Exception):
    """A download could not be installed; nothing of it was. The message says why and what to do."""


class ChecksumMismatch(InstallError):
    """A download does not match its published SHA-256: `--fix` stops."""


def published_digest(text: str, listed_as: str | None) -> str | None:
    """The SHA-256 a checksum file publishes: the bare digest (kubectl's `.sha256`), or the one a
    `sha256sum` list gives `listed_as` (kind's `.sha256sum`, Pulumi's checksums.txt); None if absent.
    """
    for line in text.splitlines():
        fields = line.split()
        if not fields or not _SHA256.fullmatch(fields[0].lower()):
            continue
        if (listed_as is None and len(fields) == 1) or (listed_as is not None and fields[1:] in ([listed_as], [f"*{listed_as}"])):
            return fields[0].lower()
    return None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def unpack(archive: tarfile.TarFile, folder: Path) -> None:
    """Unpack `archive` into `folder`, nothing outside it: tarfile's `data` filter (PEP 706), which
    Python has from 3.11.4 on (Debian 12 ships 3.11.2); on an older Python, stricter rules checked
    here: regular files and folders only (no link, device or fifo), no absolute name, no `..`, each
    file made new (never written through something already there), with no mode but rwx for its user
    and r-x for the rest, owned by whoever unpacks it. A member that breaks them is a TarError.
    """
    if hasattr(tarfile, "data_filter"):
        archive.extractall(folder, filter="data")
        return
    folder.mkdir(parents=True, exist_ok=True)
    for member in archive.getmembers():
        parts = [part for part in PurePosixPath(member.name).parts if part != "."]
        if member.name.startswith("/") or ".." in parts:
            raise tarfile.TarError(f"{member.name!r} would be unpacked outside its folder")
        if not (member.isreg() or member.isdir()):
            raise tarfile.TarError(f"{member.name!r} is not a plain file or folder (a link, a device or a fifo)")
        target = folder.joinpath(*parts)
        if member.isdir():
            target.mkdir(mode=0o755, parents=True, exist_ok=True)
            continue
        target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        source = archive.extractfile(member)
        if source is None:
            raise tarfile.TarError(f"{member.name!r} cannot be read")
        mode = 0o755 if member.mode & 0o100 else 0o644
        try:
            descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        except FileExistsError:
            raise tarfile.TarError(f"{member.name!r} is in the archive twice") from None
        with source, os.fdopen(descriptor, "wb") as written:
            shutil.copyfileobj(source, written)
        target.chmod(mode)  # os.open's mode goes through the umask


def install(machine: Machine, download: Download) -> None:
    """Fetch `download` and its checksum into a scratch folder, check it, and only then put it in
    place (renamed into its target, so a failure half-way leaves the old one or none, never a part).
    """
    with tempfile.TemporaryDirectory(prefix=f"blueprint-{download.tool}-") as scratch:
        fetched, sums = Path(scratch) / "download", Path(scratch) / "checksum"
        try:
            machine.download(download.url, fetched)
            machine.download(download.checksum_url, sums)
        except DownloadError as error:
            raise InstallError(f"{error}; nothing was installed: run `blueprint doctor --fix` again") from None
        expected = published_digest(sums.read_text(errors="replace"), download.listed_as)
        if expected is None:
            listed = f" for {download.listed_as}" if download.listed_as else ""
            raise InstallError(f"{download.checksum_url} holds no SHA-256{listed}; nothing was installed")
        actual = _sha256(fetched)
        if actual != expected:
            raise ChecksumMismatch(
                f"{download.url} does not match its published SHA-256 ({download.checksum_url}): expected {expected}, got {actual}. "
                f"Nothing was installed. The download was altered or cut short: run `blueprint doctor --fix` again later, "
                f"and if it still differs, do not install that file"
            )
        download.target.parent.mkdir(parents=True, exist_ok=True)
        staged = download.target.with_name(f".{download.target.name}.blueprint-new")
        if staged.is_dir():  # left by an install that was killed half-way
            shutil.rmtree(staged)
        staged.unlink(missing_ok=True)
        if not download.unpack:
            shutil.copyfile(fetched, staged)
            staged.chmod(0o755)
            os.replace(staged, download.target)
            return
        unpacked = Path(scratch) / "unpacked"
        try:
            with tarfile.open(fetched) as archive:
                unpack(archive, unpacked)
        except tarfile.TarError as error:
            raise InstallError(f"{download.url} cannot be unpacked ({error}); nothing was installed") from None
        # Pulumi's tarball holds `pulumi/<binaries>`; older ones held `pulumi/bin/<binaries>`.
        root = unpacked / "pulumi" / "bin" if (unpacked / "pulumi" / "bin").is_dir() else unpacked / "pulumi"
        if not (root / "pulumi").is_file():
            raise InstallError(f"{download.url} holds no pulumi/pulumi binary; nothing was installed")
        shutil.copytree(root, staged)
        previous = download.target.with_name(f".{download.target.name}.blueprint-old")
        shutil.rmtree(previous, ignore_errors=True)
        if download.target.exists():
            os.replace(download.target, previous)
        os.replace(staged, download.target)
        shutil.rmtree(previous, ignore_errors=True)


def _print_checks(results: list[Check], out: TextIO) -> None:
    width = max(len(check.name) for check in results)
    for check in results:
        out.write(f"{'FAIL' if not check.ok else 'WARN' if check.advice else 'PASS'}  {check.name:<{width}}  {check.found}\n")
        if not check.ok or check.advice:
            fix = (check.fix or check.advice).replace("\n", "\n           ")
            out.write(f"      {'fix' if not check.ok else 'if it does'}: {fix}\n")
    failed = [check.name for check in results if not check.ok]
    if failed:
        out.write(f"{len(failed)} of {len(results)} checks failed: {', '.join(failed)}\n")
    else:
        out.write(f"all {len(results)} checks passed: ready for `pulumi up`\n")


def platform_names(domain: str) -> tuple[str, ...]:
    """The names the laptop must resolve: GitLab's, the registry's, KAS's, and every app's."""
    from apps_manifest import ManifestError, host_names, load_manifest

    try:
        return host_names(domain, load_manifest())
    except ManifestError:
        return host_names(domain, [])


def config_check(stacks: Sequence[str]) -> Check:
    """Everything the `stacks` read (each one's config, the apps manifest), checked in one pass."""
    from stacks.validation import check_stack_files

    checked = f"the config of {', '.join(stacks)}{' and the apps manifest' if stacks != ['phase1'] else ''}"
    problem = check_stack_files(stacks)
    if problem is None:
        return Check(name=CONFIG, ok=True, found=f"{checked}: valid")
    return Check(name=CONFIG, ok=False, found=f"{checked}: {problem.splitlines()[0]}", fix="\n".join(problem.splitlines()[1:]))


def _all_checks(machine: Machine, stacks: Sequence[str]) -> list[Check]:
    # Imported here: the config code imports pulumi, which `--help` should not wait for.
    from stacks.config import NAMESPACE, ConfigError
    from stacks.config.phases import parse_phase1
    from stacks.config.schema import stack_config

    # The machine's checks read the cluster's settings: phase1's, or dev's own.
    stack = "dev" if "dev" in stacks else "phase1"
    stacks_checked = config_check(stacks)
    prefix = f"{NAMESPACE}:"
    try:
        values, secret = stack_config(stack)
        raw = {key.removeprefix(prefix): value for key, value in values.items() if key.startswith(prefix)}
        hidden = frozenset(key.removeprefix(prefix) for key in secret)
        config = parse_phase1(raw, secret_keys=hidden, stack=stack, stand_ins=hidden)
    except ConfigError:
        # Said by the config check when `stack` is selected; else only a note: phase2 and phase3 do not read it.
        machine_checks = checks(machine, ports={}, needs=default_needs(), pulumi_min_version=PULUMI_MIN_VERSION)
        unchecked = f"not checked: Pulumi.{stack}.yaml is invalid (`uv run blueprint doctor --stack {stack}` says why)"
        note = [] if stack in stacks else [Check(name=f"ports, names, sizes of {stack}", ok=True, found=unchecked)]
        return [*machine_checks, *note, stacks_checked]
    ports = {
        f"{prefix}httpPort": config.ports.http,
        f"{prefix}httpsPort": config.ports.https,
        f"{prefix}sshPort": config.ports.ssh,
        f"{prefix}openbaoPort": config.ports.openbao,
        f"{prefix}apiServerPort": config.ports.api_server,
    }
    # A port set as a secret is not known here (its stand-in is the default): not checked, and said so.
    unknown = sorted(key for key in ports if key in secret)
    ports = {key: port for key, port in ports.items() if key not in secret}
    machine_checks = checks(
        machine,
        ports=ports,
        needs=resources_needed(gitlab_nodes=config.gitlab_nodes, runner_nodes=config.runner_nodes, headlamp=config.headlamp),
        pulumi_min_version=PULUMI_MIN_VERSION,
        stack=stack,
        names=platform_names(config.domain) if any(name in NAMES_NEEDED_BY for name in stacks) else (),
        cluster_name=config.cluster_name,
    )
    if unknown:
        machine_checks.append(Check(name="secret ports", ok=True, found=f"{', '.join(unknown)}: not checked (secret, so not known here)"))
    if stack in stacks:  # the stack that runs the image cache's mirrors is selected
        if f"{prefix}imageCacheDir" in secret:
            unknown_folder = "not checked: blueprint:imageCacheDir is a secret, so not known here"
            machine_checks.append(Check(name=CACHE_SPACE, ok=True, found=unknown_folder))
        else:
            machine_checks += image_cache_checks(machine, config.image_cache_dir, stack)
    return [*machine_checks, stacks_checked]


Execute = Callable[[Command, TextIO], int]
"""Runs one command of `--fix`, writing its output to the stream; its exit code."""


def execute(command: Command, out: TextIO) -> int:
    """Run `command`, its output streamed to `out` as it comes (a package manager takes a while);
    sudo asks for the password on the terminal itself.
    """
    try:
        process = subprocess.Popen(
            list(command.argv),
            stdin=subprocess.PIPE if command.stdin is not None else None,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
    except OSError as error:
        out.write(f"    {command.argv[0]}: {error.strerror or error}\n")
        return 127
    with process:  # closes its pipes
        unread = False
        if process.stdin is not None:
            # A command may end before it reads its input (sudo refused, `tee` could not open its file):
            # the pipe is then broken, as Popen.communicate's own _stdin_write allows for.
            try:
                process.stdin.write(command.stdin or "")
                process.stdin.close()
            except BrokenPipeError:
                unread = True
                with contextlib.suppress(BrokenPipeError):
                    process.stdin.close()
        assert process.stdout is not None
        for line in process.stdout:
            out.write(f"    {line}")
        code = process.wait()
    if unread:
        out.write(f"    ({command.argv[0]} ended before it read all its input)\n")
        return code or 1
    return code


def _ask(prompt: str) -> str:
    try:
        return input(prompt)
    except (EOFError, KeyboardInterrupt):
        return ""


AGAIN = "uv run blueprint doctor --fix"


def run_commands(
    commands: Sequence[Command], family: OsFamily, out: TextIO, *, yes: bool, terminal: bool, ask: Callable[[str], str], run: Execute
) -> bool:
    """Show `commands`, ask once (unless `yes`), run them in order, and stop at the first that fails.
    Without a terminal to ask on and without `yes`, run nothing. True when all of them ran and passed.
    """
    sudo = "; sudo asks for your password" if any(command.argv[0] == "sudo" for command in commands) else ""
    out.write(f"\nthe commands for {family.distro}{sudo}:\n")
    for command in commands:
        out.write(f"  {command.shown}\n")
        if command.note:
            out.write(f"      ({command.note})\n")
    if not yes:
        if not terminal:
            out.write(
                f"not run: there is no terminal to ask on. Run them yourself, or let blueprint run them without asking: {AGAIN} --yes\n"
            )
            return False
        if ask("Run these? [y/N] ").strip().lower() not in ("y", "yes"):
            out.write(f"not run. Run them yourself, or `{AGAIN}` again\n")
            return False
    for done, command in enumerate(commands):
        out.write(f"$ {command.shown}\n")
        code = run(command, out)
        if code != 0:
            left = len(commands) - done - 1
            out.write(
                f"stopped: `{command.shown}` failed (exit {code}), its output above; {left} command{'' if left == 1 else 's'} after it "
                f"not run. Fix what it says (or run the commands yourself), then `{AGAIN}` again\n"
            )
            return False
    return True


def run(
    argv: list[str] | None = None,
    machine: Machine | None = None,
    out: TextIO | None = None,
    *,
    terminal: bool | None = None,
    ask: Callable[[str], str] = _ask,
    run_command: Execute = execute,
) -> int:
    """`blueprint doctor [--fix [--yes]] [--stack phase1]`: 1 when any check fails, 0 otherwise. `out` defaults to
    the sys.stdout of the call, not of the import, so captured output (pytest, redirects) sees it.
    `terminal` (default: whether stdin is one) says whether `--fix` may ask before running commands.
    """
    out = out or sys.stdout
    parser = argparse.ArgumentParser(prog="blueprint doctor", description="Check every prerequisite of a real run.")
    parser.add_argument(
        "--fix",
        action="store_true",
        help="install Pulumi, kind and kubectl into your home folder; show the commands of your OS family for Docker and the "
        "kernel limits, and run them once you say yes; say what to do for the rest",
    )
    parser.add_argument("--yes", action="store_true", help="with --fix: run those commands without asking (for scripts)")
    chosen = parser.add_mutually_exclusive_group()
    chosen.add_argument("--phase", choices=PHASE_STACKS, default="all", help="check what these phases read (default: all, in order)")
    chosen.add_argument("--stack", choices=STACKS, help="check what this stack reads instead (dev: every phase, in one stack)")
    args = parser.parse_args(argv)
    machine = machine or RealMachine()
    stacks = [args.stack] if args.stack else list(PHASE_STACKS[args.phase])

    family = machine_family(machine)
    out.write(f"system: {family.label}\n")
    results = _all_checks(machine, stacks)
    _print_checks(results, out)
    failed = [check for check in results if not check.ok]
    if not args.fix or not failed:
        return 1 if failed else 0

    out.write("\nfixing:\n")
    commands: list[Command] = []
    for step in fix_plan(failed, machine):
        if step.commands:
            commands += [command for command in step.commands if command not in commands]
            continue
        if step.download is None:
            out.write(f"  to do by hand: {step.what}\n")
            continue
        out.write(f"  {step.what}, from {step.download.url}, checked against {step.download.checksum_url}\n")
        try:
            install(machine, step.download)
        except ChecksumMismatch as error:
            out.write(f"    stopped: {error}\n")
            return 1
        except (InstallError, OSError) as error:
            out.write(f"    failed: {error}\n")
    if commands:
        interactive = sys.stdin.isatty() if terminal is None else terminal
        run_commands(commands, family, out, yes=args.yes, terminal=interactive, ask=ask, run=run_command)

    out.write("\nchecking again:\n")
    results = _all_checks(machine, stacks)
    _print_checks(results, out)
    return 1 if any(not check.ok for check in results) else 0


# The commands that drive Pulumi (`up`, `preview`, `destroy`, `status`) check first what they need,
# and end Pulumi's failures for expected conditions with one message and its fix, never a traceback.


def preflight(command: str, *, machine: Machine | None = None) -> str | None:
    """What stops `blueprint <command>` before it starts Pulumi, as one message with its fix, or None:
    `up` runs the whole doctor itself; the others need a recent enough Pulumi CLI.
    """
    if command != "up":
        check = _pulumi_check(machine or RealMachine(), PULUMI_MIN_VERSION)
        if not check.ok:
            return f"blueprint {command} needs the {PULUMI} {PULUMI_MIN_VERSION} or later: {check.found}.\nfix: {check.fix}"
    return None


_DECRYPT = re.compile(r"incorrect passphrase|passphrase must be set|unable to read PULUMI_CONFIG_PASSPHRASE_FILE")
# The local backend's lock error names each lock file, .pulumi/locks/<org>/<project>/<stack>/<id>.json, and
# who created it (pulumi/pulumi pkg/backend/diy/lock.go, `checkForLock`).
_LOCK = re.compile(r"locks/(?:[^/\s]+/)*(?P<stack>[^/\s]+)/[^/\s]+\.json: created by (?P<holder>.+?)\s*$", re.MULTILINE)


def pulumi_failure(failure: BaseException | str, *, project_dir: Path, environ: Mapping[str, str]) -> str | None:
    """One message with its fix for a Pulumi failure that is an expected condition, or None for any
    other. `failure` is what the Automation API raised, or the output of a failed stack operation
    (or a config error the CLI met reading a stack's config itself).
    """
    from pulumi import automation as auto

    from cli import passphrase
    from stacks.config import ConfigError

    # A config value the CLI reads itself (destroy reads phase1's dataDir): the message names the fix.
    if isinstance(failure, ConfigError):
        return str(failure)
    reinstall = f"fix: `blueprint doctor --fix` (installs Pulumi {PULUMI_VERSION})"
    # The Automation API runs `pulumi version` before anything else: a missing or broken CLI fails there.
    if isinstance(failure, FileNotFoundError) and Path(str(failure.filename)).name == "pulumi":
        return f"{PULUMI}: no `pulumi` on PATH.\n{reinstall}"
    if isinstance(failure, subprocess.CalledProcessError) and Path(str(failure.cmd[0])).name == "pulumi":
        return f"{PULUMI}: `pulumi version` failed (exit {failure.returncode}).\n{reinstall}"
    if isinstance(failure, auto.InvalidVersionError):
        return f"{PULUMI}: {failure}\n{reinstall}"
    text = failure if isinstance(failure, str) else str(failure) if isinstance(failure, auto.CommandError) else ""
    if _DECRYPT.search(text):
        return passphrase.cannot_decrypt(environ)
    if "the stack is currently locked" in text:
        lock = _LOCK.search(text)
        stack, holder = (lock["stack"], f" ({lock['holder']})") if lock else ("<stack>", "")
        return (
            f"Another Pulumi command holds the lock of stack {stack}{holder}. Wait for it to end; if none is running "
            f"(an interrupted run leaves its lock behind), release the lock from {project_dir}: pulumi cancel --yes -s {shlex.quote(stack)}"
        )
    return None
