"""Gateway API CRDs: one pinned source, experimental channel, Envoy Gateway's CRDs included."""

from __future__ import annotations

import pulumi

import versions
from components.gateway_crds import retained
from tests.plans import planned

CHART = "kubernetes:helm.sh/v4:Chart"


def test_one_pinned_chart_renders_the_experimental_channel_and_envoys_crds() -> None:
    [chart] = planned("phase2").find("kubernetes:helm.sh/v4:Chart")
    inputs = chart["inputs"]
    assert (inputs["chart"], inputs["version"]) == (versions.GATEWAY_CRDS_CHART, versions.GATEWAY_CRDS_CHART_VERSION)
    assert inputs["values"] == {"crds": {"envoyGateway": {"enabled": True}, "gatewayAPI": {"channel": "experimental", "enabled": True}}}


def test_a_kept_chart_keeps_every_object_it_makes_on_destroy() -> None:
    """On an existing cluster, deleting a CRD would delete every object of it, whoever made it: the
    transform the kept chart hands its objects keeps each one, and what else it was given."""
    given = pulumi.ResourceOptions(ignore_changes=["spec"])
    kept = retained(pulumi.ResourceTransformArgs(True, "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition", "x", {"a": 1}, given))
    assert kept.opts is not None
    assert (kept.props, kept.opts.retain_on_delete, kept.opts.ignore_changes) == ({"a": 1}, True, ["spec"])


def test_the_chart_is_kept_on_an_existing_cluster_alone() -> None:
    existing = planned("phase2", cluster="existing", kubeContext="ctx")
    assert existing.one(CHART, "gateway-crds-chart")["retainOnDelete"] is True
    assert planned("phase2").one(CHART, "gateway-crds-chart")["retainOnDelete"] is False
