"""The folders blueprint's config names, and which it refuses.

The data folder (`dataDir`) and the image cache (`imageCacheDir`) are wiped whole, so neither may be
a folder whose removal takes something else with it (a system tree, a home, the project), nor hold a
character a shell or Docker's mount syntax would misread. The checkout id names this checkout in
every host folder it claims (`folder_owner`).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import tempfile
from functools import cache
from pathlib import Path

import pulumi

from shown import shown
from stacks import runtime
from stacks.config import NAMESPACE, PROJECT_DIR, ConfigError
from stacks.config.schema import default_string, fix_hint


def absolute_data_dir(value: str, project_dir: Path) -> Path:
    """`dataDir` made absolute: relative paths are relative to the project, not to the caller's cwd.
    A `~` or `~user` that `home_problem` refuses is a ConfigError naming the value and the fix.
    """
    if problem := home_problem(value):
        fix = fix_hint("phase1", "dataDir", default_string("dataDir"))
        raise ConfigError(f"{NAMESPACE}:dataDir = {shown(value)} is not valid: {problem}; {fix}")
    return (project_dir / Path(value).expanduser()).resolve()


_OWN_HOME_OR_ABSOLUTE = "use ~/<folder> in your own home, or an absolute path"


def own_homes() -> set[Path]:
    """The current user's home folder, as HOME and as the password database give it, each as written
    and resolved; empty when neither tells it.
    """
    homes = set()
    with contextlib.suppress(RuntimeError):  # no HOME, and no entry in the password database
        homes.add(Path.home())
    try:
        import pwd  # POSIX only

        homes.add(Path(pwd.getpwuid(os.getuid()).pw_dir))
    except (ImportError, KeyError):
        pass
    return homes | {home.resolve() for home in homes}


def home_problem(value: str) -> str | None:
    """Why the `~` or `~user` that `value` starts with cannot be used, or None (a path without one too).

    Only the current user's own home is taken (`~`, `~<you>`): `~user` of anyone else names their
    home, which is not this user's to fill with secrets nor to wipe on a destroy (blueprint would fail
    deep in `up` writing there, or, run as root, leave root's secrets in it and remove them later). A
    folder elsewhere is given as an absolute path, and checked as any other.
    """
    if not value.startswith("~"):
        return None
    user = value[1:].split("/", 1)[0]
    try:
        home = Path(f"~{user}").expanduser()  # RuntimeError when it names no home (pathlib)
    except RuntimeError:
        if user:
            return f"there is no user {shown(user)} on this machine, so {shown('~' + user)} names no folder; {_OWN_HOME_OR_ABSOLUTE}"
        return "your home folder cannot be told (HOME is not set, and your user is not in the password database); give an absolute path"
    if user and not {home, home.resolve()} & own_homes():
        return f"~{user} is another user's home ({home}), not yours to fill with secrets or to wipe; {_OWN_HOME_OR_ABSOLUTE}"
    return None


DATA_PARENT = Path("infra") / "data"
"""Where a data folder inside the checkout must be: the one folder of it that `.gitignore` ignores, so
that no secret under the data folder can ever be committed."""

_PATH_PUNCTUATION = frozenset("/._-+@~ ")
"""What a data folder's path may hold besides letters and digits. It reaches shell scripts, Docker's
and kind's mount arguments, `find -path` patterns and the commands printed for the user, so nothing
a shell or a glob would read: no quote, `$`, backtick, `;`, `&`, `|`, `*`, `?`, `[`, `\\`, newline;
and no `:` or `,`, which Docker's mount syntax splits on."""

SYSTEM_TREES = tuple(
    Path(tree)
    for tree in (
        "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/dev", "/proc", "/sys", "/run",
        "/System", "/Library", "/Applications", "/private/etc",
    )
)  # fmt: skip
"""The operating system's own trees (Linux, macOS): no data folder anywhere inside them."""

SHARED_FOLDERS = tuple(
    Path(folder)
    for folder in (
        "/home", "/root", "/tmp", "/var", "/var/lib", "/var/tmp", "/opt", "/srv", "/mnt", "/media", "/snap", "/nix",
        "/Users", "/Users/Shared", "/Volumes", "/private", "/private/var", "/private/tmp",
    )
)  # fmt: skip
"""Folders that hold other people's or programs' folders: a data folder may be inside one
(`/srv/blueprint`), never one itself, since a wipe removes the data folder itself."""


def other_homes() -> dict[Path, str]:
    """The home folders of the other users of this machine (the password database), as written and
    resolved, each with its user's name: all but the current user's own (`own_homes`), `/` (system
    accounts without a home of their own) and the folders that hold others' (SHARED_FOLDERS).
    """
    try:
        import pwd  # POSIX only

        entries = pwd.getpwall()
    except ImportError:
        return {}
    return dict(_other_homes(tuple((entry.pw_name, entry.pw_dir) for entry in entries), frozenset(own_homes())))


@cache
def _other_homes(users: tuple[tuple[str, str], ...], own: frozenset[Path]) -> tuple[tuple[Path, str], ...]:
    """`other_homes` of these `(name, home)` users: resolving each home is the cost, once per process
    (the config is checked several times a run: every key of every stack at once, then each stack's own).
    """
    homes: dict[Path, str] = {}
    for name, folder in users:
        written = Path(folder)
        for home in (written, written.resolve()):
            if home.is_absolute() and home != Path("/") and home not in own and home not in SHARED_FOLDERS:
                homes.setdefault(home, name)
    return tuple(homes.items())


def unsafe_characters(text: str) -> str:
    """The characters of `text` a data folder's path must not hold, each once, as shown in messages."""
    bad = dict.fromkeys(char for char in text if not (char.isalnum() or char in _PATH_PUNCTUATION))
    return " ".join(repr(char) for char in bad)


_OUTSIDE_INFRA_DATA = (
    f"the one folder of the project git ignores (its secrets could be committed); use {DATA_PARENT}/<name>, "
    "or an absolute path outside the project"
)


UNSAFE_PROJECT_EXAMPLE = "~/blueprint-data"
"""The data folder a fix suggests when the project's own path holds characters a data folder's may not."""


def _characters_problem(text: str, what: str = "the data folder") -> str:
    allowed = "".join(sorted(_PATH_PUNCTUATION - {" "}))
    return (
        f"{what}'s path may hold only letters, digits, spaces and {allowed} (it reaches shell scripts "
        f"and Docker's mount syntax); it holds {unsafe_characters(text)}"
    )


NAME_MAX = 255
"""The longest name of a path a file system takes: 255 bytes (UTF-8) on Linux's (ext4, xfs, btrfs);
255 UTF-16 units on macOS's (HFS+: Apple TN1150, after decomposing; APFS refuses the same, as tried
on developer.apple.com/forums/thread/726970), where `é` is one, not two. A longer one is refused
(ENAMETOOLONG) only when `up` makes the folder."""


def _name_length(part: str, system: str) -> tuple[int, str]:
    """How long `part` is to the file systems of `system` (os.uname's sysname), and in what."""
    if system == "Darwin":
        return len(part.encode("utf-16-le")) // 2, "UTF-16 units"
    return len(os.fsencode(part)), "bytes"


def _long_part_problem(path: Path) -> str | None:
    """Why a part of `path` that is not there yet is too long for a file system, or None. A part
    that exists proves itself: a folder on a mounted volume (exFAT takes 255 UTF-16 units on Linux
    too), made on a Mac, is taken however many bytes its name holds, and so wiped.
    """
    system = os.uname().sysname
    for there in (*reversed(path.parents), path):
        if there.name and not os.path.lexists(there) and (length := _name_length(there.name, system))[0] > NAME_MAX:
            size, unit = length
            return (
                f"a part of its path is {size} {unit} long ({shown(there.name, 40)}), over the {NAME_MAX} {unit} a file system "
                "takes for one name; shorten it"
            )
    return None


def _not_a_folder(kind_of: Path) -> str | None:
    """What `kind_of` is when it exists and is not a folder (nor a link to one), or None."""
    if not os.path.lexists(kind_of) or os.path.isdir(kind_of):
        return None
    if os.path.islink(kind_of) and not os.path.exists(kind_of):
        return "a link that leads nowhere"
    kind = "a file" if os.path.isfile(kind_of) else "neither a file nor a folder (a FIFO, a socket or a device)"
    return f"a link to {kind}" if os.path.islink(kind_of) else kind


def not_a_folder_problem(written: Path, what: str = "the data folder") -> str | None:
    """Why the folder at `written` (absolute, links not followed) cannot be made or used, or None:
    it, or a folder of its path, exists and is not a folder (a file, a link to one, a link that leads
    nowhere), where `up` would fail to make it, half-way.
    """
    for there in (written, *written.parents):
        if (kind := _not_a_folder(there)) and there == written:
            return f"{what} {written} is {kind}, not a folder; remove or move it, or give another folder"
        if kind:
            return f"{what}'s path goes through {there}, which is {kind}, not a folder; give another folder"
        if os.path.lexists(there):
            return None
    return None


def data_dir_problem(path: Path, project_dir: Path, what: str = "the data folder") -> str | None:
    """Why `path` (absolute) cannot hold the platform data (or, as `what` says, another folder a
    wipe removes whole: the image cache), or None.

    The data folder is wiped on a `preserveData=false` destroy, so it must never be a folder
    whose removal would take something else with it, nor one whose path a shell could misread.
    """
    if unsafe_characters(str(path)):
        return _characters_problem(str(path), what)
    if problem := _long_part_problem(path):
        return problem
    if ".git" in path.parts:
        return f"{what} must not be inside a .git folder"
    if path == project_dir or path in project_dir.parents:
        return f"{what} must not be the project folder or one of its parents"
    if any(path == home or path in home.parents for home in own_homes()):
        return f"{what} must not be the home folder or one of its parents; a folder inside it, such as ~/blueprint-data, is fine"
    if tree := next((tree for tree in SYSTEM_TREES if path == tree or tree in path.parents), None):
        return f"{what} must not be inside {tree}, which belongs to the operating system"
    if path in SHARED_FOLDERS:
        return f"{what} must not be {path} itself, which holds other folders; a folder inside it ({path / 'blueprint'}) is fine"
    # However it is written: `~bob/x` is refused as such (`home_problem`), and so is `/home/bob/x`.
    for home, user in other_homes().items():
        if path == home or home in path.parents:
            return (
                f"{what} must not be in {home}, the home folder of {user}: not yours to fill with secrets or to wipe; "
                "use one in your own home, such as ~/blueprint-data"
            )
        if path in home.parents:
            return f"{what} must not hold {home}, the home folder of {user}, which a wipe would remove with it"
    inside = project_dir / DATA_PARENT
    if project_dir in path.parents and inside not in path.parents:
        return f"a data folder inside the project must be inside {DATA_PARENT}/, {_OUTSIDE_INFRA_DATA}"
    return None


def data_dir_value_problem(value: str, project_dir: Path) -> str | None:
    """Why the `dataDir` setting `value` cannot be used, or None: its characters, `data_dir_problem`
    of where it leads, and, for a path relative to the project, whether it stays inside `infra/data/`
    as written (`../data` leaves the project: say so with an absolute path).
    """
    if unsafe_characters(value):
        return _characters_problem(value)
    if problem := home_problem(value):
        return problem
    if unsafe_characters(str(project_dir)) and not Path(value).expanduser().is_absolute():
        return (
            f"{_characters_problem(str(project_dir))}, in the project's own folder, {project_dir}: give an absolute "
            f"data folder outside it, such as {UNSAFE_PROJECT_EXAMPLE}"
        )
    if problem := data_dir_problem(absolute_data_dir(value, project_dir), project_dir):
        return problem
    as_written = Path(os.path.normpath(project_dir / value))
    if not Path(value).expanduser().is_absolute() and (project_dir / DATA_PARENT) not in as_written.parents:
        return f"a relative data folder must be inside {DATA_PARENT}/, {_OUTSIDE_INFRA_DATA}"
    return not_a_folder_problem(Path(os.path.normpath(project_dir / Path(value).expanduser())))


IMAGE_CACHE = "the image cache folder"


def default_image_cache_dir(system: str | None = None) -> Path:
    """Where the image cache lives when `imageCacheDir` is empty: `blueprint/images` in the user's
    cache folder (~/Library/Caches on macOS, else ~/.cache), resolved. Outside every data folder, so
    no wipe of the data takes it, and shared by every checkout of this user, so a second checkout
    downloads nothing either. Not XDG_CACHE_HOME: the folder is recorded in the mirrors' inputs, and
    an `up` from a shell that set it otherwise would start them anew over an empty folder.
    """
    system = system or os.uname().sysname
    base = Path.home() / ("Library/Caches" if system == "Darwin" else ".cache")
    return (base / "blueprint" / "images").resolve()


def image_cache_dir_problem(value: str, project_dir: Path, data_dir: Path) -> str | None:
    """Why the `imageCacheDir` setting `value` cannot be used, or None. Empty is the default
    (`default_image_cache_dir`); otherwise an absolute path or one in the user's own home (`~/...`),
    checked as a data folder is, since `blueprint destroy --wipe-cache` removes it whole; and never
    inside the data folder nor holding it: each is wiped without the other.
    """
    if not value:
        return None
    if unsafe_characters(value):
        return _characters_problem(value, IMAGE_CACHE)
    if problem := home_problem(value):
        return problem
    if not Path(value).expanduser().is_absolute():
        return f"{IMAGE_CACHE} is shared by every checkout, so it is given as an absolute path or as ~/<folder>, not relative to this one"
    path = Path(value).expanduser().resolve()
    if path == project_dir or project_dir in path.parents:
        return f"{IMAGE_CACHE} is shared by every checkout: give one outside this project, such as ~/.cache/blueprint/images"
    if problem := data_dir_problem(path, project_dir, IMAGE_CACHE):
        return problem
    if path == data_dir or data_dir in path.parents:
        return f"{IMAGE_CACHE} must not be inside the data folder ({data_dir}), which a destroy with preserveData=false wipes"
    if path in data_dir.parents:
        return f"{IMAGE_CACHE} must not hold the data folder ({data_dir}): `uv run blueprint destroy --wipe-cache` would remove it"
    return not_a_folder_problem(Path(os.path.normpath(Path(value).expanduser())), IMAGE_CACHE)


def image_cache_dir(value: str) -> Path:
    """The image cache folder `imageCacheDir = value` names (checked by `image_cache_dir_problem`)."""
    return Path(value).expanduser().resolve() if value else default_image_cache_dir()


LOCAL_STATE_DIR = PROJECT_DIR / ".pulumi-state"
"""The checkout's own folder beside Pulumi's state (git-ignored): the default backend's state
(cli/backend.py), the checkout id, and the bring-up's timings, whatever backend holds the state."""

CHECKOUT_ID_FILE = LOCAL_STATE_DIR / "blueprint-checkout-id"
"""This checkout's id: random, made on first use beside Pulumi's local state (git-ignored with it),
so it outlives every destroy but differs between two clones. The host folders a stack claims name
it (`folder_owner`): another checkout of the same stack never takes them over, nor wipes them."""
_CHECKOUT_ID = re.compile(r"[0-9a-f]{16}")


def read_checkout_id(path: Path = CHECKOUT_ID_FILE) -> str | None:
    """The checkout's id, or None when it has none yet (no stack of it ever ran)."""
    try:
        value = path.read_text().strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read this checkout's id in {path}: {error}") from None
    if not _CHECKOUT_ID.fullmatch(value):
        raise ConfigError(
            f"{path} does not hold a checkout id (16 hex digits). Write back the id it held: the part after '@' in "
            f"the .blueprint-owner file of this checkout's data folder (blueprint:dataDir)"
        )
    return value


def checkout_id(path: Path = CHECKOUT_ID_FILE, made: str | None = None) -> str:
    """The checkout's id, made on first use (`made`, else a new one: the id a shared backend's stacks
    recorded, cli/backend.py `adopt_checkout_id`): written whole under a temporary name, then linked
    into place, so two programs starting at once end up with the same one.
    """
    if (found := read_checkout_id(path)) is not None:
        return found
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, draft = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            with os.fdopen(descriptor, "w") as handle:
                handle.write((made or secrets.token_hex(8)) + "\n")
            try:
                os.link(draft, path)
            except FileExistsError:
                pass  # another program made it first: that one counts
            except OSError:
                if not path.exists():  # a filesystem without hard links
                    os.replace(draft, path)
        finally:
            if os.path.exists(draft):
                os.unlink(draft)
    except OSError as error:
        raise ConfigError(
            f"cannot write this checkout's id to {path} ({error.strerror}): blueprint keeps it beside Pulumi's state, "
            f"in .pulumi-state/, which must be writable"
        ) from None
    return read_checkout_id(path) or ""


def folder_owner(stack: str | None = None) -> str:
    """`<project>/<stack>@<checkout id>` of the running program (or of its `stack` in the same
    checkout): the owner a host folder's `.blueprint-owner` names. The id is the runtime's when it
    gives one (the offline plan's, the same in every checkout), else this checkout's.
    """
    return f"{pulumi.get_project()}/{stack or pulumi.get_stack()}@{this_checkout()}"


def this_checkout() -> str:
    """The checkout's id: the runtime's when it gives one (the offline plan's), else this checkout's."""
    return runtime.current().checkout_id or checkout_id(CHECKOUT_ID_FILE)
