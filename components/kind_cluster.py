"""The kind cluster every later phase runs on, and the host data folder two of whose subfolders its
nodes share.

Two `local.Command`s, so that `pulumi preview` shows exactly what will run:

- `<name>-data-folder` creates the data folder before the cluster mounts its subfolders, and
  removes it on destroy when `preserveData` is false (after the cluster, which depends on it);
  see `components/host_folder.py`.
- `<name>-cluster` runs `kind create cluster --config=-` with the kind config as its stdin and
  prints the kubeconfig. Only a change of the kind config or of the cluster name replaces it
  (deleting first: the name is fixed); any other change is an in-place update.

With the image cache on (`components/image_cache.py`), its mirrors and their `hosts.toml` files come
before the cluster, so the nodes' first pull goes through them; they are not in the kind config, so
turning the cache on, off or elsewhere never replaces the cluster.

Nodes mount only `containerd/` (registry `hosts.toml` files, read-only) and, the GitLab nodes
alone, `volumes/` (the PersistentVolumes): phase2's secrets (OpenBao's keys, the CA's key, MinIO's root credentials) stay
on the host, out of a hostPath pod's reach. Why: docs/design/decisions.md, entries 5, 13 and 24.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi_command import local

import versions
from components.engine import DOCKER, kind_environment
from components.host_folder import HostFolderArgs, Subfolder, host_folder
from components.image_cache import ImageCache, ImageCacheArgs
from components.markers import CLUSTER_MARKER, LEASES_FOLDER
from components.scripts import script

NODE_DATA_PATH = "/var/lib/blueprint"
"""Where every node mounts NODE_MOUNTS, each at `<NODE_DATA_PATH>/<subfolder>`."""
CONTAINERD_SUBDIR = "containerd"
VOLUMES_SUBDIR = "volumes"
"""Folder, under the data folder, that holds the PersistentVolumes' folders (`components/storage.py`)."""
NODE_MOUNTS = (CONTAINERD_SUBDIR, VOLUMES_SUBDIR)
"""The only subfolders of the data folder the nodes mount: never the data folder itself, which
holds the platform's secrets. VOLUMES_SUBDIR only on the nodes labelled VOLUME_NODE_LABEL."""
READ_ONLY_NODE_MOUNTS = (CONTAINERD_SUBDIR,)
"""Mounted read-only (kind v1alpha4 `Mount.readOnly`, pkg/apis/config/v1alpha4/types.go): the nodes
only read it; the host writes its `hosts.toml` and CA files from outside (`components/node_registry.py`),
so a pod that reaches a node's filesystem cannot redirect or re-trust what every node pulls."""
REGISTRY_HOSTS_SUBDIR = f"{CONTAINERD_SUBDIR}/certs.d"
"""Folder, under the data folder, that containerd reads registry `hosts.toml` files from: later
phases teach every node to pull from a registry by writing a file on the host, no exec needed."""

NODE_LABEL_KEY = "blueprint/role"
"""Our own label key: kubelet refuses to set labels under kubernetes.io or k8s.io."""
GITLAB_NODE_LABEL = "gitlab"
RUNNER_NODE_LABEL = "runner"
VOLUME_NODE_LABEL = GITLAB_NODE_LABEL
"""The nodes that mount VOLUMES_SUBDIR, every database's files, and so the only ones the
PersistentVolumes send their pods to (`components/storage.py`): never a runner node, whose CI jobs
(privileged, for image builds) must not reach them, nor the control plane, which runs no platform
pod (kind keeps its NoSchedule taint when there are workers: kubeadminit/init.go)."""


@dataclass(frozen=True, kw_only=True)
class NodePorts:
    """Fixed NodePorts that the host ports map to (30000-32767, the default NodePort range)."""

    gateway_http: int = 30080
    gateway_https: int = 30443
    gateway_ssh: int = 30022
    openbao: int = 30820


NODE_PORTS = NodePorts()


@dataclass(frozen=True, kw_only=True)
class KindClusterArgs:
    cluster_name: str
    """kind cluster name (a DNS-1123 label)."""
    gitlab_nodes: int
    """Workers labelled `NODE_LABEL_KEY=gitlab`."""
    runner_nodes: int
    """Workers labelled `NODE_LABEL_KEY=runner`."""
    data_dir: Path
    """Absolute host path of the data folder, whose NODE_MOUNTS every node mounts under NODE_DATA_PATH."""
    preserve_data: bool
    """Keep the data folder on destroy."""
    http_port: int
    https_port: int
    ssh_port: int
    openbao_port: int
    api_server_port: int
    owner: str
    """`<project>/<stack>@<checkout id>` of the stack that owns the data folder (`stacks.config.paths.folder_owner`)."""
    data_layout: str
    """The layout this checkout leaves that stack's data in, which the data folder's claim records
    (components/host_folder.py `HostFolderArgs.layout`)."""
    inner_owners: tuple[str, ...] = ()
    """The owners of the folders other stacks claim inside the data folder (phase2's, over phase1):
    its wipe removes those, and no one else's."""
    stack_file: str
    """The stack file whose `blueprint:preserveData` the data folder's delete reads again (`HostFolderArgs.stack_file`)."""
    image_cache_dir: Path | None = None
    """Host folder of the image cache whose mirrors every node pulls through (`components/image_cache.py`),
    or None for none. Not part of the kind config: the cluster is not replaced when it changes."""
    node_image: str = versions.KIND_NODE_IMAGE
    engine: str = DOCKER
    """The container engine kind makes the nodes on, and the mirrors and the data folder's wipe run on
    (components/engine.py). Another engine is another cluster (`_identity`)."""

    def __post_init__(self) -> None:
        if not self.data_dir.is_absolute():
            raise ValueError(f"data_dir must be absolute, got {self.data_dir}")
        if self.gitlab_nodes < 1 or self.runner_nodes < 1:
            raise ValueError(f"node counts must be >= 1, got {self.gitlab_nodes} and {self.runner_nodes}")


def cluster_id(args: KindClusterArgs) -> str:
    """The cluster's identity: a digest of exactly what replaces the cluster's command when it
    changes (`replacing_inputs`). It stays the same across in-place updates, so a Kubernetes
    provider keyed on it (`cluster_identifier`) is replaced only with the cluster.
    """
    identity = json.dumps(replacing_inputs(args), sort_keys=True)
    return hashlib.sha256(identity.encode()).hexdigest()[:16]


def replacing_inputs(args: KindClusterArgs) -> dict[str, Any]:
    """The cluster command's inputs whose change replaces it: `stdin`, the kind config as it is
    registered (`replace_on_changes`), and `triggers`, its name and data folder (pulumi-command
    marks `triggers` replaceOnChanges, provider/pkg/provider/common/inputs.go; every other input
    of a Command with an `update` script updates it in place).
    """
    return {"stdin": yaml.safe_dump(kind_config(args), sort_keys=False), "triggers": list(_identity(args).values())}


def _identity(args: KindClusterArgs) -> dict[str, str]:
    """The cluster's name and data folder, as its scripts read them from their environment, and, off
    Docker, its engine: kind finds a cluster on its own engine alone, so another engine is another
    cluster, and the old one's delete must run on the old engine (the state's environment) first.
    """
    return {"KIND_CLUSTER_NAME": args.cluster_name, "DATA_DIR": str(args.data_dir), **kind_environment(args.engine)}


def kind_config(args: KindClusterArgs) -> dict[str, Any]:
    """The kind `Cluster` config (kind.x-k8s.io/v1alpha4) for `args`."""

    def node(role: str, label: str | None = None) -> dict[str, Any]:
        spec: dict[str, Any] = {"role": role, "image": args.node_image}
        if label:
            spec["labels"] = {NODE_LABEL_KEY: label}
        # A fresh list per node: a shared one would be dumped as a YAML anchor and aliases.
        spec["extraMounts"] = [
            {"hostPath": str(args.data_dir / sub), "containerPath": f"{NODE_DATA_PATH}/{sub}"}
            | ({"readOnly": True} if sub in READ_ONLY_NODE_MOUNTS else {})
            for sub in NODE_MOUNTS
            if sub != VOLUMES_SUBDIR or label == VOLUME_NODE_LABEL
        ]
        return spec

    def published(host_port: int, node_port: int) -> dict[str, Any]:
        return {"containerPort": node_port, "hostPort": host_port, "listenAddress": "127.0.0.1", "protocol": "TCP"}

    control_plane = node("control-plane")
    # NodePorts answer on every node; the control plane carries the mappings because it always exists.
    control_plane["extraPortMappings"] = [
        published(args.http_port, NODE_PORTS.gateway_http),
        published(args.https_port, NODE_PORTS.gateway_https),
        published(args.ssh_port, NODE_PORTS.gateway_ssh),
        published(args.openbao_port, NODE_PORTS.openbao),
    ]
    return {
        "kind": "Cluster",
        "apiVersion": "kind.x-k8s.io/v1alpha4",
        "networking": {"apiServerAddress": "127.0.0.1", "apiServerPort": args.api_server_port},
        # kind v0.31 node images still ship a version-2 containerd config, which containerd 2 migrates;
        # this is the patch kind documents (site/content/docs/user/private-registries.md). One folder,
        # for GitLab's registry and the image cache's mirrors alike: containerd would take several
        # (it splits config_path on ':', internal/cri/server/images/image_pull.go in v2.2.0), but any
        # change here changes the kind config, which replaces the cluster.
        "containerdConfigPatches": [
            f'[plugins."io.containerd.grpc.v1.cri".registry]\n  config_path = "{NODE_DATA_PATH}/{REGISTRY_HOSTS_SUBDIR}"'
        ],
        # Every pod's PIDs capped (a job's fork bomb stops in its pod): kubeadm reads the kubelet's
        # configuration from the first node alone and gives it to all (kind docs/user/configuration.md).
        "kubeadmConfigPatches": [f"kind: KubeletConfiguration\npodPidsLimit: {POD_PIDS_LIMIT}\n"],
        "nodes": [
            control_plane,
            *(node("worker", GITLAB_NODE_LABEL) for _ in range(args.gitlab_nodes)),
            *(node("worker", RUNNER_NODE_LABEL) for _ in range(args.runner_nodes)),
        ],
    }


POD_PIDS_LIMIT = 4096
"""Processes and threads per pod (kubelet `podPidsLimit`; unlimited by default): far above what
GitLab's or Postgres' pods run, far below what takes a laptop down."""


SCRIPT_ENVIRONMENT = {
    "KIND_VERSION": versions.KIND_VERSION,
    "CLUSTER_MARKER": CLUSTER_MARKER,
    "LEASES_FOLDER": LEASES_FOLDER,
}
"""What the cluster's scripts read from their environment besides the cluster's name and data folder:
no part of what makes the cluster, so a change of one updates the command in place."""

CLUSTER_UP_SCRIPT = script("kind_cluster_up.sh")
"""Create the cluster, or reuse the one this stack created before (an interrupted `up` may have
left it running), then print the kubeconfig. Progress goes to stderr: stdout is the kubeconfig."""

CLUSTER_DOWN_SCRIPT = script("kind_cluster_down.sh")
"""Delete the cluster, unless a stack still has resources on it: they would be orphaned in that
stack's state, pointing at a cluster that is gone (and, after a replacement, at a new one with a
new CA, which no delete can reach). kind knows clusters by name alone: a second checkout on this
machine takes its own `clusterName`. A kind that cannot list clusters (Docker stopped) fails the
delete, so the cluster stays recorded."""


LEASE_SCRIPT = script("kind_cluster_lease.sh")
RELEASE_SCRIPT = """\
rm -f "$DATA_DIR/$LEASES_FOLDER/$(printf '%s' "$USER_STACK" | tr -c 'A-Za-z0-9._-' '_')"
rmdir "$DATA_DIR/$LEASES_FOLDER" 2>/dev/null || true
"""


def cluster_lease(name: str, *, data_dir: str, user: str, opts: pulumi.ResourceOptions | None = None) -> local.Command:
    """A file in the data folder that says `user` (`<project>/<stack>`) has resources on the cluster,
    from before the first of them is created until after the last is deleted: CLUSTER_DOWN_SCRIPT
    refuses to delete the cluster while it is there.
    """
    return local.Command(
        name,
        create=LEASE_SCRIPT,
        update=LEASE_SCRIPT,
        delete=RELEASE_SCRIPT,
        environment={"DATA_DIR": data_dir, "USER_STACK": user, "LEASES_FOLDER": LEASES_FOLDER},
        opts=opts,
    )


class KindCluster(pulumi.ComponentResource):
    """A kind cluster whose nodes all mount the same two subfolders of one host data folder."""

    kubeconfig: pulumi.Output[str]
    """Admin kubeconfig, server https://127.0.0.1:<apiServerPort> (secret)."""
    cluster: local.Command
    """The command resource that owns the cluster: resources inside the cluster can be
    `deleted_with` it, since deleting the cluster deletes them."""
    data_folder: local.Command
    """The command that claims the data folder: whatever writes under the folder waits for it."""
    cluster_id: str
    """`cluster_id(args)`: changes exactly when the cluster is replaced."""
    image_cache_joined: local.Command | None
    """The step that connects the nodes to the image cache's mirrors' network, or None without the cache."""

    def __init__(self, name: str, args: KindClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("blueprint:index:KindCluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        self.data_folder = host_folder(
            f"{name}-data-folder",
            HostFolderArgs(
                path=str(args.data_dir),
                owner=args.owner,
                preserve=args.preserve_data,
                wipe_image=args.node_image,
                layout=args.data_layout,
                subfolders=(Subfolder(path=REGISTRY_HOSTS_SUBDIR), Subfolder(path=VOLUMES_SUBDIR)),
                inner_owners=args.inner_owners,
                stack_file=args.stack_file,
                engine=args.engine,
            ),
            opts=child,
        )

        # Before the cluster: its nodes' first pull goes through the mirrors.
        image_cache = (
            ImageCache(
                f"{name}-image-cache",
                ImageCacheArgs(
                    cluster_name=args.cluster_name,
                    cache_dir=args.image_cache_dir,
                    hosts_dir=args.data_dir / REGISTRY_HOSTS_SUBDIR,
                    hosts_dir_claim=self.data_folder,
                    owner=args.owner,
                    engine=args.engine,
                ),
                opts=child,
            )
            if args.image_cache_dir
            else None
        )

        replacing = replacing_inputs(args)
        self.cluster = local.Command(
            f"{name}-cluster",
            create=CLUSTER_UP_SCRIPT,
            update=CLUSTER_UP_SCRIPT,
            delete=CLUSTER_DOWN_SCRIPT,
            stdin=replacing["stdin"],
            environment={**_identity(args), **SCRIPT_ENVIRONMENT},
            # With the kind config, its name and data folder make the cluster: a change of either replaces it,
            # a change of anything else its scripts read (SCRIPT_ENVIRONMENT) updates it in place.
            triggers=replacing["triggers"],
            # stdout is the kubeconfig: keep it out of the logs, and out of the environment of the
            # next update or delete (pulumi-command passes the previous stdout there by default).
            logging=local.Logging.STDERR,
            add_previous_output_in_env=False,
            opts=pulumi.ResourceOptions.merge(
                child,
                pulumi.ResourceOptions(
                    depends_on=[self.data_folder, *(image_cache.ready if image_cache else [])],
                    additional_secret_outputs=["stdout"],
                    replace_on_changes=["stdin"],
                    delete_before_replace=True,
                ),
            ),
        )

        self.image_cache_joined = image_cache.join(self.cluster) if image_cache else None
        self.kubeconfig = pulumi.Output.secret(self.cluster.stdout)
        self.cluster_id = cluster_id(args)
        self.register_outputs({"kubeconfig": self.kubeconfig, "cluster_id": self.cluster_id})
