"""What every test runs with."""

from __future__ import annotations

import contextlib
import fcntl
import gc
import os
import subprocess
import sys
import uuid
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from stacks.config.schema import defaults_only
from tests import early_mypy

pytest_plugins = ["pytester"]  # tests/test_test_order.py runs pytest on suites of its own


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than the cores. Many tests wait on a real server (bao, the GitLab
    stub, Node) rather than compute, so a spare worker fills the waits: on 2 cores, 3 workers ran the
    suite in 83 s where 2 took 105 s (and 4 took 94 s)."""
    return (os.cpu_count() or 1) + 1


def pytest_configure(config: pytest.Config) -> None:
    """The xdist controller picks the run's id itself (xdist's `--testrunuid`), so that it knows the
    early mypy's folder too (tests/early_mypy.py).
    In any pytest process, at its very end (a cleanup runs after every unconfigure hook, pytest's own
    flush of what the tests left unraisable among them): what is left lives until the process exits,
    so freeze it too; the interpreter's exit would walk it all again, about a second of each worker's
    end, when the run waits for the last of them."""
    config.add_cleanup(gc.freeze)
    if not hasattr(config, "workerinput") and config.getoption("testrunuid", None) is None:
        config.option.testrunuid = uuid.uuid4().hex


def pytest_unconfigure(config: pytest.Config) -> None:
    """In the xdist controller, its workers gone: end an early mypy the run stopped before reading."""
    if not hasattr(config, "workerinput"):
        early_mypy.stop(config)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    # The collector's one pass after collection runs once the other workers may collect (the lock
    # of `compiled_once` let go): they need the .pyc files, not this worker's heap tidied.
    with out_of_the_collectors_sight(), compiled_once(session.config):
        return (yield)


@pytest.hookimpl(tryfirst=True)  # before stepwise (and inside --lf/--ff wrappers): they pick from this order
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked `run_first` (modules whose tests mostly wait on a real server) run first, in their
    order; the rest keep theirs. xdist hands out consecutive tests in chunks: a module of long waits
    late in the collection came out in one late chunk, and the run ended on that one worker, waiting,
    long after the others had run out of tests. Run first, their waits are filled by the others."""
    items.sort(key=lambda item: item.get_closest_marker("run_first") is None)


@contextlib.contextmanager
def out_of_the_collectors_sight() -> Iterator[None]:
    """What collection makes lives the whole session: the modules it imports, the tests and their
    parameters, about 250,000 objects a worker. The garbage collector would walk all of it again in
    each full collection (a few dozen in a worker's run, each about 0.2 s on 2 busy cores) and while
    collecting (as each new test module adds thousands). Collect with the collector off, free the
    collection's own cycles once, then freeze what is left (`gc.freeze`): later collections walk only
    what the tests make, and the full ones come less often."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.collect()
        gc.freeze()
        # Frozen objects count for nothing in the collector's "a quarter more long-lived objects"
        # rule, so in a whole run's workers full collections came every 10th middle one (about 40,
        # 5.7 CPU-s); one in 100 frees the same cycles, later (2.6 CPU-s).
        threshold, middle, _ = gc.get_threshold()
        gc.set_threshold(threshold, middle, 100)
        if collecting:
            gc.enable()


@contextlib.contextmanager
def compiled_once(config: pytest.Config) -> Iterator[None]:
    """In a clean clone the xdist workers would each compile (and rewrite the asserts of) every test
    module and what it imports, all at once: about 9 CPU-s each. The first worker collects alone and
    leaves its .pyc files; the others then collect from them, together. Nothing is held when no .pyc
    is written (PYTHONDONTWRITEBYTECODE) or the test modules' are there already. The core that leaves
    idle runs mypy meanwhile (tests/early_mypy.py)."""
    cold = not any(Path(__file__).parent.joinpath("__pycache__").glob("test_*-pytest-*.pyc"))
    if not (os.environ.get("PYTEST_XDIST_WORKER") and cold and not sys.dont_write_bytecode):
        yield
        return
    with open(__file__, "rb") as lock:  # flock: released when closed, or when the worker dies
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            early_mypy.start(config)
        except BlockingIOError:  # the first worker is collecting: wait for it, then collect together
            fcntl.flock(lock, fcntl.LOCK_SH)
        yield


@pytest.fixture(autouse=True, scope="session")
def stack_files_of_the_defaults() -> Iterator[None]:
    """Plans in tests read Pulumi.yaml's defaults alone, never the stack files a user has edited
    (Pulumi.<stack>.yaml): a test that means the defaults gets them, whatever a checkout's stack
    files say. A test that wants a stack file points `stacks.config.schema.STACK_FILES_DIR` at its own.
    """
    with defaults_only():
        yield


@pytest.fixture(autouse=True, scope="session")
def plans_shared_by_the_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Under xdist, each cached plan (tests/plans.py) is made once a run, not once a worker: the
    workers' temporary folders are in one of this run's own, where they share the plans."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        yield
        return
    import tests.plans

    tests.plans.SHARED_PLANS = tmp_path_factory.getbasetemp().parent / "plans"
    tests.plans.SHARED_PLANS.mkdir(exist_ok=True)
    yield
    tests.plans.SHARED_PLANS = None


@pytest.fixture(autouse=True)
def no_tools_in_the_home_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    """The `blueprint` CLI puts the folders `doctor --fix` installs into (~/.pulumi/bin, ~/.local/share/blueprint/bin)
    first on its PATH (cli/tools_path.py `tools_on_path`): in a test it finds none of the tools of the person running
    the tests, only the fakes a test puts on PATH, and leaves PATH as it found it. A test of those
    folders gives its own home."""
    import cli.tools_path

    monkeypatch.setattr(cli.tools_path, "tools_home", lambda: None)
    monkeypatch.setenv("PATH", os.environ.get("PATH", ""))
    monkeypatch.delenv(cli.tools_path.SHELL_PATH, raising=False)


@pytest.fixture(autouse=True)
def the_checkouts_own_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """blueprint takes the user's PULUMI_BACKEND_URL (cli/backend.py): no test meets the one of the person
    running the tests; a test of a chosen backend sets its own."""
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)


@pytest.fixture(autouse=True)
def umask_as_found() -> Iterator[None]:
    """`main` raises the process's umask to at least 022 for good (cli/main.py): a test that runs it
    leaves the next one the umask the suite started with."""
    found = os.umask(0o022)
    os.umask(found)
    yield
    os.umask(found)


MOUNT_NAMESPACES_REQUIRED = "BLUEPRINT_TEST_MOUNT_NAMESPACES"
"""Set by .ci/run: there, a machine without unprivileged mount namespaces fails these tests rather
than skipping them."""


@pytest.fixture(scope="module")
def mount_namespaces() -> None:
    """The wipe's mount tests need to mount a tmpfs without root: Linux's unprivileged user and mount
    namespaces. macOS has none, and some Linux distributions turn them off (Ubuntu 24.04's AppArmor
    default): there those tests cannot run, and say so, unless CI requires them."""
    probe = ["unshare", "--user", "--map-root-user", "--mount", "/bin/sh", "-c", "mount -t tmpfs probe /mnt"]
    try:
        works = subprocess.run(probe, capture_output=True, timeout=30, check=False).returncode == 0
    except OSError:
        works = False
    if not works and not os.environ.get(MOUNT_NAMESPACES_REQUIRED):
        pytest.skip("this machine cannot mount a filesystem without root (no unprivileged mount namespaces)")
