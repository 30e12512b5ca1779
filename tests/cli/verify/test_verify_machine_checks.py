"""`blueprint verify`'s checks of the machine, the stacks and the cluster, each seen passing and
failing with its fix, against the doctor's FakeMachine (fake docker, kind, kubectl) and a FakeRunner."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from cli import report as cli_report
from cli.report import Gateway
from cli.verify import checks
from cli.verify.model import FAIL, PASS, SKIP, WARN, passed
from cli.verify.services import Answer
from components.image_cache import mirror_container
from stacks import outputs
from tests.cli.doctor.fakes import FakeMachine
from tests.cli.fake_runner import FakeRunner
from tests.cli.verify.platforms import CURL_REFUSED, CURL_TIMED_OUT, EXISTING, PHASE1, Answers, NodeCurl, http_answer, platform_on
from versions import BLUEPRINT


def _node(name: str, ready: str = "True", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "status": {"conditions": [{"type": "Ready", "status": ready}]}}


def _kubectl(*nodes: dict[str, Any]) -> FakeMachine:
    return FakeMachine(outputs={"kubectl --context": (0, json.dumps({"items": list(nodes)}))})


NODES = (
    _node("blueprint-control-plane"),
    _node("blueprint-worker", **{"blueprint/role": "gitlab"}),
    _node("w2", **{"blueprint/role": "runner"}),
)


def test_the_engine_check_passes_when_docker_answers() -> None:
    verdict = checks.engine_check(platform_on(FakeMachine()))
    assert verdict.status == PASS


def test_the_engine_check_fails_with_its_fix_when_docker_does_not_answer() -> None:
    machine = FakeMachine(outputs={"docker info": (1, "Cannot connect to the Docker daemon at unix:///var/run/docker.sock.")})
    verdict = checks.engine_check(platform_on(machine))
    assert verdict.status == FAIL
    assert "Cannot connect" in verdict.saw
    assert verdict.fix


def test_the_pulumi_check_passes_with_a_recent_cli() -> None:
    assert checks.pulumi_cli_check(platform_on(FakeMachine())).status == PASS


def test_the_pulumi_check_fails_with_its_fix_without_the_cli() -> None:
    verdict = checks.pulumi_cli_check(platform_on(FakeMachine(tools={})))
    assert verdict.status == FAIL
    assert "pulumi" in verdict.fix.lower()


def _stack(values: dict[str, Any] | None, pending: list[dict[str, Any]] | None = None) -> tuple[Any, Any]:
    runner = FakeRunner({"phase1": values} if values is not None else {})
    runner.export_state = lambda stack: {"deployment": {"resources": [], "pending_operations": pending or []}}  # type: ignore[method-assign]
    platform = platform_on(runner=runner)
    return platform, checks.stack_up_check(platform, "phase1", ("phase1",))


def test_a_pulumi_that_hangs_reading_a_stack_fails_its_check_naming_it_and_is_stopped_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backend that never answers: the stack's check stops the `pulumi` (and what it started) at the
    runner's timeout, which the test gives (2 s against none at all), and names the command and the fix."""
    import threading

    from cli.stack_runner import AutomationRunner
    from cli.verify import _stack_verdict
    from tests.cli.hanging import hanging, left_running

    with hanging(tmp_path, "pulumi") as folder:
        monkeypatch.setenv("PATH", f"{folder / 'bin'}:/usr/bin:/bin")
        platform = platform_on(runner=AutomationRunner(read_seconds=2))
        said: list[Any] = []
        check = threading.Thread(target=lambda: said.append(_stack_verdict(platform, "phase1", ("phase1",))), daemon=True)
        check.start()
        check.join(60)  # only a failure waits this long: the check never ends without a timeout of its own
        assert said, "the check is still waiting on the hung pulumi"
        verdict = said[0]
        assert verdict.status == FAIL
        assert verdict.saw.startswith("`pulumi stack ls --json --non-interactive` did not answer within 2 s")
        assert "run it by hand" in verdict.fix
        assert "pulumi stack ls --json`" in verdict.fix
        assert not left_running(folder)


def test_a_stack_up_at_this_release_passes_and_hands_its_outputs_on() -> None:
    platform, verdict = _stack({**PHASE1, outputs.BLUEPRINT_VERSION: BLUEPRINT})
    assert verdict.status == PASS
    assert platform.of("phase1")[outputs.CLUSTER_NAME] == "blueprint"


def test_a_stack_not_up_fails_with_the_up_of_its_phase() -> None:
    _, verdict = _stack(None)
    assert verdict.status == FAIL
    assert verdict.fix == "`uv run blueprint up --phase 1`"


def test_a_stack_of_another_release_fails() -> None:
    _, verdict = _stack({**PHASE1, outputs.BLUEPRINT_VERSION: "0.0.9"})
    assert verdict.status == FAIL
    assert "0.0.9" in verdict.saw
    assert "uv run blueprint up" in verdict.fix


def test_a_stack_with_a_pending_operation_fails_naming_it() -> None:
    pending = [{"type": "creating", "resource": {"urn": "urn:pulumi:phase1::blueprint::command:local:Command::blueprint-cluster"}}]
    _, verdict = _stack({**PHASE1, outputs.BLUEPRINT_VERSION: BLUEPRINT}, pending)
    assert verdict.status == FAIL
    assert "creating blueprint-cluster" in verdict.saw
    assert "Pending operations" in verdict.fix


def _stateful(pending: list[dict[str, Any]], resources: list[dict[str, Any]]) -> Any:
    runner = FakeRunner({"phase1": {**PHASE1, outputs.BLUEPRINT_VERSION: BLUEPRINT}})
    runner.export_state = lambda stack: {"deployment": {"resources": resources, "pending_operations": pending}}  # type: ignore[method-assign]
    return checks.stack_up_check(platform_on(runner=runner), "phase1", ("phase1",))


CLUSTER_URN = "urn:pulumi:phase1::blueprint::command:local:Command::blueprint-cluster"


def test_a_stale_pending_create_a_later_run_made_is_not_a_failure() -> None:
    made = {"urn": CLUSTER_URN, "type": "command:local:Command", "inputs": {"create": "kind create"}}
    assert _stateful([{"type": "creating", "resource": made}], [made]).status == PASS


def test_an_interrupted_replacement_is_finished_by_an_up_not_cleared() -> None:
    old = {"urn": CLUSTER_URN, "type": "command:local:Command", "inputs": {"create": "old"}, "pendingReplacement": True}
    new = {"urn": CLUSTER_URN, "type": "command:local:Command", "inputs": {"create": "new"}}
    verdict = _stateful([{"type": "creating", "resource": new}], [old])
    assert verdict.status == FAIL
    assert "`uv run blueprint up` finishes it" in verdict.fix


def test_the_nodes_check_passes_with_every_node_ready_and_labelled() -> None:
    verdict = checks.nodes_check(platform_on(_kubectl(*NODES), {"phase1": PHASE1}))
    assert verdict.status == PASS
    assert "3 nodes Ready" in verdict.saw


def test_the_nodes_check_fails_naming_a_node_not_ready() -> None:
    verdict = checks.nodes_check(platform_on(_kubectl(*NODES[:2], _node("w2", "False")), {"phase1": PHASE1}))
    assert verdict.status == FAIL
    assert "w2" in verdict.saw
    assert "`kubectl --context kind-blueprint describe node w2`" in verdict.fix


def test_every_kubectl_a_fix_prints_names_the_platforms_context() -> None:
    """The user's current context is often another cluster: a fix's kubectl must read the platform's."""
    from cli.verify import data
    from cli.verify import gitlab as gitlab_checks

    stacks = {
        "phase1": {**EXISTING, outputs.HEADLAMP: True},
        "phase2": {outputs.GITLAB_URL: "https://gitlab.blueprint.test", outputs.CA_CERT_FILE: "/ca.crt"},
        "phase3": {outputs.APP_URLS: {"app": "https://app.blueprint.test"}},
    }
    not_ready, refusing = _kubectl(_node("w1", "False")), FakeMachine(outputs={"kubectl --context": (1, "forbidden")})
    fixes = [
        check(platform_on(machine, stacks)).fix
        for check, machine in (
            (checks.nodes_check, not_ready),
            (data.postgres_check, refusing),
            (gitlab_checks.apps_check, refusing),
            (gitlab_checks.headlamp_check, refusing),
        )
    ]
    assert all("`kubectl --context prod " in fix for fix in fixes), fixes


def test_the_nodes_check_fails_when_no_node_carries_a_label() -> None:
    verdict = checks.nodes_check(platform_on(_kubectl(*NODES[:2]), {"phase1": PHASE1}))
    assert verdict.status == FAIL
    assert "blueprint/role=runner" in verdict.saw


def test_the_nodes_check_fails_when_the_cluster_does_not_answer() -> None:
    machine = FakeMachine(outputs={"kubectl --context": (1, "Unable to connect to the server: dial tcp 127.0.0.1:6443")})
    verdict = checks.nodes_check(platform_on(machine, {"phase1": PHASE1}))
    assert verdict.status == FAIL
    assert "Unable to connect" in verdict.saw
    assert verdict.fix


def test_the_identity_check_passes_when_kind_runs_the_recorded_cluster() -> None:
    machine = FakeMachine(outputs={"env KIND_EXPERIMENTAL_PROVIDER=": (0, "blueprint\nother\n")})
    assert checks.identity_check(platform_on(machine, {"phase1": PHASE1})).status == PASS


def test_the_identity_check_fails_when_kind_has_no_such_cluster() -> None:
    machine = FakeMachine(outputs={"env KIND_EXPERIMENTAL_PROVIDER=": (0, "other\n")})
    verdict = checks.identity_check(platform_on(machine, {"phase1": PHASE1}))
    assert verdict.status == FAIL
    assert "no kind cluster blueprint" in verdict.saw
    assert verdict.fix == "`uv run blueprint up --phase 1`"


def test_the_identity_check_passes_when_the_context_reaches_the_recorded_cluster() -> None:
    machine = FakeMachine(outputs={"kubectl --context": (0, "uid-1")})
    assert checks.identity_check(platform_on(machine, {"phase1": EXISTING})).status == PASS


def test_the_identity_check_fails_when_the_context_reaches_another_cluster() -> None:
    machine = FakeMachine(outputs={"kubectl --context": (0, "uid-2")})
    verdict = checks.identity_check(platform_on(machine, {"phase1": EXISTING}))
    assert verdict.status == FAIL
    assert "another cluster" in verdict.saw
    assert "existing-cluster.md" in verdict.fix


MIRROR = mirror_container("blueprint", "docker.io")


UP_MIRROR = {"docker ps": (0, f"{MIRROR}\tUp 2 hours\n")}
V2 = "http://172.30.0.10:5000/v2/"


def test_the_image_cache_check_passes_when_each_mirror_runs_and_answers_a_node() -> None:
    machine = NodeCurl(outputs=UP_MIRROR, curled={V2: http_answer(200, "{}")})
    answers = Answers({V2: Answer(200)})
    verdict = checks.image_cache_check(platform_on(machine, {"phase1": PHASE1}, ask=answers))
    assert verdict.status == PASS
    assert "from blueprint-control-plane" in verdict.saw
    # Asked where containerd asks it, never from this machine (a container's address does not route from
    # a laptop with Docker Desktop or a Podman machine).
    assert (machine.curls, answers.asked) == ([("blueprint-control-plane", V2)], [])


def test_the_image_cache_check_asks_the_node_through_podman_on_podman() -> None:
    machine = NodeCurl(outputs={"podman ps": UP_MIRROR["docker ps"]}, curled={V2: http_answer(200, "{}")})
    assert checks.image_cache_check(platform_on(machine, {"phase1": PHASE1}, engine="podman")).status == PASS
    assert machine.calls[-1][:3] == ["podman", "exec", "blueprint-control-plane"]


DOCKER_WARNING = "WARNING: Error loading config file: /home/u/.docker/config.json: open /home/u/.docker/config.json: permission denied\n"
PODMAN_WARNING = 'time="2026-12-02T07:40:00Z" level=warning msg="\\"/\\" is not a shared mount, this could cause issues"\n'


def test_the_image_cache_check_passes_when_docker_warns_on_stderr_before_each_command() -> None:
    """Docker warns so on every command once `sudo docker login` left ~/.docker/config.json root's."""
    machine = NodeCurl(outputs=UP_MIRROR, curled={V2: http_answer(200, "{}")}, stderr=DOCKER_WARNING)
    assert checks.image_cache_check(platform_on(machine, {"phase1": PHASE1})).status == PASS


def test_the_image_cache_check_passes_when_rootless_podmans_warning_comes_before_curls_answer() -> None:
    """Whatever the runner merges, the status line is found where curl prints it."""
    status, said = http_answer(200, "{}")
    machine = NodeCurl(outputs={"podman ps": UP_MIRROR["docker ps"]}, curled={V2: (status, PODMAN_WARNING + said)})
    assert checks.image_cache_check(platform_on(machine, {"phase1": PHASE1}, engine="podman")).status == PASS


def test_the_image_cache_check_fails_on_a_stopped_mirror() -> None:
    machine = FakeMachine(outputs={"docker ps": (0, f"{MIRROR}\tExited (2) 1 hour ago\n")})
    verdict = checks.image_cache_check(platform_on(machine, {"phase1": PHASE1}))
    assert verdict.status == FAIL
    assert "docker.io" in verdict.saw
    assert "--phase 1" in verdict.fix


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (CURL_REFUSED, "docker.io (curl: (7) Failed to connect to 172.30.0.10 port 5000"),
        (CURL_TIMED_OUT, "docker.io (curl: (28) Connection timed out after 5002 milliseconds (asked from blueprint-control-plane))"),
        (http_answer(503, "{}"), "docker.io (HTTP 503)"),
    ],
)
def test_the_image_cache_check_fails_on_a_mirror_that_does_not_answer_the_node(answer: tuple[int, str], said: str) -> None:
    machine = NodeCurl(outputs=UP_MIRROR, curled={V2: answer})
    verdict = checks.image_cache_check(platform_on(machine, {"phase1": PHASE1}, ask=Answers({V2: Answer(200)})))
    assert verdict.status == FAIL
    assert f"not answering /v2/: {said}" in verdict.saw
    assert verdict.fix


def test_the_image_cache_check_is_skipped_on_an_existing_cluster() -> None:
    assert checks.image_cache_check(platform_on(FakeMachine(), {"phase1": EXISTING})).status == SKIP


def test_the_names_check_passes_when_every_name_resolves_to_loopback() -> None:
    assert checks.names_check(platform_on(FakeMachine(), {"phase1": PHASE1})).status == PASS


def test_the_names_check_fails_with_the_hosts_line() -> None:
    machine = FakeMachine(addresses={"gitlab.blueprint.test": None})
    verdict = checks.names_check(platform_on(machine, {"phase1": PHASE1}))
    assert verdict.status == FAIL
    assert "127.0.0.1 gitlab.blueprint.test" in verdict.fix


def _dns(gateway: Gateway, monkeypatch: pytest.MonkeyPatch, **addresses: str | None) -> FakeMachine:
    """The gateway as the cluster says it; each name of the platform (`<host>.blueprint.test`) resolving to
    `addresses[host]`, else 52.1.2.3; any other name in `addresses` to its own."""
    from cli.doctor import platform_names

    monkeypatch.setattr(cli_report, "gateway_address", lambda phase1: gateway)
    names = {name: addresses.get(name.split(".", 1)[0], "52.1.2.3") for name in platform_names("blueprint.test")}
    return FakeMachine(addresses=names | addresses)


NLB = "k8s-gitlab-abc.elb.us-east-1.amazonaws.com"


def test_the_names_pass_on_an_existing_cluster_when_they_resolve_to_the_load_balancers_ip(monkeypatch: pytest.MonkeyPatch) -> None:
    machine = _dns(Gateway(addresses=(("IPAddress", "52.1.2.3"),)), monkeypatch)
    assert checks.names_check(platform_on(machine, {"phase1": EXISTING})).status == PASS


def test_the_names_pass_when_they_resolve_as_the_load_balancers_hostname_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """EKS: the gateway's address is a hostname; the guide's CNAME makes each name resolve as it does."""
    machine = _dns(Gateway(addresses=(("Hostname", NLB),)), monkeypatch, **{NLB: "52.1.2.3"})
    assert checks.names_check(platform_on(machine, {"phase1": EXISTING})).status == PASS


def test_the_names_fail_naming_a_name_that_resolves_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    machine = _dns(Gateway(addresses=(("Hostname", NLB),)), monkeypatch, **{NLB: "52.1.2.3", "registry": "10.9.9.9"})
    verdict = checks.names_check(platform_on(machine, {"phase1": EXISTING}))
    assert verdict.status == FAIL
    assert "registry.blueprint.test resolves to 10.9.9.9, not to the gateway (52.1.2.3)" in verdict.saw
    assert "DNS" in verdict.fix


def test_the_names_pass_with_node_ports_when_they_resolve_to_the_users_own_load_balancer(monkeypatch: pytest.MonkeyPatch) -> None:
    gateway = Gateway(addresses=(("IPAddress", "10.0.0.5"), ("IPAddress", "10.0.0.6")), node_ports={443: 31443})
    assert checks.names_check(platform_on(_dns(gateway, monkeypatch), {"phase1": EXISTING})).status == PASS


def test_the_names_fail_with_node_ports_when_a_name_does_not_resolve(monkeypatch: pytest.MonkeyPatch) -> None:
    machine = _dns(Gateway(addresses=(("IPAddress", "10.0.0.5"),), node_ports={443: 31443}), monkeypatch, kas=None)
    verdict = checks.names_check(platform_on(machine, {"phase1": EXISTING}))
    assert verdict.status == FAIL
    assert "kas.blueprint.test does not resolve" in verdict.saw


def test_the_names_warn_when_the_gateways_address_cannot_be_read(monkeypatch: pytest.MonkeyPatch) -> None:
    machine = _dns(Gateway(problem="`kubectl ...` did not answer"), monkeypatch)
    assert checks.names_check(platform_on(machine, {"phase1": EXISTING})).status == WARN


def _hosts_dir(folder: Path, text: str | None) -> dict[str, Any]:
    from components.image_cache import hosts_toml

    (folder / "docker.io").mkdir()
    (folder / "docker.io" / "hosts.toml").write_text(hosts_toml("blueprint", "docker.io") if text is None else text)
    return {**PHASE1, outputs.REGISTRY_HOSTS_DIR: str(folder)}


def test_the_nodes_use_the_cache_when_each_hosts_toml_points_at_its_mirror(tmp_path: Path) -> None:
    verdict = checks.nodes_use_cache_check(platform_on(stacks={"phase1": _hosts_dir(tmp_path, None)}))
    assert verdict.status == PASS


def test_the_nodes_do_not_use_the_cache_when_a_hosts_toml_was_changed(tmp_path: Path) -> None:
    verdict = checks.nodes_use_cache_check(
        platform_on(stacks={"phase1": _hosts_dir(tmp_path, 'server = "https://registry-1.docker.io"\n')})
    )
    assert verdict.status == FAIL
    assert "docker.io/hosts.toml is not the one phase1 wrote" in verdict.saw
    assert verdict.fix == "`uv run blueprint up --phase 1` writes them again"


def test_kubectl_is_given_a_deadline_before_its_checks(tmp_path: Path) -> None:
    from cli.verify.model import Spec

    asked: list[float] = []

    class Timing(FakeMachine):
        def run(self, argv: Sequence[str], timeout: float) -> tuple[int, str]:
            asked.append(timeout)
            return super().run(argv, timeout)

    platform_on(Timing(), {"phase1": PHASE1}).kubectl("get", "nodes")
    assert asked == [20]
    assert asked[0] < Spec(name="any", run=lambda: passed("")).timeout
