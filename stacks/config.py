"""Typed, validated configuration of each phase.

Every key is declared once, with its type, default and description, in `Pulumi.yaml`; this module
only reads and checks. Reading is split in two so the checks need no Pulumi runtime:
`parse_phase1(raw, project_dir)` is a pure function of the raw strings, and `load_phase1()` feeds
it from `pulumi.Config`. All bad values are reported at once, in one `ConfigError`, before the
program registers a single resource.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import json
import os
import re
import secrets
import shlex
import tempfile
from collections.abc import Callable, Iterator, Mapping, Set
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pulumi

from stacks import runtime

NAMESPACE = "blueprint"
PROJECT_DIR = Path(__file__).resolve().parent.parent

# kind names nodes "<cluster>-control-plane", "<cluster>-worker12": keep them valid 63-char labels.
_CLUSTER_NAME_MAX = 63 - len("-control-plane")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class ConfigError(pulumi.RunError):
    """One or more config values are invalid; the message names each key, its value and the fix."""


@dataclass(frozen=True, kw_only=True)
class HostPorts:
    """Host ports the cluster publishes on 127.0.0.1."""

    http: int
    """The gateway's plain-HTTP listener."""
    https: int
    """The gateway's HTTPS listener."""
    ssh: int
    """GitLab's SSH listener."""
    openbao: int
    """The OpenBao API, for the init/unseal provider that runs on the host."""
    api_server: int
    """The Kubernetes API server."""


@dataclass(frozen=True, kw_only=True)
class Phase1Config:
    """What phase1 (the kind cluster) is built from."""

    cluster_name: str
    gitlab_nodes: int
    runner_nodes: int
    data_dir: Path
    """Absolute host path of the data folder."""
    preserve_data: bool
    domain: str
    ports: HostPorts
    headlamp: bool
    headlamp_admin: bool
    """Headlamp's account is cluster-admin rather than the read-only `view`."""
    image_cache_dir: Path | None = None
    """Absolute host path of the image cache the registry mirrors keep (`components/image_cache.py`),
    or None when `imageCache` is false."""


PHASE_KEYS: dict[str, frozenset[str]] = {
    "phase1": frozenset(
        {
            "clusterName",
            "gitlabNodes",
            "runnerNodes",
            "dataDir",
            "preserveData",
            "domain",
            "httpPort",
            "httpsPort",
            "sshPort",
            "openbaoPort",
            "apiServerPort",
            "headlamp",
            "headlampAdmin",
            "imageCache",
            "imageCacheDir",
        }
    ),  # fmt: skip
    "phase2": frozenset(),
    "phase3": frozenset({"pipelineTimeout"}),
}
"""The keys each phase reads from its stack's config. phase2 has none of its own: it builds from
phase1's outputs (preserveData and the domain included), so a key is set where it is read."""

MAX_GITLAB_NODES = 10
"""Beyond this, GitLab nodes stand empty: ten pods are pinned to them (GitLab's eight, each of one
replica, the gateway's controller and its proxy); and each node costs memory of its own, which
`blueprint doctor` counts (cli/doctor.py, `resources_needed`)."""
MAX_RUNNER_NODES = 8
"""Beyond this, runner nodes stand empty: the two Runners' pods and at most six jobs at a time
(their `concurrent` settings, components/runner.py)."""


HTTPS_PORT = 443
HTTPS_PORT_ONLY = (
    "GitLab's URLs (https://gitlab.<domain>, and the clone, registry and sign-in addresses GitLab gives) are on port "
    "443, and phase2 and phase3 call them from this laptop: no other port works yet; free port 443 "
    "(`sudo ss -ltnp 'sport = :443'` names what holds it)"
)
"""Why `httpsPort` takes 443 alone: GitLab is configured with its URL on the standard port, and the
laptop's calls (the admin token, the group, the Runners' registration, glab, the apps' checks) use it."""


def read_yaml(path: Path) -> Any:
    """The YAML document in `path`, read as Pulumi reads it, or a ConfigError naming the file, the
    line and the fix.
    """
    from yaml_files import YamlFileError, load_file

    try:
        return load_file(path)
    except YamlFileError as error:
        raise ConfigError(str(error)) from None


@cache
def declared_keys() -> dict[str, dict[str, Any]]:
    """The `config:` block of Pulumi.yaml: key (without namespace) -> its declaration."""
    return dict(read_yaml(PROJECT_DIR / "Pulumi.yaml")["config"])


def default_string(key: str) -> str:
    """The declared default of `key` as Pulumi passes config to a program: a string."""
    return config_string(declared_keys()[key]["default"])


def config_string(value: Any) -> str:
    """A config value as Pulumi hands it to a program (Go's `%v` of what its YAML parser read)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))  # Go prints 2.0 and 1e3 as 2 and 1000
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


STACK_FILES_DIR = PROJECT_DIR
"""Where the stack files (Pulumi.<stack>.yaml) are; read when a stack file is, so the tests plan
with Pulumi.yaml's defaults alone, whatever a user has put in the stack files."""


def stack_file(stack: str) -> Path:
    return STACK_FILES_DIR / f"Pulumi.{stack}.yaml"


@contextlib.contextmanager
def defaults_only() -> Iterator[None]:
    """Within it, no stack file is read: every stack has Pulumi.yaml's defaults alone (what the
    committed architecture document draws, and what the tests plan).
    """
    global STACK_FILES_DIR
    kept = STACK_FILES_DIR
    with tempfile.TemporaryDirectory(prefix="blueprint-no-stack-files-") as empty:
        STACK_FILES_DIR = Path(empty)
        try:
            yield
        finally:
            STACK_FILES_DIR = kept


def stack_file_config(stack: str) -> dict[str, Any]:
    """The `config:` block of Pulumi.<stack>.yaml (full keys), empty when there is none; its keys
    as Pulumi reads them: one without a namespace is the project's, `blueprint:<key>`
    (sdk/go/common/workspace/loaders.go, `stackConfigNamespacedWithProject`), and one in the old
    `<namespace>:config:<name>` form is `<namespace>:<name>` (resource/config/key.go, `ParseKey`).
    """
    path = stack_file(stack)
    if not path.exists():
        return {}
    document = read_yaml(path)
    if not isinstance(document, dict | None):
        raise ConfigError(f"{path}: expected a mapping whose `config:` holds the stack's settings, such as `config: {{}}`")
    block = (document or {}).get("config")
    if not isinstance(block, dict | None):
        raise ConfigError(f"{path}: `config:` must hold one `<namespace>:<key>: <value>` per line, such as blueprint:gitlabNodes: 2")
    found = {}
    spelt: dict[str, str] = {}
    for key, value in (block or {}).items():
        name = full_key(str(key))
        if name.count(":") > 1:
            raise ConfigError(f"{path}: {key!r} is not a config key (Pulumi takes `<namespace>:<name>`), such as blueprint:gitlabNodes")
        if name in spelt:
            # Pulumi keeps one of the two, whichever its map gives last.
            raise ConfigError(f"{path}: {spelt[name]!r} and {key!r} are the same key, {name}; keep one of them")
        spelt[name] = str(key)
        found[name] = value
    return found


def full_key(key: str) -> str:
    """`key` as Pulumi names it: `blueprint:<key>` without a namespace, `<ns>:<name>` for `<ns>:config:<name>`."""
    parts = key.split(":")
    if len(parts) == 1:
        return f"{NAMESPACE}:{key}"
    return f"{parts[0]}:{parts[2]}" if len(parts) == 3 and parts[1] == "config" else key


def stack_config(stack: str, overrides: Mapping[str, str] = {}) -> tuple[dict[str, str], list[str]]:
    """The config `pulumi up -s <stack>` would pass: Pulumi.yaml defaults, then Pulumi.<stack>.yaml,
    then `overrides` (full keys). Returns the values and the keys that are secret.
    """
    values = {f"{NAMESPACE}:{key}": config_string(spec["default"]) for key, spec in declared_keys().items() if "default" in spec}
    secret = []
    for key, value in stack_file_config(stack).items():
        if isinstance(value, dict) and "secure" in value:
            # Encrypted with the user's passphrase: plan with a stand-in, kept secret; for a key of
            # ours, its default, which is valid (the program itself checks the real value).
            values[key] = values.get(key, f"stand-in-for-{key}")
            secret.append(key)
        else:
            values[key] = config_string(value)
    values.update(overrides)
    return values, secret


def keys_set_on(stack: str, values: Mapping[str, str]) -> set[str]:
    """The full keys `stack` sets itself: those of its stack file, and any value that is not
    Pulumi.yaml's default (set some other way: `pulumi up --config`, another config file).
    """
    defaults = {f"{NAMESPACE}:{key}": config_string(spec.get("default")) for key, spec in declared_keys().items()}
    return set(stack_file_config(stack)) | {key for key, value in values.items() if defaults.get(key) != value}


def ways_to_set(stack: str, key: str, example: object) -> str:
    """How to set `key` on `stack`: with the Pulumi CLI, or by hand in the stack's file. An
    `example` such as `<free port>` is a placeholder for the user to fill in, shown as it is.
    """
    text = str(example)
    value = text if text.startswith("<") and text.endswith(">") else shlex.quote(text)
    by_hand = f"add the line `  {NAMESPACE}:{key}: {value}` under `config:` in Pulumi.{stack}.yaml (a `config: {{}}` becoming `config:`)"
    return f"`pulumi config set -s {shlex.quote(stack)} {NAMESPACE}:{key} {value}`, or {by_hand}"


def fix_hint(stack: str, key: str, example: object) -> str:
    return f"fix: {ways_to_set(stack, key, example)}"


class _Checker:
    """Parses raw config strings, collecting one message per bad key."""

    def __init__(
        self,
        raw: Mapping[str, str],
        secret_keys: Set[str],
        stack: str = "phase1",
        given: Set[str] = frozenset(),
        stand_ins: Set[str] = frozenset(),
    ) -> None:
        self.raw = raw
        self.secret_keys = secret_keys
        self.stand_ins = stand_ins
        """Keys whose value is a stand-in for a secret the CLI cannot decrypt (the program has the real one)."""
        self.stack = stack
        self.given = given
        """The keys (without namespace) that came from the command line (`--config`)."""
        self.errors: list[str] = []

    def _value(self, key: str) -> str:
        value = self.raw.get(key)
        return default_string(key) if value is None else value

    def fail(self, key: str, value: str, valid: str, example: object) -> None:
        if key in self.secret_keys:  # the reason may quote the value (a path, a port): not shown
            shows = f"pulumi config get -s {shlex.quote(self.stack)} {NAMESPACE}:{key}"
            valid = f"it is secret, so what is wrong is not shown (`{shows}` shows the value)"
        shown = "[secret]" if key in self.secret_keys else repr(value)
        fix = f"fix: give `--config {NAMESPACE}:{key}={example}`" if key in self.given else fix_hint(self.stack, key, example)
        self.errors.append(f"{NAMESPACE}:{key} = {shown} is not valid: {valid}; {fix}")

    def integer(self, key: str, *, minimum: int, maximum: int | None = None, note: str = "") -> int:
        value = self._value(key)
        default = declared_keys()[key]["default"]
        # What Go's strconv.Atoi takes, as Pulumi checks an integer key: ASCII digits, one sign.
        number = int(value) if re.fullmatch(r"[+-]?[0-9]+", value, re.ASCII) else None
        if number is None or number < minimum or (maximum is not None and number > maximum):
            bound = f"from {minimum} to {maximum}" if maximum is not None else f">= {minimum}"
            self.fail(key, value, f"expected an integer {bound}{note}", default)
            return int(default)
        return number

    def boolean(self, key: str) -> bool:
        value = self._value(key)
        if value not in ("true", "false"):  # Pulumi takes these two words alone for a boolean key
            self.fail(key, value, "expected true or false", "true")
            return bool(declared_keys()[key]["default"])
        return value == "true"

    def text(self, key: str, check: Callable[[str], str | None], *, example: str | None = None) -> str:
        value = self._value(key)
        problem = check(value)
        if problem:
            self.fail(key, value, problem, declared_keys()[key]["default"] if example is None else example)
        return value

    def done(self) -> None:
        if self.errors:
            raise ConfigError("invalid configuration:\n  " + "\n  ".join(self.errors))


def _cluster_name_problem(name: str) -> str | None:
    if not _DNS_LABEL.fullmatch(name) or len(name) > _CLUSTER_NAME_MAX:
        return (
            f"expected a DNS-1123 label (lowercase letters, digits and '-', starting and ending "
            f"with a letter or digit) of at most {_CLUSTER_NAME_MAX} characters"
        )
    return None


def _domain_problem(domain: str) -> str | None:
    labels = domain.split(".")
    if len(domain) > 253 or len(labels) < 2 or not all(_DNS_LABEL.fullmatch(label) and len(label) <= 63 for label in labels):
        return "expected a lowercase DNS name of at least two labels, such as local.example.net"
    if len(f"*.{domain}") > 64:
        return "expected at most 62 characters: the platform's certificate is for *.<domain>, and a certificate's name holds 64 (RFC 5280)"
    if labels[-1].isdigit():
        # No top-level domain is all digits (RFC 3696, section 2): this is an IP address, which no wildcard certificate covers.
        return "expected a DNS name, not an IP address (the platform's names are <service>.<domain>), such as local.example.net"
    from components.image_cache import MIRRORED_REGISTRIES

    if f"registry.{domain}" in MIRRORED_REGISTRIES:
        # Both would own containerd's hosts.toml folder of that name (components/node_registry.py, image_cache.py).
        return (
            f"registry.{domain} is a public registry the platform pulls from, not a name for GitLab's: "
            "use a domain of your own, such as local.example.net"
        )
    return None


def absolute_data_dir(value: str, project_dir: Path) -> Path:
    """`dataDir` made absolute: relative paths are relative to the project, not to the caller's cwd.
    A `~` or `~user` that `home_problem` refuses is a ConfigError naming the value and the fix.
    """
    if problem := home_problem(value):
        fix = fix_hint("phase1", "dataDir", default_string("dataDir"))
        raise ConfigError(f"{NAMESPACE}:dataDir = {value!r} is not valid: {problem}; {fix}")
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
            return f"there is no user {user!r} on this machine, so ~{user} names no folder; {_OWN_HOME_OR_ABSOLUTE}"
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


def data_dir_problem(path: Path, project_dir: Path, what: str = "the data folder") -> str | None:
    """Why `path` (absolute) cannot hold the platform data (or, as `what` says, another folder a
    wipe removes whole: the image cache), or None.

    The data folder is wiped on a `preserveData=false` destroy, so it must never be a folder
    whose removal would take something else with it, nor one whose path a shell could misread.
    """
    if unsafe_characters(str(path)):
        return _characters_problem(str(path), what)
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
    return None


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
        return f"{IMAGE_CACHE} must not hold the data folder ({data_dir}): `blueprint destroy --wipe-cache` would remove it"
    return None


def image_cache_dir(value: str) -> Path:
    """The image cache folder `imageCacheDir = value` names (checked by `image_cache_dir_problem`)."""
    return Path(value).expanduser().resolve() if value else default_image_cache_dir()


CHECKOUT_ID_FILE = PROJECT_DIR / ".pulumi-state" / "blueprint-checkout-id"
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


def checkout_id(path: Path = CHECKOUT_ID_FILE) -> str:
    """The checkout's id, made on first use: written whole under a temporary name, then linked
    into place, so two programs starting at once end up with the same one.
    """
    if (found := read_checkout_id(path)) is not None:
        return found
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, draft = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            with os.fdopen(descriptor, "w") as handle:
                handle.write(secrets.token_hex(8) + "\n")
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
    identity = runtime.current().checkout_id or checkout_id(CHECKOUT_ID_FILE)
    return f"{pulumi.get_project()}/{stack or pulumi.get_stack()}@{identity}"


def _phase1(check: _Checker, project_dir: Path) -> Phase1Config:
    """Phase1's config read through `check`, which collects what is wrong."""
    cluster_name = check.text("clusterName", _cluster_name_problem)
    replaces = " (a new count replaces a running kind cluster: `uv run blueprint up` does that, keeping the data)"
    gitlab_nodes = check.integer("gitlabNodes", minimum=1, maximum=MAX_GITLAB_NODES, note=replaces)
    runner_nodes = check.integer("runnerNodes", minimum=1, maximum=MAX_RUNNER_NODES, note=replaces)
    preserve_data = check.boolean("preserveData")
    headlamp = check.boolean("headlamp")
    headlamp_admin = check.boolean("headlampAdmin")
    # Checks across keys skip a secret one: a stand-in is all there is of it outside the program.
    if headlamp_admin and not headlamp and not {"headlamp", "headlampAdmin"} & check.stand_ins:
        check.fail("headlampAdmin", "true", "it binds Headlamp's account, and blueprint:headlamp is false: there is no Headlamp", "false")
    domain = check.text("domain", _domain_problem)

    example = UNSAFE_PROJECT_EXAMPLE if unsafe_characters(str(project_dir)) else None
    data_dir_value = check.text("dataDir", lambda value: data_dir_value_problem(value, project_dir), example=example)
    # A refused value stops at `check.done()`; until then, stand in the default, which resolves.
    refused = unsafe_characters(data_dir_value) or home_problem(data_dir_value)
    data_dir = absolute_data_dir(default_string("dataDir") if refused else data_dir_value, project_dir)

    image_cache = check.boolean("imageCache")
    # Cached: `check.text` asks it of the value, and the cache folder below asks again.
    cache_problem = functools.cache(functools.partial(image_cache_dir_problem, project_dir=project_dir, data_dir=data_dir))
    cache_value = check.text("imageCacheDir", cache_problem, example="~/.cache/blueprint/images")
    cache_dir = image_cache_dir(cache_value) if image_cache and not cache_problem(cache_value) else None
    default = default_image_cache_dir()
    if image_cache and not cache_value and (default_problem := cache_problem(str(default))):
        # The default is this user's cache folder, so the same checks hold for it (a dataDir inside it, a ':' in HOME).
        why = f"its default here, {default}, cannot be used: {default_problem}"
        check.fail("imageCacheDir", "", why, "~/blueprint-images")
        cache_dir = None
    from components.image_cache import CONTAINER_NAME_MAX, MIRRORED_REGISTRIES, mirror_container

    longest = max((mirror_container(cluster_name, registry) for registry in MIRRORED_REGISTRIES), key=len)
    if image_cache and len(longest) > CONTAINER_NAME_MAX and "clusterName" not in check.stand_ins:
        most = len(cluster_name) - (len(longest) - CONTAINER_NAME_MAX)
        check.fail(
            "clusterName",
            cluster_name,
            f"with blueprint:imageCache on, each mirror's container is named after the cluster ({longest}), and nodes look it "
            f"up by that name, one DNS label of at most {CONTAINER_NAME_MAX} characters: at most {most} characters here, "
            "or set blueprint:imageCache to false",
            cluster_name[:most].rstrip("-"),
        )

    port_keys = ("httpPort", "httpsPort", "sshPort", "openbaoPort", "apiServerPort")
    ports = {key: check.integer(key, minimum=1, maximum=65535) for key in port_keys}
    unchecked = set(check.stand_ins)
    if ports["httpsPort"] != HTTPS_PORT and "httpsPort" not in unchecked:
        check.fail("httpsPort", str(ports["httpsPort"]), HTTPS_PORT_ONLY, str(HTTPS_PORT))
        unchecked.add("httpsPort")  # one message for it: the fix is 443 whatever else holds its port
    owners: dict[int, str] = {}
    for key, port in ports.items():
        if key in unchecked:
            continue
        if port in owners:
            # Said of the secret one when one is: its value stays hidden, and so does the other's, which equals it.
            culprit, other = (owners[port], key) if owners[port] in check.secret_keys else (key, owners[port])
            too = f"{NAMESPACE}:{other} is port {port} too: give each its own port (this one, or that one)"
            check.fail(culprit, str(port), too, "<a free port>")
        owners.setdefault(port, key)
    return Phase1Config(
        cluster_name=cluster_name,
        gitlab_nodes=gitlab_nodes,
        runner_nodes=runner_nodes,
        data_dir=data_dir,
        preserve_data=preserve_data,
        domain=domain,
        ports=HostPorts(
            http=ports["httpPort"],
            https=ports["httpsPort"],
            ssh=ports["sshPort"],
            openbao=ports["openbaoPort"],
            api_server=ports["apiServerPort"],
        ),
        headlamp=headlamp,
        headlamp_admin=headlamp_admin,
        image_cache_dir=cache_dir,
    )


@dataclass(frozen=True, kw_only=True)
class Phase3Config:
    """What phase3 takes from its own config."""

    pipeline_timeout: int


def _phase3(check: _Checker) -> Phase3Config:
    return Phase3Config(pipeline_timeout=check.integer("pipelineTimeout", minimum=60, maximum=7200))


def parse_phase1(
    raw: Mapping[str, str],
    project_dir: Path = PROJECT_DIR,
    secret_keys: Set[str] = frozenset(),
    stack: str = "phase1",
    stand_ins: Set[str] = frozenset(),
) -> Phase1Config:
    """Phase1's config from raw values (key without namespace -> string), or a ConfigError.
    Values of `secret_keys` never appear in an error message; the fixes name `stack`.
    """
    check = _Checker(raw, secret_keys, stack, stand_ins=stand_ins)
    config = _phase1(check, project_dir)
    check.done()
    return config


def parse_phase3(raw: Mapping[str, str], secret_keys: Set[str] = frozenset(), stack: str = "phase3") -> Phase3Config:
    """Phase3's config from raw values, or a ConfigError."""
    check = _Checker(raw, secret_keys, stack)
    config = _phase3(check)
    check.done()
    return config


PHASE_VALUES: dict[str, Callable[[_Checker, Path], object]] = {
    "phase1": _phase1,
    "phase3": lambda check, _project_dir: _phase3(check),
}
"""How each phase that reads values of its own checks them."""


def stack_reads(stack: str, full_key: str) -> bool:
    """Whether a phase that `stack` runs reads the config key `full_key`."""
    from stacks import STACK_PHASES

    namespace, _, key = full_key.partition(":")
    return namespace == NAMESPACE and any(key in PHASE_KEYS[phase] for phase in STACK_PHASES[stack])


def stacks_reading(key: str) -> list[str]:
    """The phase stacks that read `key` (without namespace); `dev` reads every key."""
    from stacks import STACK_PHASES

    return [stack for stack in STACK_PHASES if stack != "dev" and stack_reads(stack, f"{NAMESPACE}:{key}")]


def key_problems(
    stack: str, values: Mapping[str, str], *, set_keys: Set[str], secret_keys: Set[str], given: Set[str] = frozenset()
) -> list[str]:
    """What is wrong with the keys (not the values) that `stack` is given: one of ours in a misspelt
    namespace or another's (Pulumi passes it on and nothing reads it), a key Pulumi.yaml does not
    declare (naming the closest one), and a key set on a stack that does not read it (it would be
    silently ignored there), naming the stack that does. The keys in `given` came from the command
    line (`--config`), not the stack file.
    """
    problems = []
    for name in sorted(values):
        namespace, _, key = name.partition(":")
        shown = "[secret]" if name in secret_keys else repr(values[name])
        where = f"--config {name}" if name in given else f"Pulumi.{stack}.yaml"
        if namespace != NAMESPACE:
            close = difflib.get_close_matches(namespace, [NAMESPACE], n=1, cutoff=0.7)
            if key in declared_keys() or close:
                # The key itself may be misspelt too: name the one it most likely is.
                key = key if key in declared_keys() else next(iter(difflib.get_close_matches(key, declared_keys(), n=1)), "")
                if not key:
                    problems.append(f"{name} = {shown} (in {where}) is not a blueprint setting, nor close to one; Pulumi.yaml lists them")
                    continue
                readers = [] if stack_reads(stack, f"{NAMESPACE}:{key}") else stacks_reading(key)
                target = f"Pulumi.{readers[0]}.yaml, the stack that reads it" if readers else f"Pulumi.{stack}.yaml"
                target = f"--config {NAMESPACE}:{key}=..." if name in given else f"{NAMESPACE}:{key} in {target}"
                problems.append(
                    f"{name} = {shown} (in {where}) is not read by blueprint, whose settings are {NAMESPACE}:<key>; write it as {target}"
                )
        elif key not in declared_keys():
            close_keys = difflib.get_close_matches(key, declared_keys(), n=1)
            hint = f"did you mean {NAMESPACE}:{close_keys[0]}?" if close_keys else "Pulumi.yaml declares every valid key"
            problems.append(f"{name} = {shown} (in {where}) is not a blueprint setting; {hint}")
        elif name in set_keys and not stack_reads(stack, name):
            readers = stacks_reading(key)
            value = "<value>" if name in secret_keys else shlex.quote(values[name])
            target = readers[0]
            problems.append(
                f"{name} = {shown} is set on stack {stack}, which does not read it: {' and '.join(readers)} reads it "
                f"(and dev, which runs every phase). Move it: `pulumi config rm -s {shlex.quote(stack)} {name}` and "
                f"`pulumi config set -s {target} {name} {value}`, or move its line from {where} to Pulumi.{target}.yaml"
            )
            # Said now, not after the move: the value as the stack that reads it would check it.
            moved = value_problems(target, {name: values[name]}, secret_keys=set(secret_keys) & {name})
            problems += [f"once moved to {target}: {problem}" for problem in moved if problem.startswith(f"{name} ")]
    return problems


def value_problems(
    stack: str,
    values: Mapping[str, str],
    *,
    secret_keys: Set[str],
    project_dir: Path = PROJECT_DIR,
    given: Set[str] = frozenset(),
    stand_ins: Set[str] = frozenset(),
) -> list[str]:
    """What is wrong with the values of the keys that the phases of `stack` read (`given`: the
    full keys that came from `--config`, whose fix is another `--config`).
    """
    from stacks import STACK_PHASES

    prefix = f"{NAMESPACE}:"
    raw = {key[len(prefix) :]: value for key, value in values.items() if key.startswith(prefix)}
    short = {key.removeprefix(prefix) for key in secret_keys}
    check = _Checker(raw, short, stack, {key.removeprefix(prefix) for key in given}, {key.removeprefix(prefix) for key in stand_ins})
    for phase in STACK_PHASES[stack]:
        if phase in PHASE_VALUES:
            PHASE_VALUES[phase](check, project_dir)
    return check.errors


def passed_config() -> dict[str, str]:
    """Every config value Pulumi passed to the program, full keys (Pulumi.yaml defaults included).

    The language host passes config in the PULUMI_CONFIG environment variable, mocks and the
    Automation API through `set_all_config`: read both, as `pulumi.Config` does.
    """
    from pulumi.runtime.config import CONFIG, get_config_env

    return {key: str(value) for key, value in {**get_config_env(), **CONFIG.get()}.items()}


def raw_config() -> dict[str, str]:
    """Every `blueprint:` value Pulumi passed to the program, without the namespace."""
    prefix = f"{NAMESPACE}:"
    return {key[len(prefix) :]: value for key, value in passed_config().items() if key.startswith(prefix)}


def passed_secret_keys() -> frozenset[str]:
    """The full keys Pulumi passed that were set with `--secret`."""
    from pulumi.runtime.config import is_config_secret

    return frozenset(key for key in passed_config() if is_config_secret(key))


def secret_keys() -> frozenset[str]:
    """The `blueprint:` keys set with `--secret` (without the namespace)."""
    prefix = f"{NAMESPACE}:"
    return frozenset(key[len(prefix) :] for key in passed_secret_keys() if key.startswith(prefix))


def stand_in_keys() -> frozenset[str]:
    """The `blueprint:` keys (without the namespace) whose value the running program has only as a
    stand-in, as its runtime says: in the offline plan, every secret, which it cannot decrypt; for real, none.
    """
    prefix = f"{NAMESPACE}:"
    return frozenset(key[len(prefix) :] for key in runtime.current().stand_in_keys if key.startswith(prefix))


def load_phase1() -> Phase1Config:
    """Phase1's config from the running stack (checked already, with everything else the stack reads)."""
    return parse_phase1(raw_config(), secret_keys=secret_keys(), stack=pulumi.get_stack(), stand_ins=stand_in_keys())


def load_phase3() -> Phase3Config:
    """Phase3's config from the running stack (checked already, with everything else the stack reads)."""
    return parse_phase3(raw_config(), secret_keys=secret_keys(), stack=pulumi.get_stack())
