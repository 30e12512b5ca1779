"""GitLab objects that live in GitLab's database, got or created: the group, its projects, their
CI/CD variables and deploy tokens (and, in `gitlab_runner`, the instance runner).

`preserveData` keeps GitLab's database across a destroy, but Pulumi's state is not always kept
with it (`pulumi destroy -s phase3`, a lost state, a `dev` stack destroyed and made again). So
creating one of these objects first looks for it where it must be, and:

- **adopts** what it finds, if it is ours: it brings it to the inputs (a group or project
  scheduled for deletion is restored first) and records its id, never failing with "has already
  been taken" and never making a second one;
- **refuses** what is not ours, with an error that names the object and the fix;
- creates it only when nothing is there.

**Ours.** A group or project is ours when its custom attribute `blueprint_owner` holds the owner
value, `<pulumi project>/<stack>` (as the host folders' `.blueprint-owner` files do), set when we
create it. Custom attributes are GitLab's own admin-only key/value store on users, groups and
projects (doc/api/custom_attributes.md; the policy `admin` rule enables read/update, and the admin
token's `api` scope covers the endpoints); no user without admin rights can forge or remove the
mark, and it lives in the database with the object. Variables and deploy tokens live inside an
object of ours, so they are ours by their key: a variable by its key, the deploy token by its name
and scopes (a token the user made with other scopes is left alone, and never revoked).

**Deleting** (only with `preserveData=false`; otherwise every one of these is `retain_on_delete`).
GitLab 18+ only schedules a group or project for deletion (`DELETE /groups/:id`,
`DELETE /projects/:id`) and renames it `<path>-deletion_scheduled-<id>`, which frees its path
(Projects::MarkForDeletionService; Groups::MarkForDeletionService renames only when the group holds
no container images). A project is then deleted at once by a second call with
`permanently_remove=true` and its new `full_path` (doc/api/projects.md "Delete a project"; allowed
unless the instance turned `allow_immediate_namespaces_deletion` off). A top-level group cannot be
deleted at once through the API (`permanently_remove` "is only available for subgroups",
lib/api/groups.rb): it stays scheduled, under its new name when GitLab renamed it. When it keeps
its path (its projects' images were still being deleted), the next create finds it there,
scheduled and ours, and restores it (`POST /groups/:id/restore`). Pulumi deletes the projects
before the group, since they depend on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, ResourceProvider, UpdateResult

from providers.gitlab_api import CONNECTION, Connection, GitLab, GitLabApiError, encode, wire

PROVIDER_VERSION = "1"
"""Bump when the providers' behaviour changes (they are pickled by reference)."""

OWNER_ATTRIBUTE = "blueprint_owner"
"""The custom attribute that marks a group or project as ours (no dot: Grape reads one as a format)."""


class GitLabObjectError(Exception):
    """An object GitLab holds is in the way, or is gone; the message names it and the fix."""


class GetOrCreateProvider(ResourceProvider):
    """What the object kinds share: get or create on `create`, bring it to the inputs on `update`,
    report it gone on `read`, delete it (already gone is done) on `delete`.

    A kind says how to find its object where it must be (`find`), by id (`get`), and how to make,
    adopt, change and remove it. Outputs are the inputs, the previous outputs a call did not
    refresh, and what `outs` reads from GitLab's answer.
    """

    kind: ClassVar[str]
    inputs: ClassVar[tuple[str, ...]]
    """What `diff` compares (the wire keys)."""
    replace_on: ClassVar[tuple[str, ...]] = ()
    """Inputs that name another object: a change makes that one (and deletes the old one after)."""

    def find(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any] | None:
        raise NotImplementedError

    def get(self, api: GitLab, id_: str, props: dict[str, Any]) -> dict[str, Any] | None:
        raise NotImplementedError

    def make(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def adopt(self, api: GitLab, props: dict[str, Any], found: dict[str, Any]) -> dict[str, Any]:
        return self.change(api, props, found)

    def change(self, api: GitLab, props: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
        return current

    def remove(self, api: GitLab, id_: str, props: dict[str, Any]) -> None:
        raise NotImplementedError

    def ident(self, obj: dict[str, Any]) -> str:
        return str(obj["id"])

    def outs(self, obj: dict[str, Any]) -> dict[str, Any]:
        return {}

    def _outputs(self, base: dict[str, Any], props: dict[str, Any], obj: dict[str, Any]) -> dict[str, Any]:
        return {**base, **{key: props.get(key) for key in self.inputs}, **self.outs(obj)}

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [key for key in self.inputs if olds.get(key) != news.get(key)]
        return DiffResult(changes=bool(changed), replaces=[key for key in changed if key in self.replace_on], delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        api = GitLab.of(props)
        found = self.find(api, props)
        obj = self.make(api, props) if found is None else self.adopt(api, props, found)
        return CreateResult(id_=self.ident(obj), outs=self._outputs({}, props, obj))

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        api = GitLab.of(news)
        current = self.get(api, id_, news)
        if current is None:
            raise GitLabObjectError(
                f"the {self.kind} {id_} is gone from GitLab: run `pulumi refresh` to forget it, and `up` makes it again"
            )
        return UpdateResult(outs=self._outputs(olds, news, self.change(api, news, current)))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        obj = self.get(GitLab.of(props), id_, props)
        if obj is None:
            return ReadResult(None, {})  # refresh drops it; the next `up` gets or creates it
        return ReadResult(id_, {**props, **self.outs(obj)})

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        self.remove(GitLab.of(props), id_, props)


def _scheduled(obj: dict[str, Any]) -> bool:
    """Whether GitLab has scheduled the group or project for deletion (the API shows the date)."""
    return bool(obj.get("marked_for_deletion_on") or obj.get("marked_for_deletion_at"))


def _claim(api: GitLab, kind: str, where: str, path: str, owner: str) -> None:
    """Refuse the group or project at `path` (API path) unless its owner mark is `owner`."""
    mark = api.find(f"{path}/custom_attributes/{OWNER_ATTRIBUTE}")
    if mark is not None and mark.get("value") == owner:
        return
    whose = f"its {OWNER_ATTRIBUTE} is {mark.get('value')!r}" if mark is not None else f"it has no {OWNER_ATTRIBUTE}"
    raise GitLabObjectError(
        f"GitLab already has a {kind} {where} that this stack ({owner}) did not create ({whose}). "
        f"Rename, move or delete that {kind} in GitLab, then run `up` again. If it is this stack's own "
        f"from before blueprint marked what it makes, mark it as an administrator: "
        f"PUT /api/v4{path}/custom_attributes/{OWNER_ATTRIBUTE} with value={owner}"
    )


def _mark(api: GitLab, path: str, owner: str) -> None:
    api.put(f"{path}/custom_attributes/{OWNER_ATTRIBUTE}", {"value": owner})


class GroupProvider(GetOrCreateProvider):
    kind = "group"
    inputs = (*CONNECTION, "path", "name", "description", "visibility", "owner", "provider_version")
    replace_on = ("path",)

    def find(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any] | None:
        found: dict[str, Any] | None = api.find(f"/groups/{encode(props['path'])}", with_projects="false")
        return found

    def get(self, api: GitLab, id_: str, props: dict[str, Any]) -> dict[str, Any] | None:
        found: dict[str, Any] | None = api.find(f"/groups/{id_}", with_projects="false")
        return found

    def make(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any]:
        group: dict[str, Any] = api.post("/groups", _settings(props, "name", "path", "description", "visibility"))
        _mark(api, f"/groups/{group['id']}", str(props["owner"]))
        return group

    def adopt(self, api: GitLab, props: dict[str, Any], found: dict[str, Any]) -> dict[str, Any]:
        _claim(api, "group", found["full_path"], f"/groups/{found['id']}", str(props["owner"]))
        if _scheduled(found):
            api.post(f"/groups/{found['id']}/restore")
        return self.change(api, props, found)

    def change(self, api: GitLab, props: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
        _mark(api, f"/groups/{current['id']}", str(props["owner"]))
        group: dict[str, Any] = api.put(f"/groups/{current['id']}", _settings(props, "name", "description", "visibility"))
        return group

    def remove(self, api: GitLab, id_: str, props: dict[str, Any]) -> None:
        _delete_scheduled(api, f"/groups/{id_}", "full_path", immediately=lambda group: group.get("parent_id") is not None)

    def outs(self, obj: dict[str, Any]) -> dict[str, Any]:
        return {"full_path": obj.get("full_path"), "web_url": obj.get("web_url")}


class ProjectProvider(GetOrCreateProvider):
    kind = "project"
    inputs = (*CONNECTION, "namespace", "namespace_id", "path", "name", "visibility", "default_branch", "owner", "provider_version")
    replace_on = ("namespace", "namespace_id", "path")

    def find(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any] | None:
        # A path GitLab only redirects from (a project renamed when it was scheduled for deletion)
        # is free: `find` does not follow the redirect (lib/api/helpers.rb `find_project!`).
        found: dict[str, Any] | None = api.find(f"/projects/{encode(_full_path(props))}")
        return found

    def get(self, api: GitLab, id_: str, props: dict[str, Any]) -> dict[str, Any] | None:
        found: dict[str, Any] | None = api.find(f"/projects/{id_}")
        return found

    def make(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any]:
        settings = {
            **_settings(props, "name", "path", "visibility", "default_branch"),
            "namespace_id": int(float(props["namespace_id"])),
            "initialize_with_readme": False,  # the sync's first commit makes the branch
        }
        project: dict[str, Any] = api.post("/projects", settings)
        _mark(api, f"/projects/{project['id']}", str(props["owner"]))
        return project

    def adopt(self, api: GitLab, props: dict[str, Any], found: dict[str, Any]) -> dict[str, Any]:
        _claim(api, "project", found["path_with_namespace"], f"/projects/{found['id']}", str(props["owner"]))
        if _scheduled(found):
            api.post(f"/projects/{found['id']}/restore")
        return self.change(api, props, found)

    def change(self, api: GitLab, props: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
        _mark(api, f"/projects/{current['id']}", str(props["owner"]))
        # Not the default branch: GitLab refuses one the repository does not have yet.
        project: dict[str, Any] = api.put(f"/projects/{current['id']}", _settings(props, "name", "visibility"))
        return project

    def remove(self, api: GitLab, id_: str, props: dict[str, Any]) -> None:
        _delete_scheduled(api, f"/projects/{id_}", "path_with_namespace", immediately=lambda _: True)

    def outs(self, obj: dict[str, Any]) -> dict[str, Any]:
        return {"full_path": obj.get("path_with_namespace"), "web_url": obj.get("web_url")}


def _full_path(props: dict[str, Any]) -> str:
    return f"{props['namespace']}/{props['path']}"


def _settings(props: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {key: props[key] for key in keys if props.get(key) is not None}


def _delete_scheduled(api: GitLab, path: str, full_path_key: str, *, immediately: Callable[[dict[str, Any]], bool]) -> None:
    """Schedule a group or project for deletion, then, where GitLab allows it, delete it at once."""
    found = api.find(path)
    if found is None:
        return
    if not _scheduled(found):
        api.delete(path)
        found = api.find(path)  # scheduling renamed it: the permanent delete names the new path
    if found is None or not immediately(found):
        return
    try:
        api.delete(path, permanently_remove="true", full_path=found[full_path_key])
    except GitLabApiError as error:
        if error.status != 400:
            raise
        # Immediate deletion is off on this instance: it stays scheduled, under its new path.


SETTINGS = ("value", "variable_type", "protected", "masked", "raw")
"""A variable's settings, as GitLab's variables API names them."""


class VariableProvider(GetOrCreateProvider):
    """A CI/CD variable of a group or a project (`scope`: "groups" or "projects"), upserted by key
    (doc/api/group_level_variables.md, doc/api/project_level_variables.md).
    """

    kind = "variable"
    inputs = (*CONNECTION, "scope", "parent", "key", "value", "variable_type", "protected", "masked", "raw", "provider_version")
    replace_on = ("scope", "parent", "key")

    @staticmethod
    def _path(props: dict[str, Any]) -> str:
        return f"/{props['scope']}/{encode(props['parent'])}/variables"

    def find(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any] | None:
        found: dict[str, Any] | None = api.find(f"{self._path(props)}/{encode(props['key'])}")
        return found

    def get(self, api: GitLab, id_: str, props: dict[str, Any]) -> dict[str, Any] | None:
        return self.find(api, props)

    def make(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any]:
        made: dict[str, Any] = api.post(self._path(props), {"key": props["key"], **self._settings(props)})
        return made

    def change(self, api: GitLab, props: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
        changed: dict[str, Any] = api.put(f"{self._path(props)}/{encode(props['key'])}", self._settings(props))
        return changed

    @staticmethod
    def _settings(props: dict[str, Any]) -> dict[str, Any]:
        return _settings(props, *SETTINGS)

    def remove(self, api: GitLab, id_: str, props: dict[str, Any]) -> None:
        api.delete(f"{self._path(props)}/{encode(props['key'])}")

    def ident(self, obj: dict[str, Any]) -> str:
        return str(obj["key"])

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        # What GitLab holds, so that a refresh shows an edit made in GitLab and `up` undoes it.
        # Only here: were GitLab's answer to differ from an input, every `up` would update again.
        found = self.find(GitLab.of(props), props)
        if found is None:
            return ReadResult(None, {})
        return ReadResult(id_, {**props, **{key: found[key] for key in SETTINGS if key in found}})


class DeployTokenProvider(GetOrCreateProvider):
    """A project deploy token, by name and scopes (doc/api/deploy_tokens.md). Its value is never
    read: GitLab hands the one named `gitlab-deploy-token` to every job as CI_DEPLOY_USER and
    CI_DEPLOY_PASSWORD. Deploy tokens cannot be changed, so other scopes are another token.
    """

    kind = "deploy token"
    inputs = (*CONNECTION, "project", "name", "scopes", "provider_version")
    replace_on = ("project", "name", "scopes")

    def find(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any] | None:
        wanted = set(props["scopes"])
        for token in api.pages(f"/projects/{encode(props['project'])}/deploy_tokens", active="true"):
            if token["name"] == props["name"] and wanted <= set(token["scopes"]):
                found: dict[str, Any] = token
                return found
        return None

    def get(self, api: GitLab, id_: str, props: dict[str, Any]) -> dict[str, Any] | None:
        token: dict[str, Any] | None = api.find(f"/projects/{encode(props['project'])}/deploy_tokens/{id_}")
        return None if token is None or token.get("revoked") or token.get("expired") else token

    def make(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any]:
        made: dict[str, Any] = api.post(
            f"/projects/{encode(props['project'])}/deploy_tokens", {"name": props["name"], "scopes": list(props["scopes"])}
        )
        return made  # its `token` is not kept: GitLab hands it to the jobs itself

    def remove(self, api: GitLab, id_: str, props: dict[str, Any]) -> None:
        api.delete(f"/projects/{encode(props['project'])}/deploy_tokens/{id_}")

    def outs(self, obj: dict[str, Any]) -> dict[str, Any]:
        return {"username": obj.get("username")}


@dataclass(frozen=True, kw_only=True)
class GroupArgs:
    connection: Connection
    path: str
    name: str
    owner: str
    """`<pulumi project>/<stack>`: the mark that makes the group ours."""
    visibility: str = "internal"
    description: str = ""


class Group(pulumi.dynamic.Resource, module="gitlab", name="Group"):
    """A top-level group, got (if ours) or created; its id is GitLab's."""

    full_path: pulumi.Output[str]
    web_url: pulumi.Output[str]

    def __init__(self, name: str, args: GroupArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(GroupProvider(), name, wire(args, PROVIDER_VERSION, "full_path", "web_url"), opts)


@dataclass(frozen=True, kw_only=True)
class ProjectArgs:
    connection: Connection
    namespace: str
    """The group's full path: the project is found at `<namespace>/<path>`."""
    namespace_id: pulumi.Input[str]
    """The group's id."""
    path: str
    name: str
    owner: str
    visibility: str = "internal"
    default_branch: str = "main"


class Project(pulumi.dynamic.Resource, module="gitlab", name="Project"):
    """A project in a group, got (if ours) or created; its id is GitLab's."""

    full_path: pulumi.Output[str]
    web_url: pulumi.Output[str]

    def __init__(self, name: str, args: ProjectArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(ProjectProvider(), name, wire(args, PROVIDER_VERSION, "full_path", "web_url"), opts)


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


def _variable(args: VariableArgs, scope: str, opts: pulumi.ResourceOptions | None) -> tuple[dict[str, Any], pulumi.ResourceOptions]:
    props = {**wire(args, PROVIDER_VERSION), "scope": scope}
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


@dataclass(frozen=True, kw_only=True)
class DeployTokenArgs:
    connection: Connection
    project: pulumi.Input[str]
    """The project's id."""
    name: str
    scopes: tuple[str, ...]


class DeployToken(pulumi.dynamic.Resource, module="gitlab", name="DeployToken"):
    """A project deploy token: an active one of this name with these scopes, or a new one."""

    username: pulumi.Output[str]

    def __init__(self, name: str, args: DeployTokenArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(DeployTokenProvider(), name, wire(args, PROVIDER_VERSION, "username"), opts)
