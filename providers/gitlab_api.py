"""The one small client for GitLab's REST API that every GitLab dynamic provider uses.

A `GitLab` is built per call from a resource's wire properties (`gitlab_url`, `token`,
`ca_file`): the providers are pickled by reference and keep nothing on `self`. It sends the token
as `PRIVATE-TOKEN`, trusts the CA file, follows `X-Next-Page` pagination, and retries what is
transient: a gateway answer while GitLab restarts (502, 503, 504), a timeout, a refused
connection. A POST is retried only when it never reached GitLab (the connection was refused or
timed out): after a gateway error GitLab may have acted on it, and our callers get or create, so
the next `up` adopts what a lost answer made instead of making it twice.

Every failure is a `GitLabApiError` naming the method, the path, the status and the start of the
body, never the token.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pulumi

RETRY_PAUSES = (1.0, 2.0, 4.0, 8.0)
"""Seconds between attempts: five in all, about 15 s, what a restarting webservice pod needs."""
TRANSIENT = frozenset({502, 503, 504})
MOVED = frozenset({301, 302, 307, 308})
TIMEOUT_SECONDS = 60
"""Per request: a commit of a whole project's files is the slowest call."""


class GitLabApiError(Exception):
    """GitLab refused a request, or could not be reached; `status` is None for the latter."""

    def __init__(self, method: str, path: str, status: int | None, detail: str) -> None:
        self.status = status
        answer = f"HTTP {status}" if status is not None else "no answer"
        super().__init__(f"GitLab: {method} /api/v4{path} failed ({answer}): {detail}")


def missing_ca_file(ca_file: str) -> str | None:
    """What to do about a missing CA file, or None when it is there. `requests` would raise a bare
    OSError for it ("Could not find a suitable TLS CA certificate bundle").
    """
    if Path(ca_file).is_file():
        return None
    return (
        f"the CA certificate {ca_file} that GitLab's certificate is checked against is missing. Write it again from "
        f"phase2's output: `pulumi stack output -s phase2 caCertPem > {ca_file}` (`-s dev` in the dev stack), then re-run."
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


@dataclass(frozen=True)
class GitLab:
    """A client for one GitLab, from one call's properties."""

    url: str
    token: str = field(repr=False)
    ca_file: str

    @classmethod
    def of(cls, props: Mapping[str, Any]) -> GitLab:
        return cls(str(props["gitlab_url"]).rstrip("/"), str(props["token"]), str(props["ca_file"]))

    @cached_property
    def _session(self) -> Any:
        import requests  # not at import time: the provider host imports this module first

        session = requests.Session()
        session.headers["PRIVATE-TOKEN"] = self.token
        session.verify = self.ca_file
        return session

    def send(self, method: str, path: str, *, params: Mapping[str, Any] | None = None, body: Any = None, follow: bool = True) -> Any:
        """The `requests` response to one call (retried while transient); raises on a refusal,
        except 404 and (with `follow=False`) a redirect, which callers decide about.
        """
        import requests

        if self.url.startswith("https://") and (problem := missing_ca_file(self.ca_file)):
            raise GitLabApiError(method, path, None, problem)
        for pause in (*RETRY_PAUSES, None):
            try:
                response = self._session.request(
                    method, f"{self.url}/api/v4{path}", params=params, json=body, timeout=TIMEOUT_SECONDS, allow_redirects=follow
                )
            except (requests.ConnectionError, requests.Timeout) as error:
                if pause is None or (method == "POST" and not _never_sent(error)):
                    raise GitLabApiError(method, path, None, f"cannot reach {self.url} ({type(error).__name__})") from error
            else:
                retry = response.status_code in TRANSIENT and method != "POST"
                if not retry or pause is None:
                    break
            time.sleep(pause)
        if response.status_code >= 400 and response.status_code != 404:
            raise GitLabApiError(method, path, response.status_code, self._short(response.text))
        return response

    def call(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        missing_ok: bool = False,
        follow: bool = True,
    ) -> Any:
        """The decoded answer (None when it has no body). A 404 is None with `missing_ok`, an error
        otherwise; so is a redirect with `follow=False` (a path GitLab only redirects from, such as a
        renamed project's old one, holds nothing).
        """
        response = self.send(method, path, params=params, body=body, follow=follow)
        if response.status_code == 404 or response.status_code in MOVED:
            if missing_ok:
                return None
            raise GitLabApiError(method, path, response.status_code, self._short(response.text))
        return response.json() if response.content else None

    def get(self, path: str, **params: Any) -> Any:
        return self.call("GET", path, params=params)

    def find(self, path: str, **params: Any) -> Any:
        """What `path` holds, or None when GitLab has nothing there."""
        return self.call("GET", path, params=params, missing_ok=True, follow=False)

    def post(self, path: str, body: Any = None) -> Any:
        return self.call("POST", path, body=body or {})

    def put(self, path: str, body: Any) -> Any:
        return self.call("PUT", path, body=body)

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

    def _short(self, text: str) -> str:
        return " ".join(text.replace(self.token, "[secret]").split())[:200] or "(empty body)"


def _never_sent(error: Exception) -> bool:
    """Whether a failed request never reached the server (so even a POST may be sent again)."""
    import requests
    import urllib3

    reason = getattr(error.args[0], "reason", None) if error.args else None
    return isinstance(error, requests.ConnectTimeout) or isinstance(reason, urllib3.exceptions.NewConnectionError)
