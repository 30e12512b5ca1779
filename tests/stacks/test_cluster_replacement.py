"""A kind cluster replaced under the real engine: nothing that lives in it outlives it.

The cluster's command is replaced delete-first (its name is fixed). Before deleting it, the engine
deletes what would be replaced with it, and only that (pulumi/pulumi pkg/resource/deploy/
step_generator.go, `calculateDependentReplacements`): a resource whose provider is replaced, or
that is `deletedWith` it, or whose provider's Diff says "replace" once every input that depends on
a replaced resource is made unknown. A Kubernetes provider with a `clusterIdentifier` replaces only
when that identifier changes (pulumi-kubernetes provider/pkg/provider/provider.go, `DiffConfig`:
an identifier the same as before drops every other replacement, the unknown kubeconfig's too). So
an identifier given as a plain value never makes the provider part of that set: its resources are
left for after the cluster's delete, and their own delete then fails on a cluster that is gone, on
every run. An identifier that comes through the cluster's own output depends on the cluster, and
the provider, with every resource on it, goes first.

The rule holds on the planned dependency graph with every input's own dependencies (what the
engine reads), recorded here beside the plan: for each resource on a Kubernetes provider whose
kubeconfig is a kind cluster's of the same stack, either it is replaced with that cluster, or a
lease it waits for makes the cluster's delete refuse while it exists (components/kind_cluster.py
`cluster_lease`: dev's own platform, which dev never takes down half-way).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

import cli.plan
from cli.plan import Plan
from components.kind_cluster import RELEASE_SCRIPT
from tests.plans import COMMAND, waits_for

KUBERNETES_PROVIDER = "pulumi:providers:kubernetes"


def with_input_dependencies(monkeypatch: pytest.MonkeyPatch, stack: str, *, preview: bool = False, **config: str) -> Plan:
    """The plan of `stack`, each resource with `inputDependencies`: the URNs each input depends on,
    as the engine records them (`propertyDependencies` of the registration)."""
    record = cli.plan._Recorder._record

    def recorded(self: Any, urn: str, request: Any, **options: Any) -> None:
        record(self, urn, request, **options)
        found = getattr(request, "propertyDependencies", {})
        self.records[urn]["inputDependencies"] = {key: sorted(found[key].urns) for key in found}

    monkeypatch.setattr(cli.plan._Recorder, "_record", recorded)
    return cli.plan.plan(stack, {f"blueprint:{key}": value for key, value in config.items()}, preview=preview)


def provider_urn(resource: Mapping[str, Any]) -> str | None:
    return resource["provider"].rsplit("::", 1)[0] if resource["provider"] else None


def replaced_with(result: Plan, cluster: str) -> set[str]:
    """What the engine deletes before the cluster `cluster` when it replaces it delete-first, as far
    as Kubernetes providers and the resources on them go (`calculateDependentReplacements`, over the
    plan's dependency order)."""
    replaced = {cluster}
    for resource in result.resources:  # dependencies first
        if resource["type"] == KUBERNETES_PROVIDER:
            keyed_on = "clusterIdentifier" if "clusterIdentifier" in resource["inputs"] else "kubeconfig"
            if replaced & set(resource["inputDependencies"].get(keyed_on, [])):
                replaced.add(resource["urn"])
        elif resource["custom"] and (provider_urn(resource) in replaced or resource["deletedWith"] in replaced):
            replaced.add(resource["urn"])
    return replaced - {cluster}


def leases(result: Plan) -> set[str]:
    """The commands whose file makes a cluster's delete refuse while it exists."""
    return {r["urn"] for r in result.find(COMMAND) if r["inputs"].get("delete") == RELEASE_SCRIPT}


@pytest.mark.parametrize("preview", [False, True])
@pytest.mark.parametrize("stack", ["phase1", "dev"])
def test_everything_in_a_kind_cluster_goes_before_the_cluster_a_replacement_deletes(
    monkeypatch: pytest.MonkeyPatch, stack: str, preview: bool
) -> None:
    result = with_input_dependencies(monkeypatch, stack, preview=preview, headlamp="true")
    cluster = result.one(COMMAND, "kind-cluster")["urn"]
    on_the_cluster = {
        r["urn"]
        for r in result.find(KUBERNETES_PROVIDER)
        if cluster in waits_for(result, r["urn"]) and cluster in r["inputDependencies"].get("kubeconfig", [])
    }
    assert on_the_cluster, "no Kubernetes provider on the kind cluster: the rule would hold for nothing"
    first, held = replaced_with(result, cluster), leases(result)
    in_cluster = [r for r in result.resources if provider_urn(r) in on_the_cluster]
    assert in_cluster
    for resource in in_cluster:
        assert resource["urn"] in first or held & waits_for(result, resource["urn"]), (
            f"{resource['urn']} would be left for after the cluster's delete"
        )


def test_headlamps_provider_is_replaced_with_the_cluster_under_the_same_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """The identity stays the digest the stack exports (phase2's provider is keyed on it); only its
    dependency is the cluster's."""
    result = with_input_dependencies(monkeypatch, "phase1", headlamp="true")
    provider = result.one(KUBERNETES_PROVIDER, "kind-kubernetes")
    assert provider["inputs"]["clusterIdentifier"] == result.outputs["clusterId"]["value"]
    assert result.one(COMMAND, "kind-cluster")["urn"] in provider["inputDependencies"]["clusterIdentifier"]
