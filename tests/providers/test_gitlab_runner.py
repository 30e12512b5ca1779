"""The runner is a group runner of the platform's group, got or created: over a preserved GitLab
ours (a runner of that group with its exact description, which names the stack) is adopted with a
new authentication token, and no duplicate of ours stays; a runner of our description in another
group, or an instance runner, is never adopted. The provider is loaded as the engine loads it and
runs against the local GitLab stub."""

from __future__ import annotations

from typing import Any

import pytest

from providers.gitlab_get_or_create import GitLabObjectError
from providers.gitlab_runner import PROVIDER_VERSION, RunnerProvider
from tests.providers.engine import as_engine_loads, free_port, outputs_of
from tests.providers.gitlab_stub import ADMIN, TOKEN, GitLabState

DESCRIPTION = "blueprint/phase2: Kubernetes executor on the runner nodes"
TAGS = ["kubernetes", "blueprint"]
OWNER = "blueprint/phase2"


@pytest.fixture
def group(state: GitLabState) -> dict[str, Any]:
    """The platform's group, made by this stack (its mark)."""
    return state.add_group("blueprint-apps", owner=OWNER, creator=ADMIN)


def props(gitlab: str, group: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "gitlab_url": gitlab,
        "token": TOKEN,
        "ca_file": "/nonexistent/ca.crt",
        "group_id": float(group["id"]),  # ids arrive as floats
        "description": DESCRIPTION,
        "tag_list": TAGS,
        "run_untagged": True,
        "access_level": "not_protected",
        "owner": OWNER,
        "provider_version": PROVIDER_VERSION,
        **extra,
    }


@pytest.fixture
def runners() -> RunnerProvider:
    return as_engine_loads(RunnerProvider())


def test_a_new_runner_is_a_runner_of_the_group_made_through_the_runner_api(
    gitlab: str, state: GitLabState, group: dict[str, Any], runners: RunnerProvider
) -> None:
    made = runners.create(props(gitlab, group))
    runner = state.runners[int(made.id)]
    assert (runner["runner_type"], runner["groups"]) == ("group_type", [group["id"]])
    assert (runner["description"], runner["tag_list"]) == (DESCRIPTION, TAGS)
    assert outputs_of(made)["authentication_token"] == runner["token"]
    assert "POST /user/runners" in state.calls


def test_an_adopted_runner_gets_a_new_token_and_no_duplicate_remains(
    gitlab: str, state: GitLabState, group: dict[str, Any], runners: RunnerProvider
) -> None:
    first = state.add_runner(DESCRIPTION, TAGS, group=group)  # what two lost states left behind
    state.add_runner(DESCRIPTION, TAGS, group=group)
    state.page_size = 1  # the group's runners come a page at a time
    old_token = first["token"]
    made = runners.create(props(gitlab, group))
    assert made.id == str(first["id"])
    assert list(state.runners) == [first["id"]]
    token = outputs_of(made)["authentication_token"]
    assert token == state.runners[first["id"]]["token"] != old_token
    assert "POST /user/runners" not in state.calls


def test_only_a_runner_of_the_group_is_adopted(gitlab: str, state: GitLabState, group: dict[str, Any], runners: RunnerProvider) -> None:
    """Our description on a runner of another group (a subgroup's, or one someone registered with
    it) or on an instance runner does not make it ours: ours serves this group."""
    elsewhere = state.add_group("elsewhere", owner=OWNER, creator=ADMIN)
    theirs = state.add_runner(DESCRIPTION, TAGS, group=elsewhere)
    child = state.add_group("child", parent_id=group["id"])
    in_child = state.add_runner(DESCRIPTION, TAGS, group=child)
    made = runners.create(props(gitlab, group))
    assert made.id not in (str(theirs["id"]), str(in_child["id"]))
    assert state.runners[int(made.id)]["groups"] == [group["id"]]
    assert (state.runners[theirs["id"]]["token"], state.runners[in_child["id"]]["token"]) == (theirs["token"], in_child["token"])


def test_an_instance_runner_of_our_description_is_neither_adopted_nor_removed(
    gitlab: str, state: GitLabState, group: dict[str, Any], runners: RunnerProvider
) -> None:
    """It would serve every project of the instance; blueprint makes none, so it is someone else's."""
    instance = state.add_runner(DESCRIPTION, TAGS)
    made = runners.create(props(gitlab, group))
    assert made.id != str(instance["id"])
    assert state.runners[instance["id"]]["token"] == instance["token"]
    assert state.runners[int(made.id)]["groups"] == [group["id"]]


def test_no_runner_is_made_for_a_group_that_is_not_ours(gitlab: str, state: GitLabState, runners: RunnerProvider) -> None:
    theirs = state.add_group("blueprint-apps", owner="someone/else")
    with pytest.raises(GitLabObjectError, match="not the one this state recorded"):
        runners.create(props(gitlab, theirs))
    assert state.runners == {}


def test_a_runner_of_ours_whose_tags_were_edited_is_adopted_not_duplicated(
    gitlab: str, state: GitLabState, group: dict[str, Any], runners: RunnerProvider
) -> None:
    """A runner listing filtered by `tag_list` shows only runners carrying every tag named: ours is found by description."""
    edited = state.add_runner(DESCRIPTION, ["kubernetes"], group=group)
    made = runners.create(props(gitlab, group))
    assert made.id == str(edited["id"])
    assert list(state.runners) == [edited["id"]]
    assert state.runners[edited["id"]]["tag_list"] == TAGS  # brought back to the inputs


def test_a_runner_for_protected_refs_only_is_registered_so(
    gitlab: str, state: GitLabState, group: dict[str, Any], runners: RunnerProvider
) -> None:
    made = runners.create(props(gitlab, group, access_level="ref_protected"))
    assert state.runners[int(made.id)]["access_level"] == "ref_protected"


def test_an_adopted_runner_that_took_any_refs_jobs_is_brought_to_protected_refs_only(
    gitlab: str, state: GitLabState, group: dict[str, Any], runners: RunnerProvider
) -> None:
    """What an earlier blueprint, or someone by hand, left `not_protected` takes no branch's job once adopted."""
    kept = state.add_runner(DESCRIPTION, TAGS, group=group)
    runners.create(props(gitlab, group, access_level="ref_protected"))
    assert state.runners[kept["id"]]["access_level"] == "ref_protected"


def test_an_update_brings_the_access_level_to_the_inputs(
    gitlab: str, state: GitLabState, group: dict[str, Any], runners: RunnerProvider
) -> None:
    made = runners.create(props(gitlab, group))
    runners.update(str(made.id), outputs_of(made), props(gitlab, group, access_level="ref_protected"))
    assert state.runners[int(made.id)]["access_level"] == "ref_protected"


def test_a_runner_that_is_not_ours_is_left_alone(gitlab: str, state: GitLabState, group: dict[str, Any], runners: RunnerProvider) -> None:
    theirs = state.add_runner("a runner someone registered by hand", TAGS, group=group)
    made = runners.create(props(gitlab, group))
    assert made.id != str(theirs["id"])
    assert state.runners[theirs["id"]]["token"] == theirs["token"]


def test_an_update_keeps_the_token(gitlab: str, state: GitLabState, group: dict[str, Any], runners: RunnerProvider) -> None:
    made = runners.create(props(gitlab, group))
    updated = outputs_of(runners.update(str(made.id), outputs_of(made), props(gitlab, group, run_untagged=False)))
    assert updated["authentication_token"] == outputs_of(made)["authentication_token"]
    assert state.runners[int(made.id)]["run_untagged"] is False


def test_another_description_or_group_is_another_runner(runners: RunnerProvider) -> None:
    group, other = {"id": 7}, {"id": 8}
    assert runners.diff("1", props("http://x", group), props("http://x", group, description="blueprint/dev: x")).replaces == ["description"]
    assert runners.diff("1", props("http://x", group), props("http://x", other)).replaces == ["group_id"]


def test_a_refresh_reports_a_deleted_runner_as_gone(
    gitlab: str, state: GitLabState, group: dict[str, Any], runners: RunnerProvider
) -> None:
    made = runners.create(props(gitlab, group))
    runners.delete(str(made.id), outputs_of(made))
    assert state.runners == {}
    gone = runners.read(str(made.id), outputs_of(made))
    assert (gone.id, gone.outs) == (None, {})


@pytest.mark.parametrize("change", ["description", "group"])
def test_a_runner_at_the_recorded_id_that_is_not_ours_is_left_alone(
    gitlab: str, state: GitLabState, group: dict[str, Any], runners: RunnerProvider, change: str
) -> None:
    """The state outlived its GitLab: in the new one that id is a runner someone registered by hand,
    or a runner of another group. An update refuses it, a delete leaves it, a refresh reports ours
    gone (the next `up` makes ours)."""
    made = runners.create(props(gitlab, group))
    theirs = state.runners[int(made.id)]
    if change == "description":
        theirs["description"] = "a runner someone registered by hand"
    else:
        theirs["groups"] = [state.add_group("elsewhere", owner="someone/else")["id"]]
    before = dict(theirs)
    with pytest.raises(GitLabObjectError, match="belongs to an earlier GitLab"):
        runners.update(str(made.id), outputs_of(made), props(gitlab, group, run_untagged=False))
    runners.delete(str(made.id), outputs_of(made))
    assert state.runners[int(made.id)] == before
    gone = runners.read(str(made.id), outputs_of(made))
    assert (gone.id, gone.outs) == (None, {})


@pytest.mark.usefixtures("clock")  # the client's retries on a clock the test drives
def test_a_refresh_keeps_the_runner_when_gitlab_gives_no_answer(gitlab: str, group: dict[str, Any], runners: RunnerProvider) -> None:
    made = runners.create(props(gitlab, group))
    recorded = {**outputs_of(made), "gitlab_url": f"http://127.0.0.1:{free_port()}"}
    kept = runners.read(str(made.id), recorded)
    assert (kept.id, kept.outs) == (made.id, recorded)


def test_a_message_that_names_a_command_gives_the_runners_stack(
    gitlab: str, state: GitLabState, group: dict[str, Any], runners: RunnerProvider
) -> None:
    made = runners.create(props(gitlab, group))
    del state.runners[int(made.id)]
    with pytest.raises(GitLabObjectError) as failed:
        runners.update(str(made.id), outputs_of(made), props(gitlab, group, run_untagged=False))
    assert "`pulumi refresh -s phase2`" in str(failed.value)
    assert 'eval "$(uv run blueprint env)"' in str(failed.value)
