"""What every GitLab object kind shares (providers/gitlab_get_or_create.py), tried on each: a state
that outlived its GitLab changes nothing that is not ours, and a refresh drops it; what a lost
answer made is adopted on proof; one of ours GitLab scheduled for deletion is restored; a refresh
without GitLab's answer keeps the state; a message names the stack and the shell setup. Each
provider is loaded as the engine loads it and runs against the local GitLab stub."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from providers.gitlab_api import GitLab, GitLabApiError
from providers.gitlab_deploy_token import DeployTokenProvider
from providers.gitlab_get_or_create import GetOrCreateProvider, GitLabObjectError
from providers.gitlab_group import GroupProvider
from providers.gitlab_project import ProjectProvider
from providers.gitlab_variable import VariableProvider
from tests.providers.engine import as_engine_loads, free_port, outputs_of
from tests.providers.gitlab_kinds import (
    GROUP,
    KINDS,
    OWNER,
    PLAIN_PULUMI,
    a_new_gitlab_gives_the_ids_to_someone_else,
    connection,
    gitlab_as_it_is,
    group_props,
    project_props,
    recorded,
    token_props,
    variable_props,
    writes_since,
)
from tests.providers.gitlab_stub import ADMIN, GitLabState

pytestmark = pytest.mark.usefixtures("clock")  # every wait and retry on a clock the test drives


@pytest.mark.parametrize("kind", ["group", "project"])
def test_a_refresh_reports_one_of_ours_scheduled_for_deletion_and_the_next_up_restores_it(
    gitlab: str, state: GitLabState, groups: GroupProvider, projects: ProjectProvider, kind: str
) -> None:
    """Deleted in GitLab's UI (or by a half-failed destroy): it still answers by id, renamed, and
    GitLab would delete it later under the stack."""
    made_group = groups.create(group_props(gitlab))
    provider: GroupProvider | ProjectProvider = groups
    made, props = made_group, group_props(gitlab)
    if kind == "project":
        provider, props = projects, project_props(gitlab, state.groups[int(made_group.id)])
        made = projects.create(props)
    GitLab.of(connection(gitlab)).delete(f"/{kind}s/{made.id}")
    refreshed = provider.read(str(made.id), outputs_of(made))
    assert refreshed.id == made.id
    assert outputs_of(refreshed)["marked_for_deletion_on"]
    assert provider.diff(str(made.id), outputs_of(refreshed), props).changes is True
    updated = outputs_of(provider.update(str(made.id), outputs_of(refreshed), props))
    obj = (state.groups if kind == "group" else state.projects)[int(made.id)]
    assert (obj["path"], updated["marked_for_deletion_on"]) == ("blueprint-apps" if kind == "group" else "guestbook", None)


@pytest.mark.parametrize("kind", KINDS)
def test_an_update_of_what_is_no_longer_ours_changes_nothing_and_names_the_fix(gitlab: str, state: GitLabState, kind: str) -> None:
    """A plain `pulumi destroy -s phase2` under a running phase3, or a wiped platform brought up
    again: the ids this state recorded may now be a user's. Nothing is marked, renamed or written."""
    ours = recorded(kind, gitlab, state)
    a_new_gitlab_gives_the_ids_to_someone_else(state)
    before, start = gitlab_as_it_is(state), len(state.calls)
    with pytest.raises(GitLabObjectError) as refused:
        ours.provider.update(ours.id, ours.outputs, ours.news)
    assert writes_since(state, start) == []
    assert gitlab_as_it_is(state) == before
    message = str(refused.value)
    assert "belongs to an earlier GitLab" in message
    assert "`pulumi refresh -s phase3`" in message


@pytest.mark.parametrize("kind", KINDS)
def test_a_delete_of_what_is_no_longer_ours_leaves_it_alone(gitlab: str, state: GitLabState, kind: str) -> None:
    ours = recorded(kind, gitlab, state)
    a_new_gitlab_gives_the_ids_to_someone_else(state)
    before, start = gitlab_as_it_is(state), len(state.calls)
    ours.provider.delete(ours.id, ours.outputs)
    assert writes_since(state, start) == []
    assert gitlab_as_it_is(state) == before


@pytest.mark.parametrize("kind", KINDS)
def test_a_refresh_reports_what_is_no_longer_ours_as_gone(gitlab: str, state: GitLabState, kind: str) -> None:
    """Refresh drops it from the state; the next `up` gets or creates ours where it belongs."""
    ours = recorded(kind, gitlab, state)
    a_new_gitlab_gives_the_ids_to_someone_else(state)
    gone = ours.provider.read(ours.id, ours.outputs)
    assert (gone.id, gone.outs) == (None, {})


@pytest.mark.parametrize("kind", ["group", "project"])
def test_one_of_ours_found_at_another_path_is_not_the_one_recorded(gitlab: str, state: GitLabState, kind: str) -> None:
    """The mark is the stack's, but the object moved (renamed in GitLab, or another one of ours has
    that id now): it is not where this state put it, so it is not updated there."""
    ours = recorded(kind, gitlab, state)
    held = state.groups[int(ours.id)] if kind == "group" else state.projects[int(ours.id)]
    held["path"] = "moved"
    with pytest.raises(GitLabObjectError, match="carries this stack's mark but is at"):
        ours.provider.update(ours.id, ours.outputs, ours.news)
    assert held["path"] == "moved"
    assert ours.provider.read(ours.id, ours.outputs).id is None


@pytest.mark.parametrize("kind", ["group", "project"])
def test_what_gitlab_made_for_a_request_whose_answer_was_lost_is_adopted_and_marked(gitlab: str, state: GitLabState, kind: str) -> None:
    """The create is a POST, then a PUT of the mark: a lost answer (or a killed `up`) in between
    leaves an unmarked object of our own making. GitLab's record of who made it proves it ours:
    the admin's group, with the admin as its only member, an Owner no one added; a project whose
    `creator_id` is the admin."""
    group = state.add_group(GROUP, owner=OWNER, creator=ADMIN) if kind == "project" else None

    def gitlab_makes_it_but_the_answer_is_lost(method: str, path: str, query: dict[str, str]) -> None:
        if (method, path) == ("POST", f"/{kind}s"):
            state.meanwhile = None
            made = state.add_group(GROUP, creator=ADMIN) if group is None else state.add_project(group, "guestbook", creator=ADMIN)
            made["lost"] = True

    state.meanwhile = gitlab_makes_it_but_the_answer_is_lost
    provider: GetOrCreateProvider = as_engine_loads(GroupProvider() if group is None else ProjectProvider())
    props = group_props(gitlab) if group is None else project_props(gitlab, group)
    with pytest.raises(GitLabApiError):  # the stub's own POST then finds the path taken: the answer is an error
        provider.create(props)
    made = provider.create(props)  # the next `up`
    held = (state.groups if group is None else state.projects)[int(made.id)]
    assert held.get("lost") is True
    assert state.attributes[f"{kind}s/{made.id}"]["blueprint_owner"] == OWNER


def no_answer(cause: str, gitlab: str, state: GitLabState) -> dict[str, Any]:
    """What changes in the recorded outputs (or in GitLab) so that GitLab gives no answer."""
    if cause == "unreachable":
        return {"gitlab_url": f"http://127.0.0.1:{free_port()}"}
    if cause == "the CA file is missing":
        return {"gitlab_url": gitlab.replace("http://", "https://")}
    state.failures = [502] * 50  # a gateway's answer while GitLab restarts, after every retry
    return {}


@pytest.mark.parametrize("cause", ["unreachable", "the CA file is missing", "restarting"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_refresh_keeps_the_recorded_state_when_gitlab_gives_no_answer(gitlab: str, state: GitLabState, kind: str, cause: str) -> None:
    """As the OpenBao KV provider does: refresh cannot tell, so it changes nothing and does not fail."""
    ours = recorded(kind, gitlab, state)
    props = {**ours.outputs, **no_answer(cause, gitlab, state)}
    kept = ours.provider.read(ours.id, props)
    assert (kept.id, kept.outs) == (ours.id, props)


@pytest.mark.parametrize(
    "what",
    ["an update of what GitLab no longer holds", "an update of what is no longer ours", "a group that is not ours", "a deploy token"],
)
def test_a_message_that_names_a_command_gives_the_stack_and_the_shell_setup(gitlab: str, state: GitLabState, what: str) -> None:
    def failing() -> Callable[[], object]:
        """What fails, arranged: the call that fails."""
        if what.startswith("an update"):
            ours = recorded("project", gitlab, state)
            if "no longer holds" in what:
                del state.projects[int(ours.id)]
            else:
                a_new_gitlab_gives_the_ids_to_someone_else(state)
            return lambda: ours.provider.update(ours.id, ours.outputs, ours.news)
        if what == "a group that is not ours":
            state.add_group(GROUP)
            return lambda: as_engine_loads(GroupProvider()).create(group_props(gitlab))
        project = state.add_project(state.add_group(GROUP, owner=OWNER), "guestbook", owner=OWNER)
        theirs = {"id": 7, "name": "gitlab-deploy-token", "username": "u", "scopes": ["read_repository"], "revoked": False}
        state.deploy_tokens[project["id"]] = [theirs | {"expired": False}]
        return lambda: as_engine_loads(DeployTokenProvider()).create(token_props(gitlab, project))

    call = failing()
    with pytest.raises(GitLabObjectError) as failed:
        call()
    message = str(failed.value)
    assert "-s phase3`" in message
    assert PLAIN_PULUMI in message
    assert "run `up`" not in message


@pytest.mark.parametrize("kind", ["project", "variable", "deploy token"])
def test_nothing_new_is_made_inside_a_group_or_project_that_is_no_longer_ours(gitlab: str, state: GitLabState, kind: str) -> None:
    """A new app or variable under a state that outlived its GitLab: the recorded group's or
    project's id is a user's now, and nothing goes into it."""
    group = state.add_group(GROUP, owner=OWNER, creator=ADMIN)
    project = state.add_project(group, "guestbook", owner=OWNER, creator=ADMIN)
    a_new_gitlab_gives_the_ids_to_someone_else(state)
    state.add_group(GROUP, creator=ADMIN)  # and the new GitLab has a group at our path (ours, or anyone's)
    before, start = gitlab_as_it_is(state), len(state.calls)
    provider: GetOrCreateProvider
    if kind == "project":
        provider, props = as_engine_loads(ProjectProvider()), project_props(gitlab, group, path="redis")
    elif kind == "variable":
        provider, props = as_engine_loads(VariableProvider()), variable_props(gitlab, project, "APP_HOST", "x")
    else:
        provider, props = as_engine_loads(DeployTokenProvider()), token_props(gitlab, project)
    with pytest.raises(GitLabObjectError, match="belongs to an earlier GitLab"):
        provider.create(props)
    assert writes_since(state, start) == []
    assert gitlab_as_it_is(state) == before


def test_a_gateways_empty_404_is_no_answer_not_gone(gitlab: str, state: GitLabState) -> None:
    """Envoy answers 404, empty, while GitLab's route is being replaced: it says nothing of what
    GitLab holds, and a refresh then must not drop the group (and everything in it) from state."""
    ours = recorded("group", gitlab, state)
    state.failures = [404]
    kept = ours.provider.read(ours.id, ours.outputs)
    assert kept.id == ours.id
