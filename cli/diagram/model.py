"""What the architecture drawing shows, as read from the offline plans: node groups, workloads, port
mappings, routes and data paths, and the Pulumi types they are read from (which the drawing never names).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from cli.plan import Plan

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
the chart's templates/_gateway.tpl, not by a value (see SSH_LISTENER_PORT_OF_CHART in components/gitlab_gateway.py)."""
KIND_TAINTS_ITS_CONTROL_PLANE = True
"""kind removes the control plane's NoSchedule taint only when the cluster has no other node
(kubernetes-sigs/kind pkg/cluster/internal/create/actions/kubeadminit/init.go: "if we are only
provisioning one node, remove the control plane taint"): a pod without a nodeSelector lands on a worker."""

ANY_WORKER = "any"
EVERY_NODE = "every"


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
    """The names the cluster DNS points at the gateway (the laptop's /etc/hosts line), in its order."""
    data: list[DataPath]
    phases: dict[str, list[str]]
    """Each phase's components, by name."""
    mirrors: list[tuple[str, str, str]] = field(default_factory=list)
    """The image cache's mirrors: (registry, container, phase), from the plans' mirror commands."""
    laptop_routes: list[Route] = field(default_factory=list)
    """The other names the gateway routes, which the cluster DNS does not rewrite: only the laptop calls them (Headlamp's)."""
    egress: list[tuple[str, str, str, str]] = field(default_factory=list)
    """What pods may reach where a NetworkPolicy limits them: (namespace, pods, may reach, phase)."""


def output(result: Plan, key: str) -> Any:
    """The planned value of the stack output `key`, or None (a secret, or no such output)."""
    entry = result.outputs.get(key) or {}
    return entry.get("value")


def walk(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every (path, value) inside `value`, itself first."""
    yield path, value
    if isinstance(value, Mapping):
        for key, inner in value.items():
            yield from walk(inner, (*path, str(key)))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from walk(inner, (*path, str(index)))


def relative_to(path: str, data_dir: str) -> str | None:
    """`path` relative to the folder `data_dir` (`.` for the folder itself), or None outside it."""
    pure, root = PurePosixPath(path), PurePosixPath(data_dir)
    return str(pure.relative_to(root)) if pure == root or root in pure.parents else None
