"""`blueprint status`: per phase whether it is up and which blueprint brought it up, what GitLab,
OpenBao, the Runners and the apps answer from this laptop (`probe`, trusting our CA alone), and the
image cache (none on an existing cluster).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cli.report import admin_token
from cli.stack_runner import StackRunner
from shown import shown
from stacks import PHASE_STACKS, outputs


def status(
    runner: StackRunner,
    ask: Callable[..., str] | None = None,
    image_cache: Callable[[Mapping[str, Any] | None], list[str]] | None = None,
    api_server: Callable[[str], list[dict[str, Any]] | str] | None = None,
) -> str:
    """Per phase whether it is up, the health of GitLab, OpenBao, the runners and the apps, whether an
    existing cluster's API server is where phase1 read it (`api_server`: context -> its live endpoints,
    or why they cannot be read; None: kubectl's answer), and the image cache (`image_cache`: phase1's
    outputs, None when it is not up -> its lines; None: the real one).
    """
    ask = ask or probe
    image_cache = image_cache or _image_cache_status
    lines = []
    stack_outputs = {stack: runner.outputs(stack) for stack in PHASE_STACKS["all"]}
    for stack, values in stack_outputs.items():
        recorded = (values or {}).get(outputs.BLUEPRINT_VERSION)
        lines.append(f"{stack}: {'not up' if values is None else 'up'}{f', by blueprint {_release(recorded)}' if recorded else ''}")
    phase2, phase3 = stack_outputs["phase2"] or {}, stack_outputs["phase3"] or {}
    if phase2:
        ca, gateway_ca = str(phase2.get(outputs.CA_CERT_FILE)), str(outputs.gateway_ca_file(phase2))
        gitlab_url = str(phase2.get(outputs.GITLAB_URL))
        runners = f"groups/{phase2.get(outputs.APPS_GROUP_ID)}/runners?type=group_type"
        try:
            token: dict[str, str] | None = {"PRIVATE-TOKEN": admin_token(phase2)}
        except outputs.SecretFileUnavailable as error:
            token, missing = None, str(error)
        # On an existing cluster, through the port-forwards phase2 names (providers/cluster_access.py).
        gitlab_via = {"forward": phase2[outputs.GITLAB_FORWARD]} if phase2.get(outputs.GITLAB_FORWARD) else {}
        openbao_via = {"forward": phase2[outputs.OPENBAO_FORWARD]} if phase2.get(outputs.OPENBAO_FORWARD) else {}
        lines.append(
            f"  GitLab:  {ask(f'{gitlab_url}/api/v4/version', gateway_ca, token, **gitlab_via) if token else f'unknown: {missing}'}"
        )
        # OpenBao is reached at 127.0.0.1: its certificate must be for its own name (outputs.OPENBAO_SERVER_NAME).
        openbao = f"{phase2.get(outputs.OPENBAO_ADDR)}/v1/sys/seal-status"
        lines.append(f"  OpenBao: {ask(openbao, ca, {}, server_name=phase2.get(outputs.OPENBAO_SERVER_NAME), **openbao_via)}")
        runners_url = f"{gitlab_url}/api/v4/{runners}&status=online"
        online = ask(runners_url, gateway_ca, token, **gitlab_via) if token else "unknown: no admin token (above)"
        lines.append(f"  Runners: {online}")
    for name, url in sorted((phase3.get(outputs.APP_URLS) or {}).items()):
        lines.append(f"  app {name}: {ask(f'{url}/healthz', str(outputs.gateway_ca_file(phase2)), {})}")
    phase1 = stack_outputs["phase1"]
    if phase1 and outputs.on_existing(phase1) and outputs.API_SERVER_ENDPOINTS in phase1:
        lines.append(api_server_line(phase1, api_server or live_api_server))
    if _on_existing(phase1):
        from cli.images import NO_CACHE_ON_EXISTING

        lines.append(f"image cache: none ({NO_CACHE_ON_EXISTING})")
    else:
        lines += image_cache(phase1)
    return "\n".join(lines)


def _on_existing(phase1: Mapping[str, Any] | None) -> bool:
    """Whether the platform is on an existing cluster: as phase1's outputs say, else (not up) as its config does."""
    if phase1 is not None:
        return outputs.on_existing(phase1)
    from stacks.config.cluster import EXISTING
    from stacks.config.schema import stack_config

    try:
        return stack_config("phase1")[0].get("blueprint:cluster") == EXISTING
    except Exception:  # a stack file that cannot be read: the image cache's own line says so
        return False


def _endpoint_pairs(endpoints: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """(address, port) of each endpoint, sorted: a state's numbers may read back as floats."""
    return sorted({(str(endpoint["address"]), int(endpoint["port"])) for endpoint in endpoints})


def _shown_endpoints(pairs: list[tuple[str, int]]) -> str:
    return ", ".join(f"{address}:{port}" for address, port in pairs) or "none"


def api_server_line(phase1: Mapping[str, Any], read: Callable[[str], list[dict[str, Any]] | str]) -> str:
    """Whether the API server's endpoints are still those phase1 recorded at `up`: the Runners' egress
    policy allows those alone (components/runner_egress.py), and a managed control plane moves them
    without blueprint running (EKS replaces its endpoints' network interfaces in upgrades).
    """
    recorded = _endpoint_pairs(list(phase1[outputs.API_SERVER_ENDPOINTS]))
    read_now = read(outputs.kube_context(phase1))
    if isinstance(read_now, str):
        return f"API server: unknown, its endpoints cannot be read ({read_now})"
    live = _endpoint_pairs(read_now)
    if live == recorded:
        return f"API server: at the endpoints phase1 recorded ({_shown_endpoints(live)})"
    return (
        f"API server: its endpoints moved since the last up (recorded {_shown_endpoints(recorded)}, now {_shown_endpoints(live)}): "
        "the Runners and deploy jobs cannot reach it; re-run `uv run blueprint up`"
    )


def live_api_server(context: str) -> list[dict[str, Any]] | str:
    """The endpoints of the Service default/kubernetes as kubectl reads them now (phase1's own read:
    components/existing_cluster.py READ_ARGS), or why they cannot be read.
    """
    import json
    import shlex
    import subprocess

    from components.existing_cluster import READ_ARGS, endpoints
    from providers.kubectl import kubectl_argv

    argv = kubectl_argv(context, *shlex.split(READ_ARGS["apiServer"]))
    try:
        done = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"kubectl: {type(error).__name__}"
    try:
        listed = json.loads(done.stdout) if done.returncode == 0 else None
    except ValueError:
        listed = None
    if not isinstance(listed, dict):
        said = (done.stderr.strip().splitlines() or ["no answer"])[0]
        return f"kubectl: {shown(said)}"
    return endpoints(listed)


def _release(recorded: object) -> str:
    """A recorded release as `parse` takes it, else its repr, cut short: a state holds what anyone wrote."""
    from stacks.migrations import parse

    try:
        parse(recorded)
    except ValueError:
        return f"{shown(recorded)} (not a blueprint version)"
    return str(recorded)


def _image_cache_status(phase1: Mapping[str, Any] | None) -> list[str]:
    from cli.image_cache import docker_run, engine_of, on_engine, said_on, size_on_disk, status_lines
    from stacks.config.schema import stack_config

    def config() -> Mapping[str, str]:
        return stack_config("phase1")[0]

    engine = engine_of(phase1, config)
    return list(map(said_on(engine), status_lines(phase1, config, on_engine(docker_run, engine), size_on_disk)))


def probe(
    url: str,
    ca_file: str,
    headers: Mapping[str, str],
    *,
    timeout: float = 10,
    server_name: str | None = None,
    forward: Mapping[str, Any] | None = None,
) -> str:
    """What `url` says, in a few words: "ok ...", "sealed"/"unsealed", "N online", "HTTP <status>",
    "unreachable (...)", or "unknown: ..." when our CA file, the only trust it uses, is missing. With
    `forward` (an existing cluster: phase2's gitlabForward or openbaoForward), through that port-forward.
    """
    import requests

    from providers.cluster_access import ForwardError, Target
    from providers.http import NoAnswer, session, unverified

    through = Target.of(forward) if forward else None
    try:
        https = url.startswith("https://")
        tls = {"ca_file": ca_file if https else None, "server_name": server_name if https else None}
        with session(**tls, headers=headers, forward=through) as asking:
            response = asking.get(url, timeout=timeout)
        body = response.json() if "json" in response.headers.get("Content-Type", "") else None
    except NoAnswer:  # our CA file, the only trust, is missing: no token goes where it cannot vouch
        return f"unknown: the CA file {ca_file} is missing"
    except ForwardError:
        return "unreachable (the port-forward did not start)"
    except (requests.RequestException, ValueError) as error:
        if unverified(error):
            return "untrusted: its certificate is not one of the platform CA's for its name (no token was sent)"
        return f"unreachable ({type(error).__name__})"
    if response.status_code != 200:
        return f"HTTP {response.status_code}"
    if isinstance(body, dict) and "sealed" in body:
        return "sealed" if body["sealed"] else "unsealed"
    if isinstance(body, dict) and "version" in body:
        return f"ok (GitLab {body['version']})"
    if isinstance(body, list):
        return f"{len(body)} online"
    return "ok"
