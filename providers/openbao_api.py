"""The HTTP calls `OpenBaoInit` makes to OpenBao: one request each, through a session of
providers/http.py (no proxy from the environment: it would see the passwords and tokens sent here).

An unreachable server, a lost answer, a 5xx or a 429 is `poll.NotYet`, tried again by the caller
within its budget; any other refusal is an `OpenBaoInitError` naming what was refused and what
OpenBao said, never the request's data.
"""

from __future__ import annotations

import contextlib
from typing import Any

from providers import http, poll
from providers.openbao_errors import OpenBaoInitError, no_userpass_error, wrong_password_error


def request(props: dict[str, Any], method: str, path: str, token: str | None = None, body: dict[str, Any] | None = None) -> Any:
    """One request; an unreachable server or a lost answer is `poll.NotYet`."""
    import requests

    try:
        with http.session(headers={"X-Vault-Token": token} if token else {}) as session:
            return session.request(method, f"{props['address']}/v1/{path}", json=body, timeout=float(props["http_timeout"]))
    except requests.RequestException as error:
        raise poll.NotYet(f"unreachable: {type(error).__name__}") from None


def get(props: dict[str, Any], path: str, token: str | None = None) -> Any:
    return request(props, "GET", path, token)


def _said(response: Any) -> str:
    """What OpenBao said (its `errors`), never the request's data."""
    try:
        errors = response.json().get("errors") or []
    except ValueError:
        errors = []
    return "; ".join(str(error) for error in errors)[:300] or f"HTTP {response.status_code}"


def done(props: dict[str, Any], response: Any, what: str) -> dict[str, Any]:
    """The answer's JSON (or {}) when `what` succeeded; `poll.NotYet` for a 5xx or 429, an error for any other refusal."""
    if response.status_code in (200, 204):
        return dict(response.json()) if response.status_code == 200 and response.content else {}
    if response.status_code >= 500 or response.status_code == 429:
        raise poll.NotYet(f"{what} answered HTTP {response.status_code}")
    raise OpenBaoInitError(f"OpenBao at {props['address']} refused {what} (HTTP {response.status_code}: {_said(response)})")


def login(props: dict[str, Any], user: str, password: str, password_file: str) -> str:
    """A token of `user`, or the error that says why there will be none."""
    response = request(props, "POST", f"auth/userpass/login/{user}", body={"password": password})
    if response.status_code == 200:
        return str(response.json()["auth"]["client_token"])
    # An auth path nobody mounted is answered like any unknown path: 403 (verified against bao 2.7.2).
    if response.status_code == 403:
        raise no_userpass_error(props, int(seal_status(props).get("n") or 0))
    if response.status_code == 400 and "invalid username or password" in response.text:
        raise wrong_password_error(props, user, password_file)
    raise poll.NotYet(f"the login answered HTTP {response.status_code}")


def revoke(props: dict[str, Any], token: str) -> None:
    """Revoke a token (best effort: one the provider logged in for expires within its user's token_max_ttl anyway)."""
    with contextlib.suppress(poll.NotYet):
        request(props, "POST", "auth/token/revoke-self", token)


def seal_status(props: dict[str, Any]) -> dict[str, Any]:
    status = get(props, "sys/seal-status")
    if status.status_code != 200:
        raise poll.NotYet(f"sys/seal-status answered HTTP {status.status_code}")
    return dict(status.json())


def ready(props: dict[str, Any], seal: dict[str, Any]) -> None:
    """Initialised, unsealed and the active node, or `poll.NotYet`."""
    if not seal.get("initialized"):
        raise poll.NotYet("not initialised")
    if seal.get("sealed"):
        raise poll.NotYet("sealed")
    health = get(props, "sys/health")
    if health.status_code != 200:
        raise poll.NotYet("unsealed, not active yet" if health.status_code in (429, 473) else f"sys/health answered {health.status_code}")
