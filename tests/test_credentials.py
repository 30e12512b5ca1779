"""The credential catalogue (credentials.py) against the plans: every credential a plan generates is
in the catalogue, every catalogue entry meant for OpenBao is mirrored there by the plan, at its
path, with the secret under its key, and no entry names a credential the plans do not make.
"""

from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

import credentials
from apps_manifest import load_manifest
from cli.plan import Plan
from stacks.mirror import mirror
from tests.plans import planned, waits_for

KV = "pulumi-python:dynamic/openbao:KvSecret"
CARRIERS = {
    "kubernetes:core/v1:Secret": "a copy of a credential, for the pods that read it",
    "tls:index/certRequest:CertRequest": "signs with the wildcard key, whose origin is its PrivateKey",
    "tls:index/locallySignedCert:LocallySignedCert": "signs with the CA's key, whose origin is its HostSecret",
    "pulumi-python:dynamic/openbao:Init": "is given OpenBao's passwords, whose origins are their HostSecrets",
    "pulumi-python:dynamic/gitlab:GroupVariable": "hands CI the deploy kubeconfig, whose origin is its DeployKubeconfig",
    KV: "the mirror itself",
}
"""Types whose secret outputs carry a credential made elsewhere. Every other resource with a secret
output is a credential's origin: a new kind of one is caught, not left out of the catalogue."""
STACKS = ("phase1", "phase2", "phase3", "dev")
BUILDING = [project.name for project in load_manifest() if project.build]
"""The shipped manifest's projects that build an image (guestbook)."""
CATALOGUE = credentials.catalogue(BUILDING)
BY_NAME = {entry.name: entry for entry in CATALOGUE}


def origins(result: Plan) -> dict[str, dict[str, Any]]:
    """The plan's credential-origin resources, by `<type> <name>`."""
    return {f"{r['type']} {r['name']}": r for r in result.resources if r.get("additionalSecretOutputs") and r["type"] not in CARRIERS}


def kv_secrets(result: Plan) -> dict[str, dict[str, Any]]:
    """The plan's OpenBao KV writes, by path."""
    return {r["inputs"]["path"]: r for r in result.resources if r["type"] == KV}


@pytest.mark.parametrize("stack", STACKS)
def test_every_generated_credential_is_in_the_catalogue(stack: str) -> None:
    covered = {origin for entry in credentials.in_stack(stack, BUILDING) for origin in entry.origins}
    assert set(origins(planned(stack))) - covered == set()


@pytest.mark.parametrize("stack", STACKS)
def test_no_catalogue_entry_names_a_credential_the_plan_does_not_make(stack: str) -> None:
    planned_origins = set(origins(planned(stack)))
    orphans = {
        entry.name for entry in credentials.in_stack(stack, BUILDING) if not set(entry.origins) <= planned_origins or not entry.origins
    }
    assert orphans == set()


@pytest.mark.parametrize("stack", STACKS)
def test_every_catalogue_entry_meant_for_openbao_is_written_at_its_path_from_its_origin(stack: str) -> None:
    result = planned(stack)
    written, made = kv_secrets(result), origins(result)
    for entry in credentials.in_stack(stack, BUILDING):
        if entry.path is None:
            continue
        assert entry.path in written, entry.name
        kv = written[entry.path]
        assert kv["inputs"]["mount"] == credentials.KV_MOUNT
        assert kv["inputs"]["data"][entry.key] == "[secret]", entry.name
        # The value comes from the credential's own origin (the admin token's: its file), which the write waits for.
        assert {made[origin]["urn"] for origin in entry.origins} & waits_for(result, kv["urn"]), entry.name


@pytest.mark.parametrize("stack", STACKS)
def test_every_openbao_kv_path_of_the_plan_is_in_the_catalogue(stack: str) -> None:
    paths = {entry.path for entry in credentials.in_stack(stack, BUILDING)}
    assert set(kv_secrets(planned(stack))) - paths == set()


@pytest.mark.parametrize("stack", STACKS)
def test_each_host_file_the_catalogue_names_is_its_origins_file(stack: str) -> None:
    made = origins(planned(stack))
    for entry in credentials.in_stack(stack, BUILDING):
        # A HostSecret's file, or the file a provider writes itself (GlabToken's `path`).
        files = {PurePosixPath(made[o]["inputs"]["path"]).name for o in entry.origins if "path" in made[o]["inputs"]}
        assert files == ({entry.file} if entry.file else set()), entry.name
        if entry.file:
            folder = PurePosixPath(made[entry.origins[0]]["inputs"]["path"]).parent
            assert str(folder).endswith(credentials.SECRETS_SUBDIR), entry.name


def test_the_credentials_that_open_openbao_are_not_in_its_kv() -> None:
    """Its seal key and its users' passwords stay in their files: `blueprint` reads all of secret/."""
    result = planned("phase2")
    opening = {"openbao-seal-key", "openbao-admin-password", "openbao-blueprint-password"}
    assert {entry.name for entry in CATALOGUE if entry.path is None} == opening | {"kind-admin-kubeconfig"}
    sources = {origin for entry in CATALOGUE if entry.name in {"openbao-seal-key", "openbao-admin-password"} for origin in entry.origins}
    urns = {origins(result)[source]["urn"] for source in sources}
    for kv in kv_secrets(result).values():
        assert urns & set(kv["dependsOn"]) == set(), kv["name"]
    assert all(entry.not_in_openbao for entry in CATALOGUE if entry.path is None)


def test_a_kv_write_waits_for_gitlab_only_when_its_credential_does() -> None:
    """No KV write sits on the slow chain (cluster -> Postgres -> GitLab) unless its source is on it."""
    result = planned("phase2")
    gitlab = next(r["urn"] for r in result.resources if r["name"] == "gitlab-chart")
    made = origins(result)
    by_path = {entry.path: entry for entry in credentials.PLATFORM if entry.path}
    for path, kv in kv_secrets(result).items():
        sources = [made[o]["urn"] for o in by_path[path].origins if made[o]["urn"] in waits_for(result, kv["urn"])]
        sources_wait = any(gitlab in waits_for(result, source) for source in sources)
        assert (gitlab in waits_for(result, kv["urn"])) == sources_wait, path


def test_in_dev_phase3s_credentials_wait_for_openbaos_initialisation() -> None:
    result = planned("dev")
    init = next(r["urn"] for r in result.resources if r["name"] == "openbao-init")
    kv = kv_secrets(result)[credentials.deploy_token("guestbook").path or ""]
    assert init in kv["dependsOn"]


def test_the_mirror_refuses_a_catalogue_entry_without_a_value() -> None:
    with pytest.raises(ValueError, match="no value for the credential.s. redis-password"):
        mirror(
            [BY_NAME["redis-password"]],
            {},
            address="https://127.0.0.1:8200",
            ca_file="/ca.crt",
            server_name="openbao.x",
            username="blueprint",
            password="x",
        )


def test_the_mirror_refuses_a_value_without_a_catalogue_entry() -> None:
    with pytest.raises(ValueError, match="unknown-password have no catalogue entry"):
        mirror(
            [],
            {"unknown-password": "x"},
            address="https://127.0.0.1:8200",
            ca_file="/ca.crt",
            server_name="openbao.x",
            username="blueprint",
            password="x",
        )


def test_catalogue_names_are_unique_and_kebab_case() -> None:
    names = [entry.name for entry in CATALOGUE]
    assert len(names) == len(set(names))
    assert all(name.replace("-", "").isalnum() and name == name.lower() for name in names)


def test_the_deploy_tokens_follow_the_apps_manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A manifest whose guestbook no longer builds, with another project that does: phase3 plans (no
    crash), mirrors the other project's deploy token alone, and the catalogue matches that plan."""
    from cli.plan import plan
    from tests.apps_copy import copy_apps

    apps = tmp_path / "apps"
    copy_apps(apps)
    shutil.copytree(apps / "guestbook", apps / "hello")
    manifest = apps / "apps_manifest.yaml"
    text = manifest.read_text().replace("    build: true\n    host: guestbook\n", "    host: guestbook\n")
    manifest.write_text(text + "  - name: hello\n    deploy: true\n    chart: chart\n    build: true\n    host: hello\n")
    monkeypatch.setattr("apps_manifest.MANIFEST", manifest)
    building = [project.name for project in load_manifest() if project.build]
    assert building == ["hello"]
    result = plan("phase3", {})
    assert {path for path in kv_secrets(result) if path.startswith("gitlab/deploy-tokens/")} == {"gitlab/deploy-tokens/hello"}
    assert set(origins(result)) == {origin for entry in credentials.in_stack("phase3", building) for origin in entry.origins}
