"""The instance runner, got or created, with a fresh authentication token.

Registration tokens are disabled in GitLab 19, so a runner is created through the API, which
returns its `glrt-` authentication token once: `POST /user/runners` with `runner_type=instance_type`
(lib/api/user_runners.rb; the admin token has the `create_runner` scope, and `admin_mode` for when
the instance's Admin Mode is on). A runner lives in GitLab's database, which `preserveData` keeps
when Pulumi's state goes, so `create` first looks for ours among the instance runners
(`GET /runners/all`, admin only, filtered by type; lib/api/ci/runners.rb). Not by tags: `tag_list`
lists the runners that carry every tag named, so one whose tags someone edited would be missed
and a second made.

**Ours** is an instance runner whose description is exactly ours: it carries the owner,
`<pulumi project>/<stack>` (runners have no custom attributes). When there is one, it is
adopted: its settings are brought to the inputs, and, since its token is unknown to this state,
GitLab gives it a new one (`POST /runners/:id/reset_authentication_token`, which invalidates the
old one). Any further runner of ours (what earlier lost states left) is deleted, so no stale
offline runner stays. The token is a secret output, `authentication_token` (`token` is the admin
token the calls are made with).

**At the recorded id**, as for the group and projects (providers/gitlab_objects.py): the runner
there must be an instance runner of our exact description. A state can outlive its GitLab, and in
the new one that id may be someone's runner: `read` then reports ours gone (the next `up` makes or
adopts it), `update` refuses, naming `pulumi refresh -s <stack>`, and `delete` leaves that runner
alone. When GitLab gives no answer, `read` keeps the recorded state.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import pulumi

from providers.gitlab_api import CONNECTION, Connection, GitLab, encode, wire
from providers.gitlab_objects import GetOrCreateProvider, NotOurs, program_owner

PROVIDER_VERSION = "3"
"""Bump when the provider's behaviour changes (it is pickled by reference)."""


class RunnerProvider(GetOrCreateProvider):
    kind = "runner"
    inputs = (*CONNECTION, "description", "tag_list", "run_untagged", "owner", "provider_version")
    replace_on = ("description",)
    """The description is the mark: another one is another runner."""

    @staticmethod
    def _ours(api: GitLab, props: dict[str, Any]) -> list[dict[str, Any]]:
        listed = api.pages("/runners/all", type="instance_type")
        ours = (runner for runner in listed if runner["description"] == props["description"] and runner["runner_type"] == "instance_type")
        return sorted(ours, key=lambda runner: int(runner["id"]))

    def find(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any] | None:
        return next(iter(self._ours(api, props)), None)

    def current(self, api: GitLab, id_: str, props: dict[str, Any]) -> dict[str, Any] | None:
        found: dict[str, Any] | None = api.find(f"/runners/{encode(id_)}")
        if found is not None and (found.get("description"), found.get("runner_type")) != (props["description"], "instance_type"):
            raise NotOurs(f"it is the {found.get('runner_type')} runner {found.get('description')!r}")
        return found

    def what(self, id_: str, props: dict[str, Any]) -> str:
        return f"runner {id_} ({props['description']!r})"

    def make(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any]:
        settings = {"runner_type": "instance_type", **self._settings(props)}
        made = api.post("/user/runners", settings)
        return {"id": made["id"], "authentication_token": made["token"]}

    def adopt(self, api: GitLab, props: dict[str, Any], found: dict[str, Any]) -> dict[str, Any]:
        for stale in self._ours(api, props):
            if stale["id"] != found["id"]:
                api.delete(f"/runners/{stale['id']}")
        runner = self.change(api, props, found)
        token = api.post(f"/runners/{found['id']}/reset_authentication_token")
        return {**runner, "authentication_token": token["token"]}

    def change(self, api: GitLab, props: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
        changed: dict[str, Any] = api.put(f"/runners/{current['id']}", self._settings(props))
        return changed

    @staticmethod
    def _settings(props: dict[str, Any]) -> dict[str, Any]:
        return {"description": props["description"], "tag_list": list(props["tag_list"]), "run_untagged": bool(props["run_untagged"])}

    def remove(self, api: GitLab, id_: str, props: dict[str, Any], current: dict[str, Any] | None = None) -> None:
        api.delete(f"/runners/{encode(id_)}")

    def outs(self, obj: dict[str, Any]) -> dict[str, Any]:
        # Only a call that made or reset the token has it; otherwise the state keeps it.
        return {"authentication_token": obj["authentication_token"]} if obj.get("authentication_token") else {}


@dataclass(frozen=True, kw_only=True)
class GitLabRunnerArgs:
    connection: Connection
    description: str
    """Exactly ours: it names the owner (`<pulumi project>/<stack>`)."""
    tag_list: tuple[str, ...]
    run_untagged: bool = True
    owner: str | None = None
    """`<pulumi project>/<stack>`, for the messages that name a command; the running program's by default."""


class GitLabRunner(pulumi.dynamic.Resource, module="gitlab", name="Runner"):
    """An instance runner of ours, and its authentication token (secret); its id is GitLab's."""

    authentication_token: pulumi.Output[str]
    """The runner's `glrt-` token (secret), for the runner chart."""

    def __init__(self, name: str, args: GitLabRunnerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        props = wire(dataclasses.replace(args, owner=args.owner or program_owner()), PROVIDER_VERSION, "authentication_token")
        secret = pulumi.ResourceOptions(additional_secret_outputs=["authentication_token"])
        super().__init__(RunnerProvider(), name, props, pulumi.ResourceOptions.merge(opts, secret))
