"""Typed, validated configuration of each phase.

Every key is declared once, with its type, default and description, in `Pulumi.yaml`; this module
only reads and checks. Reading is split in two so the checks need no Pulumi runtime:
`parse_phase1(raw, project_dir)` is a pure function of the raw strings, and `load_phase1()` feeds
it from `pulumi.Config`. All bad values are reported at once, in one `ConfigError`, before the
program registers a single resource.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pulumi
import yaml

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


@cache
def declared_keys() -> dict[str, dict[str, Any]]:
    """The `config:` block of Pulumi.yaml: key (without namespace) -> its declaration."""
    project = yaml.safe_load((PROJECT_DIR / "Pulumi.yaml").read_text())
    return dict(project["config"])


def default_string(key: str) -> str:
    """The declared default of `key` as Pulumi passes config to a program: a string."""
    default = declared_keys()[key]["default"]
    return str(default).lower() if isinstance(default, bool) else str(default)


def _fix(key: str, example: object) -> str:
    return f"fix: `pulumi config set {NAMESPACE}:{key} {example}`"


class _Checker:
    """Parses raw config strings, collecting one message per bad key."""

    def __init__(self, raw: Mapping[str, str], secret_keys: Set[str]) -> None:
        self.raw = raw
        self.secret_keys = secret_keys
        self.errors: list[str] = []

    def _value(self, key: str) -> str:
        value = self.raw.get(key)
        return default_string(key) if value is None else value

    def fail(self, key: str, value: str, valid: str, example: object) -> None:
        shown = "[secret]" if key in self.secret_keys else repr(value)
        self.errors.append(f"{NAMESPACE}:{key} = {shown} is not valid: {valid}; {_fix(key, example)}")

    def integer(self, key: str, *, minimum: int, maximum: int | None = None) -> int:
        value = self._value(key)
        default = declared_keys()[key]["default"]
        try:
            number = int(value)
        except ValueError:
            number = None
        if number is None or number < minimum or (maximum is not None and number > maximum):
            bound = f"from {minimum} to {maximum}" if maximum is not None else f">= {minimum}"
            self.fail(key, value, f"expected an integer {bound}", default)
            return int(default)
        return number

    def boolean(self, key: str) -> bool:
        value = self._value(key)
        if value.lower() not in ("true", "false"):
            self.fail(key, value, "expected true or false", "true")
            return bool(declared_keys()[key]["default"])
        return value.lower() == "true"

    def text(self, key: str, check: Callable[[str], str | None]) -> str:
        value = self._value(key)
        problem = check(value)
        if problem:
            self.fail(key, value, problem, declared_keys()[key]["default"])
        return value

    def done(self) -> None:
        if self.errors:
            raise ConfigError("invalid configuration:\n  " + "\n  ".join(self.errors))


def _cluster_name_problem(name: str) -> str | None:
    if not _DNS_LABEL.match(name) or len(name) > _CLUSTER_NAME_MAX:
        return (
            f"expected a DNS-1123 label (lowercase letters, digits and '-', starting and ending "
            f"with a letter or digit) of at most {_CLUSTER_NAME_MAX} characters"
        )
    return None


def _domain_problem(domain: str) -> str | None:
    labels = domain.split(".")
    if len(domain) > 253 or len(labels) < 2 or not all(_DNS_LABEL.match(label) for label in labels):
        return "expected a lowercase DNS name of at least two labels, such as local.example.net"
    return None


def absolute_data_dir(value: str, project_dir: Path) -> Path:
    """`dataDir` made absolute: relative paths are relative to the project, not to the caller's cwd."""
    return (project_dir / Path(value).expanduser()).resolve()


def data_dir_problem(path: Path, project_dir: Path) -> str | None:
    """Why `path` (absolute) cannot hold the platform data, or None.

    The data folder is wiped on a `preserveData=false` destroy, so it must never be a folder
    whose removal would take something else with it.
    """
    if ":" in str(path) or "," in str(path):
        return "the data folder's path must not contain ':' or ',' (Docker's mount syntax splits on them)"
    if ".git" in path.parts:
        return "the data folder must not be inside a .git folder"
    if path == project_dir or path in project_dir.parents:
        return "the data folder must not be the project folder or one of its parents"
    if path == Path.home() or path in Path.home().parents:
        return "the data folder must not be the home folder or one of its parents"
    return None


def parse_phase1(raw: Mapping[str, str], project_dir: Path = PROJECT_DIR, secret_keys: Set[str] = frozenset()) -> Phase1Config:
    """Phase1's config from raw values (key without namespace -> string), or a ConfigError.
    Values of `secret_keys` never appear in an error message.
    """
    check = _Checker(raw, secret_keys)
    check.errors.extend(unknown_key_errors(raw))
    cluster_name = check.text("clusterName", _cluster_name_problem)
    gitlab_nodes = check.integer("gitlabNodes", minimum=1)
    runner_nodes = check.integer("runnerNodes", minimum=1)
    preserve_data = check.boolean("preserveData")
    headlamp = check.boolean("headlamp")
    domain = check.text("domain", _domain_problem)

    data_dir = absolute_data_dir(
        check.text("dataDir", lambda value: data_dir_problem(absolute_data_dir(value, project_dir), project_dir)),
        project_dir,
    )

    port_keys = ("httpPort", "httpsPort", "sshPort", "openbaoPort", "apiServerPort")
    ports = {key: check.integer(key, minimum=1, maximum=65535) for key in port_keys}
    owners: dict[int, str] = {}
    for key, port in ports.items():
        if port in owners:
            check.fail(key, str(port), f"{NAMESPACE}:{owners[port]} already uses port {port}", "<a free port>")
        owners.setdefault(port, key)
    check.done()
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
    )


@dataclass(frozen=True, kw_only=True)
class Phase2Config:
    """What phase2 takes from its own config (the rest comes from phase1's outputs)."""

    openbao_key_shares: int
    openbao_key_threshold: int


def parse_phase2(raw: Mapping[str, str], secret_keys: Set[str] = frozenset()) -> Phase2Config:
    """Phase2's config from raw values, or a ConfigError."""
    check = _Checker(raw, secret_keys)
    check.errors.extend(unknown_key_errors(raw))
    shares = check.integer("openbaoKeyShares", minimum=1, maximum=10)
    threshold = check.integer("openbaoKeyThreshold", minimum=1, maximum=10)
    if threshold > shares:
        check.fail("openbaoKeyThreshold", str(threshold), f"at most blueprint:openbaoKeyShares ({shares})", shares)
    check.done()
    return Phase2Config(openbao_key_shares=shares, openbao_key_threshold=threshold)


@dataclass(frozen=True, kw_only=True)
class Phase3Config:
    """What phase3 takes from its own config."""

    pipeline_timeout: int


def parse_phase3(raw: Mapping[str, str], secret_keys: Set[str] = frozenset()) -> Phase3Config:
    """Phase3's config from raw values, or a ConfigError."""
    check = _Checker(raw, secret_keys)
    check.errors.extend(unknown_key_errors(raw))
    timeout = check.integer("pipelineTimeout", minimum=60, maximum=7200)
    check.done()
    return Phase3Config(pipeline_timeout=timeout)


def unknown_key_errors(raw: Mapping[str, str]) -> list[str]:
    """Keys Pulumi.yaml does not declare: a typo would otherwise be silently ignored."""
    errors = []
    for key in sorted(set(raw) - set(declared_keys())):
        close = difflib.get_close_matches(key, declared_keys(), n=1)
        hint = f"did you mean {NAMESPACE}:{close[0]}?" if close else "Pulumi.yaml declares every valid key"
        errors.append(f"{NAMESPACE}:{key} is not a blueprint setting; {hint}")
    return errors


def raw_config() -> dict[str, str]:
    """Every `blueprint:` value Pulumi passed to the program (Pulumi.yaml defaults included).

    The language host passes config in the PULUMI_CONFIG environment variable, mocks and the
    Automation API through `set_all_config`: read both, as `pulumi.Config` does.
    """
    from pulumi.runtime.config import CONFIG, get_config_env

    prefix = f"{NAMESPACE}:"
    passed = {**get_config_env(), **CONFIG.get()}
    return {key[len(prefix) :]: str(value) for key, value in passed.items() if key.startswith(prefix)}


def secret_keys() -> frozenset[str]:
    """The `blueprint:` keys set with `--secret` (without the namespace)."""
    from pulumi.runtime.config import is_config_secret

    return frozenset(key for key in declared_keys() if is_config_secret(f"{NAMESPACE}:{key}"))


def load_phase1() -> Phase1Config:
    """Phase1's config from the running stack."""
    return parse_phase1(raw_config(), secret_keys=secret_keys())


def load_phase2() -> Phase2Config:
    """Phase2's config from the running stack."""
    return parse_phase2(raw_config(), secret_keys=secret_keys())


def load_phase3() -> Phase3Config:
    """Phase3's config from the running stack."""
    return parse_phase3(raw_config(), secret_keys=secret_keys())
