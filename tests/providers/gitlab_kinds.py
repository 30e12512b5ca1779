"""What the tests of GitLab's get-or-create providers share: their inputs, and one object of each kind as a state recorded it."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from providers.gitlab_deploy_token import DeployTokenProvider
from providers.gitlab_get_or_create import PROVIDER_VERSION, GetOrCreateProvider
from providers.gitlab_group import GroupProvider
from providers.gitlab_project import ProjectProvider
from providers.gitlab_variable import VariableProvider
from tests.providers.engine import as_engine_loads, outputs_of
from tests.providers.gitlab_stub import ADMIN, TOKEN, GitLabState

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
