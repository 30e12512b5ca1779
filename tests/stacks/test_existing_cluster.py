"""The phase stacks on an existing cluster (`blueprint:cluster=existing`): phase1 makes nothing on
it, nor a kind cluster or mirror, and publishes what it read, in the same shape as kind's outputs;
phase2's one Kubernetes provider takes that context's kubeconfig and the cluster's identity, and
upserts (kept claims and namespaces are taken over again); a destroy deletes nothing remote; and
kind's plans stay as they were."""

from __future__ import annotations

from typing import Any

import pytest

from cli import stand_ins
from cli.cluster_change import planned_cluster_id
from cli.lifecycle import destroy_view
from cli.plan import RUN_TOKEN, Plan
from components import existing_cluster
from components.scripts import calls
from stacks import outputs
from tests.plans import COMMAND, planned, planned_as

EXISTING = {"cluster": "existing", "kubeContext": "gke_acme_europe-west1_prod", "domain": "platform.example.com"}
PROVIDER = "pulumi:providers:kubernetes"
STACK_REFERENCE = "pulumi:pulumi:StackReference"


def existing_plan(stack: str, **config: str) -> Plan:
    return planned(stack, **EXISTING, **config)


def scripts(resource: dict[str, Any]) -> list[str]:
    return [str(resource["inputs"].get(key, "")) for key in ("create", "update", "delete")]


@pytest.mark.parametrize("mode", ["up", "preview"])
def test_phase1_on_an_existing_cluster_makes_nothing_but_its_data_folder_on_this_machine(mode: str) -> None:
    result = planned_as(mode, "phase1", **EXISTING)
    made = sorted((resource["type"], resource["name"]) for resource in result.resources if resource["custom"])
    assert made == [(COMMAND, "data-folder"), (STACK_REFERENCE, "organization/blueprint/phase1")]
    assert not any(
        resource["type"].startswith(("blueprint:index:KindCluster", "blueprint:index:ImageCache")) for resource in result.resources
    )


def test_phase1_on_an_existing_cluster_runs_no_kind_nor_docker() -> None:
    """Its one command claims the data folder, which no node mounts: no subfolder of a pod's, so the
    claim's fallback container (for pod-owned folders) has nothing to run for."""
    result = existing_plan("phase1")
    (folder,) = result.find(COMMAND)
    assert folder["inputs"]["environment"]["SUBFOLDERS"] == ""
    for text in scripts(folder):
        assert not calls(text, "kind")
    commands = [str(invoke["command"]) for invoke in result.invokes if invoke["token"] == RUN_TOKEN]
    assert sorted(commands) == sorted([*existing_cluster.READS.values(), existing_cluster.NAMESPACES_COMMAND])
    assert all(command.startswith("kubectl ") for command in commands)


def test_phase1_on_an_existing_cluster_reads_it_with_the_configured_context_alone() -> None:
    for invoke in existing_plan("phase1").invokes:
        assert invoke["environment"] == {"KUBE_CONTEXT": EXISTING["kubeContext"]}


def test_phase1_publishes_every_output_of_kinds_and_what_it_read_of_the_existing_cluster() -> None:
    result = existing_plan("phase1", storageClass="premium-rwo", exposure="nodePort", jobNodeSelector="pool=ci")
    assert set(result.outputs) == {*outputs.PHASE1, *outputs.PHASE1_EXISTING, outputs.BLUEPRINT_VERSION}
    value = {key: output["value"] for key, output in result.outputs.items()}
    assert not any(output["secret"] for output in result.outputs.values())
    assert value[outputs.CLUSTER_TYPE] == "existing"
    assert value[outputs.CLUSTER_ID] == stand_ins.EXISTING_CLUSTER_UID
    assert (value[outputs.KUBE_CONTEXT], value[outputs.CLUSTER_NAME]) == (EXISTING["kubeContext"], "")
    assert value[outputs.KUBERNETES_VERSION] == stand_ins.EXISTING_CLUSTER_VERSION
    assert (value[outputs.STORAGE_CLASS], value[outputs.STORAGE_CLASS_USED]) == ("premium-rwo", "premium-rwo")
    assert (value[outputs.EXPOSURE], value[outputs.JOB_NODE_SELECTOR], value[outputs.GITLAB_NODE_SELECTOR]) == (
        "nodePort",
        {"pool": "ci"},
        {},
    )
    assert value[outputs.API_SERVER_ENDPOINTS] == [{"address": "10.96.0.1", "port": 443}]
    assert (value[outputs.NODE_LABEL_KEY], value[outputs.OPENBAO_NODE_PORT], value[outputs.IMAGE_MIRRORS]) == ("", 0, {})


def test_an_empty_storage_class_publishes_the_clusters_default_as_the_one_in_use() -> None:
    value = existing_plan("phase1").outputs
    assert (value[outputs.STORAGE_CLASS]["value"], value[outputs.STORAGE_CLASS_USED]["value"]) == ("", stand_ins.EXISTING_DEFAULT_CLASS)


def test_phase1_on_kind_publishes_none_of_the_existing_clusters_outputs() -> None:
    assert not set(outputs.PHASE1_EXISTING) & set(planned("phase1").outputs)


@pytest.mark.parametrize("preserve", ["true", "false"])
def test_a_destroy_of_phase1_on_an_existing_cluster_deletes_nothing_remote(preserve: str) -> None:
    """The data folder is this machine's (wiped or kept as preserveData says); the cluster is not in the graph."""
    result = destroy_view(existing_plan("phase1", preserveData=preserve))
    (folder,) = (resource for resource in result.resources if resource["type"] not in ("pulumi:pulumi:Stack", STACK_REFERENCE))
    assert folder["name"] == "data-folder"
    assert not any(calls(text, command) for text in scripts(folder) for command in ("kubectl", "kind"))
    assert result.folders == [{"path": result.outputs[outputs.DATA_DIR]["value"], "destroy": "keep" if preserve == "true" else "wipe"}]


@pytest.mark.parametrize("mode", ["up", "preview"])
def test_phase2s_provider_takes_the_contexts_kubeconfig_as_a_secret_and_the_clusters_identity(mode: str) -> None:
    result = planned_as(mode, "phase2", **EXISTING)
    (provider,) = result.find(PROVIDER, "kubernetes")
    assert provider["inputs"]["context"] == EXISTING["kubeContext"]
    assert provider["inputs"]["clusterIdentifier"] == stand_ins.EXISTING_CLUSTER_UID
    assert provider["inputs"]["kubeconfig"] == "[secret]"
    assert provider["inputs"]["upsertExistingObjects"] == "true"
    kubeconfig_reads = [invoke for invoke in result.invokes if invoke.get("command") == existing_cluster.KUBECONFIG_COMMAND]
    assert [invoke["environment"] for invoke in kubeconfig_reads] == [{"KUBE_CONTEXT": EXISTING["kubeContext"]}]
    assert not any("kind get kubeconfig" in str(invoke.get("command")) for invoke in result.invokes)


@pytest.mark.parametrize("stack", ["phase2", "dev"])
def test_kinds_provider_neither_names_a_context_nor_upserts(stack: str) -> None:
    (provider,) = planned(stack).find(PROVIDER, "kubernetes")
    assert set(provider["inputs"]) == {"kubeconfig", "clusterIdentifier"}


def test_phase3_plans_on_an_existing_cluster() -> None:
    assert existing_plan("phase3").resources


def test_a_cluster_change_is_never_planned_for_an_existing_cluster() -> None:
    """`blueprint up` replaces a kind cluster whose identity a config change moves; an existing cluster's
    identity is read from it, never derived from the config, and blueprint never replaces it."""
    config = {f"blueprint:{key}": value for key, value in EXISTING.items()}
    assert planned_cluster_id(config) is None
    assert planned_cluster_id({}) is not None
