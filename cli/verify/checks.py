"""The checks of the machine, the stacks and the cluster: the engine answers (the doctor's own
checks), the Pulumi CLI, each stack up at this release with no pending operation, the nodes Ready and
labelled, the cluster the state names, the image cache's mirrors, and the platform's names.

Each reads what the others found through `Platform`: a stack's check records its outputs there, and
the checks that need those outputs need that check (cli/verify/model.py skips them when it fails).
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cli.doctor.machine import Machine, first_line
from cli.verify.model import Verdict, at_once, failed, passed, skipped, warned
from cli.verify.report import Secrets
from providers.kubectl import kubectl_argv
from stacks import outputs

ENGINE, PULUMI_CLI = "container engine", "Pulumi CLI"
NODES, IDENTITY, IMAGE_CACHE, NAMES = "cluster nodes", "cluster identity", "image cache", "platform names"
NODES_USE_CACHE = "nodes use the image cache"
UP = "uv run blueprint up"


READ_SECONDS = 10.0
"""How long each `pulumi` a stack's check runs may take before it is stopped, with every process it started
(cli/stack_runner.py `AutomationRunner`): a local backend answers in about a second, a remote one in a few."""
STACK_SECONDS = 4 * READ_SECONDS + 5
"""A stack's check: up to four `pulumi` (`stack ls`, `stack export`, `stack output`, `stack export`), so
that one which hangs is stopped and named before the check itself is given up on."""


def stack_check(stack: str) -> str:
    return f"stack {stack}"


@dataclass
class Platform:
    """What the checks share: the machine, the stacks' runner, how to ask a URL, the secrets read so far,
    and each stack's outputs once its check read them (phase1/2/3; `dev`'s serve as all three).
    """

    machine: Machine
    runner: Callable[[], Any]
    """The StackRunner, made when a stack's check first needs it (after the Pulumi CLI's check passed)."""
    ask: Callable[..., Any]
    """cli/verify/services.py `Ask`: (url, ca_file=, headers=, server_name=, forward=) -> an Answer."""
    secrets: Secrets
    engine: str
    dial: Callable[[str, int], Any]
    """(host, port) -> a connected socket: cli/verify/services.py `dial`."""
    system_trust: Callable[[], Any]
    """The system store's SSL context (`ssl.create_default_context`)."""
    forward: Callable[[Any], Any] | None = None
    """A cluster_access.Target -> a context manager giving the local port of a port-forward to it
    (None: providers/cluster_access.py `forwarded`, kubectl's own)."""
    resolve: Callable[[str], set[str]] | None = None
    """A name -> every address it resolves to here (None: cli/dns_gate.py `resolve`, the DNS stop's own)."""
    deep: bool = False
    """`--deep`: also run the checks that change something (a pod restart, a commit) and take minutes."""
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    _kept: dict[str, tuple[str, Callable[[str], None]]] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _ended: bool = field(default=False, init=False, repr=False)

    def kept(self, key: str, make: Callable[[], str], end: Callable[[str], None]) -> str:
        """What `make()` gives (an OpenBao token), made once for the run by the first check that asks, shared
        by the others, and ended by `end` when the run ends (`close`). One made once the run has ended (by a
        check the deadline cut, still running) is ended at once: a RuntimeError.
        """
        with self._lock:
            if key in self._kept:
                return self._kept[key][0]
        made = make()
        with self._lock:
            first = None if self._ended else self._kept.setdefault(key, (made, end))[0]
        if first is not made:  # the run ended, or another check made one meanwhile
            end(made)
        if first is None:
            raise RuntimeError(f"{key}: made after the run ended, and ended at once")
        return first

    def close(self) -> None:
        """End what the run's checks kept (`kept`), once each is done or given up on; one that cannot be
        ended is a warning on stderr, its secrets masked.
        """
        with self._lock:
            self._ended, kept = True, list(self._kept.values())
            self._kept.clear()
        for made, end in kept:
            try:
                end(made)
            except Exception as error:
                print(f"warning: {self.secrets.masked(str(error))}", file=sys.stderr)

    def of(self, phase: str) -> dict[str, Any]:
        return self.outputs.get(phase) or {}

    @property
    def context(self) -> str:
        """The kubeconfig context of the platform's cluster: kind's (`kind-<name>`), or the existing cluster's."""
        return outputs.kube_context(self.of("phase1"))

    def kubectl(self, *argv: str, timeout: float = 20) -> tuple[int, str]:
        """Run kubectl against the platform's cluster; killed (its process group) at `timeout`, before
        the check's own (model.Spec's 30 s) gives up on it and leaves it running.
        """
        return self.machine.run(kubectl_argv(self.context, *argv), timeout=timeout)

    def kubectl_said(self, *argv: str, namespace: str = "") -> str:
        """A kubectl command a fix tells the user to run, as it runs: against the platform's context
        (theirs is often another cluster), quoted for the shell, in backticks.
        """
        import shlex

        return f"`{shlex.join(kubectl_argv(self.context, *argv, namespace=namespace, timeout=None))}`"


def engine_check(platform: Platform) -> Verdict:
    """The container engine answers: the doctor's own checks of it (cli/doctor/docker.py, podman.py)."""
    from cli.doctor.docker import docker_checks
    from cli.doctor.machine import machine_family
    from cli.doctor.podman import podman_checks
    from cli.status import _on_existing
    from components.engine import PODMAN

    # phase1's outputs when its check has read them, else its config (this check needs no stack).
    if _on_existing(platform.outputs.get("phase1")):
        return skipped("an existing cluster: this machine runs no container engine for it")
    machine = platform.machine
    found = podman_checks(machine) if platform.engine == PODMAN else docker_checks(machine, machine_family(machine))
    wrong = [check for check in found if not check.ok]
    if wrong:
        return failed("; ".join(f"{check.name}: {check.found}" for check in wrong), wrong[0].fix)
    return passed("; ".join(check.found for check in found))


def pulumi_cli_check(platform: Platform) -> Verdict:
    from cli.doctor.checks import PULUMI_MIN_VERSION, pulumi_check

    check = pulumi_check(platform.machine, PULUMI_MIN_VERSION)
    return passed(check.found) if check.ok else failed(check.found, check.fix)


def _pending(stack: str, state: Mapping[str, Any]) -> tuple[list[str], str]:
    """The operations a stack's state holds as begun and never finished (an `up` cut short), and
    cli/lifecycle.py's advice for them (as destroy and a cluster change give it); stale CREATEs, which
    a later run re-made, are no longer pending there (`without_stale_creates`).
    """
    from cli.lifecycle import pending_operations, without_stale_creates

    deployment, _ = without_stale_creates(stack, state.get("deployment") or {})
    operations = deployment.get("pending_operations") or []
    names = [f"{op.get('type', '?')} {str((op.get('resource') or {}).get('urn', '?')).rsplit('::', 1)[-1]}" for op in operations]
    return names, pending_operations(stack, deployment) or ""


def stack_up_check(platform: Platform, stack: str, phases: tuple[str, ...]) -> Verdict:
    """`stack` is up, brought up by this release, with no pending operation; its outputs serve `phases`' checks."""
    from versions import BLUEPRINT

    runner = platform.runner()
    values = runner.outputs(stack)
    if values is None:
        phase = "" if stack == "dev" else f" --phase {stack.removeprefix('phase')}"
        return failed(f"{stack} is not up", f"`{UP}{phase}`")
    for phase in phases:
        platform.outputs[phase] = values
    _register_secrets(platform, values)
    recorded = values.get(outputs.BLUEPRINT_VERSION)
    pending, advice = _pending(stack, runner.export_state(stack))
    if pending:
        return failed(
            f"{stack} holds {len(pending)} pending operation(s), from an up cut short: {', '.join(pending[:5])}",
            f"{advice} (docs/guide/failure-and-resume.md, 'Pending operations')",
        )
    if recorded != BLUEPRINT:
        return failed(f"{stack} was brought up by blueprint {recorded!s:.40}, not {BLUEPRINT}", f"`{UP}` brings it to {BLUEPRINT}")
    return passed(f"up, by blueprint {BLUEPRINT}, no pending operation")


SECRET_OUTPUTS = (outputs.DEPLOY_KUBECONFIG, outputs.KUBECONFIG, outputs.SEEDED_ADMIN_TOKEN, outputs.OPENBAO_WRITER_PASSWORD)
"""The outputs that hold a secret (the runner gives them in plain): never shown, whichever check meets one."""
SECRET_FILES = (
    outputs.ADMIN_TOKEN_FILE, outputs.GLAB_TOKEN_FILE, outputs.GITLAB_ROOT_PASSWORD_FILE, outputs.OPENBAO_ADMIN_PASSWORD_FILE,
    outputs.OPENBAO_WRITER_PASSWORD_FILE,
)  # fmt: skip
"""The outputs that name a file holding a secret."""


def _register_secrets(platform: Platform, values: Mapping[str, Any]) -> None:
    """Every secret a stack's outputs hold or name a file of, masked in the report from the start."""
    from pathlib import Path

    for key in SECRET_OUTPUTS:
        if values.get(key):
            platform.secrets.add(str(values[key]))
    for key in (key for key in SECRET_FILES if values.get(key)):
        with contextlib.suppress(OSError, UnicodeDecodeError):  # a file gone: the check that needs it says so
            platform.secrets.add(Path(str(values[key])).read_text())


def ready(item: Mapping[str, Any]) -> bool:
    """A node's or a pod's condition Ready is True (its status, as kubectl's JSON gives it)."""
    conditions = (item.get("status") or {}).get("conditions") or []
    return any(condition.get("type") == "Ready" and condition.get("status") == "True" for condition in conditions)


def nodes_check(platform: Platform) -> Verdict:
    """Every node Ready, and (kind) the GitLab and runner labels each on some node."""
    code, said = platform.kubectl("get", "nodes", "-o", "json")
    if code != 0:
        return failed(f"kubectl could not list the nodes: {first_line(said)}", "is the cluster running? `uv run blueprint status`")
    try:
        items = json.loads(said).get("items") or []
    except (ValueError, AttributeError):
        return failed(
            "kubectl's answer was not a node list", f"run {platform.kubectl_said('get', 'nodes')} and attach what it prints to a bug report"
        )
    not_ready = [str(item.get("metadata", {}).get("name")) for item in items if not ready(item)]
    if not items or not_ready:
        return failed(
            f"{len(not_ready)} of {len(items)} nodes not Ready: {', '.join(not_ready)}",
            f"{platform.kubectl_said('describe', 'node', (not_ready or ['<name>'])[0])} says why; docs/guide/troubleshooting.md",
        )
    phase1 = platform.of("phase1")
    key = str(phase1.get(outputs.NODE_LABEL_KEY) or "")
    wanted = [str(phase1.get(name) or "") for name in (outputs.GITLAB_NODE_LABEL, outputs.RUNNER_NODE_LABEL)]
    labels = [item.get("metadata", {}).get("labels") or {} for item in items]
    missing = [value for value in wanted if key and value and not any(found.get(key) == value for found in labels)]
    if missing:
        return failed(f"no node labelled {', '.join(f'{key}={value}' for value in missing)}", f"`{UP} --phase 1` labels them again")
    return passed(f"{len(items)} nodes Ready" + (f", labelled {key}={'/'.join(wanted)}" if key else ""))


def identity_check(platform: Platform) -> Verdict:
    """The cluster the state records: kind's of that name (kind), or the one whose kube-system UID it holds (existing)."""
    phase1 = platform.of("phase1")
    name = str(phase1.get(outputs.CLUSTER_NAME))
    if outputs.on_existing(phase1):
        context, recorded = outputs.kube_context(phase1), str(phase1.get(outputs.CLUSTER_ID))
        code, said = platform.kubectl("get", "namespace", "kube-system", "-o", "jsonpath={.metadata.uid}")
        if code != 0:
            return failed(f"context {context} did not answer: {first_line(said)}", "docs/guide/existing-cluster.md")
        if said.strip() != recorded:
            return failed(
                f"context {context} reaches another cluster (kube-system {said.strip()[:40]}, the state holds {recorded})",
                "point the context back at the platform's cluster; docs/guide/existing-cluster.md",
            )
        return passed(f"context {context} reaches the recorded cluster (kube-system {recorded})")
    from components.engine import KIND_PROVIDER, PODMAN

    # kind on the engine phase1 used: named for Podman, and a provider the shell exported cleared for Docker ("" is unset to kind).
    provider = PODMAN if platform.engine == PODMAN else ""
    code, said = platform.machine.run(["env", f"{KIND_PROVIDER}={provider}", "kind", "get", "clusters"], timeout=20)
    if code != 0:
        return failed(f"`kind get clusters` failed: {first_line(said)}", "`uv run blueprint doctor` checks kind and the engine")
    if name not in said.split():
        return failed(f"no kind cluster {name} (the state's): kind has {', '.join(said.split()) or 'none'}", f"`{UP} --phase 1`")
    return passed(f"kind cluster {name} runs, as the state records")


def _no_cache(phase1: Mapping[str, Any]) -> Verdict | None:
    """The skip of a platform without an image cache (an existing cluster, or phase1 runs none), else None."""
    if outputs.on_existing(phase1) or not phase1.get(outputs.IMAGE_MIRRORS):
        return skipped("no image cache: " + ("an existing cluster" if outputs.on_existing(phase1) else "phase1 runs none"))
    return None


def image_cache_check(platform: Platform) -> Verdict:
    """Each registry mirror runs and answers `/v2/` (the Docker registry API's base), asked from a node,
    as containerd asks it (cli/cache_served.py `from_node`: never from this machine).
    """
    from cli.cache_served import EXEC_SECONDS, control_plane, from_node
    from cli.image_cache import mirror_containers, mirror_states, on_engine

    phase1 = platform.of("phase1")
    if (none := _no_cache(phase1)) is not None:
        return none
    containers = mirror_containers(phase1)
    states = mirror_states(list(containers.values()), on_engine(lambda argv: platform.machine.run(argv, timeout=20), platform.engine))
    if states is None:
        return failed(f"{platform.engine} did not list the mirrors' containers", "`uv run blueprint doctor` checks the engine")
    down = [f"{registry}: {states.get(container)}" for registry, container in containers.items() if states.get(container) != "up"]
    if down:
        return failed(f"mirror(s) not running: {'; '.join(down)}", f"`{UP} --phase 1` starts them again")
    cluster = str(phase1.get(outputs.CLUSTER_NAME))
    get = from_node(on_engine(lambda argv: platform.machine.run_apart(argv, timeout=EXEC_SECONDS), platform.engine), cluster)
    mirrors = sorted((phase1.get(outputs.IMAGE_MIRRORS) or {}).items())
    answers = at_once(lambda mirror: get(f"http://{mirror[1]}/v2/"), mirrors)
    silent = [
        f"{registry} ({said if status is None else f'HTTP {status}'})"
        for (registry, _), (status, _, said) in zip(mirrors, answers, strict=True)
        if status != 200
    ]
    if silent:
        return failed(f"mirror(s) not answering /v2/: {', '.join(silent)}", f"`{UP} --phase 1`; docs/guide/image-cache.md")
    return passed(f"{len(containers)} mirrors running and answering /v2/ from {control_plane(cluster)}")


def nodes_use_cache_check(platform: Platform) -> Verdict:
    """Each mirrored registry's `hosts.toml`, which containerd on every node reads (phase1's registryHostsDir),
    points at its mirror first, as phase1 wrote it (components/image_cache.py `hosts_toml`).
    """
    from pathlib import Path

    from components.image_cache import hosts_toml

    phase1 = platform.of("phase1")
    if (none := _no_cache(phase1)) is not None:
        return none
    folder, cluster = Path(str(phase1.get(outputs.REGISTRY_HOSTS_DIR))), str(phase1.get(outputs.CLUSTER_NAME))
    wrong = []
    for registry in sorted(phase1.get(outputs.IMAGE_MIRRORS) or {}):
        path = folder / registry / "hosts.toml"
        try:
            if path.read_text() != hosts_toml(cluster, registry):
                wrong.append(f"{path} is not the one phase1 wrote")
        except OSError as error:
            wrong.append(f"{path} cannot be read ({type(error).__name__})")
    if wrong:
        return failed("; ".join(wrong), f"`{UP} --phase 1` writes them again")
    return passed(f"{len(phase1.get(outputs.IMAGE_MIRRORS) or {})} registries' hosts.toml point the nodes at their mirror")


def names_check(platform: Platform) -> Verdict:
    """The platform's names resolve: to 127.0.0.1 (kind's /etc/hosts line), or to the gateway (an existing cluster's DNS)."""
    from cli.doctor import checks, platform_names

    phase1 = platform.of("phase1")
    names = platform_names(str(phase1.get(outputs.DOMAIN)))
    if not outputs.on_existing(phase1):
        check = checks.names_check(platform.machine, names)
        return passed(check.found) if check.ok else failed(check.found, check.fix)
    from cli import dns_gate
    from cli.report import gateway_address

    # The one rule of `up`'s DNS stop (cli/dns_gate.py): a load balancer's hostname is resolved; with
    # NodePort (the record goes to the user's own load balancer) a name need only resolve.
    gateway = gateway_address(phase1)
    problems = dns_gate.unresolved(list(names), gateway, platform.resolve or dns_gate.resolve)
    if problems:
        return failed("; ".join(problems), "docs/guide/existing-cluster.md, 'DNS: one wildcard record'")
    if gateway.problem or (gateway.node_ports is None and not gateway.addresses):
        return warned(
            f"{len(names)} names resolve, but the gateway's address is not known: {gateway.problem or 'none yet'}",
            "`uv run blueprint status`",
        )
    if gateway.node_ports is not None:
        return passed(f"{len(names)} names resolve (NodePort: to your own load balancer, which verify cannot see)")
    return passed(f"{len(names)} names resolve to the gateway ({', '.join(sorted(value for _, value in gateway.addresses))})")
