"""The program as `blueprint destroy` runs it (`pulumi destroy --run-program` of phase2 on an existing
cluster, `runtime.Runtime.destroying`): it registers what an `up` registers, so each resource's options
still match the state, and refuses nothing an `up` refuses before its resources: a destroy must never be
worse than the destroy from the state alone it stands for (docs/design/decisions.md, entry 55).
The real program under Pulumi's mocks, planned once here with everything an `up` refuses or does first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

import versions
from cli.plan import ProgramFailed, plan
from cli.stand_ins import RecordedLayout
from stacks import migrations
from stacks.migrations import Migration, MigrationContext
from tests.plans import planned

EXISTING = {"cluster": "existing", "kubeContext": "prod", "domain": "platform.example.com"}
FULL = {f"blueprint:{key}": value for key, value in EXISTING.items()}


class HalfWiped(RecordedLayout):
    """A wipe of phase2's folders stopped half-way: its refusal names this same destroy as the fix."""

    def unfinished_wipe(self, folder: str) -> str | None:
        return f"a destroy that removes {folder} stopped half-way: run `uv run blueprint destroy --phase 2 --wipe-data` again"


@dataclass(frozen=True)
class Destroyed:
    resources: list[dict[str, Any]]
    migrated: list[str]
    layout: str | None


@pytest.fixture(scope="module")
def destroyed() -> Destroyed:
    """phase2's program as a destroy runs it where an `up` refuses or does something first: another release
    (9.9.9) than the one that brought phase1 up, a wipe that stopped half-way, a migration due over data laid
    out as 0.0.1, and a key of the stack file this release does not know."""
    ran: list[str] = []

    def run(context: MigrationContext) -> None:
        ran.append(context.stack)

    phase1 = planned("phase1", **EXISTING)
    layout = HalfWiped("0.0.1")
    # Due over 0.0.1, and this release's own: the data's layout, an input of the folders, stays what the up's is.
    due = Migration(version=versions.BLUEPRINT, summary="moves", phases=("phase2",), run=run)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(versions, "BLUEPRINT", "9.9.9")
        patch.setattr(migrations, "MIGRATIONS", (due,))
        overrides = {**FULL, "blueprint:renamedByAnotherRelease": "x"}
        result = plan("phase2", overrides, planned_upstream={"phase1": phase1}, layout_records=layout, destroying=True)
    return Destroyed(result.resources, ran, layout.layout)


def test_a_destroy_registers_every_resource_as_an_up_does(destroyed: Destroyed) -> None:
    """But the read of its own outputs (for its release, which a destroy does not check): a read resource,
    which a destroy only drops from the state."""
    itself = "pulumi:pulumi:StackReference::organization/blueprint/phase2"
    up = [resource for resource in planned("phase2", **EXISTING).resources if not resource["urn"].endswith(itself)]
    assert destroyed.resources == up


def test_a_destroy_runs_no_migration_and_writes_no_layout_record(destroyed: Destroyed) -> None:
    assert (destroyed.migrated, destroyed.layout) == ([], "0.0.1")


def test_an_up_still_refuses_a_phase1_an_older_release_brought_up(monkeypatch: pytest.MonkeyPatch) -> None:
    phase1 = planned("phase1", **EXISTING)
    monkeypatch.setattr(versions, "BLUEPRINT", "9.9.9")
    with pytest.raises(ProgramFailed, match="bring phase1 up with this release first"):
        plan("phase2", FULL, planned_upstream={"phase1": phase1})
