"""The layout record beside a stack's data, as a real run reads and writes it on this machine
(stacks/layout_record.py); what the program does with it: tests/stacks/test_versioning.py."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from components.markers import LAYOUT_MARKER, OWNER_MARKER
from components.scripts import libraries
from stacks.layout_record import BASE_LAYOUT, LONGEST, HostLayoutRecords, claimed_by

OWNER = "blueprint/phase1@0123456789abcdef"


def claimed(tmp_path: Path, owner: str = OWNER) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / OWNER_MARKER).write_text(f"{owner}\n")
    return folder


def test_the_record_is_the_one_line_the_claim_wrote(tmp_path: Path) -> None:
    folder = claimed(tmp_path)
    (folder / LAYOUT_MARKER).write_text("0.1.0\n")
    assert HostLayoutRecords().read(str(folder), OWNER) == "0.1.0"


@pytest.mark.parametrize("where", ["data/unclaimed", "data/missing"])
def test_a_folder_this_stack_did_not_claim_has_no_record(tmp_path: Path, where: str) -> None:
    claimed(tmp_path)
    (tmp_path / "data" / "unclaimed").mkdir()
    assert HostLayoutRecords().read(str(tmp_path / where), OWNER) is None


def test_a_folder_this_stack_claimed_without_a_record_is_read_as_laid_out_as_the_first_release(tmp_path: Path) -> None:
    """A first claim cut short between its marker and its record: what the data there holds is as old
    as it can be, and every migration since runs over it (each is idempotent)."""
    folder = claimed(tmp_path)
    assert HostLayoutRecords().read(str(folder), OWNER) == BASE_LAYOUT


def test_a_long_record_is_read_no_further_than_a_version_could_be(tmp_path: Path) -> None:
    folder = claimed(tmp_path)
    (folder / LAYOUT_MARKER).write_text("1" * 100_000)
    assert len(HostLayoutRecords().read(str(folder), OWNER) or "") == LONGEST + 1


def test_a_record_of_several_lines_keeps_them_so_it_is_no_version(tmp_path: Path) -> None:
    folder = claimed(tmp_path)
    (folder / LAYOUT_MARKER).write_text("0.1.0\n0.2.0\n")
    assert HostLayoutRecords().read(str(folder), OWNER) == "0.1.0\n0.2.0"


def test_a_record_that_is_not_a_file_cannot_be_read(tmp_path: Path) -> None:
    folder = claimed(tmp_path)
    (folder / LAYOUT_MARKER).mkdir()
    with pytest.raises(IsADirectoryError):
        HostLayoutRecords().read(str(folder), OWNER)


def test_writing_replaces_the_record_in_a_claimed_folder(tmp_path: Path) -> None:
    folder = claimed(tmp_path)
    (folder / LAYOUT_MARKER).write_text("0.1.0\n")
    HostLayoutRecords().write(str(folder), OWNER, "0.2.0")
    assert (folder / LAYOUT_MARKER).read_text() == "0.2.0\n"
    assert sorted(path.name for path in folder.iterdir()) == sorted([OWNER_MARKER, LAYOUT_MARKER])


def test_writing_replaces_a_link_left_at_the_records_name_never_its_target(tmp_path: Path) -> None:
    folder = claimed(tmp_path)
    target = tmp_path / "elsewhere"
    target.write_text("not blueprint's\n")
    (folder / LAYOUT_MARKER).symlink_to(target)
    HostLayoutRecords().write(str(folder), OWNER, "0.2.0")
    assert target.read_text() == "not blueprint's\n"
    assert not (folder / LAYOUT_MARKER).is_symlink()
    assert (folder / LAYOUT_MARKER).read_text() == "0.2.0\n"


def test_writing_leaves_a_folder_nobody_claimed_as_it_is(tmp_path: Path) -> None:
    """A record there would make the claim refuse the folder as holding files blueprint did not write."""
    (tmp_path / "data").mkdir()
    HostLayoutRecords().write(str(tmp_path / "data"), OWNER, "0.2.0")
    HostLayoutRecords().write(str(tmp_path / "missing"), OWNER, "0.2.0")
    assert list((tmp_path / "data").iterdir()) == []
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("other", ["blueprint/phase1@fedcba9876543210", "blueprint/dev@0123456789abcdef", "blueprint/phase1"])
def test_a_folder_another_stack_or_checkout_claimed_is_neither_read_nor_written(tmp_path: Path, other: str) -> None:
    folder = claimed(tmp_path, owner=other)
    (folder / LAYOUT_MARKER).write_text("9.0.0\n")
    assert HostLayoutRecords().read(str(folder), OWNER) is None
    HostLayoutRecords().write(str(folder), OWNER, "0.1.0")
    assert (folder / LAYOUT_MARKER).read_text() == "9.0.0\n"


# A folder the platform's pods cannot reach, yet the user's other programs can: nothing there is trusted
# to be a regular file.


@pytest.mark.parametrize("marker", [OWNER_MARKER, LAYOUT_MARKER])
def test_a_marker_that_is_a_fifo_never_hangs_the_read(tmp_path: Path, marker: str) -> None:
    """Read before anything is registered, by `preview` as by `up`."""
    folder = claimed(tmp_path)
    (folder / marker).unlink(missing_ok=True)
    os.mkfifo(folder / marker)
    code = textwrap.dedent(f"""
        from stacks.layout_record import HostLayoutRecords
        try:
            print(HostLayoutRecords().read({str(folder)!r}, {OWNER!r}))
        except OSError as error:
            print(error.strerror)
    """)
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"reading the layout record blocks on a FIFO named {marker}")
    assert done.stdout.strip() == ("None" if marker == OWNER_MARKER else "not a regular file"), done.stderr


def test_a_record_that_is_a_link_is_never_read_through(tmp_path: Path) -> None:
    """Its refusal would show the start of whatever it names: here, the stacks' passphrase."""
    folder = claimed(tmp_path)
    secret = tmp_path / "passphrase"
    secret.write_text("Zm9vYmFyYmF6cXV4c2VjcmV0\n")
    (folder / LAYOUT_MARKER).symlink_to(secret)
    with pytest.raises(OSError, match="a link, not a file"):
        HostLayoutRecords().read(str(folder), OWNER)


def test_writing_the_record_never_changes_the_mode_of_what_its_draft_is_swapped_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Anything that can write in the folder may swap the draft's name for a link, to a private key say,
    between its making and its mode: the mode goes on the file made, never through its name."""
    folder = claimed(tmp_path)
    key = tmp_path / "id_ed25519"
    key.write_text("PRIVATE\n")
    key.chmod(0o600)
    chmod = os.chmod

    def swapped_first(path: Any, mode: int, *args: Any, **kwargs: Any) -> None:
        if os.path.basename(str(path)).startswith(f"{LAYOUT_MARKER}."):
            os.unlink(path)
            os.symlink(key, path)
        chmod(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "chmod", swapped_first)
    HostLayoutRecords().write(str(folder), OWNER, "0.2.0")
    assert key.stat().st_mode & 0o777 == 0o600
    assert (folder / LAYOUT_MARKER).read_text() == "0.2.0\n"


@pytest.mark.parametrize(
    ("text", "mine"),
    [(f"{OWNER}\n", True), (OWNER, True), (f"{OWNER}\n\n", True), (f"{OWNER}\nanother\n", False), (f" {OWNER}\n", False)],
)
def test_an_owner_marker_names_this_stack_exactly_when_the_scripts_say_so(tmp_path: Path, text: str, mine: bool) -> None:
    """The claim and the wipe compare `$(marker_of ...)` whole (components/lib_marker_of.sh)."""
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / OWNER_MARKER).write_text(text)
    compare = libraries()["marker_of"] + '[ "$(marker_of "$0")" = "$1" ]'
    shell = subprocess.run(["/bin/sh", "-c", compare, str(folder / OWNER_MARKER), OWNER], check=False)
    assert (shell.returncode == 0, claimed_by(str(folder), OWNER)) == (mine, mine)


def test_an_owner_marker_that_is_a_link_claims_nothing(tmp_path: Path) -> None:
    """A link to another folder's marker names that folder's owner, not this folder's."""
    folder = tmp_path / "data"
    folder.mkdir()
    (tmp_path / "elsewhere").write_text(f"{OWNER}\n")
    (folder / OWNER_MARKER).symlink_to(tmp_path / "elsewhere")
    assert not claimed_by(str(folder), OWNER)
