"""Every stack records the blueprint release that last brought it up, and beside its data the layout
of that data, and reads both back first: an `up` over state a newer release wrote, or over data a
newer release migrated, stops; one over older ones runs the migrations in between, once each and in
order, and a preview only names them (stacks/migrations.py). The plans here resolve the stack's
reference to itself to `recorded`, the outputs its last `up` left."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pulumi
import pytest

import versions
from cli import plan as plan_module
from cli.plan import Plan, ProgramFailed, plan
from cli.stand_ins import RecordedLayout
from stacks import STACK_PHASES, migrations, outputs
from stacks.config import PROJECT_DIR
from stacks.layout_record import BASE_LAYOUT, HostLayoutRecords
from stacks.migrations import Migration, MigrationContext
from tests.plans import COMMAND, planned, run_script

STACK_REFERENCE = "pulumi:pulumi:StackReference"
PHASES = STACK_PHASES["dev"]


def recorded(version: object) -> dict[str, Any]:
    """The outputs an `up` by blueprint `version` left in phase1 (its version is all that matters here)."""
    return {outputs.BLUEPRINT_VERSION: version, outputs.CLUSTER_NAME: "blueprint"}


def refusal(stack: str, version: object) -> ProgramFailed:
    with pytest.raises(ProgramFailed) as failed:
        plan(stack, recorded=recorded(version))
    return failed.value


def upstream_of(stack: str) -> dict[str, Plan]:
    """`stack`'s upstream stacks as a plan of `stack` makes them, new stacks each, by this release
    (cached: plans are pure): for the plans here whose rule is `stack`'s own, and the release's."""
    return {name: planned(name) for name in plan_module._chain(stack)[1:]}


def table(monkeypatch: pytest.MonkeyPatch, *versions_: str) -> list[tuple[str, str, str]]:
    """Patch MIGRATIONS to one migration to each of `versions_`, in that order; what they run, as
    (version, stack, the layout they start from), goes in the list returned."""
    ran: list[tuple[str, str, str]] = []

    def migration(version: str) -> Migration:
        def run(context: MigrationContext) -> None:
            ran.append((version, context.stack, context.layout))

        return Migration(version=version, summary=f"moves what {version} moved", phases=PHASES, run=run)

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
        f"stack phase2's blueprintVersion records blueprint 9.0.0, newer than this checkout ({versions.BLUEPRINT}), which "
        "cannot know what 9.0.0 changed in its state and data; nothing was changed. Update this checkout (`git pull`), or "
        "run blueprint 9.0.0's checkout"
    )


def test_a_stack_over_state_of_a_newer_blueprint_registers_nothing_but_reads_of_stacks() -> None:
    """phase2 stops once it read phase1 (which says where its data is) and itself, before it registers
    anything on its cluster."""
    failed = refusal("phase2", "0.10.0")  # newer than 0.1.0 as numbers, older as text
    assert [(r["type"], r["name"]) for r in failed.registered] == [
        ("pulumi:pulumi:Stack", "blueprint-phase2"),
        (STACK_REFERENCE, "organization/blueprint/phase1"),
        (STACK_REFERENCE, "organization/blueprint/phase2"),
    ]


@pytest.mark.parametrize("version", ["0.1", "v0.1.0", "0.1.0-rc.1", "01.0.0", " 0.1.0", "", 1, None, ["0.1.0"]])
def test_a_blueprint_version_is_three_plain_integers(version: object) -> None:
    with pytest.raises(ValueError, match="is not a blueprint version"):
        migrations.parse(version)


def test_a_recorded_version_that_is_not_a_version_is_refused_with_the_fix() -> None:
    failed = refusal("phase1", "banana")
    assert isinstance(failed.cause, pulumi.RunError), "a RunError: the engine says it without a traceback"
    assert str(failed.cause) == (
        "stack phase1's blueprintVersion records 'banana', which is not a blueprint version (X.Y.Z), so blueprint cannot tell "
        "which release shaped its state and data; nothing was changed. Something other than blueprint wrote it: set it to the "
        'release that last brought the stack up (in a shell that ran `eval "$(uv run blueprint env)"`: '
        "`pulumi stack export -s phase1`, in the root stack's outputs, then "
        "`pulumi stack import -s phase1`)"
    )
    assert [r["type"] for r in failed.registered if r["custom"]] == [STACK_REFERENCE]


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
        "stack phase1's data is laid out as blueprint 0.0.2 left it: its `up` first migrates it: "
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


def test_a_migration_is_given_its_stack_its_folder_and_the_layout_it_starts_from(monkeypatch: pytest.MonkeyPatch) -> None:
    contexts: list[MigrationContext] = []
    moves = Migration(version=versions.BLUEPRINT, summary="moves a folder", phases=("phase1",), run=contexts.append)
    monkeypatch.setattr(migrations, "MIGRATIONS", (moves,))
    plan("phase1", recorded=recorded("0.0.2"))
    data_dir = planned("phase1").outputs[outputs.DATA_DIR]["value"]
    assert contexts == [MigrationContext(stack="phase1", folder=data_dir, layout="0.0.2")]


def test_a_migration_that_fails_stops_the_up_before_anything_else(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stack's outputs, the version with them, are not recorded either: the next `up` runs the
    migration again, which is why each must be idempotent."""

    def fail(context: MigrationContext) -> None:
        raise pulumi.RunError("the folder cannot be moved: fix it, then run `uv run blueprint up` again")

    monkeypatch.setattr(
        migrations, "MIGRATIONS", (Migration(version=versions.BLUEPRINT, summary="moves a folder", phases=PHASES, run=fail),)
    )
    with pytest.raises(ProgramFailed) as failed:
        plan("phase1", recorded=recorded("0.0.2"))
    assert str(failed.value.cause) == "the folder cannot be moved: fix it, then run `uv run blueprint up` again"
    assert [r["type"] for r in failed.value.registered if r["custom"]] == [STACK_REFERENCE]


def test_the_migration_table_is_empty_in_the_first_release() -> None:
    assert migrations.MIGRATIONS == ()


def test_no_migration_upgrades_beyond_this_release() -> None:
    """A migration comes with the version bump to its release: otherwise it would not run until a later bump."""
    beyond = [m.version for m in migrations.MIGRATIONS if migrations.parse(m.version) > migrations.parse(versions.BLUEPRINT)]
    assert beyond == []


def test_a_migration_to_a_malformed_version_cannot_be_declared() -> None:
    with pytest.raises(ValueError, match="'0.2' is not a blueprint version"):
        Migration(version="0.2", summary="moves a folder", phases=PHASES, run=lambda context: None)


def test_without_migrations_the_layout_is_the_base_layout_of_the_first_release(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(migrations, "MIGRATIONS", ())
    assert (migrations.layout("dev"), BASE_LAYOUT) == ("0.1.0", "0.1.0")


def test_the_layout_is_the_newest_migrations_version(monkeypatch: pytest.MonkeyPatch) -> None:
    table(monkeypatch, "0.0.3", "0.10.0", "0.2.0")  # newest as numbers, not as text
    assert migrations.layout("dev") == "0.10.0"


# The layout record beside the data (stacks/layout_record.py): it outlives the state's outputs, which
# every `pulumi destroy` deletes, and changes only when a migration reshaped the data.

NEWER = "9.0.0"


def newer_release(monkeypatch: pytest.MonkeyPatch, *phases: str) -> list[tuple[str, str]]:
    """This checkout becomes 9.0.0, with one migration, of the data of `phases` (`phase2`, ...). What
    ran, as (stack, layout)."""
    ran: list[tuple[str, str]] = []

    def run(context: MigrationContext) -> None:
        ran.append((context.stack, context.layout))

    moves = Migration(version=NEWER, summary="moves the volumes", phases=phases, run=run)
    monkeypatch.setattr(versions, "BLUEPRINT", NEWER)
    monkeypatch.setattr(migrations, "MIGRATIONS", (moves,))
    return ran


def back_to_the_checkout_that_ran_before(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(versions, "BLUEPRINT", "0.1.0")
    monkeypatch.setattr(migrations, "MIGRATIONS", ())


def failing(monkeypatch: pytest.MonkeyPatch, name: str, error: str) -> None:
    """The plan's `name` resource fails as the engine would say it, until the monkeypatch context ends."""
    new_resource = plan_module._StandInMocks.new_resource

    def fail(self: Any, args: Any) -> Any:
        if args.name == name:
            raise RuntimeError(f"{name}: {error}")
        return new_resource(self, args)

    monkeypatch.setattr(plan_module._StandInMocks, "new_resource", fail)


def layout_file_of(stack: str) -> str:
    """The layout record a planned `stack` reads: beside phase1's data (phase1, dev), else phase2's platform folder."""
    data_dir = planned("phase1").outputs[outputs.DATA_DIR]["value"]
    return f"{data_dir}/.blueprint-layout" if "phase1" in STACK_PHASES[stack] else f"{data_dir}/platform/.blueprint-layout"


@pytest.mark.parametrize(("stack", "phase"), [("phase1", "phase1"), ("phase2", "phase2"), ("dev", "phase1"), ("dev", "phase2")])
def test_an_up_of_a_newer_release_over_data_a_destroy_kept_runs_its_data_migrations(
    monkeypatch: pytest.MonkeyPatch, stack: str, phase: str
) -> None:
    """A destroy with preserveData (or a cluster change's destroy of phase2) deleted the stack's
    outputs, its blueprintVersion with them; the record beside the data still says its layout."""
    ran = newer_release(monkeypatch, phase)
    plan(stack, recorded={}, layout_records=RecordedLayout("0.1.0"))
    assert ran == [(stack, "0.1.0")]


def test_an_up_over_kept_data_a_newer_release_migrated_is_refused_naming_the_record() -> None:
    """9.0.0 migrated phase1's data and was destroyed keeping it; this older checkout takes nothing of it."""
    with pytest.raises(ProgramFailed) as failed:
        plan("phase1", recorded={}, layout_records=RecordedLayout(NEWER))
    assert str(failed.value.cause) == (
        f"{layout_file_of('phase1')}, beside stack phase1's data, records blueprint {NEWER}, newer than this checkout "
        f"({versions.BLUEPRINT}), which cannot know what {NEWER} changed in that data; nothing was changed. Update this "
        f"checkout (`git pull`), or run blueprint {NEWER}'s checkout"
    )
    assert [r["type"] for r in failed.value.registered if r["custom"]] == [STACK_REFERENCE]


@pytest.mark.parametrize("stack", ["phase2", "dev"])
def test_an_up_that_migrated_then_failed_is_refused_to_an_older_checkout_naming_the_record(
    monkeypatch: pytest.MonkeyPatch, stack: str
) -> None:
    """The newer `up` migrates, then GitLab's release times out: the state's outputs still say the older
    release, but the record beside the data says the newer layout, written before anything else ran."""
    ran = newer_release(monkeypatch, "phase2")
    record = RecordedLayout(BASE_LAYOUT)
    with monkeypatch.context() as patched:
        failing(patched, "gitlab-chart", "timed out waiting for the condition")
        with pytest.raises(ProgramFailed):
            plan(stack, recorded=recorded("0.1.0"), layout_records=record)
    assert ran == [(stack, BASE_LAYOUT)]
    assert record.layout == NEWER
    back_to_the_checkout_that_ran_before(monkeypatch)
    with pytest.raises(ProgramFailed) as failed:
        plan(stack, recorded=recorded("0.1.0"), layout_records=record)
    assert str(failed.value.cause).startswith(
        f"{layout_file_of(stack)}, beside stack {stack}'s data, records blueprint {NEWER}, newer than this checkout"
    )


def newer_dev_up_then_back(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *table_: Migration) -> None:
    """dev over a newer release (9.0.0, migrating as `table_` says) whose kind config replaces the
    cluster: its `up` claims the data folder again (the claim's update writes its layout), runs the
    program (which writes its layout if it migrated), and fails at the cluster, since dev's platform is
    still on it (components/kind_cluster_down.sh). Then the advice: back to the commit that ran before,
    whose `up` is planned last (ProgramFailed if refused). The records are the files on disk."""
    overrides = {"blueprint:dataDir": str(tmp_path / "data")}

    def claim(script: str) -> None:
        done = run_script(plan("dev", overrides).one(COMMAND, "kind-data-folder"), script)
        assert done.returncode == 0, done.stderr

    claim("create")  # the checkout that ran before brought dev up
    monkeypatch.setattr(versions, "BLUEPRINT", NEWER)
    monkeypatch.setattr(migrations, "MIGRATIONS", table_)
    with monkeypatch.context() as patched:
        failing(patched, "kind-cluster", "dev still has its platform on the kind cluster")
        with pytest.raises(ProgramFailed, match="still has its platform"):
            plan("dev", overrides, recorded=recorded("0.1.0"), layout_records=HostLayoutRecords())
    claim("update")
    back_to_the_checkout_that_ran_before(monkeypatch)
    plan("dev", overrides, recorded=recorded("0.1.0"), layout_records=HostLayoutRecords())


def test_a_newer_release_that_migrated_nothing_leaves_devs_data_to_the_checkout_that_ran_before(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The way kind_cluster_down.sh gives to keep dev's data across a cluster change is open: no deadlock."""
    newer_dev_up_then_back(monkeypatch, tmp_path)
    assert (tmp_path / "data" / ".blueprint-layout").read_text() == f"{BASE_LAYOUT}\n"


def test_a_newer_release_that_migrated_devs_data_is_refused_to_the_checkout_that_ran_before(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Why such a release tells dev's users to take dev down, keeping the data, before they update."""
    moved = Migration(version=NEWER, summary="moves the volumes", phases=("phase2",), run=lambda context: None)
    with pytest.raises(ProgramFailed) as failed:
        newer_dev_up_then_back(monkeypatch, tmp_path, moved)
    assert str(failed.value.cause).startswith(
        f"{tmp_path}/data/.blueprint-layout, beside stack dev's data, records blueprint {NEWER}, newer than this checkout"
    )


@pytest.mark.parametrize(
    ("state", "data", "due"),
    [("0.0.5", "0.0.2", ["0.0.3", "0.0.4", versions.BLUEPRINT]), ("0.0.2", "0.0.4", [versions.BLUEPRINT])],
    ids=["releases since migrated nothing", "an up that migrated failed before its outputs"],
)
def test_the_migrations_run_from_the_datas_layout_where_it_has_a_record(
    monkeypatch: pytest.MonkeyPatch, state: str, data: str, due: list[str]
) -> None:
    ran = table(monkeypatch, "0.0.3", "0.0.4", versions.BLUEPRINT)
    plan("phase1", recorded=recorded(state), layout_records=RecordedLayout(data))
    assert ran == [(version, "phase1", data) for version in due]


def test_phase3_runs_the_migrations_from_its_states_release(monkeypatch: pytest.MonkeyPatch) -> None:
    ran = table(monkeypatch, "0.0.1", versions.BLUEPRINT)
    plan("phase3", recorded=recorded("0.0.2"), planned_upstream=upstream_of("phase3"))
    assert ran == [(versions.BLUEPRINT, "phase3", "0.0.2")]


def test_an_up_that_migrated_records_the_layout_not_its_release(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(versions, "BLUEPRINT", "0.3.0")
    table(monkeypatch, "0.2.0")
    record = RecordedLayout(BASE_LAYOUT)
    plan("phase1", recorded=recorded(BASE_LAYOUT), layout_records=record)
    assert record.layout == "0.2.0"


def test_an_up_that_migrated_nothing_leaves_the_layout_record_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    """A newer release that does not reshape the data leaves older checkouts free to run over it."""
    monkeypatch.setattr(versions, "BLUEPRINT", NEWER)
    monkeypatch.setattr(migrations, "MIGRATIONS", ())
    record = RecordedLayout(BASE_LAYOUT)
    plan("phase1", recorded=recorded(BASE_LAYOUT), layout_records=record)
    assert record.layout == BASE_LAYOUT


def test_a_preview_records_nothing_beside_the_data(monkeypatch: pytest.MonkeyPatch) -> None:
    table(monkeypatch, versions.BLUEPRINT)
    record = RecordedLayout("0.0.2")
    plan("phase1", preview=True, recorded=recorded("0.0.2"), layout_records=record)
    assert record.layout == "0.0.2"


def test_phase3_reads_no_record_beside_data() -> None:
    """A destroy that keeps the data keeps phase3's state too: its outputs are its record."""

    class Unread(RecordedLayout):
        def read(self, folder: str, owner: str) -> str | None:
            raise AssertionError(f"phase3 read {folder}")

    plan("phase3", layout_records=Unread(), planned_upstream=upstream_of("phase3"))


@pytest.mark.parametrize("text", ["banana", "0.1.0\n0.2.0", "banana migrating", "0.2 migrating", "\x1b[2J" + "9" * 5000])
def test_a_data_record_that_is_not_a_version_is_refused_naming_the_file_in_a_bounded_message(text: str) -> None:
    with pytest.raises(ProgramFailed) as failed:
        plan("phase1", layout_records=RecordedLayout(text))
    said = str(failed.value.cause)
    assert isinstance(failed.value.cause, pulumi.RunError)
    assert said.startswith(f"{layout_file_of('phase1')}, beside stack phase1's data, records")
    assert "which is not a blueprint version" in said
    assert len(said) < 600
    assert "\x1b" not in said
    assert "\n" not in said


@pytest.mark.parametrize("version", ["9" * 5000 + ".0.0", "1" + "0" * 3000 + ".0.0", "0.10000.0"])
def test_a_recorded_version_of_more_than_four_digits_a_part_is_refused_in_a_bounded_message(version: str) -> None:
    failed = refusal("phase1", version)
    assert isinstance(failed.cause, pulumi.RunError)
    assert "is not a blueprint version" in str(failed.cause)
    assert len(str(failed.cause)) < 600


def test_a_data_record_that_cannot_be_read_is_refused_naming_the_file(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    (data_dir / ".blueprint-layout").mkdir(parents=True)  # not a file: reading it fails whoever runs this
    (data_dir / ".blueprint-owner").write_text("blueprint/phase1@offline-plan\n")  # claimed by this (planned) stack
    with pytest.raises(ProgramFailed) as failed:
        plan("phase1", {"blueprint:dataDir": str(data_dir)}, layout_records=HostLayoutRecords())
    assert str(failed.value.cause).startswith(
        f"stack phase1 reads its data's layout from {data_dir}/.blueprint-layout, which it cannot read ("
    )


class Written(RecordedLayout):
    """A layout record that keeps every record written, in order."""

    def __init__(self, layout: str | None = None) -> None:
        super().__init__(layout)
        self.written: list[str] = []

    def write(self, folder: str, owner: str, record: str) -> None:
        self.written.append(record)
        super().write(folder, owner, record)


def written_by_a_second_migration_that_stops(monkeypatch: pytest.MonkeyPatch, first: str, second: str) -> list[str]:
    """This checkout is `second`, with two migrations, to `first` and `second`, the second of which
    stops; what phase1's `up` over the first release's data writes into the record, in order."""

    def fails(context: MigrationContext) -> None:
        raise pulumi.RunError("the file cannot be rewritten yet: fix it, then run `uv run blueprint up` again")

    monkeypatch.setattr(versions, "BLUEPRINT", second)
    moves = Migration(version=first, summary="moves the volumes", phases=PHASES, run=lambda context: None)
    rewrites = Migration(version=second, summary="rewrites a file", phases=PHASES, run=fails)
    monkeypatch.setattr(migrations, "MIGRATIONS", (moves, rewrites))
    record = Written(BASE_LAYOUT)
    with pytest.raises(ProgramFailed):
        plan("phase1", recorded=recorded(BASE_LAYOUT), layout_records=record)
    return record.written


def test_each_versions_migrations_run_between_a_migrating_record_and_its_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first ran, the second stopped: the record says the second stopped, so an older checkout is
    refused and the next `up` runs only the second again."""
    assert written_by_a_second_migration_that_stops(monkeypatch, "0.2.0", "0.3.0") == ["0.2.0 migrating", "0.2.0", "0.3.0 migrating"]


def test_an_older_checkout_is_refused_over_data_a_migration_changed_before_it_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    """0.2.0's migration moves part of the volumes, then stops (a RunError here; Ctrl-C or a crash
    alike). The user goes back to this release, as the failure invites: refused, nothing changed."""
    volumes = {"layout": BASE_LAYOUT}

    def moves_then_stops(context: MigrationContext) -> None:
        volumes["layout"] = "half moved"
        raise pulumi.RunError("cannot move the rest: the disk is full")

    monkeypatch.setattr(versions, "BLUEPRINT", "0.2.0")
    moves = Migration(version="0.2.0", summary="moves the volumes", phases=("phase1",), run=moves_then_stops)
    monkeypatch.setattr(migrations, "MIGRATIONS", (moves,))
    record = RecordedLayout(BASE_LAYOUT)
    with pytest.raises(ProgramFailed):
        plan("phase1", recorded={}, layout_records=record)
    assert volumes["layout"] == "half moved"
    back_to_the_checkout_that_ran_before(monkeypatch)
    with pytest.raises(ProgramFailed) as failed:
        plan("phase1", recorded={}, layout_records=record)
    assert str(failed.value.cause) == (
        f"{layout_file_of('phase1')}, beside stack phase1's data, records blueprint 0.2.0 (its migration of that data "
        f"stopped half-way), newer than this checkout (0.1.0), which cannot know what 0.2.0 changed in that data; "
        "nothing was changed. Update this checkout (`git pull`), or run blueprint 0.2.0's checkout"
    )
    assert [r["type"] for r in failed.value.registered if r["custom"]] == [STACK_REFERENCE]


def test_the_next_up_runs_the_migration_that_stopped_again_then_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    """Migrations are idempotent: the one that stopped runs whole again, over what it had changed."""
    monkeypatch.setattr(versions, "BLUEPRINT", "0.3.0")
    ran = table(monkeypatch, "0.1.5", "0.2.0", "0.3.0")
    record = RecordedLayout("0.2.0 migrating")
    plan("phase1", recorded=recorded(BASE_LAYOUT), layout_records=record)
    assert ran == [("0.2.0", "phase1", "0.2.0 migrating"), ("0.3.0", "phase1", "0.2.0 migrating")]
    assert record.layout == "0.3.0"


def test_a_preview_names_the_migration_that_stopped_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(versions, "BLUEPRINT", "0.3.0")
    table(monkeypatch, "0.2.0", "0.3.0")
    warned: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: warned.append(message))
    plan("phase1", preview=True, recorded=recorded(BASE_LAYOUT), layout_records=RecordedLayout("0.2.0 migrating"))
    assert warned == [
        "stack phase1's data was left half-way through blueprint 0.2.0's migration: its `up` first migrates it: "
        "(0.2.0) moves what 0.2.0 moved; (0.3.0) moves what 0.3.0 moved"
    ]


def test_a_version_is_recorded_done_only_once_all_its_migrations_ran(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two migrations to one release, the second stops: the next `up` runs both again."""
    assert written_by_a_second_migration_that_stops(monkeypatch, "0.2.0", "0.2.0") == ["0.2.0 migrating"]


@pytest.mark.parametrize("stack", ["phase1", "phase3"])
def test_a_migration_of_another_phases_data_neither_runs_nor_is_recorded(monkeypatch: pytest.MonkeyPatch, stack: str) -> None:
    """A release that migrates phase2's data alone: phase1's folder is not stamped migrated, so the
    checkout that ran before still runs phase1 (after a failed cluster change, say)."""
    ran = newer_release(monkeypatch, "phase2")
    record = RecordedLayout(BASE_LAYOUT)
    plan(stack, recorded=recorded(BASE_LAYOUT), layout_records=record)
    assert (ran, record.layout) == ([], BASE_LAYOUT)
    back_to_the_checkout_that_ran_before(monkeypatch)
    plan(stack, recorded=recorded(BASE_LAYOUT), layout_records=record)


@pytest.mark.parametrize("phases", [(), ("phase4",)], ids=["no phase", "no such phase"])
def test_a_migration_names_the_phases_whose_data_it_migrates(phases: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="a migration names the phases"):
        Migration(version="0.2.0", summary="moves a folder", phases=phases, run=lambda context: None)


def test_kept_data_whose_record_a_cut_claim_lost_is_migrated_from_the_first_release(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The folder names this stack, and no record says how its data is laid out: a newer release runs
    every migration since the first release over it, rather than take it for fresh and skip them."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / ".blueprint-owner").write_text("blueprint/phase1@offline-plan\n")
    ran = newer_release(monkeypatch, "phase1")
    plan("phase1", {"blueprint:dataDir": str(data_dir)}, recorded={}, layout_records=HostLayoutRecords())
    assert ran == [("phase1", BASE_LAYOUT)]
    assert (data_dir / ".blueprint-layout").read_text() == f"{NEWER}\n"
