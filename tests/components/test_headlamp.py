"""Headlamp: optional, pinned from its official repository, on an explicit provider."""

from __future__ import annotations

import versions
from components.headlamp import headlamp_values
from tests.plans import COMMAND, planned

RELEASE = "kubernetes:helm.sh/v3:Release"


def test_headlamp_is_off_by_default_and_needs_no_kubernetes_provider() -> None:
    types = {r["type"] for r in planned("phase1").resources}
    assert RELEASE not in types
    assert "pulumi:providers:kubernetes" not in types


def test_headlamp_chart_is_pinned_from_its_official_repository() -> None:
    inputs = planned("phase1", headlamp="true").one(RELEASE, "headlamp-chart")["inputs"]
    assert (inputs["chart"], inputs["version"]) == ("headlamp", versions.HEADLAMP_CHART_VERSION)
    assert inputs["repositoryOpts"] == {"repo": "https://kubernetes-sigs.github.io/headlamp/"}
    assert inputs["values"] == headlamp_values()


def test_headlamp_runs_on_a_provider_built_from_the_cluster_kubeconfig() -> None:
    result = planned("phase1", headlamp="true")
    provider = result.one("pulumi:providers:kubernetes", "kind-kubernetes")
    assert provider["inputs"]["kubeconfig"] == "[secret]"
    assert result.one(COMMAND, "kind-cluster")["urn"] in provider["dependsOn"]
    assert result.one(RELEASE, "headlamp-chart")["provider"].startswith(provider["urn"] + "::")


def test_headlamp_is_uninstalled_by_its_own_delete_not_dropped_with_the_cluster() -> None:
    """With `deleted_with`, a destroy the cluster's delete refuses (phase2 still on it) would leave
    the release in the cluster and gone from state, and the next `up` could not install it again."""
    assert planned("phase1", headlamp="true").one(RELEASE, "headlamp-chart")["deletedWith"] is None
