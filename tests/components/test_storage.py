"""Stable storage: each volume a retained PV at a fixed host path, bound to exactly one claim."""

from __future__ import annotations

from typing import Any

import pytest

from cli import stand_ins
from components.host_folder import DELETE_SCRIPT, PRESERVE_DATA
from components.storage import STORAGE_CLASS
from stacks import outputs
from stacks.phase2 import VOLUMES
from tests.plans import COMMAND, kind_config_of, planned

PV = "kubernetes:core/v1:PersistentVolume"


def test_every_volume_is_a_retained_pv_bound_to_its_claim_at_a_fixed_path() -> None:
    result = planned("phase2")
    node_path = planned("phase1").outputs[outputs.NODE_DATA_PATH]["value"]
    for volume in VOLUMES:
        spec = result.one(PV, f"storage-{volume.namespace}-{volume.claim}")["inputs"]["spec"]
        assert spec["claimRef"] == {"namespace": volume.namespace, "name": volume.claim}
        assert spec["hostPath"] == {
            "path": f"{node_path}/volumes/platform/{volume.namespace}/{volume.claim}",
            "type": "Directory",
        }
        assert spec["persistentVolumeReclaimPolicy"] == "Retain"
        assert spec["storageClassName"] == STORAGE_CLASS


def test_every_volume_is_used_only_on_the_nodes_that_mount_the_volumes_folder() -> None:
    """A pod scheduled on a node without the mount would find no folder (`type: Directory`) and
    never start: each PV's node affinity picks exactly the nodes whose kind config mounts it."""
    nodes = kind_config_of(planned("phase1", runnerNodes="2"))["nodes"]
    volumes = planned("phase1").outputs[outputs.VOLUMES_NODE_PATH]["value"]
    mounting = [volumes in {m["containerPath"] for m in node["extraMounts"]} for node in nodes]
    for resource in planned("phase2").find(PV):
        [term] = resource["inputs"]["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
        picked = [all(selects(node.get("labels", {}), rule) for rule in term["matchExpressions"]) for node in nodes]
        assert picked == mounting, resource["name"]


def selects(labels: dict[str, str], rule: dict[str, Any]) -> bool:
    assert rule["operator"] == "In"
    return labels.get(rule["key"]) in rule["values"]


def test_gitaly_has_its_volume_ahead_of_gitlab() -> None:
    assert planned("phase2").find(PV, "storage-gitlab-repo-data-gitlab-gitaly-0")


def test_the_static_class_provisions_nothing_and_is_not_a_second_default() -> None:
    [storage_class] = planned("phase2").find("kubernetes:storage.k8s.io/v1:StorageClass")
    inputs = storage_class["inputs"]
    assert inputs["provisioner"] == "kubernetes.io/no-provisioner"
    assert "storageclass.kubernetes.io/is-default-class" not in inputs["metadata"].get("annotations", {})


def test_the_volumes_folder_exists_before_any_volume() -> None:
    result = planned("phase2")
    folder = result.one(COMMAND, "storage-volumes-folder")
    for volume in result.find(PV):
        assert folder["urn"] in volume["dependsOn"], volume["urn"]


def test_each_volume_folder_belongs_to_its_pods_user_with_mode_0700() -> None:
    environment = planned("phase2").one(COMMAND, "storage-volumes-folder")["inputs"]["environment"]
    lines = environment["SUBFOLDERS"].splitlines()
    assert sorted(lines) == sorted(f"{v.folder} 0700 {v.owner[0]}:{v.owner[1]}" for v in VOLUMES)


@pytest.mark.parametrize("name", ["storage-platform-folder", "storage-volumes-folder"])
def test_both_platform_folders_are_owned_by_the_phase2_stack_of_this_checkout(name: str) -> None:
    environment = planned("phase2").one(COMMAND, name)["inputs"]["environment"]
    assert environment["OWNER"] == f"blueprint/phase2@{stand_ins.CHECKOUT_ID}"


def test_the_platform_folder_is_beside_the_volumes_the_nodes_mount_not_inside() -> None:
    data_dir = planned("phase1").outputs[outputs.DATA_DIR]["value"]
    result = planned("phase2")
    assert result.one(COMMAND, "storage-platform-folder")["inputs"]["environment"]["FOLDER"] == f"{data_dir}/platform"
    assert result.one(COMMAND, "storage-volumes-folder")["inputs"]["environment"]["FOLDER"] == f"{data_dir}/volumes/platform"


@pytest.mark.parametrize("name", ["storage-platform-folder", "storage-volumes-folder"])
def test_destroy_keeps_the_platform_data_when_preserve_data_is_true(name: str) -> None:
    inputs = planned("dev", preserveData="true").one(COMMAND, name)["inputs"]
    assert (inputs["delete"], inputs["environment"][PRESERVE_DATA]) == (DELETE_SCRIPT, "true")


@pytest.mark.parametrize("name", ["storage-platform-folder", "storage-volumes-folder"])
def test_destroy_removes_the_platform_data_when_preserve_data_is_false(name: str) -> None:
    inputs = planned("dev", preserveData="false").one(COMMAND, name)["inputs"]
    assert (inputs["delete"], inputs["environment"][PRESERVE_DATA]) == (DELETE_SCRIPT, "false")


def test_in_dev_both_platform_folders_are_claimed_after_the_data_folder() -> None:
    result = planned("dev")
    data_folder = result.one(COMMAND, "kind-data-folder")["urn"]
    for name in ("storage-platform-folder", "storage-volumes-folder"):
        assert data_folder in result.one(COMMAND, name)["dependsOn"], name
