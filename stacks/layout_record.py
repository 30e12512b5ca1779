"""The layout record beside a stack's data: `.blueprint-layout` (components/markers.py LAYOUT_MARKER)
in the host folder the stack claims, one line: `X.Y.Z`, the release of the last migration that shaped
that data (stacks/migrations.py, `layout`), or `X.Y.Z migrating` while X.Y.Z's migration runs (one cut
short leaves it so). It outlives the stack's state: a destroy that keeps the data deletes the state's
outputs, `blueprintVersion` with them.

The claim of the folder writes it on create and update; `stacks/migrations.py` reads it, and writes
it around each migration it runs. The program reaches it through the runtime (stacks/runtime.py,
`Runtime.layout_records`): a real run, the file on this machine; the offline plan, what its caller
gives it, never a user's folder. The same seam answers whether a wipe of a folder stopped
half-way (`unfinished_wipe`, providers/host_secret.py), which the plan, reading no host folder,
never sees.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Protocol

from components.markers import LAYOUT_MARKER, OWNER_MARKER, read_marker, read_plain
from providers.host_secret import unfinished_wipe

BASE_LAYOUT = "0.1.0"
"""The layout of data no migration shaped: that of 0.1.0, the first release. No release before it left
data to upgrade, so every migration is to a later one; until the first, every release lays data out
as 0.1.0 did, and no checkout from 0.1.0 on is refused over it."""
MIGRATING = " migrating"
"""What follows X.Y.Z in the record from right before X.Y.Z's migration runs until it returned: a
checkout older than X.Y.Z is refused over that data, X.Y.Z and later ones run that migration again."""
LONGEST = 64
"""Bytes read of a record at most: a version is far shorter; a longer file is not one."""


def migrating(version: str) -> str:
    """The record while `version`'s migration runs."""
    return f"{version}{MIGRATING}"


def unfinished(record: str) -> str | None:
    """The version whose migration `record` says stopped half-way, or None."""
    return record.removesuffix(MIGRATING) if record.endswith(MIGRATING) else None


class LayoutRecords(Protocol):
    """Where the program reads and writes the layout record of a folder, and learns whether a wipe of
    it stopped half-way: what the host holds beside a stack's data.
    """

    def read(self, folder: str, owner: str) -> str | None:
        """The record in `folder` (at most LONGEST characters, its one newline dropped), or None when
        `owner` has not claimed the folder; BASE_LAYOUT when it claimed it and the record is missing
        (a claim cut short: the migrations since run again, being idempotent); an OSError naming the
        file when it cannot be read.
        """
        ...

    def write(self, folder: str, owner: str, record: str) -> None:
        """Make `record` the record in `folder`, when `owner` has claimed it; else nothing."""
        ...

    def unfinished_wipe(self, folder: str) -> str | None:
        """Why no `up` may take `folder` over, a wipe of it or of a folder above it having stopped
        half-way (providers/host_secret.py), naming the destroy that finishes it; or None.
        """
        ...


def layout_file(folder: str) -> Path:
    return Path(folder) / LAYOUT_MARKER


def claimed_by(folder: str, owner: str) -> bool:
    """Whether `folder`'s owner marker names `owner` (components/markers.py): another stack's or
    checkout's folder is not read (its record is not this stack's) nor written (the claim refuses that
    folder anyway).
    """
    return read_marker(Path(folder) / OWNER_MARKER) == owner


class HostLayoutRecords:
    """The layout records in the host folders of this machine."""

    def read(self, folder: str, owner: str) -> str | None:
        if not claimed_by(folder, owner):
            return None
        try:
            raw = read_plain(layout_file(folder), LONGEST + 1)
        except FileNotFoundError:
            return BASE_LAYOUT
        text = raw.decode("utf-8", errors="replace")
        return text[:-1] if text.endswith("\n") and len(raw) <= LONGEST else text

    def write(self, folder: str, owner: str, record: str) -> None:
        if not claimed_by(folder, owner):
            return  # nobody claimed it yet (a file here would make the claim refuse it), or another did
        # A new file renamed over the record: never written through a link left at its name.
        descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=f"{LAYOUT_MARKER}.")
        try:
            os.fchmod(descriptor, 0o644)  # the file made, never what its name may name by now
            with os.fdopen(descriptor, "w") as file:
                file.write(f"{record}\n")
                file.flush()
                os.fsync(file.fileno())  # on disk before the migration it announces changes anything
            os.replace(temporary, layout_file(folder))
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        folder_descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(folder_descriptor)  # and the rename with it
        finally:
            os.close(folder_descriptor)

    def unfinished_wipe(self, folder: str) -> str | None:
        return unfinished_wipe(Path(folder))


HOST = HostLayoutRecords()
