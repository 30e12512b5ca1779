"""The instance runner is got or created: over a preserved GitLab ours (its exact description,
which names the stack) is adopted with a new authentication token, and no duplicate of ours stays.
The provider is loaded as the engine loads it and runs against the local GitLab stub."""

from __future__ import annotations

from typing import Any

import pytest

from providers.gitlab_runner import PROVIDER_VERSION, RunnerProvider
from tests.providers.engine import as_engine_loads, outputs_of
from tests.providers.gitlab_stub import TOKEN, GitLabState

DESCRIPTION = "blueprint/phase2: Kubernetes executor on the runner nodes"
TAGS = ["kubernetes", "blueprint"]


def props(gitlab: str, **extra: Any) -> dict[str, Any]:
    return {
        "gitlab_url": gitlab,
        "token": TOKEN,
        "ca_file": "/nonexistent/ca.crt",
        "description": DESCRIPTION,
        "tag_list": TAGS,
        "run_untagged": True,
        "provider_version": PROVIDER_VERSION,
        **extra,
    }


@pytest.fixture
def runners() -> RunnerProvider:
    return as_engine_loads(RunnerProvider())


def test_a_new_runner_is_an_instance_runner_made_through_the_runner_api(gitlab: str, state: GitLabState, runners: RunnerProvider) -> None:
    made = runners.create(props(gitlab))
    runner = state.runners[int(made.id)]
    assert (runner["runner_type"], runner["description"], runner["tag_list"]) == ("instance_type", DESCRIPTION, TAGS)
    assert outputs_of(made)["authentication_token"] == runner["token"]
    assert "POST /user/runners" in state.calls


def test_an_adopted_runner_gets_a_new_token_and_no_duplicate_remains(gitlab: str, state: GitLabState, runners: RunnerProvider) -> None:
    first = state.add_runner(DESCRIPTION, TAGS)  # what two lost states left behind
    state.add_runner(DESCRIPTION, TAGS)
    state.page_size = 1  # the instance runners come a page at a time
    old_token = first["token"]
    made = runners.create(props(gitlab))
    assert made.id == str(first["id"])
    assert list(state.runners) == [first["id"]]
    token = outputs_of(made)["authentication_token"]
    assert token == state.runners[first["id"]]["token"] != old_token
    assert "POST /user/runners" not in state.calls


def test_a_runner_that_is_not_ours_is_left_alone(gitlab: str, state: GitLabState, runners: RunnerProvider) -> None:
    theirs = state.add_runner("a runner someone registered by hand", TAGS)
    made = runners.create(props(gitlab))
    assert made.id != str(theirs["id"])
    assert state.runners[theirs["id"]]["token"] == theirs["token"]


def test_an_update_keeps_the_token(gitlab: str, state: GitLabState, runners: RunnerProvider) -> None:
    made = runners.create(props(gitlab))
    updated = outputs_of(runners.update(str(made.id), outputs_of(made), props(gitlab, run_untagged=False)))
    assert updated["authentication_token"] == outputs_of(made)["authentication_token"]
    assert state.runners[int(made.id)]["run_untagged"] is False


def test_another_description_is_another_runner(runners: RunnerProvider) -> None:
    assert runners.diff("1", props("http://x"), props("http://x", description="blueprint/dev: x")).replaces == ["description"]


def test_a_refresh_reports_a_deleted_runner_as_gone(gitlab: str, state: GitLabState, runners: RunnerProvider) -> None:
    made = runners.create(props(gitlab))
    runners.delete(str(made.id), outputs_of(made))
    assert state.runners == {}
    gone = runners.read(str(made.id), outputs_of(made))
    assert (gone.id, gone.outs) == (None, {})
