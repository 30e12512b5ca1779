"""A project deploy token, by name and exact scopes (doc/api/deploy_tokens.md).

GitLab hands one named `gitlab-deploy-token` to every job as CI_DEPLOY_USER and CI_DEPLOY_PASSWORD.
Its value, which GitLab gives once, in the answer that makes it, is kept as the secret output
`deploy_token` (phase3 mirrors it into OpenBao): a token of ours found without it (adopted from a
preserved GitLab) is revoked and made again, as the runner's token is reset
(providers/gitlab_runner.py), and its project's smoke pipeline runs again (its `target` names the
token), so the deployed app's pull Secret gets the new one. Which one, when several active tokens
bear that name, is chance (app/models/deploy_token.rb `gitlab_deploy_token`: `active.find_by(name:)`),
so an active token of our name with other scopes is refused, naming the fix, rather than joined by a
second one; it is never revoked (it may be the user's). Deploy tokens cannot be changed, so other
scopes are another token. It lives in a project of ours (providers/gitlab_get_or_create.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.dynamic import DiffResult

from providers.gitlab_api import CONNECTION, Connection, GitLab, encode, wire
from providers.gitlab_get_or_create import (
    PROVIDER_VERSION,
    GetOrCreateProvider,
    GitLabObjectError,
    in_one_of_ours,
    program_owner,
    up_again,
)


class DeployTokenProvider(GetOrCreateProvider):
    kind = "deploy token"
    inputs = (*CONNECTION, "project", "name", "scopes", "owner", "provider_version")
    replace_on = ("project", "name", "scopes")

    def diff(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        # Deleted before its replacement: the new one would find ours, of other scopes, in the way.
        # Jobs get the new one at once (GitLab hands it to them), so the moment without one harms nothing.
        result = super().diff(id_, olds, news)
        return DiffResult(changes=result.changes, replaces=result.replaces, delete_before_replace=bool(result.replaces))

    def find(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any] | None:
        project, wanted = props["project"], sorted(props["scopes"])
        named = [
            token for token in api.pages(f"/projects/{encode(project)}/deploy_tokens", active="true") if token["name"] == props["name"]
        ]
        if others := [token for token in named if sorted(token["scopes"]) != wanted]:
            theirs = "; ".join(f"id {token['id']} with scopes {', '.join(token['scopes'])}" for token in others)
            where = api.get(f"/projects/{encode(project)}")["path_with_namespace"]
            raise GitLabObjectError(
                f"project {where} already has an active deploy token named {props['name']!r} with other scopes than "
                f"{', '.join(wanted)} ({theirs}). GitLab hands jobs any one active token of that name, so a second one "
                f"would make it chance which one they get. Revoke that token (Settings > Repository > Deploy tokens) or "
                f"make it again under another name, then {up_again(str(props.get('owner') or ''))}"
            )
        return named[0] if named else None

    def current(self, api: GitLab, id_: str, props: dict[str, Any]) -> dict[str, Any] | None:
        if not in_one_of_ours(api, "projects", props["project"], str(props["owner"])):
            return None  # its project is gone, and it with it
        token: dict[str, Any] | None = api.find(f"/projects/{encode(props['project'])}/deploy_tokens/{id_}")
        return None if token is None or token.get("revoked") or token.get("expired") else token

    def what(self, id_: str, props: dict[str, Any]) -> str:
        return f"deploy token {props['name']} ({id_}) of project {props['project']}"

    def before_create(self, api: GitLab, props: dict[str, Any]) -> None:
        self.in_ours(api, "projects", props["project"], "new", props)

    def make(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any]:
        made: dict[str, Any] = api.post(
            f"/projects/{encode(props['project'])}/deploy_tokens", {"name": props["name"], "scopes": list(props["scopes"])}
        )
        return made  # with its `token`, which GitLab gives in this answer alone

    def adopt(self, api: GitLab, props: dict[str, Any], found: dict[str, Any]) -> dict[str, Any]:
        # Ours, but its value is unknown to this state (GitLab never shows it again): revoked and made anew.
        self.remove(api, str(found["id"]), props, found)
        return self.make(api, props)

    def remove(self, api: GitLab, id_: str, props: dict[str, Any], current: dict[str, Any] | None = None) -> None:
        api.delete(f"/projects/{encode(props['project'])}/deploy_tokens/{id_}")

    def outs(self, obj: dict[str, Any]) -> dict[str, Any]:
        # Only the answer that made it has its value; otherwise the state keeps it.
        # (`token` is the connection's admin token: the value's output is `deploy_token`.)
        return {"username": obj.get("username"), **({"deploy_token": obj["token"]} if obj.get("token") else {})}


@dataclass(frozen=True, kw_only=True)
class DeployTokenArgs:
    connection: Connection
    project: pulumi.Input[str]
    """The project's id."""
    name: str
    scopes: tuple[str, ...]
    owner: str | None = None
    """`<pulumi project>/<stack>` of the project that holds it; the running program's by default."""


class DeployToken(pulumi.dynamic.Resource, module="gitlab", name="DeployToken"):
    """A project deploy token: an active one of this name with these scopes, or a new one."""

    username: pulumi.Output[str]
    deploy_token: pulumi.Output[str]
    """Its value (secret), kept from the answer that made it."""

    def __init__(self, name: str, args: DeployTokenArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        args = dataclasses.replace(args, owner=args.owner or program_owner())
        secret = pulumi.ResourceOptions(additional_secret_outputs=["deploy_token"])
        props = wire(args, PROVIDER_VERSION, "username", "deploy_token")
        super().__init__(DeployTokenProvider(), name, props, pulumi.ResourceOptions.merge(opts, secret))
