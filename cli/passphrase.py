"""The passphrase that encrypts Pulumi's state (`.pulumi-state/`, the passphrase secrets provider).

blueprint generates a random one on first use and keeps it in `${XDG_CONFIG_HOME:-~/.config}/blueprint/`,
mode 0600 in a 0700 folder, and hands Pulumi the file, never the text: PULUMI_CONFIG_PASSPHRASE_FILE.
One per user, not per checkout: every checkout of this user lives on the same disk under the same
account, so separate files would isolate nothing, while a file keyed by the checkout's path would be
lost, and its state unreadable, as soon as the folder is moved or renamed.

Pulumi reads PULUMI_CONFIG_PASSPHRASE if it is set (even empty), else a non-empty
PULUMI_CONFIG_PASSPHRASE_FILE (pulumi/pulumi pkg/secrets/passphrase/manager.go, `readPassphrase`);
when the user set either, blueprint adds nothing, so theirs wins exactly as it would for Pulumi.
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
import stat
from collections.abc import Mapping
from pathlib import Path

PUBLIC_DEFAULT = "blueprint"
"""What blueprint encrypted state with before it kept a private passphrase: public, in its source."""

_STACK_FILE = re.compile(r"^(?P<stack>.+)\.json(\.gz|\.zst)?$")
"""A stack's state file in the local backend: `<stack>.json`, maybe compressed; `.bak` copies are not
stacks (pulumi/pulumi pkg/backend/diy/store.go, `ListReferences`)."""


def passphrase_file(environ: Mapping[str, str]) -> Path:
    """Where blueprint keeps the passphrase; XDG_CONFIG_HOME counts only when absolute (XDG spec)."""
    config = environ.get("XDG_CONFIG_HOME", "")
    base = Path(config) if os.path.isabs(config) else Path(environ.get("HOME") or Path.home()) / ".config"
    return base / "blueprint" / "pulumi-passphrase"


class PassphraseFileError(Exception):
    """blueprint's passphrase file is not one it can trust; the message says what to do."""


def _trusted(path: Path) -> None:
    """Refuse a passphrase file that is a link or not a regular file (someone else's choice of
    where the state's key lives), and take group and other access away from one that has it.
    """
    found = path.lstat()
    if not stat.S_ISREG(found.st_mode):
        raise PassphraseFileError(
            f"{path} is not a plain file (a link, or something else): blueprint keeps the state's passphrase only in "
            f"a file of its own. Remove it (`rm {shlex.quote(str(path))}`) if you did not put it there, and run again."
        )
    if found.st_mode & 0o077:
        path.chmod(0o600)


def _user_chose(environ: Mapping[str, str]) -> bool:
    return "PULUMI_CONFIG_PASSPHRASE" in environ or bool(environ.get("PULUMI_CONFIG_PASSPHRASE_FILE"))


def _create(path: Path) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.parent.chmod(0o700)  # mkdir's mode goes through the umask, and a folder that existed keeps its own
    draft = path.with_name(f".{path.name}.{os.getpid()}")
    descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(secrets.token_urlsafe(32) + "\n")
    try:
        # A link never replaces a file: of two first runs at once, both end up with the one passphrase.
        os.link(draft, path)
    except FileExistsError:
        pass
    finally:
        draft.unlink()


def environment(environ: Mapping[str, str]) -> dict[str, str]:
    """What Pulumi needs to find the passphrase: nothing when the user chose one, else blueprint's
    own file, created on first use.
    """
    if _user_chose(environ):
        return {}
    path = passphrase_file(environ)
    if not path.is_symlink() and not path.exists():
        _create(path)
    _trusted(path)
    return {"PULUMI_CONFIG_PASSPHRASE_FILE": str(path)}


def weak_choice(environ: Mapping[str, str]) -> str | None:
    """A warning when the user's own PULUMI_CONFIG_PASSPHRASE is empty or the old public default."""
    if environ.get("PULUMI_CONFIG_PASSPHRASE") not in ("", PUBLIC_DEFAULT):
        return None
    return (
        "warning: PULUMI_CONFIG_PASSPHRASE is "
        + ("empty" if environ["PULUMI_CONFIG_PASSPHRASE"] == "" else f"`{PUBLIC_DEFAULT}`, blueprint's old public default")
        + ": anyone with the state can read its secrets. Unset it to use blueprint's private passphrase"
        + " (the `pulumi stack change-secrets-provider` commands blueprint then prints move the stacks)."
    )


def exports(environ: Mapping[str, str]) -> str:
    """`blueprint env`: shell lines that give the plain `pulumi` commands the same passphrase."""
    return "".join(f"export {key}={shlex.quote(value)}\n" for key, value in environment(environ).items())


def stacks(project_dir: Path) -> list[str]:
    """The stacks whose state is kept in this checkout's `.pulumi-state/`."""
    folder = project_dir / ".pulumi-state" / ".pulumi" / "stacks" / "blueprint"
    found = (_STACK_FILE.match(path.name) for path in folder.glob("*")) if folder.is_dir() else ()
    return sorted({match["stack"] for match in found if match})


def _move_to_private(project_dir: Path, environ: Mapping[str, str]) -> str:
    file = shlex.quote(str(passphrase_file(environ)))
    # Pulumi decrypts with PULUMI_CONFIG_PASSPHRASE and, when rotating without a terminal, reads the
    # new passphrase from the first line of stdin (pulumi/pulumi#11094; manager.go, promptForNewPassphrase).
    moves = [
        f"  PULUMI_CONFIG_PASSPHRASE={PUBLIC_DEFAULT} pulumi stack change-secrets-provider passphrase -s {shlex.quote(stack)} < {file}"
        for stack in stacks(project_dir) or ["<stack>"]
    ]
    return "\n".join(
        [
            f"Move each stack to your private passphrase, once, from {project_dir}:",
            f"  uv run blueprint env > /dev/null   # creates {file} if it is not there yet",
            *moves,
            "then run the command again. If you created the stacks with a passphrase of your own, "
            "set PULUMI_CONFIG_PASSPHRASE to it instead.",
        ]
    )


def legacy_state(project_dir: Path, environ: Mapping[str, str]) -> str | None:
    """When this checkout has stacks but blueprint has no passphrase yet (and the user chose none),
    they were encrypted with the old public default: say how to move them, rather than let Pulumi
    fail to decrypt them. None when there is nothing to move.
    """
    found = stacks(project_dir)
    if _user_chose(environ) or passphrase_file(environ).exists() or not found:
        return None
    return (
        f"The stacks {', '.join(found)} in .pulumi-state/ were written before blueprint kept a private passphrase: "
        f"they are encrypted with the old public default `{PUBLIC_DEFAULT}`.\n" + _move_to_private(project_dir, environ)
    )


def cannot_decrypt(project_dir: Path, environ: Mapping[str, str]) -> str:
    """What to say when Pulumi could not decrypt a stack with the passphrase it was given."""
    if "PULUMI_CONFIG_PASSPHRASE" in environ:
        return "Pulumi cannot decrypt the state with PULUMI_CONFIG_PASSPHRASE: set it to the passphrase the stacks were created with."
    chosen = environ.get("PULUMI_CONFIG_PASSPHRASE_FILE")
    if chosen and Path(chosen) != passphrase_file(environ):
        return f"Pulumi cannot decrypt the state with PULUMI_CONFIG_PASSPHRASE_FILE ({chosen}): point it at the stacks' passphrase."
    return (
        "Pulumi cannot decrypt the state with blueprint's passphrase. Stacks written before blueprint kept a private "
        f"passphrase are encrypted with the old public default `{PUBLIC_DEFAULT}`.\n" + _move_to_private(project_dir, environ)
    )
