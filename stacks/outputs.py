"""Names of the outputs one phase hands to the next: the producer, the consumer and the tests
all use these constants, so a rename cannot split the contract.

A phase stack reads its upstream through `StackReference(upstream_stack_name(...))`; the `dev`
stack passes the same values directly (DESIGN.md section 4).
"""

# phase1 -> phase2
KUBECONFIG = "kubeconfig"
"""Admin kubeconfig of the kind cluster (secret)."""
CLUSTER_NAME = "clusterName"
DATA_DIR = "dataDir"
"""Absolute host path of the data folder."""
NODE_DATA_PATH = "nodeDataPath"
"""Where every node mounts the data folder."""
REGISTRY_HOSTS_DIR = "registryHostsDir"
"""Host folder that containerd on every node reads registry `hosts.toml` files from."""
PRESERVE_DATA = "preserveData"
DOMAIN = "domain"
HTTP_PORT = "httpPort"
HTTPS_PORT = "httpsPort"
SSH_PORT = "sshPort"
OPENBAO_PORT = "openbaoPort"
API_SERVER_PORT = "apiServerPort"
GATEWAY_HTTP_NODE_PORT = "gatewayHttpNodePort"
GATEWAY_HTTPS_NODE_PORT = "gatewayHttpsNodePort"
GATEWAY_SSH_NODE_PORT = "gatewaySshNodePort"
OPENBAO_NODE_PORT = "openbaoNodePort"
NODE_LABEL_KEY = "nodeLabelKey"
GITLAB_NODE_LABEL = "gitlabNodeLabel"
"""Value of NODE_LABEL_KEY on the nodes GitLab runs on."""
RUNNER_NODE_LABEL = "runnerNodeLabel"
"""Value of NODE_LABEL_KEY on the nodes CI jobs run on."""

PHASE1_SECRETS = (KUBECONFIG,)

UPSTREAM_STACK = {"phase2": "phase1", "phase3": "phase2"}
"""The stack each phase stack reads its inputs from."""


def upstream_stack_name(project: str, stack: str) -> str:
    """Fully qualified name of `stack`'s upstream on the local backend, whose organization is
    the literal `organization` (Pulumi's DIY backend, project-scoped stacks).
    """
    return f"organization/{project}/{UPSTREAM_STACK[stack]}"
