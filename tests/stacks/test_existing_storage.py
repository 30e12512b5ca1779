"""phase2's data on an existing cluster (`blueprint:cluster=existing`): every volume a claim on the
configured StorageClass (none named: the cluster's default), nothing on a host path; a destroy with
preserveData keeps every claim and the namespaces holding them (CloudNativePG's through the step
that releases it from its Cluster first), and one without deletes them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.lifecycle import destroy_view, record_preserve_data
from cli.plan import Plan
from components.host_folder import PRESERVE_DATA
from components.markers import DATA_LABEL
from stacks.phase2 import GITALY_VOLUME, MINIO_VOLUME, POSTGRES_VOLUME, REDIS_VOLUME
from tests.plans import COMMAND, fake_command, planned, run_script

EXISTING = {"cluster": "existing", "kubeContext": "ctx", "domain": "platform.example.com"}
CLAIM = "kubernetes:core/v1:PersistentVolumeClaim"
NAMESPACE = "kubernetes:core/v1:Namespace"
CLUSTER = "kubernetes:postgresql.cnpg.io/v1:Cluster"
RELEASE_STEP = "postgres-release-claim"
KEPT_CLAIMS = {"redis-data": REDIS_VOLUME, "minio-data": MINIO_VOLUME, "gitlab-gitaly-data": GITALY_VOLUME}
"""The claims blueprint makes itself, by resource name; CloudNativePG makes POSTGRES_VOLUME's."""
DATA_NAMESPACES = {volume.namespace for volume in (POSTGRES_VOLUME, REDIS_VOLUME, MINIO_VOLUME, GITALY_VOLUME)}


def existing_plan(**config: str) -> Plan:
    return planned("phase2", **EXISTING, **config)


def keys_in(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every (path, value) of a key among `value`'s nested mappings and lists."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield f"{path}/{key}", item
            yield from keys_in(item, f"{path}/{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from keys_in(item, f"{path}[{index}]")


def under(result: Plan, resource: dict[str, Any], types: set[str]) -> bool:
    """Whether `resource` is a descendant of a component of one of `types`."""
    by_urn = {r["urn"]: r for r in result.resources}
    parent = resource["parent"]
    while parent in by_urn:
        if by_urn[parent]["type"] in types:
            return True
        parent = by_urn[parent]["parent"]
    return False


def values_of(result: Plan, name: str) -> dict[str, Any]:
    values = result.one("kubernetes:helm.sh/v3:Release", name)["inputs"]["values"]
    return dict(yaml.safe_load(values) if isinstance(values, str) else values)


def test_no_resource_on_an_existing_cluster_has_a_host_path() -> None:
    result = existing_plan()
    found = [
        (resource["name"], path)
        for resource in result.resources
        for path, _ in keys_in(resource.get("inputs") or {})
        if path.endswith("/hostPath")
    ]
    assert found == []


def test_no_static_volume_class_nor_bound_volume_name_on_an_existing_cluster() -> None:
    result = existing_plan()
    assert result.find("kubernetes:core/v1:PersistentVolume") == []
    assert result.find("kubernetes:storage.k8s.io/v1:StorageClass") == []
    assert [path for resource in result.resources for path, _ in keys_in(resource["inputs"] or {}) if path.endswith("/volumeName")] == []
    assert "blueprint-static" not in str([resource["inputs"] for resource in result.resources])


def test_only_the_platform_folder_and_no_adoption_probe_on_an_existing_cluster() -> None:
    """The laptop keeps its secrets and the CA; the volumes are the cluster's (no folder, no docker probe)."""
    result = existing_plan()
    folders = [c["inputs"]["environment"]["FOLDER"] for c in result.find(COMMAND) if "FOLDER" in c["inputs"].get("environment", {})]
    assert [folder.rsplit("/", 1)[-1] for folder in folders] == ["platform"]
    assert "/volumes/" not in folders[0]
    assert result.find(COMMAND, "postgres-adopt-data") == []


@pytest.mark.parametrize("storage_class", ["", "fast-ssd"])
def test_every_claim_names_the_configured_class_or_none_for_the_default(storage_class: str) -> None:
    result = existing_plan(storageClass=storage_class) if storage_class else existing_plan()
    named = {storage_class} if storage_class else set()
    claims = {resource["name"]: resource["inputs"]["spec"] for resource in result.find(CLAIM)}
    assert set(claims) == set(KEPT_CLAIMS)
    for name, spec in claims.items():
        assert set(filter(None, [spec.get("storageClassName")])) == named, name
        assert spec["resources"]["requests"]["storage"] == KEPT_CLAIMS[name].size
    cnpg = result.one(CLUSTER, "postgres-cluster")["inputs"]["spec"]["storage"]
    assert set(filter(None, [cnpg.get("storageClass")])) == named
    gitaly = values_of(result, "gitlab-chart")["gitlab"]["gitaly"]["persistence"]
    assert set(filter(None, [gitaly.get("storageClass")])) == named


def test_gitalys_claim_is_made_ahead_of_the_chart_under_its_statefulsets_name() -> None:
    result = existing_plan()
    claim = result.one(CLAIM, "gitlab-gitaly-data")
    assert (claim["inputs"]["metadata"]["name"], claim["inputs"]["metadata"]["namespace"]) == ("repo-data-gitlab-gitaly-0", "gitlab")
    assert claim["urn"] in result.one("kubernetes:helm.sh/v3:Release", "gitlab-chart")["dependsOn"]


def test_minio_gets_its_provisioned_volume_through_fs_group_on_an_existing_cluster_alone() -> None:
    def security(result: Plan) -> dict[str, Any]:
        return dict(result.one("kubernetes:apps/v1:Deployment", "minio-server")["inputs"]["spec"]["template"]["spec"]["securityContext"])

    assert security(existing_plan())["fsGroup"] == MINIO_VOLUME.owner[1]
    assert "fsGroup" not in security(planned("phase2"))


def fates(result: Plan) -> dict[tuple[str, str], str]:
    view = destroy_view(result)
    return {(resource["type"], resource["name"]): resource["destroy"] for resource in view.resources}


@pytest.mark.parametrize(("preserve", "fate"), [("true", "retain"), ("false", "delete")])
def test_a_destroy_keeps_every_claim_and_its_namespace_exactly_with_preserve_data(preserve: str, fate: str) -> None:
    result = existing_plan(preserveData=preserve)
    destroy = fates(result)
    data = {(CLAIM, name) for name in KEPT_CLAIMS} | {(COMMAND, RELEASE_STEP)}
    data |= {(NAMESPACE, r["name"]) for r in result.find(NAMESPACE) if r["inputs"]["metadata"]["name"] in DATA_NAMESPACES}
    assert len(data) == len(KEPT_CLAIMS) + 1 + len(DATA_NAMESPACES)
    assert {key: destroy[key] for key in data} == dict.fromkeys(data, fate)


def test_a_destroy_deletes_the_namespaces_holding_no_data_whatever_preserve_data_says() -> None:
    destroy = fates(existing_plan(preserveData="true"))
    result = existing_plan(preserveData="true")
    others = [r["name"] for r in result.find(NAMESPACE) if r["inputs"]["metadata"]["name"] not in DATA_NAMESPACES]
    assert others
    assert all(destroy[(NAMESPACE, name)] == "delete" for name in others)


def test_the_destroy_view_says_why_the_postgres_claim_stays() -> None:
    result = destroy_view(existing_plan(preserveData="true"))
    why = result.destroy_reasons[result.one(COMMAND, RELEASE_STEP)["urn"]]
    assert "releases claim postgresql-cnpg-1 from the Postgres Cluster before the Cluster goes" in why


def test_cloudnativepgs_claim_is_released_before_its_clusters_delete() -> None:
    """The step comes after the Cluster, so a destroy runs its delete first."""
    result = existing_plan(preserveData="true")
    step = result.one(COMMAND, RELEASE_STEP)
    assert result.one(CLUSTER, "postgres-cluster")["urn"] in step["dependsOn"]
    assert step["inputs"]["environment"]["RELEASED_CLAIM"] == POSTGRES_VOLUME.claim == "postgresql-cnpg-1"


def test_every_kept_object_is_marked_as_the_platforms_data() -> None:
    """`kubectl get namespaces,pvc -A -l blueprint/data` lists what a destroy keeps."""
    result = existing_plan()
    marked = {r["name"] for r in result.resources if DATA_LABEL in ((r["inputs"] or {}).get("metadata") or {}).get("labels", {})}
    namespaces = {r["name"] for r in result.find(NAMESPACE) if r["inputs"]["metadata"]["name"] in DATA_NAMESPACES}
    assert marked == set(KEPT_CLAIMS) | namespaces


def as_state(result: Plan) -> dict[str, Any]:
    """A plan's resources as a state records them (inputs, and the outputs a delete runs with)."""
    return {"resources": [{**r, "outputs": dict(r["inputs"] or {})} for r in result.resources]}


@pytest.mark.parametrize(("upped", "keep"), [("false", True), ("true", False)])
def test_blueprint_destroy_records_its_choice_on_the_claims_namespaces_and_release_step(upped: str, keep: bool) -> None:
    recorded = record_preserve_data(as_state(existing_plan(preserveData=upped)), keep)
    by_name = {(r["type"], r["name"]): r for r in recorded["resources"]}
    for name in KEPT_CLAIMS:
        assert by_name[(CLAIM, name)]["retainOnDelete"] is keep
    step = by_name[(COMMAND, RELEASE_STEP)]
    assert step["inputs"]["environment"][PRESERVE_DATA] == step["outputs"]["environment"][PRESERVE_DATA] == str(keep).lower()
    view = destroy_view(replace(existing_plan(), resources=recorded["resources"]))
    assert {r["destroy"] for r in view.resources if r["name"] in {*KEPT_CLAIMS, RELEASE_STEP}} == {"retain" if keep else "delete"}


FAKE_KUBECTL = """\
echo "$*" >> "$CALLS"
[ -n "${KUBECTL_ERROR:-}" ] && { echo "$KUBECTL_ERROR" >&2; exit 1; }
exit 0
"""


def release(tmp_path: Path, preserve: str, error: str = "") -> tuple[int, str, str]:
    fake_command(tmp_path / "bin", "kubectl", FAKE_KUBECTL)
    step = existing_plan(preserveData=preserve).one(COMMAND, RELEASE_STEP)
    env = {"CALLS": str(tmp_path / "calls"), "KUBECTL_ERROR": error}
    done = run_script(step, "delete", path_prefix=tmp_path / "bin", env=env)
    calls = (tmp_path / "calls").read_text() if (tmp_path / "calls").exists() else ""
    return done.returncode, done.stderr, calls


def test_the_release_step_removes_the_claims_owner_through_the_configured_context(tmp_path: Path) -> None:
    code, said, calls = release(tmp_path, "true")
    assert code == 0, said
    assert calls.split() == [
        "--context",
        "ctx",
        "--namespace",
        "postgres",
        "patch",
        "persistentvolumeclaim",
        "postgresql-cnpg-1",
        "--type=merge",
        "--patch",
        '{"metadata":{"ownerReferences":null}}',
    ]
    assert "it stays, with its data" in said


def test_the_release_step_leaves_the_claim_to_its_cluster_without_preserve_data(tmp_path: Path) -> None:
    code, said, calls = release(tmp_path, "false")
    assert (code, calls) == (0, "")
    assert "goes with the Postgres cluster" in said


def test_the_release_step_passes_when_there_is_no_claim(tmp_path: Path) -> None:
    code, said, _ = release(tmp_path, "true", 'Error from server (NotFound): persistentvolumeclaims "postgresql-cnpg-1" not found')
    assert code == 0, said
    assert "no PostgreSQL data to keep" in said


def test_the_release_step_stops_the_destroy_when_it_cannot_release_the_claim(tmp_path: Path) -> None:
    """Else the Cluster's delete would take the data the user asked to keep."""
    code, said, _ = release(tmp_path, "true", "Unable to connect to the server: dial tcp: i/o timeout")
    assert code == 1
    assert "cannot release claim postgresql-cnpg-1" in said
    assert "make context ctx reach the cluster and run the destroy again" in said
