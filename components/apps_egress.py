"""What the apps' pods may reach: egress NetworkPolicies in the namespace CI deploys to.

CI deploys there whatever a default-branch pipeline builds, so its pods are treated as untrusted
code. Every pod there is isolated for egress, then allowed:

- cluster DNS;
- any pod of the same namespace (the guestbook and its Redis);
- the public internet: any IPv4 address but the private, shared, link-local and loopback ranges
  (`runner_egress.NOT_PUBLIC`), which hold kind's pod and service ranges, kind's Docker network (the nodes, their
  kubelets and API server, the mirrors), the host and whatever else is on the laptop's networks.

Nothing else: not Postgres, OpenBao, Valkey, Gitaly, MinIO or GitLab's own pods, the kubelets, the
host, the mirrors or the Kubernetes API. kindnetd enforces it, after DNAT (so a Service's address
counts as the pod or node behind it); why: docs/design/decisions.md, entry 44. IPv6 is not allowed
at all: kind's network is IPv4 unless configured otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from components.runner_egress import DENY_EGRESS, DNS_RULE, network_policies, public_rule

SAME_NAMESPACE_RULE: dict[str, Any] = {"to": [{"podSelector": {}}]}
"""Any pod of the policy's own namespace, on any port."""


@dataclass(frozen=True, kw_only=True)
class AppsEgressArgs:
    namespace: pulumi.Input[str]
    """The apps' namespace (CiAccess's)."""


def egress_policies() -> dict[str, dict[str, Any]]:
    """Each NetworkPolicy's name and spec (see the module docstring)."""
    return {
        "deny-egress": DENY_EGRESS,
        "apps-egress": {"podSelector": {}, "policyTypes": ["Egress"], "egress": [DNS_RULE, SAME_NAMESPACE_RULE, public_rule()]},
    }


class AppsEgress(pulumi.ComponentResource):
    """The egress NetworkPolicies of the apps' namespace; pass the Kubernetes provider in `opts`."""

    def __init__(self, name: str, args: AppsEgressArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("blueprint:index:AppsEgress", name, None, opts)
        self.policies = network_policies(self, name, args.namespace, egress_policies())
        self.register_outputs({})
