"""How phase2's pieces sit on the cluster phase1 describes: where pods run, how the gateway is
exposed, and how this machine reaches OpenBao and GitLab. On kind: phase1's node labels, fixed
NodePorts, 127.0.0.1. On an existing cluster (`outputs.on_existing`): the node selectors of the
config (none: any node), a LoadBalancer or a NodePort the API server numbers, and port-forwards
through the Kubernetes API (providers/cluster_access.py). Pure functions of phase1's outputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components import gitlab_gateway as gw
from components import openbao as bao
from providers.cluster_access import Target
from stacks import outputs
from stacks.config.cluster import LOAD_BALANCER

GITLAB_NAMESPACE = "gitlab"
"""GitLab's namespace, where Envoy's Service is too."""
ENVOY_HTTPS_SERVICE_PORT = 443
"""The Envoy Service's port of the Gateway's HTTPS listener (envoy_proxy_spec)."""
SSH_PORT_EXISTING = 22
"""The port clone URLs show on an existing cluster: the chart's gitlab-ssh listener's, which the
load balancer (or the Service) exposes as it is (components/gitlab_gateway.py SSH_LISTENER_PORT_OF_CHART)."""


def laptop_rights() -> tuple[tuple[str, str], ...]:
    """(subresource, namespace) of the pods this machine reaches on an existing cluster, each of which
    the user must be allowed to `create`: the port-forwards to Envoy and OpenBao (providers/cluster_access.py)
    and the exec into GitLab's toolbox (providers/gitlab_token.py). Asked by `blueprint doctor`.
    """
    return (
        ("pods/portforward", GITLAB_NAMESPACE),
        ("pods/portforward", bao.OpenBaoArgs.namespace),
        ("pods/exec", GITLAB_NAMESPACE),
    )


def kube_context(inputs: Mapping[str, Any]) -> str:
    """The existing cluster's context, or "" on kind."""
    return str(inputs[outputs.KUBE_CONTEXT]) if outputs.on_existing(inputs) else ""


def gitlab_nodes(inputs: Mapping[str, Any]) -> dict[str, str]:
    """The node selector of GitLab's pods: kind's GitLab nodes, or `gitlabNodeSelector` ({}: any node)."""
    if outputs.on_existing(inputs):
        return {str(key): str(value) for key, value in dict(inputs[outputs.GITLAB_NODE_SELECTOR]).items()}
    return {str(inputs[outputs.NODE_LABEL_KEY]): str(inputs[outputs.GITLAB_NODE_LABEL])}


def job_nodes(inputs: Mapping[str, Any]) -> dict[str, str]:
    """The node selector of the Runners and their jobs: kind's runner nodes, or `jobNodeSelector` ({}: any node)."""
    if outputs.on_existing(inputs):
        return {str(key): str(value) for key, value in dict(inputs[outputs.JOB_NODE_SELECTOR]).items()}
    return {str(inputs[outputs.NODE_LABEL_KEY]): str(inputs[outputs.RUNNER_NODE_LABEL])}


def gateway_node_ports(inputs: Mapping[str, Any]) -> tuple[int, int, int] | None:
    """Kind's fixed NodePorts of HTTP, HTTPS and SSH, or None: the API server numbers them, if any."""
    if outputs.on_existing(inputs):
        return None
    keys = (outputs.GATEWAY_HTTP_NODE_PORT, outputs.GATEWAY_HTTPS_NODE_PORT, outputs.GATEWAY_SSH_NODE_PORT)
    http, https, ssh = (int(inputs[key]) for key in keys)
    return http, https, ssh


def gateway_service_type(inputs: Mapping[str, Any]) -> str:
    """The type of Envoy's Service: NodePort on kind (phase1 maps its NodePorts), else as `exposure` says."""
    if outputs.on_existing(inputs) and inputs[outputs.EXPOSURE] == LOAD_BALANCER:
        return "LoadBalancer"
    return "NodePort"


def gateway_service(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """What the config adds to Envoy's Service on an existing cluster (annotations, source ranges, class): {} on kind."""
    return dict(inputs.get(outputs.GATEWAY_SERVICE) or {}) if outputs.on_existing(inputs) else {}


def ssh_port(inputs: Mapping[str, Any]) -> int:
    """The SSH port clone URLs show: kind's host port, or the listener's own on an existing cluster."""
    return SSH_PORT_EXISTING if outputs.on_existing(inputs) else int(inputs[outputs.SSH_PORT])


def api_server(inputs: Mapping[str, Any]) -> tuple[tuple[str, int], ...]:
    """(address, port) of each API server endpoint phase1 read (an existing cluster), or () on kind."""
    if not outputs.on_existing(inputs):
        return ()
    return tuple((str(endpoint["address"]), int(endpoint["port"])) for endpoint in inputs[outputs.API_SERVER_ENDPOINTS])


def gitlab_forward(inputs: Mapping[str, Any]) -> Target | None:
    """How this machine reaches GitLab on an existing cluster: Envoy's HTTPS port, forwarded; None on kind."""
    if not outputs.on_existing(inputs):
        return None
    return Target(context=kube_context(inputs), namespace=GITLAB_NAMESPACE, service=gw.ENVOY_SERVICE, port=ENVOY_HTTPS_SERVICE_PORT)


def openbao_forward(inputs: Mapping[str, Any], namespace: str) -> Target | None:
    """How this machine reaches OpenBao on an existing cluster: its Service, forwarded; None on kind."""
    if not outputs.on_existing(inputs):
        return None
    return Target(context=kube_context(inputs), namespace=namespace, service=bao.RELEASE, port=bao.PORT)


def openbao_host_address(inputs: Mapping[str, Any], namespace: str) -> str:
    """OpenBao's address as this machine's providers name it: 127.0.0.1's host port on kind; on an
    existing cluster its in-cluster address, which the forward reaches (never 127.0.0.1 in the inputs).
    """
    if outputs.on_existing(inputs):
        return f"https://{bao.RELEASE}.{namespace}.svc.cluster.local:{bao.PORT}"
    return f"https://127.0.0.1:{int(inputs[outputs.OPENBAO_PORT])}"


def forwards(inputs: Mapping[str, Any], openbao_namespace: str) -> dict[str, Any]:
    """phase2's outputs for phase3 on an existing cluster alone (outputs.PHASE2_EXISTING): how it
    reaches GitLab and OpenBao; nothing on kind, whose outputs stay as they were.
    """
    gitlab, openbao = gitlab_forward(inputs), openbao_forward(inputs, openbao_namespace)
    if gitlab is None or openbao is None:
        return {}
    return {outputs.GITLAB_FORWARD: gitlab.wire(), outputs.OPENBAO_FORWARD: openbao.wire()}
