"""Bring OpenBao to what blueprint's config says: the steps of `OpenBaoInit`, tried until they pass.

`converge` checks the seal key file, waits for the rollout (providers/openbao_rollout.py), then,
within `wait_seconds` from the rollout's end, tries every step again while OpenBao cannot answer yet
(unreachable, sealed, standby, slower than `http_timeout`, a 5xx): OpenBao answers, unsealed and
active; `requests`, the list the server's self-initialisation is made from, applied as user
`admin` (`configure`); user `blueprint` logs in and may use KV v2 at `mount`. Applying the requests
again is how a vault initialised before a request changed gets the change: a mount is enabled when
missing (another engine there is refused), policies and users are written, and a password only for
a user that is new; an existing user that refuses its file's password is refused before anything
is written, so no account gets blueprint's policies under a password blueprint does not hold.
"""

from __future__ import annotations

import shlex
from typing import Any

from providers import poll
from providers.openbao_api import OpenBao, Unreachable
from providers.openbao_errors import OpenBaoInitError, mount_conflict, timeout_error, wrong_password_error
from providers.openbao_rollout import server_log, wait_for_rollout
from providers.openbao_seal_key import check_seal_key_file


def _is_env(value: Any) -> bool:
    return isinstance(value, dict) and value.get("eval_source") == "env"


def _secret(props: dict[str, Any], reference: dict[str, Any]) -> str:
    """The value an `env` reference of the requests names (from the secret input `request_secrets`)."""
    secrets = props.get("request_secrets") or {}
    name = str(reference.get("env_var"))
    if not isinstance(secrets.get(name), str) or not secrets[name]:
        raise OpenBaoInitError(f"request_secrets has no value for {name}, which OpenBao's requests name")
    return str(secrets[name])


def _user_password(props: dict[str, Any], user: str) -> str:
    """User `user`'s password, as the requests give it."""
    for request in props["requests"]:
        if request["path"] == f"auth/userpass/users/{user}" and _is_env(request["data"].get("password")):
            return _secret(props, request["data"]["password"])
    raise OpenBaoInitError(f"OpenBao's requests make no userpass user {user} with a password")


def _password_file(props: dict[str, Any], user: str) -> str:
    """The file of user `user`'s password."""
    files = {str(props["admin_username"]): props["admin_password_file"], str(props["username"]): props["password_file"]}
    return str(files.get(user, "its password file"))


def _logs_in(bao: OpenBao, user: str) -> bool:
    """Whether user `user` logs in with the password the requests give it (the token is revoked at
    once). A 5xx or 429 is `poll.NotYet`.
    """
    response = bao.request("POST", f"auth/userpass/login/{user}", body={"password": _user_password(bao.props, user)})
    if response.status_code == 200:
        bao.revoke(str(response.json()["auth"]["client_token"]), user)
        return True
    if response.status_code >= 500 or response.status_code == 429:
        raise poll.NotYet(f"a login as {user} answered HTTP {response.status_code}")
    return False


def _refusing_user(bao: OpenBao, token: str, logged_in: str) -> str | None:
    """The first user the requests make that exists already and does not log in with its file's
    password: blueprint must not give it its policies. User `logged_in` has just logged in with that
    password (`token` is its): it is not asked again (a userpass login costs the server a bcrypt).
    """
    for request in bao.props["requests"]:
        path = str(request["path"])
        if path == f"auth/userpass/users/{logged_in}":
            continue
        # A user that does not exist, or a userpass not mounted, reads as 404 (verified against bao 2.7.2).
        if path.startswith("auth/userpass/users/") and _is_env(request["data"].get("password")) and _exists(bao, path, token):
            user = path.rsplit("/", 1)[1]
            if not _logs_in(bao, user):
                return user
    return None


def _exists(bao: OpenBao, path: str, token: str) -> bool:
    response = bao.get(path, token)
    if response.status_code == 404:
        return False
    bao.done(response, f"reading {path}")
    return True


def configure(bao: OpenBao, token: str, logged_in: str) -> None:
    """Apply `requests` with `token` (user `logged_in`'s, from the password the requests give it),
    idempotently: what self-initialisation did on a vault's first start. A user that exists and
    refuses its file's password is refused before anything is written: its policies stay as they are.
    """
    props = bao.props
    if (user := _refusing_user(bao, token, logged_in)) is not None:
        raise wrong_password_error(props, user, _password_file(props, user))
    for request in props["requests"]:
        path, data = str(request["path"]), dict(request["data"])
        if path.startswith(("sys/mounts/", "sys/auth/")):
            table, mount = path.split("/", 2)[1:]
            listing = bao.done(bao.get(f"sys/{table}", token), f"reading sys/{table}")
            existing = (listing.get("data") or {}).get(f"{mount}/")
            if existing is None:
                bao.done(bao.request("POST", path, token, data), f"enabling {path}")
            elif existing.get("type") != data.get("type") or any(
                (existing.get("options") or {}).get(key) != value for key, value in (data.get("options") or {}).items()
            ):
                raise mount_conflict(props, path, existing, data)
            continue
        secret_fields = [key for key, value in data.items() if _is_env(value)]
        if secret_fields and _exists(bao, path, token):
            data = {key: value for key, value in data.items() if key not in secret_fields}  # the vault keeps its own
        body = {key: _secret(props, value) if _is_env(value) else value for key, value in data.items()}
        bao.done(bao.request("POST", path, token, body), f"writing {path}")


def check_writer(bao: OpenBao) -> None:
    """User `username` logs in and may use KV v2 at `mount`."""
    props = bao.props
    with bao.logged_in(str(props["username"]), str(props["password"]), str(props["password_file"])) as token:
        mount = bao.get(f"sys/internal/ui/mounts/{props['mount']}", token)
        if mount.status_code >= 500:
            raise poll.NotYet(f"the mount check answered HTTP {mount.status_code}")
        data = (bao.answer(mount, "reading the mount").get("data") or {}) if mount.status_code == 200 else {}
        if data.get("type") != "kv" or (data.get("options") or {}).get("version") != "2":
            raise OpenBaoInitError(
                f"OpenBao at {props['address']} has no KV v2 engine at {props['mount']}/ that user {props['username']} may use "
                f"(HTTP {mount.status_code}): it was changed after OpenBao configured itself. As admin (docs/guide/access.md, 'OpenBao'), "
                f"enable it again: uv run bao secrets enable -path={shlex.quote(str(props['mount']))} kv-v2"
            )


def check_once(props: dict[str, Any]) -> None:
    """The checks alone, changing nothing; `poll.NotYet` when the server cannot answer yet."""
    bao = OpenBao(props)
    bao.ready()
    check_writer(bao)


def converge_once(props: dict[str, Any]) -> None:
    """One pass over every step, on one session; `poll.NotYet` when the server cannot answer yet."""
    bao = OpenBao(props)
    bao.ready()
    admin, admin_file = str(props["admin_username"]), str(props["admin_password_file"])
    with bao.logged_in(admin, _user_password(props, admin), admin_file) as token:
        configure(bao, token, admin)
    check_writer(bao)


def converge(props: dict[str, Any]) -> None:
    """Wait until OpenBao is usable as configured, or fail saying why."""
    check_seal_key_file(props)
    wait_for_rollout(props)
    wait = float(props["wait_seconds"])  # from the end of the rollout: it has its own budget
    try:
        poll.retry(lambda: converge_once(props), poll.within(wait, every=0.2))
    except poll.NotYet as not_yet:
        raise timeout_error(props, str(not_yet), server_log(props), wait) from None


def usable(props: dict[str, Any]) -> bool | None:
    """Whether OpenBao passes the checks right now; None when it gives no answer (nothing to report)."""
    try:
        check_once({**props, "http_timeout": min(float(props["http_timeout"]), 5.0)})
    except Unreachable:
        return None
    except (poll.NotYet, OpenBaoInitError):
        return False
    return True
