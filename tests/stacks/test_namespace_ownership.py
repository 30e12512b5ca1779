"""On an existing cluster others use too, blueprint takes over no namespace it did not make: every
namespace phase2 makes carries blueprint's ownership label, and phase1 refuses, before it registers
anything, a namespace of one of those names that lacks it (phase2's provider upserts, so it would be
taken over, and a destroy would delete it with what it holds). kind's plans carry no such label."""

from __future__ import annotations

import pytest

from cli import stand_ins
from cli.plan import ProgramFailed, plan
from components.markers import NAMESPACE_OWNER_LABEL
from stacks.phase2 import namespaces
from tests.plans import planned

EXISTING = {"cluster": "existing", "kubeContext": "gke_acme_europe-west1_prod", "domain": "platform.example.com"}
NAMESPACE = "kubernetes:core/v1:Namespace"
STACK, STACK_REFERENCE = "pulumi:pulumi:Stack", "pulumi:pulumi:StackReference"


def planned_anew(stack: str) -> None:
    """Plan `stack` on the existing stand-in cluster as it is now (never from the cache)."""
    plan(stack, {f"blueprint:{key}": value for key, value in EXISTING.items()})


def test_every_namespace_blueprint_makes_on_an_existing_cluster_carries_its_checkouts_label() -> None:
    made = planned("phase2", **EXISTING).find(NAMESPACE)
    assert sorted(namespace["inputs"]["metadata"]["name"] for namespace in made) == sorted(namespaces())
    for namespace in made:
        assert namespace["inputs"]["metadata"]["labels"][NAMESPACE_OWNER_LABEL] == stand_ins.CHECKOUT_ID


@pytest.mark.parametrize("stack", ["phase1", "phase2", "dev"])
def test_no_namespace_on_kind_carries_the_label(stack: str) -> None:
    for namespace in planned(stack).find(NAMESPACE):
        assert NAMESPACE_OWNER_LABEL not in namespace["inputs"]["metadata"].get("labels", {})


def test_a_namespace_of_phase2s_that_is_someone_elses_is_refused_before_anything_is_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(stand_ins.EXISTING_NAMESPACES, "gitlab", {"team": "dev-tools"})
    monkeypatch.setitem(stand_ins.EXISTING_NAMESPACES, "monitoring", {})
    with pytest.raises(ProgramFailed) as refused:
        planned_anew("phase1")
    said = str(refused.value)
    assert "already has the namespace gitlab, which phase2 makes" in said
    assert "monitoring" not in said
    assert "Choose another cluster (blueprint:kubeContext), or remove or rename them" in said
    # The stack itself and its reference to its own outputs read, and make nothing; the data folder is not claimed.
    assert [resource["type"] for resource in refused.value.registered if resource["type"] not in (STACK, STACK_REFERENCE)] == []


def test_a_namespace_another_checkout_labelled_is_refused_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(stand_ins.EXISTING_NAMESPACES, "minio", {NAMESPACE_OWNER_LABEL: "0123456789abcdef"})
    with pytest.raises(ProgramFailed, match="already has the namespace minio"):
        planned_anew("phase1")


def test_a_namespace_a_kept_destroy_left_is_taken_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(stand_ins.EXISTING_NAMESPACES, "gitlab", {NAMESPACE_OWNER_LABEL: stand_ins.CHECKOUT_ID})
    planned_anew("phase1")
