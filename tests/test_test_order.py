"""The order the suite runs its tests in (tests/conftest.py `pytest_collection_modifyitems`), on a
suite of its own: a module marked `run_first` between two plain ones, its first test failing while
a file `fail` exists."""

from __future__ import annotations

import pytest

OPTIONS = ["-p", "no:xdist", "-p", "no:valkey", "-o", "markers=run_first: first"]
"""What the suite's own ini gives, which the inner run does not read. The marker too: the inner run
is in this process, where `filterwarnings = error` makes an unregistered one an error."""

IN_ORDER_RUN = ["test_three", "test_four", "test_one", "test_two", "test_five"]


def ran(run: pytest.HookRecorder) -> list[str]:
    """The tests a run ran, in its order."""
    return [report.nodeid.split("::")[1] for report in run.getreports("pytest_runtest_logreport") if report.when == "call"]


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest("from tests.conftest import pytest_collection_modifyitems")
    pytester.makepyfile(
        test_a_plain="def test_one(): pass\ndef test_two(): pass",
        test_b_waits="import pathlib, pytest\npytestmark = pytest.mark.run_first\n"
        "def test_three(): assert not pathlib.Path('fail').exists()\ndef test_four(): pass",
        test_c_plain="def test_five(): pass",
    )
    return pytester


def test_tests_marked_run_first_run_before_the_others_each_kind_in_its_order(suite: pytest.Pytester) -> None:
    assert ran(suite.inline_run(*OPTIONS)) == IN_ORDER_RUN


def test_a_stepwise_run_after_a_marked_test_failed_runs_the_tests_that_never_ran(suite: pytest.Pytester) -> None:
    """`--sw` stops at the failure, which came first: the tests after it never ran, and the next
    `--sw` runs them, rather than skipping them as passed."""
    (suite.path / "fail").touch()
    assert ran(suite.inline_run(*OPTIONS, "--sw")) == ["test_three"]
    (suite.path / "fail").unlink()
    assert ran(suite.inline_run(*OPTIONS, "--sw")) == IN_ORDER_RUN
