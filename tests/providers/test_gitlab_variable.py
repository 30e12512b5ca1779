"""CI/CD variables: upserted by key in the `*` scope only, their edits in GitLab shown by a refresh,
and made only in a group or project of the stack that made it."""

from __future__ import annotations

import pytest

from providers.gitlab_get_or_create import GitLabObjectError
from providers.gitlab_variable import VariableProvider
from tests.providers.engine import as_engine_loads, outputs_of
from tests.providers.gitlab_kinds import GROUP, OWNER, variable_props
from tests.providers.gitlab_stub import GitLabState

pytestmark = pytest.mark.usefixtures("clock")  # every wait and retry on a clock the test drives


def test_an_existing_variable_is_updated_in_place(gitlab: str, state: GitLabState) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    project = state.add_project(group, "guestbook", owner=OWNER)
    state.add_variable(f"projects/{project['id']}", "APP_HOST", "old")
    variables = as_engine_loads(VariableProvider())
    variables.create(variable_props(gitlab, project, "APP_HOST", "guestbook.local.example.net"))
    assert state.variable(f"projects/{project['id']}", "APP_HOST")["value"] == "guestbook.local.example.net"
    assert "POST /projects/{}/variables".format(project["id"]) not in state.calls


def test_a_variable_is_ours_in_the_all_environments_scope_only(gitlab: str, state: GitLabState) -> None:
    """The user's same key for `production` is left alone; without naming the scope GitLab answers 409."""
    group = state.add_group(GROUP, owner=OWNER)
    project = state.add_project(group, "guestbook", owner=OWNER)
    holder = f"projects/{project['id']}"
    state.add_variable(holder, "APP_HOST", "old")
    state.add_variable(holder, "APP_HOST", "production.example.net", scope="production")
    variables = as_engine_loads(VariableProvider())
    made = variables.create(variable_props(gitlab, project, "APP_HOST", "guestbook.local.example.net"))
    assert variables.read(str(made.id), outputs_of(made)).id == made.id
    variables.delete(str(made.id), outputs_of(made))
    assert [(v["environment_scope"], v["value"]) for v in state.variables[holder]] == [("production", "production.example.net")]


def test_a_group_file_variable_is_created_when_missing(gitlab: str, state: GitLabState) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    props = {**variable_props(gitlab, group, "DEPLOY_KUBECONFIG", "apiVersion: v1\n", scope="groups"), "variable_type": "file"}
    as_engine_loads(VariableProvider()).create(props)
    assert state.variable(f"groups/{group['id']}", "DEPLOY_KUBECONFIG")["variable_type"] == "file"


def test_a_refresh_shows_a_variable_edited_in_gitlab(gitlab: str, state: GitLabState) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    variables = as_engine_loads(VariableProvider())
    made = variables.create(variable_props(gitlab, group, "BLUEPRINT_DOMAIN", "local.example.net", scope="groups"))
    state.variable(f"groups/{group['id']}", "BLUEPRINT_DOMAIN")["value"] = "edited"
    refreshed = outputs_of(variables.read(str(made.id), outputs_of(made)))
    assert variables.diff(str(made.id), refreshed, outputs_of(made)).changes is True


def test_a_change_of_protected_is_an_update_of_the_variable(gitlab: str, state: GitLabState) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    variables = as_engine_loads(VariableProvider())
    unprotected = {**variable_props(gitlab, group, "DEPLOY_KUBECONFIG", "apiVersion: v1\n", scope="groups"), "variable_type": "file"}
    made = variables.create(unprotected)
    protected = {**unprotected, "protected": True}
    diff = variables.diff(str(made.id), outputs_of(made), protected)
    assert (diff.changes, diff.replaces) == (True, [])
    variables.update(str(made.id), outputs_of(made), protected)
    assert state.variable(f"groups/{group['id']}", "DEPLOY_KUBECONFIG")["protected"] is True
    assert len(state.variables[f"groups/{group['id']}"]) == 1


def test_a_protected_variable_is_sent_protected_when_made(gitlab: str, state: GitLabState) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    props = {**variable_props(gitlab, group, "DEPLOY_KUBECONFIG", "apiVersion: v1\n", scope="groups"), "protected": True}
    as_engine_loads(VariableProvider()).create(props)
    assert state.variable(f"groups/{group['id']}", "DEPLOY_KUBECONFIG")["protected"] is True


def test_a_variable_of_another_stacks_group_is_checked_against_that_groups_mark(gitlab: str, state: GitLabState) -> None:
    """phase3's variables live in phase2's group: made there, and refused in a group without phase2's mark."""
    group = state.add_group(GROUP, owner="blueprint/phase2")
    variables = as_engine_loads(VariableProvider())
    props = {**variable_props(gitlab, group, "BLUEPRINT_DOMAIN", "local.example.net", scope="groups"), "parent_owner": "blueprint/phase2"}
    made = variables.create(props)
    assert variables.read(str(made.id), outputs_of(made)).id == made.id
    state.attributes[f"groups/{group['id']}"] = {"blueprint_owner": "someone/else"}
    with pytest.raises(GitLabObjectError) as refused:
        variables.update(str(made.id), outputs_of(made), {**props, "value": "other"})
    assert "`pulumi refresh -s phase3`" in str(refused.value)  # the variable's own stack
