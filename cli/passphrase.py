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
import secrets
import shlex
import stat
from collections.abc import Mapping
from pathlib import Path

from shown import PATH_LIMIT, shown


class PassphraseFileError(Exception):
    """blueprint's passphrase file is not one it can trust; the message says what to do."""


_SET_HOME = "set HOME to your home folder, or XDG_CONFIG_HOME to a folder of yours, and run again"


def _xdg_config_home(environ: Mapping[str, str]) -> Path | None:
    """XDG_CONFIG_HOME, which counts only when absolute (XDG Base Directory spec)."""
    config = environ.get("XDG_CONFIG_HOME", "")
    return Path(config) if os.path.isabs(config) else None


def home_problem(environ: Mapping[str, str]) -> str | None:
    """Why HOME cannot be the user's home folder, or None (unset is for the password database to tell).
    An empty or relative HOME makes Python's `~` the root folder (posixpath.expanduser: an empty home
    is "/") or a folder below the current one: blueprint's passphrase, tools and image cache would go there.
    """
    home = environ.get("HOME")
    if home is None or os.path.isabs(home):
        return None
    said = "empty" if not home else f"relative ({_named(home)})"
    return (
        f"HOME is {said}, not your home folder: blueprint keeps its passphrase, tools and image cache under it. "
        f"Set HOME to your home folder (an absolute path) and run again"
    )


def _home(environ: Mapping[str, str]) -> Path:
    if (problem := home_problem(environ)) is not None:
        raise PassphraseFileError(problem)
    try:
        return Path(environ.get("HOME") or Path.home())
    except RuntimeError:  # no HOME, and no entry in the password database (pathlib)
        raise PassphraseFileError(f"blueprint cannot tell your home folder (HOME is not set): {_SET_HOME}") from None


def passphrase_file(environ: Mapping[str, str]) -> Path:
    """Where blueprint keeps the passphrase: under XDG_CONFIG_HOME, else ~/.config."""
    base = _xdg_config_home(environ) or _home(environ) / ".config"
    return base / "blueprint" / "pulumi-passphrase"


def _yours(path: Path, found: os.stat_result) -> None:
    """Refuse what another user owns: root's, say, after a `sudo -E blueprint ...` made it."""
    if found.st_uid == os.getuid():
        return
    raise PassphraseFileError(
        f"{_named(path)} belongs to another user (uid {found.st_uid}), so blueprint can neither trust nor keep private the state's "
        f"passphrase there. If a `sudo` run made it, make it yours again "
        f"(`sudo chown -R {os.getuid()}:{os.getgid()} -- {_argument(path)}`) and run again."
    )


def _trusted(path: Path) -> None:
    """Refuse a passphrase file that is a link or not a regular file (someone else's choice of
    where the state's key lives), or that another user owns, and take group and other access away
    from one that has it.
    """
    found = path.lstat()
    if not stat.S_ISREG(found.st_mode):
        raise PassphraseFileError(
            f"{_named(path)} is not a plain file (a link, or something else): blueprint keeps the state's passphrase only in "
            f"a file of its own. Remove it (`rm -- {_argument(path)}`) if you did not put it there, and run again."
        )
    _yours(path, found)
    if found.st_mode & 0o077:
        path.chmod(0o600)


def _work_dir(work_dir: Path | None) -> Path:
    """Where Pulumi runs: the checkout (the Automation API's work_dir, and cwd of every `pulumi` blueprint runs)."""
    if work_dir is not None:
        return work_dir
    # stacks.config.PROJECT_DIR, spelt here: importing stacks.config loads Pulumi's SDK, half a second
    # of every `eval "$(uv run blueprint env)"` (tests/cli/test_passphrase.py checks they agree).
    return Path(__file__).resolve().parent.parent


def _users_file(environ: Mapping[str, str], work_dir: Path) -> str | None:
    """The PULUMI_CONFIG_PASSPHRASE_FILE Pulumi reads (no PULUMI_CONFIG_PASSPHRASE, and not empty), absolute:
    a relative one as Pulumi resolves it, against the folder it runs in (`os.ReadFile` in `readPassphrase`,
    from the Automation API's work_dir), never the caller's own folder. None when Pulumi reads no file.
    """
    chosen = environ.get("PULUMI_CONFIG_PASSPHRASE_FILE")
    if "PULUMI_CONFIG_PASSPHRASE" in environ or not chosen:
        return None
    return os.path.join(work_dir, chosen)  # an absolute `chosen` stays as it is


def _is_blueprints_own(chosen: str, environ: Mapping[str, str]) -> bool:
    """Whether `chosen` is blueprint's own file, as `blueprint env` exports it: blueprint keeps it
    (makes it at first write, keeps it private) as if the variable were unset.
    """
    try:
        return os.path.normpath(chosen) == os.path.normpath(passphrase_file(environ))
    except PassphraseFileError:  # no home folder: not blueprint's, whatever it is
        return False


def _stacks_written(work_dir: Path, environ: Mapping[str, str]) -> bool:
    """Whether the backend's state holds a stack (pulumi/pulumi pkg/backend/diy: `.pulumi/stacks/`
    under a `file://` backend's folder), which was written with some passphrase. Another backend
    (a bucket, Pulumi Cloud) is not asked: it may hold them.
    """
    from cli import backend

    folder = backend.local_folder(backend.url(environ, work_dir), work_dir)
    if folder is None:
        return True  # cannot tell without asking it: never advise what could lose the stacks' secrets
    stacks = folder / ".pulumi" / "stacks"
    try:
        return any(found.is_file() and ".json" in found.name and not found.name.endswith(".bak") for found in stacks.rglob("*"))
    except OSError:
        return True  # cannot tell: never advise what could lose the stacks' secrets


def _or_else(work_dir: Path, environ: Mapping[str, str]) -> str:
    """The other way out of a refused PULUMI_CONFIG_PASSPHRASE_FILE: unsetting it, only while no stack
    was written with its passphrase (blueprint's own could not decrypt them).
    """
    from cli import backend

    if not _stacks_written(work_dir, environ):
        return "or unset the variable (`unset PULUMI_CONFIG_PASSPHRASE_FILE`): blueprint then makes and keeps its own"
    try:
        own = f", {_named(passphrase_file(environ))}"
    except PassphraseFileError:
        own = ""
    folder = backend.local_folder(backend.url(environ, work_dir), work_dir)
    where = _named(folder) if folder is not None else repr(backend.shown(backend.url(environ, work_dir)))
    return (
        f"the stacks in {where} need the passphrase they were written with: "
        f"unset the variable only if they were written with blueprint's own{own}"
    )


def _users_file_is_usable(chosen: str, environ: Mapping[str, str], work_dir: Path) -> None:
    """Refuse the PULUMI_CONFIG_PASSPHRASE_FILE Pulumi reads (`chosen`, absolute) if Pulumi could not read the
    passphrase from it, each time it is asked (a file, not a pipe or a folder), before anything reads it; or
    if another user owns it: its owner chooses the state's key, and may read every secret in the state.
    An empty variable Pulumi ignores, as blueprint does (`_users_file`).
    """
    names = f"PULUMI_CONFIG_PASSPHRASE_FILE names {_named(environ['PULUMI_CONFIG_PASSPHRASE_FILE'])}"
    if chosen != environ["PULUMI_CONFIG_PASSPHRASE_FILE"]:
        names += f" (Pulumi reads {_named(chosen)}, from the checkout)"
    try:
        found = os.stat(chosen)
    except OSError as error:
        if isinstance(error, FileNotFoundError) and os.path.islink(chosen):
            problem = f"a link to {_named(os.readlink(chosen))}, which does not exist"
        elif isinstance(error, FileNotFoundError):
            problem = "which does not exist"
        else:
            problem = f"which cannot be looked at ({error.strerror})"
        raise PassphraseFileError(
            f"{names}, {problem}: Pulumi could not read the state's passphrase from it. Create it, holding your passphrase; "
            f"{_or_else(work_dir, environ)}; and run again."
        ) from None
    if not stat.S_ISREG(found.st_mode):
        kind = "a folder" if stat.S_ISDIR(found.st_mode) else "not a regular file (a pipe or a device, read once at best)"
        raise PassphraseFileError(
            f"{names}, which is {kind}: Pulumi reads the state's passphrase from a file, at each command. Point it at a file "
            f"that holds your passphrase; {_or_else(work_dir, environ)}; and run again."
        )
    if found.st_uid != os.getuid():
        raise PassphraseFileError(
            f"{names}, which belongs to another user (uid {found.st_uid}): whoever owns it "
            f"chooses the state's passphrase and can read every secret in the state. Point it at a file of yours; "
            f"{_or_else(work_dir, environ)}; and run again."
        )
    if not os.access(chosen, os.R_OK):
        raise PassphraseFileError(
            f"{names}, which you cannot read: Pulumi could not read the state's passphrase from it. Make it readable to you "
            f"(`chmod u+r -- {_argument(chosen)}`); {_or_else(work_dir, environ)}; and run again."
        )


def _named(path: object) -> str:
    """A path as a message names it (`shown`, long enough to recognise one's own)."""
    return shown(path, PATH_LIMIT)


def _argument(path: str | Path) -> str:
    """A path as a command in a message gives it: quoted for the shell, or, too long to be read, as `shown` cuts it."""
    return shlex.quote(str(path)) if len(str(path)) <= PATH_LIMIT else _named(path)


def _create(path: Path, environ: Mapping[str, str]) -> None:
    # Never the home folder itself: a HOME that does not exist is a mistake to point out, not to make.
    if _xdg_config_home(environ) is None and not (home := _home(environ)).is_dir():
        raise PassphraseFileError(
            f"your home folder {_named(home)} (HOME) does not exist; blueprint keeps its passphrase in {_named(path)}: {_SET_HOME}"
        )
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.parent.chmod(0o700)  # mkdir's mode goes through the umask, and a folder that existed keeps its own
        draft = path.with_name(f".{path.name}.{os.getpid()}")
        descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    except OSError as error:
        raise PassphraseFileError(f"blueprint cannot create its passphrase file {_named(path)} ({error.strerror}): {_SET_HOME}") from None
    with os.fdopen(descriptor, "w") as file:
        file.write(secrets.token_urlsafe(32) + "\n")
    try:
        # A link never replaces a file: of two first runs at once, both end up with the one passphrase.
        os.link(draft, path)
    except FileExistsError:
        pass
    finally:
        draft.unlink()


def _not_empty(path: Path) -> None:
    """Refuse a passphrase file that holds no passphrase: Pulumi trims the file's text and takes an
    empty one as the passphrase (pulumi/pulumi pkg/secrets/passphrase/manager.go, `readPassphrase`),
    so the state's secrets would be readable by anyone holding the state.
    """
    try:
        text = path.read_text(errors="replace")
    except OSError as error:
        raise PassphraseFileError(f"blueprint cannot read its passphrase file {_named(path)} ({error.strerror})") from None
    if text.strip():
        return
    file = _argument(path)
    raise PassphraseFileError(
        f"{_named(path)} is empty: it holds no passphrase, and Pulumi would encrypt the state's secrets with an empty one. "
        f"If it held your passphrase, put that back (from a backup). If no stack was ever written with it, remove it "
        f"(`rm -- {file}`) and run again: blueprint makes a new one. Stacks that were written with the empty passphrase "
        f"then move to the new one, each once: `PULUMI_CONFIG_PASSPHRASE= pulumi stack change-secrets-provider passphrase "
        f"-s <stack> < {file}`."
    )


def environment(environ: Mapping[str, str], *, create: bool = True, work_dir: Path | None = None) -> dict[str, str]:
    """What Pulumi needs to find the passphrase: nothing when the user chose one (their relative file made
    absolute, as Pulumi run in `work_dir`, the checkout, reads it), else blueprint's own file, created on
    first use unless `create` is False: a command that only reads the state, or checks before it writes,
    never makes it (a stack written with it exists only once it does, and a read that needs it then says
    it cannot decrypt). A PULUMI_CONFIG_PASSPHRASE_FILE naming blueprint's own file (`blueprint env`
    exports it) is blueprint's own, not a choice of the user's.
    """
    if "PULUMI_CONFIG_PASSPHRASE" in environ:
        return {}
    chosen = _users_file(environ, _work_dir(work_dir))
    if chosen is not None and not _is_blueprints_own(chosen, environ):
        _users_file_is_usable(chosen, environ, _work_dir(work_dir))
        return {} if chosen == environ["PULUMI_CONFIG_PASSPHRASE_FILE"] else {"PULUMI_CONFIG_PASSPHRASE_FILE": chosen}
    path = passphrase_file(environ)
    try:
        if path.parent.is_dir():
            _yours(path.parent, path.parent.stat())  # first: another user's folder (0700) would refuse the looks below
        if not path.is_symlink() and not path.exists():
            if not create:
                return {"PULUMI_CONFIG_PASSPHRASE_FILE": str(path)}
            _create(path, environ)
        _trusted(path)
    except OSError as error:
        raise PassphraseFileError(
            f"blueprint cannot use its passphrase file {_named(path)} ({error.strerror}): it and its folder must be yours, "
            f"which `ls -ld -- {_argument(path.parent)} {_argument(path)}` shows; make them so and run again"
        ) from None
    _not_empty(path)
    return {"PULUMI_CONFIG_PASSPHRASE_FILE": str(path)}


def weak_choice(environ: Mapping[str, str], *, work_dir: Path | None = None) -> str | None:
    """A warning when the user's own passphrase, PULUMI_CONFIG_PASSPHRASE or else the text of their
    PULUMI_CONFIG_PASSPHRASE_FILE as Pulumi reads it (trimmed), is empty or `blueprint`, the first
    one anybody would try.
    """
    if "PULUMI_CONFIG_PASSPHRASE" in environ:
        chosen, name = environ["PULUMI_CONFIG_PASSPHRASE"], "PULUMI_CONFIG_PASSPHRASE"
    elif (path := _users_file(environ, _work_dir(work_dir))) is not None and not _is_blueprints_own(path, environ):
        try:
            chosen = Path(path).read_text(errors="replace").strip()
        except OSError:
            return None  # Pulumi says it cannot read it
        name = "the passphrase in PULUMI_CONFIG_PASSPHRASE_FILE"
    else:
        return None
    if chosen not in ("", "blueprint"):
        return None
    return (
        f"warning: {name} is {'empty' if chosen == '' else '`blueprint`, the project name'}: anyone with the state can read its "
        f"secrets. Unset it to use blueprint's private passphrase, and move the stacks written with yours to it "
        f"(`pulumi stack change-secrets-provider passphrase`)."
    )


def exports(environ: Mapping[str, str]) -> str:
    """`blueprint env`: shell lines that give the plain `pulumi` commands the same passphrase."""
    return "".join(f"export {key}={shlex.quote(value)}\n" for key, value in environment(environ).items())


def cannot_decrypt(environ: Mapping[str, str], *, work_dir: Path | None = None) -> str:
    """What to say when Pulumi could not decrypt a stack with the passphrase it was given."""
    if "PULUMI_CONFIG_PASSPHRASE" in environ:
        return "Pulumi cannot decrypt the state with PULUMI_CONFIG_PASSPHRASE: set it to the passphrase the stacks were created with."
    chosen = _users_file(environ, _work_dir(work_dir))
    if chosen is not None and not _is_blueprints_own(chosen, environ):
        return f"Pulumi cannot decrypt the state with PULUMI_CONFIG_PASSPHRASE_FILE ({_named(chosen)}): point it at the stacks' passphrase."
    if not passphrase_file(environ).exists():
        return (
            f"Pulumi cannot decrypt the state: blueprint's passphrase file {_named(passphrase_file(environ))} is missing, and the stacks "
            f"were written with a passphrase. Put back the file they were written with (from a backup), or set "
            f"PULUMI_CONFIG_PASSPHRASE to their passphrase."
        )
    return (
        f"Pulumi cannot decrypt the state with blueprint's passphrase ({_named(passphrase_file(environ))}): the stacks were written "
        f"with another one. Put back the passphrase file they were written with, or set PULUMI_CONFIG_PASSPHRASE to their passphrase."
    )
