"""The one small client for GitLab's REST API that every GitLab dynamic provider uses.

A `GitLab` is built per call from a resource's wire properties (`gitlab_url`, `token`,
`ca_file`): the providers are pickled by reference and keep nothing on `self`. It sends the token
as `PRIVATE-TOKEN` through a session of providers/http.py (our CA alone, nothing from the
environment, no redirect followed), follows `X-Next-Page` pagination, and retries what is
transient: a gateway answer while GitLab restarts (502, 503, 504), a timeout, a refused
connection, and a throttled request (429, after the `Retry-After` it names, bounded). Only an
idempotent method (GET, HEAD, PUT, DELETE, OPTIONS: RFC 9110 section 9.2.2) is sent again after a
gateway error or a read timeout; any other (POST, PATCH) only when it never reached GitLab (the
connection was refused or timed out while connecting, or it was throttled): after a gateway error
GitLab may have acted on it, so the caller, which knows what the request makes, looks for it
before asking again (the get-or-create providers adopt on proof, gitlab_pipeline looks for the
commit's pipeline) instead of making it twice. GitLab's one redirect, a renamed project's old path
(lib/api/helpers.rb `find_project!`), `call` follows itself, on GitLab's own host only.

Every failure is a `GitLabApiError` naming the method, the path, the status and the start of the
body, never the token nor a string value the request sent (a variable's value, say), which a
refusal may echo. Why this way: docs/design/decisions.md, entry 36.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

import pulumi

from providers import http, poll

if TYPE_CHECKING:
    import requests

RETRY_PAUSES = (1.0, 2.0, 4.0, 8.0)
"""Seconds between attempts: five in all, about 15 s, what a restarting webservice pod needs."""
TRANSIENT = frozenset({502, 503, 504})
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
"""Methods whose repetition changes nothing more (RFC 9110 section 9.2.2): the only ones sent again
after GitLab may have acted on them."""
THROTTLED = 429
"""Rack::Attack and the API's rate limits answer it before acting, with `Retry-After` in seconds
(lib/api/helpers.rb `too_many_requests!`: a minute by default), so even a POST may be sent again."""
RETRY_AFTER_MAX = 60.0
"""The longest `Retry-After` honoured: GitLab's throttles count over periods of a minute."""
MOVED = frozenset({301, 302, 307, 308})
REDACT_MIN_LENGTH = 4
"""Request strings shorter than this are left in error messages (hiding "*" or "main" only garbles them)."""
TIMEOUT_SECONDS = 60
"""Per request: a commit of a whole project's files is the slowest call."""
PLAIN_PULUMI = 'the plain `pulumi` commands need `eval "$(uv run blueprint env)"` in that shell first'
"""What every message that names a plain `pulumi` command adds: blueprint's state passphrase."""


class GitLabApiError(Exception):
    """GitLab refused a request, or could not be reached; `status` is None for the latter."""

    def __init__(self, method: str, path: str, status: int | None, detail: str) -> None:
        self.status = status
        answer = f"HTTP {status}" if status is not None else "no answer"
        super().__init__(f"GitLab: {method} /api/v4{path} failed ({answer}): {detail}")

    @property
    def unanswered(self) -> bool:
        """GitLab itself gave no answer: it could not be reached, the CA file to check it against is
        missing, or only its gateway answered (502/503/504, GitLab restarting) until the retries ran
        out. Nothing can be told then about what GitLab holds.
        """
        return self.status is None or self.status in TRANSIENT


def missing_ca_file(ca_file: str) -> str | None:
    """What to do about a missing CA file, or None when it is there. `requests` would raise a bare
    OSError for it ("Could not find a suitable TLS CA certificate bundle").
    """
    if Path(ca_file).is_file():
        return None
    return (
        f"the CA certificate {ca_file} that GitLab's certificate is checked against is missing. Write it again from "
        f"phase2's output: `pulumi stack output -s phase2 caCertPem > {shlex.quote(ca_file)}` (`-s dev` in the dev stack; "
        f"{PLAIN_PULUMI}), then re-run."
    )


def encode(id_or_path: object) -> str:
    """An id, or a full path URL-encoded as one path segment (`blueprint-apps%2Fguestbook`)."""
    return quote(str(id_or_path), safe="")


@dataclass(frozen=True)
class Connection:
    """Where GitLab is and how to call it, as the Args of every GitLab dynamic resource take it."""

    url: str
    """GitLab's external URL, `https://gitlab.<domain>`."""
    token: pulumi.Input[str]
    """The admin token (secret)."""
    ca_file: pulumi.Input[str]
    """The CA file on this machine that signs GitLab's certificate."""

    def props(self) -> dict[str, Any]:
        """The wire properties `GitLab.of` reads (the token kept secret)."""
        return {"gitlab_url": self.url, "token": pulumi.Output.secret(self.token), "ca_file": self.ca_file}


CONNECTION = ("gitlab_url", "token", "ca_file")
"""The wire keys of a `Connection`."""


def wire(args: Any, version: str, *outputs: str) -> dict[str, Any]:
    """A GitLab resource's properties from its Args: the connection's, every other field (tuples
    as lists), the provider's version, and its outputs seeded with None (only keys present get one).
    """
    fields = {item.name: getattr(args, item.name) for item in dataclasses.fields(args) if item.name != "connection"}
    fields = {key: list(value) if isinstance(value, tuple) else value for key, value in fields.items()}
    return {**args.connection.props(), **fields, "provider_version": version, **dict.fromkeys(outputs)}


def session(token: str, ca_file: str) -> requests.Session:
    """A session that sends `token` to GitLab and trusts `ca_file` alone (providers/http.py)."""
    return http.session(ca_file=ca_file, headers={"PRIVATE-TOKEN": token})


@dataclass(frozen=True)
class GitLab:
    """A client for one GitLab, from one call's properties."""

    url: str
    token: str = field(repr=False)
    ca_file: str
    secrets: tuple[str, ...] = field(default=(), repr=False)
    """Further values no error may show: the runner's token, when the call's properties hold it."""

    @classmethod
    def of(cls, props: Mapping[str, Any]) -> GitLab:
        secrets = tuple(str(props[key]) for key in ("authentication_token",) if props.get(key))
        return cls(str(props["gitlab_url"]).rstrip("/"), str(props["token"]), str(props["ca_file"]), secrets)

    @cached_property
    def _session(self) -> requests.Session:
        return session(self.token, self.ca_file)

    def send(self, method: str, path: str, *, params: Mapping[str, Any] | None = None, body: Any = None) -> Any:
        """The `requests` response to one call (retried while transient, never redirected); raises
        on a refusal, except 404 and a redirect, which callers decide about.
        """
        import requests

        if self.url.startswith("https://") and (problem := missing_ca_file(self.ca_file)):
            raise GitLabApiError(method, path, None, problem)

        def attempt() -> requests.Response:
            try:
                response = self._session.request(method, f"{self.url}/api/v4{path}", params=params, json=body, timeout=TIMEOUT_SECONDS)
            except (requests.ConnectionError, requests.Timeout) as error:
                unreachable = f"cannot reach {self.url} ({type(error).__name__})"
                if method not in IDEMPOTENT and not _never_sent(error):
                    raise GitLabApiError(method, path, None, unreachable) from error
                raise poll.NotYet(unreachable) from error
            if response.status_code == THROTTLED:
                raise poll.NotYet("throttled", outcome=response, pause=_retry_after(response))
            if response.status_code in TRANSIENT and method in IDEMPOTENT:
                raise poll.NotYet(f"HTTP {response.status_code}", outcome=response)
            return response

        try:
            response = poll.retry(attempt, RETRY_PAUSES)
        except poll.NotYet as gave_up:
            if gave_up.outcome is None:
                raise GitLabApiError(method, path, None, str(gave_up)) from gave_up.__cause__
            response = gave_up.outcome
        if response.status_code >= 400 and response.status_code != 404:
            raise GitLabApiError(method, path, response.status_code, self._short(response.text, body))
        if response.status_code == 404 and not _gitlabs_own(response):
            # Envoy answers 404, empty, for a route it does not have yet (GitLab being replaced):
            # that says nothing of what GitLab holds, and must not drop anything from state.
            raise GitLabApiError(method, path, None, "the gateway answered 404 for GitLab, which did not answer itself")
        return response

    def call(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        missing_ok: bool = False,
    ) -> Any:
        """The decoded answer (None when it has no body). A 404 is None with `missing_ok`, an error
        otherwise. A GET that GitLab redirects (a renamed project's old path) is sent once more,
        to where it points, when that is this GitLab; a redirect elsewhere is an error.
        """
        response = self.send(method, path, params=params, body=body)
        if response.status_code in MOVED and method == "GET":
            response = self.send("GET", self._moved(path, response))
        if response.status_code == 404 or response.status_code in MOVED:
            if missing_ok:
                return None
            raise GitLabApiError(method, path, response.status_code, self._short(response.text, body))
        return response.json() if response.content else None

    def _moved(self, path: str, response: Any) -> str:
        """The API path a redirect points to, if it points to this GitLab's API."""
        location, here = urlsplit(str(response.headers.get("Location", ""))), urlsplit(self.url)
        api = f"{here.path}/api/v4"
        if (location.scheme, location.netloc) != (here.scheme, here.netloc) or not location.path.startswith(f"{api}/"):
            where = f"{location.scheme}://{location.netloc}" if location.netloc else "nowhere"
            raise GitLabApiError("GET", path, response.status_code, f"redirected to {where}, not to {self.url}: not followed")
        return location.path.removeprefix(api) + (f"?{location.query}" if location.query else "")

    def get(self, path: str, **params: Any) -> Any:
        return self.call("GET", path, params=params)

    def find(self, path: str, **params: Any) -> Any:
        """What `path` holds, or None when GitLab has nothing there."""
        return self.call("GET", path, params=params, missing_ok=True)

    def post(self, path: str, body: Any = None) -> Any:
        return self.call("POST", path, body=body or {})

    def put(self, path: str, body: Any, **params: Any) -> Any:
        return self.call("PUT", path, params=params, body=body)

    def delete(self, path: str, **params: Any) -> None:
        """Delete what `path` holds; nothing there is done already."""
        self.call("DELETE", path, params=params, missing_ok=True)

    def pages(self, path: str, **params: Any) -> Iterator[Any]:
        """Every item of a paginated list (GitLab's `X-Next-Page` header; 100 a page, its maximum)."""
        page = "1"
        while page:
            response = self.send("GET", path, params={**params, "per_page": 100, "page": page})
            if response.status_code == 404:
                raise GitLabApiError("GET", path, 404, self._short(response.text))
            yield from response.json()
            page = response.headers.get("X-Next-Page", "")

    def _short(self, text: str, body: Any = None) -> str:
        """The start of an answer's body, with the token, our other secrets and every string the
        request sent (as sent, and as JSON would echo it) replaced by `[secret]`.
        """
        for value in sorted({self.token, *self.secrets, *_strings(body)} - {""}, key=len, reverse=True):
            text = text.replace(value, "[secret]").replace(json.dumps(value)[1:-1], "[secret]")
        return " ".join(text.split())[:200] or "(empty body)"


def _strings(body: Any) -> Iterator[str]:
    """Every string value in a request body, at any depth, of REDACT_MIN_LENGTH characters or more."""
    if isinstance(body, str):
        if len(body) >= REDACT_MIN_LENGTH:
            yield body
    elif isinstance(body, Mapping):
        for value in body.values():
            yield from _strings(value)
    elif isinstance(body, list | tuple):
        for value in body:
            yield from _strings(value)


def _retry_after(response: Any) -> float | None:
    """The pause a 429 asks for (`Retry-After` in seconds, at most RETRY_AFTER_MAX), if it names one."""
    named = str(response.headers.get("Retry-After", "")).strip()
    return min(float(named), RETRY_AFTER_MAX) if named.isdigit() else None


def _gitlabs_own(response: Any) -> bool:
    """Whether a 404 is GitLab's own answer: a JSON body with its `message` or `error`."""
    try:
        body = response.json()
    except ValueError:
        return False
    return isinstance(body, dict) and bool(body.get("message") or body.get("error"))


def _never_sent(error: Exception) -> bool:
    """Whether a failed request never reached the server (so even a POST may be sent again)."""
    import requests
    import urllib3

    reason = getattr(error.args[0], "reason", None) if error.args else None
    return isinstance(error, requests.ConnectTimeout) or isinstance(reason, urllib3.exceptions.NewConnectionError)
