"""Stable storage: each volume a retained PV at a fixed host path, bound to exactly one claim."""

from __future__ import annotations

from components.host_folder import KEEP_SCRIPT, WIPE_SCRIPT
from components.storage import STORAGE_CLASS
from stacks import outputs
from stacks.phase2 import VOLUMES
from tests.plans import COMMAND, planned

PV = "kubernetes:core/v1:PersistentVolume"


def test_every_volume_is_a_retained_pv_bound_to_its_claim_at_a_fixed_path() -> None:
    result = planned("phase2")
    node_path = planned("phase1").outputs[outputs.NODE_DATA_PATH]["value"]
    for volume in VOLUMES:
        spec = result.one(PV, f"storage-{volume.namespace}-{volume.claim}")["inputs"]["spec"]
        assert spec["claimRef"] == {"namespace": volume.namespace, "name": volume.claim}
        assert spec["hostPath"] == {
            "path": f"{node_path}/platform/volumes/{volume.namespace}/{volume.claim}",
            "type": "Directory",
        }
        assert spec["persistentVolumeReclaimPolicy"] == "Retain"
        assert spec["storageClassName"] == STORAGE_CLASS


def test_gitaly_has_its_volume_ahead_of_gitlab() -> None:
    assert planned("phase2").find(PV, "storage-gitlab-repo-data-gitlab-gitaly-0")


def test_the_static_class_provisions_nothing_and_is_not_a_second_default() -> None:
    [storage_class] = planned("phase2").find("kubernetes:storage.k8s.io/v1:StorageClass")
    inputs = storage_class["inputs"]
    assert inputs["provisioner"] == "kubernetes.io/no-provisioner"
    assert "storageclass.kubernetes.io/is-default-class" not in inputs["metadata"].get("annotations", {})


def test_the_platform_folder_exists_before_any_volume() -> None:
    result = planned("phase2")
    folder = result.one(COMMAND, "storage-platform-folder")
    for volume in result.find(PV):
        assert folder["urn"] in volume["dependsOn"], volume["urn"]


def test_volume_folders_are_writable_by_the_pods_users() -> None:
    environment = planned("phase2").one(COMMAND, "storage-platform-folder")["inputs"]["environment"]
    assert environment["SUBFOLDER_MODE"] == "0777"
    assert set(environment["SUBFOLDERS"].split()) == {volume.folder for volume in VOLUMES}


def test_the_platform_folder_is_owned_by_the_phase2_stack() -> None:
    environment = planned("phase2").one(COMMAND, "storage-platform-folder")["inputs"]["environment"]
    assert environment["OWNER"] == "blueprint/phase2"
    assert environment["FOLDER"] == planned("phase1").outputs[outputs.DATA_DIR]["value"] + "/platform"


def test_destroy_keeps_the_platform_data_when_preserve_data_is_true() -> None:
    delete = planned("dev", preserveData="true").one(COMMAND, "storage-platform-folder")["inputs"]["delete"]
    assert delete == KEEP_SCRIPT


def test_destroy_removes_the_platform_data_when_preserve_data_is_false() -> None:
    delete = planned("dev", preserveData="false").one(COMMAND, "storage-platform-folder")["inputs"]["delete"]
    assert delete == WIPE_SCRIPT
