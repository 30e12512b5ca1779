"""What CI pods may reach, read from the offline plans' NetworkPolicies (components/runner_egress.py):
per namespace and pod selector, each allowed destination as the policy names it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cli.plan import Plan

POLICY_TYPE = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
ENFORCED_BY = (
    "kind's own CNI, kindnetd, enforces these NetworkPolicies: it runs kube-network-policies (kind v0.31",
    "`images/kindnetd/cmd/kindnetd/main.go`, kube-network-policies v0.8.0; the pinned node image is kind v0.31's",
    "default, whose kindnetd `v20251212-v0.29.0-alpha-105-g20ccfc88` is that code). It judges each connection's first",
    "packet after kube-proxy's DNAT, so the API server is matched by the control plane's address and port 6443. It",
    "fails open: while kindnetd is down, nothing is enforced.",
)


def _labels(selector: Mapping[str, Any] | None) -> str:
    labels = (selector or {}).get("matchLabels") or {}
    return ", ".join(f"{key}={value}" for key, value in sorted(labels.items()))


def _peer(peer: Mapping[str, Any]) -> str:
    if "ipBlock" in peer:
        block = peer["ipBlock"]
        return str(block["cidr"]) + (f" except {', '.join(block['except'])}" if block.get("except") else "")
    namespace = ((peer.get("namespaceSelector") or {}).get("matchLabels") or {}).get("kubernetes.io/metadata.name", "its namespace")
    return f"{namespace} ({_labels(peer.get('podSelector')) or 'any pod'})"


def _rule(rule: Mapping[str, Any]) -> str:
    peers = ", ".join(_peer(peer) for peer in rule.get("to") or []) or "anywhere"
    ports = ", ".join(f"{port.get('protocol', 'TCP')} {port['port']}" for port in rule.get("ports") or []) or "any port"
    return f"{peers}: {ports}"


def egress(plans: Sequence[Plan]) -> list[tuple[str, str, str, str]]:
    """(namespace, pods, may reach, phase) for every planned NetworkPolicy that limits egress."""
    rows = []
    for result in plans:
        for policy in result.find(POLICY_TYPE):
            inputs = policy["inputs"]
            spec = inputs["spec"]
            if "Egress" not in spec.get("policyTypes", []):
                continue
            reaches = "; ".join(_rule(rule) for rule in spec.get("egress") or []) or "nothing"
            pods = _labels(spec.get("podSelector")) or "every pod"
            rows.append((str(inputs["metadata"]["namespace"]), pods, reaches, result.stack))
    return sorted(rows)
