"""The instance runner is got or created: over a preserved GitLab ours (its exact description,
which names the stack) is adopted with a new authentication token, and no duplicate of ours stays.
The provider is loaded as the engine loads it and runs against the local GitLab stub."""

from __future__ import annotations

from typing import Any

import pytest

from providers import gitlab_api
from providers.gitlab_objects import GitLabObjectError
from providers.gitlab_runner import PROVIDER_VERSION, RunnerProvider
from tests.providers.engine import as_engine_loads, free_port, outputs_of
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
        "owner": "blueprint/phase2",
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


def test_a_runner_of_ours_whose_tags_were_edited_is_adopted_not_duplicated(
    gitlab: str, state: GitLabState, runners: RunnerProvider
) -> None:
    """`GET /runners/all?tag_list=` lists only runners carrying every tag named: ours is found by description."""
    edited = state.add_runner(DESCRIPTION, ["kubernetes"])
    made = runners.create(props(gitlab))
    assert made.id == str(edited["id"])
    assert list(state.runners) == [edited["id"]]
    assert state.runners[edited["id"]]["tag_list"] == TAGS  # brought back to the inputs


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


def test_a_runner_at_the_recorded_id_that_is_not_ours_is_left_alone(gitlab: str, state: GitLabState, runners: RunnerProvider) -> None:
    """The state outlived its GitLab: in the new one that id is a runner someone registered by hand.
    An update refuses it, a delete leaves it, a refresh reports ours gone (the next `up` makes ours)."""
    made = runners.create(props(gitlab))
    theirs = state.runners[int(made.id)]
    theirs["description"] = "a runner someone registered by hand"
    before = dict(theirs)
    with pytest.raises(GitLabObjectError, match="belongs to an earlier GitLab"):
        runners.update(str(made.id), outputs_of(made), props(gitlab, run_untagged=False))
    runners.delete(str(made.id), outputs_of(made))
    assert state.runners[int(made.id)] == before
    gone = runners.read(str(made.id), outputs_of(made))
    assert (gone.id, gone.outs) == (None, {})


def test_a_refresh_keeps_the_runner_when_gitlab_gives_no_answer(
    gitlab: str, runners: RunnerProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gitlab_api, "RETRY_PAUSES", (0.0, 0.0, 0.0, 0.0))
    made = runners.create(props(gitlab))
    recorded = {**outputs_of(made), "gitlab_url": f"http://127.0.0.1:{free_port()}"}
    kept = runners.read(str(made.id), recorded)
    assert (kept.id, kept.outs) == (made.id, recorded)


def test_a_message_that_names_a_command_gives_the_runners_stack(gitlab: str, state: GitLabState, runners: RunnerProvider) -> None:
    made = runners.create(props(gitlab))
    del state.runners[int(made.id)]
    with pytest.raises(GitLabObjectError) as failed:
        runners.update(str(made.id), outputs_of(made), props(gitlab, run_untagged=False))
    assert "`pulumi refresh -s phase2`" in str(failed.value)
    assert 'eval "$(uv run blueprint env)"' in str(failed.value)
