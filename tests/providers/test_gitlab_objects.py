"""Objects in GitLab's database are got or created: a new state over a preserved GitLab adopts
what is ours (marked with the stack's owner), refuses what is not, and never makes a second one;
a delete leaves nothing in the way of making it again. Each provider is loaded as the engine loads
it and runs against the local GitLab stub."""

from __future__ import annotations

from typing import Any

import pytest

from providers.gitlab_objects import (
    PROVIDER_VERSION,
    DeployTokenProvider,
    GitLabObjectError,
    GroupProvider,
    ProjectProvider,
    VariableProvider,
)
from tests.providers.engine import as_engine_loads, outputs_of
from tests.providers.gitlab_stub import TOKEN, GitLabState

OWNER = "blueprint/phase3"
GROUP = "blueprint-apps"


def connection(gitlab: str) -> dict[str, Any]:
    return {"gitlab_url": gitlab, "token": TOKEN, "ca_file": "/nonexistent/ca.crt", "provider_version": PROVIDER_VERSION}


def group_props(gitlab: str, **extra: Any) -> dict[str, Any]:
    props = {"path": GROUP, "name": GROUP, "description": "Apps.", "visibility": "internal", "owner": OWNER}
    return {**connection(gitlab), **props, **extra}


def project_props(gitlab: str, group: dict[str, Any], path: str = "guestbook", **extra: Any) -> dict[str, Any]:
    props = {"namespace": GROUP, "namespace_id": float(group["id"]), "path": path, "name": path, "visibility": "internal"}
    return {**connection(gitlab), **props, "default_branch": "main", "owner": OWNER, **extra}  # ids arrive as floats


def variable_props(gitlab: str, parent: dict[str, Any], key: str, value: str, scope: str = "projects") -> dict[str, Any]:
    props = {"scope": scope, "parent": str(parent["id"]), "key": key, "value": value, "variable_type": "env_var"}
    return {**connection(gitlab), **props, "protected": False, "masked": False, "raw": False}


def token_props(gitlab: str, project: dict[str, Any], scopes: tuple[str, ...] = ("read_registry",)) -> dict[str, Any]:
    return {**connection(gitlab), "project": str(project["id"]), "name": "gitlab-deploy-token", "scopes": list(scopes)}


@pytest.fixture
def groups() -> GroupProvider:
    return as_engine_loads(GroupProvider())


@pytest.fixture
def projects() -> ProjectProvider:
    return as_engine_loads(ProjectProvider())


def test_a_new_group_is_created_and_marked_as_the_stacks(gitlab: str, state: GitLabState, groups: GroupProvider) -> None:
    made = groups.create(group_props(gitlab))
    group = state.groups[int(made.id)]
    assert (group["path"], group["visibility"]) == (GROUP, "internal")
    assert state.attributes[f"groups/{made.id}"] == {"blueprint_owner": OWNER}


def test_an_existing_group_of_ours_is_adopted_not_recreated(gitlab: str, state: GitLabState, groups: GroupProvider) -> None:
    existing = state.add_group(GROUP, owner=OWNER)
    made = groups.create(group_props(gitlab))
    assert made.id == str(existing["id"])
    assert list(state.groups) == [existing["id"]]
    assert existing["visibility"] == "internal"  # brought to the inputs


def test_a_group_we_did_not_create_is_refused_naming_it(gitlab: str, state: GitLabState, groups: GroupProvider) -> None:
    theirs = state.add_group(GROUP)
    with pytest.raises(GitLabObjectError) as refused:
        groups.create(group_props(gitlab))
    message = str(refused.value)
    assert f"group {GROUP} that this stack ({OWNER}) did not create" in message
    assert f"PUT /api/v4/groups/{theirs['id']}/custom_attributes/blueprint_owner with value={OWNER}" in message
    assert TOKEN not in message


def test_a_group_of_another_stack_is_refused(gitlab: str, state: GitLabState, groups: GroupProvider) -> None:
    state.add_group(GROUP, owner="blueprint/dev")
    with pytest.raises(GitLabObjectError, match="its blueprint_owner is 'blueprint/dev'"):
        groups.create(group_props(gitlab))


def test_a_deleted_group_does_not_block_creating_it_again(gitlab: str, state: GitLabState, groups: GroupProvider) -> None:
    """A top-level group is only scheduled for deletion (and renamed): the path is free again."""
    old = groups.create(group_props(gitlab))
    groups.delete(old.id, outputs_of(old))
    assert state.groups[int(old.id)]["marked_for_deletion_on"]
    new = groups.create(group_props(gitlab))
    assert new.id != old.id


def test_a_scheduled_group_of_ours_that_kept_its_path_is_restored(gitlab: str, state: GitLabState, groups: GroupProvider) -> None:
    """GitLab does not rename a group whose projects still hold images: it is restored, not refused."""
    old = groups.create(group_props(gitlab))
    state.images.add(int(old.id))
    groups.delete(old.id, outputs_of(old))
    again = groups.create(group_props(gitlab))
    assert again.id == old.id
    assert state.groups[int(old.id)]["marked_for_deletion_on"] is None


def test_a_new_path_replaces_the_group_other_inputs_update_it(groups: GroupProvider) -> None:
    olds = group_props("http://x")
    assert groups.diff("1", olds, group_props("http://x", path="elsewhere")).replaces == ["path"]
    changed = groups.diff("1", olds, group_props("http://x", description="new"))
    assert (changed.changes, changed.replaces) == (True, [])


def test_an_existing_project_of_ours_is_adopted_not_recreated(gitlab: str, state: GitLabState, projects: ProjectProvider) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    existing = state.add_project(group, "guestbook", owner=OWNER)
    made = projects.create(project_props(gitlab, group))
    assert made.id == str(existing["id"])
    assert len(state.projects) == 1
    assert outputs_of(made)["full_path"] == f"{GROUP}/guestbook"


def test_a_project_we_did_not_create_is_refused_naming_it(gitlab: str, state: GitLabState, projects: ProjectProvider) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    state.add_project(group, "guestbook")
    with pytest.raises(GitLabObjectError, match=f"project {GROUP}/guestbook that this stack"):
        projects.create(project_props(gitlab, group))


def test_a_deleted_project_does_not_block_creating_it_again(gitlab: str, state: GitLabState, projects: ProjectProvider) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    old = projects.create(project_props(gitlab, group))
    projects.delete(old.id, outputs_of(old))
    assert int(old.id) not in state.projects  # scheduled, then deleted at once with its new path
    new = projects.create(project_props(gitlab, group))
    assert new.id != old.id


def test_a_project_only_scheduled_for_deletion_does_not_block_creating_it_again(
    gitlab: str, state: GitLabState, projects: ProjectProvider
) -> None:
    """With immediate deletion off, the project stays scheduled under its new path, and its old
    path only redirects there: that path is free."""
    state.immediate_deletion = False
    group = state.add_group(GROUP, owner=OWNER)
    old = projects.create(project_props(gitlab, group))
    projects.delete(old.id, outputs_of(old))
    assert state.projects[int(old.id)]["path"] == f"guestbook-deletion_scheduled-{old.id}"
    new = projects.create(project_props(gitlab, group))
    assert new.id != old.id


def test_deleting_what_is_already_gone_succeeds(gitlab: str, state: GitLabState, projects: ProjectProvider) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    made = projects.create(project_props(gitlab, group))
    del state.projects[int(made.id)]
    projects.delete(made.id, outputs_of(made))


def test_a_refresh_reports_a_vanished_object_as_gone(gitlab: str, state: GitLabState, projects: ProjectProvider) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    made = projects.create(project_props(gitlab, group))
    del state.projects[int(made.id)]
    gone = projects.read(made.id, outputs_of(made))
    assert (gone.id, gone.outs) == (None, {})


def test_an_existing_variable_is_updated_in_place(gitlab: str, state: GitLabState) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    project = state.add_project(group, "guestbook", owner=OWNER)
    state.variables[f"projects/{project['id']}"] = {"APP_HOST": {"key": "APP_HOST", "value": "old", "variable_type": "env_var"}}
    variables = as_engine_loads(VariableProvider())
    variables.create(variable_props(gitlab, project, "APP_HOST", "guestbook.local.example.net"))
    assert state.variables[f"projects/{project['id']}"]["APP_HOST"]["value"] == "guestbook.local.example.net"
    assert "POST /projects/{}/variables".format(project["id"]) not in state.calls


def test_a_group_file_variable_is_created_when_missing(gitlab: str, state: GitLabState) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    props = {**variable_props(gitlab, group, "DEPLOY_KUBECONFIG", "apiVersion: v1\n", scope="groups"), "variable_type": "file"}
    as_engine_loads(VariableProvider()).create(props)
    assert state.variables[f"groups/{group['id']}"]["DEPLOY_KUBECONFIG"]["variable_type"] == "file"


def test_a_refresh_shows_a_variable_edited_in_gitlab(gitlab: str, state: GitLabState) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    variables = as_engine_loads(VariableProvider())
    made = variables.create(variable_props(gitlab, group, "BLUEPRINT_DOMAIN", "local.example.net", scope="groups"))
    state.variables[f"groups/{group['id']}"]["BLUEPRINT_DOMAIN"]["value"] = "edited"
    refreshed = outputs_of(variables.read(str(made.id), outputs_of(made)))
    assert variables.diff(str(made.id), refreshed, outputs_of(made)).changes is True


def test_an_active_deploy_token_with_the_right_scopes_is_reused(gitlab: str, state: GitLabState) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    project = state.add_project(group, "guestbook", owner=OWNER)
    tokens = as_engine_loads(DeployTokenProvider())
    first = tokens.create(token_props(gitlab, project))
    again = tokens.create(token_props(gitlab, project))  # a new state over the same GitLab
    assert again.id == first.id
    assert len(state.deploy_tokens[project["id"]]) == 1


def test_a_deploy_token_the_user_made_with_other_scopes_is_left_alone(gitlab: str, state: GitLabState) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    project = state.add_project(group, "guestbook", owner=OWNER)
    tokens = as_engine_loads(DeployTokenProvider())
    users = tokens.create(token_props(gitlab, project, scopes=("read_repository",)))
    ours = tokens.create(token_props(gitlab, project))
    assert ours.id != users.id
    assert [token["revoked"] for token in state.deploy_tokens[project["id"]]] == [False, False]
    values = [str(value) for value in outputs_of(ours).values()]
    assert not any(value.startswith("gldt-") for value in values)  # GitLab's to hand to jobs, not ours to keep
