"""The program as `blueprint destroy` runs it (`pulumi destroy --run-program` of phase2 on an existing
cluster, `runtime.Runtime.destroying`): it registers what an `up` registers, so each resource's options
still match the state, and refuses nothing an `up` refuses before its resources: a destroy must never be
worse than the destroy from the state alone it stands for (docs/design/decisions.md, entry 55).
The real program under Pulumi's mocks; phase1's plan is the cached one.
"""

from __future__ import annotations

from typing import Any

import pytest

import versions
from cli.plan import plan
from cli.stand_ins import RecordedLayout
from stacks import migrations, outputs
from stacks.migrations import Migration, MigrationContext
from tests.plans import planned

EXISTING = {"cluster": "existing", "kubeContext": "prod", "domain": "platform.example.com"}
FULL = {f"blueprint:{key}": value for key, value in EXISTING.items()}


def as_an_up() -> list[dict[str, Any]]:
    """What phase2's `up` registers, but the read of its own outputs (for its release, which a destroy
    does not check): a read resource, which a destroy only drops from the state."""
    itself = "pulumi:pulumi:StackReference::organization/blueprint/phase2"
    return [resource for resource in planned("phase2", **EXISTING).resources if not resource["urn"].endswith(itself)]


def destroying(layout_records: RecordedLayout | None = None, overrides: dict[str, str] = FULL) -> list[dict[str, Any]]:
    """The resources phase2's program registers when a destroy runs it, phase1 up as planned."""
    phase1 = planned("phase1", **EXISTING)
    result = plan("phase2", overrides, planned_upstream={"phase1": phase1}, layout_records=layout_records, destroying=True)
    return result.resources


def test_a_destroy_runs_phase2s_program_over_a_phase1_an_older_release_brought_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """`blueprint destroy` accepts older stacks; an `up` would say "bring phase1 up with this release first"."""
    up = as_an_up()
    monkeypatch.setattr(versions, "BLUEPRINT", "9.9.9")
    assert destroying() == up


def test_a_destroy_runs_phase2s_program_while_a_wipe_of_its_folders_stopped_half_way() -> None:
    """The refusal names this same destroy as the fix: refusing it would be a loop."""

    class HalfWiped(RecordedLayout):
        def unfinished_wipe(self, folder: str) -> str | None:
            return f"a destroy that removes {folder} stopped half-way: run `uv run blueprint destroy --phase 2 --wipe-data` again"

    assert destroying(HalfWiped()) == as_an_up()


def test_a_destroy_runs_no_migration_and_writes_no_layout_record(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []

    def run(context: MigrationContext) -> None:
        ran.append(context.stack)

    due = Migration(version=versions.BLUEPRINT, summary="moves", phases=("phase1", "phase2", "phase3"), run=run)
    monkeypatch.setattr(migrations, "MIGRATIONS", (due,))
    layout = RecordedLayout("0.0.1")
    destroying(layout)
    assert (ran, layout.layout) == ([], "0.0.1")


def test_a_destroy_runs_phase2s_program_with_a_key_this_release_does_not_know() -> None:
    """A stack file another release wrote: an `up` refuses it whole; the destroy needs only what it reads."""
    resources = destroying(overrides={**FULL, "blueprint:renamedByAnotherRelease": "x"})
    assert resources == as_an_up()


def test_an_up_still_refuses_a_phase1_an_older_release_brought_up(monkeypatch: pytest.MonkeyPatch) -> None:
    from cli.plan import ProgramFailed

    phase1 = planned("phase1", **EXISTING)
    monkeypatch.setattr(versions, "BLUEPRINT", "9.9.9")
    with pytest.raises(ProgramFailed, match="bring phase1 up with this release first"):
        plan("phase2", FULL, planned_upstream={"phase1": phase1})
    assert outputs.BLUEPRINT_VERSION in phase1.outputs
