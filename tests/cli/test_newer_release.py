"""`blueprint up`, `preview` and `destroy` over stacks a newer blueprint release brought up change
nothing: before a cluster change, an up or a destroy (after `up`'s doctor, which changes nothing),
they read every phase stack's recorded release and refuse with the program's own sentence
(stacks/migrations.py, `refusal`)."""

from __future__ import annotations

import copy
import io

import pytest

import versions
from cli import phases
from cli.cluster_change import make_way_for_a_new_cluster
from cli.phases import Context
from cli.plan import ProgramFailed, plan
from cli.stand_ins import RecordedLayout
from stacks import migrations, outputs
from stacks.migrations import Migration, MigrationContext
from tests.cli.teardown_fakes import FakePulumi, all_stacks, world

NEWER = "9.0.0"
CHANGES = ("export", "import", "destroy", "up", "preview")


def stacks_of(release: str, *, new_cluster: bool = True) -> FakePulumi:
    """The three phase stacks, brought up by `release`, whose kind node image (say) differs from this
    checkout's: phase1's recorded clusterId is not the one this checkout plans, a cluster change."""
    pulumi = FakePulumi(all_stacks())
    for stack in pulumi.stack_outputs:
        pulumi.stack_outputs[stack] = {**pulumi.stack_outputs[stack], outputs.BLUEPRINT_VERSION: (release, False)}
    if new_cluster:
        pulumi.stack_outputs["phase1"] = {**pulumi.stack_outputs["phase1"], outputs.CLUSTER_ID: ("0123456789abcdef", False)}
    return pulumi


def run(pulumi: FakePulumi, verb: str) -> tuple[int, str, list[str]]:
    """`verb` (up, preview, or destroy --wipe-data) of every phase; (exit code, what it said, the doctor's runs)."""
    out, doctored = io.StringIO(), []

    def doctor() -> int:
        doctored.append("doctor")
        return 0

    context = Context(runner=pulumi, out=out, world=world(pulumi)[0], confirm=lambda question: True, doctor=doctor)
    if verb == "destroy":
        return phases.destroy(context, "all", preserve=False), out.getvalue(), doctored
    code = phases.up(context, "all") if verb == "up" else phases.preview(context, "all")
    return code, out.getvalue(), doctored


def program_says(release: str) -> str:
    with pytest.raises(ProgramFailed) as failed:
        plan("phase1", recorded={outputs.BLUEPRINT_VERSION: release})
    return str(failed.value.cause)


@pytest.mark.parametrize(("verb", "doctor"), [("up", ["doctor"]), ("preview", [])])
def test_up_and_preview_over_a_newer_releases_stacks_change_nothing(verb: str, doctor: list[str]) -> None:
    """`up` runs its doctor first, which changes nothing either."""
    pulumi = stacks_of(NEWER)
    code, said, doctored = run(pulumi, verb)
    assert (code, doctored) == (1, doctor)
    assert [call for call in pulumi.calls if call[0] in CHANGES] == []
    assert said == f"blueprint: {program_says(NEWER)}\n"


def test_destroy_over_a_newer_releases_stacks_changes_nothing() -> None:
    """Not even preserveData, nor this checkout's delete scripts in the newer release's state."""
    pulumi = stacks_of(NEWER)
    before = copy.deepcopy(pulumi.states)
    code, said, _ = run(pulumi, "destroy")
    assert (code, said) == (1, f"blueprint: {program_says(NEWER)}\n")
    assert pulumi.calls == []
    assert pulumi.config == {}
    assert pulumi.states == before


def test_a_newer_release_of_one_stack_is_enough_to_refuse() -> None:
    pulumi = stacks_of(versions.BLUEPRINT, new_cluster=False)
    pulumi.stack_outputs["phase3"] = {**pulumi.stack_outputs["phase3"], outputs.BLUEPRINT_VERSION: (NEWER, False)}
    code, said, _ = run(pulumi, "up")
    assert code == 1
    assert said.startswith(f"blueprint: stack phase3's blueprintVersion records blueprint {NEWER}, newer than this checkout")


def test_a_recorded_release_that_is_no_version_is_refused_in_a_bounded_message() -> None:
    crafted = "\x1b]0;owned\x07" + "9" * 5000 + "\nphase2: up"
    pulumi = stacks_of(crafted)
    code, said, _ = run(pulumi, "up")
    assert code == 1
    assert [call for call in pulumi.calls if call[0] in CHANGES] == []
    assert said.startswith("blueprint: stack phase1's blueprintVersion records '")
    assert len(said) < 600
    assert "\x1b" not in said
    assert said.count("\n") == 1


def test_an_up_over_an_older_releases_stacks_goes_on_through_the_cluster_change() -> None:
    """The upgrade: the new release's kind node image replaces the cluster; phase2 goes first, keeping its data."""
    pulumi = stacks_of("0.0.9")
    code, _, doctored = run(pulumi, "up")
    assert (code, doctored) == (0, ["doctor"])
    assert [call for call in pulumi.calls if call[0] in ("destroy", "up")] == [
        ("destroy", "phase2"),
        ("up", "phase1"),
        ("up", "phase2"),
        ("up", "phase3"),
    ]


def test_a_cluster_change_under_a_newer_release_still_runs_phase2s_data_migration(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cluster change's destroy of phase2 deletes its outputs, its blueprintVersion with them; the
    layout record beside its data (which 0.1.0's claim wrote) still says 0.1.0, so phase2's `up` migrates."""
    ran: list[str] = []

    def move_volumes(context: MigrationContext) -> None:
        ran.append(f"{context.stack} from {context.layout}")

    pulumi = stacks_of(versions.BLUEPRINT, new_cluster=False)
    monkeypatch.setattr(versions, "BLUEPRINT", NEWER)
    moves = Migration(version=NEWER, summary="moves phase2's volumes", phases=("phase2",), run=move_volumes)
    monkeypatch.setattr(migrations, "MIGRATIONS", (moves,))
    assert make_way_for_a_new_cluster(pulumi, print, "all", world=world(pulumi, gitlabNodes="2")[0]) == 0
    assert pulumi.outputs("phase2") is None
    plan("phase2", recorded={}, layout_records=RecordedLayout("0.1.0"))
    assert ran == ["phase2 from 0.1.0"]
