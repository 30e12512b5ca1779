"""The one small client for GitLab's REST API: every GitLab dynamic provider and phase3's pre-flight.

A `GitLab` is built per call from a resource's wire properties (`gitlab_url`, `token`, `ca_file`):
the providers are pickled by reference and keep nothing on `self`. It sends the token as
`PRIVATE-TOKEN` through providers/http.py (our CA alone, nothing from the environment, no redirect
followed, what is transient sent again after `pauses`), follows `X-Next-Page` pagination, and
follows GitLab's one redirect, a renamed project's old path (lib/api/helpers.rb `find_project!`),
itself, on GitLab's own host only. A request that GitLab may have acted on (a POST after a gateway
error) is not sent again: the caller, which knows what it makes, looks for it first (the
get-or-create providers adopt on proof, gitlab_pipeline looks for the commit's pipeline).

Every failure is a `GitLabApiError` naming the method, the path, the status and the start of the
body, never the token nor a string value the request sent (a variable's value, say), which a
refusal may echo. Why this way: docs/design/decisions.md, entry 36.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

import pulumi

from providers import http
from providers.cluster_access import TARGET_KEY, Target, target_of

if TYPE_CHECKING:
    import requests

RETRY_PAUSES = (1.0, 2.0, 4.0, 8.0)
"""Seconds between attempts: five in all, about 15 s, what a restarting webservice pod needs."""
MOVED = frozenset({301, 302, 307, 308})
REDACT_MIN_LENGTH = 4
"""Request strings shorter than this are left in error messages (hiding "*" or "main" only garbles them)."""
MAX_PAGES = 1000
"""Pages of a list `pages` reads at most (100,000 items): far more than any list blueprint makes."""
TIMEOUT_SECONDS = 60.0
"""Per request: a commit of a whole project's files is the slowest call."""


class GitLabApiError(Exception):
    """GitLab refused a request, or could not be reached; `status` is None for the latter."""

    def __init__(self, method: str, path: str, status: int | None, detail: str, *, gateway: int | None = None) -> None:
        self.status = status
        self.detail = detail
        """Why, without the call: what the pre-flight quotes."""
        self.gateway = gateway if gateway is not None else (status if status in http.TRANSIENT else None)
        """The status GitLab's gateway answered in GitLab's stead: 502-504, or a 404 of its own."""
        answer = f"HTTP {status}" if status is not None else "no answer"
        super().__init__(f"GitLab: {method} /api/v4{path} failed ({answer}): {detail}")

    @property
    def unanswered(self) -> bool:
        """GitLab itself gave no answer: it could not be reached, the CA file to check it against is
        missing, or only its gateway answered (502/503/504, GitLab restarting) until the retries ran
        out. Nothing can be told then about what GitLab holds.
        """
        return self.status is None or self.gateway is not None


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
    forward: Target | None = None
    """On an existing cluster, Envoy's Service, which GitLab is reached through with a port-forward
    (providers/cluster_access.py) before any DNS record names it; None on kind."""

    def props(self) -> dict[str, Any]:
        """The wire properties `GitLab.of` reads (the token kept secret); the forward's only when there is one."""
        forward = {TARGET_KEY: self.forward.wire()} if self.forward else {}
        return {"gitlab_url": self.url, "token": pulumi.Output.secret(self.token), "ca_file": self.ca_file, **forward}


CONNECTION = ("gitlab_url", "token", "ca_file", TARGET_KEY)
"""The wire keys of a `Connection`."""


def wire(args: Any, version: str, *outputs: str) -> dict[str, Any]:
    """A GitLab resource's properties from its Args: the connection's, every other field (tuples
    as lists), the provider's version, and its outputs seeded with None (only keys present get one).
    """
    fields = {item.name: getattr(args, item.name) for item in dataclasses.fields(args) if item.name != "connection"}
    fields = {key: list(value) if isinstance(value, tuple) else value for key, value in fields.items()}
    return {**args.connection.props(), **fields, "provider_version": version, **dict.fromkeys(outputs)}


@dataclass(frozen=True)
class GitLab:
    """A client for one GitLab, from one call's properties."""

    url: str
    token: str = field(repr=False)
    ca_file: str
    """Our CA, the only trust over https (a GitLab over plain http, the tests' stub, needs none)."""
    secrets: tuple[str, ...] = field(default=(), repr=False)
    """Further values no error may show: the runner's token, when the call's properties hold it."""
    timeout: float = field(default=TIMEOUT_SECONDS, kw_only=True)
    """Seconds one request waits for its answer."""
    pauses: tuple[float, ...] = field(default=RETRY_PAUSES, kw_only=True)
    """Seconds between the attempts of a request that failed in a way that may pass."""
    hosts_line: str = field(default="", kw_only=True)
    """The `/etc/hosts` line a name that does not resolve asks for; "": GitLab's own."""
    forward: Target | None = field(default=None, kw_only=True)
    """The port-forward every request goes through (an existing cluster), or None."""

    @classmethod
    def of(cls, props: Mapping[str, Any], **options: Any) -> GitLab:
        """The client of a resource's wire properties; `options`: the keyword-only fields."""
        secrets = tuple(str(props[key]) for key in ("authentication_token",) if props.get(key))
        options = {"forward": target_of(props), **options}
        return cls(str(props["gitlab_url"]).rstrip("/"), str(props["token"]), str(props["ca_file"]), secrets, **options)

    @cached_property
    def _session(self) -> requests.Session:
        ca_file = self.ca_file if self.url.startswith("https://") else None
        # Through a forward, http.session's TLS still asks for GitLab's name and checks the certificate for it.
        return http.session(ca_file=ca_file, headers={"PRIVATE-TOKEN": self.token}, forward=self.forward)

    def send(self, method: str, path: str, *, params: Mapping[str, Any] | None = None, body: Any = None) -> Any:
        """The `requests` response to one call (providers/http.py `send`: retried while transient,
        never redirected); raises on a refusal, except 404 and a redirect, which callers decide about.
        """
        try:
            response = http.send(
                self._session, method, f"{self.url}/api/v4{path}", timeout=self.timeout, pauses=self.pauses,
                hosts_line=self.hosts_line, params=params, json=body,
            )  # fmt: skip
        except http.NoAnswer as error:
            raise GitLabApiError(method, path, None, str(error)) from None
        if response.status_code >= 400 and response.status_code != 404:
            raise GitLabApiError(method, path, response.status_code, self._short(response.text, body))
        if response.status_code == 404 and not _gitlabs_own(response):
            # Envoy answers 404, empty, for a route it does not have yet (GitLab being replaced):
            # that says nothing of what GitLab holds, and must not drop anything from state.
            raise GitLabApiError(method, path, None, "the gateway answered 404 for GitLab, which did not answer itself", gateway=404)
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
        return _decoded(method, path, response) if response.content else None

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
        """Every item of a paginated list (GitLab's `X-Next-Page` header; 100 a page, its maximum). A
        next page that is not after this one, or past MAX_PAGES, is an error, never a request more.
        """
        page = 1
        while True:
            response = self.send("GET", path, params={**params, "per_page": 100, "page": page})
            if response.status_code == 404:
                raise GitLabApiError("GET", path, 404, self._short(response.text))
            yield from _decoded("GET", path, response)
            named = str(response.headers.get("X-Next-Page", "")).strip()
            if not named:
                return
            following = int(named) if named.isascii() and named.isdigit() else 0
            if not page < following <= MAX_PAGES:
                why = f"past the {MAX_PAGES} pages blueprint reads" if following > page else "not a page after it"
                detail = f"after page {page}, the answer names page {named[:20]!r} as the next one, {why}: the list was not read whole"
                raise GitLabApiError("GET", path, None, detail)
            page = following

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


def _gitlabs_own(response: Any) -> bool:
    """Whether a 404 is GitLab's own answer: a JSON body with its `message` or `error`."""
    try:
        body = response.json()
    except ValueError:
        return False
    return isinstance(body, dict) and bool(body.get("message") or body.get("error"))


def _decoded(method: str, path: str, response: Any) -> Any:
    """An answer's JSON. GitLab's API answers nothing else: another body is not GitLab's (a page
    of something else on its port), so it tells nothing of what GitLab holds.
    """
    try:
        return response.json()
    except ValueError:
        raise GitLabApiError(method, path, None, f"the answer (HTTP {response.status_code}) is not GitLab's JSON") from None
