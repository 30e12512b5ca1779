"""What the project declares and what each stack sets: the schema of blueprint's config.

Every key is declared once, with its type, default and description, in `Pulumi.yaml`; this module
reads it, the stack files (`Pulumi.<stack>.yaml`) as Pulumi reads them, and what Pulumi passed the
running program, and says which stacks read which key. The checks of the values are
`stacks.config.phases`; the folders the values name, `stacks.config.paths`.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import shlex
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from shown import shown
from stacks import STACK_PHASES, runtime
from stacks.config import NAMESPACE, PROJECT_DIR, ConfigError

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
            "cluster",
            "kubeContext",
            "storageClass",
            "exposure",
            "gitlabNodeSelector",
            "jobNodeSelector",
            "containerEngine",
            "gatewayServiceAnnotations",
            "loadBalancerSourceRanges",
            "loadBalancerClass",
            "tlsCertificate",
        }
    ),  # fmt: skip
    "phase2": frozenset(),
    "phase3": frozenset({"pipelineTimeout"}),
}
"""The keys each phase reads from its stack's config. phase2 has none of its own: it builds from
phase1's outputs (preserveData and the domain included), so a key is set where it is read."""


def read_yaml(path: Path, *, missing: str | None = None) -> Any:
    """The YAML document in `path`, read as Pulumi reads it (`yaml_files`), or a ConfigError naming
    the file and the fix. `missing`: the fix when there is no file; without it, no file reads as empty.
    """
    from yaml_files import YamlFileError, load_file

    try:
        return load_file(path, missing=missing)
    except YamlFileError as error:
        raise ConfigError(str(error)) from None


PROJECT_FILE = PROJECT_DIR / "Pulumi.yaml"
"""The project file; read when its keys are, so the tests point it at one of their own."""


def declared_keys() -> dict[str, dict[str, Any]]:
    """The `config:` block of Pulumi.yaml: key (without namespace) -> its declaration."""
    return _project(PROJECT_FILE)[1]


def project_name() -> str:
    """The project's name, as Pulumi.yaml gives it."""
    return _project(PROJECT_FILE)[0]


@cache
def _project(path: Path) -> tuple[str, dict[str, dict[str, Any]]]:
    """Pulumi.yaml's name and declared keys, or a ConfigError naming what is wrong with it."""
    restore = f"restore it: `git -C {shlex.quote(str(path.parent))} checkout -- {path.name}`"
    document = read_yaml(path, missing=f"blueprint runs from its checkout, which holds it; {restore}")
    name = document.get("name") if isinstance(document, dict) else None
    block = document.get("config") if isinstance(document, dict) else None
    if not isinstance(name, str) or not isinstance(block, dict):
        raise ConfigError(f"{path}: expected a mapping with the project's `name:` and its `config:` declarations; {restore}")
    for key, spec in block.items():
        if not isinstance(spec, dict) or "default" not in spec:
            raise ConfigError(
                f"{path}: the config key {shown(key)} declares no `default:`; blueprint gives every key it reads "
                f"a default there (`git diff {path.name}` shows what changed); {restore}"
            )
    return name, {str(key): spec for key, spec in block.items()}


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


STACK_FILE_KEYS = ("config", "environment", "secretsprovider", "encryptedkey", "encryptionsalt")
"""The top-level keys of a stack file: Pulumi's `ProjectStack` (sdk/go/common/workspace/project.go),
which ignores any other, so a misspelt `confg:` would drop every setting without a word."""


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
        # Searchable by anyone: a destroy's script run as another user sees that no stack file is there.
        Path(empty).chmod(0o755)
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
    document = read_yaml(path)
    if not isinstance(document, dict | None):
        raise ConfigError(f"{path}: expected a mapping whose `config:` holds the stack's settings, such as `config: {{}}`")
    for key in document or {}:
        if key not in STACK_FILE_KEYS:
            close = difflib.get_close_matches(str(key), STACK_FILE_KEYS, n=1)
            hint = f"did you mean {close[0]}?" if close else f"Pulumi reads {', '.join(STACK_FILE_KEYS)}"
            raise ConfigError(f"{path}: {shown(key)} is not a key of a stack file, and Pulumi would ignore it; {hint}")
    block = (document or {}).get("config")
    if not isinstance(block, dict | None):
        raise ConfigError(f"{path}: `config:` must hold one `<namespace>:<key>: <value>` per line, such as blueprint:gitlabNodes: 2")
    found = {}
    spelt: dict[str, str] = {}
    for key, value in (block or {}).items():
        name = full_key(str(key))
        if name.count(":") > 1:
            raise ConfigError(
                f"{path}: {shown(key)} is not a config key (Pulumi takes `<namespace>:<name>`), such as blueprint:gitlabNodes"
            )
        if name in spelt:
            # Pulumi keeps one of the two, whichever its map gives last.
            raise ConfigError(f"{path}: {shown(spelt[name])} and {shown(key)} are the same key, {name}; keep one of them")
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


ENV_STEP = 'eval "$(uv run blueprint env)"'
"""What a shell runs before a plain `pulumi` command: blueprint's passphrase (a `pulumi config set`
without it makes a stack blueprint cannot decrypt) and the tools `doctor --fix` installed first on PATH."""


def ways_to_set(stack: str, key: str, example: object) -> str:
    """How to set `key` on `stack`: first by hand in the stack's file, which needs nothing; then with
    the Pulumi CLI, after `ENV_STEP`. An `example` such as `<free port>` is a placeholder for the
    user to fill in, shown as it is.
    """
    text = str(example)
    value = text if text.startswith("<") and text.endswith(">") else shlex.quote(text)
    return (
        f"in Pulumi.{stack}.yaml, replace `config: {{}}` with `config:` and the line `  {NAMESPACE}:{key}: {value}` (under a "
        f"`config:` that holds lines already, add that line); or with Pulumi: `{ENV_STEP}`, then "
        f"`pulumi config set -s {shlex.quote(stack)} {NAMESPACE}:{key} {value}`"
    )


def fix_hint(stack: str, key: str, example: object) -> str:
    return f"fix: {ways_to_set(stack, key, example)}"


def stack_reads(stack: str, full_key: str) -> bool:
    """Whether a phase that `stack` runs reads the config key `full_key`."""
    namespace, _, key = full_key.partition(":")
    return namespace == NAMESPACE and any(key in PHASE_KEYS[phase] for phase in STACK_PHASES[stack])


def stacks_reading(key: str) -> list[str]:
    """The phase stacks that read `key` (without namespace); `dev` reads every key."""
    return [stack for stack in STACK_PHASES if stack != "dev" and stack_reads(stack, f"{NAMESPACE}:{key}")]


def passed_config() -> dict[str, str]:
    """Every config value Pulumi passed to the program, full keys (Pulumi.yaml defaults included).

    The language host passes config in the PULUMI_CONFIG environment variable, mocks and the
    Automation API through `set_all_config`: read both, as `pulumi.Config` does.
    """
    from pulumi.runtime.config import CONFIG, get_config_env

    return {key: str(value) for key, value in {**get_config_env(), **CONFIG.get()}.items()}


def namespaced(keys: Iterable[str]) -> dict[str, str]:
    """Each `blueprint:` key among the full `keys`, without the namespace, to its full key."""
    prefix = f"{NAMESPACE}:"
    return {key.removeprefix(prefix): key for key in keys if key.startswith(prefix)}


def raw_config() -> dict[str, str]:
    """Every `blueprint:` value Pulumi passed to the program, without the namespace."""
    passed = passed_config()
    return {key: passed[full] for key, full in namespaced(passed).items()}


def passed_secret_keys() -> frozenset[str]:
    """The full keys Pulumi passed that were set with `--secret`."""
    from pulumi.runtime.config import is_config_secret

    return frozenset(key for key in passed_config() if is_config_secret(key))


def secret_keys() -> frozenset[str]:
    """The `blueprint:` keys set with `--secret` (without the namespace)."""
    return frozenset(namespaced(passed_secret_keys()))


def stand_in_keys() -> frozenset[str]:
    """The `blueprint:` keys (without the namespace) whose value the running program has only as a
    stand-in, as its runtime says: in the offline plan, every secret, which it cannot decrypt; for real, none.
    """
    return frozenset(namespaced(runtime.current().stand_in_keys))
