from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.providers.engine import BaoServer, running_bao


@pytest.fixture
def bao(tmp_path: Path) -> Iterator[BaoServer]:
    """A fresh, uninitialised OpenBao server for one test."""
    yield from running_bao(tmp_path / "bao")
