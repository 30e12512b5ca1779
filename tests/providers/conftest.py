from __future__ import annotations

from collections.abc import Iterator

import pytest

from providers.gitlab_group import GroupProvider
from providers.gitlab_project import ProjectProvider
from tests.providers.clock import FakeClock, install
from tests.providers.engine import as_engine_loads
from tests.providers.gitlab_stub import GitLabState, Repository, gitlab_stub


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """The clock every wait and retry runs on (providers/poll.py), driven by the test."""
    return install(monkeypatch)


@pytest.fixture
def state() -> GitLabState:
    """What the GitLab stub holds."""
    return GitLabState()


@pytest.fixture
def repository(state: GitLabState) -> Repository:
    """The repository (and pipelines) the GitLab stub serves for any project."""
    return state.repository


@pytest.fixture
def gitlab(state: GitLabState) -> Iterator[str]:
    """A local stand-in for GitLab's API, serving `state`; yields its base URL."""
    with gitlab_stub(state) as url:
        yield url


@pytest.fixture
def groups() -> GroupProvider:
    """The group provider, after the engine's pickle round trip (in this process)."""
    return as_engine_loads(GroupProvider())


@pytest.fixture
def projects() -> ProjectProvider:
    """The project provider, after the engine's pickle round trip (in this process)."""
    return as_engine_loads(ProjectProvider())
