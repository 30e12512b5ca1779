"""A small evaluator of NetworkPolicy egress, as the API defines it (networking.k8s.io/v1): a pod
selected by no policy of type Egress reaches anything; a selected one reaches what some rule of a
selecting policy allows, matched on the destination after DNAT (kube-network-policies, what kindnetd
runs): a pod by its namespace and labels, anything else by its address."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

POD_ADDRESS = "10.244.1.7"
"""A pod's address, in kind's pod range (10.244.0.0/16), for a pod destination an ipBlock is matched
against (kube-network-policies matches blocks on the destination address, pods' too)."""


@dataclass(frozen=True)
class Pod:
    namespace: str
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class To:
    """A destination: a pod (by namespace and labels, and its address, POD_ADDRESS unless given) or
    a bare address, a port and a protocol."""

    port: int
    pod: Pod | None = None
    address: str = ""
    protocol: str = "TCP"


def _selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    if selector is None:
        return True
    assert set(selector) <= {"matchLabels"}, f"unsupported selector {selector}"
    return all(labels.get(key) == value for key, value in (selector.get("matchLabels") or {}).items())


def _peer_matches(peer: Mapping[str, Any], to: To, policy_namespace: str) -> bool:
    if "ipBlock" in peer:
        block = peer["ipBlock"]
        address = ipaddress.ip_address(to.address or POD_ADDRESS)
        inside = address in ipaddress.ip_network(block["cidr"])
        return inside and not any(address in ipaddress.ip_network(cidr) for cidr in block.get("except", []))
    if to.pod is None:
        return False
    namespace_labels = {"kubernetes.io/metadata.name": to.pod.namespace}
    if "namespaceSelector" in peer:
        in_namespace = _selects(peer["namespaceSelector"], namespace_labels)
    else:
        in_namespace = to.pod.namespace == policy_namespace
    return in_namespace and _selects(peer.get("podSelector"), to.pod.labels)


def _port_matches(port: Mapping[str, Any], to: To) -> bool:
    return port.get("protocol", "TCP") == to.protocol and ("port" not in port or port["port"] == to.port)


def _rule_allows(rule: Mapping[str, Any], to: To, policy_namespace: str) -> bool:
    ports, peers = rule.get("ports") or [], rule.get("to") or []
    return (not ports or any(_port_matches(port, to) for port in ports)) and (
        not peers or any(_peer_matches(peer, to, policy_namespace) for peer in peers)
    )


def may_reach(policies: Iterable[tuple[str, Mapping[str, Any]]], source: Pod, to: To) -> bool:
    """Whether `source` may open a connection to `to`, under `policies` (each: namespace, spec)."""
    selecting = [
        (namespace, spec)
        for namespace, spec in policies
        if namespace == source.namespace and "Egress" in spec.get("policyTypes", []) and _selects(spec["podSelector"], source.labels)
    ]
    if not selecting:
        return True
    return any(_rule_allows(rule, to, namespace) for namespace, spec in selecting for rule in spec.get("egress") or [])
