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

import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import Protocol

LONGEST = 64
"""Bytes read of a record at most: a version is far shorter; a longer file is not one."""
MARKER_BYTES = 512
"""Bytes of an owner marker compared at most, as the scripts read it (components/lib_marker_of.sh)."""


class LayoutRecords(Protocol):
    """Where the program reads and writes the layout record of a folder."""

    def read(self, folder: str, owner: str) -> str | None:
        """The record in `folder` (at most LONGEST characters, its one newline dropped), or None when
        `owner` has not claimed the folder; BASE_LAYOUT (stacks/migrations.py) when it claimed it and
        the record is missing (a claim cut short: the migrations since run again, being idempotent); an
        OSError naming the file when it cannot be read.
        """
        ...

    def write(self, folder: str, owner: str, layout: str) -> None:
        """Record `layout` in `folder`, when `owner` has claimed it; else nothing."""
        ...


def layout_file(folder: str) -> Path:
    from components.host_folder import LAYOUT_MARKER

    return Path(folder) / LAYOUT_MARKER


def read_plain(path: Path, limit: int) -> bytes:
    """At most `limit` bytes of the regular file `path`: never through a link left at its name, never
    waiting on a FIFO; an OSError for anything else (a folder: IsADirectoryError).
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        if error.errno != errno.ELOOP:
            raise
        raise OSError(errno.ELOOP, "a link, not a file", str(path)) from None
    try:
        mode = os.fstat(descriptor).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        return os.read(descriptor, limit)
    finally:
        os.close(descriptor)


def claimed_by(folder: str, owner: str) -> bool:
    """Whether `folder`'s owner marker names `owner`, compared whole as the scripts compare it (their
    `$(...)` drops trailing newlines): another stack's or checkout's folder is not read (its record is
    not this stack's) nor written (the claim refuses that folder anyway).
    """
    from components.host_folder import OWNER_MARKER

    try:
        text = read_plain(Path(folder) / OWNER_MARKER, MARKER_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return False
    return text.rstrip("\n") == owner


class HostLayoutRecords:
    """The layout records in the host folders of this machine."""

    def read(self, folder: str, owner: str) -> str | None:
        from stacks.migrations import BASE_LAYOUT

        if not claimed_by(folder, owner):
            return None
        try:
            raw = read_plain(layout_file(folder), LONGEST + 1)
        except FileNotFoundError:
            return BASE_LAYOUT
        text = raw.decode("utf-8", errors="replace")
        return text[:-1] if text.endswith("\n") and len(raw) <= LONGEST else text

    def write(self, folder: str, owner: str, layout: str) -> None:
        if not claimed_by(folder, owner):
            return  # nobody claimed it yet (a file here would make the claim refuse it), or another did
        # A new file renamed over the record: never written through a link left at its name.
        descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".blueprint-layout.")
        try:
            os.fchmod(descriptor, 0o644)  # the file made, never what its name may name by now
            with os.fdopen(descriptor, "w") as file:
                file.write(f"{layout}\n")
            os.replace(temporary, layout_file(folder))
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


HOST = HostLayoutRecords()
