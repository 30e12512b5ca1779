"""Whether an existing cluster enforces NetworkPolicy: the Runners' isolation (components/runner_egress.py)
is NetworkPolicies, which the API server stores on any cluster and only the network plugin enforces.

No API says whether one does. What can be told cheaply is whether a plugin known to enforce them runs:
its DaemonSet, by name, in any namespace (an operator may install it outside kube-system), and k3s's
embedded policy controller (on by default, `--disable-network-policy` turns it off). EKS's VPC CNI
enforces only with its policy agent on (`--enable-network-policy=true` on the aws-node DaemonSet's
agent container; docs.aws.amazon.com/eks/latest/userguide/cni-network-policy.html); GKE without
Dataplane V2 or network policy enforcement runs none of these. So no sign is a warning, never a
failure: a plugin not listed here may enforce too.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

ENFORCING_DAEMONSETS = {
    "calico-node": "Calico",
    "canal": "Canal (Calico's policy)",
    "cilium": "Cilium",
    "anetd": "GKE Dataplane V2",
    "antrea-agent": "Antrea",
    "kube-router": "kube-router",
    "weave-net": "Weave Net",
    "azure-npm": "Azure Network Policy Manager",
    "ovnkube-node": "OVN-Kubernetes",
}
"""DaemonSet names of network plugins (or their policy engines) that enforce NetworkPolicy as installed."""
AWS_NODE = "aws-node"
AWS_POLICY_ON = "--enable-network-policy=true"
K3S_SCHEME = "k3s"


def enforcer(daemonsets: Any, provider_schemes: Iterable[str]) -> str | None:
    """What enforces NetworkPolicy, as `kubectl get daemonsets --all-namespaces -o json` (`daemonsets`)
    and the nodes' providerID schemes show it; None: no sign of anything that does.
    """
    items = daemonsets.get("items") if isinstance(daemonsets, dict) else None
    for item in items if isinstance(items, list) else []:
        metadata = item.get("metadata") or {}
        name, namespace = str(metadata.get("name", "")), str(metadata.get("namespace", ""))
        if name in ENFORCING_DAEMONSETS:
            return f"{ENFORCING_DAEMONSETS[name]} (DaemonSet {namespace}/{name})"
        containers = ((item.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers") or []
        if name == AWS_NODE and any(AWS_POLICY_ON in (container.get("args") or []) for container in containers):
            return f"the VPC CNI's network policy agent (DaemonSet {namespace}/{name}, {AWS_POLICY_ON})"
    if K3S_SCHEME in provider_schemes:
        return "k3s's embedded network policy controller (unless k3s runs with --disable-network-policy)"
    return None
