"""The layout record beside the data (`components/host_folder.py`, LAYOUT_MARKER): each claim
writes the layout of this checkout's data (stacks/migrations.py, `layout`) into the folder, once the
folder is proven its own, so the record outlives the stack's state (which every destroy deletes);
the wipe removes it with the claim."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

import versions
from cli.plan import Plan, plan
from components.markers import LAYOUT_MARKER, OWNER_MARKER
from stacks import STACK_PHASES, migrations
from stacks.layout_record import BASE_LAYOUT
from stacks.migrations import Migration
from tests import crash
from tests.plans import COMMAND, planned, run_script

CLAIMS = [(stack, name) for stack in ("phase1", "dev") for name in ("kind-data-folder",)] + [
    (stack, f"storage-{name}-folder") for stack in ("phase2", "dev") for name in ("platform", "volumes")
]
"""Every folder a stack claims: phase1's data folder, phase2's platform and volumes folders, and dev's."""


def _claim(folder: Path, script: str = "create", **env: str) -> tuple[int, str]:
    done = run_script(planned("phase1").one(COMMAND, "kind-data-folder"), script, env={"FOLDER": str(folder), **env})
    return done.returncode, done.stderr


@pytest.mark.parametrize(("stack", "name"), CLAIMS)
def test_every_folder_claim_is_given_this_checkouts_layout_of_its_stacks_data(stack: str, name: str) -> None:
    layout = migrations.layout(stack)
    assert planned(stack).one(COMMAND, name)["inputs"]["environment"]["BLUEPRINT_LAYOUT"] == layout


def test_a_fresh_platform_of_a_release_without_migrations_records_the_base_layout(tmp_path: Path) -> None:
    assert migrations.MIGRATIONS == ()
    folder = tmp_path / "data"
    assert _claim(folder)[0] == 0
    assert (folder / LAYOUT_MARKER).read_text() == f"{BASE_LAYOUT}\n"


@cache
def _planned_by_0_3_0(stack: str, migrated: tuple[str, ...]) -> Plan:
    """The plan of `stack` by release 0.3.0, whose one migration (to 0.2.0) moved the data of the
    phases `migrated` (made once for each: plans are pure; phase2's over phase1's, made so first)."""
    upstream = {"phase1": _planned_by_0_3_0("phase1", migrated)} if stack == "phase2" else None
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(versions, "BLUEPRINT", "0.3.0")
        moved = Migration(version="0.2.0", summary="moves the volumes", phases=migrated, run=lambda context: None)
        patch.setattr(migrations, "MIGRATIONS", (moved,))
        return plan(stack, planned_upstream=upstream)


@pytest.mark.parametrize(("stack", "name"), CLAIMS)
def test_a_claim_records_the_layout_of_the_newest_migration(stack: str, name: str) -> None:
    """Not the release that ran it: 0.3.0's claim over data 0.2.0 migrated records 0.2.0."""
    assert _planned_by_0_3_0(stack, STACK_PHASES["dev"]).one(COMMAND, name)["inputs"]["environment"]["BLUEPRINT_LAYOUT"] == "0.2.0"


@pytest.mark.parametrize(("stack", "name"), CLAIMS)
def test_a_claim_records_only_the_migrations_of_its_stacks_phases(stack: str, name: str) -> None:
    """A release that migrates phase2's data alone leaves phase1's record as it was: an older checkout still runs phase1."""
    expected = "0.2.0" if "phase2" in STACK_PHASES[stack] else BASE_LAYOUT
    assert _planned_by_0_3_0(stack, ("phase2",)).one(COMMAND, name)["inputs"]["environment"]["BLUEPRINT_LAYOUT"] == expected


def test_a_claim_records_its_layout_in_the_folder_on_create_and_on_update(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    assert _claim(folder)[0] == 0
    assert (folder / LAYOUT_MARKER).read_text() == f"{BASE_LAYOUT}\n"
    assert _claim(folder, "update", BLUEPRINT_LAYOUT="0.2.0")[0] == 0  # the up of a release that migrated to 0.2.0
    assert (folder / LAYOUT_MARKER).read_text() == "0.2.0\n"


@pytest.mark.parametrize(
    ("files", "kept"),
    [
        ({OWNER_MARKER: "blueprint/phase1@0123456789abcdef\n", LAYOUT_MARKER: "0.0.9\n"}, "0.0.9\n"),
        ({"thesis.tex": "mine"}, None),
        ({"thesis.tex": "mine", LAYOUT_MARKER: "0.0.9\n"}, "0.0.9\n"),
    ],
    ids=["another checkout's", "the user's files", "the user's files and a record"],
)
def test_a_claim_refused_records_no_layout(tmp_path: Path, files: dict[str, str], kept: str | None) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    assert _claim(folder)[0] == 1
    assert ((folder / LAYOUT_MARKER).read_text() if (folder / LAYOUT_MARKER).exists() else None) == kept


def test_a_folder_holding_only_a_layout_record_is_claimed_as_an_empty_one(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / LAYOUT_MARKER).write_text("0.0.9\n")
    code, said = _claim(folder)
    assert code == 0, said
    assert (folder / OWNER_MARKER).read_text() == "blueprint/phase1@offline-plan\n"
    assert (folder / LAYOUT_MARKER).read_text() == f"{BASE_LAYOUT}\n"


def test_the_layout_record_is_never_written_through_a_link(tmp_path: Path) -> None:
    folder, outside = tmp_path / "data", tmp_path / "outside"
    assert _claim(folder)[0] == 0
    outside.write_text("mine\n")
    (folder / LAYOUT_MARKER).unlink()
    (folder / LAYOUT_MARKER).symlink_to(outside)
    assert _claim(folder, "update")[0] == 0
    assert outside.read_text() == "mine\n"
    assert not (folder / LAYOUT_MARKER).is_symlink()


def test_a_claim_cut_short_anywhere_never_loses_the_record_it_replaces(tmp_path: Path) -> None:
    """A destroy kept the data; the next `up`'s claim is cut short (Ctrl-C): without its record, a newer
    release would take the data for fresh, skip its migration and record it as migrated."""
    folder, counter = tmp_path / "data", tmp_path / "counter"
    claim, at = planned("phase1").one(COMMAND, "kind-data-folder"), {"FOLDER": str(folder)}
    tools = crash.wrap_tools(tmp_path / "tools", counter)
    assert crash.run(claim, "create", tools, counter, None, at).returncode == 0
    lost = []
    for cut in range(1, crash.calls(counter) + 1):
        crash.run(claim, "create", tools, counter, cut, at)
        if not (folder / LAYOUT_MARKER).is_file():
            lost.append(cut)
    assert lost == []


def test_a_wipe_removes_the_layout_record_with_the_claim(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    assert _claim(folder)[0] == 0
    code, said = _claim(folder, "delete")
    assert code == 0, said
    assert not folder.exists()
