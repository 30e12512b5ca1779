"""Headlamp: optional, pinned from its official repository, on an explicit provider, and read-only
unless asked: its login token is its ServiceAccount's, which the chart binds to cluster-admin."""

from __future__ import annotations

from typing import Any

import versions
from components.headlamp import HeadlampArgs, headlamp_values
from tests.plans import COMMAND, planned
from tests.pod_security import violations

RELEASE = "kubernetes:helm.sh/v3:Release"
BINDING = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"


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


def _binding(**config: str) -> dict[str, Any]:
    return dict(planned("phase1", headlamp="true", **config).one(BINDING, "headlamp-role-binding")["inputs"])


def test_headlamps_account_is_bound_to_the_read_only_view_role_by_default() -> None:
    assert _binding()["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}


def test_headlamps_account_is_cluster_admin_only_when_asked() -> None:
    assert _binding(headlampAdmin="true")["roleRef"]["name"] == "cluster-admin"


def test_headlamps_chart_makes_no_role_binding_of_its_own() -> None:
    """Kubernetes refuses to change a binding's roleRef: a Helm upgrade changing the chart's binding
    (`headlamp-admin`, bound to cluster-admin by earlier versions) would fail. With `create: false`
    Helm deletes that binding on upgrade instead."""
    values = planned("phase1", headlamp="true").one(RELEASE, "headlamp-chart")["inputs"]["values"]
    assert values["clusterRoleBinding"] == {"create": False}


def test_headlamps_role_binding_is_named_for_its_role_so_a_toggle_replaces_it() -> None:
    """A new name is a new object: the toggle creates it and deletes the old one, never changing a
    roleRef in place; neither name is the chart's own `headlamp-admin`."""
    names = {role: _binding(headlampAdmin=flag)["metadata"]["name"] for role, flag in (("view", "false"), ("cluster-admin", "true"))}
    assert names == {"view": "headlamp-view", "cluster-admin": "headlamp-cluster-admin"}


def test_headlamps_role_binding_binds_the_charts_service_account() -> None:
    """The chart names its ServiceAccount after its fullname (`fullnameOverride`) when
    `serviceAccount.name` is empty (chart 0.45.0 templates/_helpers.tpl `headlamp.serviceAccountName`)."""
    values = headlamp_values()
    assert not values.get("serviceAccount", {}).get("name")
    namespace = HeadlampArgs().namespace
    assert _binding()["subjects"] == [{"kind": "ServiceAccount", "name": values["fullnameOverride"], "namespace": namespace}]


def test_headlamps_role_binding_is_on_the_clusters_provider() -> None:
    result = planned("phase1", headlamp="true")
    provider = result.one("pulumi:providers:kubernetes", "kind-kubernetes")
    assert result.one(BINDING, "headlamp-role-binding")["provider"].startswith(provider["urn"] + "::")


def test_headlamps_namespace_is_ours_with_its_pod_security_level_before_the_release() -> None:
    """A namespace Helm creates carries no labels: Pod Security would not apply to it."""
    result = planned("phase1", headlamp="true")
    namespace = result.one("kubernetes:core/v1:Namespace", "headlamp-namespace")
    release = result.one(RELEASE, "headlamp-chart")
    assert namespace["inputs"]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert not release["inputs"].get("createNamespace")
    assert namespace["urn"] in release["dependsOn"]


def test_headlamps_container_meets_restricted() -> None:
    """The chart puts `securityContext` on its only container (templates/deployment.yaml, chart 0.45.0)."""
    context = headlamp_values()["securityContext"]
    pod = {"spec": {"containers": [{"name": "headlamp", "securityContext": context}]}}
    assert violations(pod, "restricted") == []


def test_headlamp_asks_every_visitor_for_a_token_of_their_own() -> None:
    """Served at https://headlamp.<domain>, it must not log anyone in as its own account: in-cluster its
    context carries no credential unless `unsafeUseServiceAccountToken` is on (headlamp backend
    pkg/kubeconfig GetInClusterContext), so the chart value is pinned off, and no extra flag sets it."""
    values = headlamp_values()
    assert values["config"]["unsafeUseServiceAccountToken"] is False
    assert not any("service-account-token" in arg for arg in values["config"].get("extraArgs", []))
