"""The one way blueprint talks HTTP: to the laptop's own services, with a credential, nothing else.

`session` builds every `requests` session: nothing from the environment (a proxy would see the
credential; `REQUESTS_CA_BUNDLE` would outrank our CA), no redirect followed (`requests` re-sends
custom headers such as `PRIVATE-TOKEN` to any host a redirect names), and `ca_file` the only trust.
`send` sends one request through it, again while what failed may pass in seconds, and says in one
sentence, with the fix, why nothing answered. Callers: the GitLab client (providers/gitlab_api.py),
OpenBao's (providers/openbao_api.py, openbao_kv.py), phase3's pre-flight, `blueprint status`. Why
this way: docs/design/decisions.md, entry 36.

`requests` is imported at the call: the engine's provider host imports the providers by reference,
and an import must do nothing (tests/providers/test_import_safety.py).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from providers import poll
from providers.cluster_access import ForwardError, Forwards, Target

if TYPE_CHECKING:
    import requests

TRANSIENT = frozenset({502, 503, 504})
"""A gateway's answer while the service behind it restarts."""
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
"""Methods whose repetition changes nothing more (RFC 9110 section 9.2.2): the only ones sent again
after the service may have acted on them."""
THROTTLED = 429
"""Answered before acting (GitLab's Rack::Attack and rate limits, with `Retry-After` in seconds:
lib/api/helpers.rb `too_many_requests!`), so even a POST may be sent again."""
RETRY_AFTER_MAX = 60.0
"""The longest `Retry-After` honoured: GitLab's throttles count over periods of a minute."""
PLAIN_PULUMI = 'the plain `pulumi` commands need `eval "$(uv run blueprint env)"` in that shell first'
"""What every message that names a plain `pulumi` command adds: blueprint's state passphrase."""


class NoAnswer(Exception):
    """A request got no HTTP answer; the message says why, and what to do, in one sentence."""


class Unverified(NoAnswer):
    """What answered has no certificate our CA vouches for, for the name asked: nothing was sent to it."""


def missing_ca_file(ca_file: str) -> str | None:
    """What to do about a missing CA file, or None when it is there."""
    if Path(ca_file).is_file():
        return None
    return (
        f"the CA certificate {ca_file} that the platform's certificates are checked against is missing. Write it again from "
        f"phase2's output: `pulumi stack output -s phase2 caCertPem > {shlex.quote(ca_file)}` (`-s dev` in the dev stack; "
        f"{PLAIN_PULUMI}), then re-run."
    )


def session(
    *,
    ca_file: str | None = None,
    headers: Mapping[str, str] | None = None,
    server_name: str | None = None,
    forward: Target | None = None,
) -> requests.Session:
    """A session that sends `headers` with every request, trusts `ca_file` (when named) alone and
    follows no redirect. With `server_name`, every TLS connection asks for that name (SNI) and checks
    the certificate against it, whatever host the URL names: OpenBao is reached at 127.0.0.1 and
    proves to be `openbao.<domain>` (urllib3's `server_hostname` and `assert_hostname`, pool keys of
    its PoolManager). With `forward` (an existing cluster), every request goes through a
    `kubectl port-forward` to that Service (providers/cluster_access.py), with the URL's host as its
    `Host` and, unless `server_name` says otherwise, as the name TLS asks for and checks, and the
    forward stops when the session closes. A CA file named but missing is a NoAnswer
    saying how to write it again (`requests` would raise a bare OSError at the first https request).
    """
    import requests

    if ca_file is not None and (problem := missing_ca_file(ca_file)):
        raise NoAnswer(problem)
    made = requests.Session()
    if forward is not None:
        through = _through(forward)
        made.mount("https://", through)
        made.mount("http://", through)
    # A redirect ends at its 3xx answer, whatever `allow_redirects` a caller passes.
    made.get_redirect_target = lambda _response: None  # type: ignore[method-assign,assignment]
    made.trust_env = False
    if ca_file is not None:
        made.verify = ca_file
    if server_name is not None:
        pools = made.get_adapter("https://").poolmanager.connection_pool_kw  # type: ignore[attr-defined]
        pools.update(server_hostname=server_name, assert_hostname=server_name)
    made.headers.update(headers or {})
    return made


def _through(target: Target) -> requests.adapters.HTTPAdapter:
    """An adapter that sends each request to the local end of a port-forward to `target`."""
    import requests
    from requests.adapters import HTTPAdapter

    class Through(HTTPAdapter):
        def __init__(self) -> None:
            super().__init__()
            self.forwards = Forwards(target)

        def build_connection_pool_key_attributes(self, request: Any, *args: Any, **kwargs: Any) -> Any:
            # The URL now names 127.0.0.1: TLS must still ask for (SNI) and check the URL's own host,
            # unless the session named another (`server_name`, kept in the pool manager's keywords).
            host, pool = super().build_connection_pool_key_attributes(request, *args, **kwargs)
            name = getattr(request, "forwarded_host", None)
            if host.get("scheme") == "https" and name and "server_hostname" not in self.poolmanager.connection_pool_kw:
                pool = {**pool, "server_hostname": name, "assert_hostname": name}  # type: ignore[typeddict-unknown-key]
            return host, pool

        def send(self, request: Any, *args: Any, **kwargs: Any) -> Any:
            parts = urlsplit(request.url)
            request.forwarded_host = parts.hostname
            port = self.forwards.port()
            request.headers["Host"] = parts.netloc  # what routes it at Envoy; the URL's own host is kept
            request.url = urlunsplit(parts._replace(netloc=f"127.0.0.1:{port}"))
            try:
                return super().send(request, *args, **kwargs)
            except requests.ConnectionError:
                # kubectl outlives the pod it forwards to (kubernetes/kubernetes#67059) and fails every
                # connection: the next attempt starts a new forward, which finds the Service's pod again.
                self.forwards.close()
                raise

        def close(self) -> None:
            super().close()
            self.forwards.close()

    return Through()


def send(
    asking: requests.Session, method: str, url: str, *, timeout: float, pauses: Iterable[float] = (), hosts_line: str = "", **request: Any
) -> requests.Response:
    """The answer to one request (any status; `request`: what `requests` takes besides), sent again
    after each of `pauses` while it may pass: a refused connection or a timeout (a method that is
    not IDEMPOTENT only when the request never left), a throttled request (after its `Retry-After`)
    and an idempotent one's gateway error (the last one is the answer). No answer is a NoAnswer
    saying why; a name that does not resolve names the `/etc/hosts` line (`hosts_line`, else the
    name's own), a certificate our CA does not vouch for the CA file; neither is tried again.
    """
    import requests

    parts = urlsplit(url)
    host = parts.hostname or url
    where = f"{host}:{parts.port or (443 if parts.scheme == 'https' else 80)}"

    def attempt() -> requests.Response:
        try:
            response = asking.request(method, url, timeout=timeout, **request)
        except ForwardError as error:  # nothing was sent: a pod not ready yet may be by the next attempt
            raise poll.NotYet(str(error)) from None
        except (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError) as error:
            reason = getattr(error.args[0], "reason", None) if error.args else None
            if (final := _final(reason, host, str(asking.verify), hosts_line)) is not None:
                raise (Unverified if _unverified(reason) else NoAnswer)(final) from None
            if isinstance(error, requests.Timeout):  # a ConnectTimeout is a ConnectionError too
                why = f"{host} gave no answer within {timeout:g}s"
            elif isinstance(error, requests.exceptions.ChunkedEncodingError):
                why = f"the answer from {where} broke off"
            elif forwards := getattr(asking.get_adapter(url), "forwards", None):
                why = f"nothing answers through the port-forward to {forwards.target}: is its pod running?"
            else:
                why = f"nothing answers at {where}: is the kind cluster running? (`docker ps`)"
            if method not in IDEMPOTENT and not _never_sent(error, reason):
                raise NoAnswer(why) from None
            raise poll.NotYet(why) from None
        if response.status_code == THROTTLED:
            raise poll.NotYet("throttled", outcome=response, pause=_retry_after(response))
        if response.status_code in TRANSIENT and method in IDEMPOTENT:
            raise poll.NotYet(f"HTTP {response.status_code}", outcome=response)
        return response

    try:
        return poll.retry(attempt, pauses)
    except poll.NotYet as gave_up:
        if gave_up.outcome is None:
            raise NoAnswer(str(gave_up)) from None
        outcome: requests.Response = gave_up.outcome  # a gateway's answer is an answer: the caller names it
        return outcome


def _final(reason: object, host: str, ca_file: str, hosts_line: str) -> str | None:
    """Why there is no answer, when waiting cannot change it: a name that does not resolve, a
    certificate our CA does not vouch for (not any TLS failure: a gateway starting up drops the
    handshake, which passes).
    """
    import urllib3

    if isinstance(reason, urllib3.exceptions.NameResolutionError):
        hosts = "/etc/hosts (C:\\Windows\\System32\\drivers\\etc\\hosts on Windows)"
        return f"{host} does not resolve on this machine: add this line to {hosts}: {hosts_line or f'127.0.0.1 {host}'}"
    if _unverified(reason):
        return (
            f"{host}'s certificate does not verify against our CA {ca_file}: that file is not phase2's CA (write it again: "
            f"`pulumi stack output -s phase2 caCertPem > {shlex.quote(ca_file)}`), or the gateway serves another certificate "
            f"(`kubectl -n gitlab get secrets`)"
        )
    return None


def unverified(error: BaseException) -> bool:
    """Whether `requests` failed on a certificate our CA does not vouch for, for the name asked."""
    return _unverified(getattr(error.args[0], "reason", None) if error.args else None)


def _unverified(reason: object) -> bool:
    """Whether the handshake failed on a certificate our CA does not vouch for, for the name asked."""
    import ssl

    import urllib3
    from urllib3.util.ssl_match_hostname import CertificateError

    cause = reason.args[0] if isinstance(reason, urllib3.exceptions.SSLError) and reason.args else None
    # The second: a certificate of our CA for another name than `server_name` (urllib3's own check).
    return isinstance(cause, ssl.SSLCertVerificationError | CertificateError)


def _never_sent(error: Exception, reason: object) -> bool:
    """Whether a failed request never reached the server (so even a POST may be sent again)."""
    import requests
    import urllib3

    return isinstance(error, requests.ConnectTimeout) or isinstance(reason, urllib3.exceptions.NewConnectionError)


def _retry_after(response: Any) -> float | None:
    """The pause a 429 asks for (`Retry-After` in seconds, at most RETRY_AFTER_MAX), if it names one."""
    named = str(response.headers.get("Retry-After", "")).strip()
    # ASCII digits alone: str.isdigit() also takes '²', which float() refuses.
    return min(float(named), RETRY_AFTER_MAX) if named.isascii() and named.isdigit() else None
