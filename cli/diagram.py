"""`blueprint diagram`: the architecture drawing, derived from the offline plans so it never drifts.

docs/architecture.md is generated, never edited by hand: a hand-drawn picture goes stale the day a
port, a node group or a volume changes, while one read from the plans shows what `pulumi up` would
really make. `--check` (run by the test suite) fails when the committed file is not what the
program would give.

What a person wants from it, each read from the plans' inputs (not from a table kept beside them):

- what runs where: the kind nodes (phase1's kind config: roles and labels) and which workload lands
  on which node group (the nodeSelectors in chart values and pod specs; the Runner's job pods from
  its `config.toml`); a workload without one goes to any worker, because kind taints the control
  plane of a cluster that has workers;
- which hosts and ports reach what: the laptop's 127.0.0.1 ports (the kind config's port mappings
  and the API server's address) to the NodePort behind each; the names the cluster DNS points at
  the gateway (the same names as the laptop's `/etc/hosts` line) to what serves them;
- where data lives: the host data folder, what the nodes mount of it, each volume's folder, the
  CA certificate and the secret files;
- which phase (stack) owns each of these.

Nothing here names a Pulumi type: a reader wants GitLab, not `kubernetes:helm.sh/v3:Release`.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from cli.plan import Plan, ProgramFailed, plan
from stacks import outputs
from stacks.config import PROJECT_DIR
from stacks.config.schema import defaults_only

PHASES = ("phase1", "phase2", "phase3")
DEFAULT_OUTPUT = PROJECT_DIR / "docs" / "architecture.md"
COMMAND = "uv run blueprint diagram"

COMMAND_TYPE = "command:local:Command"
RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
POD_OWNER_TYPES = {
    "kubernetes:apps/v1:Deployment": "Deployment",
    "kubernetes:apps/v1:StatefulSet": "StatefulSet",
    "kubernetes:apps/v1:DaemonSet": "DaemonSet",
    "kubernetes:postgresql.cnpg.io/v1:Cluster": "CloudNativePG cluster",
}
"""The kinds whose pods run for good (a Job's pods come and go), with how the drawing calls them."""
PV_TYPE = "kubernetes:core/v1:PersistentVolume"
GATEWAY_PATCH_TYPE = "kubernetes:gateway.networking.k8s.io/v1:GatewayPatch"
DNS_PATCH_TYPE = "kubernetes:core/v1:ConfigMapPatch"
HOST_SECRET_TYPE = "pulumi-python:dynamic/blueprint:HostSecret"
RUNNER_TYPE = "pulumi-python:dynamic/gitlab:Runner"
PROJECT_TYPE = "pulumi-python:dynamic/gitlab:Project"
PROJECT_VARIABLE_TYPE = "pulumi-python:dynamic/gitlab:ProjectVariable"

GITLAB_CHART_ROUTES = {
    "gitlab": "GitLab's web UI, API and Git over HTTPS (webservice)",
    "registry": "the container registry",
    "kas": "the agent server (KAS)",
}
"""The names the GitLab chart routes on its own Gateway, under `global.hosts.domain`, and what
answers each: charts/gitlab/charts/webservice/templates/httproute.yaml (`gitlab.gitlab.hostname`),
charts/registry/templates/httproute.yaml and charts/gitlab/charts/kas/templates/httproute.yaml
(mirror nobidev/gitlab-charts). Chart knowledge, not in the plan: the routes are rendered by Helm."""
GITLAB_CHART_SSH = (22, "Git over SSH (gitlab-shell)")
"""The GitLab chart's `gitlab-ssh` TCP listener on its Gateway, routed to gitlab-shell: its port is set in
the chart's templates/_gateway.tpl, not by a value (see SSH_LISTENER_PORT_OF_CHART in components/gitlab.py)."""
KIND_TAINTS_ITS_CONTROL_PLANE = True
"""kind removes the control plane's NoSchedule taint only when the cluster has no other node
(kubernetes-sigs/kind pkg/cluster/internal/create/actions/kubeadminit/init.go: "if we are only
provisioning one node, remove the control plane taint"): a pod without a nodeSelector lands on a worker."""

ANY_WORKER = "any"
EVERY_NODE = "every"
PHASE_STYLES = {"phase1": "fill:#e8f0fe,stroke:#4a6fb5", "phase2": "fill:#e6f4ea,stroke:#3c8a55", "phase3": "fill:#fef3e0,stroke:#c27c0e"}


def mermaid_id(text: str) -> str:
    """A Mermaid-safe id for `text`: letters, digits and underscores only, starting with a letter,
    so no character of a name (`:`, `$`, `/`, `-`, `.`) can end the id or start an arrow.
    """
    cleaned = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")
    return cleaned if cleaned[:1].isalpha() else f"n_{cleaned}"


def _label(text: str) -> str:
    """`text` as a quoted Mermaid label (a quote would end it)."""
    return '"' + text.replace('"', "#quot;") + '"'


def _cell(text: str) -> str:
    """`text` in a Markdown table cell (a bar would end it)."""
    return text.replace("|", "\\|")


# --- what the plans say ---------------------------------------------------------------------------


@dataclass
class NodeGroup:
    """The kind nodes of one role with the same labels."""

    key: str
    role: str
    labels: dict[str, str]
    count: int
    phase: str

    @property
    def title(self) -> str:
        if self.role == "control-plane":
            return "control plane"
        if not self.labels:
            return "workers"
        selector = ", ".join(f"{key}={value}" for key, value in sorted(self.labels.items()))
        return f"{' '.join(sorted(self.labels.values()))} workers ({selector})"


@dataclass
class Workload:
    """Something whose pods run for good (a Helm release, a Deployment, ...), the gateway, or a Runner's jobs."""

    key: str
    name: str
    what: str
    namespace: str
    phase: str
    placement: str
    """A NodeGroup key, ANY_WORKER or EVERY_NODE."""
    node_ports: dict[int, int | None] = field(default_factory=dict)
    """NodePort -> the Service port it reaches, when the plan says."""
    forwards: dict[int, tuple[str, str]] = field(default_factory=dict)
    """A gateway's TCP ports: Service port -> the key of the workload behind it, and what it serves."""


@dataclass
class PortMapping:
    host_address: str
    host_port: int
    target_port: int
    """The NodePort (or the API server's port) the host port reaches."""
    phase: str


@dataclass
class Route:
    host: str
    workload: str
    """The key of the workload that answers, or "" when no plan says."""
    serves: str


@dataclass
class DataPath:
    path: str
    """Relative to the data folder."""
    what: str
    node_path: str
    """Where the nodes see it, or ""."""
    phase: str
    workload: str = ""
    """The workload whose volume this folder is, or ""."""
    mount: bool = False
    """Whether the nodes mount exactly this folder (kind's extraMounts)."""
    claim: bool = False
    """Whether it is only a folder a stack claims (its `.blueprint-owner` names the stack), nothing more."""


@dataclass
class Architecture:
    cluster: str
    cluster_phase: str
    domain: str
    data_dir: str
    """The data folder as the defaults give it: relative to the checkout when inside it."""
    api_server: PortMapping | None
    groups: list[NodeGroup]
    workloads: list[Workload]
    mappings: list[PortMapping]
    gateway: str
    """The key of the workload that is the gateway (serves the names the cluster DNS points at it)."""
    routes: list[Route]
    data: list[DataPath]
    phases: dict[str, list[str]]
    """Each phase's components, by name."""
    mirrors: list[tuple[str, str, str]] = field(default_factory=list)
    """The image cache's mirrors: (registry, container, phase), from the plans' mirror commands."""


def _output(result: Plan, key: str) -> Any:
    entry = result.outputs.get(key) or {}
    return entry.get("value")


def _walk(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every (path, value) inside `value`, itself first."""
    yield path, value
    if isinstance(value, Mapping):
        for key, inner in value.items():
            yield from _walk(inner, (*path, str(key)))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _walk(inner, (*path, str(index)))


def _kind_config(plans: Sequence[Plan]) -> tuple[dict[str, Any], Plan] | None:
    """The kind config a Command feeds to `kind create cluster --config=-`, and the plan it is in."""
    for result in plans:
        for resource in result.find(COMMAND_TYPE):
            stdin = resource["inputs"].get("stdin")
            if isinstance(stdin, str) and stdin.startswith("kind: Cluster"):
                return dict(yaml.safe_load(stdin)), result
    return None


def _node_groups(config: Mapping[str, Any], phase: str) -> list[NodeGroup]:
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
        for path, value in _walk(inputs)
        if path
        and path[-1] in ("nodeSelector", "node_selector")
        and isinstance(value, Mapping)
        and not (skip and path[: len(skip)] == skip)
    ]


def _tolerates_all(inputs: Any) -> bool:
    return any(
        path and path[-1] == "tolerations" and isinstance(value, list) and any(t == {"operator": "Exists"} for t in value)
        for path, value in _walk(inputs)
    )


ENVOY = ("values", "gatewayApiResources", "envoy")
"""Where the GitLab chart's values describe its Envoy proxy (the gateway): its pods and its Service."""


def _workloads(plans: Sequence[Plan], groups: Sequence[NodeGroup]) -> tuple[list[Workload], str]:
    """Every long-running workload of the plans, and which one is the gateway."""
    workloads: list[Workload] = []
    gateway = ""
    gateways = {
        (r["inputs"]["metadata"].get("namespace"), r["inputs"]["metadata"]["name"])
        for result in plans
        for r in result.find(GATEWAY_PATCH_TYPE)
    }
    for result in plans:
        runners = {r["parent"]: r["inputs"] for r in result.find(RUNNER_TYPE)}
        for resource in result.resources:
            inputs = resource["inputs"]
            if resource["type"] == RELEASE_TYPE:
                namespace, name = str(inputs.get("namespace", "default")), str(inputs.get("name", resource["name"]))
                version = f" {inputs['version']}" if inputs.get("version") else ""
                values = inputs.get("values") or {}
                envoy = (values.get("gatewayApiResources") or {}).get("envoy")
                workload = Workload(
                    f"{result.stack}/{namespace}/{name}",
                    name,
                    f"Helm chart {inputs.get('chart')}{version}",
                    namespace,
                    result.stack,
                    _placement(_selectors(inputs, skip=ENVOY), _tolerates_all(inputs), groups),
                )
                workloads.append(workload)
                if envoy:
                    kubernetes = envoy.get("proxySpec", {}).get("provider", {}).get("kubernetes", {})
                    service = kubernetes.get("envoyService", {})
                    ports = (service.get("patch", {}).get("value", {}).get("spec", {}) or {}).get("ports", [])
                    names = sorted(gw for ns, gw in gateways if ns == namespace)
                    gateway = f"{result.stack}/{namespace}/gateway"
                    workloads.append(
                        Workload(
                            gateway,
                            f"gateway {', '.join(names)}" if names else "gateway",
                            f"Envoy, Service {service.get('name', '?')}, from the {name} chart",
                            namespace,
                            result.stack,
                            _placement(_selectors(kubernetes), False, groups),
                            {int(p["nodePort"]): int(p["port"]) for p in ports if "nodePort" in p},
                            {GITLAB_CHART_SSH[0]: (workload.key, GITLAB_CHART_SSH[1])} if inputs.get("chart") == "gitlab" else {},
                        )
                    )
                else:
                    workload.node_ports = {
                        int(value["nodePort"]): int(value["port"]) if isinstance(value.get("port"), int) else None
                        for path, value in _walk(values)
                        if isinstance(value, Mapping) and isinstance(value.get("nodePort"), int)
                    }
                config = (values.get("runners") or {}).get("config")
                if isinstance(config, str):
                    runner = runners.get(resource["parent"], {})
                    tags = ", ".join(runner.get("tag_list") or [])
                    which = ("untagged, or tagged " if runner.get("run_untagged") else "tagged ") + tags if tags else "every job"
                    for entry in tomllib.loads(config).get("runners", []):
                        job_selectors = [(entry.get("kubernetes") or {}).get("node_selector") or {}]
                        workloads.append(
                            Workload(
                                f"{result.stack}/{namespace}/{name}/jobs",
                                "CI jobs",
                                f"{which}",
                                namespace,
                                result.stack,
                                _placement(job_selectors, False, groups),
                            )
                        )
            elif resource["type"] in POD_OWNER_TYPES:
                metadata = inputs.get("metadata") or {}
                namespace, name = str(metadata.get("namespace", "default")), str(metadata.get("name", resource["name"]))
                workloads.append(
                    Workload(
                        f"{result.stack}/{namespace}/{name}",
                        name,
                        POD_OWNER_TYPES[resource["type"]],
                        namespace,
                        result.stack,
                        _placement(_selectors(inputs), _tolerates_all(inputs), groups),
                    )
                )
    return workloads, gateway


def _apps(plans: Sequence[Plan], groups: Sequence[NodeGroup]) -> tuple[list[Workload], dict[str, str]]:
    """The apps the projects' pipelines deploy (a project with a chart directory), and each app's host."""
    apps_namespace = next((str(v) for result in plans if (v := _output(result, outputs.APPS_NAMESPACE))), "apps")
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


def _dns_names(plans: Sequence[Plan]) -> list[tuple[str, str]]:
    """The names the cluster DNS rewrites, with their target: the laptop's /etc/hosts line."""
    names = []
    for result in plans:
        for resource in result.find(DNS_PATCH_TYPE):
            corefile = str((resource["inputs"].get("data") or {}).get("Corefile", ""))
            names += re.findall(r"^\s*rewrite name exact (\S+) (\S+)", corefile, re.MULTILINE)
    return names


def _routes(plans: Sequence[Plan], workloads: Sequence[Workload], app_hosts: Mapping[str, str]) -> list[Route]:
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
            for _path, value in _walk(values):
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
    return [served.get(host) or Route(host, "", "") for host, _ in _dns_names(plans)]


def _relative(path: str, data_dir: str) -> str | None:
    pure, root = PurePosixPath(path), PurePosixPath(data_dir)
    return str(pure.relative_to(root)) if pure == root or root in pure.parents else None


def _data(
    plans: Sequence[Plan], config: Mapping[str, Any], kind_phase: str, data_dir: str, workloads: Sequence[Workload]
) -> list[DataPath]:
    found: dict[str, DataPath] = {}
    mounts: dict[str, str] = {}
    nodes = config.get("nodes") or []
    for mount in (nodes[0].get("extraMounts") or []) if nodes else []:
        every = all(mount in (node.get("extraMounts") or []) for node in nodes)
        relative = _relative(str(mount["hostPath"]), data_dir)
        if relative is None:
            continue
        mounts[str(mount["containerPath"])] = relative
        access = "read-only" if mount.get("readOnly") else "read-write"
        where = "every node" if every else "some nodes"
        found[relative] = DataPath(relative, f"mounted on {where}, {access}", str(mount["containerPath"]), kind_phase, mount=True)
    for result in plans:
        owners = {
            w.namespace: w.key for w in workloads if w.phase == result.stack and not w.key.endswith("/jobs") and "/gateway" not in w.key
        }
        for resource in result.find(COMMAND_TYPE):
            env = resource["inputs"].get("environment") or {}
            if "FOLDER" in env and "OWNER" in env:
                folder = _relative(str(env["FOLDER"]), data_dir)
                if folder is not None and folder != ".":
                    found.setdefault(
                        folder, DataPath(folder, f"claimed by {str(env['OWNER']).split('@')[0]}", "", result.stack, claim=True)
                    )
            if "CA_FILE" in env and (relative := _relative(str(env["CA_FILE"]), data_dir)):
                found[relative] = DataPath(relative, "the platform CA's certificate: trust it on the laptop", "", result.stack)
            if "HOSTS_DIR" in env and "REGISTRY_HOST" in env and (relative := _relative(str(env["HOSTS_DIR"]), data_dir)):
                path = f"{relative}/{env['REGISTRY_HOST']}"
                found[path] = DataPath(path, "how containerd pulls from the registry: hosts.toml and the CA", "", result.stack)
        for resource in result.find(HOST_SECRET_TYPE):
            relative = _relative(str(resource["inputs"].get("path", "")), data_dir)
            if relative:
                found[relative] = DataPath(relative, f"secret {resource['name']}", "", result.stack)
        for resource in result.find(PV_TYPE):
            spec = resource["inputs"].get("spec") or {}
            node_path = str((spec.get("hostPath") or {}).get("path", ""))
            base = next((m for m in sorted(mounts, key=len, reverse=True) if node_path.startswith(m + "/")), None)
            if base is None:
                continue
            relative = f"{mounts[base]}/{node_path[len(base) + 1 :]}"
            claim = spec.get("claimRef") or {}
            size = (spec.get("capacity") or {}).get("storage", "")
            found[relative] = DataPath(
                relative,
                f"volume {claim.get('namespace')}/{claim.get('name')} ({size})",
                node_path,
                result.stack,
                owners.get(str(claim.get("namespace")), ""),
            )
    for entry in found.values():
        # What the nodes see of it: anything inside a mounted folder.
        if not entry.node_path:
            above = next((m for m, r in mounts.items() if entry.path.startswith(r + "/")), None)
            entry.node_path = f"{above}/{entry.path[len(mounts[above]) + 1 :]}" if above else ""
    return sorted(found.values(), key=lambda d: d.path)


def _mirrors(plans: Sequence[Plan]) -> list[tuple[str, str, str]]:
    """(registry, container, phase) of each image cache mirror the plans start (components/image_cache.py)."""
    from components.image_cache import mirror_cache_folder

    return sorted(
        (str(r["inputs"]["environment"]["REGISTRY"]), str(r["inputs"]["environment"]["CONTAINER"]), result.stack)
        for result in plans
        for r in result.resources
        if r["type"] == "command:local:Command" and mirror_cache_folder(r["inputs"])
    )


def architecture(plans: Sequence[Plan]) -> Architecture:
    """What the drawing shows, read from `plans` (phase1, phase2, phase3, or dev's one plan)."""
    kind = _kind_config(plans)
    config, kind_plan = kind if kind else ({}, plans[0])
    groups = _node_groups(config, kind_plan.stack)
    workloads, gateway = _workloads(plans, groups)
    apps, app_hosts = _apps(plans, groups)
    workloads += apps
    data_dir = str(_output(kind_plan, outputs.DATA_DIR) or "")
    shown_data_dir = _relative(data_dir, str(PROJECT_DIR)) or data_dir
    networking = config.get("networking") or {}
    api_server = (
        PortMapping(
            str(networking.get("apiServerAddress", "127.0.0.1")),
            int(networking["apiServerPort"]),
            int(networking["apiServerPort"]),
            kind_plan.stack,
        )
        if "apiServerPort" in networking
        else None
    )
    mappings = [
        PortMapping(str(m.get("listenAddress", "0.0.0.0")), int(m["hostPort"]), int(m["containerPort"]), kind_plan.stack)
        for node in config.get("nodes") or []
        for m in node.get("extraPortMappings") or []
    ]
    phases: dict[str, list[str]] = {}
    for result in plans:
        top = {r["urn"] for r in result.resources if r["parent"] is None}
        phases[result.stack] = [r["name"] for r in result.resources if not r["custom"] and r["parent"] in top]
    return Architecture(
        cluster=str(_output(kind_plan, outputs.CLUSTER_NAME) or "kind"),
        cluster_phase=kind_plan.stack,
        domain=str(next((v for result in plans if (v := _output(result, outputs.DOMAIN))), "")),
        data_dir=shown_data_dir,
        api_server=api_server,
        groups=groups,
        workloads=sorted(workloads, key=lambda w: (w.phase, w.namespace, w.key)),
        mappings=mappings,
        gateway=gateway,
        routes=_routes(plans, workloads, app_hosts),
        data=_data(plans, config, kind_plan.stack, data_dir, workloads),
        phases=phases,
        mirrors=_mirrors(plans),
    )


# --- the drawing ----------------------------------------------------------------------------------


def _ids(arch: Architecture) -> dict[str, str]:
    """A Mermaid id for each thing drawn, by its key; keys that clean to one id get a hash suffix."""
    keys = [f"group {g.key}" for g in arch.groups] + [f"workload {w.key}" for w in arch.workloads]
    keys += [f"port {m.host_port}" for m in arch.mappings] + [f"data {d.path}" for d in arch.data]
    ids: dict[str, str] = {}
    counts: dict[str, int] = {}
    for key in keys:
        counts[mermaid_id(key)] = counts.get(mermaid_id(key), 0) + 1
    for key in keys:
        plain = mermaid_id(key)
        ids[key] = plain if counts[plain] == 1 else f"{plain}_{hashlib.sha256(key.encode()).hexdigest()[:8]}"
    return ids


def _workload_label(workload: Workload) -> str:
    return f"{workload.name}<br/>{workload.what}<br/>ns {workload.namespace} · {workload.phase}"


def _secret_folders(data: Sequence[DataPath]) -> dict[str, list[DataPath]]:
    """Secret files by folder: drawn as one box per folder, listed in the table."""
    folders: dict[str, list[DataPath]] = {}
    for entry in data:
        if entry.what.startswith("secret "):
            folders.setdefault(str(PurePosixPath(entry.path).parent), []).append(entry)
    return folders


def mermaid(plans: Sequence[Plan]) -> str:
    """A Mermaid flowchart of `plans`: the laptop, the cluster's node groups and the data folder."""
    return _mermaid(architecture(plans))


def _mermaid(arch: Architecture) -> str:
    ids = _ids(arch)
    workload_id = {w.key: ids[f"workload {w.key}"] for w in arch.workloads}
    by_phase: dict[str, list[str]] = {}
    lines = ["flowchart LR"]

    lines.append('  subgraph laptop["Laptop, 127.0.0.1"]')
    lines.append('    you["you: browser, git, docker, kubectl, bao<br/>blueprint up (Pulumi)"]')
    for mapping in [*arch.mappings, *([arch.api_server] if arch.api_server else [])]:
        port_id = ids.get(f"port {mapping.host_port}") or mermaid_id(f"port {mapping.host_port}")
        lines.append(f"    {port_id}[{_label(f'{mapping.host_address}:{mapping.host_port}')}]")
        by_phase.setdefault(mapping.phase, []).append(port_id)
    lines.append("  end")

    lines.append(f"  subgraph cluster[{_label(f'kind cluster {arch.cluster} · {arch.cluster_phase}')}]")
    placements = [(g.key, f"{g.title}: {g.count} node{'s' if g.count != 1 else ''}") for g in arch.groups]
    placements += [(EVERY_NODE, "on every node"), (ANY_WORKER, "on any worker (no nodeSelector)")]
    for key, title in placements:
        inside = [w for w in arch.workloads if w.placement == key]
        group_id = ids.get(f"group {key}") or mermaid_id(f"group {key}")
        if not inside and key in (EVERY_NODE, ANY_WORKER):
            continue
        lines.append(f"    subgraph {group_id}[{_label(title)}]")
        if key == "control-plane" and arch.api_server:
            lines.append(f"      api[{_label('Kubernetes API server')}]")
            by_phase.setdefault(arch.cluster_phase, []).append("api")
        for workload in inside:
            lines.append(f"      {workload_id[workload.key]}[{_label(_workload_label(workload))}]")
            by_phase.setdefault(workload.phase, []).append(workload_id[workload.key])
        lines.append("    end")
    lines.append("  end")

    secrets = _secret_folders(arch.data)
    lines.append(f"  subgraph data[{_label(f'data folder {arch.data_dir} on the laptop')}]")
    for entry in arch.data:
        if entry.what.startswith("secret ") or entry.claim:
            continue
        data_id = ids[f"data {entry.path}"]
        label = entry.path if entry.path.endswith((".crt", ".key", ".json", ".yml")) else f"{entry.path}/"
        lines.append(f"    {data_id}[{_label(f'{label}<br/>{entry.phase}')}]")
        by_phase.setdefault(entry.phase, []).append(data_id)
    for folder, files in sorted(secrets.items()):
        folder_id = mermaid_id(f"secrets {folder}")
        phases = sorted({f.phase for f in files})
        lines.append(f"    {folder_id}[{_label(f'{folder}/<br/>{len(files)} secret files · ' + ', '.join(phases))}]")
        by_phase.setdefault(phases[0], []).append(folder_id)
    lines.append("  end")

    if arch.mirrors:
        # The folder is the user's cache folder (blueprint:imageCacheDir), different on each machine: not drawn.
        lines.append(f"  subgraph image_cache[{_label('image cache: Docker containers on kind’s network, storing in imageCacheDir')}]")
        for registry, container, phase in arch.mirrors:
            mirror_id = mermaid_id(f"mirror {registry}")
            lines.append(f"    {mirror_id}[{_label(f'{container}<br/>mirror of {registry} · {phase}')}]")
            by_phase.setdefault(phase, []).append(mirror_id)
        lines.append("  end")

    ports = {m.target_port: m for m in arch.mappings}
    for workload in arch.workloads:
        for node_port, port in sorted(workload.node_ports.items()):
            if node_port in ports:
                port_id = ids[f"port {ports[node_port].host_port}"]
                to = f"NodePort {node_port} → :{port}" if port else f"NodePort {node_port}"
                lines.append(f"  {port_id} -->|{_label(to)}| {workload_id[workload.key]}")
    if arch.api_server:
        lines.append(f"  {mermaid_id(f'port {arch.api_server.host_port}')} --> api")
    for route in arch.routes:
        if route.workload in workload_id and arch.gateway in workload_id and route.workload != arch.gateway:
            lines.append(f"  {workload_id[arch.gateway]} -->|{_label(route.host)}| {workload_id[route.workload]}")
    for workload in arch.workloads:
        for port, (behind, _serves) in sorted(workload.forwards.items()):
            if behind in workload_id:
                lines.append(f"  {workload_id[workload.key]} -->|{_label(f'SSH :{port}')}| {workload_id[behind]}")
    for entry in arch.data:
        if entry.mount:
            lines.append(f"  cluster -.-|{_label(f'mounts at {entry.node_path}')}| {ids[f'data {entry.path}']}")
        if entry.workload in workload_id:
            lines.append(f"  {workload_id[entry.workload]} --- {ids[f'data {entry.path}']}")
    if arch.mirrors:
        lines.append(f"  cluster -.->|{_label('pulls through them (containerd hosts.toml), else from the registry')}| image_cache")
    for folder in sorted(secrets):
        lines.append(f"  you -.-|{_label('reads and writes; no node mounts it')}| {mermaid_id(f'secrets {folder}')}")

    for phase, members in sorted(by_phase.items()):
        if phase in PHASE_STYLES:
            lines.append(f"  classDef {phase} {PHASE_STYLES[phase]}")
            lines.append(f"  class {','.join(sorted(set(members)))} {phase}")
    return "\n".join(lines) + "\n"


# --- the document ---------------------------------------------------------------------------------


def _tables(arch: Architecture) -> list[str]:
    by_key = {w.key: w for w in arch.workloads}
    group_title = {g.key: g.title for g in arch.groups} | {EVERY_NODE: "every node", ANY_WORKER: "any worker"}

    nodes = [
        f"The nodes are the kind cluster's ({arch.cluster_phase}); each workload says its namespace and the phase that deploys it.",
        "",
        "| node group | nodes | what runs there |",
        "|---|---:|---|",
    ]
    for group in arch.groups:
        inside = [w for w in arch.workloads if w.placement == group.key]
        runs = ", ".join(f"{w.name} ({w.namespace}, {w.phase})" for w in inside) or (
            "the Kubernetes API server" if group.role == "control-plane" else "—"
        )
        nodes.append(f"| {_cell(group.title)} | {group.count} | {_cell(runs)} |")
    for key in (EVERY_NODE, ANY_WORKER):
        inside = [w for w in arch.workloads if w.placement == key]
        if inside:
            runs = ", ".join(f"{w.name} ({w.namespace}, {w.phase})" for w in inside)
            nodes.append(f"| {group_title[key]} | | {_cell(runs)} |")

    gateway = by_key.get(arch.gateway)
    ports = ["| on the laptop | reaches | in namespace | mapped by | served by |", "|---|---|---|---|---|"]
    for mapping in arch.mappings:
        target = next(((w, p) for w in arch.workloads for n, p in w.node_ports.items() if n == mapping.target_port), None)
        if target:
            workload, port = target
            reaches = f"NodePort {mapping.target_port} → {workload.name}" + (f" :{port}" if port else "")
            if port in workload.forwards and (behind := by_key.get(workload.forwards[port][0])):
                reaches += f" → {behind.name}: {workload.forwards[port][1]}"
            row = [_cell(reaches), workload.namespace, mapping.phase, workload.phase]
        else:
            row = [f"NodePort {mapping.target_port}, which nothing in the plans serves", "", mapping.phase, ""]
        ports.append(f"| {mapping.host_address}:{mapping.host_port} | " + " | ".join(row) + " |")
    if arch.api_server:
        api = arch.api_server
        ports.append(f"| {api.host_address}:{api.host_port} | the Kubernetes API server (kubectl, Pulumi) | | {api.phase} | {api.phase} |")

    https = next((m for m in arch.mappings if gateway and gateway.node_ports.get(m.target_port) == 443), None)
    through = (
        f"{https.host_address}:{https.host_port} → {gateway.name}" if https and gateway else gateway.name if gateway else "the gateway"
    )
    names = [
        "Every name below resolves to 127.0.0.1 on the laptop (the `/etc/hosts` line) and, inside the cluster, to the gateway",
        f"(a DNS rewrite); each goes through {_cell(through)}.",
        "",
        "| name | served by | in namespace | phase |",
        "|---|---|---|---|",
    ]
    for route in arch.routes:
        server = by_key.get(route.workload)
        if server:
            serves = f"{server.name}: {route.serves or server.what}"
            names.append(f"| {route.host} | {_cell(serves)} | {server.namespace} | {server.phase} |")
        else:
            names.append(f"| {route.host} | nothing the plans show | | |")

    data = ["| path in the data folder | what | on the nodes at | phase |", "|---|---|---|---|"]
    for entry in arch.data:
        what = entry.what
        if entry.workload in by_key:
            what += f", used by {by_key[entry.workload].name}"
        data.append(f"| `{entry.path}` | {_cell(what)} | {f'`{entry.node_path}`' if entry.node_path else '—'} | {entry.phase} |")

    phases = ["| phase | its components | resources |", "|---|---|---:|"]
    return [
        "## What runs where",
        "",
        *nodes,
        "",
        "## Ports on the laptop",
        "",
        *ports,
        "",
        "## Names",
        "",
        *names,
        "",
        "## Where data lives",
        "",
        f"The data folder is on the laptop: `blueprint:dataDir`, by default `{arch.data_dir}` in the checkout. The nodes mount",
        "only what the table says they do; everything else in it only blueprint, on the laptop, reads and writes.",
        "",
        *data,
        "",
        "## Phases",
        "",
        *phases,
    ]


def render_document(plans: Sequence[Plan]) -> str:
    """docs/architecture.md: the drawing of `plans` and its tables."""
    arch = architecture(plans)
    stacks = ", ".join(result.stack for result in plans)
    phase_rows = [f"| {result.stack} | {', '.join(arch.phases[result.stack])} | {len(result.resources)} |" for result in plans]
    tables = _tables(arch)
    return "\n".join(
        [
            "# Architecture",
            "",
            f"Generated by `{COMMAND}` from the offline plans of {stacks}, with the default configuration",
            f"(domain `{arch.domain}`, cluster `{arch.cluster}`); never edit it by hand, regenerate it.",
            "Boxes are coloured by the phase that makes them; an arrow from a laptop port is kind's port mapping to a",
            "NodePort, an arrow from the gateway is a name it routes, a line to a folder is where that data lives.",
            "",
            "```mermaid",
            _mermaid(arch).rstrip("\n"),
            "```",
            "",
            *tables,
            *phase_rows,
            "",
        ]
    )


def run(argv: list[str] | None = None) -> int:
    """`blueprint diagram [--output PATH] [--check]`: write the document, or check it is current."""
    parser = argparse.ArgumentParser(prog="blueprint diagram", description="Write docs/architecture.md from the offline plans.")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help=f"where to write (default {DEFAULT_OUTPUT})")
    parser.add_argument("--check", action="store_true", help="exit 1 when the file differs from what would be generated")
    args = parser.parse_args(argv)
    output: Path = args.output
    try:
        # The project's architecture, not this checkout's settings: the stack files are not read.
        with defaults_only():
            document = render_document([plan(stack) for stack in PHASES])
    except ProgramFailed as failed:
        print(f"error: a phase does not plan, so there is nothing to draw: {failed.cause}", file=sys.stderr)
        return 1
    if args.check:
        current = output.read_text() if output.exists() else None
        if current != document:
            state = "is missing" if current is None else "is out of date with the program"
            print(f"{output} {state}: run `{COMMAND}` and commit the result.", file=sys.stderr)
            return 1
        print(f"{output} is up to date.")
        return 0
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(document)
    print(f"wrote {output}")
    return 0
