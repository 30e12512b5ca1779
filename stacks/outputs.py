"""Names of the outputs one phase hands to the next: the producer, the consumer and the tests
all use these constants, so a rename cannot split the contract.

A phase stack reads its upstream through `StackReference(upstream_stack_name(...))`; the `dev`
stack passes the same values directly (one code path, two wirings: stacks/program.py).

No output is a root credential: where one is kept, never what it is (the files are 0600, under the
data folder). What needs root's GitLab token reads it from its file (`read_admin_token`); what needs
the cluster's admin kubeconfig gets it from kind (`kind get kubeconfig`), or, on an existing cluster,
from kubectl (the context's, `components.existing_cluster.context_kubeconfig`).
"""

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stacks.config.cluster import EXISTING

# The one rule for what one cluster has and the other has not: ask `on_existing` first, then read only
# the outputs of that kind of cluster.
# - kind's outputs (PHASE1) are exported on either cluster, so the references keep their shape; on an
#   existing cluster the kind-only ones hold their empty value ("", 0, false or {}, said at each),
#   which nothing reads as a kind cluster's.
# - an existing cluster's own outputs (PHASE1_EXISTING, PHASE2_EXISTING) are absent on kind, so kind's
#   plans and state stay as they were; read them after `on_existing`, or with `.get`.
# A kind-only value never stands for an existing cluster's: its context is KUBE_CONTEXT, never CLUSTER_NAME.

if TYPE_CHECKING:
    from components.brought_tls import Brought

# phase1 -> phase2.
CLUSTER_NAME = "clusterName"
"""The kind cluster's name: a phase2 stack reads the cluster's admin kubeconfig from kind with it
(`kind get kubeconfig --name <clusterName>`), since no stack exports that kubeconfig. Existing: ""
(the context is KUBE_CONTEXT)."""
CLUSTER_ID = "clusterId"
"""The cluster's identity (`components.kind_cluster.cluster_id`): it changes exactly when a change
of phase1's config replaces the cluster. Kubernetes providers key on it, and `blueprint up` compares
it with the recorded one to see a replacement coming. Existing: the UID of the cluster's namespace
`kube-system`, read by phase1 on each run: the same for the cluster's whole life, another for
another cluster (or the same one rebuilt), whatever the context is called."""
DATA_DIR = "dataDir"
"""Absolute host path of the data folder."""
NODE_DATA_PATH = "nodeDataPath"
"""The folder on every node under which the data folder's `containerd` and `volumes` subfolders
are mounted, each at its own name (the rest of the data folder stays on the host). Existing: "" (no
node mounts anything of this machine)."""
VOLUMES_NODE_PATH = "volumesNodePath"
"""Where every node sees the data folder's `volumes` subfolder, the only one pods write to: phase2's
PersistentVolumes are there. Existing: ""."""
REGISTRY_HOSTS_DIR = "registryHostsDir"
"""Host folder that containerd on every node reads registry `hosts.toml` files from. Existing: ""."""
PRESERVE_DATA = "preserveData"
DOMAIN = "domain"
HTTP_PORT = "httpPort"
HTTPS_PORT = "httpsPort"
SSH_PORT = "sshPort"
OPENBAO_PORT = "openbaoPort"
API_SERVER_PORT = "apiServerPort"
"""The host ports kind publishes on 127.0.0.1 (HTTP_PORT to API_SERVER_PORT). Existing: 0, each (none)."""
GATEWAY_HTTP_NODE_PORT = "gatewayHttpNodePort"
GATEWAY_HTTPS_NODE_PORT = "gatewayHttpsNodePort"
GATEWAY_SSH_NODE_PORT = "gatewaySshNodePort"
OPENBAO_NODE_PORT = "openbaoNodePort"
"""kind's fixed NodePorts behind those host ports (GATEWAY_HTTP_NODE_PORT to OPENBAO_NODE_PORT).
Existing: 0, each (none fixed: EXPOSURE says how the gateway is reached)."""
NODE_LABEL_KEY = "nodeLabelKey"
"""The key of the labels blueprint gives kind's nodes. Existing: "", and GITLAB_NODE_LABEL and
RUNNER_NODE_LABEL "" too (no node of an existing cluster carries them: GITLAB_NODE_SELECTOR and
JOB_NODE_SELECTOR say where pods go)."""
GITLAB_NODE_LABEL = "gitlabNodeLabel"
"""Value of NODE_LABEL_KEY on the nodes GitLab runs on."""
RUNNER_NODE_LABEL = "runnerNodeLabel"
"""Value of NODE_LABEL_KEY on the nodes CI jobs run on."""
HEADLAMP = "headlamp"
"""Whether phase1 installed Headlamp (a plain bool): phase2 then routes `headlamp.<domain>` to it.
Existing: false (phase1 installs nothing on an existing cluster)."""
IMAGE_CACHE_DIR = "imageCacheDir"
"""Absolute host path of the image cache (`components/image_cache.py`), or "" when phase1 runs none
(always on an existing cluster)."""
IMAGE_MIRRORS = "imageMirrors"
"""Registry -> `<address>:<port>` of its mirror, a fixed address on the mirrors' own network, which
nodes and BuildKit reach (plain HTTP); empty when phase1 runs no image cache (always on an existing cluster)."""

CONTAINER_ENGINE = "containerEngine"
"""The container engine kind runs on (components/engine.py), exported only when it is not Docker: a
Docker phase1 exports what it did before Podman (EXPORTS_IF_ANY)."""

PHASE1 = (
    CLUSTER_NAME, CLUSTER_ID, DATA_DIR, NODE_DATA_PATH, VOLUMES_NODE_PATH, REGISTRY_HOSTS_DIR, PRESERVE_DATA, DOMAIN, HTTP_PORT, HTTPS_PORT,
    SSH_PORT, OPENBAO_PORT, API_SERVER_PORT, GATEWAY_HTTP_NODE_PORT, GATEWAY_HTTPS_NODE_PORT, GATEWAY_SSH_NODE_PORT,
    OPENBAO_NODE_PORT, NODE_LABEL_KEY, GITLAB_NODE_LABEL, RUNNER_NODE_LABEL, HEADLAMP, IMAGE_CACHE_DIR, IMAGE_MIRRORS,
)  # fmt: skip
"""Everything phase1 exports, on either kind of cluster."""

# phase1 -> phase2, with `blueprint:cluster=existing` alone (phase1 on kind exports none of them, so
# its plans and state stay as they were: read them with `.get`, or ask `on_existing`).
CLUSTER_TYPE = "clusterType"
"""`existing` (stacks.config.cluster.EXISTING): the platform goes onto a cluster blueprint neither
makes nor deletes. Absent: kind's (`on_existing`)."""
KUBE_CONTEXT = "kubeContext"
"""The kubeconfig context of the cluster (`blueprint:kubeContext`): a phase2 stack resolves the
context's kubeconfig with it on each run (`kubectl config view --raw --minify --flatten --context`,
with the user's KUBECONFIG), since no stack exports a kubeconfig."""
KUBERNETES_VERSION = "kubernetesVersion"
"""The API server's version as it says it (`/version`'s gitVersion, such as v1.33.2 or
v1.33.2-gke.1240000), read by phase1 on each run."""
STORAGE_CLASS = "storageClass"
"""`blueprint:storageClass` as set: the StorageClass the platform's claims name, or "" for the
cluster's default (a claim then names none, and the cluster's default class is given it once, when
it is made)."""
STORAGE_CLASS_USED = "storageClassUsed"
"""The StorageClass the claims get, as read by phase1 on this run: STORAGE_CLASS, which exists, or
the cluster's default class when STORAGE_CLASS is "" (phase1 refuses a cluster with neither). For
what is shown; nothing is made from it, so a new default class replaces no claim."""
EXPOSURE = "exposure"
"""How the gateway's Service is reached: `loadBalancer` (the default) or `nodePort`
(stacks.config.cluster.LOAD_BALANCER, NODE_PORT)."""
GITLAB_NODE_SELECTOR = "gitlabNodeSelector"
"""Node labels (label -> value) GitLab's pods are pinned to; {}: no nodeSelector at all."""
JOB_NODE_SELECTOR = "jobNodeSelector"
"""Node labels (label -> value) the CI jobs and the Runners are pinned to; {}: no nodeSelector at all."""
API_SERVER_ENDPOINTS = "apiServerEndpoints"
"""Where pods reach the API server behind the Service `default/kubernetes`: a list of
{"address": <IP>, "port": <int>}, from its EndpointSlices, read by phase1 on each run (what an egress
NetworkPolicy must allow to reach the API server)."""

GATEWAY_SERVICE = "gatewayService"
"""What the config adds to the gateway's Service (`gatewayServiceAnnotations`, `loadBalancerSourceRanges`,
`loadBalancerClass`), as Envoy Gateway's KubernetesServiceSpec fields: {} when none is set."""

PHASE1_EXISTING = (
    CLUSTER_TYPE, KUBE_CONTEXT, KUBERNETES_VERSION, STORAGE_CLASS, STORAGE_CLASS_USED, EXPOSURE, GITLAB_NODE_SELECTOR,
    JOB_NODE_SELECTOR, API_SERVER_ENDPOINTS, GATEWAY_SERVICE,
)  # fmt: skip
"""What phase1 exports besides PHASE1 on an existing cluster alone."""
TLS_CERTIFICATE = "tlsCertificate"
"""`<namespace>/<name>` of the kubernetes.io/tls Secret the gateway serves (`blueprint:tlsCertificate`)."""
TLS_CERTIFICATE_CA = "tlsCertificateCa"
"""Its `ca.crt` as phase1 read it on this run, PEM (public), or "" for a publicly trusted certificate."""
PHASE1_BROUGHT = (TLS_CERTIFICATE, TLS_CERTIFICATE_CA)
"""What phase1 exports besides those with a brought certificate alone (components/brought_tls.py)."""


def brought(inputs: Mapping[str, Any]) -> "Brought | None":
    """The certificate the user brings for the gateway, as phase1's outputs `inputs` say, or None."""
    from components.brought_tls import Brought, split

    if not inputs.get(TLS_CERTIFICATE):
        return None
    namespace, name = split(str(inputs[TLS_CERTIFICATE]))
    return Brought(namespace=namespace, name=name, ca_pem=str(inputs.get(TLS_CERTIFICATE_CA) or ""))


def on_existing(inputs: Mapping[str, Any]) -> bool:
    """Whether phase1's outputs `inputs` describe an existing cluster (`blueprint:cluster=existing`)."""
    return inputs.get(CLUSTER_TYPE) == EXISTING


def kube_context(phase1: Mapping[str, Any]) -> str:
    """The kubeconfig context of phase1's cluster: the existing cluster's (KUBE_CONTEXT), or kind's
    `kind-<clusterName>` (kind's own name for it); "" when phase1's outputs name neither (not up).
    """
    if on_existing(phase1):
        return str(phase1.get(KUBE_CONTEXT) or "")
    name = phase1.get(CLUSTER_NAME)
    return kind_context(str(name)) if name else ""


def kind_context(cluster_name: str) -> str:
    """The name kind gives the context (and the cluster and user) of its cluster `cluster_name` in a kubeconfig."""
    return f"kind-{cluster_name}"


# phase2 -> phase3
CA_CERT_PEM = "caCertPem"
"""The platform CA's certificate, PEM (public)."""
CA_CERT_FILE = "caCertFile"
"""Host path of the same certificate, for users to trust."""
OPENBAO_ADDR = "openbaoAddr"
"""OpenBao's API as the host reaches it."""
OPENBAO_SERVER_NAME = "openbaoServerName"
"""The name OpenBao's certificate (from the CA of CA_CERT_FILE) is for: every client at OPENBAO_ADDR
checks the certificate against it (`BAO_TLS_SERVER_NAME` for the `bao` CLI) before it sends a password."""
OPENBAO_CLUSTER_ADDR = "openbaoClusterAddr"
"""OpenBao's API as pods reach it (TLS; the certificate is for OPENBAO_SERVER_NAME)."""
OPENBAO_ADMIN_PASSWORD_FILE = "openbaoAdminPasswordFile"
"""Host path of the password of OpenBao's `admin` user (0600): where it is, never what it is."""
OPENBAO_WRITER_PASSWORD_FILE = "openbaoWriterPasswordFile"
"""Host path of the password of OpenBao's `blueprint` user (0600), which writes and reads `secret/`:
phase3 mirrors its credentials into OpenBao with it, and `blueprint secrets --show` reads with it."""
POSTGRES_HOST = "postgresHost"
REDIS_HOST = "redisHost"
MINIO_ENDPOINT = "minioEndpoint"

GITLAB_URL = "gitlabUrl"
REGISTRY_HOST = "registryHost"
ADMIN_TOKEN_FILE = "adminTokenFile"
"""Host path of root's personal access token (0600), kept without its prefix: read it with
`read_admin_token`. phase3 and the `blueprint` commands call GitLab's API with it."""
GLAB_TOKEN_FILE = "glabTokenFile"
"""Host path of glab's own token of root (0600; `api` alone, 30 days; GitLab makes a new one on renewal,
and a destroy revokes it and removes the file), kept whole: read it with `read_glab_token`. `blueprint
up` logs glab in with it (`--glab-login`, the default), so glab follows each new token."""
GITLAB_ROOT_PASSWORD_FILE = "gitlabRootPasswordFile"
"""Host path of GitLab root's password (0600)."""
APPS_NAMESPACE = "appsNamespace"
"""Where CI deploys the apps."""
DEPLOY_KUBECONFIG = "deployKubeconfig"
"""A kubeconfig for the account CI deploys with, limited to APPS_NAMESPACE (secret)."""
RUNNER_ID = "runnerId"
"""The default runner's id, known once both runners' charts are deployed: the smoke pipelines wait for it."""
APPS_GROUP_ID = "appsGroupId"
"""The platform's group (`blueprint-apps`), whose projects alone its runners serve: phase3 puts the apps in it."""
APPS_GROUP_PATH = "appsGroupPath"
APPS_GROUP_OWNER = "appsGroupOwner"
"""The mark on that group (`<pulumi project>/<stack>` of the stack that made it): what phase3 checks it against."""

PHASE2 = (
    PRESERVE_DATA,
    CA_CERT_PEM, CA_CERT_FILE, OPENBAO_ADDR, OPENBAO_SERVER_NAME, OPENBAO_CLUSTER_ADDR, OPENBAO_ADMIN_PASSWORD_FILE,
    OPENBAO_WRITER_PASSWORD_FILE,
    POSTGRES_HOST, REDIS_HOST,
    MINIO_ENDPOINT, GITLAB_URL, REGISTRY_HOST, ADMIN_TOKEN_FILE, GLAB_TOKEN_FILE, GITLAB_ROOT_PASSWORD_FILE, APPS_NAMESPACE,
    DEPLOY_KUBECONFIG, RUNNER_ID, APPS_GROUP_ID, APPS_GROUP_PATH, APPS_GROUP_OWNER,
)  # fmt: skip
"""Everything phase2 exports."""

APP_URLS = "appUrls"
"""Where each app that has a host answers."""
PIPELINES = "pipelines"
"""Each project's last green smoke pipeline (its web URL, by project name)."""

PHASE3 = (APP_URLS, PIPELINES)
"""Everything phase3 exports."""

# phase2 -> phase3, with `blueprint:cluster=existing` alone (read with `.get`).
GITLAB_FORWARD = "gitlabForward"
"""How this machine reaches GitLab before (or without) a DNS record: a port-forward to Envoy's
Service (providers/cluster_access.py `Target`, wired: context, namespace, service, port)."""
OPENBAO_FORWARD = "openbaoForward"
"""How this machine reaches OpenBao (OPENBAO_ADDR is then its in-cluster address): a port-forward
to its Service (providers/cluster_access.py `Target`, wired)."""
GATEWAY_CA_FILE = "gatewayCaFile"
"""With a brought certificate alone: host path of what verifies the names the gateway serves (GitLab,
its registry, the apps), its CA or the public roots; without, that is CA_CERT_FILE (`gateway_ca_file`)."""
PHASE2_EXISTING = (GITLAB_FORWARD, OPENBAO_FORWARD)
"""What phase2 exports besides PHASE2 on an existing cluster alone."""


def gateway_ca_file(phase2: Mapping[str, Any]) -> Any:
    """What verifies GitLab, its registry and the apps, from phase2's outputs: the brought certificate's
    trust (GATEWAY_CA_FILE) when there is one, else the platform CA (CA_CERT_FILE); None when neither.
    """
    return phase2.get(GATEWAY_CA_FILE) or phase2.get(CA_CERT_FILE)


EXPORTS = {"phase1": PHASE1, "phase2": PHASE2, "phase3": PHASE3}
"""What each phase hands to the next: what a phase stack reads from its upstream."""
EXPORTS_IF_ANY = {
    "phase1": (*PHASE1_EXISTING, *PHASE1_BROUGHT, CONTAINER_ENGINE),
    "phase2": (*PHASE2_EXISTING, GATEWAY_CA_FILE),
    "phase3": (),
}
"""What a phase hands to the next only on an existing cluster, or only off Docker: read when there,
never missed."""

BLUEPRINT_VERSION = "blueprintVersion"
"""The blueprint release (`versions.BLUEPRINT`) that last brought the stack up. Every stack exports
it (`dev` once), beside EXPORTS: it is the stack's record of itself, which the stack reads back
before anything else (stacks/migrations.py), never an input of the next phase."""


# Handed from one phase to the next inside `dev` only, never exported: in `dev` the phases are one
# graph, so what a later phase does on phase1's cluster and folder must wait for (and, on destroy,
# go before) the resources that make them. A phase stack needs none of this: it runs once its
# upstream stack is up, and is destroyed before it.
DATA_FOLDER_CLAIM = "dataFolderClaim"
"""The resource that claims the data folder: whatever a later phase writes under it waits for it."""
CLUSTER = "cluster"
"""The resource that owns the kind cluster."""
KUBECONFIG = "kubeconfig"
"""The kind cluster's admin kubeconfig (secret), as the cluster's command prints it: in `dev`,
phase2's Kubernetes provider takes it from there, so it waits for the cluster. It is root on the
cluster, so no stack exports it: a phase2 stack gets it from kind itself (`stacks.phase1.kind_kubeconfig`)."""
SEEDED_ADMIN_TOKEN = "seededAdminToken"
"""root's token once GitLab has accepted it (secret): in `dev`, phase3 calls GitLab's API with this,
so every call waits for the seeding. A phase3 stack reads the token from ADMIN_TOKEN_FILE."""
HEADLAMP_DASHBOARD = "headlampDashboard"
"""The Headlamp component, when phase1 installs it: in `dev`, phase2's route to it waits for its
namespace and Service (and, on destroy, goes first)."""
OPENBAO_WRITER_PASSWORD = "openbaoWriterPassword"
"""The `blueprint` user's password (secret): in `dev`, phase3 mirrors its credentials into OpenBao
with this, in the graph. A phase3 stack reads it from OPENBAO_WRITER_PASSWORD_FILE."""
OPENBAO_INIT = "openbaoInit"
"""The resource that initialises OpenBao: in `dev`, phase3's KV writes wait for it."""
IMAGE_CACHE_JOINED = "imageCacheJoined"
"""The step that connects the nodes to the image cache's mirrors' network, when phase1 runs them: in `dev`,
phase2's pre-pull waits for it, so its pulls reach the mirrors (a phase2 stack runs once phase1 is up)."""
IN_STACK_ONLY = (
    DATA_FOLDER_CLAIM, CLUSTER, KUBECONFIG, SEEDED_ADMIN_TOKEN, HEADLAMP_DASHBOARD, OPENBAO_WRITER_PASSWORD, OPENBAO_INIT,
    IMAGE_CACHE_JOINED,
)  # fmt: skip

UPSTREAM_STACK = {"phase2": "phase1", "phase3": "phase2"}
"""The stack each phase stack reads its inputs from."""


def stacks_over(stack: str) -> tuple[str, ...]:
    """The stacks that read their inputs from `stack` (none for `dev`, which holds all phases)."""
    return tuple(over for over, upstream in UPSTREAM_STACK.items() if upstream == stack)


DIY_ORGANIZATION = "organization"
"""The organization of every stack on a DIY backend (a `file://` folder, S3, GCS, Azure Blob)."""


def stack_name(project: str, stack: str) -> str:
    """Fully qualified name of `stack`, in the running stack's organization: a DIY backend's literal
    `organization`, or on Pulumi Cloud the organization the stacks were made in (the user's default
    one: `pulumi org set-default`), so phase2 reads the phase1 of its own organization there too.
    """
    import pulumi

    # As Pulumi's own stack-reference tests name a stack of the same project: `<getOrganization()>/<project>/<stack>`.
    return f"{pulumi.get_organization() or DIY_ORGANIZATION}/{project}/{stack}"


def upstream_stack_name(project: str, stack: str) -> str:
    """Fully qualified name of `stack`'s upstream, in the running stack's organization."""
    return stack_name(project, UPSTREAM_STACK[stack])


ADMIN_TOKEN_PREFIX = "glpat-"
"""GitLab's prefix of a personal access token: phase2 keeps the token's file without it, and adds it
in one place, here (`admin_token`)."""


def admin_token(kept: str) -> str:
    """The token GitLab accepts, from the value its file keeps."""
    return ADMIN_TOKEN_PREFIX + kept


class SecretFileUnavailable(Exception):
    """A secret file of phase2 cannot be read on this machine; the message names the file and the fix."""


def read_secret_file(path: str, what: str) -> str:
    """The text of phase2's secret file `path` (`what` it holds, for the message), stripped; "" when
    there is no such file; a SecretFileUnavailable when it cannot be read.
    """
    try:
        return Path(path).read_text().strip()
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as error:
        why = error.strerror if isinstance(error, OSError) and error.strerror else type(error).__name__
        raise SecretFileUnavailable(f"cannot read {what} in {path} ({why}): run this as the user who brought phase2 up") from None


def read_required_secret(path: str, what: str) -> str:
    """The text of phase2's secret file `path` (`what` it holds), or a SecretFileUnavailable naming the
    file and what to run when it is missing or empty.
    """
    kept = read_secret_file(path, what)
    if not kept:
        raise SecretFileUnavailable(f"phase2 is not up, or its data folder is not on this machine: {path}; run `uv run blueprint up` first")
    return kept


def read_glab_token(path: str) -> str:
    """Glab's token from phase2's file GLAB_TOKEN_FILE, whole: GitLab made it, prefix and all."""
    return read_required_secret(path, "glab's token")


def read_admin_token(path: str, what: str = "GitLab's admin token") -> str:
    """Root's admin token from phase2's file `path` (ADMIN_TOKEN_FILE), which keeps it without GitLab's
    prefix; a SecretFileUnavailable naming the file and what to run.
    """
    return admin_token(read_required_secret(path, what))
