"""A project in the platform's group, got (if ours) or created; phase3 makes the apps' projects.

Got or created as providers/gitlab_get_or_create.py says: found at `<group>/<path>`, adopted when
it carries our `blueprint_owner` mark or GitLab records the admin token's user as its creator (a
create whose answer was lost), refused otherwise; made only in a group that carries the mark of the
stack that made the group (`group_owner`: phase2's). A project GitLab scheduled for deletion answers
at its old path with a redirect to its new name, which `find` follows to restore ours rather than
make a second one. Its default branch is protected before the first push (`_protect`). A delete
removes its container images first (GitLab refuses to rename a project that holds registry tags
without the registry's metadata database), then deletes it at once (docs/design/decisions.md, 32).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from providers import poll
from providers.gitlab_api import CONNECTION, Connection, GitLab, GitLabApiError, encode, wire
from providers.gitlab_get_or_create import (
    CLAIM,
    PROVIDER_VERSION,
    SCHEDULED,
    GetOrCreateProvider,
    GitLabObjectError,
    NotOurs,
    check_ours,
    claim,
    delete_scheduled,
    gone_message,
    held_at,
    mark_of,
    not_ours_message,
    restore,
    scheduled,
    scheduled_on,
    settings_of,
    token_user,
)

MAINTAINER_ACCESS = 40
"""GitLab's Maintainer access level (Gitlab::Access::MAINTAINER): who may push to and merge into a
project's default branch once it is protected."""
IMAGES_TIMEOUT_SECONDS = 660.0
"""How long a project's delete waits for GitLab to delete its container images. A DELETE only
schedules a repository; a cron job deletes scheduled ones every 5 minutes (`cleanup_container_
registry_worker`, `*/5 * * * *`; gitlab-org/gitlab!101918): two runs, and a little more."""
IMAGES_POLL_SECONDS = 3.0


class ProjectProvider(GetOrCreateProvider):
    """A project in a group, its default branch protected (see `_protect`)."""

    kind = "project"
    inputs = (
        *CONNECTION, "namespace", "namespace_id", "path", "name", "visibility", "default_branch", "owner", "group_owner",
        "provider_version",
    )  # fmt: skip
    # namespace_id stays: a group of a new id at the same path is a new group, where the project is
    # made anew. When the replacement finds the same project, the old one's delete leaves it to the new
    # (GetOrCreateProvider `claimed_in`).
    replace_on = ("namespace", "namespace_id", "path")
    claimed_in = "projects"

    def find(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any] | None:
        # GitLab redirects a renamed project's old path to it, and `find` follows: one of ours renamed
        # by its scheduled deletion is restored; any other renamed or moved project left the path free.
        found = held_at(api, "projects", _full_path(props))
        if found is None or str(found["path_with_namespace"]).lower() == _full_path(props).lower():
            return found
        ours = scheduled(found) and mark_of(api, f"/projects/{found['id']}", found) == props["owner"]
        return found if ours else None

    def current(self, api: GitLab, id_: str, props: dict[str, Any]) -> dict[str, Any] | None:
        found = held_at(api, "projects", id_)
        if found is not None:
            check_ours(api, "projects", found, str(props["owner"]), at=_full_path(props))
        return found

    def what(self, id_: str, props: dict[str, Any]) -> str:
        return f"project {id_} (recorded at {_full_path(props)})"

    def make(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any]:
        # The group is found by id: it must be ours, where the project is to be.
        namespace_id = int(float(props["namespace_id"]))
        group = held_at(api, "groups", namespace_id)
        if group is None:
            raise GitLabObjectError(gone_message(f"group {namespace_id} ({props['namespace']})", str(props["owner"])))
        try:
            check_ours(api, "groups", group, str(props.get("group_owner") or props["owner"]), at=str(props["namespace"]))
        except NotOurs as theirs:
            what = f"group {namespace_id} (recorded at {props['namespace']})"
            raise GitLabObjectError(not_ours_message(what, str(theirs), str(props["owner"]))) from None
        settings = {
            **settings_of(props, "name", "path", "visibility", "default_branch"),
            "namespace_id": namespace_id,
            "initialize_with_readme": False,  # the sync's first commit makes the branch
        }
        project: dict[str, Any] = api.post("/projects", settings)
        made = self.marked(api, props, project, f"/projects/{project['id']}")
        _protect(api, made, str(props["default_branch"]))
        return made

    def adopt(self, api: GitLab, props: dict[str, Any], found: dict[str, Any]) -> dict[str, Any]:
        claim(api, "project", found, f"/projects/{found['id']}", str(props["owner"]), lambda: _made_by_us(api, found))
        return self.change(api, props, found)

    def change(self, api: GitLab, props: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
        restore(api, f"/projects/{current['id']}", current)
        # Not the default branch: GitLab refuses one the repository does not have yet.
        project: dict[str, Any] = api.put(f"/projects/{current['id']}", settings_of(props, "name", "visibility"))
        _protect(api, project, str(props["default_branch"]))
        return project

    def remove(self, api: GitLab, id_: str, props: dict[str, Any], current: dict[str, Any] | None = None) -> None:
        path = f"/projects/{id_}"
        delete_scheduled(
            api,
            path,
            "path_with_namespace",
            current,
            immediately=lambda _: True,
            before=lambda found: _delete_images(api, path, found["path_with_namespace"]),
        )

    def outs(self, obj: dict[str, Any]) -> dict[str, Any]:
        return {"full_path": obj.get("path_with_namespace"), "web_url": obj.get("web_url"), SCHEDULED: scheduled_on(obj)}


def _full_path(props: dict[str, Any]) -> str:
    return f"{props['namespace']}/{props['path']}"


def _made_by_us(api: GitLab, project: dict[str, Any]) -> bool:
    """Whether GitLab records the admin token's user as the maker of `project`: its `creator_id`
    (Projects::CreateService `@project.creator = current_user`; no API call changes it).
    """
    return project.get("creator_id") is not None and int(project["creator_id"]) == token_user(api)


def _protect(api: GitLab, project: dict[str, Any], branch: str) -> None:
    """Protect `branch`, the default branch of `project`, unless it is (Maintainers push and merge).

    The deploy credential is a protected variable, which GitLab hands only to jobs of protected
    refs (Gitlab::Ci::Variables::Builder `protected_ref?`: `project.protected_for?(ref)`). A fresh
    GitLab protects a project's default branch by itself (`default_branch_protection_defaults`,
    `protected_fully` in config/initializers/1_settings.rb), but only when the first push creates it,
    in the background (Projects::ProtectDefaultBranchService from Git::BranchHooksService), and only
    while an administrator leaves that setting on. So it is protected here, before the first push:
    GitLab protects a name the repository does not hold yet (`POST /projects/:id/protected_branches`
    checks no branch; lib/api/protected_branches.rb), and answers 409 when it is protected already.
    """
    path = f"/projects/{project['id']}/protected_branches"
    if api.find(f"{path}/{encode(branch)}") is not None:
        return
    try:
        api.post(path, {"name": branch, "push_access_level": MAINTAINER_ACCESS, "merge_access_level": MAINTAINER_ACCESS})
    except GitLabApiError as error:
        if error.status != 409:  # "Protected branch '<name>' already exists": protected meanwhile
            raise


def _delete_images(api: GitLab, project: str, name: str) -> None:
    """Delete the container repositories of the project at `project` (API path), `name`, and wait,
    bounded, until GitLab's background jobs have removed them all (doc/api/container_registry.md).
    """
    repositories = f"{project}/registry/repositories"
    listed = list(api.pages(repositories))
    for repository in listed:
        if repository.get("status") not in ("delete_scheduled", "delete_ongoing"):
            api.delete(f"{repositories}/{repository['id']}")
    if not listed:
        return

    def all_gone() -> None:
        if left := list(api.pages(repositories)):
            raise poll.NotYet(", ".join(f"{item.get('path')} ({item.get('status') or 'not scheduled'})" for item in left))

    try:
        poll.retry(all_gone, poll.within(IMAGES_TIMEOUT_SECONDS, every=IMAGES_POLL_SECONDS))
    except poll.NotYet as left:
        raise GitLabObjectError(
            f"GitLab has not deleted the container repositories of project {name} within {IMAGES_TIMEOUT_SECONDS:.0f}s: "
            f"{left}. GitLab refuses to delete a project that holds images, and deletes them in the background "
            f"(a job every 5 minutes): look at the project's Deploy > Container registry in GitLab, then run the destroy again"
        ) from None


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
    group_owner: str | None = None
    """The mark of the group it goes into, when another stack made that group (phase2 makes the
    platform's group, phase3 its projects); `owner` by default."""
    visibility: str = "internal"
    default_branch: str = "main"
    """Protected when the project is made or brought to the inputs: the deploy credential reaches
    only its jobs (`_protect`)."""


class Project(pulumi.dynamic.Resource, module="gitlab", name="Project"):
    """A project in a group, got (if ours) or created; its id is GitLab's."""

    full_path: pulumi.Output[str]
    web_url: pulumi.Output[str]
    marked_for_deletion_on: pulumi.Output[str | None]
    """When GitLab scheduled it for deletion, as the last refresh found it: the next `up` restores it."""

    def __init__(self, name: str, args: ProjectArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(ProjectProvider(), name, wire(args, PROVIDER_VERSION, "full_path", "web_url", SCHEDULED, CLAIM), opts)
