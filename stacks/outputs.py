"""Names of the outputs one phase hands to the next: the producer, the consumer and the tests
all use these constants, so a rename cannot split the contract.

A phase stack reads its upstream through `StackReference(upstream_stack_name(...))`; the `dev`
stack passes the same values directly (DESIGN.md section 4).
"""

# phase1 -> phase2
KUBECONFIG = "kubeconfig"
"""Admin kubeconfig of the kind cluster (secret)."""
CLUSTER_NAME = "clusterName"
CLUSTER_ID = "clusterId"
"""The cluster's identity (`components.kind_cluster.cluster_id`): it changes exactly when a change
of phase1's config replaces the cluster. Kubernetes providers key on it, and `blueprint up` compares
it with the recorded one to see a replacement coming."""
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

PHASE1 = (
    KUBECONFIG, CLUSTER_NAME, CLUSTER_ID, DATA_DIR, NODE_DATA_PATH, REGISTRY_HOSTS_DIR, PRESERVE_DATA, DOMAIN, HTTP_PORT, HTTPS_PORT,
    SSH_PORT, OPENBAO_PORT, API_SERVER_PORT, GATEWAY_HTTP_NODE_PORT, GATEWAY_HTTPS_NODE_PORT, GATEWAY_SSH_NODE_PORT,
    OPENBAO_NODE_PORT, NODE_LABEL_KEY, GITLAB_NODE_LABEL, RUNNER_NODE_LABEL,
)  # fmt: skip
"""Everything phase1 exports."""

# phase2 -> phase3
CA_CERT_PEM = "caCertPem"
"""The platform CA's certificate, PEM (public)."""
CA_CERT_FILE = "caCertFile"
"""Host path of the same certificate, for users to trust."""
OPENBAO_ADDR = "openbaoAddr"
"""OpenBao's API as the host reaches it."""
OPENBAO_CLUSTER_ADDR = "openbaoClusterAddr"
"""OpenBao's API as pods reach it."""
OPENBAO_ROOT_TOKEN = "openbaoRootToken"
"""OpenBao's root token (secret)."""
POSTGRES_HOST = "postgresHost"
REDIS_HOST = "redisHost"
MINIO_ENDPOINT = "minioEndpoint"

GITLAB_URL = "gitlabUrl"
REGISTRY_HOST = "registryHost"
ADMIN_TOKEN = "adminToken"
"""root's personal access token (secret): phase3's GitLab provider uses it."""
GITLAB_ROOT_PASSWORD = "gitlabRootPassword"
"""The initial root password (secret)."""
APPS_NAMESPACE = "appsNamespace"
"""Where CI deploys the apps."""
DEPLOY_KUBECONFIG = "deployKubeconfig"
"""A kubeconfig for the account CI deploys with, limited to APPS_NAMESPACE (secret)."""
RUNNER_ID = "runnerId"
"""The instance runner's id, known once its chart is deployed: the smoke pipelines wait for it."""

PHASE2 = (
    PRESERVE_DATA,
    CA_CERT_PEM, CA_CERT_FILE, OPENBAO_ADDR, OPENBAO_CLUSTER_ADDR, OPENBAO_ROOT_TOKEN, POSTGRES_HOST, REDIS_HOST,
    MINIO_ENDPOINT, GITLAB_URL, REGISTRY_HOST, ADMIN_TOKEN, GITLAB_ROOT_PASSWORD, APPS_NAMESPACE, DEPLOY_KUBECONFIG, RUNNER_ID,
)  # fmt: skip
"""Everything phase2 exports."""

APP_URLS = "appUrls"
"""Where each app that has a host answers."""
PIPELINES = "pipelines"
"""Each deploying project's last green smoke pipeline."""

PHASE3 = (APP_URLS, PIPELINES)
"""Everything phase3 exports."""

EXPORTS = {"phase1": PHASE1, "phase2": PHASE2, "phase3": PHASE3}

# Handed from one phase to the next inside `dev` only, never exported: in `dev` the phases are one
# graph, so what a later phase does on phase1's cluster and folder must wait for (and, on destroy,
# go before) the resources that make them. A phase stack needs none of this: it runs once its
# upstream stack is up, and is destroyed before it.
DATA_FOLDER_CLAIM = "dataFolderClaim"
"""The resource that claims the data folder: whatever a later phase writes under it waits for it."""
CLUSTER = "cluster"
"""The resource that owns the kind cluster."""
IN_STACK_ONLY = (DATA_FOLDER_CLAIM, CLUSTER)

UPSTREAM_STACK = {"phase2": "phase1", "phase3": "phase2"}
"""The stack each phase stack reads its inputs from."""


def upstream_stack_name(project: str, stack: str) -> str:
    """Fully qualified name of `stack`'s upstream on the local backend, whose organization is
    the literal `organization` (Pulumi's DIY backend, project-scoped stacks).
    """
    return f"organization/{project}/{UPSTREAM_STACK[stack]}"
