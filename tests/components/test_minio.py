"""MinIO: the last published image, credentials that survive the stack, every GitLab bucket, and one
user per consumer allowed only its own buckets; the root credentials never leave MinIO."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import pytest

import versions
from cli import report
from cli.plan import Plan
from components import minio as mn
from components.minio import CONSUMERS, MinioArgs, S3Credentials, bucket_policy, lookup_credentials
from components.storage import Provisioned, Volume
from stacks import outputs
from tests.cli.fake_runner import PHASE2 as PHASE2_OUTPUTS
from tests.plans import planned
from tests.pod_security import violations

HOST_SECRET = "pulumi-python:dynamic/blueprint:HostSecret"
JOB = "kubernetes:batch/v1:Job"
ROOT_SECRETS = ("minio-root-user", "minio-root-password")


def job_pod(result: Plan | None = None) -> dict[str, Any]:
    [job] = (result or planned("phase2")).find(JOB, "minio-buckets")
    return dict(job["inputs"]["spec"]["template"])


def steps() -> list[dict[str, Any]]:
    """The Job's containers in the order they run: the init containers, then the last one."""
    spec = job_pod()["spec"]
    return [*spec["initContainers"], *spec["containers"]]


def planned_policies() -> dict[str, dict[str, Any]]:
    data = planned("phase2").one("kubernetes:core/v1:ConfigMap", "minio-policies")["inputs"]["data"]
    return {name.removesuffix(".json"): json.loads(text) for name, text in data.items()}


def granted_buckets(policy: dict[str, Any]) -> set[str]:
    """The buckets a policy of bucket_policy's shape allows, checking that it allows them whole."""
    [statement] = [statement for statement in policy["Statement"] if statement["Effect"] == "Allow"]
    assert (statement["Effect"], statement["Action"]) == ("Allow", ["s3:*"])
    resources = set(statement["Resource"])
    buckets = {arn.removeprefix("arn:aws:s3:::") for arn in resources if "/" not in arn}
    assert resources == {f"arn:aws:s3:::{b}" for b in buckets} | {f"arn:aws:s3:::{b}/*" for b in buckets}
    return buckets


def _within(result: Plan, urn: str, ancestor: str) -> bool:
    parents = {r["urn"]: r["parent"] for r in result.resources}
    current: str | None = urn
    while current is not None:
        if current == ancestor:
            return True
        current = parents.get(current)
    return False


def test_server_runs_the_pinned_quay_image_on_its_static_volume() -> None:
    spec = planned("phase2").one("kubernetes:apps/v1:Deployment", "minio-server")["inputs"]["spec"]
    [container] = spec["template"]["spec"]["containers"]
    assert container["image"] == versions.MINIO_IMAGE
    assert container["image"].startswith("quay.io/minio/minio:RELEASE.")
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "minio-data"}} in spec["template"]["spec"]["volumes"]
    assert spec["strategy"] == {"type": "Recreate"}


def test_root_credentials_are_kept_with_the_data_not_the_stack() -> None:
    result = planned("phase2")
    data_dir = planned("phase1").outputs[outputs.DATA_DIR]["value"]
    for name in ROOT_SECRETS:
        inputs = result.one(HOST_SECRET, name)["inputs"]
        assert inputs["path"] == f"{data_dir}/platform/secrets/{name}"


def test_each_consumers_secret_key_is_kept_with_the_data_beside_the_root_ones() -> None:
    """MinIO keeps its users in its (preserved) data: a key generated again by a new stack would not
    match it until the Job ran again."""
    result = planned("phase2")
    data_dir = planned("phase1").outputs[outputs.DATA_DIR]["value"]
    for consumer in ("gitlab", "runner-cache"):
        inputs = result.one(HOST_SECRET, f"minio-user-{consumer}")["inputs"]
        assert inputs["path"] == f"{data_dir}/platform/secrets/minio-user-{consumer}"
        assert inputs["length"] >= 16


@pytest.mark.parametrize("stack", ["phase2", "dev"])
def test_no_resource_outside_minio_receives_its_root_credentials(stack: str) -> None:
    """A resource that is handed an Output lists its resource among its dependencies: only the
    `minio-root` Secret, inside the Minio component, and its OpenBao mirror may take the root
    HostSecrets, and nothing outside the component may take that Secret."""
    result = planned(stack)
    component = result.one("blueprint:index:Minio", "minio")["urn"]
    roots = {result.one(HOST_SECRET, name)["urn"] for name in ROOT_SECRETS}
    root_secret = result.one("kubernetes:core/v1:Secret", "minio-root")["urn"]
    mirror = result.one("pulumi-python:dynamic/openbao:KvSecret", "openbao-kv-minio-root")["urn"]
    for resource in result.resources:
        taken = set(resource["dependsOn"])
        if taken & roots:
            # And its mirror in OpenBao, which holds every generated credential (credentials.py).
            assert resource["urn"] in (root_secret, mirror), f"{resource['urn']} receives MinIO's root credentials"
        if root_secret in taken:
            assert _within(result, resource["urn"], component), f"{resource['urn']} receives MinIO's root Secret"


def test_each_consumer_receives_its_own_users_key_and_no_other() -> None:
    """GitLab's key reaches only GitLab's resources, the runner cache's only the runners' (and each
    its own vault entry, and MinIO's users Secret)."""
    result = planned("phase2")
    home = {"gitlab": "blueprint:index:GitLab", "runner-cache": "blueprint:index:Runner"}
    users_secret = result.one("kubernetes:core/v1:Secret", "minio-users")["urn"]
    for consumer, component_type in home.items():
        key = result.one(HOST_SECRET, f"minio-user-{consumer}")["urn"]
        takers = [r for r in result.resources if key in r["dependsOn"] and r["urn"] != users_secret]
        allowed = {c["urn"] for c in result.find(component_type)}
        kv = f"openbao-kv-minio-{consumer}"
        for taker in takers:
            assert taker["name"] == kv or any(_within(result, taker["urn"], urn) for urn in allowed), (
                f"{taker['urn']} receives {consumer}'s MinIO key"
            )
        in_home = {taker["name"] for taker in takers if taker["name"] != kv}
        assert in_home, f"nothing of {component_type} receives {consumer}'s MinIO key"
        assert kv in {taker["name"] for taker in takers}
    gitlab = {r["name"] for r in result.resources if result.one(HOST_SECRET, "minio-user-gitlab")["urn"] in r["dependsOn"]}
    assert {"gitlab-object-storage", "gitlab-registry-storage", "gitlab-backup-storage"} <= gitlab


def test_the_vault_holds_each_consumers_minio_user_and_the_root_pair_apart() -> None:
    """Every generated credential is in OpenBao (credentials.py): each user at its own path, the root pair at minio/root."""
    writes = {r["inputs"]["path"]: r["inputs"]["data"] for r in planned("phase2").find("pulumi-python:dynamic/openbao:KvSecret")}
    minio = {path: data for path, data in writes.items() if path.startswith("minio")}
    assert set(minio) == {"minio/gitlab", "minio/runner-cache", "minio/root"}
    for path, data in minio.items():
        assert set(data) == ({"user", "password", "endpoint"} if path == "minio/root" else {"accessKey", "secretKey", "endpoint"})


def test_the_summary_points_to_the_list_of_every_credential() -> None:
    text = report.summary({"phase1": {}, "phase2": PHASE2_OUTPUTS, "phase3": {}})
    assert "uv run blueprint secrets" in text
    assert not re.findall(r"secret/(minio[\w/-]*)", text)  # `blueprint secrets` names each path, from the catalogue


def test_each_consumers_policy_grants_only_its_own_buckets() -> None:
    policies = planned_policies()
    assert set(policies) == {"gitlab", "runner-cache"}
    assert granted_buckets(policies["runner-cache"]) == {"runner-cache"}
    assert granted_buckets(policies["gitlab"]) == set(minio_args(dict(CONSUMERS)).buckets) - {"runner-cache"}


def test_bucket_policy_allows_s3_on_the_buckets_and_their_objects_only() -> None:
    policy = json.loads(bucket_policy(["a-bucket", "another"]))
    assert policy["Version"] == "2012-10-17"
    assert [statement for statement in policy["Statement"] if statement["Effect"] == "Allow"] == [
        {
            "Effect": "Allow",
            "Action": ["s3:*"],
            "Resource": ["arn:aws:s3:::a-bucket", "arn:aws:s3:::a-bucket/*", "arn:aws:s3:::another", "arn:aws:s3:::another/*"],
        }
    ]


BUCKET_ADMINISTRATION = (
    "s3:PutBucketPolicy",  # would make the bucket public
    "s3:DeleteBucketPolicy",
    "s3:DeleteBucket",
    "s3:ForceDeleteBucket",
    "s3:PutBucketVersioning",
    "s3:PutBucketObjectLockConfiguration",
    "s3:PutLifecycleConfiguration",
    "s3:PutEncryptionConfiguration",
    "s3:PutBucketNotification",
    "s3:PutReplicationConfiguration",
)
"""MinIO policy actions (minio/pkg policy/action.go) that administer a bucket rather than use it."""


def test_no_consumer_may_administer_a_bucket() -> None:
    """`s3:*` includes PutBucketPolicy and DeleteBucket: a Deny statement (which wins over any
    Allow in MinIO) takes bucket administration back, on every bucket."""
    for consumer, policy in planned_policies().items():
        denied = [statement for statement in policy["Statement"] if statement["Effect"] == "Deny"]
        assert denied == [{"Effect": "Deny", "Action": list(BUCKET_ADMINISTRATION), "Resource": ["arn:aws:s3:::*"]}], consumer


def test_every_policy_fits_minios_limit_for_a_policy_file() -> None:
    limit = 2048  # docs: `mc admin policy create` POLICYPATH, "no more than 2048 characters"
    data = planned("phase2").one("kubernetes:core/v1:ConfigMap", "minio-policies")["inputs"]["data"]
    for name, text in data.items():
        assert len(text) <= limit, name


def test_every_bucket_is_created_idempotently() -> None:
    first = steps()[0]
    assert first["args"][:2] == ["mb", "--ignore-existing"]
    assert sorted(first["args"][2:]) == sorted(f"platform/{bucket}" for bucket in minio_args(dict(CONSUMERS)).buckets)
    for bucket in ("git-lfs", "gitlab-artifacts", "gitlab-uploads", "gitlab-packages", "gitlab-backups", "tmp", "registry",
                   "gitlab-terraform-state", "gitlab-ci-secure-files", "gitlab-pages", "gitlab-dependency-proxy",
                   "gitlab-mr-diffs", "runner-cache"):  # fmt: skip
        assert f"platform/{bucket}" in first["args"]


def test_the_job_creates_each_policy_and_user_then_attaches_them_with_commands_safe_to_repeat() -> None:
    """After the buckets: policy create (overwrites), user add (sets the key again), policy attach
    (accepts an attached policy in the pinned mc): a Job killed half-way succeeds when run again."""
    commands = [step["args"] for step in steps()[1:]]
    mounts = {mount["name"]: mount["mountPath"] for mount in steps()[0]["volumeMounts"]}
    assert commands == [
        ["admin", "policy", "create", "platform", "blueprint-gitlab", f"{mounts['policies']}/gitlab.json"],
        ["admin", "user", "add", "platform", "gitlab", "$(SECRET_KEY_GITLAB)"],
        ["admin", "policy", "attach", "platform", "blueprint-gitlab", "--user", "gitlab"],
        ["admin", "policy", "create", "platform", "blueprint-runner-cache", f"{mounts['policies']}/runner-cache.json"],
        ["admin", "user", "add", "platform", "runner-cache", "$(SECRET_KEY_RUNNER_CACHE)"],
        ["admin", "policy", "attach", "platform", "blueprint-runner-cache", "--user", "runner-cache"],
    ]
    assert job_pod()["spec"]["volumes"][1] == {"name": "policies", "configMap": {"name": "minio-policies"}}
    assert "2025-08-13" in versions.MINIO_CLIENT_IMAGE  # attach is idempotent from mc RELEASE.2024-10 (minio/mc#5058)


def test_the_job_takes_every_credential_from_a_secret_not_from_its_spec() -> None:
    for step in steps():
        env = {variable["name"]: variable for variable in step["env"]}
        assert env["MINIO_ROOT_PASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": "minio-root", "key": "MINIO_ROOT_PASSWORD"}
        assert env["MC_HOST_platform"]["value"] == "http://$(MINIO_ROOT_USER):$(MINIO_ROOT_PASSWORD)@minio.minio.svc.cluster.local:9000"
        for variable in env.values():
            if variable["name"].startswith("SECRET_KEY_"):
                consumer = variable["name"].removeprefix("SECRET_KEY_").lower().replace("_", "-")
                assert variable["valueFrom"]["secretKeyRef"] == {"name": "minio-users", "key": consumer}
    text = json.dumps(planned("phase2").find(JOB, "minio-buckets"))
    assert "stand-in" not in text
    assert "[secret]" not in text


def test_the_users_secret_holds_only_secret_values() -> None:
    data = planned("phase2").one("kubernetes:core/v1:Secret", "minio-users")["inputs"]["stringData"]
    assert data == {"gitlab": "[secret]", "runner-cache": "[secret]"}


def test_the_job_pod_meets_the_restricted_pod_security_standard() -> None:
    # https://kubernetes.io/docs/concepts/security/pod-security-standards/#restricted
    assert violations(job_pod(), "restricted") == []
    spec = job_pod()["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] > 0
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert spec["automountServiceAccountToken"] is False
    assert {kind for volume in spec["volumes"] for kind in volume if kind != "name"} <= {"emptyDir", "configMap", "secret"}
    for step in steps():
        context = step["securityContext"]
        assert context["allowPrivilegeEscalation"] is False
        assert context["capabilities"] == {"drop": ["ALL"]}
        assert context["readOnlyRootFilesystem"] is True
        env = {variable["name"]: variable.get("value") for variable in step["env"]}
        assert env["MC_CONFIG_DIR"] in {mount["mountPath"] for mount in step["volumeMounts"]}


def test_a_changed_policy_replaces_the_job_so_it_runs_again() -> None:
    data = planned("phase2").one("kubernetes:core/v1:ConfigMap", "minio-policies")["inputs"]["data"]
    digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    assert job_pod()["metadata"]["annotations"] == {"blueprint/policies-sha256": digest}


def test_the_job_runs_once_the_users_and_policies_are_in_the_cluster() -> None:
    result = planned("phase2")
    depends = set(result.one(JOB, "minio-buckets")["dependsOn"])
    assert result.one("kubernetes:core/v1:Secret", "minio-users")["urn"] in depends
    assert result.one("kubernetes:core/v1:ConfigMap", "minio-policies")["urn"] in depends


VOLUME = Volume(namespace="minio", claim="minio-data", size="1Gi", owner=mn.MINIO_USER)


ANY_CLASS = Provisioned(storage_class="", keep=False)


def minio_args(consumers: dict[str, Any]) -> MinioArgs:
    folder: Any = None
    return MinioArgs(
        volume=VOLUME, volume_resource=None, secrets_path="/s", secrets_folder=folder, consumers=consumers, provisioned=ANY_CLASS
    )


@pytest.mark.parametrize("provisioned", [None, ANY_CLASS])
def test_the_data_claim_binds_to_a_pv_or_is_provisioned_never_both_nor_neither(provisioned: Provisioned | None) -> None:
    volume_resource: Any = None if provisioned is None else object()
    with pytest.raises(ValueError, match="exactly one"):
        MinioArgs(
            volume=VOLUME, volume_resource=volume_resource, secrets_path="/s", secrets_folder=volume_resource, provisioned=provisioned
        )


@pytest.mark.parametrize("consumer", ["ab", "GitLab", "-gitlab", "a,b", "x" * 21])
def test_a_consumer_name_minio_would_refuse_as_a_user_is_refused(consumer: str) -> None:
    with pytest.raises(ValueError, match=r"MinioArgs\.consumers: .* lowercase letters, digits and dashes") as error:
        minio_args({consumer: ("bucket",)})
    assert repr(consumer) in str(error.value)


@pytest.mark.parametrize("buckets", [(), "bucket", ("Bad_Bucket",)])
def test_a_consumer_without_valid_buckets_is_refused(buckets: Any) -> None:
    with pytest.raises(ValueError, match=r"MinioArgs\.consumers\['app'\]"):
        minio_args({"app": buckets})


def test_buckets_shared_by_consumers_are_created_once() -> None:
    assert minio_args({"one": ("a-b", "c-d"), "two": ("c-d",)}).buckets == ("a-b", "c-d")


def test_asking_for_an_unknown_consumer_names_the_known_ones() -> None:
    known = {"gitlab": S3Credentials(access_key="gitlab", secret_key=None)}  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"no user for consumer 'runner'; the consumers are \['gitlab'\]: add it to MinioArgs\.consumers"):
        lookup_credentials(known, "runner")
