"""A CI/CD variable of a group or a project, upserted by key in the `*` environment scope.

A variable lives inside a group or project of ours, so it is ours by its key in the `*` scope
(GitLab's default, and the one jobs of every environment get): the same key in another scope is the
user's, left alone. GitLab answers GET, PUT and DELETE of a key held in several scopes with 409
"There are multiple variables with provided parameters" (lib/api/helpers/variables_helpers.rb
`find_variable`), so every call names the scope (doc/api/group_level_variables.md,
doc/api/project_level_variables.md). Before it is made, and at its recorded id, the group or project
that holds it must carry the mark of the stack that made that one (`parent_owner`: phase2's group
holds phase3's variables), as providers/gitlab_get_or_create.py checks.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import pulumi

from providers.gitlab_api import CONNECTION, Connection, GitLab, encode, wire
from providers.gitlab_get_or_create import PROVIDER_VERSION, GetOrCreateProvider, in_one_of_ours, program_owner, settings_of

ALL_ENVIRONMENTS = "*"
"""The environment scope of our variables: GitLab's default, and the one jobs of every environment get."""
SETTINGS = ("value", "variable_type", "protected", "masked", "raw")
"""A variable's settings, as GitLab's variables API names them."""
IN_ALL_ENVIRONMENTS = {"filter[environment_scope]": ALL_ENVIRONMENTS}
"""The query that picks our variable of a key among its environment scopes."""


class VariableProvider(GetOrCreateProvider):
    """A variable of a group or a project (`scope`: "groups" or "projects"), by key."""

    kind = "variable"
    inputs = (
        *CONNECTION, "scope", "parent", "key", "value", "variable_type", "protected", "masked", "raw", "owner", "parent_owner",
        "provider_version",
    )  # fmt: skip
    replace_on = ("scope", "parent", "key")

    @staticmethod
    def _path(props: dict[str, Any]) -> str:
        return f"/{props['scope']}/{encode(props['parent'])}/variables"

    def find(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any] | None:
        found: dict[str, Any] | None = api.find(f"{self._path(props)}/{encode(props['key'])}", **IN_ALL_ENVIRONMENTS)
        return found

    def current(self, api: GitLab, id_: str, props: dict[str, Any]) -> dict[str, Any] | None:
        if not in_one_of_ours(api, str(props["scope"]), props["parent"], str(props.get("parent_owner") or props["owner"])):
            return None  # its group or project is gone, and it with it
        return self.find(api, props)

    def what(self, id_: str, props: dict[str, Any]) -> str:
        return f"variable {props['key']} of {str(props['scope'])[:-1]} {props['parent']}"

    def before_create(self, api: GitLab, props: dict[str, Any]) -> None:
        self.in_ours(api, str(props["scope"]), props["parent"], str(props["key"]), props)

    def make(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any]:
        settings = {"key": props["key"], **settings_of(props, *SETTINGS), "environment_scope": ALL_ENVIRONMENTS}
        made: dict[str, Any] = api.post(self._path(props), settings)
        return made

    def change(self, api: GitLab, props: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
        path = f"{self._path(props)}/{encode(props['key'])}"
        changed: dict[str, Any] = api.put(path, settings_of(props, *SETTINGS), **IN_ALL_ENVIRONMENTS)
        return changed

    def remove(self, api: GitLab, id_: str, props: dict[str, Any], current: dict[str, Any] | None = None) -> None:
        api.delete(f"{self._path(props)}/{encode(props['key'])}", **IN_ALL_ENVIRONMENTS)

    def ident(self, obj: dict[str, Any]) -> str:
        return str(obj["key"])

    def observed(self, obj: dict[str, Any]) -> dict[str, Any]:
        # What GitLab holds, so that a refresh shows an edit made in GitLab and `up` undoes it.
        # Only here: were GitLab's answer to differ from an input, every `up` would update again.
        return {key: obj[key] for key in SETTINGS if key in obj}


@dataclass(frozen=True, kw_only=True)
class VariableArgs:
    connection: Connection
    parent: pulumi.Input[str]
    """The group's or project's id."""
    key: str
    value: pulumi.Input[str]
    secret: bool = False
    """The value is a secret: it stays one in the outputs too."""
    variable_type: str = "env_var"
    """`env_var`, or `file` (jobs get the path of a file holding the value)."""
    protected: bool = False
    masked: bool = False
    raw: bool = False
    owner: str | None = None
    """`<pulumi project>/<stack>` of the stack it belongs to (messages name its command); the
    running program's by default."""
    parent_owner: str | None = None
    """The mark of the group or project that holds it, when another stack made that one (phase2
    makes the platform's group, phase3 its variables); `owner` by default."""


def _variable(args: VariableArgs, scope: str, opts: pulumi.ResourceOptions | None) -> tuple[dict[str, Any], pulumi.ResourceOptions]:
    props = {**wire(dataclasses.replace(args, owner=args.owner or program_owner()), PROVIDER_VERSION), "scope": scope}
    del props["secret"]
    if args.secret:
        props["value"] = pulumi.Output.secret(args.value)
    return props, pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=["value"] if args.secret else []))


class GroupVariable(pulumi.dynamic.Resource, module="gitlab", name="GroupVariable"):
    """A group's CI/CD variable, upserted by key."""

    def __init__(self, name: str, args: VariableArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(VariableProvider(), name, *_variable(args, "groups", opts))


class ProjectVariable(pulumi.dynamic.Resource, module="gitlab", name="ProjectVariable"):
    """A project's CI/CD variable, upserted by key."""

    def __init__(self, name: str, args: VariableArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(VariableProvider(), name, *_variable(args, "projects", opts))
