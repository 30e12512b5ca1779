"""mypy, started early on the core a clean clone's first collection leaves idle.

There the first xdist worker collects alone (conftest.py `compiled_once`: about 8 s, the other
workers waiting), and `mypy --strict` is the longest test (about 10 CPU-s cold). When the whole
suite runs, that worker starts mypy in the background as it starts collecting; the test then reads
what it printed, waiting for it to end (a lock the run holds while it lives), in whichever worker
runs it. Otherwise (a warm checkout, a chosen test, `-n 0`) the test runs mypy itself, as before.
The test gives up on it after TIMEOUT seconds, as on its own mypy; a run that ends before the test
(`-x`, Ctrl-C) ends it too (`stop`, from the xdist controller once its workers are gone).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from stacks.config import PROJECT_DIR

BACKGROUND = '("$@" >"$0/out" 2>&1; echo $? >"$0/rc") &'
"""Runs mypy in the background, writing what it printed and its exit code into the folder `$0`."""

COMMAND = [sys.executable, "-m", "mypy"]

TIMEOUT = 300.0
"""Seconds the test waits for the early mypy, as for the mypy it runs itself (tests/test_code_quality.py)."""


def _folder(config: pytest.Config) -> Path | None:
    """This run's folder for the early mypy, the same in every worker and the xdist controller
    (conftest.py gives it the run's id); None outside xdist."""
    run = getattr(config, "workerinput", {}).get("testrunuid") or config.getoption("testrunuid", None)
    return Path(tempfile.gettempdir()) / f"blueprint-mypy-{run}" if run else None


def _whole_suite(config: pytest.Config) -> bool:
    """Whether this run collects and runs every test (so the mypy test too): no path chosen below
    tests/, no -k, -m, --deselect, --ignore, --ignore-glob, --last-failed, --stepwise or --collect-only."""
    tests = PROJECT_DIR / "tests"
    paths = [(config.invocation_params.dir / arg.split("::")[0]).resolve() for arg in config.args]
    chosen = config.option.keyword or config.option.markexpr or config.option.deselect or config.getoption("lf", False)
    chosen = chosen or any(config.getoption(name, None) for name in ("ignore", "ignore_glob", "stepwise", "stepwise_skip", "collectonly"))
    return not chosen and all(path in (tests, PROJECT_DIR) and "::" not in arg for path, arg in zip(paths, config.args, strict=True))


def start(config: pytest.Config) -> None:
    """Start mypy in the background for this run, when the whole suite runs under xdist."""
    folder = _folder(config)
    if folder is None or not _whole_suite(config):
        return
    folder.mkdir()
    with (folder / "lock.new").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # held on by the background run, which inherits it, until it ends
        shell = subprocess.Popen(
            ["sh", "-c", BACKGROUND, str(folder), *COMMAND],
            cwd=PROJECT_DIR,
            pass_fds=(lock.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a process group of its own, which `_kill` ends whole
        )
        (folder / "group").write_text(str(shell.pid))
        if shell.wait(timeout=60):
            raise subprocess.CalledProcessError(shell.returncode, shell.args)
        (folder / "lock.new").rename(folder / "lock")  # seen only once locked


def _ended(lock: Path) -> bool:
    """Whether the background mypy has ended (it no longer holds `lock`)."""
    with lock.open() as held:
        try:
            fcntl.flock(held, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


def _kill(folder: Path) -> None:
    """End the background mypy's process group, if it is still running (checked first: its id is
    free for another group once it has ended)."""
    lock = next((path for path in (folder / "lock", folder / "lock.new") if path.exists()), None)
    if lock is not None and (folder / "group").exists() and not _ended(lock):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(int((folder / "group").read_text()), signal.SIGKILL)


def result(config: pytest.Config, timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str] | None:
    """What the early mypy of this run printed, once it has ended; None when none was started. Past
    `timeout` seconds it is killed, and fails with what it printed so far."""
    folder = _folder(config)
    if folder is None or not (folder / "lock").exists():
        return None
    deadline = time.monotonic() + timeout
    while not _ended(folder / "lock"):
        if time.monotonic() >= deadline:
            _kill(folder)
            printed = (folder / "out").read_text() if (folder / "out").exists() else ""
            shutil.rmtree(folder)
            return subprocess.CompletedProcess(["mypy"], 1, f"{printed}\nmypy did not end within {timeout:g} s: killed", "")
        time.sleep(0.1)
    done = subprocess.CompletedProcess(["mypy"], int((folder / "rc").read_text()), (folder / "out").read_text(), "")
    shutil.rmtree(folder)
    return done


def stop(config: pytest.Config) -> None:
    """At the end of the run (in the xdist controller, its workers gone): end an early mypy no test
    read (a run stopped by -x or Ctrl-C) and remove its folder."""
    folder = _folder(config)
    if folder is not None and folder.exists():
        _kill(folder)
        shutil.rmtree(folder, ignore_errors=True)
