"""The mypy a whole-suite run starts early (tests/early_mypy.py) ends, whatever ends the run."""

from __future__ import annotations

import fcntl
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from stacks.config import PROJECT_DIR
from tests import early_mypy

HANGS = ["sh", "-c", "echo checking; exec sleep 600"]
"""A mypy that prints, then never ends."""


def a_run(**options: Any) -> pytest.Config:
    """The config of a whole-suite xdist run as its workers and controller see it, with `options` set."""
    option = SimpleNamespace(keyword="", markexpr="", deselect=[], testrunuid=f"test-{uuid.uuid4().hex}", **options)
    fake = SimpleNamespace(
        args=[],
        invocation_params=SimpleNamespace(dir=PROJECT_DIR),
        option=option,
        getoption=lambda name, default=None: getattr(option, name, default),
    )
    return cast(pytest.Config, fake)


def as_worker(run: pytest.Config) -> pytest.Config:
    worker = SimpleNamespace(**vars(run), workerinput={"testrunuid": run.option.testrunuid})
    return cast(pytest.Config, worker)


def until(done: Any, what: str) -> None:
    """Wait for `done()`, an event the test causes; the 30 s bound only turns a hang into a failure."""
    deadline = time.monotonic() + 30
    while not done():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def held(lock: Path) -> Any:
    """`lock` opened, to see later whether the background mypy still holds it (its file may be removed by then)."""
    return lock.open()


def released(opened: Any) -> bool:
    try:
        fcntl.flock(opened, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@pytest.fixture
def hanging(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A whole-suite run whose first worker has started an early mypy that hangs, once it has printed."""
    monkeypatch.setattr(early_mypy, "COMMAND", HANGS)
    run = a_run()
    folder = early_mypy._folder(run)
    assert folder is not None
    try:
        early_mypy.start(as_worker(run))
        until(lambda: (folder / "out").exists() and (folder / "out").read_text() == "checking\n", "the background command printed")
        with held(folder / "lock") as lock:
            yield run, folder, lock
    finally:
        early_mypy.stop(run)  # whatever the test left


def test_an_early_mypy_that_does_not_end_in_time_is_killed_and_fails_with_what_it_printed(hanging: Any) -> None:
    run, folder, lock = hanging
    done = early_mypy.result(as_worker(run), timeout=0)
    assert done is not None
    assert (done.returncode, done.stdout) == (1, "checking\n\nmypy did not end within 0 s: killed")
    assert not folder.exists()
    until(lambda: released(lock), "the background mypy was killed")


def test_a_run_that_stops_before_the_mypy_test_ends_its_early_mypy_and_removes_its_folder(hanging: Any) -> None:
    run, folder, lock = hanging
    early_mypy.stop(run)
    assert not folder.exists()
    until(lambda: released(lock), "the background mypy was killed")


@pytest.mark.parametrize("option", ["ignore", "ignore_glob", "stepwise", "stepwise_skip", "collectonly"])
def test_a_run_that_leaves_tests_out_starts_no_early_mypy(option: str) -> None:
    run = a_run(**{option: ["tests/cli"] if option.startswith("ignore") else True})
    early_mypy.start(as_worker(run))
    folder = early_mypy._folder(run)
    assert folder is not None
    assert not folder.exists()
