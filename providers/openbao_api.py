"""The HTTP calls `OpenBaoInit` makes to OpenBao, through providers/http.py (no proxy from the
environment: it would see the passwords and tokens sent here); one session per sequence of calls.

No answer is `Unreachable`; a 5xx or a 429 is `poll.NotYet`; both are tried again by the caller
within its budget. Any other refusal is an `OpenBaoInitError` naming what was refused and what
OpenBao said, never the request's data.
"""

from __future__ import annotations

import contextlib
import shlex
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from providers import http, poll
from providers.cluster_access import target_of
from providers.openbao_errors import OpenBaoInitError, no_userpass_error, wrong_password_error

if TYPE_CHECKING:
    import requests


class Unreachable(poll.NotYet):
    """OpenBao gave no answer at all (unlike one that says it is sealed, say): nothing can be told of it."""


@dataclass(frozen=True, eq=False)
class OpenBao:
    """OpenBao's API at `props["address"]`, for one sequence of calls (a pass of `converge`, a check)."""

    props: dict[str, Any]
    """The resource's properties: where OpenBao is, how long a request waits, and what messages name."""

    @cached_property
    def _session(self) -> requests.Session:
        return trusting(self.props)

    def request(self, method: str, path: str, token: str | None = None, body: dict[str, Any] | None = None) -> Any:
        """One request's answer; no answer is `Unreachable`, a server that cannot prove it is ours an error."""
        url, headers = f"{self.props['address']}/v1/{path}", {"X-Vault-Token": token} if token else {}
        try:
            asking = self._session
        except http.NoAnswer as error:  # its CA file is missing: waiting changes nothing
            raise OpenBaoInitError(f"OpenBao at {self.props['address']} cannot be checked: {error}") from None
        try:
            return http.send(asking, method, url, timeout=float(self.props["http_timeout"]), headers=headers, json=body)
        except http.Unverified:
            raise OpenBaoInitError(impostor(self.props)) from None
        except http.NoAnswer as error:
            raise Unreachable(str(error)) from None

    def get(self, path: str, token: str | None = None) -> Any:
        return self.request("GET", path, token)

    def done(self, response: Any, what: str) -> dict[str, Any]:
        """The answer's JSON (or {}) when `what` succeeded; `poll.NotYet` for a 5xx or 429, an error for any other refusal."""
        if response.status_code in (200, 204):
            return self.answer(response, what) if response.status_code == 200 and response.content else {}
        if response.status_code >= 500 or response.status_code == 429:
            raise poll.NotYet(f"{what} answered HTTP {response.status_code}")
        raise OpenBaoInitError(f"OpenBao at {self.props['address']} refused {what} (HTTP {response.status_code}: {_said(response)})")

    def answer(self, response: Any, what: str) -> dict[str, Any]:
        """A 200's JSON object. Anything else is not OpenBao's (another program answering at its
        address): an error naming the address alone, never what was sent or answered.
        """
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise self.not_openbao(response, what)
        return body

    def not_openbao(self, response: Any, what: str) -> OpenBaoInitError:
        return OpenBaoInitError(
            f"the answer to {what} from {self.props['address']} (HTTP {response.status_code}) is not OpenBao's JSON: "
            f"is another program answering at that address?"
        )

    def login(self, user: str, password: str, password_file: str) -> str:
        """A token of `user`, or the error that says why there will be none."""
        response = self.request("POST", f"auth/userpass/login/{user}", body={"password": password})
        if response.status_code == 200:
            auth = self.answer(response, "the login").get("auth")
            token = auth.get("client_token") if isinstance(auth, dict) else None
            if isinstance(token, str) and token:
                return token
            raise self.not_openbao(response, "the login")
        # An auth path nobody mounted is answered like any unknown path: 403 (verified against bao 2.7.2).
        if response.status_code == 403:
            raise no_userpass_error(self.props)
        if response.status_code == 400 and "invalid username or password" in response.text:
            raise wrong_password_error(self.props, user, password_file)
        raise poll.NotYet(f"the login answered HTTP {response.status_code}")

    def revoke(self, token: str, user: str) -> None:
        """Revoke a token of `user` the provider logged in for, through this session (no proxy sees it).
        OpenBao answers 204 (revoke-self); anything else, no answer included, is an error: the token
        would stay valid up to its user's `token_max_ttl` without anyone knowing (one error, not tried
        again: another pass would only log in for another token).
        """
        try:
            response = self.request("POST", "auth/token/revoke-self", token)
        except Unreachable as error:
            raise OpenBaoInitError(f"{revoke_failed(self.props['address'], user)}: {error}") from None
        if response.status_code != 204:
            raise OpenBaoInitError(f"{revoke_failed(self.props['address'], user)}: HTTP {response.status_code}: {_said(response)}")

    @contextlib.contextmanager
    def logged_in(self, user: str, password: str, password_file: str) -> Iterator[str]:
        """A token of `user` for the `with` block, revoked after it (`revoke`). When the block fails,
        its error is the one raised, and a failed revoke is a warning beside it (the provider's stderr,
        which the engine shows).
        """
        token = self.login(user, password, password_file)
        try:
            yield token
        except BaseException:
            try:
                self.revoke(token, user)
            except OpenBaoInitError as failed:
                print(f"warning: {failed}", file=sys.stderr)
            raise
        self.revoke(token, user)

    def seal_status(self) -> dict[str, Any]:
        status = self.get("sys/seal-status")
        if status.status_code != 200:
            raise poll.NotYet(f"sys/seal-status answered HTTP {status.status_code}")
        return self.answer(status, "sys/seal-status")

    def ready(self) -> None:
        """Initialised, unsealed and the active node, or `poll.NotYet`."""
        seal = self.seal_status()
        if not seal.get("initialized"):
            raise poll.NotYet("not initialised")
        if seal.get("sealed"):
            raise poll.NotYet("sealed")
        health = self.get("sys/health").status_code
        if health != 200:
            raise poll.NotYet("unsealed, not active yet" if health in (429, 473) else f"sys/health answered {health}")


def trusting(props: dict[str, Any]) -> requests.Session:
    """A session of providers/http.py that takes only a server proving, under phase2's CA
    (`ca_file`), to be `server_name` (OpenBao's certificate): anything else at OpenBao's port gets
    no password and no token. Over plain HTTP (the tests' `bao`) there is nothing to check. On an
    existing cluster every request goes through a port-forward to OpenBao's Service (`forward`).
    """
    ca_file, server_name = props.get("ca_file"), props.get("server_name")
    return http.session(
        ca_file=str(ca_file) if ca_file else None, server_name=str(server_name) if server_name else None, forward=target_of(props)
    )


def impostor(props: dict[str, Any]) -> str:
    """What to do when what answers at OpenBao's address has no certificate from phase2's CA for
    OpenBao's name: nothing was sent to it.
    """
    address, port = str(props.get("address")), urlsplit(str(props.get("address"))).port
    return (
        f"what answers at {address} is not blueprint's OpenBao: its certificate is not one phase2's CA ({props.get('ca_file')}) "
        f"issued for {props.get('server_name')}, so blueprint sent it no password. Another program may hold port {port} "
        f"(`ss -ltnp 'sport = :{port}'`, or `lsof -nP -iTCP:{port} -sTCP:LISTEN`): stop it, or give blueprint another port "
        f"(`blueprint:openbaoPort` in phase1's config). If it is OpenBao, the CA file is not phase2's: write it again "
        f"(`pulumi stack output -s phase2 caCertPem > {shlex.quote(str(props.get('ca_file')))}`; {http.PLAIN_PULUMI})"
    )


def revoke_failed(address: object, user: str) -> str:
    """The first words of a failed revoke: which token is left valid, and how to end it."""
    return (
        f"OpenBao at {address} did not revoke the token of user {user} that blueprint logged in for: it stays valid "
        f"up to its user's token_max_ttl (components/openbao.py SELF_INIT). As admin (docs/guide/access.md, 'OpenBao'), "
        f"find its accessor (`uv run bao list auth/token/accessors`, `uv run bao token lookup -accessor ACCESSOR`) and "
        f"revoke it (`uv run bao token revoke -accessor ACCESSOR`); why OpenBao refused"
    )


def _said(response: Any) -> str:
    """What OpenBao said (its `errors`), never the request's data."""
    try:
        body = response.json()
    except ValueError:
        body = None
    errors = body.get("errors") if isinstance(body, dict) else None
    return "; ".join(str(error) for error in errors or [] if isinstance(errors, list))[:300] or f"HTTP {response.status_code}"
