"""Objects in GitLab's database are got or created: a new state over a preserved GitLab adopts
what is ours (marked with the stack's owner), refuses what is not, and never makes a second one;
one of ours that GitLab has scheduled for deletion is restored, not kept as it is nor made twice;
a delete leaves nothing in the way of making it again, and fails only when GitLab did not at least
schedule the object. Each provider is loaded as the engine loads it and runs against the local
GitLab stub."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from providers import gitlab_api, gitlab_objects
from providers.gitlab_api import GitLab, GitLabApiError
from providers.gitlab_objects import (
    PROVIDER_VERSION,
    DeployTokenProvider,
    GetOrCreateProvider,
    GitLabObjectError,
    GroupProvider,
    ProjectProvider,
    VariableProvider,
)
from tests.providers.engine import as_engine_loads, free_port, outputs_of
from tests.providers.gitlab_stub import ADMIN, TOKEN, USER, GitLabState

OWNER = "blueprint/phase3"
GROUP = "blueprint-apps"
PLAIN_PULUMI = 'eval "$(uv run blueprint env)"'
KINDS = ["group", "project", "variable", "deploy token"]


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
    return {**connection(gitlab), **props, "protected": False, "masked": False, "raw": False, "owner": OWNER}


def token_props(gitlab: str, project: dict[str, Any], scopes: tuple[str, ...] = ("read_registry",)) -> dict[str, Any]:
    return {**connection(gitlab), "project": str(project["id"]), "name": "gitlab-deploy-token", "scopes": list(scopes), "owner": OWNER}


@pytest.fixture
def groups() -> GroupProvider:
    return as_engine_loads(GroupProvider())


@pytest.fixture
def projects() -> ProjectProvider:
    return as_engine_loads(ProjectProvider())


@pytest.fixture(autouse=True)
def quick_image_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gitlab_objects, "IMAGES_POLL_SECONDS", 0.01)


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
    state.add_image(state.add_project(state.groups[int(old.id)], "guestbook"))
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


def test_a_scheduled_project_found_through_its_old_paths_redirect_is_restored(
    gitlab: str, state: GitLabState, projects: ProjectProvider
) -> None:
    """With immediate deletion off, a destroyed project stays scheduled under its new path, and its
    old path redirects there: a new state restores it rather than make a second one."""
    state.immediate_deletion = False
    group = state.add_group(GROUP, owner=OWNER)
    old = projects.create(project_props(gitlab, group))
    projects.delete(old.id, outputs_of(old))
    assert state.projects[int(old.id)]["path"] == f"guestbook-deletion_scheduled-{old.id}"
    again = projects.create(project_props(gitlab, group))
    assert again.id == old.id
    assert (state.projects[int(old.id)]["path"], state.projects[int(old.id)]["marked_for_deletion_at"]) == ("guestbook", None)


def test_a_project_renamed_on_purpose_leaves_its_old_path_free(gitlab: str, state: GitLabState, projects: ProjectProvider) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    old = projects.create(project_props(gitlab, group))
    GitLab.of(connection(gitlab)).put(f"/projects/{old.id}", {"path": "renamed"})
    new = projects.create(project_props(gitlab, group))
    assert new.id != old.id
    assert state.projects[int(old.id)]["path"] == "renamed"


def test_someone_elses_scheduled_project_leaves_its_old_path_free(gitlab: str, state: GitLabState, projects: ProjectProvider) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    theirs = state.add_project(group, "guestbook")
    GitLab.of(connection(gitlab)).delete(f"/projects/{theirs['id']}")
    ours = projects.create(project_props(gitlab, group))
    assert ours.id != str(theirs["id"])
    assert state.projects[theirs["id"]]["marked_for_deletion_at"]


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


def test_a_project_with_container_images_is_deleted_after_its_images(gitlab: str, state: GitLabState, projects: ProjectProvider) -> None:
    """GitLab refuses to schedule (rename) a project that holds registry tags without the registry's
    metadata database, and deletes repositories in the background."""
    group = state.add_group(GROUP, owner=OWNER)
    made = projects.create(project_props(gitlab, group))
    state.add_image(state.projects[int(made.id)])
    state.registry_lag = 2
    projects.delete(made.id, outputs_of(made))
    assert int(made.id) not in state.projects


def test_images_gitlab_does_not_delete_in_time_fail_the_delete_naming_them(
    gitlab: str, state: GitLabState, projects: ProjectProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gitlab_objects, "IMAGES_TIMEOUT_SECONDS", 0.1)
    group = state.add_group(GROUP, owner=OWNER)
    made = projects.create(project_props(gitlab, group))
    state.add_image(state.projects[int(made.id)], "cache")
    state.registry_lag = 10_000
    with pytest.raises(
        GitLabObjectError,
        match=rf"container repositories of project {GROUP}/guestbook within 0s: {GROUP}/guestbook/cache \(delete_scheduled\)",
    ):
        projects.delete(made.id, outputs_of(made))
    assert state.projects[int(made.id)]["marked_for_deletion_at"] is None


def test_a_delete_that_gitlab_finds_already_scheduled_goes_on(gitlab: str, state: GitLabState, projects: ProjectProvider) -> None:
    """A retried DELETE, or someone deleting it in the UI meanwhile: GitLab answers 400 "has been
    already marked for deletion", and the project is deleted at once all the same."""
    group = state.add_group(GROUP, owner=OWNER)
    made = projects.create(project_props(gitlab, group))
    client = GitLab.of(connection(gitlab))

    def someone_schedules_it(method: str, path: str, query: dict[str, str]) -> None:
        if (method, path, query) == ("DELETE", f"/projects/{made.id}", {}):
            state.meanwhile = None
            client.delete(path)

    state.meanwhile = someone_schedules_it
    projects.delete(made.id, outputs_of(made))
    assert int(made.id) not in state.projects


def test_a_permanent_delete_gitlab_refuses_fails_unless_it_left_the_project_scheduled(
    gitlab: str, state: GitLabState, projects: ProjectProvider
) -> None:
    """Someone restored it meanwhile: GitLab answers 400 "must be marked for deletion first"."""
    group = state.add_group(GROUP, owner=OWNER)
    made = projects.create(project_props(gitlab, group))
    client = GitLab.of(connection(gitlab))

    def someone_restores_it(method: str, path: str, query: dict[str, str]) -> None:
        if method == "DELETE" and query.get("permanently_remove") == "true":
            state.meanwhile = None
            client.post(f"{path}/restore")

    state.meanwhile = someone_restores_it
    with pytest.raises(GitLabApiError, match="HTTP 400.*must be marked for deletion first"):
        projects.delete(made.id, outputs_of(made))


def test_what_cannot_be_marked_as_ours_is_deleted_again(gitlab: str, state: GitLabState, groups: GroupProvider) -> None:
    """With Admin Mode on, a token without `admin_mode` cannot set the mark: what was just made
    goes, so that the next `up` makes it again instead of refusing it as not ours."""
    state.admin_mode, state.token_scopes = True, {"api", "create_runner"}
    with pytest.raises(GitLabApiError, match="custom_attributes/blueprint_owner failed \\(HTTP 403\\)"):
        groups.create(group_props(gitlab))
    state.token_scopes.add("admin_mode")
    made = groups.create(group_props(gitlab))
    assert state.attributes[f"groups/{made.id}"] == {"blueprint_owner": OWNER}


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


def test_a_deploy_token_recorded_without_its_value_is_replaced(gitlab: str, state: GitLabState) -> None:
    """Recorded before its value was kept: the next `up` makes it again (deleting the old one first)."""
    olds = {"project": "42", "name": "gitlab-deploy-token", "scopes": ["read_registry"], "deploy_token": None}
    diff = as_engine_loads(DeployTokenProvider()).diff("7", olds, olds)
    assert (diff.changes, diff.replaces, diff.delete_before_replace) == (True, ["deploy_token"], True)
    kept = as_engine_loads(DeployTokenProvider()).diff("7", {**olds, "deploy_token": "gldt-x"}, olds)
    assert (kept.changes, kept.replaces) == (False, [])


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


@dataclass
class Recorded:
    """One object of each kind as this state recorded it: its provider, id, outputs, and new inputs."""

    provider: GetOrCreateProvider
    id: str
    outputs: dict[str, Any]
    news: dict[str, Any]


def recorded(kind: str, gitlab: str, state: GitLabState) -> Recorded:
    """An object of `kind` made (through its provider) in a group and project of ours."""
    if kind == "group":
        provider: GetOrCreateProvider = as_engine_loads(GroupProvider())
        made = provider.create(group_props(gitlab))
        return Recorded(provider, str(made.id), outputs_of(made), group_props(gitlab, description="Changed."))
    group = state.add_group(GROUP, owner=OWNER, creator=ADMIN)
    if kind == "project":
        provider = as_engine_loads(ProjectProvider())
        made = provider.create(project_props(gitlab, group))
        return Recorded(provider, str(made.id), outputs_of(made), project_props(gitlab, group, name="changed"))
    project = state.add_project(group, "guestbook", owner=OWNER, creator=ADMIN)
    if kind == "variable":
        provider = as_engine_loads(VariableProvider())
        made = provider.create(variable_props(gitlab, project, "APP_HOST", "guestbook.local.example.net"))
        return Recorded(provider, str(made.id), outputs_of(made), variable_props(gitlab, project, "APP_HOST", "changed"))
    provider = as_engine_loads(DeployTokenProvider())
    made = provider.create(token_props(gitlab, project))
    return Recorded(provider, str(made.id), outputs_of(made), token_props(gitlab, project))


def a_new_gitlab_gives_the_ids_to_someone_else(state: GitLabState) -> None:
    """The state outlived its GitLab: in the new one the same ids are a user's groups and projects
    (no mark, other paths), with their own variables and deploy tokens."""
    state.attributes.clear()
    for held in (*state.groups.values(), *state.projects.values()):
        held |= {"path": f"their-{held['path']}", "name": f"Their {held['name']}"}


def gitlab_as_it_is(state: GitLabState) -> list[Any]:
    return copy.deepcopy([state.groups, state.projects, state.attributes, state.variables, state.deploy_tokens])


def writes_since(state: GitLabState, start: int) -> list[str]:
    return [call for call in state.calls[start:] if not call.startswith("GET ")]


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


def test_a_project_whose_group_gitlab_scheduled_and_renamed_is_still_ours(gitlab: str, state: GitLabState) -> None:
    """Scheduling renames the group (`<path>-deletion_scheduled-<id>`), and so every project's full path."""
    ours = recorded("project", gitlab, state)
    group_id = state.projects[int(ours.id)]["namespace_id"]
    GitLab.of(connection(gitlab)).delete(f"/groups/{group_id}")
    assert state.group_full_path(state.groups[group_id]) == f"{GROUP}-deletion_scheduled-{group_id}"
    refreshed = ours.provider.read(ours.id, ours.outputs)
    assert refreshed.id == ours.id
    ours.provider.update(ours.id, outputs_of(refreshed), ours.news)
    assert state.projects[int(ours.id)]["name"] == "changed"


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
    assert state.attributes[f"{kind}s/{made.id}"] == {"blueprint_owner": OWNER}


@pytest.mark.parametrize(
    "how",
    ["a user made it, added the admin as an Owner and left", "the admin made it, and it has another member"],
)
def test_an_unmarked_group_is_refused_unless_the_admin_made_it_alone(
    gitlab: str, state: GitLabState, groups: GroupProvider, how: str
) -> None:
    """GitLab lets ordinary users create top-level groups: only GitLab's own record of the maker counts."""
    if how.startswith("a user"):
        group = state.add_group(GROUP, creator=USER)
        state.add_member(group, ADMIN, added_by=USER)
        state.remove_member(group, USER)
    else:
        group = state.add_group(GROUP, creator=ADMIN)
        state.add_member(group, USER, 30, added_by=ADMIN)
    group["description"] = "Apps that blueprint builds and deploys."  # what anyone can write proves nothing
    with pytest.raises(GitLabObjectError, match="did not create"):
        groups.create(group_props(gitlab))
    assert f"groups/{group['id']}" not in state.attributes


def test_an_unmarked_project_someone_else_created_is_refused(gitlab: str, state: GitLabState, projects: ProjectProvider) -> None:
    group = state.add_group(GROUP, owner=OWNER, creator=ADMIN)
    theirs = state.add_project(group, "guestbook", creator=USER)
    with pytest.raises(GitLabObjectError, match="did not create"):
        projects.create(project_props(gitlab, group))
    assert f"projects/{theirs['id']}" not in state.attributes


def no_answer(cause: str, gitlab: str, state: GitLabState, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """What changes in the recorded outputs (or in GitLab) so that GitLab gives no answer."""
    monkeypatch.setattr(gitlab_api, "RETRY_PAUSES", (0.0, 0.0, 0.0, 0.0))
    if cause == "unreachable":
        return {"gitlab_url": f"http://127.0.0.1:{free_port()}"}
    if cause == "the CA file is missing":
        return {"gitlab_url": gitlab.replace("http://", "https://")}
    state.failures = [502] * 50  # a gateway's answer while GitLab restarts, after every retry
    return {}


@pytest.mark.parametrize("cause", ["unreachable", "the CA file is missing", "restarting"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_refresh_keeps_the_recorded_state_when_gitlab_gives_no_answer(
    gitlab: str, state: GitLabState, monkeypatch: pytest.MonkeyPatch, kind: str, cause: str
) -> None:
    """As the OpenBao KV provider does: refresh cannot tell, so it changes nothing and does not fail."""
    ours = recorded(kind, gitlab, state)
    props = {**ours.outputs, **no_answer(cause, gitlab, state, monkeypatch)}
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


@pytest.mark.parametrize("kind", ["variable", "deploy token"])
def test_one_recorded_before_its_owner_was_is_kept_by_a_refresh_and_left_by_a_delete(gitlab: str, state: GitLabState, kind: str) -> None:
    """Provider version 2 recorded no owner for variables and deploy tokens: nothing to check them
    against until the next `up` records it, so neither a refresh nor a delete acts on a guess."""
    ours = recorded(kind, gitlab, state)
    unrecorded = {key: value for key, value in ours.outputs.items() if key != "owner"}
    before, start = gitlab_as_it_is(state), len(state.calls)
    kept = ours.provider.read(ours.id, unrecorded)
    assert (kept.id, kept.outs) == (ours.id, unrecorded)
    ours.provider.delete(ours.id, unrecorded)
    assert writes_since(state, start) == []
    assert gitlab_as_it_is(state) == before


def test_a_gateways_empty_404_is_no_answer_not_gone(gitlab: str, state: GitLabState, monkeypatch: pytest.MonkeyPatch) -> None:
    """Envoy answers 404, empty, while GitLab's route is being replaced: it says nothing of what
    GitLab holds, and a refresh then must not drop the group (and everything in it) from state."""
    monkeypatch.setattr(gitlab_api, "RETRY_PAUSES", (0.0, 0.0, 0.0, 0.0))
    ours = recorded("group", gitlab, state)
    state.failures = [404]
    kept = ours.provider.read(ours.id, ours.outputs)
    assert kept.id == ours.id


def test_a_scheduled_group_whose_path_was_taken_meanwhile_is_not_restored_elsewhere(gitlab: str, state: GitLabState) -> None:
    """GitLab would restore it at its path with a random suffix, where nothing would find it again."""
    ours = recorded("group", gitlab, state)
    group = state.groups[int(ours.id)]
    group["marked_for_deletion_on"] = "2026-07-01"
    group["path"] = group["name"] = f"{GROUP}-deletion_scheduled-{group['id']}"
    state.add_group(GROUP)
    with pytest.raises(GitLabObjectError, match="now holds something else"):
        ours.provider.update(ours.id, {**ours.outputs, "marked_for_deletion_on": "2026-07-01"}, ours.news)
    assert group["marked_for_deletion_on"] == "2026-07-01"


def test_a_deploy_token_of_new_scopes_replaces_the_old_one_deleting_it_first() -> None:
    """Made first, the new one would find ours, of other scopes, in its way, and refuse."""
    olds = {"project": "42", "name": "gitlab-deploy-token", "scopes": ["read_registry"], "deploy_token": "gldt-x"}
    diff = as_engine_loads(DeployTokenProvider()).diff("7", olds, {**olds, "scopes": ["read_registry", "read_repository"]})
    assert (diff.replaces, diff.delete_before_replace) == (["scopes"], True)


def test_a_project_goes_into_the_group_another_stack_made(gitlab: str, state: GitLabState, projects: ProjectProvider) -> None:
    """phase2 makes the platform's group, phase3 its projects: the group must carry phase2's mark."""
    group = state.add_group(GROUP, owner="blueprint/phase2")
    made = projects.create(project_props(gitlab, group, group_owner="blueprint/phase2"))
    assert state.projects[int(made.id)]["namespace_id"] == group["id"]
    assert state.attributes[f"projects/{made.id}"] == {"blueprint_owner": OWNER}
    theirs = state.add_group("elsewhere", owner="someone/else")
    with pytest.raises(GitLabObjectError, match="not the one this state recorded"):
        projects.create(project_props(gitlab, theirs, path="redis", group_owner="blueprint/phase2", namespace="elsewhere"))


def test_a_new_project_has_its_default_branch_protected_before_its_first_push(
    gitlab: str, state: GitLabState, projects: ProjectProvider
) -> None:
    """The deploy credential is a protected variable: only jobs of a protected ref get it."""
    group = state.add_group(GROUP, owner=OWNER)
    made = projects.create(project_props(gitlab, group))
    [branch] = state.protected_branches[int(made.id)]
    assert (branch["name"], branch["push_access_levels"], branch["merge_access_levels"]) == (
        "main",
        [{"access_level": 40}],
        [{"access_level": 40}],
    )
    assert state.repository.commits == []


@pytest.mark.parametrize("protected_before", [True, False])
def test_an_adopted_or_updated_project_has_its_default_branch_protected(
    gitlab: str, state: GitLabState, projects: ProjectProvider, protected_before: bool
) -> None:
    """Adopted over a preserved GitLab, or brought to the inputs after someone unprotected it;
    a protection GitLab already holds (its own default, or ours) is kept as it is."""
    group = state.add_group(GROUP, owner=OWNER)
    existing = state.add_project(group, "guestbook", owner=OWNER)
    held = {"id": 1, "name": "main", "push_access_levels": [{"access_level": 30}], "merge_access_levels": [{"access_level": 30}]}
    state.protected_branches[existing["id"]] = [dict(held)] if protected_before else []
    made = projects.create(project_props(gitlab, group))
    assert [b["name"] for b in state.protected_branches[existing["id"]]] == ["main"]
    if protected_before:
        assert state.protected_branches[existing["id"]] == [held]
    state.protected_branches[existing["id"]] = []  # someone unprotects it
    projects.update(str(made.id), outputs_of(made), project_props(gitlab, group, name="Guestbook"))
    assert [b["name"] for b in state.protected_branches[existing["id"]]] == ["main"]


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
