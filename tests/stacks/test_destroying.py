"""The program as `blueprint destroy` runs it (`pulumi destroy --run-program` of phase2 on an existing
cluster, `runtime.Runtime.destroying`): it registers what an `up` registers, so each resource's options
still match the state, and refuses nothing an `up` refuses before its resources: a destroy must never be
worse than the destroy from the state alone it stands for (docs/design/decisions.md, entry 55).
The real program under Pulumi's mocks, planned once here with everything an `up` refuses or does first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest

import versions
from cli import stand_ins
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


ENVOY_READ = "::".join(stand_ins.ENVOY_SERVICE_READ)


def as_destroy_registers(resource: dict[str, Any]) -> dict[str, Any]:
    """An up's resource without the Runners' host aliases, whose address a destroy does not read."""
    values = resource["inputs"].get("values") if resource["type"] == "kubernetes:helm.sh/v3:Release" else None
    if not (isinstance(values, dict) and "hostAliases" in values):
        return resource
    resource = resource | {"dependsOn": [urn for urn in resource["dependsOn"] if not urn.endswith(ENVOY_READ)]}
    config = re.sub(r"    \[\[runners\.kubernetes\.host_aliases\]\]\n(?:      .*\n)*", "", values["runners"]["config"])
    values = {key: value for key, value in values.items() if key != "hostAliases"} | {"runners": values["runners"] | {"config": config}}
    return resource | {"inputs": resource["inputs"] | {"values": values}}


def test_a_destroy_registers_every_resource_as_an_up_does(destroyed: Destroyed) -> None:
    """But the reads (read resources, which a destroy only drops from the state): of its own outputs
    (for its release, which a destroy does not check), and of Envoy's Service, which may be gone, for
    the Runners' host aliases (the Runners' values are the only inputs without them)."""
    reads = ("pulumi:pulumi:StackReference::organization/blueprint/phase2", ENVOY_READ)
    up = [as_destroy_registers(resource) for resource in planned("phase2", **EXISTING).resources if not resource["urn"].endswith(reads)]
    assert destroyed.resources == up


def test_a_destroy_reads_no_envoy_service(destroyed: Destroyed) -> None:
    """A Service deleted by hand must not stop the destroy (docs/design/decisions.md, entry 55)."""
    assert not [resource for resource in destroyed.resources if resource["urn"].endswith(ENVOY_READ)]


def test_a_destroy_runs_no_migration_and_writes_no_layout_record(destroyed: Destroyed) -> None:
    assert (destroyed.migrated, destroyed.layout) == ([], "0.0.1")


def test_an_up_still_refuses_a_phase1_an_older_release_brought_up(monkeypatch: pytest.MonkeyPatch) -> None:
    phase1 = planned("phase1", **EXISTING)
    monkeypatch.setattr(versions, "BLUEPRINT", "9.9.9")
    with pytest.raises(ProgramFailed, match="bring phase1 up with this release first"):
        plan("phase2", FULL, planned_upstream={"phase1": phase1})
