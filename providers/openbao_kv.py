"""One secret in OpenBao's KV v2 engine, written idempotently.

A write that would store what is already there stores nothing (no new KV version); a changed value
updates the secret in place; a changed path or mount replaces it. Each call logs in as a userpass
user (`blueprint`: components/openbao.py) and revokes that token after it, through a session of
providers/http.py. Delete does nothing unless `delete_on_destroy`: then it deletes the entry,
metadata and every version, best effort within `DELETE_WAIT_SECONDS`, and a warning (the
provider's stderr, which the engine shows: pulumi/pulumi#6065) names an entry it left. Why:
docs/design/decisions.md, entry 18.

Every call waits up to `WAIT_SECONDS` while OpenBao cannot answer yet: unreachable, sealed (a
restart unseals itself a moment later), not active, or a new KV v2 mount upgrading its storage.
Then `read` keeps the recorded state (refresh cannot tell), and `create`/`update` fail naming the
server and the path; only a server that answers that the secret is not there makes refresh drop it.
No error carries a secret: hvac's messages hold the URL, never the password, a token or the data.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, ResourceProvider, UpdateResult

from providers import http, poll
from providers.cluster_access import TARGET_KEY, Target, existing_props
from providers.openbao_api import impostor, revoke_failed, trusting
from providers.openbao_errors import bao_env

PROVIDER_VERSION = "1"
"""Bump when the provider's behaviour changes (it is pickled by reference)."""

INPUTS = ("address", "ca_file", "server_name", "username", "password", "mount", "path", "data", "provider_version", TARGET_KEY)
DELETE_ON_DESTROY = "delete_on_destroy"
"""The optional input that makes `delete` remove the entry (absent is false)."""
DELETE_WAIT_SECONDS = 10.0
"""How long a delete waits for OpenBao to be able to answer before it leaves the entry, warning."""
WAIT_SECONDS = 30.0
"""How long a call waits for OpenBao to be able to answer. A refresh of a server nobody unseals
waits this long per batch of (up to 4) KV reads, since the engine's provider host runs 4 at once."""

RESUME = '`uv run blueprint up` (for the dev stack: `eval "$(uv run blueprint env)" && pulumi up -s dev`)'
"""What resumes a failed write, whichever stack wrote it: phase2 and phase3 both write here, and
`blueprint up` resumes the phase stacks in order."""

T = TypeVar("T")

IMPOSTOR = "not blueprint's OpenBao"
"""`OpenBaoUnavailable.why` when what answers has no certificate of ours: never waited out."""
NO_CA_FILE = "no CA file"
"""`OpenBaoUnavailable.why` when the CA file OpenBao's certificate is checked against is missing: never waited out."""


class OpenBaoUnavailable(Exception):
    """OpenBao could not answer for the secret within `WAIT_SECONDS`; `why` says what it was
    (unreachable, sealed, not active, upgrading the KV v2 mount).
    """

    def __init__(self, message: str, why: str) -> None:
        super().__init__(message)
        self.why = why


def _client(props: dict[str, Any]) -> Any:
    """A client of OpenBao alone: a session of providers/http.py that takes only our OpenBao's
    certificate (openbao_api.trusting; no proxy from the environment: a proxy would see the password;
    no redirect), and no token from VAULT_TOKEN or ~/.vault-token (hvac sends those with every
    request: after a `bao login` as admin, an admin token). hvac passes its own `verify` with every
    request, over the session's: the same CA file.
    """
    import hvac

    asking = trusting(props)
    return hvac.Client(url=str(props["address"]), token="", session=asking, verify=asking.verify, allow_redirects=False, timeout=10)


class _NoLoginAnswer(Exception):
    """The login got an answer without a token."""


def _logged_in(props: dict[str, Any], call: Callable[[Any], T]) -> T:
    """`call(client)` with a fresh token of the user, revoked afterwards; a failed revoke is a
    `RevokeFailed` (a warning when the call failed too: its error is the one raised).
    """
    client = _client(props)
    answer = client.auth.userpass.login(username=str(props["username"]), password=str(props["password"]), use_token=False)
    if not isinstance(answer, dict):
        # No JSON (hvac hands back the raw response, e.g. a standby's redirect, allow_redirects=False):
        # seen right after a restart or a step-down; waited out like "not active".
        raise _NoLoginAnswer(f"OpenBao answered the login with HTTP {getattr(answer, 'status_code', '?')} and no token")
    auth = answer.get("auth")
    token = auth.get("client_token") if isinstance(auth, dict) else None
    if not token:
        raise _NoLoginAnswer("OpenBao answered the login without a token: what answers there may not be blueprint's OpenBao")
    client.token = token
    try:
        result = call(client)
    except BaseException:
        try:
            _revoke(client, props)
        except RevokeFailed as failed:  # the call's error is the one to raise; this one is said beside it
            print(f"warning: {failed}", file=sys.stderr)
        raise
    _revoke(client, props)
    return result


class RevokeFailed(Exception):
    """OpenBao did not revoke the token a call logged in for; never waited out (another try logs in again)."""


def _revoke(client: Any, props: dict[str, Any]) -> None:
    """Revoke the client's token through its session (providers/http.py), and check that OpenBao did (204)."""
    try:
        answer = client.auth.token.revoke_self()
    except Exception as error:
        raise RevokeFailed(f"{revoke_failed(props['address'], str(props['username']))}: {_reason(error)}") from None
    status = getattr(answer, "status_code", None)
    if status != 204:
        raise RevokeFailed(f"{revoke_failed(props['address'], str(props['username']))}: HTTP {status}")


def _not_yet(error: Exception) -> str | None:
    """Why OpenBao cannot answer yet, or None when `error` is a real answer (to be raised)."""
    import hvac.exceptions
    import requests

    if isinstance(error, requests.ConnectionError | requests.Timeout):
        return "unreachable"
    if isinstance(error, hvac.exceptions.VaultDown):
        return "sealed"
    if isinstance(error, _NoLoginAnswer):
        return "not active"
    if isinstance(error, hvac.exceptions.InternalServerError) and "local node not active" in str(error):
        return "not active"
    if isinstance(error, hvac.exceptions.InvalidRequest) and "Upgrading from non-versioned to versioned data" in str(error):
        return "upgrading the KV v2 mount"
    return None


def _patiently(props: dict[str, Any], call: Callable[[Any], T], wait_seconds: float | None = None) -> T:
    """`call(client)` as the user, tried again while OpenBao cannot answer yet (see the module docstring),
    for `wait_seconds` (WAIT_SECONDS by default).
    """
    wait_seconds = WAIT_SECONDS if wait_seconds is None else wait_seconds

    def attempt() -> T:
        try:
            return _logged_in(props, call)
        except http.NoAnswer as error:  # from the session: its CA file is missing (the message says how to write it)
            raise OpenBaoUnavailable(f"OpenBao at {props['address']} cannot be checked: {error}", NO_CA_FILE) from None
        except Exception as error:
            if http.unverified(error):  # at the login's handshake: nothing was sent, and waiting changes nothing
                raise OpenBaoUnavailable(impostor(props), IMPOSTOR) from None
            if (why := _not_yet(error)) is None:
                raise
            raise poll.NotYet(why) from error

    try:
        return poll.retry(attempt, poll.within(wait_seconds, every=0.2))
    except poll.NotYet as gave_up:
        why = str(gave_up)
        # Sealed for this long is sealed by hand (a restart unseals itself at once): only a start unseals it.
        hint = "; OpenBao unseals itself only when it starts: restart its pod" if why == "sealed" else ""
        raise OpenBaoUnavailable(
            f"OpenBao at {props['address']} could not answer for {props['mount']}/{props['path']} within "
            f"{wait_seconds:.0f}s ({why}){hint}; then run {RESUME} again",
            why,
        ) from gave_up.__cause__


def current(props: dict[str, Any], wait_seconds: float | None = None) -> dict[str, Any] | None:
    """The secret's latest data, or None when it does not exist (`blueprint secrets --show` reads
    with this too, waiting less).
    """
    import hvac.exceptions

    def latest(client: Any) -> dict[str, Any] | None:
        try:
            response = client.secrets.kv.v2.read_secret_version(
                path=props["path"], mount_point=props["mount"], raise_on_deleted_version=False
            )
        except hvac.exceptions.InvalidPath:
            return None
        data = (response.get("data") or {}).get("data")
        return dict(data) if data is not None else None

    return _patiently(props, latest, wait_seconds)


def write(props: dict[str, Any]) -> dict[str, Any]:
    """Store `data` at `mount`/`path` unless it is there already; return the outputs."""
    data = {key: str(value) for key, value in dict(props["data"]).items()}
    if current(props) != data:
        _patiently(
            props, lambda client: client.secrets.kv.v2.create_or_update_secret(path=props["path"], secret=data, mount_point=props["mount"])
        )
    outs = {key: props.get(key) for key in INPUTS}
    if DELETE_ON_DESTROY in props:
        outs[DELETE_ON_DESTROY] = bool(props[DELETE_ON_DESTROY])
    return outs


def remove(props: dict[str, Any]) -> str | None:
    """Delete the entry's metadata and every version, as `delete_on_destroy` asks; None when done
    (or it was not there), else a warning naming the entry left behind and how to remove it.
    """
    where = f"{props.get('mount')}/{props.get('path')}"
    try:
        _patiently(
            props,
            lambda client: client.secrets.kv.v2.delete_metadata_and_all_versions(path=props["path"], mount_point=props["mount"]),
            DELETE_WAIT_SECONDS,
        )
    except Exception as error:  # best effort: the destroy goes on (module docstring)
        why = f"{error.why} for {DELETE_WAIT_SECONDS:.0f}s" if isinstance(error, OpenBaoUnavailable) else _reason(error)
        address = f"export {bao_env(props)}"
        fix = shlex.join(["uv", "run", "bao", "kv", "metadata", "delete", f"-mount={props.get('mount')}", str(props.get("path"))])
        return (
            f"the OpenBao entry {where} was not deleted ({why}): what it holds was revoked with this stack. If that OpenBao "
            f"runs on, remove the entry as its admin: `{address}`, log in (`uv run bao login -method=userpass username=admin`), "
            f"then `{fix}`"
        )
    return None


def _reason(error: Exception) -> str:
    """What OpenBao (or the call) answered, in a few words: hvac's messages name the request and its
    URL, never the password, a token or the data.
    """
    text = " ".join(str(error).split())  # hvac's "1 error occurred:\n\t* permission denied\n\n, on delete <url>"
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class OpenBaoKvProvider(ResourceProvider):
    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [key for key in INPUTS if olds.get(key) != news.get(key)]
        if bool(olds.get(DELETE_ON_DESTROY)) != bool(news.get(DELETE_ON_DESTROY)):
            changed.append(DELETE_ON_DESTROY)  # left out is false
        replaces: list[str] = [key for key in ("mount", "path") if key in changed]
        return DiffResult(changes=bool(changed), replaces=replaces, delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=f"{props['mount']}/{props['path']}", outs=write(props))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=write(news))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """On refresh: report the data OpenBao holds, so drift shows as a change."""
        try:
            data = current(props)
        except OpenBaoUnavailable:
            return ReadResult(id_, props)  # cannot tell: keep what the state records
        if data is None:
            return ReadResult(None, {})  # gone: refresh drops it, the next `up` writes it again
        return ReadResult(id_, {**props, "data": data})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        """Nothing to undo, unless `delete_on_destroy` (see the module docstring)."""
        if props.get(DELETE_ON_DESTROY) and (warning := remove(props)):
            pulumi.log.warn(warning)


@dataclass(frozen=True, kw_only=True)
class OpenBaoKvArgs:
    address: pulumi.Input[str]
    """OpenBao's API as the host reaches it."""
    ca_file: pulumi.Input[str]
    """Host path of the platform CA's certificate, which OpenBao's must come from..."""
    server_name: pulumi.Input[str]
    """... for this name, or it gets no password (openbao_api.trusting)."""
    username: pulumi.Input[str]
    """A userpass user that may read and write the path."""
    password: pulumi.Input[str]
    """Its password (secret)."""
    path: str
    """Path under the mount, e.g. `postgres/gitlab`."""
    data: pulumi.Input[dict[str, pulumi.Input[str]]]
    """The key/value pairs (kept secret)."""
    mount: str = "secret"
    delete_on_destroy: bool | None = None
    """Whether a destroy deletes the entry (None: the input is left out, which is false)."""
    forward: Target | None = None
    """On an existing cluster, OpenBao's Service, which `address` is reached through (providers/cluster_access.py)."""


class OpenBaoKv(pulumi.dynamic.Resource, module="openbao", name="KvSecret"):
    """One KV v2 secret at `<mount>/<path>`."""

    def __init__(self, name: str, args: OpenBaoKvArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        props: dict[str, Any] = {
            "address": args.address,
            "ca_file": args.ca_file,
            "server_name": args.server_name,
            "username": args.username,
            "password": pulumi.Output.secret(args.password),
            "mount": args.mount,
            "path": args.path,
            "data": pulumi.Output.secret(args.data),
            "provider_version": PROVIDER_VERSION,
            **existing_props(forward=args.forward),
        }
        if args.delete_on_destroy is not None:
            props[DELETE_ON_DESTROY] = args.delete_on_destroy
        super().__init__(OpenBaoKvProvider(), name, props, opts)
