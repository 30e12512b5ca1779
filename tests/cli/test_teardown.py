"""`blueprint destroy` on every route: the cluster gone, Docker stopped, GitLab gone, phase3 left
behind by a preserveData destroy, and a cluster change under a running platform.

The stacks' states here are made from the real program's plans (what `pulumi up` would have
recorded), and the fake Pulumi fails a destroy the way the real providers do when what a resource
lives in is unreachable: pulumi-kubernetes refuses to delete a Helm release on an unreachable
cluster before it looks at PULUMI_K8S_DELETE_UNREACHABLE (provider.go, v4.32; pulumi-kubernetes
#2675), and GitLab's objects need GitLab's API. So a route passes only if it removed exactly those
resources from state first.
"""

from __future__ import annotations

import copy
import dataclasses
import io
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from cli import commands, teardown
from cli.commands import Context, StackFailed
from cli.lifecycle import KV_SECRET, lives_in_cluster, lives_in_gitlab
from cli.teardown import ClusterState, World, cluster_state, destroy, make_way_for_a_new_cluster
from components.host_folder import KEEP_SCRIPT, LEASES_FOLDER, OWNER_MARKER, UP_SCRIPT, WIPE_SCRIPT
from components.kind_cluster import CLUSTER_MARKER
from providers.host_secret import WIPING_MARKER
from stacks import outputs
from stacks.config.schema import stack_config
from tests.plans import COMMAND, fake_command, planned


def recorded_state(stack: str, **config: str) -> dict[str, Any]:
    """What `pulumi stack export` would give after an `up` of `stack` with `config`."""
    resources = []
    for resource in planned(stack, **config).resources:
        state = {
            "urn": resource["urn"],
            "type": resource["type"],
            "custom": resource["custom"],
            "inputs": resource["inputs"],
            "outputs": resource["inputs"],
            "dependencies": resource["dependsOn"],
            "retainOnDelete": resource["retainOnDelete"],
        }
        for key in ("parent", "provider", "deletedWith"):
            if resource[key]:
                state[key] = resource[key]
        resources.append(state)
    return {"version": 3, "deployment": {"manifest": {}, "resources": resources}}


class FakePulumi:
    """Stacks with recorded state; a destroy fails like the real providers would."""

    def __init__(self, stacks: Mapping[str, dict[str, Any]], *, cluster: str = "running", gitlab: bool = True) -> None:
        self.states = {stack: copy.deepcopy(state) for stack, state in stacks.items()}
        self.stack_outputs = {stack: planned(stack).raw_outputs for stack in stacks}
        self.cluster, self.gitlab = cluster, gitlab
        self.calls: list[tuple[str, str]] = []
        self.config: dict[tuple[str, str], str] = {}
        self.destroyed: dict[str, list[dict[str, Any]]] = {}

    def outputs(self, stack: str) -> dict[str, Any] | None:
        if not self.is_up(stack):
            return None
        return {key: value for key, (value, _) in self.stack_outputs[stack].items()}

    def export_state(self, stack: str) -> dict[str, Any]:
        self.calls.append(("export", stack))
        return copy.deepcopy(self.states[stack])

    def import_state(self, stack: str, state: dict[str, Any]) -> None:
        self.calls.append(("import", stack))
        self.states[stack] = copy.deepcopy(state)

    def destroy(self, stack: str, on_output: Callable[[str], None], env: Mapping[str, str]) -> None:
        self.calls.append(("destroy", stack))
        resources = self.states[stack]["deployment"]["resources"]
        for resource in resources:
            if resource.get("retainOnDelete"):
                continue
            if self.cluster != "running" and lives_in_cluster(resource):
                raise StackFailed(stack, f"{resource['urn']}: can't delete Helm Release with unreachable cluster")
            if not self.gitlab and lives_in_gitlab(resource):
                raise StackFailed(stack, f"{resource['urn']}: GitLab does not answer")
        self.destroyed[stack] = resources
        self.states[stack] = {"version": 3, "deployment": {"resources": []}}  # as Pulumi does: the stack stays, empty

    def is_up(self, stack: str) -> bool:
        return bool(self.states.get(stack, {}).get("deployment", {}).get("resources"))

    def set_config(self, stack: str, key: str, value: str) -> None:
        self.config[(stack, key)] = value

    def up(self, stack: str, on_output: Callable[[str], None]) -> None:
        self.calls.append(("up", stack))

    def preview(self, stack: str, on_output: Callable[[str], None]) -> None:
        self.calls.append(("preview", stack))


CHECKOUT = "0123456789abcdef"
"""This checkout's id, in the tests' world."""
PHASE1_HERE = f"blueprint/phase1@{CHECKOUT}"
"""phase1 of this checkout: the owner its data folder's marker names."""


def world(
    pulumi: FakePulumi, *, cluster: ClusterState | None = None, checkout: str | None = CHECKOUT, **config: str
) -> tuple[World, list[tuple[str, str]]]:
    wiped: list[tuple[str, str]] = []

    def wipe(folder: str, owner: str) -> subprocess.CompletedProcess[str]:
        wiped.append((folder, owner))
        return subprocess.CompletedProcess([], 0, "wiped", "")

    phase1_config = {**stack_config("phase1")[0], **{f"blueprint:{key}": value for key, value in config.items()}}
    return (
        World(
            cluster=lambda name: cluster or ClusterState("gone" if pulumi.cluster == "gone" else "running"),
            gitlab_answers=lambda phase2: pulumi.gitlab,
            phase1_config=lambda: phase1_config,
            wipe_folder=wipe,
            checkout_id=lambda: checkout,
        ),
        wiped,
    )


def all_stacks(**config: str) -> dict[str, dict[str, Any]]:
    return {stack: recorded_state(stack, **config) for stack in ("phase1", "phase2", "phase3")}


def run_destroy(pulumi: FakePulumi, preserve: bool | None, phase: str = "all", **options: Any) -> tuple[int, str]:
    out: list[str] = []
    the_world = options.pop("world", None) or world(pulumi)[0]
    code = destroy(pulumi, out.append, commands.PHASES[phase], preserve, world=the_world, **options)
    return code, "\n".join(out)


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
    assert all(r["inputs"]["delete"] == KEEP_SCRIPT for r in folders)
    assert pulumi.config == {("phase1", "blueprint:preserveData"): "true"}


def test_wipe_data_records_the_wipe_over_a_recorded_keep() -> None:
    pulumi = FakePulumi(all_stacks(preserveData="true"))
    assert run_destroy(pulumi, False)[0] == 0
    folders = [r for stack in ("phase1", "phase2") for r in pulumi.destroyed[stack] if r["inputs"].get("create") == UP_SCRIPT]
    assert all(r["inputs"]["delete"] == WIPE_SCRIPT and r["outputs"]["delete"] == WIPE_SCRIPT for r in folders)


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


@pytest.fixture
def left_data(tmp_path: Path) -> Path:
    """A data folder phase1 claimed, kept by a preserveData destroy, over a cluster now deleted."""
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / OWNER_MARKER).write_text(f"{PHASE1_HERE}\n")
    (folder / CLUSTER_MARKER).write_text("blueprint\n")
    return folder


def after_a_preserve_destroy(left_data: Path, preserve_data: str = "false") -> tuple[FakePulumi, World, list[tuple[str, str]]]:
    pulumi = FakePulumi({"phase3": recorded_state("phase3", preserveData="true")}, gitlab=False, cluster="gone")
    the_world, wiped = world(pulumi, dataDir=str(left_data), preserveData=preserve_data)
    return pulumi, the_world, wiped


def test_wiping_after_a_preserve_destroy_removes_the_data_folder_no_stack_holds(left_data: Path) -> None:
    pulumi, the_world, wiped = after_a_preserve_destroy(left_data)
    code, said = run_destroy(pulumi, False, world=the_world)
    assert code == 0, said
    assert wiped == [(str(left_data), PHASE1_HERE)]


def test_the_data_folder_no_stack_holds_is_wiped_with_the_folders_its_phase2_claimed_inside(left_data: Path) -> None:
    """As phase1's own wipe would have: phase2 of this checkout, kept by the same preserveData destroy."""
    platform = left_data / "platform"
    platform.mkdir()
    (platform / OWNER_MARKER).write_text(f"blueprint/phase2@{CHECKOUT}\n")
    done = teardown._wipe_folder(str(left_data), PHASE1_HERE)
    assert done.returncode == 0, done.stderr
    assert not left_data.exists()


def test_a_data_folder_no_stack_holds_is_kept_without_wipe_data(left_data: Path) -> None:
    pulumi, the_world, wiped = after_a_preserve_destroy(left_data, preserve_data="true")
    code, said = run_destroy(pulumi, None, world=the_world)
    assert code == 0, said
    assert wiped == []


def test_a_data_folder_with_a_platform_still_on_its_cluster_is_not_wiped(left_data: Path) -> None:
    (left_data / LEASES_FOLDER).mkdir()
    (left_data / LEASES_FOLDER / "blueprint_phase2").write_text("blueprint/phase2\n")
    pulumi, the_world, wiped = after_a_preserve_destroy(left_data)
    code, said = run_destroy(pulumi, False, world=the_world)
    assert code == 1
    assert "a platform still runs on a cluster over it" in said
    assert wiped == []


def test_a_data_folder_whose_cluster_still_runs_is_not_wiped(left_data: Path) -> None:
    pulumi, _, wiped = after_a_preserve_destroy(left_data)
    the_world, wiped = world(pulumi, cluster=ClusterState("running"), dataDir=str(left_data))
    code, said = run_destroy(pulumi, False, world=the_world)
    assert code == 1
    assert "the kind cluster blueprint blueprint made over it still runs" in said
    assert wiped == []


def test_a_checkout_with_no_stack_left_never_wipes_a_data_folder(left_data: Path) -> None:
    """A fresh clone, or another checkout with the same absolute dataDir: it holds nothing here."""
    pulumi = FakePulumi({})
    the_world, wiped = world(pulumi, dataDir=str(left_data))
    code, said = run_destroy(pulumi, False, world=the_world)
    assert code == 0
    assert wiped == []
    assert f"sudo rm -rf {left_data}" in said


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


def test_destroy_asks_gitlab_with_the_admin_token_of_phase2s_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "gitlab-admin-token").write_text("FromTheFile42\n")
    sent: list[str] = []

    def probe(url: str, ca: str, headers: Mapping[str, str], *, timeout: float = 10) -> str:
        sent.append(dict(headers)["PRIVATE-TOKEN"])
        return "ok (GitLab 19.1.0)"

    monkeypatch.setattr(commands, "probe", probe)
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
        f"is not on this machine: {missing}; run `uv run blueprint up` / `pulumi up -s phase2` first"
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


def replacing(pulumi: FakePulumi) -> World:
    """phase1's config now changes what makes the cluster (two GitLab nodes instead of three)."""
    return world(pulumi, gitlabNodes="2")[0]


def test_a_change_that_replaces_the_cluster_takes_phase2_down_first_keeping_its_data() -> None:
    pulumi = FakePulumi(all_stacks())
    out: list[str] = []
    assert make_way_for_a_new_cluster(pulumi, out.append, "all", world=replacing(pulumi)) == 0
    assert pulumi.calls[-1] == ("destroy", "phase2")
    destroyed = pulumi.destroyed["phase2"]
    folders = [r for r in destroyed if r["inputs"].get("create") == UP_SCRIPT]
    assert [r["outputs"]["delete"] for r in folders] == [KEEP_SCRIPT] * 2, "the platform's folders' data must stay"
    assert all(r["retainOnDelete"] for r in destroyed if lives_in_gitlab(r)), "the runner stays in GitLab's kept database"
    assert pulumi.is_up("phase3")
    assert "phase2 goes first, keeping its data" in "\n".join(out)


def test_a_cluster_change_goes_through_blueprint_up_in_order() -> None:
    pulumi = FakePulumi(all_stacks())
    out = io.StringIO()
    context = Context(runner=pulumi, out=out, world=replacing(pulumi), confirm=lambda question: True)
    assert commands.up(context, "all") == 0
    assert [call for call in pulumi.calls if call[0] in ("destroy", "up")] == [
        ("destroy", "phase2"), ("up", "phase1"), ("up", "phase2"), ("up", "phase3"),
    ]  # fmt: skip


def test_a_cluster_change_is_not_applied_without_a_yes() -> None:
    pulumi = FakePulumi(all_stacks())
    out: list[str] = []
    assert make_way_for_a_new_cluster(pulumi, out.append, "all", world=replacing(pulumi), confirm=lambda question: False) == 1
    assert "run `uv run blueprint up` in a terminal, or with --yes" in "\n".join(out)
    assert pulumi.calls == []


def test_a_cluster_change_with_phase_1_alone_is_refused_with_the_command() -> None:
    pulumi = FakePulumi(all_stacks())
    out: list[str] = []
    assert make_way_for_a_new_cluster(pulumi, out.append, "1", world=replacing(pulumi)) == 1
    assert "`uv run blueprint up` applies the change" in "\n".join(out)
    assert not [call for call in pulumi.calls if call[0] == "destroy"]


def test_an_unchanged_cluster_takes_nothing_down() -> None:
    pulumi = FakePulumi(all_stacks())
    assert make_way_for_a_new_cluster(pulumi, print, "all", world=world(pulumi, preserveData="true")[0]) == 0
    assert pulumi.calls == []


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


FAKE_PULUMI = """\
echo "$*" >> "$PULUMI_CALLS"
case "$1 $2" in
  "stack export") echo '{"version": 3, "deployment": {"resources": []}}' ;;
  "stack import") echo "$4" > "$PULUMI_IMPORTED"; echo "error: the stack is locked" >&2; exit 255 ;;
  "version ") echo "v3.272.0" ;;
  *) case "$*" in *"stack ls --json"*) echo "$PULUMI_STACKS" ;; esac ;;
esac
"""


@pytest.fixture
def fake_pulumi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    fake_command(tmp_path / "bin", "pulumi", FAKE_PULUMI)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    monkeypatch.setenv("PULUMI_CALLS", str(tmp_path / "calls"))
    monkeypatch.setenv("PULUMI_IMPORTED", str(tmp_path / "imported"))
    return tmp_path


def test_state_is_exported_with_its_secrets_still_encrypted(fake_pulumi: Path) -> None:
    assert commands.AutomationRunner().export_state("phase2") == {"version": 3, "deployment": {"resources": []}}
    assert (fake_pulumi / "calls").read_text().startswith("stack export --stack phase2")
    assert "--show-secrets" not in (fake_pulumi / "calls").read_text()


def test_a_failed_import_is_a_stack_failure_and_leaves_no_state_file_behind(fake_pulumi: Path) -> None:
    with pytest.raises(StackFailed) as failed:
        commands.AutomationRunner().import_state("phase2", {"version": 3, "deployment": {"resources": []}})
    assert "the stack is locked" in failed.value.output
    assert not Path((fake_pulumi / "imported").read_text().strip()).exists()


def test_a_new_data_folder_under_a_running_platform_is_refused_not_a_new_platform(tmp_path: Path) -> None:
    """Over a new folder a new, empty platform would come up, and phase3's projects be lost to it."""
    pulumi = FakePulumi(all_stacks())
    out: list[str] = []
    moved = world(pulumi, dataDir=str(tmp_path / "elsewhere"))[0]
    assert make_way_for_a_new_cluster(pulumi, out.append, "all", world=moved) == 1
    assert "blueprint:dataDir changed" in "\n".join(out)
    assert pulumi.calls == []


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


def test_a_failed_destroy_says_to_run_the_destroy_again_never_an_up() -> None:
    """Following an `up` hint after a failed destroy would rebuild what was being destroyed."""

    class Failing(FakePulumi):
        def destroy(self, stack: str, on_output: Callable[[str], None], env: Mapping[str, str]) -> None:
            raise StackFailed(stack, f"  kubernetes:helm.sh/v3:Release ({stack}-chart):\n    error: boom")

    pulumi = Failing(all_stacks())
    out = io.StringIO()
    context = Context(
        runner=pulumi,
        out=out,
        world=world(pulumi)[0],
        explain=lambda phase, stack, output, resume: f"resume: {resume}",
        confirm=lambda q: True,
    )
    assert commands.destroy(context, "all", False) == 1
    assert "resume: the same `uv run blueprint destroy` again" in out.getvalue()


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


def test_wiping_the_folder_of_an_earlier_preserve_destroy_asks_first(left_data: Path) -> None:
    pulumi, the_world, wiped = after_a_preserve_destroy(left_data)
    code, said = run_destroy(pulumi, False, world=the_world, confirm=lambda question: "REMOVING" not in question)
    assert code == 1
    assert wiped == []


def test_the_folder_is_not_wiped_from_under_phase3_by_destroying_phase1_alone(left_data: Path) -> None:
    pulumi, the_world, wiped = after_a_preserve_destroy(left_data)
    code, said = run_destroy(pulumi, False, phase="1", world=the_world)
    assert code == 1
    assert "destroy phase3 too" in said
    assert wiped == []


def test_a_wipe_of_that_folder_started_before_is_finished_with_no_stack_left(left_data: Path) -> None:
    """Only this wipe's own marker proves a checkout with no stack left may finish it."""
    (left_data / WIPING_MARKER).touch()
    pulumi = FakePulumi({})
    the_world, wiped = world(pulumi, cluster=ClusterState("gone"), dataDir=str(left_data))
    code, said = run_destroy(pulumi, False, world=the_world)
    assert code == 0, said
    assert wiped == [(str(left_data), PHASE1_HERE)]


@pytest.mark.parametrize(
    "listed",
    [
        '[{"name": "phase2", "current": false}]',  # made by `stack init` (or a preview), never updated: no count
        '[{"name": "phase2", "current": false, "resourceCount": 0}]',  # destroyed: Pulumi keeps it, empty
        "[]",
    ],
)
def test_a_stack_that_holds_no_resource_is_not_up(fake_pulumi: Path, monkeypatch: pytest.MonkeyPatch, listed: str) -> None:
    monkeypatch.setenv("PULUMI_STACKS", listed)
    assert commands.AutomationRunner().outputs("phase2") is None


def test_a_cluster_change_that_fails_half_way_resumes_with_the_whole_up_never_a_destroy() -> None:
    """A destroy there, with preserveData=false, would wipe what the change was keeping."""

    class Failing(FakePulumi):
        def destroy(self, stack: str, on_output: Callable[[str], None], env: Mapping[str, str]) -> None:
            raise StackFailed(stack, "error: boom")

    pulumi = Failing(all_stacks())
    out = io.StringIO()
    context = Context(
        runner=pulumi, out=out, world=replacing(pulumi), confirm=lambda q: True, explain=lambda phase, stack, output, resume: resume
    )
    assert commands.up(context, "all") == 1
    assert out.getvalue().splitlines()[-1] == "uv run blueprint up"


@pytest.mark.parametrize("marker", ["blueprint/phase1@fedcba9876543210", "blueprint/phase1"], ids=["another checkout", "before ids"])
def test_a_data_folder_that_names_another_checkouts_phase1_is_not_wiped(left_data: Path, marker: str) -> None:
    """The same stack of another checkout (or a marker from before markers named the checkout, which
    may be another's) is another owner: only the user can remove its data."""
    (left_data / OWNER_MARKER).write_text(f"{marker}\n")
    pulumi, the_world, wiped = after_a_preserve_destroy(left_data)
    code, said = run_destroy(pulumi, False, world=the_world)
    assert code == 1
    assert f"not this checkout's phase1 ({PHASE1_HERE})" in said
    assert wiped == []


def test_a_checkout_that_never_ran_a_stack_wipes_no_data_folder(left_data: Path) -> None:
    pulumi = FakePulumi({"phase3": recorded_state("phase3", preserveData="true")}, gitlab=False, cluster="gone")
    the_world, wiped = world(pulumi, checkout=None, dataDir=str(left_data), preserveData="false")
    code, said = run_destroy(pulumi, False, world=the_world)
    assert code == 1
    assert "this checkout never ran a stack" in said
    assert wiped == []


def test_a_data_dir_the_config_refuses_does_not_stop_a_destroy_that_keeps_the_data() -> None:
    """A config edited since the `up` to a folder blueprint refuses: the destroy works from the states, not the config."""
    pulumi = FakePulumi(all_stacks())
    code, said = run_destroy(pulumi, True, world=world(pulumi, dataDir="/srv")[0])
    assert code == 0, said
    assert not any(pulumi.is_up(stack) for stack in ("phase1", "phase2"))


# The image cache: kept by every destroy, removed by `--wipe-cache` once phase1's destroy stopped its mirrors.


def with_a_cache(tmp_path: Path, *, marker: bool = True, others: tuple[str, ...] = ()) -> tuple[FakePulumi, World, Path, list[list[str]]]:
    """Every stack up, phase1's mirrors storing into a cache folder in `tmp_path` (with its marker), and
    `others`: containers of another platform labelled with the same folder. Docker lists phase1's own
    mirrors until phase1 is destroyed."""
    from cli import image_cache
    from components.image_cache import CACHE_LABEL, CACHE_MARKER, mirror_container, mirrors

    folder = tmp_path / "images"
    (folder / "docker.io" / "storage").mkdir(parents=True)
    (folder / "docker.io" / "storage" / "blob").write_bytes(b"x" * 300_000)
    if marker:
        (folder / CACHE_MARKER).write_text("blueprint's image cache\n")
    pulumi = FakePulumi(all_stacks())
    own = mirrors("blueprint")
    pulumi.stack_outputs["phase1"] = {
        **pulumi.stack_outputs["phase1"],
        outputs.IMAGE_CACHE_DIR: (str(folder), False),
        outputs.IMAGE_MIRRORS: (own, False),
    }
    asked: list[list[str]] = []

    def docker(argv: Sequence[str]) -> tuple[int, str]:
        asked.append(list(argv))
        assert argv[:5] == ["docker", "ps", "--all", "--filter", f"label={CACHE_LABEL}={folder}"], argv
        listed = [f"{name}\tblueprint/phase2@elsewhere" for name in others]
        if pulumi.is_up("phase1"):
            listed += [f"{mirror_container('blueprint', registry)}\t{PHASE1_HERE}" for registry in own]
        return 0, "".join(f"{line}\n" for line in listed)

    the_world = dataclasses.replace(world(pulumi)[0], docker=docker, wipe_cache=lambda path: image_cache.wipe(path, docker, "unused-image"))
    return pulumi, the_world, folder, asked


def test_wipe_cache_removes_the_cache_after_phase1s_destroy_and_says_how_much_it_freed(tmp_path: Path) -> None:
    pulumi, the_world, folder, _ = with_a_cache(tmp_path)
    code, said = run_destroy(pulumi, True, world=the_world, wipe_cache=True)
    assert code == 0, said
    assert not folder.exists()
    assert [stack for verb, stack in pulumi.calls if verb == "destroy"] == ["phase2", "phase1"]
    assert f"== removed the image cache {folder}, freeing " in said
    assert said.index("== phase1: pulumi destroy") < said.index("removed the image cache")


def test_every_destroy_keeps_the_image_cache_and_says_how_to_remove_it(tmp_path: Path) -> None:
    pulumi, the_world, folder, _ = with_a_cache(tmp_path)
    code, said = run_destroy(pulumi, False, world=the_world)
    assert code == 0, said
    assert (folder / "docker.io" / "storage" / "blob").exists()
    assert f"== the image cache {folder} (" in said
    assert "is kept for the next `up`: `uv run blueprint destroy --wipe-cache` removes it" in said


def test_wipe_cache_with_a_destroy_that_keeps_phase1_is_refused_before_anything_is_destroyed(tmp_path: Path) -> None:
    pulumi, the_world, folder, _ = with_a_cache(tmp_path)
    assert run_destroy(pulumi, False, phase="3")[0] == 0
    code, said = run_destroy(pulumi, True, phase="2", world=the_world, wipe_cache=True)
    assert code == 1
    assert "--wipe-cache removes the image cache, which phase1's registry mirrors store into" in said
    assert "this destroy (phase 2) keeps phase1 up; nothing was destroyed" in said
    assert pulumi.is_up("phase2")
    assert folder.exists()


def test_wipe_cache_with_the_cache_off_says_there_is_nothing_to_wipe_and_goes_on(tmp_path: Path) -> None:
    pulumi = FakePulumi(all_stacks())
    pulumi.stack_outputs["phase1"][outputs.IMAGE_CACHE_DIR] = ("", False)
    the_world = world(pulumi, imageCache="false")[0]
    code, said = run_destroy(pulumi, True, world=the_world, wipe_cache=True)
    assert code == 0, said
    assert "== image cache: off (blueprint:imageCache=false): nothing to wipe" in said
    assert not pulumi.is_up("phase1")


def test_wipe_cache_after_the_cache_was_turned_off_removes_the_folder_it_left(tmp_path: Path) -> None:
    from cli import image_cache

    pulumi, the_world, folder, _ = with_a_cache(tmp_path)
    pulumi.stack_outputs["phase1"][outputs.IMAGE_CACHE_DIR] = ("", False)
    pulumi.stack_outputs["phase1"][outputs.IMAGE_MIRRORS] = ({}, False)
    config = {**the_world.phase1_config(), "blueprint:imageCache": "false", "blueprint:imageCacheDir": str(folder)}
    no_mirrors = lambda argv: (0, "")  # noqa: E731 (turned off: phase1 runs none)
    wipe = lambda path: image_cache.wipe(path, no_mirrors, "unused-image")  # noqa: E731
    the_world = dataclasses.replace(the_world, phase1_config=lambda: config, docker=no_mirrors, wipe_cache=wipe)
    code, said = run_destroy(pulumi, True, world=the_world, wipe_cache=True)
    assert code == 0, said
    assert f"but {folder} still holds what it cached: removing it" in said
    assert not (folder / "docker.io").exists()


def test_wipe_cache_refused_for_a_silent_docker_gives_the_removal_by_hand(tmp_path: Path) -> None:
    pulumi, the_world, folder, _ = with_a_cache(tmp_path)
    the_world = dataclasses.replace(the_world, docker=lambda argv: (1, "Cannot connect to the Docker daemon"))
    code, said = run_destroy(pulumi, True, world=the_world, wipe_cache=True)
    assert code == 1
    assert f"rm -rf {folder / 'docker.io'}" in said
    assert pulumi.is_up("phase1")


def test_wipe_cache_keeps_the_folder_when_a_mirror_still_stores_into_it_after_the_destroy(tmp_path: Path) -> None:
    from components.image_cache import mirror_container

    pulumi, the_world, folder, _ = with_a_cache(tmp_path)
    left = mirror_container("blueprint", "docker.io")  # its `docker rm` failed: the destroy only warned
    still = lambda argv: (0, f"{left}\t{PHASE1_HERE}\n")  # noqa: E731
    code, said = run_destroy(pulumi, True, world=dataclasses.replace(the_world, docker=still), wipe_cache=True)
    assert code == 1
    assert f"docker rm --force {left}" in said
    assert (folder / "docker.io" / "storage" / "blob").is_file()


def test_wipe_cache_takes_the_mirrors_phase1_started_for_its_own_when_its_outputs_do_not_list_them(tmp_path: Path) -> None:
    # An up that failed after the mirrors started keeps the outputs of the last that succeeded, without them.
    pulumi, the_world, folder, _ = with_a_cache(tmp_path)
    del pulumi.stack_outputs["phase1"][outputs.IMAGE_MIRRORS]
    code, said = run_destroy(pulumi, True, world=the_world, wipe_cache=True)
    assert code == 0, said
    assert not (folder / "docker.io").exists()


def test_wipe_cache_of_a_folder_that_is_not_there_says_so_and_goes_on(tmp_path: Path) -> None:
    pulumi, the_world, folder, _ = with_a_cache(tmp_path)
    shutil.rmtree(folder)
    code, said = run_destroy(pulumi, True, world=the_world, wipe_cache=True)
    assert code == 0, said
    assert f"== image cache: {folder} does not exist: nothing to wipe" in said
    assert not pulumi.is_up("phase1")


def test_wipe_cache_refuses_a_folder_without_the_cache_marker_before_anything_is_destroyed(tmp_path: Path) -> None:
    pulumi, the_world, folder, _ = with_a_cache(tmp_path, marker=False)
    code, said = run_destroy(pulumi, True, world=the_world, wipe_cache=True)
    assert code == 1
    assert f"--wipe-cache: {folder} has no .blueprint-image-cache, so it is not an image cache blueprint made" in said
    assert "`pulumi config set -s phase1 blueprint:imageCacheDir <the cache folder>`" in said
    assert pulumi.is_up("phase1")
    assert (folder / "docker.io" / "storage" / "blob").exists()


def test_wipe_cache_refuses_while_another_platforms_mirrors_store_into_the_folder(tmp_path: Path) -> None:
    pulumi, the_world, folder, _ = with_a_cache(tmp_path, others=("other-mirror-docker-io",))
    code, said = run_destroy(pulumi, True, world=the_world, wipe_cache=True)
    assert code == 1
    assert "these containers still store into it: other-mirror-docker-io (blueprint/phase2@elsewhere)" in said
    assert "`docker rm --force other-mirror-docker-io`" in said
    assert pulumi.is_up("phase1")
    assert folder.exists()


def test_wipe_cache_takes_phase1s_mirrors_named_by_rooted_dns_endpoints_for_its_own(tmp_path: Path) -> None:
    from components.image_cache import MIRRORED_REGISTRIES, mirror_container

    pulumi, the_world, folder, _ = with_a_cache(tmp_path)
    rooted = {registry: f"{mirror_container('blueprint', registry)}.:5000" for registry in MIRRORED_REGISTRIES}
    pulumi.stack_outputs["phase1"] = {**pulumi.stack_outputs["phase1"], outputs.IMAGE_MIRRORS: (rooted, False)}
    code, said = run_destroy(pulumi, True, world=the_world, wipe_cache=True)
    assert code == 0, said
    assert not folder.exists()


def test_wipe_cache_is_refused_when_docker_cannot_say_who_uses_the_folder(tmp_path: Path) -> None:
    pulumi, the_world, folder, _ = with_a_cache(tmp_path)
    silent = dataclasses.replace(the_world, docker=lambda argv: (1, "Cannot connect to the Docker daemon"))
    code, said = run_destroy(pulumi, True, world=silent, wipe_cache=True)
    assert code == 1
    assert "--wipe-cache: Docker does not answer" in said
    assert pulumi.is_up("phase1")
    assert folder.exists()


def test_wipe_cache_after_phase1_was_destroyed_earlier_asks_then_removes_the_cache(tmp_path: Path) -> None:
    pulumi, the_world, folder, _ = with_a_cache(tmp_path)
    phase1 = {key: value for key, (value, _) in pulumi.stack_outputs["phase1"].items()}
    assert run_destroy(pulumi, True, world=the_world)[0] == 0
    questions: list[str] = []
    kept_config = dataclasses.replace(
        the_world, phase1_config=lambda: {**stack_config("phase1")[0], "blueprint:imageCacheDir": phase1[outputs.IMAGE_CACHE_DIR]}
    )

    def confirm(question: str) -> bool:
        questions.append(question)
        return True

    code, said = run_destroy(pulumi, True, world=kept_config, wipe_cache=True, confirm=confirm)
    assert code == 0, said
    assert questions == [f"Remove the image cache {folder} (the images the next `up` would otherwise not download again)?"]
    assert not folder.exists()
