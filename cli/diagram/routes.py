"""Which names reach what, read from the offline plans: the names the cluster DNS points at the
gateway (the same names as the laptop's `/etc/hosts` line), and the workload that serves each.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from cli.diagram.model import DNS_PATCH_TYPE, GITLAB_CHART_ROUTES, RELEASE_TYPE, Route, Workload, walk
from cli.plan import Plan


def dns_names(plans: Sequence[Plan]) -> list[tuple[str, str]]:
    """The names the cluster DNS rewrites, with their target: the laptop's /etc/hosts line."""
    names = []
    for result in plans:
        for resource in result.find(DNS_PATCH_TYPE):
            corefile = str((resource["inputs"].get("data") or {}).get("Corefile", ""))
            names += re.findall(r"^\s*rewrite name exact (\S+) (\S+)", corefile, re.MULTILINE)
    return names


def routes(plans: Sequence[Plan], workloads: Sequence[Workload], app_hosts: Mapping[str, str]) -> tuple[list[Route], list[Route]]:
    """The names the cluster DNS points at the gateway, each with what serves it (or no workload when
    no plan says); then the other names the gateway routes, which only the laptop calls (Headlamp's).
    """
    served = _served(plans, workloads, app_hosts)
    names = [host for host, _ in dns_names(plans)]
    return [served.get(host) or Route(host, "", "") for host in names], [route for host, route in served.items() if host not in names]


def _served(plans: Sequence[Plan], workloads: Sequence[Workload], app_hosts: Mapping[str, str]) -> dict[str, Route]:
    """Every name a plan routes, by the workload that serves it: the GitLab chart's, the HTTPRoutes', the apps'."""
    served: dict[str, Route] = {}
    for result in plans:
        for resource in result.find(RELEASE_TYPE):
            inputs = resource["inputs"]
            key = f"{result.stack}/{inputs.get('namespace', 'default')}/{inputs.get('name', resource['name'])}"
            values = inputs.get("values") or {}
            domain = ((values.get("global") or {}).get("hosts") or {}).get("domain")
            if domain and inputs.get("chart") == "gitlab":
                for host, serves in GITLAB_CHART_ROUTES.items():
                    served[f"{host}.{domain}"] = Route(f"{host}.{domain}", key, serves)
            # A chart given an HTTPRoute's hostnames in its values (Headlamp's `httpRoute`, say).
            for _path, value in walk(values):
                if isinstance(value, Mapping) and isinstance(value.get("hostnames"), list) and "parentRefs" in value:
                    for host in value["hostnames"]:
                        served[str(host)] = Route(str(host), key, f"the {inputs.get('chart')} chart")
        for resource in result.resources:
            inputs = resource["inputs"]
            if inputs.get("kind") == "HTTPRoute" and isinstance(inputs.get("spec"), Mapping):
                namespace = (inputs.get("metadata") or {}).get("namespace", "default")
                backends = {str(ref.get("name")) for rule in inputs["spec"].get("rules") or [] for ref in rule.get("backendRefs") or []}
                # The workload of the route's namespace whose name is a backend's (a chart's Service is
                # named for its release), else any workload of that namespace, whichever phase made it.
                candidates = sorted((w.name not in backends, w.phase != result.stack, w.key) for w in workloads if w.namespace == namespace)
                owner = candidates[0][2] if candidates else ""
                for host in inputs["spec"].get("hostnames") or []:
                    served[str(host)] = Route(str(host), owner, "")
    for host, key in app_hosts.items():
        served[host] = Route(host, key, "")
    return served
