from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.providers.engine import BaoServer, running_bao
from tests.providers.gitlab_stub import Repository, gitlab_stub


@pytest.fixture
def bao(tmp_path: Path) -> Iterator[BaoServer]:
    """A fresh, uninitialised OpenBao server for one test."""
    yield from running_bao(tmp_path / "bao")


@pytest.fixture
def repository() -> Repository:
    """The project the GitLab stub serves."""
    return Repository()


@pytest.fixture
def gitlab(repository: Repository) -> Iterator[str]:
    """A local stand-in for GitLab's API, serving `repository`; yields its base URL."""
    with gitlab_stub(repository) as url:
        yield url
