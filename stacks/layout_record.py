"""The layout record beside a stack's data: `.blueprint-layout` (components/host_folder.py
LAYOUT_MARKER) in the host folder the stack claims, one line `X.Y.Z`: the release of the last
migration that shaped that data (stacks/migrations.py, `layout`), which outlives the stack's state (a
destroy that keeps the data deletes the state's outputs, `blueprintVersion` with them).

The claim of the folder writes it on create and update; `stacks/migrations.py` reads it, and writes
it after running a migration. The program reaches it through the runtime (stacks/runtime.py,
`Runtime.layout_records`): a real run, the file on this machine; the offline plan, what its caller
gives it, never a user's folder.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Protocol

LONGEST = 64
"""Bytes read of a record at most: a version is far shorter; a longer file is not one."""


class LayoutRecords(Protocol):
    """Where the program reads and writes the layout record of a folder."""

    def read(self, folder: str, owner: str) -> str | None:
        """The record in `folder` (at most LONGEST characters, its one newline dropped), or None when
        there is none or `owner` has not claimed the folder; an OSError naming the file when it
        cannot be read.
        """
        ...

    def write(self, folder: str, owner: str, layout: str) -> None:
        """Record `layout` in `folder`, when `owner` has claimed it; else nothing."""
        ...


def layout_file(folder: str) -> Path:
    from components.host_folder import LAYOUT_MARKER

    return Path(folder) / LAYOUT_MARKER


def claimed_by(folder: str, owner: str) -> bool:
    """Whether `folder`'s owner marker names `owner`: another stack's or checkout's folder is not read
    (its record is not this stack's) nor written (the claim refuses that folder anyway).
    """
    from components.host_folder import OWNER_MARKER

    try:
        with (Path(folder) / OWNER_MARKER).open("rb") as file:
            first = file.read(len(owner) + 2).decode("utf-8", errors="replace").split("\n", 1)[0]
    except OSError:
        return False
    return first == owner


class HostLayoutRecords:
    """The layout records in the host folders of this machine."""

    def read(self, folder: str, owner: str) -> str | None:
        if not claimed_by(folder, owner):
            return None
        try:
            with layout_file(folder).open("rb") as file:
                raw = file.read(LONGEST + 1)
        except (FileNotFoundError, NotADirectoryError):
            return None
        text = raw.decode("utf-8", errors="replace")
        return text[:-1] if text.endswith("\n") and len(raw) <= LONGEST else text

    def write(self, folder: str, owner: str, layout: str) -> None:
        if not claimed_by(folder, owner):
            return  # nobody claimed it yet (a file here would make the claim refuse it), or another did
        # A new file renamed over the record: never written through a link left at its name.
        descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".blueprint-layout.")
        try:
            with os.fdopen(descriptor, "w") as file:
                file.write(f"{layout}\n")
            os.chmod(temporary, 0o644)
            os.replace(temporary, layout_file(folder))
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


HOST = HostLayoutRecords()
