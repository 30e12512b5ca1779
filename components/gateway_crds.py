"""The cluster's one source of Gateway API CRDs, and Envoy Gateway's.

Envoy Gateway's CRD-only chart, pinned to the Envoy Gateway GitLab's chart bundles, renders the
*experimental* Gateway API channel (which still serves TCPRoute v1alpha2, for GitLab's SSH route)
and Envoy's own CRDs (EnvoyProxy, EnvoyPatchPolicy, ...). Every other release that would ship
Gateway API CRDs skips them (`skip_crds`), so the cluster never holds two versions, which the
Gateway API's safe-upgrade admission policy would refuse.

The chart keeps its CRDs under `templates/`, and Envoy documents installing it with `helm template
| kubectl apply --server-side` because of their size: `helm.v4.Chart` does exactly that (renders on
the client, applies each object server-side), with no Helm release record to outgrow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

import versions


@dataclass(frozen=True, kw_only=True)
class GatewayCrdsArgs:
    channel: str = "experimental"
    """Gateway API channel: GitLab's TCPRoute v1alpha2 needs the experimental one."""
    kept: bool = False
    """Leave the CRDs in the cluster on destroy: an existing cluster's (`blueprint:cluster=existing`),
    where deleting a CRD would delete every object of it, cluster-wide, whoever made it."""


def retained(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult:
    """A resource kept in the cluster on destroy. A transform, since the chart's objects do not take
    the chart's own `retain_on_delete` (pulumi/pulumi-kubernetes#3065, closed as won't fix), and transforms
    reach a packaged component's children (https://www.pulumi.com/docs/iac/concepts/resources/options/transforms/).
    """
    return pulumi.ResourceTransformResult(
        args.props, pulumi.ResourceOptions.merge(args.opts, pulumi.ResourceOptions(retain_on_delete=True))
    )


def gateway_crds_values(args: GatewayCrdsArgs) -> dict[str, Any]:
    return {"crds": {"gatewayAPI": {"enabled": True, "channel": args.channel}, "envoyGateway": {"enabled": True}}}


class GatewayCrds(pulumi.ComponentResource):
    """The Gateway API and Envoy Gateway CRDs."""

    chart: k8s.helm.v4.Chart
    """What depends on the CRDs depends on this."""

    def __init__(self, name: str, args: GatewayCrdsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("blueprint:index:GatewayCrds", name, None, opts)
        self.chart = k8s.helm.v4.Chart(
            f"{name}-chart",
            chart=versions.GATEWAY_CRDS_CHART,
            version=versions.GATEWAY_CRDS_CHART_VERSION,
            values=gateway_crds_values(args),
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=True, transforms=[retained])
            if args.kept
            else pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({})
