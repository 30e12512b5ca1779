"""Personal access tokens of `root` whose value Pulumi generates: GitLab's first admin token, and glab's.

Seeded inside GitLab (docs/design/decisions.md, entry 35): a Ruby script run by `gitlab-rails
runner` in the toolbox pod (kubectl exec, the script on stdin so the value never reaches a command
line; the kubeconfig from `kind get kubeconfig` at the moment of use). The script is idempotent: it
does nothing when the value is an active token with the inputs' scopes (and only sets the scopes of
one without them), and otherwise replaces any stale row with a new token of that value, revoking
root's other "blueprint" tokens.

`diff` asks GitLab whether it still accepts the token (`GET /personal_access_tokens/self`) and
reports a change when it does not (expired, revoked, a new GitLab over wiped data) or when the token
lacks a scope, so the next `up` seeds it again; `read` (refresh) drops such a token. Without the CA
file GitLab's answer is checked against, nothing it says can be trusted: `diff` and `read` change
nothing, and `create`/`update` fail before seeding, saying how to write the file again. A token
within RENEW_DAYS (UTC) of its expiry counts as refused too: the next `up` seeds it again (same value).
glab's token is not seeded: GitLab makes it (providers/glab_token.py). The admin token's delete does
nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, ResourceProvider, UpdateResult

from components.engine import DOCKER
from providers import poll
from providers.cluster_access import CONTEXT_KEY, TARGET_KEY, Target, existing_props, target_of
from providers.gitlab_api import Connection, GitLab, GitLabApiError
from providers.http import missing_ca_file
from providers.kind_access import ENGINE_KEY, KindAccessError, cluster_kubeconfig, engine_props

PROVIDER_VERSION = "1"
"""Bump when the provider's behaviour changes (it is pickled by reference)."""

INPUTS = (
    "gitlab_url", "ca_file", "token", "kind_cluster_name", "namespace", "toolbox", "name", "scopes", "expires_days",
    "wait_seconds", "provider_version", TARGET_KEY, CONTEXT_KEY, ENGINE_KEY,
)  # fmt: skip
RENEW_DAYS = 7
"""A token that expires within this many days (UTC, `renew_by`) is renewed on the next `up`."""
SEED_SCRIPT = """\
value = TOKEN_VALUE
name = TOKEN_NAME
scopes = SCOPES
token = PersonalAccessToken.find_by_token(value)
lasting = token&.active? && token.expires_at.present? && token.expires_at > Date.parse(RENEW_BY)
if lasting && token.scopes.map(&:to_s).sort == scopes.sort
  puts "exists"
elsif lasting
  token.update!(scopes: scopes)
  puts "updated"
else
  token&.destroy!
  user = User.find_by_username!("root")
  token = user.personal_access_tokens.build(name: name, scopes: scopes, expires_at: EXPIRES_DAYS.days.from_now)
  token.set_token(value)
  token.save!
  user.personal_access_tokens.active.where(name: name).where.not(id: token.id).each(&:revoke!)
  puts "created"
end
"""
"""Idempotent: an active token of this value that lasts beyond RENEW_DAYS is kept (its scopes brought
to the inputs'); otherwise a new one is made, and root's other active tokens of the same name (the
value it replaces) are revoked, so a rotated value leaves no live stale token
(app/models/personal_access_token.rb: `active` scope, `revoke!`, `expires_at` a date, `scopes` a
serialized array checked against the admin's scopes)."""


ADMIN_TOKEN_SCOPES = (
    "api", "read_api", "read_repository", "write_repository", "read_registry", "write_registry", "read_user", "sudo",
    "create_runner", "admin_mode",
)  # fmt: skip
"""The old blueprint's token had the first eight, and users script against it and `docker login` with it
(registry scopes). `create_runner`: phase2 makes the group's runners with it (POST /user/runners).
`admin_mode`: with the instance's Admin Mode on, admin API calls need it (custom attributes,
`GET /runners/all`, instance runners); without it, it changes nothing. `sudo` and `admin_mode` only
administrators may hold (lib/gitlab/auth.rb `ADMIN_SCOPES`; doc/security/tokens/access_token_scopes.md).
A token that lacks one of them (this list grown, or GitLab's database restored from before it grew)
is brought to them on the next `up`: `diff` sees the inputs change or GitLab's answer lacking one, and
the seed script updates an active token's scopes in place, keeping its value."""


class GitLabTokenError(Exception):
    """The token could not be seeded or GitLab cannot be reached; the message says what to do."""


def renew_by(today: date | None = None) -> date:
    """The last expiry date that counts as due for renewal: UTC today plus RENEW_DAYS. GitLab keeps
    `expires_at` as a UTC date, so Python's check and the seed script's both use this one date (a
    local date, east of UTC, would be a day ahead of GitLab's for part of every day).
    """
    return (today or datetime.fromtimestamp(time.time(), UTC).date()) + timedelta(days=RENEW_DAYS)


def seed_script(token: str, scopes: list[str], expires_days: int, name: str = "blueprint") -> str:
    """The Ruby seed script with its values inlined as JSON literals (valid Ruby, no escaping issues)."""
    return (
        SEED_SCRIPT.replace("SCOPES", json.dumps(scopes))
        .replace("EXPIRES_DAYS", str(int(expires_days)))
        .replace("RENEW_BY", json.dumps(renew_by().isoformat()))
        .replace("TOKEN_NAME", json.dumps(name))
        .replace("TOKEN_VALUE", json.dumps(token))  # last: no other placeholder is looked for in the value
    )


def _scrub(text: str, token: str) -> str:
    return text.replace(token, "[secret]")


def seed(props: dict[str, Any]) -> str:
    """Run the seed script in the toolbox; returns what it printed ("created" or "exists")."""
    token = str(props["token"])
    script = seed_script(token, list(props["scopes"]), int(props["expires_days"]), _name(props))
    try:
        with cluster_kubeconfig(props) as kubeconfig:
            command = [
                "kubectl", "--kubeconfig", kubeconfig, "-n", str(props["namespace"]), "exec", "-i",
                f"deploy/{props['toolbox']}", "-c", "toolbox", "--", "gitlab-rails", "runner", "-",
            ]  # fmt: skip
            done = subprocess.run(command, input=script, capture_output=True, text=True, timeout=900, check=False)
    except KindAccessError as error:
        raise GitLabTokenError(str(error)) from None
    if done.returncode != 0:
        raise GitLabTokenError(
            f"seeding the admin token through {props['namespace']}/{props['toolbox']} failed "
            f"(exit {done.returncode}): {_scrub(done.stderr.strip()[-800:], token)}"
        )
    return _scrub(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "", token)


def _name(props: dict[str, Any]) -> str:
    return str(props.get("name") or "blueprint")


def accepted(props: dict[str, Any], today: date | None = None) -> bool | None:
    """Whether GitLab accepts the token with every scope the inputs name, beyond RENEW_DAYS from
    `today`: True, False (401/403, a scope missing, which the seed script adds, or an expiry within
    RENEW_DAYS, which it renews), or None when GitLab does not answer or its answer cannot be checked
    (no CA file). Asked once, through the GitLab client: a wait asks again.
    """
    try:
        granted = GitLab.of(props, timeout=10.0, pauses=()).get("/personal_access_tokens/self")
    except GitLabApiError as error:
        return False if error.status in (401, 403) else None
    if not isinstance(granted, dict):
        return None  # not the token's details: nothing to tell by
    expires = granted.get("expires_at")
    if isinstance(expires, str) and expires and date.fromisoformat(expires[:10]) <= renew_by(today):
        return False
    return set(props["scopes"]) <= set(granted.get("scopes") or [])


def wait_until_accepted(props: dict[str, Any], wait_seconds: float = 300) -> None:
    def attempt() -> None:
        verdict = accepted(props)
        if not verdict:
            raise poll.NotYet("refused" if verdict is False else "no answer")

    try:
        poll.retry(attempt, poll.within(wait_seconds, every=5.0))
    except poll.NotYet as not_yet:
        failed = f"{props['gitlab_url']} did not accept the seeded token {_name(props)} within {wait_seconds:.0f}s ({not_yet})"
        if str(not_yet) == "refused":  # GitLab answered: the laptop reaches it, the seeding is what failed
            raise GitLabTokenError(
                f"{failed}: GitLab answered, so the seed did not take; see the toolbox's log "
                f"(`kubectl -n {props['namespace']} logs deploy/{props['toolbox']}`), then run `uv run blueprint up` again"
            ) from None
        host = str(props["gitlab_url"]).split("://", 1)[-1].split("/", 1)[0].split(":", 1)[0]
        if forward := target_of(props):  # an existing cluster: no name to resolve, a Service to forward to
            pods = f"kubectl --context {forward.context} -n {forward.namespace} get pods"
            reach = f"GitLab is reached through a port-forward to {forward}: check its pods (`{pods}`)"
        else:
            reach = f"If the laptop cannot reach {host}, add '127.0.0.1 {host}' to /etc/hosts"
        raise GitLabTokenError(f"{failed}. {reach}; the CA it must trust is {props['ca_file']}.") from None


def converge(props: dict[str, Any]) -> dict[str, Any]:
    if problem := missing_ca_file(str(props["ca_file"])):
        raise GitLabTokenError(problem)
    if accepted(props) is not True:
        seed(props)
        wait_until_accepted(props, float(props.get("wait_seconds") or 300))
    return {key: props.get(key) for key in INPUTS}


class GitLabTokenProvider(ResourceProvider):
    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [key for key in INPUTS if olds.get(key) != news.get(key)]
        if not changed and accepted(news) is False:
            changed = ["token"]  # GitLab no longer accepts it: seed it again
        return DiffResult(changes=bool(changed), replaces=[], delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=f"root/{_name(props)}", outs=converge(props))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=converge(news))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        if accepted(props) is False:
            return ReadResult(None, {})  # refused: refresh drops it, the next `up` seeds it again
        return ReadResult(id_, props)

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing: the token lives in GitLab's database, which `preserveData` keeps or wipes."""


def revoke(props: dict[str, Any]) -> None:
    """Revoke the token with itself (`DELETE /personal_access_tokens/self`, GitLab 15.0+). A token
    GitLab refuses (401/403: revoked, expired, or gone with a wiped database) is done already.
    """
    if problem := missing_ca_file(str(props["ca_file"])):
        raise GitLabTokenError(problem)
    try:
        GitLab.of(props, timeout=10.0).delete("/personal_access_tokens/self")
    except GitLabApiError as error:
        if error.status in (401, 403):
            return
        raise GitLabTokenError(
            f"could not revoke the token {_name(props)} at {props['gitlab_url']} ({error.detail}): bring GitLab back "
            "(`uv run blueprint status`), then destroy again; `uv run blueprint destroy` forgets it when GitLab is gone for good"
        ) from None


@dataclass(frozen=True, kw_only=True)
class GitLabTokenArgs:
    gitlab_url: str
    ca_file: pulumi.Input[str]
    """The CA that signs GitLab's certificate (a file on the host)."""
    token: pulumi.Input[str]
    """The token's value (secret), generated by the program."""
    kind_cluster_name: pulumi.Input[str]
    namespace: pulumi.Input[str]
    toolbox: str
    name: str = "blueprint"
    """The token's name in GitLab: a new value revokes root's other active tokens of this name."""
    scopes: tuple[str, ...] = ADMIN_TOKEN_SCOPES
    expires_days: int = 364
    """GitLab refuses tokens that live longer than 365 days."""
    wait_seconds: int = 300
    """How long to wait for GitLab to accept the seeded token."""
    forward: Target | None = None
    """On an existing cluster, Envoy's Service, which GitLab is reached through (providers/cluster_access.py)."""
    kube_context: str = ""
    """On an existing cluster, its context, for the toolbox's `kubectl exec`; "" on kind."""
    engine: str = DOCKER
    """The container engine kind runs on, which `kind get kubeconfig` must be told (providers/kind_access.py)."""

    def __post_init__(self) -> None:
        if not RENEW_DAYS < self.expires_days <= 365:
            raise ValueError(f"expires_days must be more than {RENEW_DAYS} (RENEW_DAYS) and at most 365, got {self.expires_days}")


def _token_props(args: GitLabTokenArgs) -> dict[str, Any]:
    return {
        "gitlab_url": args.gitlab_url,
        "ca_file": args.ca_file,
        "token": pulumi.Output.secret(args.token),
        "kind_cluster_name": args.kind_cluster_name,
        "namespace": args.namespace,
        "toolbox": args.toolbox,
        "name": args.name,
        "scopes": list(args.scopes),
        "expires_days": args.expires_days,
        "wait_seconds": args.wait_seconds,
        "provider_version": PROVIDER_VERSION,
        **existing_props(forward=args.forward, kube_context=args.kube_context),
        **engine_props(args.engine),
    }


class GitLabToken(pulumi.dynamic.Resource, module="gitlab", name="AdminToken"):
    """`root`'s personal access token, seeded and kept valid."""

    token: pulumi.Output[str]
    """The token, once GitLab accepts it (secret): what calls GitLab's API with it waits for this."""

    def __init__(self, name: str, args: GitLabTokenArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        secret = pulumi.ResourceOptions(additional_secret_outputs=["token"])
        super().__init__(GitLabTokenProvider(), name, _token_props(args), pulumi.ResourceOptions.merge(opts, secret))


GLAB_TOKEN_NAME = "blueprint-glab"
GLAB_TOKEN_SCOPES = ("api",)
"""glab's: `api` (the REST and GraphQL API, read and write, all that glab calls) and no more; not
`sudo` (acting as any user) nor `admin_mode` (admin calls with the instance's Admin Mode on), which
only administrators may hold (doc/user/profile/personal_access_tokens.md, "Personal access token
scopes"; lib/gitlab/auth.rb `ADMIN_SCOPES`)."""
GLAB_TOKEN_DAYS = 30
"""glab's token lives 30 days; an `up` in its last RENEW_DAYS replaces it with a new one for 30 more."""
GLAB_INPUTS = ("gitlab_url", "ca_file", "token", "path", "name", "scopes", "expires_days", "provider_version", TARGET_KEY)
"""`token` is the admin token, which makes glab's; glab's own value is the output `value`."""


def write_secret(path: Path, value: str) -> None:
    """`value` into `path` (0600 from the start, atomically: a reader sees the old value or the new)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "w") as handle:
            handle.write(value + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        Path(temporary).unlink(missing_ok=True)


def glab_current(state: dict[str, Any]) -> bool | None:
    """Whether glab's recorded token is still good: its file holds it, and GitLab accepts it beyond
    RENEW_DAYS (`accepted`); None when GitLab's answer cannot be had or checked.
    """
    value = state.get("value")
    if not isinstance(value, str) or not value:
        return False
    try:
        if Path(str(state["path"])).read_text().strip() != value:
            return False  # removed or changed by hand: the value may have leaked, make a new one
    except OSError:
        return False
    return accepted({**state, "token": value})


def mint(props: dict[str, Any]) -> dict[str, Any]:
    """Admin Mode turned on, then a new token of root made by GitLab (admin: `POST /users/:user_id/personal_access_tokens`,
    doc/api/user_tokens.md), written to its file; then root's other active tokens of this name (the
    one it replaces, one a crash left unrecorded) are revoked (`DELETE /personal_access_tokens/:id`).
    A new value each time: one that leaked dies with its token. Rotation's own endpoint is not used
    because it refuses a token already revoked or expired, the very cases that need a new one.
    """
    if problem := missing_ca_file(str(props["ca_file"])):
        raise GitLabTokenError(problem)
    name = _name(props)
    admin = GitLab.of(props, timeout=30.0)
    try:
        # Admin Mode on (doc/api/settings.md `admin_mode`; GitLab's default is off): then glab's token,
        # root's but without the `admin_mode` scope, reaches no admin API. Every admin call blueprint
        # makes carries the admin token, which holds that scope (ADMIN_TOKEN_SCOPES).
        admin.put("/application/settings", {"admin_mode": True})
        root = admin.get("/user")["id"]
        expires_at = (renew_by() + timedelta(days=int(props["expires_days"]) - RENEW_DAYS)).isoformat()
        made = admin.post(
            f"/users/{root}/personal_access_tokens", {"name": name, "scopes": list(props["scopes"]), "expires_at": expires_at}
        )
        value, made_id = str(made["token"]), made["id"]
        write_secret(Path(str(props["path"])), value)
        for other in admin.pages("/personal_access_tokens", user_id=root, state="active", search=name):
            if other.get("name") == name and other.get("id") != made_id:
                admin.delete(f"/personal_access_tokens/{other['id']}")
    except GitLabApiError as error:
        raise GitLabTokenError(
            f"could not make the token {name} at {props['gitlab_url']} ({error.detail}): check GitLab (`uv run blueprint status`), "
            "then run `uv run blueprint up` again"
        ) from None
    return {**{key: props.get(key) for key in GLAB_INPUTS}, "value": value, "token_id": made_id, "expires_at": made.get("expires_at")}


class GlabTokenProvider(ResourceProvider):
    """glab's token, made by GitLab with the admin token; a new one replaces it when it is refused, in
    its last RENEW_DAYS, or its file was removed or changed; the delete revokes it and removes its file.
    """

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [key for key in GLAB_INPUTS if olds.get(key) != news.get(key)]
        if not changed and glab_current(olds) is False:
            changed = ["value"]  # not an input: a new token, made by GitLab
        return DiffResult(changes=bool(changed), replaces=[], delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        outs = mint(props)
        return CreateResult(id_=str(outs["token_id"]), outs=outs)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        same = all(olds.get(key) == news.get(key) for key in ("path", "name", "scopes", "expires_days"))
        if same and glab_current(olds) is True:
            kept = ("value", "token_id", "expires_at")
            return UpdateResult(outs={**{key: news.get(key) for key in GLAB_INPUTS}, **{key: olds.get(key) for key in kept}})
        outs = mint(news)  # revokes the old token too, when its name is the same
        if olds.get("name") != news.get("name") and isinstance(olds.get("value"), str):
            revoke({**olds, "token": olds["value"]})
        if olds.get("path") and olds.get("path") != news.get("path"):
            Path(str(olds["path"])).unlink(missing_ok=True)
        return UpdateResult(outs=outs)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        if glab_current(props) is False:
            return ReadResult(None, {})  # refresh drops it; the next `up` makes a new one, revoking this
        return ReadResult(id_, props)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        """Revoke it (with itself, so a wiped GitLab's 401 is done already), then remove its file."""
        if isinstance(props.get("value"), str) and props["value"]:
            revoke({**props, "token": props["value"]})
        if props.get("path"):
            Path(str(props["path"])).unlink(missing_ok=True)


@dataclass(frozen=True, kw_only=True)
class GlabTokenArgs:
    connection: Connection
    """GitLab, with the admin token that makes glab's."""
    path: pulumi.Input[str]
    """The 0600 file that holds glab's token, whole."""


class GlabToken(pulumi.dynamic.Resource, module="gitlab", name="GlabToken"):
    """glab's personal access token of `root` (`api`, GLAB_TOKEN_DAYS), made by GitLab; revoked by its delete."""

    value: pulumi.Output[str]
    """The token (secret)."""

    def __init__(self, name: str, args: GlabTokenArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        props = {
            "gitlab_url": args.connection.url,
            "ca_file": args.connection.ca_file,
            "token": pulumi.Output.secret(args.connection.token),
            "path": args.path,
            "name": GLAB_TOKEN_NAME,
            "scopes": list(GLAB_TOKEN_SCOPES),
            "expires_days": GLAB_TOKEN_DAYS,
            "provider_version": PROVIDER_VERSION,
            **existing_props(forward=args.connection.forward),
            "value": None,
            "token_id": None,
            "expires_at": None,
        }
        secret = pulumi.ResourceOptions(additional_secret_outputs=["value"])
        super().__init__(GlabTokenProvider(), name, props, pulumi.ResourceOptions.merge(opts, secret))
