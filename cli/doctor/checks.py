"""Each prerequisite of a real run but Docker's (cli/doctor/docker.py), checked on a `Machine`: one
`Check` each, its finding and, when it fails, the exact fix.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from cli.doctor.install import KIND, KUBECTL, KUBECTL_VERSION, PULUMI, download_fix, installs
from cli.doctor.machine import Machine, first_line
from cli.doctor.needs import GIB, MIB, NODE_MEMORY_BYTES, Needs
from cli.os_family import Command
from cli.tools_path import SHELL_PATH, TOOLS_BIN
from components.engine import DOCKER, KIND_PROVIDER, LABELS, PODMAN
from versions import KIND_VERSION

PULUMI_MIN_VERSION = "3.145.0"
"""The oldest CLI that runs this project. `toolchain: uv` arrived in 3.139.0; until 3.142.0 it dropped
environment variables on the way to the program (pulumi/pulumi#17849); and until 3.145.0 Pulumi
started dynamic providers, which blueprint's OpenBao and GitLab steps are, with the system Python
rather than the project's uv environment ("Fix dynamic providers when using Poetry or uv",
pulumi/pulumi#18126, CHANGELOG 3.145.0): they fail to import there."""

PULUMI_TOO_OLD = "older Pulumi CLIs run blueprint's dynamic providers with the system Python, not the project's uv environment"

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

_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")
_KUBECTL_VERSION = re.compile(r"(?:^Client Version: |\bGitVersion:\")v?(\d+)\.(\d+)\.(\d+)", re.MULTILINE)
"""kubectl's own version in `kubectl version --client`, whatever a wrapper or a warning prints around it:
"Client Version: v1.35.0" (kubectl 1.28 and later, and `--short` before), or, before 1.28,
"Client Version: version.Info{Major:\"1\", Minor:\"27\", GitVersion:\"v1.27.3\", ...}"."""

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
    fixable: bool = False
    """A warning `--fix` acts on as on a failure (a kubectl outside the supported skew: it installs the pinned one);
    its advice is then the fix."""

    def __post_init__(self) -> None:
        if self.ok == bool(self.fix):
            raise ValueError(f"check {self.name!r}: a fix is required exactly when the check fails, got ok={self.ok} fix={self.fix!r}")
        if self.fixable and not (self.ok and self.advice):
            raise ValueError(f"check {self.name!r}: only a warning (a passing check with advice) is fixable")

    @property
    def to_fix(self) -> bool:
        """Whether `--fix` acts on it: a failure, or a warning it can fix."""
        return not self.ok or self.fixable


def _version(text: str, pattern: re.Pattern[str] = _VERSION) -> tuple[int, int, int] | None:
    match = pattern.search(text)
    return (int(match.group(1)), int(match.group(2)), int(match.group(3))) if match else None


def kubectl_version_in(output: str) -> tuple[int, int, int] | None:
    """Kubectl's own version in what `kubectl version --client` printed, or None."""
    return _version(output, _KUBECTL_VERSION)


def kind_check(machine: Machine, engine: str = DOCKER) -> Check:
    fix = download_fix(machine, KIND, f"https://github.com/kubernetes-sigs/kind/releases/tag/{KIND_VERSION}")
    if machine.which("kind") is None:
        return Check(name=KIND, ok=False, found="no `kind` on PATH", fix=fix)
    code, output = machine.run(["kind", "version"], timeout=10)
    found = _version(output)
    if code != 0 or found is None:
        return Check(name=KIND, ok=False, found=f"`kind version` failed: {first_line(output)}", fix=fix)
    shown = "v{}.{}.{}".format(*found)
    if shown != KIND_VERSION:
        shown = f"{shown} (works; the node image is pinned for {KIND_VERSION}, expect a warning)"
    return Check(name=KIND, ok=True, found=shown, advice=_shell_kind_provider(machine, engine))


def _shell_kind_provider(machine: Machine, engine: str) -> str:
    """A warning when the shell exports a KIND_PROVIDER other than `engine`: blueprint's own kind commands
    ignore it (components/engine.py `kind_env`), the user's own `kind` commands do not.
    """
    exported = machine.environ().get(KIND_PROVIDER, "")
    if not exported or exported == engine:
        return ""
    return (
        f"{KIND_PROVIDER}={exported} in your shell, but blueprint runs kind on {LABELS[engine]} and tells kind so itself; "
        f"the `kind` commands you type go to {exported}, where the cluster is not: `unset {KIND_PROVIDER}` (and drop it "
        f"from your shell's rc file), or set blueprint:containerEngine to the engine you mean"
    )


def pulumi_check(machine: Machine, minimum: str) -> Check:
    fix = download_fix(machine, PULUMI, "https://www.pulumi.com/docs/iac/download-install/")
    if machine.which("pulumi") is None:
        return Check(name=PULUMI, ok=False, found="no `pulumi` on PATH", fix=fix)
    code, output = machine.run(["pulumi", "version"], timeout=20)
    found = _version(output)
    needed = _version(minimum)
    if code != 0 or found is None or needed is None:
        return Check(name=PULUMI, ok=False, found=f"`pulumi version` failed: {first_line(output)}", fix=fix)
    shown = "v{}.{}.{}".format(*found)
    if found < needed:
        return Check(name=PULUMI, ok=False, found=f"{shown}, older than {minimum}: {PULUMI_TOO_OLD}", fix=fix)
    return Check(name=PULUMI, ok=True, found=shown)


KUBECTL_SKEW = 1
"""Minor versions kubectl may be from kube-apiserver, older or newer: "kubectl is supported within one minor
version (older or newer) of kube-apiserver" (kubernetes.io/releases/version-skew-policy, "kubectl"). The
cluster's kube-apiserver is the node image's Kubernetes (versions.py KIND_NODE_IMAGE), KUBECTL_VERSION."""


def kubectl_check(machine: Machine) -> Check:
    fix = download_fix(machine, KUBECTL, "https://kubernetes.io/docs/tasks/tools/")
    found_at = machine.which("kubectl")
    if found_at is None:
        return Check(name=KUBECTL, ok=False, found="no `kubectl` on PATH", fix=fix)
    code, output = machine.run(["kubectl", "version", "--client"], timeout=10)
    found = kubectl_version_in(output)
    if code != 0 or found is None:
        return Check(name=KUBECTL, ok=False, found=f"`kubectl version --client` failed: {first_line(output)}", fix=fix)
    shown = "v{}.{}.{}".format(*found)
    cluster = _version(KUBECTL_VERSION)
    assert cluster is not None, KUBECTL_VERSION
    major, minor = cluster[:2]
    ours = Path(found_at).is_relative_to(machine.home().joinpath(*TOOLS_BIN))
    if found[0] == major and abs(found[1] - minor) <= KUBECTL_SKEW:
        return _shells_kubectl(machine, shown, found_at) if ours else Check(name=KUBECTL, ok=True, found=shown)
    supported = f"v{major}.{minor - KUBECTL_SKEW} to v{major}.{minor + KUBECTL_SKEW}"
    # A warning, not a failure: blueprint's few kubectl calls may well work; `--fix` installs the pinned
    # one into blueprint's own folder, first on blueprint's PATH (cli/tools_path.py), beside this one.
    if not installs(machine, KUBECTL):  # nothing pinned to put first: the user's own must be replaced, or passed
        stays = f" (a kubectl from {supported}), and put it before {found_at} on your PATH, or in its place"
    elif ours:
        stays = ""
    else:
        stays = f' ({found_at} stays as it is; `eval "$(uv run blueprint env)"` puts the pinned one first in your shell too)'
    return Check(
        name=KUBECTL,
        ok=True,
        found=f"{shown} at {found_at}, outside kubectl's supported version skew: the cluster is Kubernetes {KUBECTL_VERSION} "
        f"(kind's node image), and kubectl is supported within one minor of it, {supported}; it may still work",
        advice=fix + stays,
        fixable=True,
    )


def _shells_kubectl(machine: Machine, shown: str, found_at: str) -> Check:
    """Blueprint's own kubectl, `shown` at `found_at`, first on blueprint's PATH: a warning when the PATH this
    was started with (the user's shell's, `SHELL_PATH`) finds another first, which the user's `kubectl` is.
    """
    started = machine.environ().get(SHELL_PATH)
    shells = machine.which_in("kubectl", started) if started is not None else found_at
    if shells is None or shells == found_at:
        return Check(name=KUBECTL, ok=True, found=shown)
    return Check(
        name=KUBECTL,
        ok=True,
        found=f"{shown} at {found_at}, first on blueprint's PATH; your shell's PATH finds {shells} first",
        advice=f'`eval "$(uv run blueprint env)"` puts {found_at} first in your shell (in its rc file: in every new one); '
        f"until then `kubectl` there is {shells}",
    )


def uv_check(machine: Machine) -> Check:
    if machine.which("uv") is None:
        fix = "`curl -LsSf https://astral.sh/uv/install.sh | sh` (or `pip install uv`)"
        return Check(name=UV, ok=False, found="no `uv` on PATH", fix=fix)
    _, output = machine.run(["uv", "--version"], timeout=10)
    return Check(name=UV, ok=True, found=first_line(output))


def _publishers(machine: Machine, engine: str, port: int) -> list[str]:
    """The containers of `engine` that publish host port `port`. Podman's `ps` has no `publish` filter
    (podman v5.8.2 docs/source/markdown/options/filter.container.md): its `{{.Ports}}` column is read instead,
    `127.0.0.1:443->30443/tcp, ...` (podman-ps.1.md.in).
    """
    if engine == DOCKER:
        code, output = machine.run(["docker", "ps", "--filter", f"publish={port}", "--format", "{{.Names}}"], timeout=20)
        return output.split() if code == 0 else []
    code, output = machine.run([engine, "ps", "--format", "{{.Names}} {{.Ports}}"], timeout=20)
    lines = [line.split(" ", 1) for line in output.splitlines() if line.strip()] if code == 0 else []
    return [fields[0] for fields in lines if len(fields) == 2 and re.search(rf":{port}->", fields[1])]


def port_check(machine: Machine, key: str, port: int, stack: str, cluster_name: str | None, engine: str = DOCKER) -> Check:
    from stacks.config.schema import ways_to_set

    name = f"port {port} ({key})"
    if machine.port_free(port):
        return Check(name=name, ok=True, found="free")
    if cluster_name is not None and machine.which(engine) is not None:
        # After `pulumi up` the cluster's own node holds these ports: that is not a conflict.
        holders = _publishers(machine, engine, port)
        if f"{cluster_name}-control-plane" in holders:
            return Check(name=name, ok=True, found=f"published by {cluster_name}-control-plane: the cluster is already up")
        if holders:
            return Check(
                name=name,
                ok=False,
                found=f"{key} {port} is in use by container {', '.join(holders)}",
                fix=f"`{engine} stop {shlex.quote(holders[0])}`, or {ways_to_set(stack, key.removeprefix('blueprint:'), '<free port>')}",
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


def memory_check(machine: Machine, needs: Needs, engine: str = DOCKER) -> Check:
    if engine != DOCKER:
        return _podman_memory_check(machine, needs)
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


def _podman_memory_check(machine: Machine, needs: Needs) -> Check:
    """Podman's own figure (a Podman machine's VM on macOS, what the cluster gets), else the host's."""
    code, output = machine.run(["podman", "info", "--format", "{{.Host.MemTotal}}"], timeout=20)
    total = int(output.strip()) if code == 0 and output.strip().isdigit() else machine.memory_bytes()
    gib = needs.gib
    if total is None:
        return Check(name=MEMORY, ok=True, found=f"unknown (could not read it); make sure Podman has at least {gib} GiB ({needs.why})")
    found = f"{total / GIB:.1f} GiB total"
    if total >= needs.memory_bytes * _MEMORY_SLACK:
        return Check(name=MEMORY, ok=True, found=f"{found}, needs {gib} GiB ({needs.why})")
    fix = _PODMAN_MACHINE_SIZE.format(memory=gib * 1024, cpus=needs.cpus) if machine.system == "darwin" else ""
    fix = fix or f"close other applications, or use a machine with at least {gib} GiB"
    return Check(name=MEMORY, ok=False, found=f"{found}, needs {gib} GiB: {needs.why}", fix=fix + _fewer_nodes(needs))


_PODMAN_MACHINE_SIZE = (
    "make the Podman machine anew with more (podman-machine-set(1) resizes only QEMU machines, not macOS' default; this "
    "drops the machine's images): `podman machine rm`, then `podman machine init --rootful --cpus {cpus} --memory {memory}` "
    "(MiB), then `podman machine start`"
)

_CPU_FORMATS = {DOCKER: "{{.NCPU}}", PODMAN: "{{.Host.CPUs}}"}
"""Each engine's CPU count in its `info` (podman v5.8.2 libpod/define/info.go `HostInfo.CPUs`)."""


def cpu_check(machine: Machine, needs: Needs, engine: str = DOCKER) -> Check:
    # Docker's own count first: under Docker Desktop that is the VM's, which is what the cluster gets.
    code, output = machine.run([engine, "info", "--format", _CPU_FORMATS[engine]], timeout=20)
    cpus = int(output.strip()) if code == 0 and output.strip().isdigit() else machine.cpu_count()
    wanted = needs.cpus
    if cpus is None:
        return Check(name=CPUS, ok=True, found=f"unknown (could not read it); make sure Docker has at least {wanted} CPUs ({needs.why})")
    if cpus >= wanted:
        return Check(name=CPUS, ok=True, found=f"{cpus}, needs {wanted} ({needs.why})")
    if engine == PODMAN and machine.system == "darwin":
        fix = _PODMAN_MACHINE_SIZE.format(memory=needs.gib * 1024, cpus=wanted)
        return Check(name=CPUS, ok=False, found=f"{cpus}, needs {wanted}: {needs.why}", fix=fix)
    fix = {
        "darwin": f"Docker Desktop > Settings > Resources: give Docker at least {wanted} CPUs (and {needs.gib} GiB), then Apply & restart",
        "windows": f"in %UserProfile%\\.wslconfig set `processors={wanted}` under [wsl2], then `wsl --shutdown` and restart Docker Desktop",
    }.get(machine.system, f"use a machine with at least {wanted} CPUs (Docker Engine gives the cluster all of this one's)")
    return Check(name=CPUS, ok=False, found=f"{cpus}, needs {wanted}: {needs.why}", fix=fix)


def inotify_check(machine: Machine) -> Check:
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


def userns_check(machine: Machine, engine: str = DOCKER) -> Check:
    """Can rootless BuildKit, in the image-build runner's jobs, create its user namespace?"""
    value = (machine.read_text(USERNS_RESTRICTION) or "").strip()
    if value != "1":
        found = "not restricted by AppArmor" if value in ("", "0") else f"kernel.apparmor_restrict_unprivileged_userns={value}"
        return Check(name=USERNS, ok=True, found=found)
    # Podman on Linux runs the nodes on this kernel: only Docker Desktop has a VM of its own here.
    code, output = machine.run(["docker", "info", "--format", "{{.OperatingSystem}}"], timeout=20) if engine == DOCKER else (1, "")
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


def names_check(machine: Machine, names: Sequence[str]) -> Check:
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
