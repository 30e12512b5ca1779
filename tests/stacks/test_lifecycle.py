"""Rules of the whole lifecycle, checked on every stack's plan, as an `up` and as a preview.

The first `up` is not where things break: the review that prompted these rules found `dev` racing
on its data folder, phase3 calling GitLab before the admin token was seeded, smoke pipelines not
waiting for the Runner, and a preserveData destroy that deleted GitLab's group. Each rule here is
one test over the real program's plan (`blueprint plan`), so a regression fails a test, not a
user's `pulumi up`. A preview plan has every provider-computed output unknown, as `pulumi preview`
has them: a rule that held only with known outputs would be a defect.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cli.lifecycle import REVOKED_ON_DELETE, claimed_folder, destroy_view, host_paths, is_under, lives_in_gitlab, record_preserve_data
from cli.plan import Plan
from components.host_folder import CONFIG_PYTHON, DELETE_SCRIPT, PRESERVE_DATA
from components.image_cache import mirror_cache_folder
from stacks.config import PROJECT_DIR
from tests.plans import COMMAND, planned, planned_as, run_script, waits_for

STACKS = ("phase1", "phase2", "phase3", "dev")
MODES = ("up", "preview")
ADMIN_TOKEN = "pulumi-python:dynamic/gitlab:AdminToken"
RUNNER_CHART = ("kubernetes:helm.sh/v3:Release", "runner-chart")
SMOKE_PIPELINE = "pulumi-python:dynamic/gitlab:SmokePipeline"


def uses_gitlab_api(resource: dict[str, Any]) -> bool:
    """Our dynamic resources that call GitLab."""
    type_ = str(resource["type"])
    return type_.startswith("pulumi-python:dynamic/gitlab:") and type_ != ADMIN_TOKEN


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("stack", ["phase2", "dev"])
def test_every_gitlab_api_consumer_waits_for_the_seeded_admin_token(stack: str, mode: str) -> None:
    """phase3 reads the token from phase2's outputs, which exist once phase2 is up: `dev` is where
    the same wiring must carry the wait, and it plans the same phase functions."""
    result = planned_as(mode, stack)
    [token] = result.find(ADMIN_TOKEN)
    consumers = [r for r in result.resources if uses_gitlab_api(r)]
    assert consumers
    for resource in consumers:
        assert token["urn"] in waits_for(result, resource["urn"]), resource["urn"]


@pytest.mark.parametrize("mode", MODES)
def test_every_smoke_pipeline_waits_for_the_runner(mode: str) -> None:
    result = planned_as(mode, "dev")
    runner = result.one(*RUNNER_CHART)["urn"]
    pipelines = result.find(SMOKE_PIPELINE)
    assert pipelines
    for pipeline in pipelines:
        assert runner in waits_for(result, pipeline["urn"]), pipeline["urn"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("stack", STACKS)
def test_every_write_under_a_host_folder_waits_for_the_step_that_claims_it(stack: str, mode: str) -> None:
    result = planned_as(mode, stack)
    claims = {folder: r["urn"] for r in result.resources if (folder := claimed_folder(r))}
    for resource in result.resources:
        for path in host_paths(resource):
            for folder, claim in claims.items():
                if claim != resource["urn"] and is_under(path, folder):
                    assert claim in waits_for(result, resource["urn"]), f"{resource['urn']} uses {path} before {folder} is claimed"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("stack", STACKS)
def test_every_kubernetes_resource_waits_for_its_namespace(stack: str, mode: str) -> None:
    result = planned_as(mode, stack)
    namespaces = {r["inputs"]["metadata"]["name"]: r["urn"] for r in result.find("kubernetes:core/v1:Namespace")}
    for resource in result.resources:
        if not resource["custom"] or not resource["type"].startswith("kubernetes:"):
            continue
        namespace = (resource["inputs"].get("metadata") or {}).get("namespace") or resource["inputs"].get("namespace")
        if namespace in namespaces:
            assert namespaces[namespace] in waits_for(result, resource["urn"]), resource["urn"]


def destroyed(stack: str, preserve: bool) -> Plan:
    return destroy_view(planned(stack, preserveData=str(preserve).lower()))


@pytest.mark.parametrize("stack", STACKS)
def test_with_preserve_data_a_destroy_deletes_nothing_that_holds_user_data(stack: str) -> None:
    result = destroyed(stack, True)
    assert all(folder["destroy"] == "keep" for folder in result.folders or []), result.folders
    for resource in result.resources:
        if lives_in_gitlab(resource) and resource["type"] not in REVOKED_ON_DELETE:  # a revoked credential holds none
            assert resource["destroy"] != "delete", resource["urn"]


@pytest.mark.parametrize("stack", STACKS)
def test_without_preserve_data_a_destroy_deletes_all_user_data(stack: str) -> None:
    result = destroyed(stack, False)
    caches = {mirror_cache_folder(resource["inputs"]) for resource in result.resources}  # public images only: every destroy keeps them
    assert all(folder["destroy"] == "wipe" for folder in result.folders or [] if folder["path"] not in caches), result.folders
    for resource in result.resources:
        if lives_in_gitlab(resource):
            assert resource["destroy"] == "delete", resource["urn"]


KV = "pulumi-python:dynamic/openbao:KvSecret"


@pytest.mark.parametrize("preserve", [True, False])
def test_phase3s_openbao_entries_go_with_its_destroy_only_when_the_data_goes(preserve: bool) -> None:
    """Its deploy tokens are revoked with the projects (preserveData=false): their OpenBao entries go too,
    and the destroy view says so; phase2's entries stay with OpenBao's storage, and record no such input."""
    phase3 = destroyed("phase3", preserve)
    assert phase3.find(KV)
    assert {(kv["inputs"]["delete_on_destroy"], kv["destroy"]) for kv in phase3.find(KV)} == {
        (not preserve, "forget" if preserve else "delete")
    }
    phase2 = destroyed("phase2", preserve)
    assert {kv["destroy"] for kv in phase2.find(KV)} == {"forget"}
    assert not any("delete_on_destroy" in kv["inputs"] for kv in phase2.find(KV))


def kv_state(stack: str, recorded: dict[str, Any]) -> dict[str, Any]:
    return {
        "urn": f"urn:pulumi:{stack}::blueprint::{KV}::openbao-kv-gitlab-deploy-tokens-guestbook",
        "custom": True,
        "type": KV,
        "inputs": {"path": "gitlab/deploy-tokens/guestbook", **recorded},
        "outputs": {"path": "gitlab/deploy-tokens/guestbook", **recorded},
    }


def test_a_wiping_destroy_records_that_phase3s_openbao_entries_go() -> None:
    """`blueprint destroy --phase 3 --wipe-data` over a phase3 brought up with preserveData=true: the
    delete reads the recorded outputs, so they must say it."""
    [entry] = record_preserve_data({"resources": [kv_state("phase3", {"delete_on_destroy": False})]}, keep=False)["resources"]
    assert (entry["inputs"]["delete_on_destroy"], entry["outputs"]["delete_on_destroy"]) == (True, True)
    [kept] = record_preserve_data({"resources": [kv_state("phase3", {"delete_on_destroy": True})]}, keep=True)["resources"]
    assert (kept["inputs"]["delete_on_destroy"], kept["outputs"]["delete_on_destroy"]) == (False, False)
    [phase2s] = record_preserve_data({"resources": [kv_state("phase2", {})]}, keep=False)["resources"]
    assert "delete_on_destroy" not in phase2s["outputs"]


def _data_folder_state(delete: str = DELETE_SCRIPT, **config: str) -> dict[str, Any]:
    """phase1's data-folder claim as an `up` with `config` records it, with `delete` as its delete script."""
    inputs = {**planned("phase1", **config).one(COMMAND, "kind-data-folder")["inputs"], "delete": delete}
    return {"urn": "urn:pulumi:phase1::blueprint::command:local:Command::kind-data-folder", "custom": True, "type": COMMAND,
            "inputs": inputs, "outputs": dict(inputs)}  # fmt: skip


def test_recording_preserve_data_changes_the_recorded_choice_and_never_a_script() -> None:
    """Whatever release recorded the state: its own delete script runs, with the choice it reads."""
    older = _data_folder_state('echo "the delete script of another release"')
    [recorded] = record_preserve_data({"resources": [older]}, keep=True)["resources"]
    for part in ("inputs", "outputs"):
        assert recorded[part] == {**older[part], "environment": {**older[part]["environment"], PRESERVE_DATA: "true"}}


def test_recording_preserve_data_points_the_delete_at_this_checkout() -> None:
    """An `up` from a checkout since moved or deleted recorded its stack file and Python: the delete
    would refuse, unable to read a file that is gone, and `--wipe-data` could never wipe."""
    moved = _data_folder_state()
    for part in ("inputs", "outputs"):
        moved[part] = {
            **moved[part],
            "environment": {
                **moved[part]["environment"],
                "STACK_FILE": "/gone/Pulumi.phase1.yaml",
                "CONFIG_PYTHON": "/gone/.venv/bin/python",
            },
        }
    [recorded] = record_preserve_data({"resources": [moved]}, keep=False)["resources"]
    for part in ("inputs", "outputs"):
        assert recorded[part]["environment"]["STACK_FILE"] == str(PROJECT_DIR / "Pulumi.phase1.yaml")
        assert recorded[part]["environment"]["CONFIG_PYTHON"] == CONFIG_PYTHON


def test_a_folder_an_up_recorded_to_keep_is_wiped_by_a_destroy_that_records_the_wipe(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    kept = _data_folder_state(preserveData="true")
    assert run_script(kept, "create", env={"FOLDER": str(folder)}).returncode == 0
    [wiping] = record_preserve_data({"resources": [kept]}, keep=False)["resources"]
    done = run_script({"inputs": wiping["outputs"]}, "delete", env={"FOLDER": str(folder)})  # Pulumi deletes from the outputs
    assert done.returncode == 0, done.stderr
    assert not folder.exists()
