"""The platform's top-level group in GitLab, got (if ours) or created; phase2 makes it.

Got or created as providers/gitlab_get_or_create.py says: found at its path, adopted when it carries
our `blueprint_owner` mark or when GitLab's record shows the admin token's user made it alone (a
create whose answer was lost: `_made_by_us`), refused otherwise. One GitLab scheduled for deletion
is restored before it is brought to the inputs. A top-level group cannot be deleted at once through
the API (`permanently_remove` "is only available for subgroups", lib/api/groups.rb): a delete leaves
it scheduled, and GitLab removes it when its retention ends (docs/design/decisions.md, entry 32).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from providers.gitlab_api import CONNECTION, Connection, GitLab, wire
from providers.gitlab_get_or_create import (
    CLAIM,
    PROVIDER_VERSION,
    SCHEDULED,
    GetOrCreateProvider,
    check_ours,
    claim,
    delete_scheduled,
    held_at,
    restore,
    scheduled_on,
    settings_of,
    token_user,
)

OWNER_ACCESS = 50
"""GitLab's Owner access level (Gitlab::Access::OWNER)."""


class GroupProvider(GetOrCreateProvider):
    kind = "group"
    inputs = (*CONNECTION, "path", "name", "description", "visibility", "owner", "provider_version")
    replace_on = ("path",)
    claimed_in = "groups"  # a new path that finds the same group (its case changed, or GitLab renamed it) keeps it

    def find(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any] | None:
        return held_at(api, "groups", props["path"])

    def current(self, api: GitLab, id_: str, props: dict[str, Any]) -> dict[str, Any] | None:
        found = held_at(api, "groups", id_)
        if found is not None:
            check_ours(api, "groups", found, str(props["owner"]), at=str(props["path"]))
        return found

    def what(self, id_: str, props: dict[str, Any]) -> str:
        return f"group {id_} (recorded at {props['path']})"

    def make(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any]:
        group: dict[str, Any] = api.post("/groups", settings_of(props, "name", "path", "description", "visibility"))
        return self.marked(api, props, group, f"/groups/{group['id']}")

    def adopt(self, api: GitLab, props: dict[str, Any], found: dict[str, Any]) -> dict[str, Any]:
        claim(api, "group", found, f"/groups/{found['id']}", str(props["owner"]), lambda: _made_by_us(api, found))
        return self.change(api, props, found)

    def change(self, api: GitLab, props: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
        restore(api, f"/groups/{current['id']}", current)
        group: dict[str, Any] = api.put(f"/groups/{current['id']}", settings_of(props, "name", "description", "visibility"))
        return group

    def remove(self, api: GitLab, id_: str, props: dict[str, Any], current: dict[str, Any] | None = None) -> None:
        immediately = lambda group: group.get("parent_id") is not None  # noqa: E731
        delete_scheduled(api, f"/groups/{id_}", "full_path", current, immediately=immediately)

    def outs(self, obj: dict[str, Any]) -> dict[str, Any]:
        return {"full_path": obj.get("full_path"), "web_url": obj.get("web_url"), SCHEDULED: scheduled_on(obj)}


def _made_by_us(api: GitLab, group: dict[str, Any]) -> bool:
    """Whether GitLab's own record shows the admin token's user made `group`, alone: a top-level
    group whose one member, direct, inherited or invited (`GET /groups/:id/members/all`), is that
    user, an Owner nobody added. Groups::CreateService makes its caller an Owner with
    `add_owner(current_user)`, which names no one as having added them (Members::Creator
    `created_by: member.created_by || current_user`), whereas a member someone added names them
    (API::Entities::Member `created_by`): a user who made the group, added the admin as an Owner and
    left has left the admin's membership naming them.
    """
    if group.get("parent_id") is not None:
        return False
    members = list(api.pages(f"/groups/{group['id']}/members/all"))
    if len(members) != 1:
        return False
    member = members[0]
    return member.get("id") == token_user(api) and member.get("access_level") == OWNER_ACCESS and not member.get("created_by")


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
    marked_for_deletion_on: pulumi.Output[str | None]
    """When GitLab scheduled it for deletion, as the last refresh found it: the next `up` restores it."""

    def __init__(self, name: str, args: GroupArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(GroupProvider(), name, wire(args, PROVIDER_VERSION, "full_path", "web_url", SCHEDULED, CLAIM), opts)
