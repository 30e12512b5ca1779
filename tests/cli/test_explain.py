"""A failed phase is explained from Pulumi's real error output and the cluster's pods and events,
recorded by hand in tests/cli/recorded/ in the shapes `kubectl get pods|events -A -o json` prints."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

import cli.explain
from cli.explain import explain, failed_resource, gather, is_gateway_suspect, is_timeout, not_ready_pods
from tests.plans import fake_command

RECORDED = Path(__file__).parent / "recorded"

HELM_TIMEOUT = """\
 code: 255
 stdout: Updating (phase2):

@ updating.....
 +  kubernetes:helm.sh/v3:Release gitlab-chart creating (1800s) error: 1 error occurred:
 +  kubernetes:helm.sh/v3:Release gitlab-chart **creating failed** error: 1 error occurred:
 +  pulumi:pulumi:Stack blueprint-phase2 creating (1801s) error: update failed
 +  pulumi:pulumi:Stack blueprint-phase2 **creating failed** 1 error
Diagnostics:
  kubernetes:helm.sh/v3:Release (gitlab-chart):
    warning: Helm release "gitlab" was created but has a failed status. Use the `helm` command to investigate the error, correct it, \
then retry. Reason: context deadline exceeded
    error: 1 error occurred:
    \t* Helm release "gitlab/gitlab" was created, but failed to initialize completely. Use Helm CLI to investigate.: failed to \
become available within allocated timeout. Error: Helm Release gitlab/gitlab: context deadline exceeded

  pulumi:pulumi:Stack (blueprint-phase2):
    error: update failed

Resources:
    + 84 created
    1 unchanged

Duration: 30m12s

 stderr:
"""

KV_WRITE_FAILED = """\
 code: 255
 stdout: Updating (phase2):

Diagnostics:
  pulumi:pulumi:Stack (blueprint-phase2):
    error: update failed

  pulumi-python:dynamic/openbao:KvSecret (openbao-kv-redis):
    error: Exception calling application: 403 permission denied on secret/data/redis \
(urn:pulumi:phase2::blueprint::pulumi-python:dynamic/openbao:KvSecret::openbao-kv-redis)

 stderr:
"""

ONLY_A_URN = (
    "error: resource urn:pulumi:phase2::blueprint::blueprint:index:GitLab$kubernetes:helm.sh/v3:Release::gitlab-chart "
    "is not ready: the deployment of the chart is still in progress"
)


def recorded(name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((RECORDED / name).read_text())
    return document


@pytest.fixture(scope="module")
def pods() -> dict[str, Any]:
    return recorded("pods.json")


@pytest.fixture(scope="module")
def events() -> dict[str, Any]:
    return recorded("events.json")


def test_failed_resource_is_the_diagnostic_with_the_error_not_the_stack() -> None:
    assert failed_resource(HELM_TIMEOUT) == "kubernetes:helm.sh/v3:Release (gitlab-chart)"


def test_failed_resource_skips_the_stacks_update_failed_wherever_it_comes() -> None:
    assert failed_resource(KV_WRITE_FAILED) == "pulumi-python:dynamic/openbao:KvSecret (openbao-kv-redis)"


def test_failed_resource_falls_back_to_the_urn_named_in_the_error() -> None:
    assert failed_resource(ONLY_A_URN) == "kubernetes:helm.sh/v3:Release (gitlab-chart)"


def test_failed_resource_survives_terminal_colours() -> None:
    header = "kubernetes:helm.sh/v3:Release (gitlab-chart):"
    coloured = HELM_TIMEOUT.replace(f"  {header}", f"  \x1b[1m{header}\x1b[0m")
    assert failed_resource(coloured) == "kubernetes:helm.sh/v3:Release (gitlab-chart)"


def test_failed_resource_is_none_without_a_resource() -> None:
    assert failed_resource("error: could not connect to the backend") is None


@pytest.mark.parametrize(
    "text",
    [
        HELM_TIMEOUT,
        "Error: timed out waiting for the condition",
        "'gitlab-webservice-default' timed out waiting to be Ready",
        "Timeout occurred polling for 'gitlab/gitlab-gitaly-0'",
    ],
)
def test_kubernetes_waits_that_give_up_are_timeouts(text: str) -> None:
    assert is_timeout(text)


def test_a_refused_write_is_not_a_timeout() -> None:
    assert not is_timeout(KV_WRITE_FAILED)


def test_not_ready_pods_are_exactly_the_image_pull_and_the_unschedulable_one(pods: dict[str, Any], events: dict[str, Any]) -> None:
    reports = not_ready_pods(pods, events)
    assert [(r.namespace, r.name, r.phase) for r in reports] == [
        ("gitlab", "gitlab-gitaly-0", "Pending"),
        ("gitlab", "gitlab-webservice-default-7d9f8b6c4d-x2k8p", "Pending"),
    ]


def test_not_ready_pods_say_what_each_waits_on(pods: dict[str, Any], events: dict[str, Any]) -> None:
    gitaly, webservice = not_ready_pods(pods, events)
    assert len(gitaly.reasons) == 1
    assert gitaly.reasons[0].startswith("Unschedulable: 0/2 nodes are available")
    assert len(webservice.reasons) == 1
    assert webservice.reasons[0].startswith("webservice: ImagePullBackOff (Back-off pulling image")


def test_not_ready_pods_carry_their_last_events_oldest_first(pods: dict[str, Any], events: dict[str, Any]) -> None:
    gitaly, webservice = not_ready_pods(pods, events)
    assert [(e.reason, e.message) for e in webservice.events] == [
        ("Failed", "Error: ErrImagePull"),
        ("BackOff", 'Back-off pulling image "registry.gitlab.com/gitlab-org/build/cng/gitlab-webservice-ee:v17.9.2"'),
        ("Failed", "Error: ImagePullBackOff"),
    ]
    assert [(e.reason, e.time, e.count) for e in gitaly.events] == [("FailedScheduling", "2025-03-14T09:22:40.118372Z", 12)]


def test_event_limit_is_respected(pods: dict[str, Any], events: dict[str, Any]) -> None:
    _, webservice = not_ready_pods(pods, events, limit=1)
    assert [e.message for e in webservice.events] == ["Error: ImagePullBackOff"]


def test_timeout_explanation_lists_the_not_ready_pods_with_their_events(pods: dict[str, Any], events: dict[str, Any]) -> None:
    text = explain("2", "phase2", HELM_TIMEOUT, pods, events)
    assert "Phase 2 (stack phase2) failed at kubernetes:helm.sh/v3:Release (gitlab-chart)." in text
    assert "gitlab/gitlab-webservice-default-7d9f8b6c4d-x2k8p" in text
    assert "gitlab/gitlab-gitaly-0" in text
    assert "Error: ImagePullBackOff" in text
    assert "FailedScheduling" in text
    for ready_or_done in ("gitlab-toolbox", "gitlab-migrations", "coredns"):
        assert ready_or_done not in text


def test_other_failures_list_no_pods(pods: dict[str, Any], events: dict[str, Any]) -> None:
    text = explain("2", "phase2", KV_WRITE_FAILED, pods, events)
    assert "openbao-kv-redis" in text
    assert "gitlab-webservice" not in text
    assert "not Ready" not in text


def test_resume_command_names_the_phase_and_the_stack() -> None:
    text = explain("3", "phase3", KV_WRITE_FAILED, None, None)
    assert "uv run blueprint up --phase 3" in text
    assert "pulumi up -s phase3" in text
    assert "re-runnable" in text


def test_gather_is_none_when_kind_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert gather("blueprint") is None


def _cluster_answering(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """A `kind` (shell `kind`) and a kubectl that lists the recorded pods and events with what kind printed."""
    bin_dir = tmp_path / "bin"
    fake_command(bin_dir, "kind", kind)
    # kubectl --kubeconfig FILE get pods|events -A -o json, with the kubeconfig kind printed.
    listing = f'case "$4" in pods) cat {RECORDED / "pods.json"};; events) cat {RECORDED / "events.json"};; esac\n'
    fake_command(bin_dir, "kubectl", 'grep -q "apiVersion: v1" "$2" || exit 1\n' + listing)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")


def test_gather_reads_pods_and_events_with_the_clusters_kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _cluster_answering(tmp_path, monkeypatch, 'test "$*" = "get kubeconfig --name blueprint" && echo "apiVersion: v1"\n')
    assert gather("blueprint") == (recorded("pods.json"), recorded("events.json"))


def test_gather_is_none_when_kubectl_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    fake_command(bin_dir, "kind", 'echo "apiVersion: v1"\n')
    fake_command(bin_dir, "kubectl", "echo 'The connection to the server 127.0.0.1:6443 was refused' >&2; exit 1\n")
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    assert gather("blueprint") is None


def test_an_unknown_failure_shows_pulumis_own_error_lines() -> None:
    """A plugin, the program or the state can fail in ways nothing here knows: Pulumi's words then."""
    output = "Previewing update (phase2):\n\nerror: failed to load language plugin python: no such file\n"
    text = explain("2", "phase2", output, None, None)
    assert "error: failed to load language plugin python: no such file" in text


GATE_TIMEOUT = """\
 code: 255
 stdout: Updating (phase2):

Diagnostics:
  kubernetes:gateway.networking.k8s.io/v1:GatewayPatch (gitlab-gateway-programmed):
    error: resource urn:pulumi:phase2::blueprint::blueprint:index:GitLab$kubernetes:gateway.networking.k8s.io/v1:GatewayPatch\
::gitlab-gateway-programmed was not successfully created by the Kubernetes API server: timed out waiting for the condition

  pulumi:pulumi:Stack (blueprint-phase2):
    error: update failed

 stderr:
"""

GITLAB_UNREACHABLE = """\
Diagnostics:
  pulumi-python:dynamic/gitlab:Group (apps-group):
    error: Exception calling application: GitLab: GET /api/v4/groups/blueprint-apps failed (no answer): \
nothing answers at gitlab.local.example.net:443: is the kind cluster running? (`docker ps`)
"""

TOKEN_NO_ANSWER = """\
Diagnostics:
  pulumi-python:dynamic/gitlab:AdminToken (gitlab-admin-token):
    error: Exception calling application: https://gitlab.local.example.net did not accept the seeded admin token within 300s \
(no answer). If the laptop cannot reach gitlab.local.example.net, add '127.0.0.1 gitlab.local.example.net' to /etc/hosts; \
the CA it must trust is /data/platform/ca.crt.
"""

ENVOY_NO_BACKEND = """\
Diagnostics:
  pulumi-python:dynamic/gitlab:Project (apps-guestbook):
    error: Exception calling application: GitLab: POST /api/v4/projects failed (HTTP 503): no healthy upstream
"""

POSTGRES_TIMEOUT = """\
Diagnostics:
  kubernetes:postgresql.cnpg.io/v1:Cluster (postgres-cluster):
    error: 'postgres' timed out waiting to be Ready
"""


def test_a_gateway_that_is_not_programmed_is_explained_with_what_to_check_and_the_commands() -> None:
    text = explain("2", "phase2", GATE_TIMEOUT, {"items": []}, {"items": []}, kind_cluster_name="blueprint")
    assert "failed at kubernetes:gateway.networking.k8s.io/v1:GatewayPatch (gitlab-gateway-programmed)." in text
    assert "Programmed=True" in text
    for what in ("AddressNotAssigned", "NoResources", "listener Secrets", "Envoy pods", "Service patch"):
        assert what in text
    commands = [shlex.split(line) for line in text.splitlines() if line.strip().startswith("kubectl ")]
    context = ["kubectl", "--context", "kind-blueprint", "-n", "gitlab"]
    assert [*context, "describe", "gateway", "gitlab-gw"] in commands
    assert [*context, "get", "pods", "-o", "wide", "-l", "gateway.envoyproxy.io/owning-gateway-name=gitlab-gw"] in commands
    assert [*context, "get", "secrets", *cli.explain.LISTENER_SECRETS] in commands
    assert [*context, "get", "service", "gitlab-envoy"] in commands
    assert [*context, "logs", "deployment/envoy-gateway", "--tail=50"] in commands


@pytest.mark.parametrize(
    ("phase", "text"), [("2", GITLAB_UNREACHABLE), ("2", TOKEN_NO_ANSWER), ("3", ENVOY_NO_BACKEND), ("2", GATE_TIMEOUT)]
)
def test_a_gitlab_that_does_not_answer_is_explained_with_its_gateway(phase: str, text: str) -> None:
    assert is_gateway_suspect(phase, text)
    assert "describe gateway gitlab-gw" in explain(phase, f"phase{phase}", text, None, None)


@pytest.mark.parametrize(
    ("phase", "text"),
    [
        ("2", KV_WRITE_FAILED),
        ("2", POSTGRES_TIMEOUT),
        ("1", "error: 'kind-cluster' timed out waiting for the condition"),
        ("2", TOKEN_NO_ANSWER.replace("(no answer)", "(refused)")),
    ],
)
def test_failures_the_gateway_cannot_cause_get_no_gateway_help(phase: str, text: str) -> None:
    assert not is_gateway_suspect(phase, text)
    assert "gitlab-gw" not in explain(phase, f"phase{phase}", text, None, None)


def test_the_gateway_commands_quote_the_cluster_name() -> None:
    hostile = "it's; $(touch pwned)"
    text = explain("2", "phase2", GATE_TIMEOUT, None, None, kind_cluster_name=hostile)
    [line] = [line for line in text.splitlines() if "describe gateway" in line]
    assert shlex.split(line)[:3] == ["kubectl", "--context", f"kind-{hostile}"]


def test_the_gateway_help_names_what_the_platform_makes() -> None:
    from components import gitlab as gl
    from components import gitlab_gateway as gw
    from components.tls import LISTENER_SECRETS
    from stacks.phase2 import GITALY_VOLUME
    from tests.plans import planned

    assert (cli.explain.GATEWAY, cli.explain.ENVOY_SERVICE) == (gl.GATEWAY, gw.ENVOY_SERVICE)
    assert GITALY_VOLUME.namespace == cli.explain.GITLAB_NAMESPACE
    assert cli.explain.LISTENER_SECRETS == LISTENER_SECRETS
    gate = planned("phase2").one("kubernetes:gateway.networking.k8s.io/v1:GatewayPatch", cli.explain.GATEWAY_GATE)
    assert gate["inputs"]["metadata"]["name"] == gl.GATEWAY


def test_gather_asks_kind_on_phase1s_podman(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """kind finds a cluster on its own engine alone: a failed `up` on Podman is explained from Podman's cluster."""
    from stacks.config import schema

    _cluster_answering(tmp_path, monkeypatch, 'test "$KIND_EXPERIMENTAL_PROVIDER" = podman && echo "apiVersion: v1"\n')
    monkeypatch.delenv("KIND_EXPERIMENTAL_PROVIDER", raising=False)
    monkeypatch.setattr(schema, "stack_config", lambda stack: ({"blueprint:containerEngine": "podman"}, set()))
    assert gather("blueprint") == (recorded("pods.json"), recorded("events.json"))
