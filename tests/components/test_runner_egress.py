"""What a runner's pods may reach, by the planned NetworkPolicies: DNS, GitLab's Envoy, MinIO's S3
port, the Kubernetes API (the manager, and the default runner's deploy), the mirrors and public
registries on 443 (image builds alone); nothing else. One test per rule, each through a small
evaluator of the policies (tests/components/netpol.py)."""

from __future__ import annotations

import pytest

from components.image_cache import job_mirror_endpoints
from components.runner import DEFAULT_NAMESPACE, IMAGE_BUILD_NAMESPACE
from components.runner_egress import ENVOY_LABELS, JOB, MANAGER, ROLE_LABEL, mirror_rules
from stacks import outputs
from tests.components.netpol import Pod, To, may_reach
from tests.plans import planned

POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
NAMESPACES = (DEFAULT_NAMESPACE, IMAGE_BUILD_NAMESPACE)
CONTROL_PLANE = "172.18.0.2"
"""The control-plane node's address on kind's network (Docker's first pool): the API server's, after DNAT."""
PUBLIC_REGISTRY = "104.18.121.25"
"""A public address, as Docker Hub's or another registry's name resolves to."""


def policies(**config: str) -> list[tuple[str, dict[str, object]]]:
    return [(str(p["inputs"]["metadata"]["namespace"]), dict(p["inputs"]["spec"])) for p in planned("phase2", **config).find(POLICY)]


def docker_hub_mirror() -> To:
    """Where phase1 plans the Docker Hub mirror: its fixed address on the mirrors' network."""
    address, _, port = str(planned("phase1").outputs[outputs.IMAGE_MIRRORS]["value"]["docker.io"]).rpartition(":")
    return To(int(port), address=address)


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
    "the internet, but on 80 and 443": To(25, address=PUBLIC_REGISTRY),
    "a private address on 443": To(443, address="192.168.1.20"),
    "another private range on 443": To(443, address="10.20.0.5"),
    "a pod's address on 443": To(443, address="10.244.1.7"),
    "a Service's address on 443": To(443, address="10.96.0.1"),
    "a kubelet's node on 443": To(443, address="172.18.0.3"),
    "the host on 443": To(443, address="172.18.0.1"),
    "CGNAT on 443": To(443, address="100.64.0.1"),
    "link-local (cloud metadata) on 443": To(443, address="169.254.169.254"),
    "loopback on 443": To(443, address="127.0.0.1"),
    "multicast on 443": To(443, address="224.0.0.251"),
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
    mirror = docker_hub_mirror()
    assert may_reach(policies(), job(IMAGE_BUILD_NAMESPACE), mirror)
    assert not may_reach(policies(), job(DEFAULT_NAMESPACE), mirror)
    assert not may_reach(policies(), manager(IMAGE_BUILD_NAMESPACE), mirror)


def test_image_build_jobs_reach_the_mirror_on_its_port_alone() -> None:
    mirror = docker_hub_mirror()
    assert not may_reach(policies(), job(IMAGE_BUILD_NAMESPACE), To(22, address=mirror.address))


@pytest.mark.parametrize("cache", ["true", "false"])
def test_image_build_jobs_reach_public_registries_on_443(cache: str) -> None:
    """BuildKit falls back to the registry itself: the cache off, a mirror down, or a base image
    from a registry no mirror serves."""
    assert may_reach(policies(imageCache=cache), job(IMAGE_BUILD_NAMESPACE), To(443, address=PUBLIC_REGISTRY))


def test_image_build_jobs_reach_plain_http_downloads_for_a_dockerfiles_run_steps() -> None:
    """`RUN apt-get install` goes to Debian's mirrors over plain HTTP (port 80)."""
    assert may_reach(policies(), job(IMAGE_BUILD_NAMESPACE), To(80, address=PUBLIC_REGISTRY))


@pytest.mark.parametrize("source", [job(DEFAULT_NAMESPACE), manager(DEFAULT_NAMESPACE), manager(IMAGE_BUILD_NAMESPACE)])
def test_no_other_runner_pod_reaches_a_public_address(source: Pod) -> None:
    """Their images are pulled by the node's containerd, from the node, not from the pod."""
    assert not may_reach(policies(), source, To(443, address=PUBLIC_REGISTRY))


@pytest.mark.parametrize("what", sorted(FORBIDDEN))
@pytest.mark.parametrize("source", [job(ns) for ns in NAMESPACES] + [manager(ns) for ns in NAMESPACES])
def test_runner_pods_reach_nothing_else(source: Pod, what: str) -> None:
    assert not may_reach(policies(), source, FORBIDDEN[what])


@pytest.mark.parametrize("cache", ["true", "false"])
def test_image_build_jobs_reach_no_private_address_whatever_the_cache(cache: str) -> None:
    for what in sorted(FORBIDDEN):
        assert not may_reach(policies(imageCache=cache), job(IMAGE_BUILD_NAMESPACE), FORBIDDEN[what]), what


def test_a_mirror_is_reached_at_its_address_alone() -> None:
    mirror = docker_hub_mirror()
    rules = mirror_rules(tuple(job_mirror_endpoints({"docker.io": f"{mirror.address}:{mirror.port}"})))
    assert rules == [{"to": [{"ipBlock": {"cidr": f"{mirror.address}/32"}}], "ports": [{"protocol": "TCP", "port": mirror.port}]}]


def test_a_mirror_that_is_not_an_address_is_refused() -> None:
    """A name would be resolved, and the policy could only guess where it lands."""
    with pytest.raises(ValueError, match="blueprint-mirror-docker-io"):
        job_mirror_endpoints({"docker.io": "blueprint-mirror-docker-io.:5000"})


def test_no_mirror_rule_without_the_image_cache() -> None:
    assert mirror_rules(tuple(job_mirror_endpoints({}))) == []


def test_the_architecture_page_names_the_addresses_public_443_leaves_out() -> None:
    """A bare `0.0.0.0/0: TCP 443` would read as the whole network, the host and the LAN included."""
    from cli.diagram.egress import egress

    reaches = {(namespace, pods): reach for namespace, pods, reach, _ in egress([planned("phase2")])}
    assert "0.0.0.0/0 except 0.0.0.0/8, 10.0.0.0/8" in reaches[(IMAGE_BUILD_NAMESPACE, f"{ROLE_LABEL}={JOB}")]
