"""The project deploy token: its value kept as a secret output, made again when found without it,
and never joined by a second active token of its name."""

from __future__ import annotations

import pytest

from providers.gitlab_deploy_token import DeployTokenProvider
from providers.gitlab_get_or_create import GitLabObjectError
from tests.providers.engine import as_engine_loads, outputs_of
from tests.providers.gitlab_kinds import GROUP, OWNER, token_props
from tests.providers.gitlab_stub import GitLabState

pytestmark = pytest.mark.usefixtures("clock")  # every wait and retry on a clock the test drives


def test_an_active_deploy_token_of_ours_found_without_its_value_is_made_again(gitlab: str, state: GitLabState) -> None:
    """A new state over the same GitLab finds ours, whose value GitLab never shows again: it is
    revoked and made anew, so that the state (and OpenBao) holds the value jobs get. One stays active."""
    group = state.add_group(GROUP, owner=OWNER)
    project = state.add_project(group, "guestbook", owner=OWNER)
    tokens = as_engine_loads(DeployTokenProvider())
    first = tokens.create(token_props(gitlab, project))
    again = tokens.create(token_props(gitlab, project))  # a new state over the same GitLab
    assert again.id != first.id
    assert [token["id"] for token in state.deploy_tokens[project["id"]]] == [int(again.id)]
    assert outputs_of(again)["deploy_token"] == state.deploy_tokens[project["id"]][0]["token"]


def test_a_made_deploy_tokens_value_is_kept_as_its_secret_output(gitlab: str, state: GitLabState) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    project = state.add_project(group, "guestbook", owner=OWNER)
    made = as_engine_loads(DeployTokenProvider()).create(token_props(gitlab, project))
    assert outputs_of(made)["deploy_token"] == state.deploy_tokens[project["id"]][0]["token"]


def test_a_deploy_token_the_user_named_otherwise_is_left_alone(gitlab: str, state: GitLabState) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    project = state.add_project(group, "guestbook", owner=OWNER)
    tokens = as_engine_loads(DeployTokenProvider())
    users = tokens.create({**token_props(gitlab, project, scopes=("read_repository",)), "name": "their-token"})
    ours = tokens.create(token_props(gitlab, project))
    assert ours.id != users.id
    assert [token["revoked"] for token in state.deploy_tokens[project["id"]]] == [False, False]


def test_another_active_token_of_our_name_is_refused_naming_the_project_and_the_fix(gitlab: str, state: GitLabState) -> None:
    """GitLab hands jobs any one active `gitlab-deploy-token`: a second one would make it chance.
    Only exactly our scopes are ours: more scopes are someone else's token."""
    group = state.add_group(GROUP, owner=OWNER)
    project = state.add_project(group, "guestbook", owner=OWNER)
    tokens = as_engine_loads(DeployTokenProvider())
    tokens.create(token_props(gitlab, project, scopes=("read_registry", "read_repository")))
    with pytest.raises(GitLabObjectError) as refused:
        tokens.create(token_props(gitlab, project))
    message = str(refused.value)
    assert f"project {GROUP}/guestbook already has an active deploy token named 'gitlab-deploy-token'" in message
    assert "Revoke that token" in message
    assert [token["revoked"] for token in state.deploy_tokens[project["id"]]] == [False]


def test_a_deploy_token_of_new_scopes_replaces_the_old_one_deleting_it_first() -> None:
    """Made first, the new one would find ours, of other scopes, in its way, and refuse."""
    olds = {"project": "42", "name": "gitlab-deploy-token", "scopes": ["read_registry"], "deploy_token": "gldt-x"}
    diff = as_engine_loads(DeployTokenProvider()).diff("7", olds, {**olds, "scopes": ["read_registry", "read_repository"]})
    assert (diff.replaces, diff.delete_before_replace) == (["scopes"], True)
