"""phase3's pre-flight: before phase3 touches GitLab, everything it needs answers from this machine.

In order: OpenBao answers at phase2's `openbaoAddr`, initialised and unsealed (`/v1/sys/health`);
GitLab's API answers at `https://gitlab.<domain>` with our CA file as the only trust
(`/api/v4/metadata`, with the admin token read from phase2's file); the registry answers at
`https://registry.<domain>/v2/` (200, or 401 with `WWW-Authenticate`); and both runners are
`online` (asked only when GitLab's API answered). Every failure is one sentence naming the
component, what it answered and the fix; all are reported at once. The token goes to GitLab alone,
through the providers' client (providers/gitlab_api.py), whose errors never show it.

Each request is tried ATTEMPTS times, PAUSE apart, while what failed may pass in seconds
(providers/http.py `send`); a runner `never_contacted` or `offline` is waited for up to RUNNER_WAIT
(its manager pod may be starting), a paused or stale one is not. It runs in the phase3 stack only,
before any resource is registered; a preview checks each once, without waiting, and warns. Why,
and the upstream sources: docs/design/decisions.md, entry 34.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from apps_manifest import host_names, load_manifest
from components.runner import DEFAULT_NAMESPACE, IMAGE_BUILD_NAMESPACE, runner_description
from providers import http, poll
from providers.cluster_access import Target, target_of
from providers.gitlab_api import GitLab, GitLabApiError, encode
from providers.openbao_api import impostor
from stacks import outputs

REQUEST_TIMEOUT = 5.0
"""Seconds for one request: each of these answers at once when it answers at all."""
ATTEMPTS = 3
"""Tries of a request that failed in a way that may pass in seconds (refused, timed out, 502-504)."""
PAUSE = 2.0
"""Seconds between those tries."""
RUNNER_WAIT = 120.0
"""Seconds a runner that is not online yet (`never_contacted`, `offline`) is waited for."""
RUNNER_POLL = 5.0
"""Seconds between two looks at a runner that is not online yet."""
WAITING_RUNNER = frozenset({"never_contacted", "offline"})
"""A runner status that its manager pod ends by asking for jobs (starting, or restarting)."""
PHASE2_UP = "`uv run blueprint up --phase 2`"
REFRESH_PHASE2 = '`pulumi refresh -s phase2` drops it from phase2\'s state (in a shell that ran `eval "$(uv run blueprint env)"`)'
"""A runner deleted in GitLab stays in phase2's state, and an `up` compares inputs only: a refresh must drop it first."""


@dataclass(frozen=True)
class Waits:
    """How long the checks wait: see the module docstring."""

    timeout: float = REQUEST_TIMEOUT
    attempts: int = ATTEMPTS
    pause: float = PAUSE
    runner_wait: float = RUNNER_WAIT
    runner_poll: float = RUNNER_POLL

    @property
    def pauses(self) -> tuple[float, ...]:
        """The pauses between the tries of one request."""
        return (self.pause,) * (self.attempts - 1)


PREVIEW = Waits(attempts=1, runner_wait=0.0)
"""A preview looks once and waits for nothing."""


@dataclass(frozen=True, kw_only=True)
class Platform:
    """What phase3 reaches, as phase2's outputs say (`from_outputs`)."""

    openbao_addr: str
    openbao_server_name: str
    """The name OpenBao's certificate (from the CA of `ca_file`) must be for."""
    gitlab_url: str
    registry_url: str
    ca_file: str
    """The platform CA: what verifies OpenBao."""
    token_file: str
    runner_id: str
    group_id: str
    runner_owner: str
    """`<pulumi project>/<stack>` of the stack that made the runners (phase2's, the group's mark)."""
    hosts_line: str
    """The `/etc/hosts` line every name of the platform needs."""
    openbao_forward: Target | None = None
    gitlab_forward: Target | None = None
    """On an existing cluster, the port-forwards OpenBao and Envoy (GitLab, its registry) are reached
    through (providers/cluster_access.py); None on kind."""
    gateway_ca_file: str = ""
    """What verifies GitLab and its registry: a brought certificate's trust, or "" for `ca_file`."""


def from_outputs(inputs: Mapping[str, Any]) -> Platform:
    """The platform phase2's outputs (`inputs`, plain values) describe."""
    gitlab_url = str(inputs[outputs.GITLAB_URL]).rstrip("/")
    domain = (urlsplit(gitlab_url).hostname or "").split(".", 1)[-1]  # gitlab.<domain>
    return Platform(
        openbao_addr=str(inputs[outputs.OPENBAO_ADDR]).rstrip("/"),
        openbao_server_name=str(inputs[outputs.OPENBAO_SERVER_NAME]),
        gitlab_url=gitlab_url,
        registry_url=f"https://{inputs[outputs.REGISTRY_HOST]}",
        ca_file=str(inputs[outputs.CA_CERT_FILE]),
        token_file=str(inputs[outputs.ADMIN_TOKEN_FILE]),
        runner_id=_id(inputs[outputs.RUNNER_ID]),
        group_id=_id(inputs[outputs.APPS_GROUP_ID]),
        runner_owner=str(inputs[outputs.APPS_GROUP_OWNER]),
        hosts_line="127.0.0.1 " + " ".join(host_names(domain, load_manifest())),
        openbao_forward=target_of(inputs, outputs.OPENBAO_FORWARD),
        gitlab_forward=target_of(inputs, outputs.GITLAB_FORWARD),
        gateway_ca_file=str(outputs.gateway_ca_file(inputs)),
    )


def _id(value: Any) -> str:
    """A GitLab id as the API's paths take it (a number may arrive as a float: `105.0`)."""
    text = str(value)
    return str(int(float(text))) if text.replace(".", "", 1).isdigit() else text


def get(
    url: str,
    *,
    waits: Waits,
    ca_file: str | None = None,
    hosts_line: str = "",
    server_name: str | None = None,
    forward: Target | None = None,
) -> Any:
    """The answer to `GET url` (any status; a gateway's 502-504 once the tries run out), trusting
    `ca_file` alone for https (for `server_name`, when named), through `forward` when there is one;
    an http.NoAnswer saying why there is none.
    """
    with http.session(ca_file=ca_file, server_name=server_name, forward=forward) as asking:
        return http.send(asking, "GET", url, timeout=waits.timeout, pauses=waits.pauses, hosts_line=hosts_line)


def check_openbao(
    address: str, *, waits: Waits, ca_file: str | None = None, server_name: str | None = None, forward: Target | None = None
) -> str | None:
    """Why OpenBao at `address` cannot serve phase3, or None: it answers, with OpenBao's certificate
    from `ca_file` for `server_name`, initialised and unsealed.
    """
    where = f"OpenBao at {address}"
    try:
        response = get(f"{address}/v1/sys/health", waits=waits, ca_file=ca_file, server_name=server_name, forward=forward)
        health = response.json()
    except http.Unverified:
        return impostor({"address": address, "ca_file": ca_file, "server_name": server_name})
    except http.NoAnswer as error:
        return f"{where} does not answer: {error}; look at its pod: `kubectl -n openbao get pods`"
    except ValueError:
        health = None
    if not isinstance(health, dict) or "sealed" not in health:
        return f"{where} answered HTTP {response.status_code}, not OpenBao's health: is something else on that port?"
    if not health.get("initialized"):
        return f"{where} is not initialised: {PHASE2_UP} initialises it"
    if health.get("sealed"):
        return (
            f"{where} is sealed: it unseals itself with phase2's seal key file (`<dataDir>/platform/secrets/openbao-seal-key`); "
            f"see why it did not: `kubectl -n openbao logs openbao-0`"
        )
    return None


def check_gitlab(api: GitLab) -> str | None:
    """Why GitLab's API cannot serve phase3, or None: `/api/v4/metadata` answers the admin token."""
    where = f"GitLab's API at {api.url}"
    try:
        response = api.send("GET", "/metadata")
    except GitLabApiError as error:
        if error.status in (401, 403):
            return f"{where} refuses the admin token (HTTP {error.status}): {PHASE2_UP} makes it again"
        if error.gateway is not None:
            return (
                f"{where}: the gateway answers HTTP {error.gateway}, GitLab does not: look at its pods "
                f"(`kubectl -n gitlab get pods`) and its Gateway (`kubectl -n gitlab describe gateway gitlab-gw`)"
            )
        if error.status is None:
            return f"{where} does not answer: {error.detail}"
        return f"{where} answered HTTP {error.status}"
    return None if response.status_code == 200 else f"{where} answered HTTP {response.status_code}"


def check_registry(url: str, *, ca_file: str, waits: Waits, hosts_line: str = "", forward: Target | None = None) -> str | None:
    """Why GitLab's registry at `url` does not answer, or None: `/v2/` answers 200, or 401 with
    `WWW-Authenticate` (it wants a token: the distribution spec's answer to an anonymous client).
    """
    where = f"the registry at {url}"
    try:
        # Through a forward, the connection still asks for the registry's name (SNI: Envoy's listener).
        name = urlsplit(url).hostname if forward else None
        response = get(f"{url}/v2/", waits=waits, ca_file=ca_file, hosts_line=hosts_line, server_name=name, forward=forward)
    except http.NoAnswer as error:
        return f"{where} does not answer: {error}"
    if response.status_code == 200 or (response.status_code == 401 and response.headers.get("WWW-Authenticate")):
        return None
    return (
        f"{where}: the gateway answers HTTP {response.status_code}, the registry does not: look at its pods "
        f"(`kubectl -n gitlab get pods -l app=registry`)"
    )


@dataclass(frozen=True)
class RunnerToCheck:
    what: str
    """Which runner, in a message: "the default runner", "the image-build runner"."""
    namespace: str
    """Where its manager pod runs."""
    runner_id: str | None
    """Its id; None when GitLab holds no such runner."""


def runners_to_check(api: GitLab, platform: Platform) -> list[RunnerToCheck]:
    """The default runner (phase2's `runnerId`) and the image-build one (the group's runner of its description)."""
    wanted = runner_description(platform.runner_owner, image_builds=True)
    listed = api.pages(f"/groups/{encode(platform.group_id)}/runners", type="group_type")
    image_build = next((str(runner["id"]) for runner in listed if runner.get("description") == wanted), None)
    return [
        RunnerToCheck("the default runner", DEFAULT_NAMESPACE, platform.runner_id),
        RunnerToCheck("the image-build runner", IMAGE_BUILD_NAMESPACE, image_build),
    ]


def check_runner(api: GitLab, runner: RunnerToCheck, *, waits: Waits) -> str | None:
    """Why `runner` cannot take jobs, or None: GitLab says it is online (waited for, see the module docstring)."""
    # Both charts are released as `gitlab-runner` (components/runner.py), each in its own namespace.
    look = f"`kubectl -n {runner.namespace} get pods` and `kubectl -n {runner.namespace} logs deploy/gitlab-runner`"
    if runner.runner_id is None:
        return f"{runner.what} is not in GitLab: {REFRESH_PHASE2}, then {PHASE2_UP} registers it"
    path = f"/runners/{encode(runner.runner_id)}"

    def settled() -> Any:
        found = api.find(path)
        if found is not None and _status(found) in WAITING_RUNNER:
            raise poll.NotYet(_status(found))
        return found

    try:
        found = poll.retry(settled, poll.within(waits.runner_wait, every=waits.runner_poll))
    except poll.NotYet as still:
        status = str(still)
    else:
        if found is None:
            return f"{runner.what} (runner {runner.runner_id}) is gone from GitLab: {REFRESH_PHASE2}, then {PHASE2_UP} registers it again"
        status = _status(found)
    if status == "online":
        return None
    if status == "paused":
        return f"{runner.what} (runner {runner.runner_id}) is paused in GitLab: resume it (Admin area > CI/CD > Runners)"
    waited = f" after {waits.runner_wait:g}s" if status in WAITING_RUNNER and waits.runner_wait else ""
    return f"{runner.what} (runner {runner.runner_id}) is {status}{waited}: its manager does not ask GitLab for jobs; look at it: {look}"


def _status(runner: Mapping[str, Any]) -> str:
    """A runner's status as GitLab shows it (`online`, `offline`, `never_contacted`, `stale`, `paused`)."""
    return str(runner.get("status") or ("online" if runner.get("online") else "offline"))


def problems(platform: Platform, token: str | None, *, waits: Waits = Waits(), token_problem: str | None = None) -> list[str]:
    """Everything that stops phase3, one sentence each; empty when all answer. `token` is root's
    GitLab token, or None with `token_problem` saying why it cannot be read.
    """
    found = []
    checked_at = {"ca_file": platform.ca_file, "server_name": platform.openbao_server_name}
    if problem := check_openbao(platform.openbao_addr, waits=waits, **checked_at, forward=platform.openbao_forward):
        found.append(problem)
    api, gateway_ca = None, platform.gateway_ca_file or platform.ca_file
    if token is not None:
        api = GitLab(
            platform.gitlab_url, token, gateway_ca, timeout=waits.timeout, pauses=waits.pauses, hosts_line=platform.hosts_line,
            forward=platform.gitlab_forward,
        )  # fmt: skip
    gitlab = check_gitlab(api) if api else f"GitLab's API at {platform.gitlab_url} was not checked: {token_problem}"
    if gitlab:
        found.append(gitlab)
    registry = {"ca_file": gateway_ca, "hosts_line": platform.hosts_line}
    if problem := check_registry(platform.registry_url, waits=waits, **registry, forward=platform.gitlab_forward):
        found.append(problem)
    if api and not gitlab:  # the runners are asked only of a GitLab that answered
        try:
            for runner in runners_to_check(api, platform):
                if problem := check_runner(api, runner, waits=waits):
                    found.append(problem)
        except GitLabApiError as error:
            found.append(f"the runners could not be checked: {error}")
    return found


def message(found: Sequence[str], *, preview: bool = False) -> str:
    """Every problem, on one line: `blueprint up` explains a failure with Pulumi's `error:` lines alone
    (cli/explain.py), and a message's further lines would not start with it.
    """
    count = f"{len(found)} problem{'s' if len(found) != 1 else ''}"
    outcome = "`up` stops here unless they are fixed by then" if preview else "nothing was created or changed"
    return f"phase3's pre-flight found {count} before touching GitLab ({outcome}): " + "; ".join(
        f"({number}) {problem}" for number, problem in enumerate(found, 1)
    )


def run(inputs: Mapping[str, Any], *, preview: bool) -> None:
    """Check the platform phase2's outputs (`inputs`) describe: on a preview, warn once about what
    does not answer; otherwise wait as Waits says and raise a RunError naming what does not.
    """
    import pulumi

    platform = from_outputs(inputs)
    try:
        token, token_problem = outputs.read_admin_token(platform.token_file), None
    except outputs.SecretFileUnavailable as error:
        token, token_problem = None, str(error)
    found = problems(platform, token, waits=PREVIEW if preview else Waits(), token_problem=token_problem)
    if not found:
        return
    if preview:
        pulumi.log.warn(message(found, preview=True))
        return
    raise pulumi.RunError(message(found))
