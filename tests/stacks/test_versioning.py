"""Every stack records the blueprint release that last brought it up, and reads it back first: an
`up` over state a newer release wrote stops, one over an older release's runs the migrations in
between, once each and in order, and a preview only names them (stacks/migrations.py). The plans
here resolve the stack's reference to itself to `recorded`, the outputs its last `up` left."""

from __future__ import annotations

import tomllib
from typing import Any

import pulumi
import pytest

import versions
from cli.plan import ProgramFailed, plan
from stacks import STACK_PHASES, migrations, outputs
from stacks.config import PROJECT_DIR
from stacks.migrations import Migration, MigrationContext
from tests.plans import planned

SELF_REFERENCE = "pulumi:pulumi:StackReference"


def recorded(version: object) -> dict[str, Any]:
    """The outputs an `up` by blueprint `version` left in phase1 (its version is all that matters here)."""
    return {outputs.BLUEPRINT_VERSION: version, outputs.CLUSTER_NAME: "blueprint"}


def refusal(stack: str, version: object) -> ProgramFailed:
    with pytest.raises(ProgramFailed) as failed:
        plan(stack, recorded=recorded(version))
    return failed.value


def table(monkeypatch: pytest.MonkeyPatch, *versions_: str) -> list[tuple[str, str, str]]:
    """Patch MIGRATIONS to one migration to each of `versions_`, in that order; what they run, as
    (version, stack, recorded version), goes in the list returned."""
    ran: list[tuple[str, str, str]] = []

    def migration(version: str) -> Migration:
        def run(context: MigrationContext) -> None:
            ran.append((version, context.stack, context.recorded))

        return Migration(version=version, summary=f"moves what {version} moved", run=run)

    monkeypatch.setattr(migrations, "MIGRATIONS", tuple(migration(version) for version in versions_))
    return ran


@pytest.mark.parametrize("stack", list(STACK_PHASES))
def test_every_stack_records_the_blueprint_version_that_brought_it_up(stack: str) -> None:
    assert planned(stack).outputs[outputs.BLUEPRINT_VERSION] == {"secret": False, "value": versions.BLUEPRINT}


def test_the_blueprint_version_is_the_projects_version() -> None:
    project = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text())["project"]
    assert project["version"] == versions.BLUEPRINT
    assert migrations.parse(versions.BLUEPRINT)


def test_the_blueprint_version_is_no_input_of_the_next_phase() -> None:
    assert not [phase for phase, exported in outputs.EXPORTS.items() if outputs.BLUEPRINT_VERSION in exported]


def test_a_stack_over_state_of_a_newer_blueprint_is_refused_naming_both_versions_and_the_fix() -> None:
    failed = refusal("phase2", "9.0.0")
    assert isinstance(failed.cause, pulumi.RunError)
    assert str(failed.cause) == (
        f"stack phase2 was last brought up by blueprint 9.0.0, newer than this checkout ({versions.BLUEPRINT}), which cannot "
        "know what 9.0.0 changed in its state and data; nothing was changed. Update this checkout (`git pull`), or run the "
        "checkout that brought the stack up"
    )


def test_a_stack_over_state_of_a_newer_blueprint_registers_nothing_but_its_reference_to_itself() -> None:
    """phase2 stops before it reads phase1, let alone registers anything on its cluster."""
    failed = refusal("phase2", "0.10.0")  # newer than 0.1.0 as numbers, older as text
    assert [(r["type"], r["name"]) for r in failed.registered] == [
        ("pulumi:pulumi:Stack", "blueprint-phase2"),
        (SELF_REFERENCE, "organization/blueprint/phase2"),
    ]


@pytest.mark.parametrize("version", ["0.1", "v0.1.0", "0.1.0-rc.1", "01.0.0", " 0.1.0", "", 1, None, ["0.1.0"]])
def test_a_blueprint_version_is_three_plain_integers(version: object) -> None:
    with pytest.raises(ValueError, match="is not a blueprint version"):
        migrations.parse(version)


def test_a_recorded_version_that_is_not_a_version_is_refused_with_the_fix() -> None:
    failed = refusal("phase1", "banana")
    assert isinstance(failed.cause, pulumi.RunError), "a RunError: the engine says it without a traceback"
    assert str(failed.cause) == (
        "stack phase1 records blueprintVersion 'banana', which is not a blueprint version (X.Y.Z), so blueprint cannot tell what "
        "its state and data need; nothing was changed. Something other than blueprint wrote it: set it to the release that "
        "last brought the stack up (`pulumi stack export -s phase1`, in the root stack's outputs, then `pulumi stack import -s phase1`)"
    )
    assert [r["type"] for r in failed.registered if r["custom"]] == [SELF_REFERENCE]


def test_an_up_over_an_older_state_runs_each_pending_migration_once_in_version_order(monkeypatch: pytest.MonkeyPatch) -> None:
    ran = table(monkeypatch, versions.BLUEPRINT, "0.0.5", "0.0.1", "0.0.3")
    result = plan("phase1", recorded=recorded("0.0.2"))
    assert ran == [("0.0.3", "phase1", "0.0.2"), ("0.0.5", "phase1", "0.0.2"), (versions.BLUEPRINT, "phase1", "0.0.2")]
    assert result.outputs[outputs.BLUEPRINT_VERSION]["value"] == versions.BLUEPRINT


def test_a_preview_runs_no_migration_and_names_those_the_up_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    ran = table(monkeypatch, "0.0.5", versions.BLUEPRINT)
    warned: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: warned.append(message))
    plan("phase1", preview=True, recorded=recorded("0.0.2"))
    assert ran == []
    assert warned == [
        f"stack phase1 was last brought up by blueprint 0.0.2: its `up` first migrates it to {versions.BLUEPRINT}: "
        f"(0.0.5) moves what 0.0.5 moved; ({versions.BLUEPRINT}) moves what {versions.BLUEPRINT} moved"
    ]


def test_a_stack_already_at_a_migrations_version_does_not_run_it(monkeypatch: pytest.MonkeyPatch) -> None:
    ran = table(monkeypatch, versions.BLUEPRINT)
    plan("phase1", recorded=recorded(versions.BLUEPRINT))
    assert ran == []


def test_a_new_stack_runs_no_migration(monkeypatch: pytest.MonkeyPatch) -> None:
    ran = table(monkeypatch, versions.BLUEPRINT)
    plan("phase1")
    assert ran == []


def test_a_migration_is_given_the_stack_its_phases_and_its_last_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    contexts: list[MigrationContext] = []
    monkeypatch.setattr(migrations, "MIGRATIONS", (Migration(version=versions.BLUEPRINT, summary="moves a folder", run=contexts.append),))
    plan("phase1", recorded=recorded("0.0.2"))
    assert contexts == [MigrationContext(stack="phase1", phases=("phase1",), recorded="0.0.2", outputs=recorded("0.0.2"))]


def test_a_migration_that_fails_stops_the_up_before_anything_else(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stack's outputs, the version with them, are not recorded either: the next `up` runs the
    migration again, which is why each must be idempotent."""

    def fail(context: MigrationContext) -> None:
        raise pulumi.RunError("the folder cannot be moved: fix it, then run `uv run blueprint up` again")

    monkeypatch.setattr(migrations, "MIGRATIONS", (Migration(version=versions.BLUEPRINT, summary="moves a folder", run=fail),))
    with pytest.raises(ProgramFailed) as failed:
        plan("phase1", recorded=recorded("0.0.2"))
    assert str(failed.value.cause) == "the folder cannot be moved: fix it, then run `uv run blueprint up` again"
    assert [r["type"] for r in failed.value.registered if r["custom"]] == [SELF_REFERENCE]


def test_the_migration_table_is_empty_in_the_first_release() -> None:
    assert migrations.MIGRATIONS == ()


def test_no_migration_upgrades_beyond_this_release() -> None:
    """A migration comes with the version bump to its release: otherwise it would not run until a later bump."""
    beyond = [m.version for m in migrations.MIGRATIONS if migrations.parse(m.version) > migrations.parse(versions.BLUEPRINT)]
    assert beyond == []


def test_a_migration_to_a_malformed_version_cannot_be_declared() -> None:
    with pytest.raises(ValueError, match="'0.2' is not a blueprint version"):
        Migration(version="0.2", summary="moves a folder", run=lambda context: None)
