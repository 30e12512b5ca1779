"""The release record beside the data (`components/host_folder.py`, RELEASE_MARKER): each claim
writes the blueprint release that ran it into the folder, once the folder is proven its own, so the
record outlives the stack's state (which every destroy deletes); the wipe removes it with the claim."""

from __future__ import annotations

from pathlib import Path

import pytest

import versions
from components.host_folder import OWNER_MARKER, RELEASE_MARKER
from tests.plans import COMMAND, planned, run_script

CLAIMS = [(stack, name) for stack in ("phase1", "dev") for name in ("kind-data-folder",)] + [
    (stack, f"storage-{name}-folder") for stack in ("phase2", "dev") for name in ("platform", "volumes")
]
"""Every folder a stack claims: phase1's data folder, phase2's platform and volumes folders, and dev's."""


def _claim(folder: Path, script: str = "create", **env: str) -> tuple[int, str]:
    done = run_script(planned("phase1").one(COMMAND, "kind-data-folder"), script, env={"FOLDER": str(folder), **env})
    return done.returncode, done.stderr


@pytest.mark.parametrize(("stack", "name"), CLAIMS)
def test_every_folder_claim_is_given_this_checkouts_release(stack: str, name: str) -> None:
    assert planned(stack).one(COMMAND, name)["inputs"]["environment"]["BLUEPRINT_RELEASE"] == versions.BLUEPRINT


def test_a_claim_records_its_release_in_the_folder_on_create_and_on_update(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    assert _claim(folder)[0] == 0
    assert (folder / RELEASE_MARKER).read_text() == f"{versions.BLUEPRINT}\n"
    assert _claim(folder, "update", BLUEPRINT_RELEASE="0.2.0")[0] == 0  # the next release's up
    assert (folder / RELEASE_MARKER).read_text() == "0.2.0\n"


@pytest.mark.parametrize(
    ("files", "kept"),
    [
        ({OWNER_MARKER: "blueprint/phase1@0123456789abcdef\n", RELEASE_MARKER: "0.0.9\n"}, "0.0.9\n"),
        ({"thesis.tex": "mine"}, None),
        ({"thesis.tex": "mine", RELEASE_MARKER: "0.0.9\n"}, "0.0.9\n"),
    ],
    ids=["another checkout's", "the user's files", "the user's files and a record"],
)
def test_a_claim_refused_records_no_release(tmp_path: Path, files: dict[str, str], kept: str | None) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    assert _claim(folder)[0] == 1
    assert ((folder / RELEASE_MARKER).read_text() if (folder / RELEASE_MARKER).exists() else None) == kept


def test_a_folder_holding_only_a_release_record_is_claimed_as_an_empty_one(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / RELEASE_MARKER).write_text("0.0.9\n")
    code, said = _claim(folder)
    assert code == 0, said
    assert (folder / OWNER_MARKER).read_text() == "blueprint/phase1@offline-plan\n"
    assert (folder / RELEASE_MARKER).read_text() == f"{versions.BLUEPRINT}\n"


def test_the_release_record_is_never_written_through_a_link(tmp_path: Path) -> None:
    folder, outside = tmp_path / "data", tmp_path / "outside"
    assert _claim(folder)[0] == 0
    outside.write_text("mine\n")
    (folder / RELEASE_MARKER).unlink()
    (folder / RELEASE_MARKER).symlink_to(outside)
    assert _claim(folder, "update")[0] == 0
    assert outside.read_text() == "mine\n"
    assert not (folder / RELEASE_MARKER).is_symlink()


def test_a_wipe_removes_the_release_record_with_the_claim(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    assert _claim(folder)[0] == 0
    code, said = _claim(folder, "delete")
    assert code == 0, said
    assert not folder.exists()
