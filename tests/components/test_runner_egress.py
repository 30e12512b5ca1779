"""What a runner's pods may reach, by the planned NetworkPolicies: DNS, GitLab's Envoy, MinIO's S3
port, the Kubernetes API (the manager, and the default runner's deploy), the mirrors (image builds
alone); nothing else. One test per rule, each through a small evaluator of the policies
(tests/components/netpol.py)."""

from __future__ import annotations

import pytest

from components.runner import DEFAULT_NAMESPACE, IMAGE_BUILD_NAMESPACE
from components.runner_egress import ENVOY_LABELS, JOB, MANAGER, ROLE_LABEL, mirror_peers
from tests.components.netpol import Pod, To, may_reach
from tests.plans import planned

POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
NAMESPACES = (DEFAULT_NAMESPACE, IMAGE_BUILD_NAMESPACE)
CONTROL_PLANE = "172.18.0.2"
"""The control-plane node's address on kind's network (Docker's first pool): the API server's, after DNAT."""
MIRROR = "172.18.0.10"
"""A mirror container's address on kind's network."""


def policies() -> list[tuple[str, dict[str, object]]]:
    return [(str(p["inputs"]["metadata"]["namespace"]), dict(p["inputs"]["spec"])) for p in planned("phase2").find(POLICY)]


def job(namespace: str) -> Pod:
    return Pod(namespace, {ROLE_LABEL: JOB, "job.runner.gitlab.com/pod": "x"})


def manager(namespace: str) -> Pod:
    return Pod(namespace, {ROLE_LABEL: MANAGER, "app": "gitlab-runner"})


ENVOY = To(10443, Pod("gitlab", ENVOY_LABELS))
MINIO_S3 = To(9000, Pod("minio", {"app.kubernetes.io/name": "minio"}))
API_SERVER = To(6443, address=CONTROL_PLANE)
FORBIDDEN = {
    "postgres": To(5432, Pod("postgres", {"cnpg.io/cluster": "postgresql", "cnpg.io/instanceRole": "primary"})),
    "openbao": To(8200, Pod("openbao", {"app.kubernetes.io/name": "openbao"})),
    "valkey": To(6379, Pod("redis", {"app.kubernetes.io/name": "valkey"})),
    "gitaly": To(8075, Pod("gitlab", {"app": "gitaly"})),
    "gitlab's webservice, past Envoy": To(8181, Pod("gitlab", {"app": "webservice"})),
    "minio's console": To(9001, Pod("minio", {"app.kubernetes.io/name": "minio"})),
    "envoy's other ports": To(19001, Pod("gitlab", ENVOY_LABELS)),
    "a kubelet": To(10250, address="172.18.0.3"),
    "the host": To(22, address="172.18.0.1"),
    "the internet": To(443, address="140.82.112.3"),
}


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_every_runner_pod_is_isolated_for_egress(namespace: str) -> None:
    """A pod without the runner's role label (none of the runner's) reaches nothing at all."""
    assert not may_reach(policies(), Pod(namespace, {"app": "stray"}), ENVOY)


@pytest.mark.parametrize("source", [job(ns) for ns in NAMESPACES] + [manager(ns) for ns in NAMESPACES])
def test_runner_pods_resolve_names_through_cluster_dns(source: Pod) -> None:
    dns = Pod("kube-system", {"k8s-app": "kube-dns"})
    assert may_reach(policies(), source, To(53, dns, protocol="UDP"))
    assert may_reach(policies(), source, To(53, dns, protocol="TCP"))


@pytest.mark.parametrize("source", [job(ns) for ns in NAMESPACES] + [manager(ns) for ns in NAMESPACES])
def test_runner_pods_reach_gitlabs_web_and_registry_through_envoy(source: Pod) -> None:
    assert may_reach(policies(), source, ENVOY)


@pytest.mark.parametrize("source", [job(ns) for ns in NAMESPACES] + [manager(ns) for ns in NAMESPACES])
def test_runner_pods_reach_minios_s3_port_for_the_cache(source: Pod) -> None:
    assert may_reach(policies(), source, MINIO_S3)


@pytest.mark.parametrize("source", [job(DEFAULT_NAMESPACE), manager(DEFAULT_NAMESPACE), manager(IMAGE_BUILD_NAMESPACE)])
def test_the_managers_and_the_deploying_jobs_reach_the_kubernetes_api(source: Pod) -> None:
    assert may_reach(policies(), source, API_SERVER)


def test_image_build_jobs_do_not_reach_the_kubernetes_api() -> None:
    assert not may_reach(policies(), job(IMAGE_BUILD_NAMESPACE), API_SERVER)


def test_only_image_build_jobs_reach_the_mirrors() -> None:
    mirror = To(5000, address=MIRROR)
    assert may_reach(policies(), job(IMAGE_BUILD_NAMESPACE), mirror)
    assert not may_reach(policies(), job(DEFAULT_NAMESPACE), mirror)
    assert not may_reach(policies(), manager(IMAGE_BUILD_NAMESPACE), mirror)


@pytest.mark.parametrize("what", sorted(FORBIDDEN))
@pytest.mark.parametrize("source", [job(ns) for ns in NAMESPACES] + [manager(ns) for ns in NAMESPACES])
def test_runner_pods_reach_nothing_else(source: Pod, what: str) -> None:
    assert not may_reach(policies(), source, FORBIDDEN[what])


def test_a_mirror_by_address_is_reached_at_that_address_alone() -> None:
    """When the mirrors are addresses, not names (the image cache's own choice), the rule narrows to them."""
    rules = mirror_peers(("172.18.0.10:5000",))
    assert rules == [{"to": [{"ipBlock": {"cidr": "172.18.0.10/32"}}], "ports": [{"protocol": "TCP", "port": 5000}]}]


def test_no_mirror_rule_without_the_image_cache() -> None:
    assert mirror_peers(()) == []
