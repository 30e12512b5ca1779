"""The end of a successful `up`: where things are, where the credentials are (never the credentials
themselves), the laptop-side steps left (the /etc/hosts line, or on an existing cluster the one
wildcard DNS record to make at the gateway's address; trusting the CA on this OS), each
app's `/healthz` from this laptop, the smoke pipelines' tally, and `--glab-login` (with glab's own
token: `api` alone, 30 days, revoked by a destroy; never the admin token).
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from apps_manifest import HEADLAMP_HOST, PLATFORM_HOSTS
from cli import os_family
from cli.os_family import OsFamily
from providers.kubectl import kubectl_argv
from stacks import outputs


def summary(
    outputs_by_stack: Mapping[str, Mapping[str, Any]],
    *,
    tally: str | None = None,
    checked: Mapping[str, str] | None = None,
    family: OsFamily | None = None,
    gateway: Gateway | None = None,
) -> str:
    """What the user needs after an `up`: where things are, where the credentials are (never the
    credentials themselves), and the laptop-side steps left; once phase3 is up, each app with what its
    `/healthz` said from this laptop (`checked`, from `check_apps`), and last the smoke pipelines'
    `tally` (`pipeline_tally`). On an existing cluster, `gateway` (`gateway_address`) replaces the
    /etc/hosts line with the DNS record to make.
    """
    phase1, phase2, phase3 = (outputs_by_stack.get(stack) or {} for stack in ("phase1", "phase2", "phase3"))
    lines = ["", "blueprint is up."]
    if phase2:
        gitlab_url = str(phase2.get(outputs.GITLAB_URL, ""))
        domain, hosts = platform_names(phase1, phase2, phase3)
        headlamp = [f"{HEADLAMP_HOST}.{domain}"] if phase1.get(outputs.HEADLAMP) else []
        lines += [
            f"  GitLab:    {gitlab_url}  (user root)",
            f"  Registry:  {phase2.get(outputs.REGISTRY_HOST)}",
            f"  OpenBao:   {phase2.get(outputs.OPENBAO_ADDR)}",
            *(f"  Headlamp:  https://{name}  (its login token: kubectl -n headlamp create token headlamp)" for name in headlamp),
            "",
            "Credentials (in files only you can read, and in OpenBao under secret/, after the OpenBao login below):",
            f"  root password:  {root_password_command(phase2)}   (or uv run bao kv get secret/gitlab/root)",
            f"  admin token:    {admin_token_command(phase2)}   (or uv run bao kv get secret/gitlab/bootstrap/admin_token)",
            f"  OpenBao login:  {openbao_login(phase2)}",
            "  every one:      uv run blueprint secrets   (what each is, and its OpenBao path; --show NAME prints its value)",
            "",
            *(
                dns_lines(phase1, domain, hosts, gateway)
                if outputs.on_existing(phase1)
                else ["On this laptop, once:", f"  /etc/hosts:     127.0.0.1 {' '.join(hosts)}"]
            ),
            *(
                BROUGHT_CERTIFICATE_LINES
                if phase2.get(outputs.GATEWAY_CA_FILE)
                else trust_ca_lines(phase2.get(outputs.CA_CERT_FILE), family)
            ),
        ]
    for name, url in sorted((phase3.get(outputs.APP_URLS) or {}).items()):
        said = (checked or {}).get(name)
        lines.append(f"  app {name}: {url}" + (f"  (/healthz from this laptop: {said})" if said is not None else ""))
    if any(said.startswith("unreachable") for said in (checked or {}).values()):
        where = "the gateway's address (the DNS record above)" if outputs.on_existing(phase1) else "127.0.0.1 (the /etc/hosts line above)"
        lines.append(f"  an app unreachable from here: its name must resolve to {where}")
    if tally is not None:
        lines.append(tally)
    if phase1 and not phase2 and outputs.on_existing(phase1):
        context = shlex.quote(outputs.kube_context(phase1))
        lines.append(f"  cluster: the existing one of context {context} (for kubectl: kubectl --context {context})")
    elif phase1 and not phase2:
        cluster = phase1.get(outputs.CLUSTER_NAME)
        # A file of its own: `blueprint kubeconfig --output` refuses a kubeconfig that holds other clusters.
        lines.append(f"  kind cluster: {cluster} (for kubectl: uv run blueprint kubeconfig --output ~/.kube/blueprint)")
    return "\n".join(lines)


def platform_names(phase1: Mapping[str, Any], phase2: Mapping[str, Any], phase3: Mapping[str, Any]) -> tuple[str, list[str]]:
    """The platform's domain, and every name under it that goes to the gateway: GitLab's, Headlamp's
    when phase1 installed it (phase2 then routes it through the gateway), each app's.
    """
    domain = str(phase2.get(outputs.GITLAB_URL, "")).split("://", 1)[-1].split(".", 1)[-1]
    headlamp = [f"{HEADLAMP_HOST}.{domain}"] if phase1.get(outputs.HEADLAMP) else []
    hosts = [f"{host}.{domain}" for host in PLATFORM_HOSTS] + headlamp
    return domain, hosts + [str(url).split("://", 1)[-1] for url in (phase3.get(outputs.APP_URLS) or {}).values()]


@dataclass(frozen=True, kw_only=True)
class Gateway:
    """What the cluster says of the gateway's address: Envoy Gateway writes the Gateway's
    `status.addresses` from its Service, a load balancer's `ingress` IP or hostname, or for a
    NodePort the nodes' addresses (envoyproxy/gateway internal/gatewayapi/status/gateway.go).
    """

    addresses: tuple[tuple[str, str], ...] = ()
    """(type, value) of each: IPAddress or Hostname."""
    node_ports: Mapping[int, int] | None = None
    """Service port -> its node port, when the Service is a NodePort; None for a load balancer."""
    problem: str = ""
    """Why nothing could be read ("": it was)."""


def gateway_address(phase1: Mapping[str, Any], run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run) -> Gateway:
    """The gateway's addresses and node ports as the cluster of phase1's context says them now."""
    from components import gitlab as gl
    from components import gitlab_gateway as gw

    command = [*_kubectl(phase1), "get", f"gateway/{gl.GATEWAY}", f"service/{gw.ENVOY_SERVICE}", "-o", "json"]
    try:
        done = run(command, capture_output=True, text=True, errors="replace", timeout=30, check=False)
        items = json.loads(done.stdout).get("items") if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError, AttributeError):
        items = None
    if not isinstance(items, list):
        return Gateway(problem=f"`{shlex.join(command)}` did not answer")
    by_kind = {str(item.get("kind")): item for item in items if isinstance(item, dict)}
    addresses = (by_kind.get("Gateway") or {}).get("status", {}).get("addresses") or []
    spec = (by_kind.get("Service") or {}).get("spec") or {}
    ports = {int(port["port"]): int(port["nodePort"]) for port in spec.get("ports") or [] if "nodePort" in port and "port" in port}
    return Gateway(
        addresses=tuple((str(found.get("type", "IPAddress")), str(found.get("value"))) for found in addresses if found.get("value")),
        node_ports=ports if spec.get("type") == "NodePort" else None,
    )


def _kubectl(phase1: Mapping[str, Any]) -> list[str]:
    return kubectl_argv(outputs.kube_context(phase1), namespace="gitlab", timeout=None)


def dns_lines(phase1: Mapping[str, Any], domain: str, hosts: Sequence[str], gateway: Gateway | None) -> list[str]:
    """The one wildcard record that sends every name of the platform (`hosts`, all under `domain`) to the
    gateway; with NodePort, to the user's load balancer, with the nodes and ports it forwards to.
    """
    from components import gitlab as gl

    lines = [f"In the DNS of {domain}, once (it covers {', '.join(hosts)}):"]
    found = gateway.addresses if gateway else ()
    if not found:
        why = gateway.problem if gateway and gateway.problem else "the gateway has no address yet"
        status = shlex.join([*_kubectl(phase1), "get", "gateway", gl.GATEWAY, "-o", "jsonpath={.status.addresses}"])
        return [*lines, f"  *.{domain}  ->  the gateway's address: {why}; once it has one, `{status}` shows it"]
    if gateway and gateway.node_ports is not None:
        # NodePort: the gateway's addresses are the nodes' (Envoy Gateway v1.8.1 internal/gatewayapi/status/
        # gateway.go), which answer on the node ports alone: the record goes to the user's own load balancer.
        ports = ", ".join(f"{port} -> node port {node}" for port, node in sorted(gateway.node_ports.items()))
        nodes = ", ".join(value for _, value in found)
        return [
            *lines,
            f"  your load balancer (blueprint:exposure=nodePort): to nodes {nodes}, ports {ports}",
            f"  *.{domain}  ->  your load balancer's address (an A record to its IP, or a CNAME to its hostname)",
        ]
    hostnames = [value for kind, value in found if kind == "Hostname"]
    # A CNAME names one host; A records may be several.
    records = [f"  *.{domain}  CNAME  {hostnames[0]}"] if hostnames else [f"  *.{domain}  A  {value}" for _, value in found]
    return [*lines, *records]


BROUGHT_CERTIFICATE_LINES = [
    "  TLS:            the gateway serves your certificate (blueprint:tlsCertificate): nothing to trust beyond its issuer;",
    "                  the platform CA verifies OpenBao alone, and blueprint's commands name it themselves",
]
"""The summary's TLS lines with a brought certificate, instead of "trust the CA"."""


def trust_ca_lines(ca_file: object, family: OsFamily | None) -> list[str]:
    """The summary's "trust the CA" lines: the exact command for this machine's OS `family` with the
    CA's real path (two in WSL2: the distro's, and Windows' for its browsers); without a known
    family, the path and where the bring-up guide lists the commands.
    """
    commands = os_family.ca_trust(family, str(ca_file)) if family is not None and ca_file else []
    if not commands:
        where = ca_file or "<dataDir>/platform/ca.crt"
        return [f"  trust the CA:   {where}   (docs/guide/bring-up.md, 'Trust the platform CA', has the command for each system)"]
    return [f"  trust the CA:   {commands[0]}", *(f"                  {command}" for command in commands[1:])]


def root_password_command(phase2: Mapping[str, Any]) -> str:
    """The shell command that prints GitLab root's password from its file."""
    return f"cat {shlex.quote(str(phase2[outputs.GITLAB_ROOT_PASSWORD_FILE]))}"


def admin_token_command(phase2: Mapping[str, Any]) -> str:
    """The shell command that prints root's admin token: its file keeps it without GitLab's prefix."""
    return f'echo "{outputs.ADMIN_TOKEN_PREFIX}$(cat {shlex.quote(str(phase2[outputs.ADMIN_TOKEN_FILE]))})"'


def admin_token(phase2: Mapping[str, Any]) -> str:
    """Root's GitLab token, read from the file phase2's outputs name (no output holds it); an
    `outputs.SecretFileUnavailable` says which file is missing and what to run.
    """
    return outputs.read_admin_token(str(phase2[outputs.ADMIN_TOKEN_FILE]))


def openbao_login(phase2: Mapping[str, Any]) -> str:
    """The shell command that logs the OpenBao CLI in as `admin`, its password read from its file
    (stdin, so it never shows in a process list; the file ends with a newline, which is no part of it).
    """
    from providers.openbao_errors import bao_env

    password_file = phase2[outputs.OPENBAO_ADMIN_PASSWORD_FILE]
    forward, address = phase2.get(outputs.OPENBAO_FORWARD), phase2.get(outputs.OPENBAO_ADDR)
    if isinstance(forward, Mapping):  # an existing cluster: OpenBao's Service, forwarded to this machine first
        address = f"https://127.0.0.1:{forward['port']}"
    where = bao_env(
        {
            "address": address,
            "ca_file": phase2.get(outputs.CA_CERT_FILE),
            "server_name": phase2.get(outputs.OPENBAO_SERVER_NAME),
        }
    )
    login = "uv run bao login -method=userpass username=admin password=-"
    logged_in = f"export {where}; tr -d '\\n' < {shlex.quote(str(password_file))} | {login}"
    if not isinstance(forward, Mapping):
        return logged_in
    service, port = f"svc/{forward['service']}", str(forward["port"])
    kubectl = kubectl_argv(str(forward["context"]), "port-forward", service, port, namespace=str(forward["namespace"]), timeout=None)
    return f"{shlex.join(kubectl)} &  {logged_in}"


def glab_login(phase2: Mapping[str, Any], run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run) -> str:
    """Log glab in to the platform with glab's own token (on stdin), trusting our CA."""
    if not phase2:
        return "phase2 is not up: nothing to log glab in to"
    if shutil.which("glab") is None:
        return "glab is not installed: nothing to log in (get it: https://gitlab.com/gitlab-org/cli, then `uv run blueprint up` again)"
    host = str(phase2[outputs.GITLAB_URL]).split("://", 1)[-1]
    try:
        if not phase2.get(outputs.GLAB_TOKEN_FILE):
            raise outputs.SecretFileUnavailable("phase2's outputs name no token of glab's own: run `uv run blueprint up --phase 2`")
        token = outputs.read_glab_token(str(phase2[outputs.GLAB_TOKEN_FILE]))
    except outputs.SecretFileUnavailable as error:
        return f"glab could not be logged in to {host}: {error}; the platform is up regardless"
    try:
        run(
            ["glab", "config", "set", "ca_cert", str(outputs.gateway_ca_file(phase2)), "--host", host],
            check=True,
            capture_output=True,
            text=True,
            errors="replace",
        )
        run(
            ["glab", "auth", "login", "--hostname", host, "--stdin"],
            input=token,
            check=True,
            capture_output=True,
            text=True,
            errors="replace",
        )
    except subprocess.CalledProcessError as error:
        said = (error.stderr or error.stdout or "").strip().splitlines()
        return f"glab could not be logged in to {host} ({said[-1] if said else f'exit {error.returncode}'}); the platform is up regardless"
    return f"glab is logged in to {host} as root, with its own token (api scope; an `up` renews it in its last week)"


def pipeline_tally(phase3: Mapping[str, Any]) -> str | None:
    """`smoke_tally` of phase3's outputs against apps/apps_manifest.yaml, or why the manifest cannot
    be read; None when phase3 is not up.
    """
    from apps_manifest import ManifestError, load_manifest

    if not phase3:
        return None
    try:
        projects = [project.name for project in load_manifest(files=False)]
    except ManifestError as error:
        return f"smoke pipelines not tallied: {error}"
    return smoke_tally(projects, phase3.get(outputs.PIPELINES) or {})


Said = TypeVar("Said")


def check_apps(outputs_by_stack: Mapping[str, Mapping[str, Any]], ask: Callable[[str, str, Mapping[str, str]], Said]) -> dict[str, Said]:
    """What each app's `/healthz` says from this laptop, through the gateway, trusting the gateway's CA
    alone: the route a user takes, which the pipeline's own check (from inside the cluster) does not.
    The apps are asked at the same time, each under its own timeout (`blueprint verify` uses it too).
    """
    from cli.verify.model import at_once

    phase2, phase3 = (outputs_by_stack.get(stack) or {} for stack in ("phase2", "phase3"))
    if not outputs.gateway_ca_file(phase2):
        return {}
    ca = str(outputs.gateway_ca_file(phase2))
    apps = sorted((phase3.get(outputs.APP_URLS) or {}).items())
    return dict(zip([name for name, _ in apps], at_once(lambda app: ask(f"{app[1]}/healthz", ca, {}), apps), strict=True))


def smoke_tally(projects: Sequence[str], pipelines: Mapping[str, Any]) -> str:
    """The line "N/N smoke pipelines green": of the manifest's `projects`, those with a pipeline in
    phase3's `pipelines` output, which holds only green ones (one that is not green fails the `up`);
    the others named, with what runs them.
    """
    missing = [name for name in projects if not pipelines.get(name)]
    line = f"{len(projects) - len(missing)}/{len(projects)} smoke pipelines green"
    if missing:
        line += f" (none recorded for {', '.join(missing)}: `uv run blueprint up --phase 3` runs them)"
    return line
