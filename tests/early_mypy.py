"""mypy, started early on the core a clean clone's first collection leaves idle.

There the first xdist worker collects alone (conftest.py `compiled_once`: about 8 s, the other
workers waiting), and `mypy --strict` is the longest test (about 10 CPU-s cold). When the whole
suite runs, that worker starts mypy in the background as it starts collecting; the test then reads
what it printed, waiting for it to end (a lock the run holds while it lives), in whichever worker
runs it. Otherwise (a warm checkout, a chosen test, `-n 0`) the test runs mypy itself, as before.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from stacks.config import PROJECT_DIR

BACKGROUND = '("$@" >"$0/out" 2>&1; echo $? >"$0/rc") &'
"""Runs mypy in the background, writing what it printed and its exit code into the folder `$0`."""


def _folder(config: pytest.Config) -> Path | None:
    """This run's folder for the early mypy, the same in every worker; None outside xdist."""
    run = getattr(config, "workerinput", {}).get("testrunuid")
    return Path(tempfile.gettempdir()) / f"blueprint-mypy-{run}" if run else None


def _whole_suite(config: pytest.Config) -> bool:
    """Whether this run collects every test (so the mypy test too): no path chosen below tests/, no
    -k, -m, --deselect or --last-failed."""
    tests = PROJECT_DIR / "tests"
    paths = [(config.invocation_params.dir / arg.split("::")[0]).resolve() for arg in config.args]
    chosen = config.option.keyword or config.option.markexpr or config.option.deselect or config.getoption("lf", False)
    return not chosen and all(path in (tests, PROJECT_DIR) and "::" not in arg for path, arg in zip(paths, config.args, strict=True))


def start(config: pytest.Config) -> None:
    """Start mypy in the background for this run, when the whole suite runs under xdist."""
    folder = _folder(config)
    if folder is None or not _whole_suite(config):
        return
    folder.mkdir()
    with (folder / "lock.new").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # held on by the background run, which inherits it, until it ends
        command = ["sh", "-c", BACKGROUND, str(folder), sys.executable, "-m", "mypy"]
        subprocess.run(
            command,
            cwd=PROJECT_DIR,
            pass_fds=(lock.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
            timeout=60,
        )
        (folder / "lock.new").rename(folder / "lock")  # seen only once locked


def result(config: pytest.Config) -> subprocess.CompletedProcess[str] | None:
    """What the early mypy of this run printed, once it has ended; None when none was started."""
    folder = _folder(config)
    if folder is None or not (folder / "lock").exists():
        return None
    with (folder / "lock").open() as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)  # until the background mypy has ended
    done = subprocess.CompletedProcess(["mypy"], int((folder / "rc").read_text()), (folder / "out").read_text(), "")
    shutil.rmtree(folder)
    return done
