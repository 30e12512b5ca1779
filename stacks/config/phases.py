"""Typed, validated configuration of each phase.

Reading is split in two so the checks need no Pulumi runtime: `parse_phase1(raw, project_dir)` is a
pure function of the raw strings, and `load_phase1()` feeds it what Pulumi passed the program. All
bad values are reported at once, in one `ConfigError`, before the program registers a single
resource. `key_problems` and `value_problems` are what `stacks/validation.py` says of a whole stack.
"""

from __future__ import annotations

import difflib
import functools
import re
import shlex
from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass, field
from pathlib import Path

import publicsuffixlist
import pulumi
from publicsuffixlist import PublicSuffixList

from shown import SHOWN_AT_MOST, shown
from stacks import STACK_PHASES
from stacks.config import NAMESPACE, PROJECT_DIR, ConfigError
from stacks.config.cluster import ClusterConfig, across, cluster_config
from stacks.config.names import is_dns_label
from stacks.config.paths import (
    UNSAFE_PROJECT_EXAMPLE,
    absolute_data_dir,
    data_dir_value_problem,
    default_image_cache_dir,
    home_problem,
    image_cache_dir,
    image_cache_dir_problem,
    unsafe_characters,
)
from stacks.config.schema import (
    ENV_STEP,
    declared_keys,
    default_string,
    fix_hint,
    raw_config,
    secret_keys,
    stack_reads,
    stacks_reading,
    stand_in_keys,
)

# kind names nodes "<cluster>-control-plane", "<cluster>-worker12": keep them valid 63-char labels.
_CLUSTER_NAME_MAX = 63 - len("-control-plane")


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
    """The OpenBao API, which blueprint calls from the host (OpenBaoInit, the credentials' writes, `blueprint secrets`)."""
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
    or None when `imageCache` is false, and on an existing cluster."""
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    """Which cluster: kind's, or an existing one and how the platform sits on it (`stacks/config/cluster.py`)."""


MAX_GITLAB_NODES = 10
"""Beyond this, GitLab nodes stand empty: ten pods are pinned to them (GitLab's eight, each of one
replica, the gateway's controller and its proxy); and each node costs memory of its own, which
`blueprint doctor` counts (cli/doctor/needs.py, `resources_needed`)."""
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

    def fail(self, key: str, value: str, valid: str, example: object, *, with_key: str = "") -> None:
        """Say `key`'s `value` is not valid; the fix is said where `key` (or `with_key`, the key it goes with) came from."""
        if key in self.secret_keys:  # the reason may quote the value (a path, a port): not shown
            shows = f"pulumi config get -s {shlex.quote(self.stack)} {NAMESPACE}:{key}"
            valid = f"it is secret, so what is wrong is not shown (`{shows}` shows the value)"
        value_shown = "[secret]" if key in self.secret_keys else shown(value)
        fix = f"fix: give `--config {NAMESPACE}:{key}={example}`" if {key, with_key} & self.given else fix_hint(self.stack, key, example)
        self.errors.append(f"{NAMESPACE}:{key} = {value_shown} is not valid: {valid}; {fix}")

    def integer(self, key: str, *, minimum: int, maximum: int | None = None, note: str = "") -> int:
        value = self._value(key)
        default = declared_keys()[key]["default"]
        # What Go's strconv.Atoi takes, as Pulumi checks an integer key: ASCII digits, one sign, 64 bits.
        number = int(value) if re.fullmatch(r"[+-]?[0-9]{1,19}", value, re.ASCII) else None
        number = number if number is not None and -(2**63) <= number < 2**63 else None
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
    if not is_dns_label(name, _CLUSTER_NAME_MAX):
        return (
            f"expected a DNS-1123 label (lowercase letters, digits and '-', starting and ending "
            f"with a letter or digit) of at most {_CLUSTER_NAME_MAX} characters"
        )
    return None


@functools.cache
def _public_suffixes() -> PublicSuffixList:
    """The list publicsuffixlist bundles (read from its own file, no network; pinned in pyproject.toml),
    its private section included (github.io is there, co.uk in the ICANN one). A top-level name the
    list lacks (test, internal, localhost) counts as a public suffix too (its `accept_unknown`), so
    example.test is accepted and `test` alone is refused (it is one label anyway). The list's IDN
    entries are kept as written, not also punycoded (that alone tripled what a plan computes):
    `_is_public_suffix` decodes the domain instead.
    """
    return PublicSuffixList(accept_encoded_idn=False)


def _is_public_suffix(domain: str) -> bool:
    """Whether `domain` is on the list; a punycoded label (xn--55qx5d.cn) is looked up as the list
    writes it (公司.cn).
    """
    return bool(_public_suffixes().is_public(_written(domain)))


def _written(domain: str) -> str:
    """`domain` as the list writes it: a punycoded label decoded (xn--55qx5d.cn is 公司.cn)."""
    try:
        return domain.encode("ascii").decode("idna")
    except UnicodeError:  # not valid punycode: no IDN entry can match it
        return domain


@functools.cache
def _suffixes_below() -> dict[str, str]:
    """Each name that has a public suffix under it (amazonaws.com: s3.amazonaws.com) -> one such
    suffix, from the same bundled file. A CA constrained to amazonaws.com would vouch for every owner
    under s3.amazonaws.com too, so such a name is refused like a suffix itself.
    """
    below: dict[str, str] = {}
    with open(publicsuffixlist.PSLFILE, encoding="utf-8") as listed:
        for line in listed:
            written = line.strip().split(" ")[0]
            rule = written.lstrip("!*.")
            if not rule or rule.startswith("//"):
                continue
            labels = rule.split(".")
            # *.ck makes every name under ck a suffix: ck itself holds them.
            for start in range(0 if written.startswith("*.") else 1, len(labels)):
                below.setdefault(".".join(labels[start:]), rule)
    return below


def _domain_problem(domain: str) -> str | None:
    labels = domain.split(".")
    if len(domain) > 253 or len(labels) < 2 or not all(map(is_dns_label, labels)):
        return "expected a lowercase DNS name of at least two labels, such as local.example.net"
    if len(f"*.{domain}") > 64:
        return "expected at most 62 characters: the platform's certificate is for *.<domain>, and a certificate's name holds 64 (RFC 5280)"
    if _is_public_suffix(domain):
        # The platform CA, which the machine trusts, is name-constrained to <domain>: on a public suffix it
        # could vouch for every site of every owner under it (co.uk, github.io).
        return (
            f"{domain} is a public suffix (on the Public Suffix List: names under it belong to different owners), and the "
            "platform CA your machine trusts would vouch for all of them; use a domain of your own"
        )
    if suffix := _suffixes_below().get(_written(domain)):
        return (
            f"{domain} holds public suffixes ({suffix} is on the Public Suffix List: names under it belong to different "
            "owners), and the platform CA your machine trusts would vouch for all of them; use a domain of your own"
        )
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


def _phase1(check: _Checker, project_dir: Path) -> Phase1Config:
    """Phase1's config read through `check`, which collects what is wrong."""
    cluster = cluster_config(check)
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
    data_dir = _data_dir(check, project_dir)
    if cluster.existing:
        check.boolean("imageCache")  # then ignored: an existing cluster has no image cache (cluster.py, KIND_ONLY)
    cache_dir = None if cluster.existing else _image_cache_dir(check, cluster_name, project_dir, data_dir)
    ports = _ports(check)
    across(check)
    return Phase1Config(
        cluster_name=cluster_name,
        gitlab_nodes=gitlab_nodes,
        runner_nodes=runner_nodes,
        data_dir=data_dir,
        preserve_data=preserve_data,
        domain=domain,
        ports=ports,
        headlamp=headlamp,
        headlamp_admin=headlamp_admin,
        image_cache_dir=cache_dir,
        cluster=cluster,
    )


def _data_dir(check: _Checker, project_dir: Path) -> Path:
    """The data folder `dataDir` names, made absolute; the default's while the value is refused."""
    example = UNSAFE_PROJECT_EXAMPLE if unsafe_characters(str(project_dir)) else None
    data_dir_value = check.text("dataDir", lambda value: data_dir_value_problem(value, project_dir), example=example)
    # A refused value stops at `check.done()`; until then, stand in the default, which resolves.
    refused = unsafe_characters(data_dir_value) or home_problem(data_dir_value)
    return absolute_data_dir(default_string("dataDir") if refused else data_dir_value, project_dir)


def _image_cache_dir(check: _Checker, cluster_name: str, project_dir: Path, data_dir: Path) -> Path | None:
    """The image cache folder (`imageCache`, `imageCacheDir`), or None when the cache is off or refused;
    and whether the cluster's name leaves room for the mirrors' names.
    """
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
    # Said of a name otherwise valid alone: a longer one is refused already, with its own limit.
    if (
        image_cache
        and len(longest) > CONTAINER_NAME_MAX
        and "clusterName" not in check.stand_ins
        and not _cluster_name_problem(cluster_name)
    ):
        most = len(cluster_name) - (len(longest) - CONTAINER_NAME_MAX)
        check.fail(
            "clusterName",
            cluster_name,
            f"with blueprint:imageCache on, each mirror's container is named after the cluster ({longest}), and nodes look it "
            f"up by that name, one DNS label of at most {CONTAINER_NAME_MAX} characters: at most {most} characters here, "
            "or set blueprint:imageCache to false",
            cluster_name[:most].rstrip("-"),
        )
    return cache_dir


def _ports(check: _Checker) -> HostPorts:
    """The host ports, each in range, HTTPS on 443, and no two the same."""
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
    return HostPorts(
        http=ports["httpPort"],
        https=ports["httpsPort"],
        ssh=ports["sshPort"],
        openbao=ports["openbaoPort"],
        api_server=ports["apiServerPort"],
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
        quoted = "[secret]" if name in secret_keys else shown(values[name])
        label = name if len(name) <= SHOWN_AT_MOST else shown(name)  # a key of the file's whole length
        where = f"--config {label}" if name in given else f"Pulumi.{stack}.yaml"
        if namespace != NAMESPACE:
            close = difflib.get_close_matches(namespace, [NAMESPACE], n=1, cutoff=0.7)
            if key in declared_keys() or close:
                # The key itself may be misspelt too: name the one it most likely is.
                key = key if key in declared_keys() else next(iter(difflib.get_close_matches(key, declared_keys(), n=1)), "")
                if not key:
                    problems.append(f"{label} = {quoted} (in {where}) is not a blueprint setting, nor close to one; Pulumi.yaml lists them")
                    continue
                readers = [] if stack_reads(stack, f"{NAMESPACE}:{key}") else stacks_reading(key)
                target = f"Pulumi.{readers[0]}.yaml, the stack that reads it" if readers else f"Pulumi.{stack}.yaml"
                target = f"--config {NAMESPACE}:{key}=..." if name in given else f"{NAMESPACE}:{key} in {target}"
                problems.append(
                    f"{label} = {quoted} (in {where}) is not read by blueprint, whose settings are {NAMESPACE}:<key>; write it as {target}"
                )
        elif key not in declared_keys():
            close_keys = difflib.get_close_matches(key, declared_keys(), n=1)
            hint = f"did you mean {NAMESPACE}:{close_keys[0]}?" if close_keys else "Pulumi.yaml declares every valid key"
            problems.append(f"{label} = {quoted} (in {where}) is not a blueprint setting; {hint}")
        elif name in set_keys and not stack_reads(stack, name):
            readers = stacks_reading(key)
            target = readers[0]
            if name in secret_keys:  # its line is encrypted for this stack alone: set anew on the other, never moved
                move = (
                    f"remove its line from {where}, and set it on {target} with Pulumi: `{ENV_STEP}`, then "
                    f"`pulumi config set --secret -s {target} {name} <value>`"
                )
            else:
                move = (
                    f"move its line from {where} to Pulumi.{target}.yaml (a `config: {{}}` there becomes `config:` and that line); "
                    f"or with Pulumi: `{ENV_STEP}`, then `pulumi config rm -s {shlex.quote(stack)} {name}` and "
                    f"`pulumi config set -s {target} {name} {_argument(values[name])}`"
                )
            problems.append(
                f"{name} = {quoted} is set on stack {stack}, which does not read it: {' and '.join(readers)} reads it "
                f"(and dev, which runs every phase). Move it: {move}"
            )
            # Said now, not after the move: the value as the stack that reads it would check it.
            moved = value_problems(target, {name: values[name]}, secret_keys=set(secret_keys) & {name})
            problems += [f"once moved to {target}: {problem}" for problem in moved if problem.startswith(f"{name} ")]
    return problems


def _argument(value: str) -> str:
    """`value` as a shell argument in a fix, or a placeholder for one too long to show."""
    return shlex.quote(value) if len(value) <= SHOWN_AT_MOST else "<its value>"


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
    prefix = f"{NAMESPACE}:"
    raw = {key[len(prefix) :]: value for key, value in values.items() if key.startswith(prefix)}
    short = {key.removeprefix(prefix) for key in secret_keys}
    check = _Checker(raw, short, stack, {key.removeprefix(prefix) for key in given}, {key.removeprefix(prefix) for key in stand_ins})
    for phase in STACK_PHASES[stack]:
        if phase in PHASE_VALUES:
            PHASE_VALUES[phase](check, project_dir)
    return check.errors


def load_phase1() -> Phase1Config:
    """Phase1's config from the running stack (checked already, with everything else the stack reads)."""
    return parse_phase1(raw_config(), secret_keys=secret_keys(), stack=pulumi.get_stack(), stand_ins=stand_in_keys())


def load_phase3() -> Phase3Config:
    """Phase3's config from the running stack (checked already, with everything else the stack reads)."""
    return parse_phase3(raw_config(), secret_keys=secret_keys(), stack=pulumi.get_stack())
