"""MinIO: the last published image, credentials that survive the stack, every GitLab bucket."""

from __future__ import annotations

from typing import Any

import versions
from components.minio import BUCKETS
from stacks import outputs
from tests.plans import planned


def buckets_container() -> dict[str, Any]:
    [job] = planned("phase2").find("kubernetes:batch/v1:Job")
    [container] = job["inputs"]["spec"]["template"]["spec"]["containers"]
    return dict(container)


def test_server_runs_the_pinned_quay_image_on_its_static_volume() -> None:
    spec = planned("phase2").one("kubernetes:apps/v1:Deployment", "minio-server")["inputs"]["spec"]
    [container] = spec["template"]["spec"]["containers"]
    assert container["image"] == versions.MINIO_IMAGE
    assert container["image"].startswith("quay.io/minio/minio:RELEASE.")
    assert spec["template"]["spec"]["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": "minio-data"}}]
    assert spec["strategy"] == {"type": "Recreate"}


def test_root_credentials_are_kept_with_the_data_not_the_stack() -> None:
    result = planned("phase2")
    data_dir = planned("phase1").outputs[outputs.DATA_DIR]["value"]
    for name, file in (("minio-root-user", "minio-root-user"), ("minio-root-password", "minio-root-password")):
        inputs = result.one("pulumi-python:dynamic/blueprint:HostSecret", name)["inputs"]
        assert inputs["path"] == f"{data_dir}/platform/secrets/{file}"


def test_every_gitlab_bucket_is_created_idempotently() -> None:
    args = buckets_container()["args"]
    assert args[:2] == ["mb", "--ignore-existing"]
    assert sorted(args[2:]) == sorted(f"platform/{bucket}" for bucket in BUCKETS)
    for bucket in ("git-lfs", "gitlab-artifacts", "gitlab-uploads", "gitlab-packages", "gitlab-backups", "tmp", "registry",
                   "gitlab-terraform-state", "gitlab-ci-secure-files", "gitlab-pages", "gitlab-dependency-proxy",
                   "gitlab-mr-diffs", "runner-cache"):  # fmt: skip
        assert f"platform/{bucket}" in args


def test_the_bucket_job_takes_credentials_from_the_secret_not_from_its_spec() -> None:
    env = {variable["name"]: variable for variable in buckets_container()["env"]}
    assert env["MINIO_ROOT_PASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": "minio-root", "key": "MINIO_ROOT_PASSWORD"}
    assert env["MC_HOST_platform"]["value"] == "http://$(MINIO_ROOT_USER):$(MINIO_ROOT_PASSWORD)@minio.minio.svc.cluster.local:9000"
