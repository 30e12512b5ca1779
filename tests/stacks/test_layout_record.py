"""The layout record beside a stack's data, as a real run reads and writes it on this machine
(stacks/layout_record.py); what the program does with it: tests/stacks/test_versioning.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.host_folder import LAYOUT_MARKER, OWNER_MARKER
from stacks.layout_record import LONGEST, HostLayoutRecords

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


@pytest.mark.parametrize("where", ["data", "data/missing"])
def test_a_folder_without_a_record_has_none(tmp_path: Path, where: str) -> None:
    claimed(tmp_path)
    assert HostLayoutRecords().read(str(tmp_path / where), OWNER) is None


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
