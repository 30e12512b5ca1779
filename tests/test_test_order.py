"""The order the suite runs its tests in (tests/conftest.py `pytest_collection_modifyitems`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import pytest

from tests.conftest import pytest_collection_modifyitems


@dataclass
class Collected:
    """A collected test, as far as the ordering reads it: its name and whether it is marked `early`."""

    nodeid: str
    early: bool = False

    def get_closest_marker(self, name: str) -> object | None:
        return pytest.mark.early.mark if name == "early" and self.early else None


def test_tests_marked_early_run_first_and_every_test_keeps_its_order_among_its_kind() -> None:
    items = [
        Collected("test_a.py::one"),
        Collected("test_bao.py::waits", early=True),
        Collected("test_b.py::two"),
        Collected("test_bao.py::waits_too", early=True),
        Collected("test_c.py::three"),
    ]
    collected = cast(list[pytest.Item], items)
    pytest_collection_modifyitems(collected)
    assert [item.nodeid for item in collected] == [
        "test_bao.py::waits",
        "test_bao.py::waits_too",
        "test_a.py::one",
        "test_b.py::two",
        "test_c.py::three",
    ]
