"""Gateway API CRDs: one pinned source, experimental channel, Envoy Gateway's CRDs included."""

from __future__ import annotations

import versions
from tests.plans import planned


def test_one_pinned_chart_renders_the_experimental_channel_and_envoys_crds() -> None:
    [chart] = planned("phase2").find("kubernetes:helm.sh/v4:Chart")
    inputs = chart["inputs"]
    assert (inputs["chart"], inputs["version"]) == (versions.GATEWAY_CRDS_CHART, versions.GATEWAY_CRDS_CHART_VERSION)
    assert inputs["values"] == {"crds": {"envoyGateway": {"enabled": True}, "gatewayAPI": {"channel": "experimental", "enabled": True}}}
