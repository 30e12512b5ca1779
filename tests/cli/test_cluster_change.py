"""A change of phase1's config that replaces the kind cluster under a running platform: phase2 goes
first, keeping its data, and a whole `up` brings it back."""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from pathlib import Path

from cli import phases
from cli.cluster_change import make_way_for_a_new_cluster
from cli.lifecycle import lives_in_gitlab
from cli.phases import Context
from cli.stack_runner import StackFailed
from cli.teardown import World
from components.host_folder import PRESERVE_DATA, UP_SCRIPT
from tests.cli.teardown_fakes import FakePulumi, all_stacks, interrupted_replacement, stale_create, world


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
    assert [r["outputs"]["environment"][PRESERVE_DATA] for r in folders] == ["true"] * 2, "the platform's folders' data must stay"
    assert all(r["retainOnDelete"] for r in destroyed if lives_in_gitlab(r)), "the runner stays in GitLab's kept database"
    assert pulumi.is_up("phase3")
    assert "phase2 goes first, keeping its data" in "\n".join(out)


def test_a_stale_pending_create_in_phase2_does_not_stop_a_cluster_change() -> None:
    stacks = all_stacks()
    stacks["phase2"]["deployment"]["pending_operations"] = [stale_create(stacks["phase2"], "cluster-lease")]
    pulumi = FakePulumi(stacks)
    out: list[str] = []
    assert make_way_for_a_new_cluster(pulumi, out.append, "all", world=replacing(pulumi)) == 0, out
    assert pulumi.calls[-1] == ("destroy", "phase2")
    assert "phase2: dropped the stale pending CREATE of cluster-lease" in "\n".join(out)


def test_an_interrupted_replacement_in_phase2_stops_a_cluster_change() -> None:
    stacks = all_stacks()
    stacks["phase2"]["deployment"]["pending_operations"] = [interrupted_replacement(stacks["phase2"], "cluster-lease", delete_first=True)]
    pulumi = FakePulumi(stacks)
    out: list[str] = []
    assert make_way_for_a_new_cluster(pulumi, out.append, "all", world=replacing(pulumi)) == 1
    assert ("destroy", "phase2") not in pulumi.calls
    assert "interrupted replacement of cluster-lease" in "\n".join(out)
    assert "`uv run blueprint up --phase 2` finishes it" in "\n".join(out), "a whole `up` would come back here"


def test_a_cluster_change_goes_through_blueprint_up_in_order() -> None:
    pulumi = FakePulumi(all_stacks())
    out = io.StringIO()
    context = Context(runner=pulumi, out=out, world=replacing(pulumi), confirm=lambda question: True)
    assert phases.up(context, "all") == 0
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


def test_a_new_data_folder_under_a_running_platform_is_refused_not_a_new_platform(tmp_path: Path) -> None:
    """Over a new folder a new, empty platform would come up, and phase3's projects be lost to it."""
    pulumi = FakePulumi(all_stacks())
    out: list[str] = []
    moved = world(pulumi, dataDir=str(tmp_path / "elsewhere"))[0]
    assert make_way_for_a_new_cluster(pulumi, out.append, "all", world=moved) == 1
    assert "blueprint:dataDir changed" in "\n".join(out)
    assert pulumi.calls == []


def test_a_cluster_change_that_fails_half_way_resumes_with_the_whole_up_never_a_destroy() -> None:
    """A destroy there, with preserveData=false, would wipe what the change was keeping."""

    class Failing(FakePulumi):
        def destroy(self, stack: str, on_output: Callable[[str], None], env: Mapping[str, str], *, run_program: bool = False) -> None:
            raise StackFailed(stack, "error: boom")

    pulumi = Failing(all_stacks())
    out = io.StringIO()
    context = Context(
        runner=pulumi, out=out, world=replacing(pulumi), confirm=lambda q: True, explain=lambda phase, stack, output, resume: resume
    )
    assert phases.up(context, "all") == 1
    assert out.getvalue().splitlines()[-1] == "uv run blueprint up"
