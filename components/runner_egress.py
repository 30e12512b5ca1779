"""What a runner's pods may reach: egress NetworkPolicies in a runner's namespace.

Every pod there is isolated for egress, then allowed by its role label (ROLE_LABEL: the runner
sets it on its job pods through `pod_labels`, which a job cannot override, and the chart on the
manager through `podLabels`):

- every pod: cluster DNS; GitLab's web and registry endpoints (Envoy's HTTPS listener, where every
  `*.<domain>` name resolves: on kind through CoreDNS, on an existing cluster through the pods' host
  aliases, both to Envoy's Service, so the policy sees Envoy's pods whatever the load balancer);
  MinIO's S3 port, for the cache (the bucket is MinIO's to enforce).
- the managers, and the default runner's jobs (the deploy to `apps`): the Kubernetes API server.
- the image-build runner's jobs (BuildKit alone): the image cache's mirrors, each at its address
  (`mirror_rules`), and public addresses on 80 and 443 (PUBLIC_WEB_PORTS): the registries
  themselves, where BuildKit goes without the cache, with a mirror down, or for a registry no mirror
  serves, and what a Dockerfile's RUN steps download.

Nothing else: not Postgres, OpenBao, Valkey, Gitaly or GitLab's own pods, MinIO's console, the
kubelets or (but image builds, on 80 and 443) the internet; the host and other private addresses only on
the API server's port. kindnetd enforces it, after DNAT; why: docs/design/decisions.md, entry 44. On
an existing cluster its network plugin must (docs/guide/existing-cluster.md; the doctor warns).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.storage import as_input

ROLE_LABEL = "blueprint/ci-role"
"""A runner pod's role: `job` or `manager`."""
JOB = "job"
MANAGER = "manager"

DNS_LABELS = {"k8s-app": "kube-dns"}
"""CoreDNS's pods in kube-system, as kubeadm labels them (kind runs kubeadm)."""
ENVOY_LABELS = {"app.kubernetes.io/name": "envoy", "app.kubernetes.io/component": "proxy", "app.kubernetes.io/managed-by": "envoy-gateway"}
"""Envoy Gateway's proxy pods (envoyproxy/gateway internal/infrastructure/kubernetes/proxy `EnvoyAppLabel`)."""
ENVOY_HTTPS_PORT = 10443
"""Envoy's container port for the Gateway's 443 listener: Envoy Gateway shifts a privileged listener
port by 10000 (internal/gatewayapi `servicePortToContainerPort`)."""
API_SERVER_PORT = 6443
"""The port kind's API server listens on, in the control-plane node (kind's kubeadm config)."""
KIND_NETWORK_BLOCKS = ("172.16.0.0/12", "192.168.0.0/16")
"""Where kind's Docker network is: kind lets Docker pick its IPv4 subnet, which comes from Docker's
default address pools (moby libnetwork/ipamutils: 172.17-31.0.0/16, then 192.168.0.0/16 in /20s).
Kind's pod and service ranges (10.244.0.0/16, 10.96.0.0/16) are outside it. A Docker daemon with
other `default-address-pools` needs these widened, or deploy jobs cannot reach the API server."""
NOT_PUBLIC = (
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "224.0.0.0/4",
    "240.0.0.0/4",
)
"""Every IPv4 range that is not a public host: "this network", RFC 1918 (kind's and the mirrors'
Docker networks, the host's LAN, kind's pod and service ranges 10.244.0.0/16 and 10.96.0.0/16),
CGNAT, loopback, link-local (cloud metadata), multicast and reserved. The cluster is IPv4 alone
(kind's default `ipFamily`, which components/kind_cluster.py keeps): a pod has no IPv6 address,
so no IPv6 rule is needed, and none is written."""


@dataclass(frozen=True, kw_only=True)
class Peer:
    """Pods in a namespace, by labels, on some TCP ports."""

    namespace: str
    labels: Mapping[str, str]
    ports: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class RunnerEgressArgs:
    namespace: pulumi.Input[str]
    """The runner's namespace."""
    gitlab: Peer
    """GitLab's Envoy (its web and registry endpoints)."""
    minio: Peer
    """MinIO's S3 port (the cache)."""
    jobs_reach_api: bool
    """Whether job pods may reach the Kubernetes API (the default runner's deploy job)."""
    jobs_pull_images: bool = False
    """Whether job pods build images themselves (BuildKit, in image builds): they may then reach
    public addresses on PUBLIC_WEB_PORTS, for the registries themselves (whatever the mirrors do) and
    the downloads of a Dockerfile's RUN steps."""
    mirrors: tuple[tuple[str, int], ...] = field(default=())
    """(address, port) of the image cache's mirrors that job pods may reach (image builds), or none
    (`image_cache.job_mirror_endpoints`)."""
    api_server: tuple[tuple[str, int], ...] = field(default=())
    """(address, port) of each endpoint of the API server (the Service default/kubernetes: an existing
    cluster's, which phase1 reads), or none: kind's, somewhere on its Docker network (API_SERVER_RULE)."""


def mirror_rules(endpoints: tuple[tuple[str, int], ...]) -> list[dict[str, Any]]:
    """The egress rules to the image cache's mirrors, from their (address, port)
    (`image_cache.job_mirror_endpoints`), or to the API server's endpoints: each reached at its
    address alone, on its port.
    """
    ports: dict[int, list[str]] = {}
    for address, port in endpoints:
        ip = ipaddress.ip_address(address)
        ports.setdefault(port, []).append(f"{ip}/{ip.max_prefixlen}")
    return [_to_blocks(sorted(cidrs), (port,)) for port, cidrs in sorted(ports.items())]


def _to_pods(peer: Peer) -> dict[str, Any]:
    return {
        "to": [
            {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": peer.namespace}},
                "podSelector": {"matchLabels": dict(peer.labels)},
            }
        ],
        "ports": [{"protocol": "TCP", "port": port} for port in peer.ports],
    }


def _to_blocks(cidrs: list[str], ports: tuple[int, ...], *, but: tuple[str, ...] = ()) -> dict[str, Any]:
    """To `cidrs` but `but`, on TCP `ports`, or on any port when there are none."""
    blocks = [{"cidr": cidr} | ({"except": list(but)} if but else {}) for cidr in cidrs]
    on = [{"protocol": "TCP", "port": port} for port in ports]
    return {"to": [{"ipBlock": block} for block in blocks]} | ({"ports": on} if on else {})


def public_rule(ports: tuple[int, ...] = ()) -> dict[str, Any]:
    """To any public IPv4 address (none of NOT_PUBLIC), on TCP `ports`, or on any port."""
    return _to_blocks(["0.0.0.0/0"], ports, but=NOT_PUBLIC)


DNS_RULE = _to_pods(Peer(namespace="kube-system", labels=DNS_LABELS, ports=())) | {
    "ports": [{"protocol": protocol, "port": 53} for protocol in ("UDP", "TCP")]
}
API_SERVER_RULE = _to_blocks(list(KIND_NETWORK_BLOCKS), (API_SERVER_PORT,))
DENY_EGRESS: dict[str, Any] = {"podSelector": {}, "policyTypes": ["Egress"]}
"""Every pod of the namespace isolated for egress: what the other policies allow is all it may reach."""
PUBLIC_WEB_PORTS = (80, 443)
"""Where a build's base images and its RUN steps' downloads come from (registries, package indexes,
Debian's plain-HTTP mirrors)."""


def egress_policies(args: RunnerEgressArgs) -> dict[str, dict[str, Any]]:
    """Each NetworkPolicy's name suffix and spec (see the module docstring)."""
    common = [DNS_RULE, _to_pods(args.gitlab), _to_pods(args.minio)]
    # A NetworkPolicy sees the endpoint behind the Service address a pod dials (after DNAT): on an
    # existing cluster, each of the API server's own, as phase1 read them.
    api_server = mirror_rules(args.api_server) if args.api_server else [API_SERVER_RULE]
    jobs = [*common, *(api_server if args.jobs_reach_api else []), *mirror_rules(args.mirrors)]
    jobs += [public_rule(PUBLIC_WEB_PORTS)] if args.jobs_pull_images else []

    def allow(role: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
        return {"podSelector": {"matchLabels": {ROLE_LABEL: role}}, "policyTypes": ["Egress"], "egress": rules}

    return {
        "deny-egress": DENY_EGRESS,
        "jobs-egress": allow(JOB, jobs),
        "manager-egress": allow(MANAGER, [*common, *api_server]),
    }


def network_policies(
    parent: pulumi.ComponentResource, name: str, namespace: pulumi.Input[str], specs: dict[str, dict[str, Any]]
) -> list[k8s.networking.v1.NetworkPolicy]:
    """One NetworkPolicy per spec in `namespace`, named by its key, children of `parent` (`name`-key)."""
    return [
        k8s.networking.v1.NetworkPolicy(
            f"{name}-{policy}",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=policy, namespace=namespace),
            spec=as_input(spec),
            opts=pulumi.ResourceOptions(parent=parent),
        )
        for policy, spec in specs.items()
    ]


class RunnerEgress(pulumi.ComponentResource):
    """The egress NetworkPolicies of a runner's namespace; pass the Kubernetes provider in `opts`."""

    def __init__(self, name: str, args: RunnerEgressArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("blueprint:index:RunnerEgress", name, None, opts)
        self.policies = network_policies(self, name, args.namespace, egress_policies(args))
        self.register_outputs({})
