"""Which folders blueprint puts first on PATH: the ones `doctor --fix` installs into, and only while
no other user can change what they hold.

Whatever is first on PATH is what every script blueprint runs calls `docker`, `rm` or `pulumi`. So a
tools folder goes there only when it and blueprint's folders above it are the user's alone
(`not_yours_alone`), and every folder a lookup of it passes through, from / down, links followed,
is root's or the user's and writable by no one else unless sticky (`unsafe_way`, as OpenSSH's
StrictModes): whoever may write in one of them may rename the user's folder away and put theirs in
its place. "Writable by no one else" is `others_may_write`: no world write, and group write only for
the user's own private group (`private_group`); the shell scripts (components/*.sh) apply the same rule.
"""

from __future__ import annotations

import errno
import grp
import os
import pwd
import stat
from collections.abc import Iterator, MutableMapping
from pathlib import Path

BLUEPRINT_SHARE = (".local", "share", "blueprint")
"""blueprint's own folder under the home folder: nothing but what `doctor --fix` installs."""
PULUMI_BIN = (*BLUEPRINT_SHARE, "pulumi", "bin")
TOOLS_BIN = (*BLUEPRINT_SHARE, "bin")
"""Where `doctor --fix` installs under the home folder (cli/doctor/install.py): the Pulumi CLI with its
bundled plugins; kind and kubectl. In this order they go first on blueprint's PATH (`tools_on_path`).
Pulumi's own installer folder, ~/.pulumi/bin, is the user's: blueprint never writes it nor moves it."""

SHELL_PATH = "BLUEPRINT_SHELL_PATH"
"""Where `tools_on_path` keeps PATH as it found it, before it put the install folders first: what the
user's shell finds first (`kubectl` may be a package manager's there), which the doctor compares."""
OTHER_OWNER = "another user owns it"
_MAX_LINKS = 40
"""Links a lookup follows before it gives up (Linux's own limit, ELOOP)."""


def tools_home() -> Path | None:
    """The home folder the tools `doctor --fix` installs are under; None when there is none to tell."""
    try:
        return Path.home()
    except RuntimeError:  # no HOME, and no entry in the password database
        return None


def blueprint_folders(home: Path, folder: Path) -> list[Path]:
    """The folders of blueprint's own from ~/.local/share/blueprint down to `folder`, which is one of them."""
    top = home.joinpath(*BLUEPRINT_SHARE)
    below = folder.relative_to(top).parts
    return [top.joinpath(*below[:count]) for count in range(len(below) + 1)]


def private_group(gid: int) -> bool:
    """Whether `gid` is the user's own group: their primary group, named as they are (a user private
    group, Debian's and Fedora's default), not one shared with other users (macOS's `staff`, SUSE's `users`).
    """
    if gid != os.getgid():
        return False
    try:
        return grp.getgrgid(gid).gr_name == pwd.getpwuid(os.getuid()).pw_name
    except KeyError:  # a user or group the system's databases do not know: nobody can tell it is theirs alone
        return False


def others_may_write(found: os.stat_result) -> str | None:
    """Who besides the user may write in a folder so found: any user, the members of a group that is
    not the user's private group (`private_group`), or None.
    """
    if found.st_mode & stat.S_IWOTH:
        return "other users"
    if found.st_mode & stat.S_IWGRP and not private_group(found.st_gid):
        try:
            name = grp.getgrgid(found.st_gid).gr_name
        except KeyError:
            name = str(found.st_gid)
        return f"the members of group {name}"
    return None


def not_yours_alone(folder: Path) -> str | None:
    """Why `folder` must not go first on PATH, or None: it is not a folder, another user owns it, or
    someone else may write in it (`others_may_write`).
    """
    try:
        found = folder.stat()
    except OSError:
        return "it is not there"
    if not stat.S_ISDIR(found.st_mode):
        return "it is not a folder"
    if found.st_uid != os.getuid():
        return OTHER_OWNER
    who = others_may_write(found)
    return f"{who} may write in it" if who else None


def _lookup(folder: Path) -> Iterator[Path]:
    """Every folder a lookup of the absolute `folder` passes through, from / to `folder` itself,
    following links as the system does: the folder holding a link as well as where it points.
    """
    here, todo, links = Path("/"), list(folder.parts[1:]), 0
    yield here
    while todo:
        name = todo.pop(0)
        if name == "..":
            here = here.parent
            continue
        there = here / name
        if there.is_symlink():
            links += 1
            if links > _MAX_LINKS:
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(folder))
            target = Path(os.readlink(there))
            here = Path("/") if target.is_absolute() else here
            todo[:0] = target.parts[1:] if target.is_absolute() else target.parts
            continue
        here = there
        yield here


def unsafe_way(folder: Path) -> str | None:
    """Why another user could put a folder of theirs in `folder`'s place, or None: a folder on the way
    to it (`_lookup`) that is neither root's nor the user's, or that someone else may write in
    (`others_may_write`) without the sticky bit (/tmp's, which keeps them from renaming what is not
    theirs); or a path PATH cannot hold as one absolute folder.
    """
    if not folder.is_absolute() or os.pathsep in str(folder):
        return f"{folder} is not one absolute folder on PATH (PATH splits at {os.pathsep!r})"
    try:
        for each in _lookup(folder):
            found = each.stat()
            if found.st_uid not in (0, os.getuid()):
                return f"{each} belongs to another user"
            if not found.st_mode & stat.S_ISVTX and (who := others_may_write(found)):
                fix = "o-w" if who == "other users" else "g-w"
                return f"{who} may write in {each} (`chmod {fix} -- {each}` stops that)"
    except OSError as error:
        return f"{folder} cannot be looked up ({error.strerror})"
    return None


def tools_folders(home: Path | None) -> list[str]:
    """The folders `doctor --fix` installs into under `home` that are there and, with blueprint's
    folders above them, the user's alone (`not_yours_alone`), on a safe way (`unsafe_way`), in PATH order.
    """
    if home is None:
        return []
    wanted = [home.joinpath(*folder) for folder in (PULUMI_BIN, TOOLS_BIN)]
    return [str(folder) for folder in wanted if not any(map(not_yours_alone, blueprint_folders(home, folder))) and not unsafe_way(folder)]


def tools_on_path(environ: MutableMapping[str, str], home: Path | None) -> bool:
    """Put the folders `doctor --fix` installs into under `home` (`tools_folders`) first on
    `environ`'s PATH, each once: an older `pulumi` or `kubectl` elsewhere must not win. They are
    blueprint's own and hold nothing but those tools, so nothing of the user's (a `python`, a `uv`)
    comes before the project's environment, and no other folder is moved; PATH as it was, the first
    time, is kept as SHELL_PATH. False, PATH left alone, when there is none.

    `main` does it for the process, so what `--fix` installed is found with no PATH step by the
    doctor, by the Automation API (which runs the `pulumi` first on PATH) and by every process
    started from there (Pulumi's engine, the `kind` and `kubectl` local.Command runs); `blueprint
    env` prints the same folders for the shell.
    """
    first = tools_folders(home)
    if not first:
        return False
    taken = {os.path.normpath(folder) for folder in first}
    path = environ.get("PATH", "")
    environ.setdefault(SHELL_PATH, path)
    rest = [entry for entry in (path.split(os.pathsep) if path else []) if os.path.normpath(entry) not in taken]
    environ["PATH"] = os.pathsep.join([*first, *rest])
    return True
