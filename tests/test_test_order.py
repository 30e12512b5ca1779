"""The order the suite runs its tests in (tests/conftest.py `pytest_collection_modifyitems`), on
suites of their own: a plain module, then one marked `run_first` whose test may fail."""

from __future__ import annotations

import re

import pytest

SUITE = {
    "conftest.py": "from tests.conftest import pytest_collection_modifyitems  # the suite's own order\n",
    "test_a_plain.py": "def test_one():\n    pass\n\ndef test_two():\n    pass\n",
    "test_b_waits.py": (
        "import pathlib\nimport pytest\n\npytestmark = pytest.mark.run_first\n\n"
        "def test_three():\n    assert not pathlib.Path('fail').exists()\n\ndef test_four():\n    pass\n"
    ),
    "test_c_plain.py": "def test_five():\n    pass\n",
}
OPTIONS = ["-p", "no:xdist", "-p", "no:valkey", "-o", "markers=run_first: first", "-v"]


def ran(result: pytest.RunResult) -> list[str]:
    """The tests a run ran, in its order (from the lines `-v` prints as each one ends)."""
    return [match[1] for line in result.outlines if (match := re.match(r"test_\w+\.py::(\w+) (PASSED|FAILED)", line))]


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(**{name.removesuffix(".py"): text for name, text in SUITE.items()})
    return pytester


def test_tests_marked_run_first_run_before_the_others_each_kind_in_its_order(suite: pytest.Pytester) -> None:
    result = suite.runpytest(*OPTIONS)
    assert ran(result) == ["test_three", "test_four", "test_one", "test_two", "test_five"]


def test_a_stepwise_run_after_a_marked_test_failed_runs_the_tests_that_never_ran(
    suite: pytest.Pytester,
) -> None:
    """`--sw` stops at the failure, which came first: the tests after it never ran, and the next
    `--sw` runs them, rather than skipping them as passed."""
    (suite.path / "fail").touch()
    assert ran(suite.runpytest(*OPTIONS, "--sw")) == ["test_three"]
    (suite.path / "fail").unlink()
    assert ran(suite.runpytest(*OPTIONS, "--sw")) == ["test_three", "test_four", "test_one", "test_two", "test_five"]
