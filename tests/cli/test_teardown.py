"""`blueprint destroy` on every route: the cluster gone, Docker stopped, GitLab gone, phase3 left
behind by a preserveData destroy. The stacks and the fake Pulumi are in teardown_fakes.py: a route
passes only if it removed from state first exactly what the real providers could not delete."""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from cli import phases, status, teardown
from cli.cluster_identity import Identity
from cli.lifecycle import KV_SECRET, lives_in_cluster, lives_in_gitlab, without_stale_creates
from cli.phases import Context
from cli.stack_runner import StackFailed
from cli.teardown import ClusterState, cluster_state
from components.host_folder import DELETE_SCRIPT, PRESERVE_DATA, UP_SCRIPT
from components.markers import OWNER_MARKER
from stacks import outputs
from stacks.config.schema import stack_config
from tests.cli.teardown_fakes import (
    PHASE1_HERE,
    FakePulumi,
    all_stacks,
    interrupted_replacement,
    recorded_state,
    run_destroy,
    stale_create,
    world,
)
from tests.plans import COMMAND, fake_command, planned


def test_a_destroyed_stack_is_no_longer_up() -> None:
    """Pulumi leaves a destroyed stack in place, empty: phase2 may go once phase3 has gone."""
    pulumi = FakePulumi(all_stacks())
    assert run_destroy(pulumi, False, phase="3")[0] == 0
    code, said = run_destroy(pulumi, False, phase="2")
    assert code == 0, said
    assert not pulumi.is_up("phase2")


def test_destroy_runs_in_reverse_order() -> None:
    pulumi = FakePulumi(all_stacks())
    assert run_destroy(pulumi, False)[0] == 0
    assert [stack for verb, stack in pulumi.calls if verb == "destroy"] == ["phase3", "phase2", "phase1"]


def test_with_the_cluster_gone_what_lived_in_it_is_forgotten_and_said() -> None:
    pulumi = FakePulumi(all_stacks(), cluster="gone")
    code, said = run_destroy(pulumi, False)
    assert code == 0, said
    assert not [r for r in pulumi.destroyed["phase2"] if lives_in_cluster(r)]
    assert "from Pulumi's state only, because it lived in the kind cluster, which is gone" in said


def test_with_the_cluster_gone_openbaos_entries_are_forgotten_not_waited_for() -> None:
    """OpenBao lived in that cluster: deleting phase3's entries would wait for it, then warn of entries nobody can reach."""
    pulumi = FakePulumi(all_stacks(), cluster="gone")
    entries = [r["urn"] for r in recorded_state("phase3")["deployment"]["resources"] if r["type"] == KV_SECRET]
    assert entries
    code, said = run_destroy(pulumi, False)
    assert code == 0, said
    assert not [r for r in pulumi.destroyed["phase3"] if r["type"] == KV_SECRET]
    assert "because it was in OpenBao, which lived in the kind cluster, which is gone" in said


def test_a_destroy_that_forgets_nothing_would_fail_with_the_cluster_gone() -> None:
    """The fake fails as the real provider does: the test above passes only because of the forgetting."""
    pulumi = FakePulumi({"phase2": recorded_state("phase2")}, cluster="gone")
    with pytest.raises(StackFailed) as failed:
        pulumi.destroy("phase2", print, {})
    assert "can't delete Helm Release with unreachable cluster" in failed.value.output


def test_a_stopped_docker_refuses_with_the_fix_and_touches_nothing() -> None:
    pulumi = FakePulumi(all_stacks())
    stopped, _ = world(pulumi, cluster=ClusterState("unknown", "Cannot connect to the Docker daemon"))
    code, said = run_destroy(pulumi, False, world=stopped)
    assert code == 1
    assert "cannot tell whether the kind cluster blueprint still exists (Cannot connect to the Docker daemon)" in said
    assert "Start Docker" in said
    assert "--cluster-gone" in said
    assert pulumi.calls == []
    assert pulumi.config == {}


def test_cluster_gone_for_good_forgets_the_kind_cluster_itself() -> None:
    pulumi = FakePulumi(all_stacks(), cluster="gone")
    code, said = run_destroy(pulumi, False, cluster_gone=True)
    assert code == 0, said
    assert not [r for r in pulumi.destroyed["phase1"] if r["urn"].endswith("::kind-cluster")]
    assert "you said Docker and the cluster are gone (--cluster-gone)" in said


def test_without_preserve_data_gitlab_objects_go_with_gitlabs_database_not_through_its_api() -> None:
    pulumi = FakePulumi(all_stacks(), gitlab=False)
    code, said = run_destroy(pulumi, False)
    assert code == 0, said
    assert not [r for stack in ("phase2", "phase3") for r in pulumi.destroyed[stack] if lives_in_gitlab(r)]
    assert "it lives in GitLab's database, which this destroy wipes" in said


def test_with_preserve_data_phase3_is_kept_with_its_objects_recorded_as_retained() -> None:
    pulumi = FakePulumi(all_stacks())
    code, said = run_destroy(pulumi, True)
    assert code == 0, said
    assert pulumi.is_up("phase3")
    assert "phase3" not in pulumi.destroyed
    objects = [r for r in pulumi.states["phase3"]["deployment"]["resources"] if lives_in_gitlab(r)]
    assert objects
    assert all(r["retainOnDelete"] for r in objects)
    assert "phase3: kept (preserveData=true)" in said


def test_preserve_data_is_recorded_in_every_stack_before_anything_is_destroyed() -> None:
    pulumi = FakePulumi(all_stacks())
    assert run_destroy(pulumi, True)[0] == 0
    first_destroy = pulumi.calls.index(("destroy", "phase2"))
    assert {stack for verb, stack in pulumi.calls[:first_destroy] if verb == "import"} == {"phase1", "phase2", "phase3"}
    folders = [r for stack in ("phase1", "phase2") for r in pulumi.destroyed[stack] if r["inputs"].get("create") == UP_SCRIPT]
    assert len(folders) == 3  # the data folder; the platform's folder and its volumes folder
    assert all(r["outputs"]["environment"][PRESERVE_DATA] == "true" for r in folders)
    assert pulumi.config == {("phase1", "blueprint:preserveData"): "true"}


def test_wipe_data_records_the_wipe_over_a_recorded_keep() -> None:
    pulumi = FakePulumi(all_stacks(preserveData="true"))
    assert run_destroy(pulumi, False)[0] == 0
    folders = [r for stack in ("phase1", "phase2") for r in pulumi.destroyed[stack] if r["inputs"].get("create") == UP_SCRIPT]
    assert all(r[part]["environment"][PRESERVE_DATA] == "false" for r in folders for part in ("inputs", "outputs"))
    assert all(r["outputs"]["delete"] == DELETE_SCRIPT for r in folders)


def test_without_a_flag_the_destroy_follows_phase1s_config() -> None:
    pulumi = FakePulumi(all_stacks(preserveData="true"))
    pulumi.stack_outputs = {stack: planned(stack, preserveData="true").raw_outputs for stack in pulumi.states}
    kept, _ = world(pulumi, preserveData="true")
    code, said = run_destroy(pulumi, None, world=kept)
    assert code == 0, said
    assert "phase3" not in pulumi.destroyed
    assert pulumi.config == {}, "no flag given: the config stays as the user set it"


def test_without_a_flag_a_config_the_last_up_did_not_record_is_refused() -> None:
    """A checkout or a stash can revert Pulumi.phase1.yaml: the data's fate is never guessed."""
    pulumi = FakePulumi(all_stacks())
    code, said = run_destroy(pulumi, None, world=world(pulumi, preserveData="true")[0])
    assert code == 1
    assert "config says preserveData=true, but the last `up` recorded false" in said
    assert "--preserve-data" in said
    assert pulumi.calls == []


def test_nothing_is_destroyed_without_a_yes() -> None:
    pulumi = FakePulumi(all_stacks())
    code, said = run_destroy(pulumi, False, confirm=lambda question: False)
    assert code == 1
    assert "REMOVING the platform's data" in said
    assert "--yes" in said
    assert not [call for call in pulumi.calls if call[0] in ("destroy", "import")]


def test_cluster_gone_is_refused_while_kind_still_lists_the_cluster() -> None:
    pulumi = FakePulumi(all_stacks())
    code, said = run_destroy(pulumi, False, cluster_gone=True)
    assert code == 1
    assert "kind still lists the cluster blueprint: it is not gone" in said
    assert pulumi.calls == []


def test_the_apps_alone_record_nothing_in_the_platforms_stacks() -> None:
    """Deleting the apps says nothing about the platform's data."""
    pulumi = FakePulumi(all_stacks(preserveData="true"))
    pulumi.stack_outputs = {stack: planned(stack, preserveData="true").raw_outputs for stack in pulumi.states}
    assert run_destroy(pulumi, False, phase="3")[0] == 0
    assert ("import", "phase1") not in pulumi.calls
    assert ("import", "phase2") not in pulumi.calls
    assert pulumi.config == {}


def test_phase3_left_by_a_preserve_destroy_is_forgotten_once_its_gitlab_is_gone() -> None:
    pulumi = FakePulumi({"phase3": recorded_state("phase3", preserveData="true")}, gitlab=False)
    code, said = run_destroy(pulumi, False)
    assert code == 0, said
    assert not [r for r in pulumi.destroyed["phase3"] if lives_in_gitlab(r)]
    assert "it lived in GitLab's database, and that GitLab is gone" in said


def test_phase3_alone_is_deleted_through_gitlabs_api_when_gitlab_answers() -> None:
    pulumi = FakePulumi(all_stacks())
    code, said = run_destroy(pulumi, False, phase="3")
    assert code == 0, said
    assert [r for r in pulumi.destroyed["phase3"] if lives_in_gitlab(r)]
    assert "Pulumi's state only" not in said


def test_phase3_alone_with_gitlab_not_answering_is_refused_with_the_fix() -> None:
    pulumi = FakePulumi(all_stacks(), gitlab=False)
    code, said = run_destroy(pulumi, False, phase="3")
    assert code == 1
    assert "does not answer" in said
    assert "blueprint up --phase 2" in said
    assert ("destroy", "phase3") not in pulumi.calls


def test_with_a_brought_certificate_gitlab_not_answering_names_the_up_that_reads_its_issuing_ca_anew() -> None:
    """A rotated issuing CA reaches gateway-ca.crt through phase1's read of the Secret: `up --phase 2` keeps the old one."""
    pulumi = FakePulumi(all_stacks(), gitlab=False)
    pulumi.stack_outputs["phase1"] = {**pulumi.stack_outputs["phase1"], outputs.TLS_CERTIFICATE: ("certs/wildcard-tls", False)}
    code, said = run_destroy(pulumi, False, phase="3")
    assert code == 1
    assert "`uv run blueprint up --phase 1`, then `uv run blueprint up --phase 2`" in said


def test_destroy_asks_gitlab_with_the_admin_token_of_phase2s_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "gitlab-admin-token").write_text("FromTheFile42\n")
    sent: list[str] = []

    def probe(url: str, ca: str, headers: Mapping[str, str], *, timeout: float = 10) -> str:
        sent.append(dict(headers)["PRIVATE-TOKEN"])
        return "ok (GitLab 19.1.0)"

    monkeypatch.setattr(status, "probe", probe)
    phase2 = {outputs.GITLAB_URL: "https://gitlab.x", outputs.CA_CERT_FILE: "/ca.crt"}
    assert teardown._gitlab_answers({**phase2, outputs.ADMIN_TOKEN_FILE: str(tmp_path / "gitlab-admin-token")})
    assert sent == ["glpat-FromTheFile42"]


def test_phase3_alone_without_the_admin_token_file_is_refused_naming_the_file_and_the_fix(tmp_path: Path) -> None:
    pulumi = FakePulumi(all_stacks())
    missing = tmp_path / "gitlab-admin-token"
    the_world = dataclasses.replace(
        world(pulumi)[0], gitlab_answers=lambda phase2: teardown._gitlab_answers({**phase2, outputs.ADMIN_TOKEN_FILE: str(missing)})
    )
    code, said = run_destroy(pulumi, False, phase="3", world=the_world)
    assert code == 1
    assert (
        "blueprint: cannot ask GitLab whether it answers, for want of its admin token: phase2 is not up, or its data folder "
        f"is not on this machine: {missing}; run `uv run blueprint up` first"
    ) in said
    assert ("destroy", "phase3") not in pulumi.calls


def test_phase1_is_not_destroyed_from_under_a_running_phase2() -> None:
    pulumi = FakePulumi(all_stacks())
    code, said = run_destroy(pulumi, False, phase="1")
    assert code == 1
    assert "phase2 is up on phase1's cluster" in said
    assert pulumi.calls == []


def test_phase2_with_its_data_is_not_destroyed_from_under_a_running_phase3() -> None:
    pulumi = FakePulumi(all_stacks())
    code, said = run_destroy(pulumi, False, phase="2")
    assert code == 1
    assert "phase3's projects live in GitLab's data, which this destroy wipes" in said


def test_phase2_with_its_data_kept_may_go_while_phase3_stays() -> None:
    pulumi = FakePulumi(all_stacks())
    assert run_destroy(pulumi, True, phase="2")[0] == 0
    assert "phase2" in pulumi.destroyed
    assert pulumi.is_up("phase3")


def test_stacks_that_are_not_up_are_said_and_skipped() -> None:
    pulumi = FakePulumi({"phase1": recorded_state("phase1")})
    code, said = run_destroy(pulumi, False)
    assert code == 0
    assert "phase3: not up, nothing to destroy" in said
    assert [call for call in pulumi.calls if call[0] == "destroy"] == [("destroy", "phase1")]


@pytest.mark.parametrize("preserve", [False, True], ids=["--wipe-data", "--preserve-data"])
def test_a_destroy_that_destroys_no_stack_says_nothing_of_the_data_going_or_staying(tmp_path: Path, preserve: bool) -> None:
    """No stack exists, and no data folder: nothing is removed, and nothing kept either."""
    pulumi = FakePulumi({})
    code, said = run_destroy(pulumi, preserve, world=world(pulumi, dataDir=str(tmp_path / "data"))[0])
    assert code == 0, said
    assert "preserveData=" not in said


FAKE_KIND = """\
case "$KIND_MODE" in
  listed) echo blueprint ;;
  none) echo "No kind clusters found." >&2 ;;
  docker) echo 'ERROR: failed to list clusters: command "docker ps -a" failed: Cannot connect to the Docker daemon' >&2; exit 1 ;;
esac
"""


@pytest.mark.parametrize(
    ("mode", "status"),
    [("listed", "running"), ("none", "gone"), ("docker", "unknown")],
)
def test_kind_is_asked_and_only_an_answer_that_lists_no_cluster_means_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, status: str
) -> None:
    fake_command(tmp_path, "kind", FAKE_KIND)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    monkeypatch.setenv("KIND_MODE", mode)
    assert cluster_state("blueprint").status == status


def test_without_kind_the_cluster_state_is_unknown(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    state = cluster_state("blueprint")
    assert (state.status, state.detail) == ("unknown", "kind is not on PATH")


def test_a_docker_error_is_kept_for_the_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_command(tmp_path, "kind", FAKE_KIND)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    monkeypatch.setenv("KIND_MODE", "docker")
    assert "Cannot connect to the Docker daemon" in cluster_state("blueprint").detail


def test_the_recorded_states_are_real_plans() -> None:
    """Guard for the fixtures: the phase2 state holds Helm releases and the lease command."""
    resources = recorded_state("phase2")["deployment"]["resources"]
    assert any(r["type"] == "kubernetes:helm.sh/v3:Release" for r in resources)
    assert any(r["type"] == COMMAND and r["urn"].endswith("::cluster-lease") for r in resources)


@pytest.mark.parametrize("preserve", [True, False, None])
def test_a_destroy_never_runs_an_up(preserve: bool | None) -> None:
    """An `up` would apply any other change pending in the config, and cannot run without a cluster."""
    pulumi = FakePulumi(all_stacks())
    run_destroy(pulumi, preserve)
    assert not [call for call in pulumi.calls if call[0] == "up"]


def test_state_with_pending_operations_is_never_edited() -> None:
    """`pulumi stack import` drops pending operations: the record of a half-made resource."""
    stacks = all_stacks()
    stacks["phase1"]["deployment"]["pending_operations"] = [
        {"type": "creating", "resource": {"urn": "urn:pulumi:phase1::blueprint::x::kind-cluster"}}
    ]
    pulumi = FakePulumi(stacks)
    code, said = run_destroy(pulumi, False)
    assert code == 1
    assert "pending operations in phase1's state (creating kind-cluster)" in said
    assert not [call for call in pulumi.calls if call[0] in ("import", "destroy")]


def test_a_pending_create_of_a_resource_the_state_records_is_dropped_not_refused() -> None:
    """A later `up` made it, so the create is stale: it can no longer be imported (its URN is taken),
    only cleared, and Pulumi never clears it by itself: refusing would refuse every destroy for good."""
    stacks = all_stacks()
    stacks["phase1"]["deployment"]["pending_operations"] = [stale_create(stacks["phase1"], "kind-cluster")]
    pulumi = FakePulumi(stacks)
    code, said = run_destroy(pulumi, False)
    assert code == 0, said
    assert "phase1: dropped the stale pending CREATE of kind-cluster" in said
    assert ("import", "phase1") in pulumi.calls
    assert ("destroy", "phase1") in pulumi.calls


def test_a_stale_pending_create_is_dropped_but_any_other_pending_operation_still_refuses() -> None:
    stacks = all_stacks()
    stacks["phase1"]["deployment"]["pending_operations"] = [
        stale_create(stacks["phase1"], "kind-cluster"),
        {"type": "creating", "resource": {"urn": "urn:pulumi:phase1::blueprint::x::kind-data-folder-2"}},
    ]
    pulumi = FakePulumi(stacks)
    code, said = run_destroy(pulumi, False)
    assert code == 1
    assert "pending operations in phase1's state (creating kind-data-folder-2)" in said
    assert not [call for call in pulumi.calls if call[0] in ("import", "destroy")]


PROJECT_URN = "urn:pulumi:phase3::blueprint::pulumi-python:dynamic/gitlab:Project::app-project"
OLD_PROJECT = {
    "urn": PROJECT_URN,
    "id": "102",
    "custom": True,
    "type": "pulumi-python:dynamic/gitlab:Project",
    "inputs": {"namespace_id": 7.0},
    "outputs": {"claim": "c1"},
}


@pytest.mark.parametrize(
    "recorded",
    [
        OLD_PROJECT,
        {**OLD_PROJECT, "pendingReplacement": True},
        {**OLD_PROJECT, "inputs": {"namespace_id": 1007.0}, "pendingReplacement": True},
    ],
)
def test_a_pending_create_of_an_interrupted_replacement_is_kept(recorded: dict[str, object]) -> None:
    """The state keeps the old resource under the new one's URN while the replacement runs: dropping
    the create would leave what it was making (a new project, a new cluster) alive and forgotten."""
    new = {"urn": PROJECT_URN, "custom": True, "type": OLD_PROJECT["type"], "inputs": {"namespace_id": 1007.0}}
    deployment = {"resources": [recorded], "pending_operations": [{"resource": new, "type": "creating"}]}
    kept, dropped = without_stale_creates("phase3", deployment)
    assert dropped is None
    assert kept["pending_operations"] == deployment["pending_operations"]


@pytest.mark.parametrize("delete_first", [False, True])
def test_a_destroy_over_an_interrupted_replacement_is_refused_with_up_as_the_fix(delete_first: bool) -> None:
    stacks = all_stacks()
    stacks["phase1"]["deployment"]["pending_operations"] = [
        interrupted_replacement(stacks["phase1"], "kind-cluster", delete_first=delete_first)
    ]
    pulumi = FakePulumi(stacks)
    code, said = run_destroy(pulumi, False)
    assert code == 1
    assert "interrupted replacement of kind-cluster" in said
    assert "`uv run blueprint up` finishes it" in said
    assert "--clear-pending-creates` only if you know" in said
    assert not [call for call in pulumi.calls if call[0] in ("import", "destroy")]


@pytest.mark.parametrize(
    ("phase", "preserve", "command"),
    [("all", False, "uv run blueprint destroy --wipe-data"), ("2", True, "uv run blueprint destroy --phase 2 --preserve-data")],
)
def test_a_failed_destroy_says_to_run_the_same_destroy_again_never_an_up(phase: str, preserve: bool, command: str) -> None:
    """Following an `up` hint after a failed destroy would rebuild what was being destroyed; one
    without its `--phase` would take down phases the user meant to keep."""

    class Failing(FakePulumi):
        def destroy(self, stack: str, on_output: Callable[[str], None], env: Mapping[str, str], *, run_program: bool = False) -> None:
            raise StackFailed(stack, f"  kubernetes:helm.sh/v3:Release ({stack}-chart):\n    error: boom")

    pulumi = Failing(all_stacks())
    out = io.StringIO()
    context = Context(
        runner=pulumi,
        out=out,
        world=world(pulumi)[0],
        explain=lambda _phase, _stack, _output, resume: f"resume: {resume}",
        confirm=lambda q: True,
    )
    assert phases.destroy(context, phase, preserve) == 1
    assert f"resume: the same `{command}` again" in out.getvalue()


def test_wiping_phase1_after_a_preserve_destroy_of_phase2_is_refused_while_phase3_stays() -> None:
    """The data folder holds GitLab's data: phase3 would be left recording objects that are gone."""
    pulumi = FakePulumi({"phase1": recorded_state("phase1"), "phase3": recorded_state("phase3")})
    code, said = run_destroy(pulumi, False, phase="1")
    assert code == 1
    assert "destroy phase3 first" in said


def test_a_refused_destroy_leaves_phase1s_config_as_it_was() -> None:
    stacks = all_stacks()
    stacks["phase2"]["deployment"]["pending_operations"] = [{"type": "updating", "resource": {"urn": "urn:x::gitlab-chart"}}]
    pulumi = FakePulumi(stacks)
    assert run_destroy(pulumi, True)[0] == 1
    assert pulumi.config == {}


def test_destroying_only_the_apps_asks_about_the_apps_not_the_platforms_data() -> None:
    pulumi = FakePulumi(all_stacks())
    asked: list[str] = []

    def confirm(question: str) -> bool:
        asked.append(question)
        return True

    run_destroy(pulumi, False, phase="3", confirm=confirm)
    assert asked == ["Destroy phase3, deleting its projects from GitLab (the platform, its group and its data stay)?"]


def test_a_data_dir_the_config_refuses_does_not_stop_a_destroy_that_keeps_the_data() -> None:
    """A config edited since the `up` to a folder blueprint refuses: the destroy works from the states, not the config."""
    pulumi = FakePulumi(all_stacks())
    code, said = run_destroy(pulumi, True, world=world(pulumi, dataDir="/srv")[0])
    assert code == 0, said
    assert not any(pulumi.is_up(stack) for stack in ("phase1", "phase2"))


def phase3_left_by_a_preserve_destroy(tmp_path: Path, asked: list[str]) -> tuple[int, str]:
    """After `destroy --preserve-data` (phase3 kept, the data folder with it), phase1's config reverted
    to preserveData=false, then a plain `destroy`: only phase3 goes, GitLab being down."""
    data = tmp_path / "data"
    data.mkdir()
    (data / OWNER_MARKER).write_text(f"{PHASE1_HERE}\n")
    pulumi = FakePulumi({"phase3": recorded_state("phase3", preserveData="true")}, gitlab=False, cluster="gone")
    the_world, wiped = world(pulumi, cluster=ClusterState("gone"), dataDir=str(data), preserveData="false")

    def confirm(question: str) -> bool:
        asked.append(question)
        return True

    code, said = run_destroy(pulumi, None, world=the_world, confirm=confirm)
    assert (code, wiped) == (0, []), said
    return code, said


def test_a_destroy_that_destroys_phase3_alone_never_says_the_data_is_removed(tmp_path: Path) -> None:
    _, said = phase3_left_by_a_preserve_destroy(tmp_path, [])
    assert "the data is removed" not in said


def test_phase3_over_a_gitlab_that_is_not_up_is_asked_about_forgetting_its_projects_not_deleting_them(tmp_path: Path) -> None:
    asked: list[str] = []
    phase3_left_by_a_preserve_destroy(tmp_path, asked)
    assert asked == ["Destroy phase3, forgetting its projects (GitLab is not up: they stay in GitLab's kept data)?"]


@pytest.mark.parametrize("preserve", [None, False, True], ids=["as-configured", "--wipe-data", "--preserve-data"])
def test_a_destroy_with_nothing_up_says_nothing_is_up_and_records_nothing(tmp_path: Path, preserve: bool | None) -> None:
    """No stack records a resource: nothing is destroyed, no preserveData recorded, and the data folder said as it is."""
    pulumi = FakePulumi({})
    the_world, wiped = world(pulumi, dataDir=str(tmp_path / "data"), cluster=ClusterState("gone"))
    code, said = run_destroy(pulumi, preserve, world=the_world)
    assert code == 0, said
    assert "== nothing is up: no phase stack (phase1–3) of this checkout records a resource in Pulumi's state" in said
    assert f"== the data folder {tmp_path / 'data'} holds nothing of blueprint's: nothing to keep or remove" in said
    assert "the data is removed" not in said
    assert "kind still lists" not in said
    assert pulumi.config == {}
    assert pulumi.calls == []
    assert wiped == []


def test_a_destroy_with_nothing_up_says_blueprints_data_folder_is_kept(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / OWNER_MARKER).write_text(f"{PHASE1_HERE}\n")
    pulumi = FakePulumi({})
    code, said = run_destroy(pulumi, None, world=world(pulumi, dataDir=str(folder), cluster=ClusterState("gone"))[0])
    assert code == 0, said
    assert "== nothing is up" in said
    assert f"== the data folder {folder} is kept: no stack of this checkout holds it any more" in said


def test_a_destroy_with_nothing_up_names_a_cluster_kind_still_lists_with_its_delete(tmp_path: Path) -> None:
    """.pulumi-state/ lost, say: the state cannot tell whose the cluster is, so it is named, not deleted."""
    pulumi = FakePulumi({})
    code, said = run_destroy(pulumi, None, world=world(pulumi, dataDir=str(tmp_path / "data"), cluster=ClusterState("running"))[0])
    assert code == 0, said
    assert "== kind still lists a cluster blueprint, which no stack of this checkout records" in said
    assert "`kind delete cluster --name blueprint`" in said
    assert pulumi.calls == []


REFUSED_PHASE2 = {
    "version": 3,
    "deployment": {
        "resources": [
            {"urn": "urn:pulumi:phase2::blueprint::pulumi:pulumi:Stack::blueprint-phase2", "type": "pulumi:pulumi:Stack"},
            {"urn": "urn:pulumi:phase2::blueprint::pulumi:providers:pulumi::default", "type": "pulumi:providers:pulumi", "id": "x"},
            {
                "urn": "urn:pulumi:phase2::blueprint::pulumi:pulumi:StackReference::organization/blueprint/phase1",
                "type": "pulumi:pulumi:StackReference",
                "external": True,
                "id": "organization/blueprint/phase1",
            },
        ]
    },
}
"""phase2 after an `up --phase 2` refused for want of phase1: Pulumi keeps the read StackReference and its
default provider (pkg/backend/snapshot.go `readSnapshotMutation`), so `stack ls` counts 3 resources."""


def test_a_destroy_after_a_refused_phase2_up_says_nothing_is_up(tmp_path: Path) -> None:
    pulumi = FakePulumi({"phase2": REFUSED_PHASE2})
    code, said = run_destroy(pulumi, None, world=world(pulumi, dataDir=str(tmp_path / "data"))[0])
    assert code == 0, said
    assert "== nothing is up" in said
    assert "the data is removed" not in said


class DevUp(FakePulumi):
    """No phase stack, and `dev` up (`pulumi up -s dev`), its cluster blueprint-dev."""

    def outputs(self, stack: str) -> dict[str, object] | None:
        self.calls.append(("outputs", stack))
        return {outputs.CLUSTER_NAME: "blueprint-dev"} if stack == "dev" else None


def test_a_destroy_with_no_phase_stack_up_says_dev_is_up_with_its_own_destroy(tmp_path: Path) -> None:
    pulumi = DevUp({})
    code, said = run_destroy(pulumi, None, world=world(pulumi, dataDir=str(tmp_path / "data"))[0])
    assert code == 0, said
    assert "== dev is up: blueprint does not drive it; take it down with `pulumi destroy -s dev`" in said


def test_a_destroy_with_nothing_up_names_a_cluster_of_devs_name_kind_lists(tmp_path: Path) -> None:
    pulumi = FakePulumi({})
    the_world = world(pulumi, dataDir=str(tmp_path / "data"), cluster=ClusterState("running"), dev_clusters=("blueprint-dev",))[0]
    code, said = run_destroy(pulumi, None, world=the_world)
    assert "== kind still lists a cluster blueprint-dev, which no stack of this checkout records" in said


def test_a_destroy_with_dev_up_never_calls_devs_cluster_unrecorded(tmp_path: Path) -> None:
    pulumi = DevUp({})
    the_world = world(pulumi, dataDir=str(tmp_path / "data"), cluster=ClusterState("running"), dev_clusters=("blueprint-dev",))[0]
    code, said = run_destroy(pulumi, None, world=the_world)
    assert "kind still lists a cluster blueprint-dev" not in said


def test_a_destroy_of_phase3_that_is_not_up_says_so_not_that_its_projects_stay() -> None:
    pulumi = FakePulumi({"phase1": recorded_state("phase1")})
    code, said = run_destroy(pulumi, True, phase="3")
    assert code == 0, said
    assert "== phase3 is not up (no resource in Pulumi's state): nothing was destroyed" in said
    assert "its objects stay in GitLab" not in said
    assert pulumi.calls == []


EXISTING = {"cluster": "existing", "kubeContext": "prod", "domain": "platform.example.com"}


def on_an_existing_cluster(cluster: ClusterState) -> tuple[FakePulumi, teardown.World]:
    """The phase stacks up on an existing cluster, with `cluster` what kind would say of a kind cluster of the context's name."""
    pulumi = FakePulumi(all_stacks(**EXISTING))
    pulumi.stack_outputs = {stack: planned(stack, **EXISTING).raw_outputs for stack in pulumi.states}
    config = {**stack_config("phase1")[0], **{f"blueprint:{key}": value for key, value in EXISTING.items()}}
    return pulumi, dataclasses.replace(world(pulumi, cluster=cluster)[0], phase1_config=lambda: config)


@pytest.mark.parametrize("kind_says", [ClusterState("unknown", "kind is not on PATH"), ClusterState("gone")])
def test_on_an_existing_cluster_the_destroy_asks_nothing_of_kind_and_deletes_what_blueprint_made_there(kind_says: ClusterState) -> None:
    """No kind cluster is in the graph: what kind lists (or cannot) says nothing of the cluster, which the
    destroy reaches through its context and never deletes; phase1's destroy has nothing on it to delete."""
    pulumi, existing = on_an_existing_cluster(kind_says)
    code, said = run_destroy(pulumi, False, world=existing)
    assert code == 0, said
    assert [r for r in pulumi.destroyed["phase2"] if lives_in_cluster(r)], "phase2's objects were forgotten, not deleted"
    assert not [r for r in pulumi.destroyed["phase1"] if lives_in_cluster(r) or r["type"] == "blueprint:index:KindCluster"]
    assert "kind" not in said.replace("kind cluster", "")  # nothing of kind is said


def test_on_an_existing_cluster_cluster_gone_forgets_what_lived_in_it() -> None:
    pulumi, existing = on_an_existing_cluster(ClusterState("running"))  # kind's answer is never asked
    # Its context is gone from the kubeconfig: the cluster is (cli/cluster_identity.py).
    existing = dataclasses.replace(existing, identity=lambda context: Identity("no-context"))
    code, said = run_destroy(pulumi, False, world=existing, cluster_gone=True)
    assert code == 0, said
    assert not [r for r in pulumi.destroyed["phase2"] if lives_in_cluster(r)]
