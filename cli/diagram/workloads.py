"""What runs where, read from the offline plans: the kind nodes (phase1's kind config: roles and
labels) and which workload lands on which node group (the nodeSelectors in chart values and pod
specs; the Runner's job pods from its `config.toml`). A workload without one goes to any worker,
because kind taints the control plane of a cluster that has workers.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from cli.diagram.model import (
    ANY_WORKER,
    COMMAND_TYPE,
    EVERY_NODE,
    GATEWAY_PATCH_TYPE,
    GITLAB_CHART_SSH,
    KIND_TAINTS_ITS_CONTROL_PLANE,
    POD_OWNER_TYPES,
    PROJECT_TYPE,
    PROJECT_VARIABLE_TYPE,
    RELEASE_TYPE,
    RUNNER_TYPE,
    NodeGroup,
    Workload,
    output,
    walk,
)
from cli.plan import Plan
from stacks import outputs


def kind_config(plans: Sequence[Plan]) -> tuple[dict[str, Any], Plan] | None:
    """The kind config a Command feeds to `kind create cluster --config=-`, and the plan it is in."""
    for result in plans:
        for resource in result.find(COMMAND_TYPE):
            stdin = resource["inputs"].get("stdin")
            if isinstance(stdin, str) and stdin.startswith("kind: Cluster"):
                return dict(yaml.safe_load(stdin)), result
    return None


def node_groups(config: Mapping[str, Any], phase: str) -> list[NodeGroup]:
    groups: dict[tuple[str, tuple[tuple[str, str], ...]], NodeGroup] = {}
    for node in config.get("nodes") or [{"role": "control-plane"}]:
        labels = {str(k): str(v) for k, v in (node.get("labels") or {}).items()}
        role = str(node.get("role", "control-plane"))
        ident = (role, tuple(sorted(labels.items())))
        if ident not in groups:
            key = "control-plane" if role == "control-plane" and not labels else "-".join([role, *labels.values()])
            groups[ident] = NodeGroup(key, role, labels, 0, phase)
        groups[ident].count += 1
    return list(groups.values())


def _placement(selectors: list[Mapping[str, Any]], tolerates_all: bool, groups: Sequence[NodeGroup]) -> str:
    """The node group the `selectors` pick (the first that picks one), else every node (a pod that
    tolerates every taint, as a DaemonSet's), else any worker (or the control plane when alone).
    """
    for selector in selectors:
        for group in groups:
            if selector and all(group.labels.get(str(k)) == str(v) for k, v in selector.items()):
                return group.key
    if tolerates_all:
        return EVERY_NODE
    if KIND_TAINTS_ITS_CONTROL_PLANE and any(group.role != "control-plane" for group in groups):
        return ANY_WORKER
    return groups[0].key if groups else ANY_WORKER


def _selectors(inputs: Any, skip: tuple[str, ...] = ()) -> list[Mapping[str, Any]]:
    return [
        value
        for path, value in walk(inputs)
        if path
        and path[-1] in ("nodeSelector", "node_selector")
        and isinstance(value, Mapping)
        and not (skip and path[: len(skip)] == skip)
    ]


def _tolerates_all(inputs: Any) -> bool:
    return any(
        path and path[-1] == "tolerations" and isinstance(value, list) and any(t == {"operator": "Exists"} for t in value)
        for path, value in walk(inputs)
    )


ENVOY = ("values", "gatewayApiResources", "envoy")
"""Where the GitLab chart's values describe its Envoy proxy (the gateway): its pods and its Service."""


def workloads(plans: Sequence[Plan], groups: Sequence[NodeGroup]) -> tuple[list[Workload], str]:
    """Every long-running workload of the plans, and which one is the gateway."""
    found: list[Workload] = []
    gateway = ""
    gateways = {
        (r["inputs"]["metadata"].get("namespace"), r["inputs"]["metadata"]["name"])
        for result in plans
        for r in result.find(GATEWAY_PATCH_TYPE)
    }
    for result in plans:
        runners = {r["parent"]: r["inputs"] for r in result.find(RUNNER_TYPE)}
        for resource in result.resources:
            if resource["type"] == RELEASE_TYPE:
                released, envoy = _release(result.stack, resource, groups, gateways, runners.get(resource["parent"], {}))
                found += released
                gateway = envoy or gateway
            elif resource["type"] in POD_OWNER_TYPES:
                found.append(_pod_owner(result.stack, resource, groups))
    return found, gateway


def _release(
    stack: str, resource: Mapping[str, Any], groups: Sequence[NodeGroup], gateways: set[tuple[Any, Any]], runner: Mapping[str, Any]
) -> tuple[list[Workload], str]:
    """A Helm release's workload; with the Envoy proxy of its chart, the gateway after it (whose key
    comes second); with a Runner's config, the CI jobs it starts.
    """
    inputs = resource["inputs"]
    namespace, name = str(inputs.get("namespace", "default")), str(inputs.get("name", resource["name"]))
    version = f" {inputs['version']}" if inputs.get("version") else ""
    values = inputs.get("values") or {}
    envoy = (values.get("gatewayApiResources") or {}).get("envoy")
    workload = Workload(
        f"{stack}/{namespace}/{name}",
        name,
        f"Helm chart {inputs.get('chart')}{version}",
        namespace,
        stack,
        _placement(_selectors(inputs, skip=ENVOY), _tolerates_all(inputs), groups),
    )
    found, gateway = [workload], ""
    if envoy:
        found.append(_gateway(workload, envoy, str(inputs.get("chart")), gateways, groups))
        gateway = found[-1].key
    else:
        workload.node_ports = {
            int(value["nodePort"]): int(value["port"]) if isinstance(value.get("port"), int) else None
            for path, value in walk(values)
            if isinstance(value, Mapping) and isinstance(value.get("nodePort"), int)
        }
    return [*found, *_ci_jobs(workload, values, runner, groups)], gateway


def _gateway(
    chart: Workload, envoy: Mapping[str, Any], chart_name: str, gateways: set[tuple[Any, Any]], groups: Sequence[NodeGroup]
) -> Workload:
    """The Envoy proxy a chart's values describe: its NodePorts, and the TCP port the GitLab chart forwards to gitlab-shell."""
    kubernetes = envoy.get("proxySpec", {}).get("provider", {}).get("kubernetes", {})
    service = kubernetes.get("envoyService", {})
    ports = (service.get("patch", {}).get("value", {}).get("spec", {}) or {}).get("ports", [])
    names = sorted(gw for ns, gw in gateways if ns == chart.namespace)
    return Workload(
        f"{chart.phase}/{chart.namespace}/gateway",
        f"gateway {', '.join(names)}" if names else "gateway",
        f"Envoy, Service {service.get('name', '?')}, from the {chart.name} chart",
        chart.namespace,
        chart.phase,
        _placement(_selectors(kubernetes), False, groups),
        {int(p["nodePort"]): int(p["port"]) for p in ports if "nodePort" in p},
        {GITLAB_CHART_SSH[0]: (chart.key, GITLAB_CHART_SSH[1])} if chart_name == "gitlab" else {},
    )


def _ci_jobs(chart: Workload, values: Mapping[str, Any], runner: Mapping[str, Any], groups: Sequence[NodeGroup]) -> list[Workload]:
    """The job pods of a GitLab Runner chart, placed by its `config.toml`; none for another chart."""
    config = (values.get("runners") or {}).get("config")
    if not isinstance(config, str):
        return []
    tags = ", ".join(runner.get("tag_list") or [])
    which = ("untagged, or tagged " if runner.get("run_untagged") else "tagged ") + tags if tags else "every job"
    return [
        Workload(
            f"{chart.key}/jobs",
            "CI jobs",
            f"{which}",
            chart.namespace,
            chart.phase,
            _placement([(entry.get("kubernetes") or {}).get("node_selector") or {}], False, groups),
        )
        for entry in tomllib.loads(config).get("runners", [])
    ]


def _pod_owner(stack: str, resource: Mapping[str, Any], groups: Sequence[NodeGroup]) -> Workload:
    inputs = resource["inputs"]
    metadata = inputs.get("metadata") or {}
    namespace, name = str(metadata.get("namespace", "default")), str(metadata.get("name", resource["name"]))
    return Workload(
        f"{stack}/{namespace}/{name}",
        name,
        POD_OWNER_TYPES[resource["type"]],
        namespace,
        stack,
        _placement(_selectors(inputs), _tolerates_all(inputs), groups),
    )


def apps(plans: Sequence[Plan], groups: Sequence[NodeGroup]) -> tuple[list[Workload], dict[str, str]]:
    """The apps the projects' pipelines deploy (a project with a chart directory), and each app's host."""
    apps_namespace = next((str(v) for result in plans if (v := output(result, outputs.APPS_NAMESPACE))), "apps")
    workloads: list[Workload] = []
    hosts: dict[str, str] = {}
    for result in plans:
        projects = {r["urn"]: r for r in result.find(PROJECT_TYPE)}
        variables = result.find(PROJECT_VARIABLE_TYPE)
        for urn, project in projects.items():
            mine = {str(v["inputs"].get("key")): v["inputs"].get("value") for v in variables if urn in v["dependsOn"]}
            if "CI_HELM_CHART_DIR" not in mine:
                continue
            name = str(project["inputs"].get("name", project["name"]))
            key = f"{result.stack}/{apps_namespace}/{name}"
            workloads.append(
                Workload(
                    key, name, "an app, deployed by its project's pipeline", apps_namespace, result.stack, _placement([], False, groups)
                )
            )
            if isinstance(mine.get("APP_HOST"), str):
                hosts[mine["APP_HOST"]] = key
    return workloads, hosts
