"""The checks of what answers from this laptop: TLS at every host, the CA in the system store,
OpenBao (unsealed, its logins, every KV path `blueprint secrets` lists, no root token), GitLab (its
API and token, the group and projects, SSH's banner), the Runners, the pipelines, the apps and
Headlamp. They reuse the providers' own clients (providers/http.py, openbao_api.py, gitlab_api.py)
and their port-forwards on an existing cluster (providers/cluster_access.py).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from cli.verify.checks import UP, Platform
from cli.verify.model import Verdict, at_once, failed, passed, warned
from stacks import outputs

TLS, CA_TRUST, SSH = "TLS certificates", "CA in the system store", "GitLab SSH"
OPENBAO, OPENBAO_LOGINS, OPENBAO_KV, OPENBAO_ROOT = "OpenBao unsealed", "OpenBao logins", "OpenBao KV paths", "OpenBao root token"
GITLAB_API, GITLAB_TOKEN, GITLAB_PROJECTS = "GitLab API", "GitLab admin token", "GitLab group and projects"
CI_VARIABLES = "CI variables"
RUNNERS, PIPELINES, APPS, HEADLAMP = "Runners", "pipelines", "apps", "Headlamp"
TIMEOUT = 10.0
TOKEN_WARN_DAYS = 14
"""A token that expires sooner is a warning: `blueprint up` renews it in its last week."""
EXPIRY_WARN_DAYS = 30
"""A certificate that expires sooner is a warning: `blueprint up` renews the platform's own in their
last 30 days (components/tls.py EARLY_RENEWAL_HOURS), so one seen there had no `up` since; a brought
one (blueprint:tlsCertificate), which blueprint never renews, then has a month left to be renewed."""


@dataclass(frozen=True)
class Answer:
    status: int | None
    """The HTTP status, or None: no answer (`said` says why)."""
    body: Any = None
    said: str = ""


def ask(
    url: str, *, ca_file: str | None = None, headers: Mapping[str, str] | None = None, server_name: str | None = None, forward: Any = None
) -> Answer:
    """One GET through providers/http.py (our CA alone, no redirect, through `forward` on an existing cluster)."""
    import requests

    from providers import http
    from providers.cluster_access import Target

    through = Target.of(forward) if forward else None
    https = url.startswith("https://")
    try:
        with http.session(
            ca_file=ca_file if https else None, headers=headers, server_name=server_name if https else None, forward=through
        ) as asking:
            response = http.send(asking, "GET", url, timeout=TIMEOUT)
    except http.NoAnswer as error:
        return Answer(None, said=str(error))
    try:
        body = response.json() if "json" in response.headers.get("Content-Type", "") else None
    except (requests.RequestException, ValueError):
        body = None
    return Answer(response.status_code, body, f"HTTP {response.status_code}")


def dial(host: str, port: int) -> socket.socket:
    """A TCP connection to `host`:`port` as this machine resolves it (the tests point it at loopback)."""
    return socket.create_connection((host, port), timeout=TIMEOUT)


def _phase2(platform: Platform) -> Mapping[str, Any]:
    return platform.of("phase2")


def gateway_ca(platform: Platform) -> str:
    """What verifies the names the gateway serves (GitLab, its registry, the apps, Headlamp): the brought
    certificate's issuer with `blueprint:tlsCertificate`, else the platform CA (`outputs.gateway_ca_file`).
    OpenBao is served by the platform CA in both cases (`_openbao_props`).
    """
    return str(outputs.gateway_ca_file(_phase2(platform)))


def _brought(platform: Platform) -> bool:
    """Whether the gateway serves the user's own certificate (blueprint:tlsCertificate)."""
    return bool(_phase2(platform).get(outputs.GATEWAY_CA_FILE))


def _hosts(platform: Platform) -> list[tuple[str, int]]:
    """Every https host the platform serves: GitLab, its registry, KAS (`kas.<domain>`: the chart's
    `kas-web` listener, components/gitlab_gateway.py CHART_TLS_LISTENERS), each app (when phase3 is up).
    """
    gitlab = urlsplit(str(_phase2(platform).get(outputs.GITLAB_URL)))
    port = gitlab.port or 443
    registry = str(_phase2(platform).get(outputs.REGISTRY_HOST)).split(":", 1)[0]
    kas = f"kas.{str(gitlab.hostname).partition('.')[2]}"  # GitLab is gitlab.<domain> (components/gitlab.py)
    apps = [urlsplit(str(url)).hostname or "" for _, url in sorted((platform.of("phase3").get(outputs.APP_URLS) or {}).items())]
    return [(str(gitlab.hostname), port), (registry, port), (kas, port), *((app, port) for app in apps if app)]


@contextlib.contextmanager
def _connected(platform: Platform, host: str, port: int, *, service_port: int | None = None) -> Iterator[socket.socket]:
    """A TCP connection to `host`'s `port`: directly (kind), or through a port-forward to the gateway's
    Service (an existing cluster): phase2's `gitlabForward`, its HTTPS port, or `service_port` of it.
    """
    forward = _phase2(platform).get(outputs.GITLAB_FORWARD)
    if not forward:
        with platform.dial(host, port) as connection:
            yield connection
        return
    import dataclasses

    from providers.cluster_access import Target, forwarded

    target = Target.of(forward)
    target = dataclasses.replace(target, port=service_port) if service_port is not None else target
    with (
        (platform.forward or forwarded)(target) as local,
        socket.create_connection(("127.0.0.1", local), timeout=TIMEOUT) as connection,
    ):
        yield connection


def _certificate(platform: Platform, host: str, port: int, context: ssl.SSLContext) -> tuple[str | None, float]:
    """(None, its certificate's expiry in Unix seconds) when `host` proves itself under `context`'s
    trust; else (why not, in a few words, 0).
    """
    try:
        with _connected(platform, host, port) as raw, context.wrap_socket(raw, server_hostname=host) as tls:
            return None, ssl.cert_time_to_seconds(str((tls.getpeercert() or {}).get("notAfter")))
    except ssl.SSLCertVerificationError as error:
        return f"certificate refused ({error.verify_message})", 0
    except (OSError, ssl.SSLError) as error:
        return f"no TLS answer ({type(error).__name__}: {str(error)[:80]})", 0
    except Exception as error:  # a port-forward that did not start
        return f"not reached ({type(error).__name__})", 0


def _expiring(platform: Platform, hosts: list[tuple[str, int]], expiries: list[float], now: float) -> Verdict | None:
    """The warning for the certificates that expire within EXPIRY_WARN_DAYS of `now`, or None."""
    import datetime

    soon = [(host, expiry) for (host, _), expiry in zip(hosts, expiries, strict=True) if expiry - now < EXPIRY_WARN_DAYS * 86400]
    if not soon:
        return None
    said = "; ".join(
        f"{host}: expires {datetime.datetime.fromtimestamp(expiry, datetime.UTC):%Y-%m-%d} ({max(0, int(expiry - now) // 86400)} days)"
        for host, expiry in soon
    )
    if _brought(platform):
        fix = "renew your certificate and put it in the Secret `blueprint:tlsCertificate` names: blueprint never renews it"
        return warned(said, fix)
    return warned(said, f"`{UP} --phase 2` issues new ones: it renews a certificate in its last {EXPIRY_WARN_DAYS} days")


def tls_check(platform: Platform) -> Verdict:
    """Each host's certificate chains to the gateway's CA alone (the platform CA, or the brought
    certificate's issuer), for its name, inside the platform CA's name constraints (OpenSSL checks
    the constraints as it builds the chain).
    """
    from pathlib import Path

    ca = gateway_ca(platform)
    if not Path(ca).is_file():
        if _brought(platform):
            return failed(f"the gateway's CA file {ca} is missing", f"`{UP} --phase 2` writes it again")
        return failed(f"the CA file {ca} is missing", f"`{UP} --phase 2` writes it again")
    context = ssl.create_default_context(cafile=ca)  # with a cafile, that file alone: no system certificate is loaded
    hosts = _hosts(platform)
    said = at_once(lambda hosted: _certificate(platform, hosted[0], hosted[1], context), hosts)
    wrong = [f"{host}: {why}" for (host, _), (why, _) in zip(hosts, said, strict=True) if why]
    if wrong:
        # No cert-manager runs (so no `certificates` type): the certificates are Secrets, listed by
        # type, a field Secrets can be selected by (kubernetes.io, "Field Selectors"); the user's own
        # is in a namespace of theirs.
        where = ("--all-namespaces",) if _brought(platform) else ()
        tls_secrets = ("--field-selector", "type=kubernetes.io/tls")
        served = platform.kubectl_said("get", "secrets", *where, *tls_secrets, namespace="" if where else "gitlab")
        return failed("; ".join(wrong), f"docs/guide/troubleshooting.md; {served} shows what is served")
    if (soon := _expiring(platform, hosts, [expiry for _, expiry in said], time.time())) is not None:
        return soon
    issuer = "your certificate's issuer" if _brought(platform) else "the platform CA"
    return passed(f"{len(hosts)} hosts present a certificate of {issuer} for their name, none expiring within {EXPIRY_WARN_DAYS} days")


def ca_trust_check(platform: Platform) -> Verdict:
    """The system's own trust store takes GitLab's certificate: browsers, git and curl then trust the platform."""
    from cli.doctor.machine import machine_family
    from cli.report import trust_ca_lines

    host, port = _hosts(platform)[0]
    if _certificate(platform, host, port, platform.system_trust())[0] is None:
        return passed(f"the system trusts {host}'s certificate")
    from cli.os_family import MACOS

    ca, family = gateway_ca(platform), machine_family(platform.machine)
    commands = " ".join(line.split(":", 1)[-1].strip() for line in trust_ca_lines(ca, family))
    issuer = f"your certificate's issuer ({ca}) is not in it" if _brought(platform) else "the platform CA is not in it"
    if family.key == MACOS:
        # Python's ssl reads OpenSSL's store, never the Keychain (sethmlarson/truststore#177): a CA the
        # Keychain trusts still lands here, so say so rather than claim it is missing.
        return warned(
            f"Python cannot see the macOS Keychain, so this cannot tell whether it trusts {host}",
            f"open https://{host} in Safari: no warning means the Keychain trusts it; else {commands or 'docs/guide/access.md'}",
        )
    return warned(f"the system store does not trust {host} ({issuer})", commands or "docs/guide/access.md")


def _openbao_props(platform: Platform) -> dict[str, Any]:
    phase2 = _phase2(platform)
    forward = {"forward": phase2[outputs.OPENBAO_FORWARD]} if phase2.get(outputs.OPENBAO_FORWARD) else {}
    return {
        "address": phase2.get(outputs.OPENBAO_ADDR),
        "ca_file": phase2.get(outputs.CA_CERT_FILE),
        "server_name": phase2.get(outputs.OPENBAO_SERVER_NAME),
        "http_timeout": TIMEOUT,
        **forward,
    }


def openbao_check(platform: Platform) -> Verdict:
    from providers.openbao_api import OpenBao

    try:
        seal = OpenBao(_openbao_props(platform)).seal_status()
    except Exception as error:
        return failed(f"OpenBao did not answer: {str(error)[:200]}", f"`uv run blueprint status`; `{UP} --phase 2` unseals it")
    if not seal.get("initialized") or seal.get("sealed"):
        state = "sealed" if seal.get("initialized") else "not initialised"
        return failed(
            f"OpenBao is {state}",
            f"{platform.kubectl_said('logs', 'openbao-0', namespace='openbao')} says why; docs/guide/troubleshooting.md",
        )
    return passed(f"initialised and unsealed (OpenBao {seal.get('version', '?')})")


def _token(platform: Platform, user: str) -> str:
    """A token of OpenBao's `user` (the writer, `blueprint`, or `admin`), logged in with its recorded
    password once for the run (a login costs OpenBao a password hash): by the logins check, which the
    others that read OpenBao need, its token then shared, and revoked when the run ends (`Platform.close`).
    """
    from components.openbao import ADMIN_USER
    from providers.openbao_api import OpenBao

    bao = OpenBao(_openbao_props(platform))
    key = outputs.OPENBAO_ADMIN_PASSWORD_FILE if user == ADMIN_USER else outputs.OPENBAO_WRITER_PASSWORD_FILE
    file = str(_phase2(platform).get(key))

    def login() -> str:
        password = platform.secrets.add(outputs.read_required_secret(file, f"the password in {file}"))
        return platform.secrets.add(bao.login(user, password, file))

    return platform.kept(f"OpenBao token of {user}", login, lambda token: bao.revoke(token, user))


def openbao_logins_check(platform: Platform) -> Verdict:
    """The writer (`blueprint`) and `admin` users log in with their recorded passwords (`_token`)."""
    from components.openbao import ADMIN_USER, WRITER_USER

    wrong = []
    for user in (WRITER_USER, ADMIN_USER):
        try:
            _token(platform, user)
        except Exception as error:
            wrong.append(f"{user}: {platform.secrets.masked(str(error))[:300]}")
    if wrong:
        return failed("; ".join(wrong), f"docs/guide/access.md, 'OpenBao'; `{UP} --phase 2` applies the logins again")
    return passed(f"{WRITER_USER} and {ADMIN_USER} log in")


def kv_read(platform: Platform, paths: Iterable[str]) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """(the latest data at each of `paths` of OpenBao's KV that holds some, what OpenBao answered at each it
    refused), read as user `blueprint` with the run's token (`_token`). The reads of the KV provider's
    `current` (providers/openbao_kv.py, which `blueprint secrets --show` uses), without its login per
    path and its wait for an OpenBao not ready. The caller registers the secret values (an entry also
    holds names, which masking would hide).
    """
    from components.openbao import KV_MOUNT, WRITER_USER
    from providers.openbao_api import OpenBao

    bao, token = OpenBao(_openbao_props(platform)), _token(platform, WRITER_USER)
    read, refused = {}, {}  # type: dict[str, dict[str, Any]], dict[str, str]
    for path in sorted(set(paths)):
        response = bao.get(f"{KV_MOUNT}/data/{path}", token)
        if response.status_code == 200:
            read[path] = (response.json().get("data") or {}).get("data") or {}
        elif response.status_code != 404:
            refused[path] = f"{KV_MOUNT}/{path}: HTTP {response.status_code}"
    return read, refused


def openbao_kv_check(platform: Platform) -> Verdict:
    """Every KV path `blueprint secrets` lists holds its key (`kv_read`)."""
    from cli.secrets import catalogue
    from components.openbao import KV_MOUNT

    entries, problem = catalogue()
    in_kv = [entry for entry in entries if entry.path is not None]
    read, refused = kv_read(platform, (str(entry.path) for entry in in_kv))
    unread = list(refused.values())
    for entry in in_kv:
        if entry.key in read.get(str(entry.path), {}):
            platform.secrets.add(str(read[str(entry.path)][entry.key]))
        elif str(entry.path) not in refused:
            unread.append(f"{entry.name} ({KV_MOUNT}/{entry.path}, {entry.key})")
    if unread:
        return failed(f"{len(unread)} of {len(in_kv)} not readable: " + ", ".join(unread[:6]), f"`{UP}` writes them again")
    if problem:
        return warned(f"{len(in_kv)} entries read; {problem}", "apps/apps_manifest.yaml")
    return passed(f"all {len(in_kv)} KV entries of `uv run blueprint secrets` read")


def openbao_root_check(platform: Platform) -> Verdict:
    """No token with the root policy exists (the self-initialisation revokes root's): as admin, every accessor looked up."""
    from components.openbao import ADMIN_USER
    from providers.openbao_api import OpenBao

    bao, token = OpenBao(_openbao_props(platform)), _token(platform, ADMIN_USER)
    listed = bao.request("LIST", "auth/token/accessors", token).json()
    accessors = (listed.get("data") or {}).get("keys") or []
    roots = []
    for accessor in accessors:
        looked = bao.request("POST", "auth/token/lookup-accessor", token, {"accessor": accessor}).json()
        if "root" in ((looked.get("data") or {}).get("policies") or []):
            roots.append(accessor)
    if roots:
        props = _openbao_props(platform)
        where = f"BAO_ADDR={props['address']} BAO_CACERT={props['ca_file']} BAO_TLS_SERVER_NAME={props['server_name']}"
        return failed(
            f"{len(roots)} root token(s) exist (accessor {', '.join(roots)})",
            f"log in as admin and revoke each (docs/guide/access.md, 'OpenBao'; on an existing cluster, through its port-forward): "
            f"`export {where}`; `uv run blueprint secrets --show openbao-admin-password | uv run bao login -method=userpass "
            f"username=admin password=-`; `uv run bao token revoke -accessor {roots[0]}`",
        )
    return passed(f"none among {len(accessors)} tokens has the root policy")
