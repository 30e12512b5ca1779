"""phase2's wiring: phase1's outputs through the StackReference, one explicit Kubernetes provider,
what runs beside Postgres, and no secret in the plain."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import pytest

import cli.plan
import stacks.phase1 as phase1_stack
from cli.plan import Plan, ProgramFailed, _plain, _run
from cli.stand_ins import kubeconfig
from stacks import outputs
from stacks.config import PROJECT_DIR
from stacks.config.schema import stack_config
from tests.plans import fake_command, kind_config_of, planned, waits_for


def test_phase2_reads_phase1_through_its_stack_reference() -> None:
    references = planned("phase2").find("pulumi:pulumi:StackReference")
    # Beside its reference to itself (stacks/migrations.py).
    assert sorted(reference["inputs"]["name"] for reference in references) == [
        "organization/blueprint/phase1",
        "organization/blueprint/phase2",
    ]


def test_every_kubernetes_resource_uses_the_provider_built_from_phase1s_kubeconfig() -> None:
    result = planned("phase2")
    provider = result.one("pulumi:providers:kubernetes", "kubernetes")
    assert provider["inputs"]["kubeconfig"] == "[secret]"
    assert "deleteUnreachable" not in provider["inputs"], "a stopped Docker must not make a destroy forget resources"
    kubernetes = [r for r in result.resources if r["custom"] and r["type"].startswith("kubernetes:")]
    assert kubernetes
    for resource in kubernetes:
        assert resource["provider"] == f"{provider['urn']}::kubernetes-id", resource["urn"]


@dataclass
class Recorded:
    """What a plan of phase2 asked and gave, as the engine would see it (secrets in their wire wrapper)."""

    invokes: list[dict[str, Any]] = field(default_factory=list)
    """The arguments of each invoke of pulumi-command's `local.run`, in order."""
    answers: list[dict[str, Any]] = field(default_factory=list)
    """What each of those invokes returned."""
    provider_inputs: dict[str, Any] = field(default_factory=dict)
    """The inputs of the Kubernetes provider named `kubernetes`."""


def plan_recording(monkeypatch: pytest.MonkeyPatch, stack: str, upstream: Mapping[str, Plan], **config: str) -> tuple[Plan, Recorded]:
    """Plan `stack` over `upstream` (plans of its upstream stacks), recording invokes and the provider."""
    recorded = Recorded()
    call, new_resource = cli.plan._StandInMocks.call, cli.plan._StandInMocks.new_resource

    def recording_call(self: cli.plan._StandInMocks, args: Any) -> Any:
        answer = call(self, args)
        if args.token == cli.plan.RUN_TOKEN:
            recorded.invokes.append(dict(args.args))
            recorded.answers.append(answer[0])
        return answer

    def recording_new_resource(self: cli.plan._StandInMocks, args: Any) -> Any:
        if (args.typ, args.name) == ("pulumi:providers:kubernetes", "kubernetes"):
            recorded.provider_inputs = dict(args.inputs)
        return new_resource(self, args)

    monkeypatch.setattr(cli.plan._StandInMocks, "call", recording_call)
    monkeypatch.setattr(cli.plan._StandInMocks, "new_resource", recording_new_resource)
    values, secret_keys = stack_config(stack, {f"blueprint:{key}": value for key, value in config.items()})
    return _run(stack, values, secret_keys, PROJECT_DIR / "__main__.py", upstream), recorded


def test_phase2_gets_its_kubeconfig_from_kind_get_kubeconfig_of_phase1s_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    phase1 = planned("phase1", clusterName="elsewhere")
    _, recorded = plan_recording(monkeypatch, "phase2", {"phase1": phase1})
    assert [(invoke["command"], invoke["environment"]) for invoke in recorded.invokes] == [
        (phase1_stack.KIND_KUBECONFIG, {"KIND_CLUSTER_NAME": "elsewhere"})
    ]
    assert _plain(recorded.provider_inputs["kubeconfig"]) == (recorded.answers[0]["stdout"], True)


def runs_of(result: Plan) -> list[dict[str, Any]]:
    """The commands `result`'s program ran on the way (`local.run` invokes), as it made them."""
    return [invoke for invoke in result.invokes if invoke["token"] == cli.plan.RUN_TOKEN]


def test_the_kubeconfig_kind_prints_for_phase2_is_logged_nowhere() -> None:
    """pulumi-command logs a command's stdout unless told otherwise (provider/pkg/provider/local/logging.go)."""
    assert [invoke["logging"] for invoke in runs_of(planned("phase2"))] == ["none"]


def run_as_pulumi_command(invoke: Mapping[str, Any], kind: Path) -> subprocess.CompletedProcess[str]:
    """A `local.run` invoke as pulumi-command runs it (`/bin/sh -c`, its environment over ours), with the
    `kind` of folder `kind` on PATH."""
    env = {**os.environ, **invoke.get("environment", {}), "PATH": f"{kind}:{os.environ['PATH']}"}
    return subprocess.run(["/bin/sh", "-c", invoke["command"]], env=env, capture_output=True, text=True, timeout=30, check=False)


def test_the_kubeconfig_command_passes_the_cluster_name_to_kind_as_one_word(tmp_path: Path) -> None:
    fake_command(tmp_path, "kind", 'printf "%s|" "$@"\n')
    invoke = {"command": phase1_stack.KIND_KUBECONFIG, "environment": {"KIND_CLUSTER_NAME": "blue print; rm -rf x"}}
    done = run_as_pulumi_command(invoke, tmp_path)
    assert (done.returncode, done.stdout) == (0, "get|kubeconfig|--name|blue print; rm -rf x|")


def test_a_failed_kind_reaches_phase2_as_what_it_said_not_as_a_failed_invoke(tmp_path: Path) -> None:
    """pulumi-command fails the invoke of a command that exits non-zero, and the program would stop with
    a traceback; phase2's command never does, and phase2 stops with what kind said (next test)."""
    fake_command(tmp_path, "kind", 'echo "ERROR: no such cluster" >&2\nexit 1\n')
    done = run_as_pulumi_command(runs_of(planned("phase2"))[0], tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "ERROR: no such cluster\n")


def test_dev_hands_the_clusters_kubeconfig_to_phase2_in_its_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    dev, recorded = plan_recording(monkeypatch, "dev", {})
    assert recorded.invokes == [], "dev asks kind for nothing: the cluster's command prints the kubeconfig"
    cluster = dev.one("command:local:Command", "kind-cluster")
    assert _plain(recorded.provider_inputs["kubeconfig"]) == (kubeconfig(cluster["inputs"]), True)
    assert cluster["urn"] in dev.one("pulumi:providers:kubernetes", "kubernetes")["dependsOn"]


def test_a_kind_that_gives_no_kubeconfig_stops_phase2_with_what_to_check() -> None:
    """As kind answers when it does not run the cluster: the offline plan's upstream has no cluster command."""
    phase1 = planned("phase1")
    upstream = {"phase1": Plan(phase1.project, "phase1", [], {}, phase1.raw_outputs)}
    config, secret_keys = stack_config("phase2")
    with pytest.raises(ProgramFailed) as failed:
        _run("phase2", config, secret_keys, PROJECT_DIR / "__main__.py", upstream)
    assert isinstance(failed.value.cause, pulumi.RunError)
    assert str(failed.value.cause) == (
        "phase2 reads the admin kubeconfig of phase1's kind cluster blueprint from kind, and `kind get kubeconfig --name blueprint` "
        "gave none: ERROR: could not locate any control plane nodes. Docker must run and kind be on PATH (`uv run blueprint doctor` "
        "checks both), and `kind get clusters` must list blueprint."
    )
    assert not [r for r in failed.value.registered if r["type"].startswith("kubernetes:")]


def test_phase2_exports_what_phase3_reads() -> None:
    result = planned("phase2")
    assert set(result.outputs) == set(outputs.PHASE2) | {outputs.BLUEPRINT_VERSION}


def ancestors(result: Plan, urn: str) -> set[str]:
    """Everything `urn` waits for: dependencies, their dependencies, ..."""
    by_urn = {r["urn"]: r for r in result.resources}
    seen: set[str] = set()
    todo = list(by_urn[urn]["dependsOn"])
    while todo:
        current = todo.pop()
        if current not in seen and current in by_urn:
            seen.add(current)
            todo.extend(by_urn[current]["dependsOn"])
    return seen


def urns(result: Plan, pairs: Iterable[tuple[str, str]]) -> list[str]:
    return [result.one(type_, name)["urn"] for type_, name in pairs]


@pytest.mark.parametrize(
    ("type_", "name"),
    [
        ("kubernetes:helm.sh/v3:Release", "redis-chart"),
        ("kubernetes:apps/v1:Deployment", "minio-server"),
        ("kubernetes:batch/v1:Job", None),
        ("kubernetes:core/v1:Secret", "tls-gitlab-tls"),
        ("kubernetes:helm.sh/v4:Chart", "gateway-crds-chart"),
    ],
)
def test_what_does_not_need_postgres_starts_beside_it(type_: str, name: str | None) -> None:
    result = planned("phase2")
    [resource] = result.find(type_, name)
    postgres = urns(
        result,
        [
            ("kubernetes:postgresql.cnpg.io/v1:Cluster", "postgres-cluster"),
            ("kubernetes:helm.sh/v3:Release", "postgres-operator"),
        ],
    )
    assert not set(postgres) & ancestors(result, resource["urn"]), resource["urn"]


def test_no_generated_secret_appears_in_the_plan() -> None:
    text = planned("phase2").to_json()
    for stand_in in ("stand-in-password", "stand-in-secret", "stand-in-token", "stand-in-key", "PRIVATE KEY"):
        assert stand_in not in text


def test_a_missing_phase1_output_is_refused_naming_it_and_the_fix() -> None:
    phase1 = planned("phase1")
    partial: dict[str, tuple[Any, bool]] = {k: v for k, v in phase1.raw_outputs.items() if k != outputs.CLUSTER_NAME}
    upstream = {"phase1": Plan(phase1.project, "phase1", [], {}, partial)}
    config, secret_keys = stack_config("phase2")
    with pytest.raises(ProgramFailed) as failed:
        _run("phase2", config, secret_keys, PROJECT_DIR / "__main__.py", upstream)
    message = str(failed.value.cause)
    assert "reads clusterName from stack 'phase1'" in message
    assert "bring phase1 up first with `uv run blueprint up`" in message
    assert [(r["type"], r["name"]) for r in failed.value.registered] == [
        ("pulumi:pulumi:Stack", "blueprint-phase2"),
        ("pulumi:pulumi:StackReference", "organization/blueprint/phase1"),
    ]


def test_the_dev_stack_plans_the_cluster_gitlab_and_the_projects_in_one_graph() -> None:
    dev = planned("dev")
    assert dev.find("command:local:Command", "kind-cluster")
    assert dev.find("kubernetes:postgresql.cnpg.io/v1:Cluster", "postgres-cluster")
    assert dev.find("kubernetes:helm.sh/v3:Release", "gitlab-chart")
    assert dev.find("pulumi-python:dynamic/gitlab:Project", "apps-guestbook")
    assert [reference["inputs"]["name"] for reference in dev.find("pulumi:pulumi:StackReference")] == ["organization/blueprint/dev"]
    cluster = dev.one("command:local:Command", "kind-cluster")["urn"]
    assert cluster in dev.one("pulumi:providers:kubernetes", "kubernetes")["dependsOn"]


STEP_SECONDS = {
    ("kubernetes:helm.sh/v3:Release", "gitlab-chart"): 600,
    ("kubernetes:postgresql.cnpg.io/v1:Cluster", "postgres-cluster"): 90,
}
"""Rough step times: GitLab's first install, a CloudNativePG cluster; other releases 45 s, the
rest 5 s (issue 4's figures)."""


def step_seconds(resource: dict[str, Any]) -> int:
    if (resource["type"], resource["name"]) in STEP_SECONDS:
        return STEP_SECONDS[(resource["type"], resource["name"])]
    return 45 if resource["type"] == "kubernetes:helm.sh/v3:Release" else 5


def longest_chain(result: Plan) -> tuple[int, list[str]]:
    """The chain of dependencies (explicit, property and provider) that takes longest."""
    best: dict[str, tuple[int, list[str]]] = {}
    for resource in result.resources:  # plan order: what a resource waits for comes first
        waits = [*resource["dependsOn"], *([resource["provider"].rsplit("::", 1)[0]] if resource["provider"] else [])]
        before = max((best[urn] for urn in waits if urn in best), default=(0, []))
        best[resource["urn"]] = (before[0] + step_seconds(resource), [*before[1], resource["name"]])
    return max(best.values())


def test_the_longest_chain_is_postgres_then_gitlab_then_token_then_runner() -> None:
    seconds, chain = longest_chain(planned("phase2"))
    assert chain.index("postgres-cluster") < chain.index("gitlab-chart") < chain.index("gitlab-admin-token")
    assert chain.index("gitlab-admin-token") < chain.index("runner-registration") < chain.index("runner-chart")
    assert chain[-1] == "runner-chart"
    assert seconds < 1000, f"{seconds}s along {chain}"


@pytest.mark.parametrize(
    ("type_", "name"),
    [
        ("kubernetes:helm.sh/v3:Release", "openbao-chart"),
        ("kubernetes:apps/v1:DaemonSet", "node-registry-node-hosts"),
        ("command:local:Command", "node-registry-hosts-toml"),
        ("kubernetes:core/v1:ConfigMapPatch", "cluster-dns-corefile"),
        ("pulumi-python:dynamic/blueprint:DeployKubeconfig", "ci-access-kubeconfig"),
    ],
)
def test_what_can_start_beside_gitlab_does_not_wait_for_it(type_: str, name: str) -> None:
    result = planned("phase2")
    gitlab = result.one("kubernetes:helm.sh/v3:Release", "gitlab-chart")["urn"]
    assert gitlab not in ancestors(result, result.one(type_, name)["urn"])


def test_the_admin_token_is_seeded_once_gitlab_is_up() -> None:
    result = planned("phase2")
    token = result.one("pulumi-python:dynamic/gitlab:AdminToken", "gitlab-admin-token")
    assert result.one("kubernetes:helm.sh/v3:Release", "gitlab-chart")["urn"] in token["dependsOn"]
    assert token["inputs"]["token"] == "[secret]"


@pytest.mark.parametrize("stack", ["phase2", "dev"])
def test_every_consumer_of_gitlabs_url_waits_for_its_gateway_to_be_programmed(stack: str) -> None:
    result = planned(stack)
    url = result.outputs[outputs.GITLAB_URL]["value"] if stack == "phase2" else "https://gitlab."
    gate = result.one("kubernetes:gateway.networking.k8s.io/v1:GatewayPatch", "gitlab-gateway-programmed")["urn"]
    consumers = [r for r in result.resources if url in json.dumps(r["inputs"])]
    assert {"gitlab-admin-token", "apps-group", "runner-registration", "runner-chart"} <= {r["name"] for r in consumers}
    for consumer in consumers:
        assert gate in waits_for(result, consumer["urn"]), consumer["name"]


@pytest.mark.parametrize("name", ["gitlab-root-password", "gitlab-admin-token-value"])
def test_the_root_password_and_the_admin_token_live_with_the_data(name: str) -> None:
    """A preserved database keeps the password and token it was seeded with: new ones from Pulumi
    state after a preserveData cycle would be a login that fails and a token GitLab refuses."""
    result = planned("phase2")
    secret = result.one("pulumi-python:dynamic/blueprint:HostSecret", name)
    secrets_folder = f"{result.outputs[outputs.CA_CERT_FILE]['value'].rsplit('/', 1)[0]}/secrets/"
    assert secret["inputs"]["path"].startswith(secrets_folder)
    assert not result.find("random:index/randomPassword:RandomPassword", name)


def test_phase2_over_a_phase1_that_lacks_an_output_stops_before_anything_and_says_to_bring_phase1_up() -> None:
    """Nothing is registered on a cluster phase2 cannot describe: it names the output and the up that brings it."""
    phase1 = planned("phase1")
    raw = {key: value for key, value in phase1.raw_outputs.items() if key != outputs.VOLUMES_NODE_PATH}
    config, secret_keys = stack_config("phase2")
    with pytest.raises(ProgramFailed) as failed:
        _run("phase2", config, secret_keys, PROJECT_DIR / "__main__.py", {"phase1": dataclasses.replace(phase1, raw_outputs=raw)})
    assert f"reads {outputs.VOLUMES_NODE_PATH} from stack 'phase1', which does not export it" in str(failed.value)
    assert "bring phase1 up first with `uv run blueprint up`" in str(failed.value)
    assert [(r["type"], r["name"]) for r in failed.value.registered if r["custom"]] == [
        ("pulumi:pulumi:StackReference", "organization/blueprint/phase1"),
    ]


def test_the_volumes_node_path_phase2_reads_is_where_the_nodes_mount_the_volumes_folder() -> None:
    mounts = {m["containerPath"] for node in kind_config_of(planned("phase1"))["nodes"] for m in node["extraMounts"]}
    assert planned("phase1").outputs[outputs.VOLUMES_NODE_PATH]["value"] in mounts
