"""What a runner's pods may reach: egress NetworkPolicies in a runner's namespace.

Every pod there is isolated for egress, then allowed by its role label (ROLE_LABEL: the runner
sets it on its job pods through `pod_labels`, which a job cannot override, and the chart on the
manager through `podLabels`):

- every pod: cluster DNS; GitLab's web and registry endpoints (Envoy's HTTPS listener, where every
  `*.<domain>` name resolves); MinIO's S3 port, for the cache (the bucket is MinIO's to enforce).
- the managers, and the default runner's jobs (the deploy to `apps`): the Kubernetes API server.
- the image-build runner's jobs (BuildKit alone): the image cache's mirrors (`mirror_peers`).

Nothing else: not Postgres, OpenBao, Valkey, Gitaly or GitLab's own pods, MinIO's console, the
kubelets or the internet; the host and other private addresses only on the API server's (and the
mirrors') port. kindnetd enforces it, after DNAT; why: docs/design/decisions.md, entry 44.
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
    mirrors: tuple[str, ...] = field(default=())
    """`<host>:<port>` of the image cache's mirrors that job pods may reach (image builds), or none."""


def mirror_peers(mirrors: tuple[str, ...]) -> list[dict[str, Any]]:
    """The egress rules to the image cache's mirrors, from their `<host>:<port>`: an address is
    reached exactly (a /32 or /128); a name (today `blueprint-mirror-<registry>.`, a container on
    kind's network outside the cluster, which no policy can select by name) is reached on its port
    anywhere on kind's network (KIND_NETWORK_BLOCKS).
    """
    blocks: dict[int, set[str]] = {}
    for mirror in mirrors:
        host, _, port = mirror.rpartition(":")
        host = host.strip("[]")
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            cidrs = set(KIND_NETWORK_BLOCKS)
        else:
            cidrs = {f"{address}/{address.max_prefixlen}"}
        blocks.setdefault(int(port), set()).update(cidrs)
    return [_to_blocks(sorted(cidrs), (port,)) for port, cidrs in sorted(blocks.items())]


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


def _to_blocks(cidrs: list[str], ports: tuple[int, ...]) -> dict[str, Any]:
    return {"to": [{"ipBlock": {"cidr": cidr}} for cidr in cidrs], "ports": [{"protocol": "TCP", "port": port} for port in ports]}


DNS_RULE = _to_pods(Peer(namespace="kube-system", labels=DNS_LABELS, ports=())) | {
    "ports": [{"protocol": protocol, "port": 53} for protocol in ("UDP", "TCP")]
}
API_SERVER_RULE = _to_blocks(list(KIND_NETWORK_BLOCKS), (API_SERVER_PORT,))


def egress_policies(args: RunnerEgressArgs) -> dict[str, dict[str, Any]]:
    """Each NetworkPolicy's name suffix and spec (see the module docstring)."""
    common = [DNS_RULE, _to_pods(args.gitlab), _to_pods(args.minio)]
    jobs = [*common, *([API_SERVER_RULE] if args.jobs_reach_api else []), *mirror_peers(args.mirrors)]

    def allow(role: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
        return {"podSelector": {"matchLabels": {ROLE_LABEL: role}}, "policyTypes": ["Egress"], "egress": rules}

    return {
        "deny-egress": {"podSelector": {}, "policyTypes": ["Egress"]},
        "jobs-egress": allow(JOB, jobs),
        "manager-egress": allow(MANAGER, [*common, API_SERVER_RULE]),
    }


class RunnerEgress(pulumi.ComponentResource):
    """The egress NetworkPolicies of a runner's namespace; pass the Kubernetes provider in `opts`."""

    def __init__(self, name: str, args: RunnerEgressArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("blueprint:index:RunnerEgress", name, None, opts)
        self.policies = [
            k8s.networking.v1.NetworkPolicy(
                f"{name}-{suffix}",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=suffix, namespace=args.namespace),
                spec=as_input(spec),
                opts=pulumi.ResourceOptions(parent=self),
            )
            for suffix, spec in egress_policies(args).items()
        ]
        self.register_outputs({})
