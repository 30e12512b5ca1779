"""Which family of operating system this is, and the exact commands that family uses for what
`blueprint doctor` and `blueprint up` ask of the user: installing and starting Docker or Podman, the docker
group, the inotify limits, trusting the platform CA.

Detection is a pure function of what the machine says (os-release, the platform, /proc/version,
the WSL variables), so the tests feed it real os-release files. A Linux it cannot place is
"unknown": it then gets the generic advice, never another family's package names. It is placed by
its own ID, or by a parent in ID_LIKE only where every child uses the parent's packages (Debian's
and Ubuntu's derivatives, Arch's): `ID_LIKE=fedora` alone says too little (Oracle Linux and Amazon
Linux 2023 both say it, and neither has Fedora's moby-engine nor Docker's CentOS repository).

kind, kubectl and the Pulumi CLI are not installed from any package manager: `doctor --fix` keeps
installing the pinned releases under the home folder, each checked against the SHA-256 versions.py pins,
because no family ships the pinned versions. Arch's extra has kind 0.32.0 and the newest kubectl
(archlinux.org/packages/extra/x86_64/kind, .../kubectl), Debian 13 has kubectl 1.32 and Debian 12
only kubernetes-client 1.20 (packages.debian.org/kubectl; `apt-cache policy kubernetes-client` on
Debian 12), Homebrew has the newest of each; blueprint pins kind v0.31.0 and kubectl to the node
image's Kubernetes (versions.py).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, replace

ARCH = "arch"
DEBIAN = "debian"
FEDORA = "fedora"
RHEL = "rhel"
MACOS = "macos"
WINDOWS = "windows"
UNKNOWN = "unknown"

FAMILY_NAMES = {
    ARCH: "Arch",
    DEBIAN: "Debian/Ubuntu",
    FEDORA: "Fedora/RHEL",
    RHEL: "Fedora/RHEL",
    MACOS: "macOS",
    WINDOWS: "Windows",
    UNKNOWN: "unknown",
}

_IDS = {
    "arch": ARCH,
    "debian": DEBIAN,
    "ubuntu": DEBIAN,
    "fedora": FEDORA,
    "rhel": RHEL,
    "centos": RHEL,
    "rocky": RHEL,
    "almalinux": RHEL,
}
"""os-release IDs of the systems each family's commands are written for (Rocky's ID is `rocky`,
Alma's `almalinux`, CentOS Stream's `centos`), matched whole (`archlinux` is no `arch`)."""

_PARENTS = {"arch": ARCH, "debian": DEBIAN, "ubuntu": DEBIAN}
"""The ID_LIKE tokens that place a system of another ID. os-release(5): ID_LIKE lists "the closest"
relatives first, and a derivative names its parents there (Manjaro and EndeavourOS `arch`, Mint and
Pop!_OS `ubuntu debian`); these derivatives install from their parent's archive (docker.io, Arch's
docker). Fedora's and RHEL's relatives are not placed by ID_LIKE: Oracle Linux (ID=ol) and Amazon
Linux 2023 (ID=amzn) say `ID_LIKE="fedora"` (their os-release files, as python-distro/distro tests/
resources/distros/amazon2023 has it), yet neither carries Fedora's moby-engine, and Docker's CentOS
repository has no release for Amazon Linux's $releasever (2023): they are unknown."""

OS_RELEASE_FILES = ("/etc/os-release", "/usr/lib/os-release")
"""Where os-release(5) says to look, in this order."""


@dataclass(frozen=True, kw_only=True)
class OsFamily:
    """What `detect` found: the family, the system as it names itself, and whether it runs in WSL2."""

    key: str
    """One of ARCH, DEBIAN, FEDORA, RHEL (Fedora's relatives without Fedora's packages), MACOS, WINDOWS, UNKNOWN."""
    distro: str
    """The system's own name (os-release PRETTY_NAME), for the user."""
    os_id: str = ""
    """os-release's ID (rhel, rocky, ubuntu...)."""
    wsl: bool = False
    wsl_distro: str = ""
    """WSL_DISTRO_NAME, when WSL set it: the name Windows reaches this distro's files under."""

    @property
    def name(self) -> str:
        return FAMILY_NAMES[self.key]

    @property
    def known_linux(self) -> bool:
        """A Linux family blueprint has the package commands of."""
        return self.key in (ARCH, DEBIAN, FEDORA, RHEL)

    @property
    def label(self) -> str:
        if self.key in (MACOS, WINDOWS):
            return self.distro
        if self.key == UNKNOWN:
            return f"{self.distro}: a family blueprint has no commands for (it knows Arch, Debian/Ubuntu, Fedora/RHEL, macOS, WSL2)"
        return f"{self.distro} ({self.name} family{', in WSL2' if self.wsl else ''})"


def parse_os_release(text: str) -> dict[str, str]:
    """os-release's KEY=value lines, with the shell quoting os-release(5) allows undone."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if not sep or key.startswith("#"):
            continue
        try:
            fields[key] = " ".join(shlex.split(value))
        except ValueError:  # an unbalanced quote: take it as written
            fields[key] = value.strip("\"'")
    return fields


def detect(*, system: str, os_release: str | None, proc_version: str | None = None, environ: Mapping[str, str] | None = None) -> OsFamily:
    """The family of this system, from `platform.system()`, the text of os-release, /proc/version and
    the environment. WSL2 is a Linux whose kernel says "microsoft" (its /proc/version: "...-microsoft-
    standard-WSL2") or where WSL set WSL_DISTRO_NAME; it keeps its distro's family.
    """
    environ = environ or {}
    system = system.lower()
    if system == "darwin":
        return OsFamily(key=MACOS, distro="macOS")
    if system == "windows":
        return OsFamily(key=WINDOWS, distro="Windows")
    if system != "linux":
        return OsFamily(key=UNKNOWN, distro=system or "an unnamed system")
    wsl_distro = environ.get("WSL_DISTRO_NAME", "")
    wsl = "microsoft" in (proc_version or "").lower() or bool(wsl_distro)
    fields = parse_os_release(os_release or "")
    distro = fields.get("PRETTY_NAME") or fields.get("NAME") or "Linux without an os-release"
    os_id = fields.get("ID", "").lower()
    key = _IDS.get(os_id) or next((_PARENTS[token] for token in fields.get("ID_LIKE", "").lower().split() if token in _PARENTS), None)
    if key is not None:
        return OsFamily(key=key, distro=distro, os_id=os_id, wsl=wsl, wsl_distro=wsl_distro)
    return OsFamily(key=UNKNOWN, distro=distro, os_id=os_id, wsl=wsl, wsl_distro=wsl_distro)


@dataclass(frozen=True, kw_only=True)
class Command:
    """One command `doctor --fix` may run: `argv`, fed `stdin` when set; `shown` is what it prints,
    which a shell runs the same way.
    """

    argv: tuple[str, ...]
    stdin: str | None = None
    note: str = ""
    """Said beside it: what it does that the command line does not show (a window that opens)."""

    @property
    def shown(self) -> str:
        line = shlex.join(self.argv)
        if self.stdin is None:
            return line
        return f"printf '%s\\n' {' '.join(shlex.quote(part) for part in self.stdin.splitlines())} | {line}"

    def as_root(self) -> Command:
        """The same command for a process that is root already: without its `sudo` (which a container may lack)."""
        return replace(self, argv=self.argv[1:]) if self.argv[:1] == ("sudo",) else self


def _sudo(*argv: str) -> Command:
    return Command(argv=("sudo", *argv))


# The package that gives each family Docker Engine, with its CLI and a systemd unit named docker:
# - Debian and Ubuntu: `docker.io` in main (`apt-cache show docker.io` on Debian 12: docker.io 20.10,
#   with containerd and runc as its dependencies; newer releases carry newer ones).
# - Fedora: `moby-engine`, Fedora's own build of Docker Engine (packages.fedoraproject.org/pkgs/
#   moby-engine); Docker's docker-ce conflicts with it, so only one of them.
# - RHEL and its rebuilds (Rocky, Alma, CentOS Stream) ship no Docker: Docker's own repository,
#   as docs.docker.com/engine/install/rhel (and /centos for the rebuilds) adds it, with dnf 4's
#   `config-manager --add-repo` from dnf-plugins-core.
# - Arch: `docker` in extra (wiki.archlinux.org/title/Docker); `--needed` skips it when present.
# None of Fedora's, RHEL's or Arch's starts the service on install, hence `systemctl enable --now`.
_DOCKER_REPO = {
    "rhel": "https://download.docker.com/linux/rhel/docker-ce.repo",
    "other": "https://download.docker.com/linux/centos/docker-ce.repo",
}


def docker_install(family: OsFamily) -> tuple[Command, ...]:
    """The commands that install Docker Engine on a Linux of `family` (none for the others)."""
    if family.key == DEBIAN:
        return (_sudo("apt-get", "update"), _sudo("apt-get", "install", "-y", "docker.io"))
    if family.key == FEDORA:
        return (_sudo("dnf", "install", "-y", "moby-engine"),)
    if family.key == RHEL:
        repo = _DOCKER_REPO["rhel" if family.os_id == "rhel" else "other"]
        return (
            _sudo("dnf", "install", "-y", "dnf-plugins-core"),
            _sudo("dnf", "config-manager", "--add-repo", repo),
            _sudo("dnf", "install", "-y", "docker-ce", "docker-ce-cli", "containerd.io"),
        )
    if family.key == ARCH:
        return (_sudo("pacman", "-S", "--needed", "--noconfirm", "docker"),)
    return ()


DOCKER_START = _sudo("systemctl", "enable", "--now", "docker")
"""Start Docker Engine now and at every boot, where systemd runs and has the docker.service unit."""

DOCKER_SERVICE_START = _sudo("service", "docker", "start")
"""Start Docker Engine where systemd does not run (a container, WSL2 without systemd) through its
init script, /etc/init.d/docker: Debian's docker.io ships one beside its systemd unit (`dpkg -c` of
docker.io 20.10.24 on Debian 12: ./etc/init.d/docker, ./lib/systemd/system/docker.service, and
dockerd as ./usr/sbin/dockerd)."""


def docker_group(user: str) -> Command:
    """Let `user` use Docker without sudo (Docker's "Linux post-installation steps"); it takes
    effect at the user's next login.
    """
    return _sudo("usermod", "-aG", "docker", user)


MACOS_DOCKER_CASK = "docker-desktop"
"""Homebrew's cask for Docker Desktop: it was `docker` until Homebrew renamed it in 2025
(Homebrew/formulae.brew.sh#1935, "after the `docker` cask was renamed to `docker-desktop`")."""

MACOS_DOCKER_INSTALL = Command(
    argv=("brew", "install", "--cask", MACOS_DOCKER_CASK),
    note="installs the Docker Desktop app (Homebrew may ask for your password)",
)
MACOS_DOCKER_OPEN = Command(
    argv=("open", "-a", "Docker"),
    note="opens Docker Desktop's window: accept its terms there the first time, and wait until it says it is running",
)


# Podman from each family's own packages (packages.debian.org/podman, packages.fedoraproject.org/pkgs/podman,
# archlinux.org/packages/extra/x86_64/podman; RHEL's AppStream carries it), with its rootful API socket unit,
# podman.socket (podman docs/tutorials/socket_activation.md), which the user's podman reaches through
# CONTAINER_HOST (podman.1.md): blueprint runs kind on rootful Podman only (components/engine.py).
def podman_install(family: OsFamily) -> tuple[Command, ...]:
    """The commands that install Podman on a Linux of `family` (none for the others)."""
    if family.key == DEBIAN:
        return (_sudo("apt-get", "update"), _sudo("apt-get", "install", "-y", "podman"))
    if family.key in (FEDORA, RHEL):
        return (_sudo("dnf", "install", "-y", "podman"),)
    if family.key == ARCH:
        return (_sudo("pacman", "-S", "--needed", "--noconfirm", "podman"),)
    return ()


PODMAN_SOCKET_START = _sudo("systemctl", "enable", "--now", "podman.socket")
"""Start rootful Podman's API socket, /run/podman/podman.sock, now and at every boot."""
PODMAN_ROOT_SOCKET = "unix:///run/podman/podman.sock"
"""Where the rootful service listens; CONTAINER_HOST set to it makes every `podman` call it (podman.1.md)."""

MACOS_PODMAN_INSTALL = Command(argv=("brew", "install", "podman"), note="installs the Podman CLI, which runs its engine in a VM")
MACOS_PODMAN_INIT = Command(
    argv=("podman", "machine", "init", "--rootful"), note="makes the Podman machine (a VM), rootful: kind needs root in it"
)
MACOS_PODMAN_STOP = Command(argv=("podman", "machine", "stop"))
MACOS_PODMAN_ROOTFUL = Command(
    argv=("podman", "machine", "set", "--rootful"), note="the machine's default connection becomes rootful (podman-machine-set(1))"
)
MACOS_PODMAN_START = Command(argv=("podman", "machine", "start"))


def ca_trust(family: OsFamily, ca_file: str) -> list[str]:
    """The command, per family, that makes this system trust the CA in `ca_file` (docs/guide/bring-up.md,
    "Trust the platform CA"); in WSL2, the Windows one for Windows' own browsers too. Empty for an unknown family.
    """
    ca = shlex.quote(ca_file)
    commands = {
        DEBIAN: f"sudo cp {ca} /usr/local/share/ca-certificates/blueprint.crt && sudo update-ca-certificates",
        FEDORA: f"sudo cp {ca} /etc/pki/ca-trust/source/anchors/blueprint.crt && sudo update-ca-trust",
        RHEL: f"sudo cp {ca} /etc/pki/ca-trust/source/anchors/blueprint.crt && sudo update-ca-trust",
        # p11-kit's `trust`, which Arch's system store is made with (wiki.archlinux.org/title/
        # Transport_Layer_Security#Add_a_certificate_to_a_trust_store).
        ARCH: f"sudo trust anchor --store {ca}",
        MACOS: f"sudo security add-trusted-cert -d -r trustRoot -p ssl -k /Library/Keychains/System.keychain {ca}",
        WINDOWS: f"certutil -addstore -f Root {_powershell_quote(ca_file)}   (in an administrator PowerShell)",
    }
    lines = [commands[family.key]] if family.key in commands else []
    if family.wsl:
        # Windows reaches a WSL distro's files as \\wsl.localhost\<distro>\<path> (Windows 11 and
        # Windows 10 21H2 and later); without WSL_DISTRO_NAME, `wslpath -w` names it.
        unc = "\\\\wsl.localhost\\" + family.wsl_distro + ca_file.replace("/", "\\")
        windows_path = _powershell_quote(unc) if family.wsl_distro else f"(the path `wslpath -w {ca}` prints)"
        lines.append(f"certutil -addstore -f Root {windows_path}   (for Windows' browsers, in an administrator PowerShell)")
    return lines


def _powershell_quote(text: str) -> str:
    """PowerShell's literal string: single quotes, a quote inside doubled."""
    return "'" + text.replace("'", "''") + "'"
