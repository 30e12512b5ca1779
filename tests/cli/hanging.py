"""A command that never answers, for the tests of what stops one: it writes its pid (its process
group's, as `in_own_group` starts it), starts a child and waits, both blocked on a FIFO no one writes
to. No sleep: the test's own timeout ends it, and `release` frees whatever a failing test left."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from tests.plans import fake_command

BODY = """\
echo $$ > "{folder}/leader"
cat "{folder}/fifo" > /dev/null &
wait
"""


@contextlib.contextmanager
def hanging(folder: Path, name: str) -> Iterator[Path]:
    """`name` in `folder`/bin hangs; yields `folder`, whose `leader` file the command writes first."""
    folder.mkdir(parents=True, exist_ok=True)
    os.mkfifo(folder / "fifo")
    fake_command(folder / "bin", name, BODY.format(folder=folder))
    try:
        yield folder
    finally:
        release(folder / "fifo")


def release(fifo: Path) -> None:
    """Open the FIFO for writing and close it: every reader still blocked on it reads its end and exits."""
    with contextlib.suppress(OSError):  # ENXIO: no reader left, which is what a passing test leaves
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


def left_running(folder: Path, *, within: float = 10.0) -> bool:
    """Whether anything of the hanging command of `folder` still runs `within` seconds after its kill
    (nothing when it never got to write its pid). SIGKILL reaches a group's members as the kernel
    schedules them: on a busy machine one may still run a moment after `killpg` returned, so the test
    waits for the group to end, as long as a generous deadline, instead of looking once.
    """
    import time

    leader = (folder / "leader").read_text().strip() if (folder / "leader").exists() else ""
    deadline = time.monotonic() + within
    while leader and group_alive(int(leader)):
        if time.monotonic() > deadline:
            return True
        time.sleep(0.05)
    return False


def group_alive(group: int) -> bool:
    """Whether any process of process group `group` still runs (a zombie awaiting its reaper does not)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == group and fields[0] != "Z":
                return True
    return False
