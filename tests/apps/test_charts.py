"""The sample apps' Helm charts: CI lints them and runs `helm upgrade --install <project> <chart> --namespace apps`.

Rendered here with real Helm (helm_python binds Helm's Go SDK), with the values CI sets, and the built-in objects are
checked against the Kubernetes 1.35 schemas, so a chart that would fail in the pipeline fails here first.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import helm_python
import kubernetes_validate
import pytest
import yaml

from stacks.config import PROJECT_DIR
from tests.pod_security import pods, violations

NAMESPACE = "apps"
KUBERNETES_VERSION = "1.35.0"
GUESTBOOK_HOST = "guestbook.local.example.net"

# What apps/shared-code/templates/pipeline.yml passes with --set: image and pull secret for a project with a
# Dockerfile, host for one with APP_HOST. The release is named after the project.
CI_VALUES: dict[str, dict[str, Any]] = {
    "guestbook": {
        "image": {"repository": "registry.local.example.net/blueprint-apps/guestbook", "tag": "abc123"},
        "imagePullSecrets": [{"name": "gitlab-registry"}],
        "host": GUESTBOOK_HOST,
    },
    "redis": {},
    "redis-slave": {},
}
CHARTS = sorted(CI_VALUES)

# Custom resources the Kubernetes schemas do not know; their tests check them field by field.
CRD_GROUPS = ("gateway.networking.k8s.io/",)

Manifest = dict[str, Any]


def chart_dir(app: str) -> str:
    return str(PROJECT_DIR / "apps" / app / "chart")


def render(app: str, values: dict[str, Any]) -> list[Manifest]:
    with helm_python.Chart.load(chart_dir(app)) as chart:
        manifests = chart.render(values=values, name=app, namespace=NAMESPACE)
    return [doc for text in manifests.values() for doc in yaml.safe_load_all(text) if doc]


@cache
def _rendered(app: str) -> tuple[Manifest, ...]:
    return tuple(render(app, CI_VALUES[app]))


def rendered(app: str) -> list[Manifest]:
    """A fresh copy of the chart rendered with CI's values (rendered once per session)."""
    return copy.deepcopy(list(_rendered(app)))


def one(app: str, kind: str) -> Manifest:
    [found] = [doc for doc in rendered(app) if doc["kind"] == kind]
    return found


def container(app: str) -> dict[str, Any]:
    [only] = one(app, "Deployment")["spec"]["template"]["spec"]["containers"]
    return dict(only)


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


@pytest.mark.parametrize("app", CHARTS)
def test_each_chart_lints_clean_with_the_values_ci_passes(app: str) -> None:
    report = helm_python.lint(chart_dir(app), CI_VALUES[app], strict=True, namespace=NAMESPACE, kube_version=f"v{KUBERNETES_VERSION}")
    warnings_or_worse = [message for message in report["messages"] if message["severity"] >= 2]
    assert (report["errors"], warnings_or_worse) == ([], [])


@pytest.mark.parametrize("app", CHARTS)
def test_each_chart_renders_objects_valid_for_kubernetes_1_35(app: str) -> None:
    built_in = [doc for doc in rendered(app) if not doc["apiVersion"].startswith(CRD_GROUPS)]
    assert built_in
    for doc in built_in:
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


@pytest.mark.parametrize(
    ("app", "objects"),
    [
        ("guestbook", {("Deployment", "guestbook"), ("Service", "guestbook"), ("HTTPRoute", "guestbook")}),
        ("redis", {("Deployment", "redis-master"), ("Service", "redis-master")}),
        ("redis-slave", {("Deployment", "redis-replica"), ("Service", "redis-replica")}),
    ],
)
def test_each_chart_renders_its_objects_under_the_names_the_others_use(app: str, objects: set[tuple[str, str]]) -> None:
    docs = rendered(app)
    assert {(doc["kind"], doc["metadata"]["name"]) for doc in docs} == objects
    assert all("namespace" not in doc["metadata"] for doc in docs), "helm --namespace places them"


@pytest.mark.parametrize(("app", "name"), [("guestbook", "guestbook"), ("redis", "redis"), ("redis-slave", "redis")])
def test_each_object_carries_the_standard_labels(app: str, name: str) -> None:
    expected = {"app.kubernetes.io/name": name, "app.kubernetes.io/instance": app, "app.kubernetes.io/managed-by": "Helm"}
    for doc in rendered(app):
        assert expected.items() <= doc["metadata"]["labels"].items(), doc["metadata"]["name"]


def test_the_guestbook_route_attaches_to_the_apps_listener_for_its_host() -> None:
    route = one("guestbook", "HTTPRoute")["spec"]
    service = one("guestbook", "Service")
    assert route["parentRefs"] == [{"name": "gitlab-gw", "namespace": "gitlab", "sectionName": "apps-https"}]
    assert route["hostnames"] == [GUESTBOOK_HOST]
    [rule] = route["rules"]
    assert rule["backendRefs"] == [{"name": service["metadata"]["name"], "port": service["spec"]["ports"][0]["port"]}]


def test_the_guestbook_service_forwards_port_80_to_the_container_port_8080() -> None:
    [port] = one("guestbook", "Service")["spec"]["ports"]
    container_ports = {p["name"]: p["containerPort"] for p in container("guestbook")["ports"]}
    assert (port["port"], container_ports[port["targetPort"]]) == (80, 8080)


@pytest.mark.parametrize("missing", ["host", "image.repository", "image.tag"])
def test_the_guestbook_refuses_to_render_without_a_value_ci_sets(missing: str) -> None:
    values = copy.deepcopy(CI_VALUES["guestbook"])
    *parents, key = missing.split(".")
    parent = values
    for step in parents:
        parent = parent[step]
    del parent[key]
    with pytest.raises(helm_python.HelmRenderError, match=f"{missing} is required"):
        render("guestbook", values)


def test_the_guestbook_runs_its_image_by_digest_when_ci_names_one() -> None:
    """The deploy names the digest its build pushed; a tag may since have been pushed over."""
    values = copy.deepcopy(CI_VALUES["guestbook"])
    values["image"]["digest"] = "sha256:" + "0f" * 32
    [deployment] = [doc for doc in render("guestbook", values) if doc["kind"] == "Deployment"]
    [only] = deployment["spec"]["template"]["spec"]["containers"]
    assert only["image"] == f"{values['image']['repository']}@sha256:{'0f' * 32}"


@pytest.mark.parametrize("digest", ["abc123", "sha256:" + "0F" * 32, "sha256:" + "0f" * 31, "sha512:" + "0f" * 64])
def test_the_guestbook_refuses_a_digest_not_as_buildkit_reports_it(digest: str) -> None:
    values = copy.deepcopy(CI_VALUES["guestbook"])
    values["image"]["digest"] = digest
    with pytest.raises(helm_python.HelmRenderError, match="image.digest must be sha256:<64 hex digits>"):
        render("guestbook", values)


def test_the_guestbook_reaches_both_redis_services_and_listens_on_8080() -> None:
    env = {item["name"]: item["value"] for item in container("guestbook")["env"]}
    master, replica = one("redis", "Service"), one("redis-slave", "Service")
    assert env == {
        "PORT": "8080",
        "REDIS_MASTER_HOST": master["metadata"]["name"],
        "REDIS_MASTER_PORT": str(master["spec"]["ports"][0]["port"]),
        "REDIS_REPLICA_HOST": replica["metadata"]["name"],
        "REDIS_REPLICA_PORT": str(replica["spec"]["ports"][0]["port"]),
    }


def test_the_guestbook_is_ready_only_when_healthz_says_so_like_ci_verifies_it() -> None:
    assert container("guestbook")["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}


def test_a_redis_outage_does_not_restart_the_guestbook() -> None:
    assert container("guestbook")["livenessProbe"] == {"tcpSocket": {"port": "http"}, "initialDelaySeconds": 10, "periodSeconds": 10}


@pytest.mark.parametrize("app", CHARTS)
def test_every_container_runs_unprivileged(app: str) -> None:
    pod = one(app, "Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["automountServiceAccountToken"] is False
    assert container(app)["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }


@pytest.mark.parametrize("app", CHARTS)
def test_every_image_is_pinned(app: str) -> None:
    image = container(app)["image"]
    _, _, tag = image.rpartition("/")[2].partition(":")
    assert tag not in {"", "latest"}, image


def test_the_replica_runs_the_masters_image() -> None:
    assert container("redis-slave")["image"] == container("redis")["image"]


def test_the_master_is_one_append_only_pod_replaced_not_rolled() -> None:
    master = one("redis", "Deployment")["spec"]
    assert (master["replicas"], master["strategy"]) == (1, {"type": "Recreate"})
    assert container("redis")["args"] == ["--appendonly", "yes"]
    assert master["template"]["spec"]["volumes"] == [{"name": "data", "emptyDir": {}}]


def test_the_replica_replicates_read_only_from_the_master_service() -> None:
    [port] = one("redis", "Service")["spec"]["ports"]
    master = one("redis", "Service")["metadata"]["name"]
    assert container("redis-slave")["args"] == ["--replicaof", master, str(port["port"]), "--replica-read-only", "yes"]


def test_each_redis_service_selects_only_its_own_pods() -> None:
    pods = {app: one(app, "Deployment")["spec"]["template"]["metadata"]["labels"] for app in ("redis", "redis-slave")}
    for app, other in (("redis", "redis-slave"), ("redis-slave", "redis")):
        selector = one(app, "Service")["spec"]["selector"]
        assert selects(selector, pods[app])
        assert not selects(selector, pods[other])


def _pods(app: str) -> list[Manifest]:
    return [dict(pod) for manifest in rendered(app) for pod in pods(manifest)]


@pytest.mark.parametrize("app", CHARTS)
def test_every_pod_the_chart_renders_is_admitted_by_the_restricted_pod_security_standard(app: str) -> None:
    """CI deploys into `apps`, which enforces restricted: a pod it refuses would fail the pipeline."""
    found = _pods(app)
    assert found
    for pod in found:
        assert violations(pod, "restricted") == []


@pytest.mark.parametrize("app", CHARTS)
def test_every_pod_names_a_numeric_non_root_user(app: str) -> None:
    """With runAsNonRoot, kubelet refuses to start an image whose user is a name it cannot check
    (or root, as the official redis image's is): the chart names the number (redis: 999)."""
    for pod in _pods(app):
        user = pod["spec"]["securityContext"]["runAsUser"]
        assert isinstance(user, int), user
        assert user > 0


def test_the_guestbook_image_runs_as_the_numeric_user_its_chart_names() -> None:
    dockerfile = (PROJECT_DIR / "apps" / "guestbook" / "Dockerfile").read_text()
    [user] = [line.split()[1] for line in dockerfile.splitlines() if line.startswith("USER ")][-1:]
    [pod] = _pods("guestbook")
    context = pod["spec"]["securityContext"]
    assert user == f"{context['runAsUser']}:{context['runAsGroup']}"
