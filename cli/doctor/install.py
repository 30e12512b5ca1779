"""What `--fix` installs without asking, into blueprint's own folders under the home folder alone: kind
and kubectl into ~/.local/share/blueprint/bin, the Pulumi CLI and its bundled plugins into
~/.local/share/blueprint/pulumi/bin (never Pulumi's own ~/.pulumi, which is the user's). It runs no
installer script: it downloads each pinned release file and installs it only if its SHA-256 is the
one versions.py pins for it; on a mismatch it stops and installs nothing. The checksum file its
publisher puts beside it is not read: whoever could swap the file there could swap that too. A file
with no pin (a version bumped before its pins were added) is not installed: the check's fix says how
to install it by hand.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from cli.doctor.machine import DownloadError, Machine, release_arch
from cli.tools_path import BLUEPRINT_SHARE, OTHER_OWNER, PULUMI_BIN, TOOLS_BIN, blueprint_folders, not_yours_alone, unsafe_way
from versions import KIND_NODE_IMAGE, KIND_SHA256, KIND_VERSION, KUBECTL_SHA256, PULUMI_SHA256, PULUMI_VERSION

KUBECTL_VERSION = KIND_NODE_IMAGE.split(":", 1)[1].split("@", 1)[0]
"""The node image's Kubernetes version, so kubectl is within the supported skew of the cluster."""

_PULUMI_ARCH = {"amd64": "x64", "arm64": "arm64"}
"""Pulumi names its release files' architectures x64 and arm64 (pulumi/docs data/versions.json)."""
KIND = "kind"
PULUMI = "Pulumi CLI"
KUBECTL = "kubectl"
"""The tools `--fix` installs, named as their checks are (cli/doctor/checks.py)."""

VERSIONS = {KIND: KIND_VERSION, KUBECTL: KUBECTL_VERSION, PULUMI: PULUMI_VERSION}
PINS = {KIND: KIND_SHA256, KUBECTL: KUBECTL_SHA256, PULUMI: PULUMI_SHA256}
"""The SHA-256 of each release file, by tool and then by "<version> <os>/<arch>" (versions.py)."""
PINNED_IN = {KIND: "KIND_SHA256", KUBECTL: "KUBECTL_SHA256", PULUMI: "PULUMI_SHA256"}
"""Where versions.py pins each, for a message."""


def pinned_sha256(tool: str, system: str, arch: str) -> str | None:
    """The SHA-256 versions.py pins for `tool`'s release file of this system and arch, at the version
    `--fix` installs; None when there is none (never the checksum file beside the download).
    """
    return PINS[tool].get(f"{VERSIONS[tool]} {system}/{arch}")


@dataclass(frozen=True, kw_only=True)
class Download:
    """A pinned release file that `--fix` installs only once it matches the SHA-256 versions.py pins."""

    tool: str
    url: str
    sha256: str | None
    """Its pinned SHA-256; None when versions.py has none for it: then it is not installed."""
    target: Path
    """What it becomes: the executable (kind, kubectl), or, for Pulumi's tarball, the folder its
    `pulumi/` folder becomes."""
    unpack: bool = False


def kind_url(system: str, arch: str) -> str:
    """The release asset on GitHub, the bare binary."""
    return f"https://github.com/kubernetes-sigs/kind/releases/download/{KIND_VERSION}/kind-{system}-{arch}"


def kubectl_url(system: str, arch: str) -> str:
    """The release binary (kubernetes.io, "Install and Set Up kubectl")."""
    return f"https://dl.k8s.io/release/{KUBECTL_VERSION}/bin/{system}/{arch}/kubectl"


PULUMI_RELEASES = "https://get.pulumi.com/releases/sdk"
"""Where each Pulumi release's tarballs are (pulumi/docs data/versions.json; pulumi/actions installs from there)."""


def pulumi_url(system: str, arch: str) -> str:
    return f"{PULUMI_RELEASES}/pulumi-v{PULUMI_VERSION}-{system}-{_PULUMI_ARCH[arch]}.tar.gz"


def downloads(machine: Machine, tool: str, arch: str) -> Download:
    """What `--fix` fetches for `tool` on this machine, and where it installs it."""
    tools_bin = machine.home().joinpath(*TOOLS_BIN)
    sha256 = pinned_sha256(tool, machine.system, arch)
    if tool == KIND:
        return Download(tool=tool, url=kind_url(machine.system, arch), sha256=sha256, target=tools_bin / "kind")
    if tool == KUBECTL:
        return Download(tool=tool, url=kubectl_url(machine.system, arch), sha256=sha256, target=tools_bin / "kubectl")
    url = pulumi_url(machine.system, arch)
    return Download(tool=tool, url=url, sha256=sha256, target=machine.home().joinpath(*PULUMI_BIN), unpack=True)


INSTALLS_ON = ("linux", "darwin")
"""Where `--fix` installs: the release files it knows are these systems' (on Windows, run blueprint in WSL2)."""


def installs(machine: Machine, tool: str) -> bool:
    """Whether `--fix` installs `tool` on this machine: a release file for its system and arch, with a SHA-256 pinned."""
    arch = release_arch(machine)
    return arch is not None and machine.system in INSTALLS_ON and downloads(machine, tool, arch).sha256 is not None


def download_fix(machine: Machine, tool: str, page: str) -> str:
    """The fix of a missing or unusable `tool`: `--fix`, or the same by hand; else its download `page`."""
    arch = release_arch(machine)
    if arch is None or machine.system not in INSTALLS_ON:
        return f"download {tool} for {machine.system}/{machine.machine} from {page}"
    what = downloads(machine, tool, arch)
    if what.sha256 is None:
        return (
            f"install {tool} {VERSIONS[tool]} by hand ({page}): this blueprint pins no SHA-256 for {what.url} "
            f"(versions.py {PINNED_IN[tool]}), so `uv run blueprint doctor --fix` does not install it"
        )
    where = (
        "its pulumi/ folder as ~/.local/share/blueprint/pulumi/bin"
        if what.unpack
        else f"as ~/.local/share/blueprint/bin/{tool}, executable"
    )
    return (
        f"`uv run blueprint doctor --fix` (downloads {what.url}, installs it only if its SHA-256 is the one blueprint pins); "
        f"or by hand: download it, check that its SHA-256 (`sha256sum`, or `shasum -a 256` on macOS) is {what.sha256}, "
        f"and install {where}"
    )


class InstallError(Exception):
    """A download could not be installed; nothing of it was. The message says why and what to do."""


class ChecksumMismatch(InstallError):
    """A download does not match the SHA-256 blueprint pins for it: `--fix` stops."""


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


def _made(folder: Path) -> None:
    """Make `folder` 0755 whatever the umask, when it is not there; leave one that is as it is."""
    try:
        folder.mkdir(mode=0o755)
        folder.chmod(0o755)  # mkdir's mode goes through the umask
    except FileExistsError:
        pass


def own_folders(home: Path, folder: Path) -> None:
    """Make ~/.local, ~/.local/share (the user's) and blueprint's folders down to `folder`
    (cli/tools_path.py `blueprint_folders`) that are not there, each 0755 whatever the umask:
    blueprint's go first on PATH, and whoever may write in a folder above them may swap them. One of
    blueprint's there already that is not the user's alone (`not_yours_alone`), or a way to `folder`
    another user may change (`unsafe_way`), is an InstallError: what it holds may not be theirs.
    """
    _made(home / BLUEPRINT_SHARE[0])
    _made(home.joinpath(*BLUEPRINT_SHARE[:-1]))
    for each in blueprint_folders(home, folder):
        _made(each)
        if why := not_yours_alone(each):
            raise InstallError(
                f"{each} is not yours alone ({why}), and blueprint runs its tools from there: nothing was installed. "
                f"Remove it (`{'sudo ' if why == OTHER_OWNER else ''}rm -rf -- {shlex.quote(str(each))}`: it holds only what "
                f"`--fix` installs), then run `uv run blueprint doctor --fix` again"
            )
    if why := unsafe_way(folder):
        raise InstallError(
            f"another user could swap {folder}, so blueprint does not run tools from there: {why}. Nothing was installed: "
            f"fix that, then run `uv run blueprint doctor --fix` again"
        )


def install(machine: Machine, download: Download) -> None:
    """Fetch `download` into a scratch folder, check it against its pinned SHA-256, and only then put
    it in place (renamed into its target, so a failure half-way leaves the old one or none, never a part).
    """
    expected = download.sha256
    if expected is None:  # fix_plan installs none such: its check's fix says how to by hand
        raise InstallError(f"blueprint pins no SHA-256 for {download.url}; nothing was installed")
    with tempfile.TemporaryDirectory(prefix=f"blueprint-{download.tool}-") as scratch:
        fetched = Path(scratch) / "download"
        try:
            machine.download(download.url, fetched)
        except DownloadError as error:
            raise InstallError(f"{error}; nothing was installed: run `uv run blueprint doctor --fix` again") from None
        actual = _sha256(fetched)
        if actual != expected:
            raise ChecksumMismatch(
                f"{download.url} does not match the SHA-256 blueprint pins for it (versions.py {PINNED_IN[download.tool]}): "
                f"expected {expected}, got {actual}. Nothing was installed. The download was altered or cut short: run "
                f"`uv run blueprint doctor --fix` again later, and if it still differs, do not install that file"
            )
        own_folders(machine.home(), download.target.parent)
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
        root = unpacked / "pulumi"  # Pulumi's tarball holds `pulumi/<binaries>`
        if not (root / "pulumi").is_file():
            raise InstallError(f"{download.url} holds no pulumi/pulumi binary; nothing was installed")
        shutil.copytree(root, staged)
        staged.chmod(0o755)  # first on PATH: the user's alone (`own_folders`)
        previous = download.target.with_name(f".{download.target.name}.blueprint-old")
        shutil.rmtree(previous, ignore_errors=True)
        if download.target.exists():
            os.replace(download.target, previous)
        os.replace(staged, download.target)
        shutil.rmtree(previous, ignore_errors=True)
