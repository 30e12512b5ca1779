"""What the platform asks of Docker: the CPU and memory requests of every pod, in one table, and
their sum for a config (`resources_needed`), which the doctor's memory and CPU checks compare with
what Docker has.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

GIB = 1024**3
MIB = 1024**2


@dataclass(frozen=True, kw_only=True)
class Request:
    """What one pod, or one container of it, asks the scheduler for, as Kubernetes quantities."""

    what: str
    cpu: str
    memory: str
    source: str
    ours: bool = False
    """Set by blueprint's own code (the offline plan shows it), not a default of a chart or of Kubernetes."""


# What the platform asks of Docker, in one place. kind gives every node the whole machine's CPUs and
# memory (kind#2805), so nothing stops an overcommitted cluster: the sum below is what Docker must
# really have. Jobs that run once (GitLab's migrations, the charts' certificate and secret jobs) are
# left out: GitLab's Rails pods wait in their init containers until the migrations are done.
# CI jobs are left out too: their pods request nothing (components/runner.py sets no `cpu_request`
# or `memory_request`, and GitLab Runner then sets none).
CLUSTER_REQUESTS = (
    Request(what="kube-apiserver", cpu="250m", memory="0", source="kubeadm phases/controlplane/manifests.go"),
    Request(what="kube-controller-manager", cpu="200m", memory="0", source="kubeadm phases/controlplane/manifests.go"),
    Request(what="kube-scheduler", cpu="100m", memory="0", source="kubeadm phases/controlplane/manifests.go"),
    Request(what="etcd", cpu="100m", memory="100Mi", source="kubeadm phases/etcd/local.go"),
    Request(what="CoreDNS (1 of 2 replicas)", cpu="100m", memory="70Mi", source="kubeadm phases/addons/dns/manifests.go"),
    Request(what="CoreDNS (2 of 2 replicas)", cpu="100m", memory="70Mi", source="kubeadm phases/addons/dns/manifests.go"),
)
PLATFORM_REQUESTS = (
    Request(what="GitLab webservice", cpu="300m", memory="2.5Gi", source="components/gitlab.py", ours=True),
    Request(what="GitLab workhorse", cpu="50m", memory="100Mi", source="components/gitlab.py", ours=True),
    Request(what="GitLab Sidekiq", cpu="200m", memory="1.5Gi", source="components/gitlab.py", ours=True),
    Request(what="GitLab Gitaly", cpu="100m", memory="400Mi", source="components/gitlab.py", ours=True),
    Request(what="GitLab Shell", cpu="20m", memory="64Mi", source="components/gitlab.py", ours=True),
    Request(what="GitLab KAS", cpu="20m", memory="128Mi", source="components/gitlab.py", ours=True),
    Request(what="GitLab registry", cpu="50m", memory="64Mi", source="components/gitlab.py", ours=True),
    Request(what="GitLab toolbox", cpu="50m", memory="350M", source="GitLab chart charts/gitlab/charts/toolbox/values.yaml"),
    Request(what="GitLab exporter", cpu="75m", memory="100M", source="GitLab chart charts/gitlab/charts/gitlab-exporter/values.yaml"),
    Request(what="Envoy Gateway controller", cpu="100m", memory="256Mi", source="envoyproxy/gateway charts/gateway-helm/values.yaml"),
    Request(what="Envoy proxy (the gateway)", cpu="100m", memory="512Mi", source="envoyproxy/gateway api/v1alpha1/shared_types.go"),
    Request(what="Envoy shutdown manager", cpu="10m", memory="32Mi", source="envoyproxy/gateway api/v1alpha1/shared_types.go"),
    Request(what="CloudNativePG operator", cpu="50m", memory="128Mi", source="components/postgres.py", ours=True),
    Request(what="PostgreSQL", cpu="250m", memory="512Mi", source="components/postgres.py", ours=True),
    Request(what="Valkey", cpu="50m", memory="128Mi", source="components/redis.py", ours=True),
    Request(what="MinIO", cpu="100m", memory="256Mi", source="components/minio.py", ours=True),
    Request(what="OpenBao", cpu="50m", memory="128Mi", source="components/openbao.py", ours=True),
    Request(what="GitLab Runner (CI jobs)", cpu="50m", memory="64Mi", source="components/runner.py", ours=True),
    Request(what="GitLab Runner (image builds)", cpu="50m", memory="64Mi", source="components/runner.py", ours=True),
)
HEADLAMP_REQUESTS = (Request(what="Headlamp", cpu="50m", memory="64Mi", source="components/headlamp.py", ours=True),)
NODE_OVERHEAD = (
    Request(what="kindnet", cpu="100m", memory="50Mi", source="kind pkg/build/nodeimage/const_cni.go"),
    Request(what="node-registry hosts keeper", cpu="5m", memory="8Mi", source="components/node_registry.py", ours=True),
    # kubelet and containerd are no pods and request nothing, yet hold memory on every node: these
    # are the bounds Kubernetes' own e2e test allows them on a node without pods (test/e2e/node/
    # kubelet_perf.go, "podsPerNode: 0"; set "generously", which leaves room for kube-proxy, which
    # requests nothing either). No CPU for them: CPU is shared, and a busy CPU only slows things.
    Request(what="kubelet", cpu="0", memory="200Mi", source="kubernetes test/e2e/node/kubelet_perf.go"),
    Request(what="containerd", cpu="0", memory="125Mi", source="kubernetes test/e2e/node/kubelet_perf.go"),
)
"""Per node: the kind cluster has the control plane, `gitlabNodes` and `runnerNodes` workers."""

_QUANTITY = re.compile(r"(\d+(?:\.\d+)?)(m|Mi|Gi|M|G)?")
_SCALE = {None: 1, "m": 1 / 1000, "Mi": MIB, "Gi": GIB, "M": 10**6, "G": 10**9}


def quantity(text: str) -> float:
    """A Kubernetes quantity (the few suffixes above) as a number: "250m" is 0.25, "2.5Gi" bytes."""
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise ValueError(f"not a Kubernetes quantity this table uses: {text!r}")
    return float(match.group(1)) * _SCALE[match.group(2)]


NODE_MEMORY_BYTES = round(sum(quantity(request.memory) for request in NODE_OVERHEAD))
"""What each node adds to the memory needed."""


@dataclass(frozen=True, kw_only=True)
class Needs:
    """What Docker must give the cluster: the sum of the tables above for one config."""

    memory_bytes: int
    millicpus: int
    nodes: int

    @property
    def cpus(self) -> int:
        """Whole CPUs, as Docker counts them."""
        return math.ceil(self.millicpus / 1000)

    @property
    def gib(self) -> int:
        """Whole GiB, as Docker Desktop's setting counts them."""
        return math.ceil(self.memory_bytes / GIB)

    @property
    def why(self) -> str:
        return f"{self.nodes} nodes + platform requests"


def resources_needed(*, gitlab_nodes: int, runner_nodes: int, headlamp: bool) -> Needs:
    """What a cluster of these node counts, with the platform on it, needs of Docker."""
    nodes = 1 + gitlab_nodes + runner_nodes
    requests = [*CLUSTER_REQUESTS, *PLATFORM_REQUESTS, *(HEADLAMP_REQUESTS if headlamp else ()), *NODE_OVERHEAD * nodes]
    return Needs(
        memory_bytes=round(sum(quantity(request.memory) for request in requests)),
        millicpus=round(sum(quantity(request.cpu) for request in requests) * 1000),
        nodes=nodes,
    )


def default_needs() -> Needs:
    """What the default config (Pulumi.yaml) needs."""
    from stacks.config.schema import default_string

    return resources_needed(
        gitlab_nodes=int(default_string("gitlabNodes")),
        runner_nodes=int(default_string("runnerNodes")),
        headlamp=default_string("headlamp") == "true",
    )
