"""What the apps' pods may reach, by the planned NetworkPolicies in `apps`: DNS, the namespace itself,
the public internet; not the platform's internals, the nodes, the host or the mirrors. One test per
rule, each through a small evaluator of the policies (tests/components/netpol.py)."""

from __future__ import annotations

import ipaddress

import pytest

from components.ci_access import DEPLOY_RULES
from components.runner_egress import KIND_NETWORK_BLOCKS, NOT_PUBLIC
from stacks.phase2 import APPS_NAMESPACE
from tests.components.netpol import Pod, To, may_reach
from tests.plans import planned

POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
GUESTBOOK = Pod(APPS_NAMESPACE, {"app.kubernetes.io/name": "guestbook", "app.kubernetes.io/instance": "guestbook"})
"""A pod CI deployed: any labels its chart chose."""
REDIS = To(6379, Pod(APPS_NAMESPACE, {"app.kubernetes.io/name": "redis", "app.kubernetes.io/instance": "redis"}))
FORBIDDEN = {
    "postgres": To(5432, Pod("postgres", {"cnpg.io/cluster": "postgresql-cnpg", "cnpg.io/instanceRole": "primary"})),
    "openbao": To(8200, Pod("openbao", {"app.kubernetes.io/name": "openbao"})),
    "valkey": To(6379, Pod("redis", {"app.kubernetes.io/name": "valkey"})),
    "gitaly": To(8075, Pod("gitlab", {"app": "gitaly"})),
    "minio": To(9000, Pod("minio", {"app.kubernetes.io/name": "minio"})),
    "a runner's job": To(8080, Pod("gitlab-runner", {"blueprint/ci-role": "job"})),
    "a kubelet": To(10250, address="172.18.0.3"),
    "the kubernetes api": To(6443, address="172.18.0.2"),
    "a mirror": To(5000, address="172.18.0.10"),
    "the host": To(22, address="172.18.0.1"),
    "a service address": To(443, address="10.96.0.1"),
    "a pod address": To(8200, address="10.244.1.7"),
    "the laptop's lan": To(22, address="192.168.1.10"),
    "a cloud metadata endpoint": To(80, address="169.254.169.254"),
    "loopback": To(8200, address="127.0.0.1"),
    "a carrier-grade nat peer": To(80, address="100.64.0.1"),
}


def policies() -> list[tuple[str, dict[str, object]]]:
    return [(str(p["inputs"]["metadata"]["namespace"]), dict(p["inputs"]["spec"])) for p in planned("phase2").find(POLICY)]


def test_every_apps_pod_is_isolated_for_egress() -> None:
    """Without the policies, a pod reaches everything; with them, not the platform's Postgres."""
    assert not may_reach(policies(), Pod(APPS_NAMESPACE, {}), FORBIDDEN["postgres"])


def test_apps_resolve_names_through_cluster_dns() -> None:
    dns = Pod("kube-system", {"k8s-app": "kube-dns"})
    assert may_reach(policies(), GUESTBOOK, To(53, dns, protocol="UDP"))
    assert may_reach(policies(), GUESTBOOK, To(53, dns, protocol="TCP"))


def test_apps_reach_each_other_in_their_namespace() -> None:
    """The guestbook's Redis master and replica are releases of their own in `apps`."""
    assert may_reach(policies(), GUESTBOOK, REDIS)


def test_apps_reach_a_public_address_on_any_port() -> None:
    """User apps call external APIs."""
    assert may_reach(policies(), GUESTBOOK, To(443, address="140.82.112.3"))
    assert may_reach(policies(), GUESTBOOK, To(5432, address="8.8.8.8"))


@pytest.mark.parametrize("what", sorted(FORBIDDEN))
def test_apps_do_not_reach_the_platforms_internals_nodes_host_or_private_addresses(what: str) -> None:
    assert not may_reach(policies(), GUESTBOOK, FORBIDDEN[what])


def test_the_ranges_apps_cannot_reach_hold_kinds_network() -> None:
    """Where the nodes, the API server and the mirrors are (runner_egress.KIND_NETWORK_BLOCKS)."""
    excepted = [ipaddress.IPv4Network(block) for block in NOT_PUBLIC]
    for block in map(ipaddress.IPv4Network, KIND_NETWORK_BLOCKS):
        assert any(block.subnet_of(other) for other in excepted), block


def test_the_deploy_account_cannot_change_or_add_network_policies() -> None:
    """Else a deploy could lift the fence it runs behind."""
    for rule in DEPLOY_RULES:
        assert not {"networking.k8s.io", "*"} & set(rule["apiGroups"]), rule
