"""A group runner of the platform's group, got or created, with a fresh authentication token.

Created through `POST /user/runners` (`runner_type=group_type`, `group_id`), which returns its
`glrt-` token once (the secret output `authentication_token`). `preserveData` keeps it in GitLab
when Pulumi's state goes, so `create` first looks for ours among the group's runners.

**Ours** is a group runner of that group whose description is exactly ours (it carries the owner,
`<pulumi project>/<stack>`: runners have no custom attributes). Found, it is adopted: its settings
are brought to the inputs and GitLab gives it a new token (`reset_authentication_token`). Any
further runner of ours in the group (what lost states left) is deleted; one of our description in
another group, or an instance runner, is not ours. **At the recorded id** the runner must be ours
too (a state can outlive its GitLab): else `read` reports it gone, `update` refuses (naming
`pulumi refresh -s <stack>`), `delete` leaves it alone; with no answer from GitLab, `read` keeps the
recorded state. Why, and sources: docs/design/decisions.md, entry 27.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

import pulumi

from providers.gitlab_api import CONNECTION, Connection, GitLab, encode, wire
from providers.gitlab_get_or_create import GetOrCreateProvider, NotOurs, program_owner

PROVIDER_VERSION = "1"
"""Bump when the provider's behaviour changes (it is pickled by reference)."""

AccessLevel = Literal["not_protected", "ref_protected"]
"""Ci::Runner's `access_level` enum: any ref's jobs, or protected refs' alone."""


class RunnerProvider(GetOrCreateProvider):
    kind = "runner"
    inputs = (*CONNECTION, "group_id", "description", "tag_list", "run_untagged", "access_level", "owner", "provider_version")
    replace_on = ("group_id", "description")
    """The description is the mark, and the group where it serves: another one is another runner."""

    @staticmethod
    def _ours(api: GitLab, props: dict[str, Any]) -> list[dict[str, Any]]:
        group = _group_id(props)
        listed = api.pages(f"/groups/{group}/runners", type="group_type")
        ours = (runner for runner in listed if runner["description"] == props["description"] and runner["runner_type"] == "group_type")
        # The group's runners are its own and its ancestors' (Ci::Runner.group_or_instance_wide):
        # only one that this group holds is ours.
        return sorted((runner for runner in ours if _in_group(api, runner, group)), key=lambda runner: int(runner["id"]))

    def before_create(self, api: GitLab, props: dict[str, Any]) -> None:
        # Never a runner for a group that is not ours (a state that outlived its GitLab names an id
        # that may be someone else's group there): the group must carry this stack's mark.
        self.in_ours(api, "groups", _group_id(props), "new", props)

    def find(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any] | None:
        return next(iter(self._ours(api, props)), None)

    def current(self, api: GitLab, id_: str, props: dict[str, Any]) -> dict[str, Any] | None:
        found: dict[str, Any] | None = api.find(f"/runners/{encode(id_)}")
        if found is None:
            return None
        if (found.get("description"), found.get("runner_type")) != (props["description"], "group_type"):
            raise NotOurs(f"it is the {found.get('runner_type')} runner {found.get('description')!r}")
        if not _held_by(found, _group_id(props)):
            held = ", ".join(str(item.get("id")) for item in found.get("groups") or []) or "none"
            raise NotOurs(f"it is a runner of group(s) {held}, not of group {_group_id(props)}")
        return found

    def what(self, id_: str, props: dict[str, Any]) -> str:
        return f"runner {id_} ({props['description']!r})"

    def make(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any]:
        self._delete_stale(api, props, keep=None)
        settings = {"runner_type": "group_type", "group_id": _group_id(props), **self._settings(props)}
        made = api.post("/user/runners", settings)
        return {"id": made["id"], "authentication_token": made["token"]}

    def _delete_stale(self, api: GitLab, props: dict[str, Any], keep: object) -> None:
        """Delete every runner of ours but `keep` (see the module docstring)."""
        for stale in self._ours(api, props):
            if stale["id"] != keep:
                api.delete(f"/runners/{stale['id']}")

    def adopt(self, api: GitLab, props: dict[str, Any], found: dict[str, Any]) -> dict[str, Any]:
        self._delete_stale(api, props, keep=found["id"])
        runner = self.change(api, props, found)
        token = api.post(f"/runners/{found['id']}/reset_authentication_token")
        return {**runner, "authentication_token": token["token"]}

    def change(self, api: GitLab, props: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
        changed: dict[str, Any] = api.put(f"/runners/{current['id']}", self._settings(props))
        return changed

    @staticmethod
    def _settings(props: dict[str, Any]) -> dict[str, Any]:
        return {
            "description": props["description"],
            "tag_list": list(props["tag_list"]),
            "run_untagged": bool(props["run_untagged"]),
            "access_level": str(props["access_level"]),
        }

    def remove(self, api: GitLab, id_: str, props: dict[str, Any], current: dict[str, Any] | None = None) -> None:
        api.delete(f"/runners/{encode(id_)}")

    def outs(self, obj: dict[str, Any]) -> dict[str, Any]:
        # Only a call that made or reset the token has it; otherwise the state keeps it.
        return {"authentication_token": obj["authentication_token"]} if obj.get("authentication_token") else {}


def _group_id(props: dict[str, Any]) -> int:
    return int(float(props["group_id"]))  # ids arrive as floats


def _held_by(runner: dict[str, Any], group: int) -> bool:
    """Whether `runner` (GitLab's runner details) belongs to the group `group`."""
    return any(int(item.get("id") or 0) == group for item in runner.get("groups") or [])


def _in_group(api: GitLab, runner: dict[str, Any], group: int) -> bool:
    """Whether the listed `runner` belongs to the group `group` (a listing does not say: its details do)."""
    details = api.find(f"/runners/{runner['id']}")
    return details is not None and _held_by(details, group)


@dataclass(frozen=True, kw_only=True)
class GitLabRunnerArgs:
    connection: Connection
    group_id: pulumi.Input[str]
    """The id of the group whose projects it serves (and no other)."""
    description: str
    """Exactly ours: it names the owner (`<pulumi project>/<stack>`)."""
    tag_list: tuple[str, ...]
    run_untagged: bool = True
    access_level: AccessLevel = "not_protected"
    """`ref_protected`: GitLab gives it only the jobs of protected branches and tags (Ci::Runner
    `access_level`, which `POST /user/runners` and `PUT /runners/:id` take: lib/api/user_runners.rb,
    lib/api/ci/runners.rb)."""
    owner: str | None = None
    """`<pulumi project>/<stack>`, for the messages that name a command; the running program's by default."""


class GitLabRunner(pulumi.dynamic.Resource, module="gitlab", name="Runner"):
    """A group runner of ours, and its authentication token (secret); its id is GitLab's."""

    authentication_token: pulumi.Output[str]
    """The runner's `glrt-` token (secret), for the runner chart."""

    def __init__(self, name: str, args: GitLabRunnerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        props = wire(dataclasses.replace(args, owner=args.owner or program_owner()), PROVIDER_VERSION, "authentication_token")
        secret = pulumi.ResourceOptions(additional_secret_outputs=["authentication_token"])
        super().__init__(RunnerProvider(), name, props, pulumi.ResourceOptions.merge(opts, secret))
