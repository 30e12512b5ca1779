"""kind nodes pull the images CI pushes to GitLab's registry.

containerd on a kind node ignores the cluster's DNS and CA. So:

- phase1 pointed containerd's registry `config_path` at a folder of the shared data folder; this
  writes `<registry host>/hosts.toml` there (no exec into nodes, and nodes added later see it
  too), with our CA, which containerd also uses for the token request to GitLab's `/jwt/auth`
  (one HTTP client per host: containerd remotes/docker/config/hosts.go);
- a small DaemonSet keeps one line in every node's `/etc/hosts` that maps the registry's and
  GitLab's names to the Envoy Service's ClusterIP, which kube-proxy serves on the node. It looks
  the IP up through the cluster's DNS, so no address is pinned, and puts the line back if Docker
  rewrites the file when a node restarts. Connecting by name keeps the TLS SNI Envoy routes on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pulumi_command import local

import versions
from components.pod_security import pod_security_labels
from components.scripts import script
from components.storage import as_input

WRITE_SCRIPT = """\
set -eu
umask go-w
mkdir -p "$HOSTS_DIR/$REGISTRY_HOST"
printf '%s' "$HOSTS_TOML" > "$HOSTS_DIR/$REGISTRY_HOST/hosts.toml"
printf '%s' "$CA_PEM" > "$HOSTS_DIR/$REGISTRY_HOST/ca.crt"
"""
NAMESPACE = "blueprint-system"
KEEP_HOSTS_SCRIPT = script("node_registry_keep_hosts.sh")
"""Keep one line, marked `# blueprint`, in the node's /etc/hosts: the gateway's address for $NAMES."""


@dataclass(frozen=True, kw_only=True)
class NodeRegistryArgs:
    registry_host: str
    """e.g. registry.local.example.net."""
    names: tuple[str, ...]
    """Every name the nodes must resolve to the gateway (the registry and GitLab, for tokens)."""
    target: str
    """The gateway's Service, e.g. gitlab-envoy.gitlab.svc.cluster.local."""
    hosts_dir_host: str
    """containerd's registry folder as the host sees it (phase1's registryHostsDir)."""
    hosts_dir_node: str
    """The same folder as the nodes see it."""
    ca_pem: pulumi.Input[str]
    hosts_dir_claim: tuple[pulumi.Resource, ...] = ()
    """The claim of the data folder the hosts folder is in, when it is in the same graph (`dev`)."""


def hosts_toml(args: NodeRegistryArgs) -> str:
    """Containerd's hosts.toml for the registry (containerd docs/hosts.md)."""
    ca = f"{args.hosts_dir_node}/{args.registry_host}/ca.crt"
    return (
        f'server = "https://{args.registry_host}"\n'
        f'ca = "{ca}"  # for the fallback to `server` too, so an error there is not a misleading x509 one\n\n'
        f'[host."https://{args.registry_host}"]\n'
        f'  capabilities = ["pull", "resolve"]\n'
        f'  ca = "{ca}"\n'
    )


def keeper_spec(args: NodeRegistryArgs, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "selector": {"matchLabels": labels},
        "template": {
            "metadata": {"labels": labels},
            "spec": {
                "tolerations": [{"operator": "Exists"}],  # every node, the control plane included
                "containers": [
                    {
                        "name": "keep-hosts",
                        "image": versions.NODE_HOSTS_IMAGE,
                        "command": ["sh", "-c", KEEP_HOSTS_SCRIPT],
                        "env": [{"name": "TARGET", "value": args.target}, {"name": "NAMES", "value": " ".join(args.names)}],
                        "volumeMounts": [{"name": "hosts", "mountPath": "/host/hosts"}],
                        "resources": {"requests": {"cpu": "5m", "memory": "8Mi"}, "limits": {"memory": "32Mi"}},
                    }
                ],
                "volumes": [{"name": "hosts", "hostPath": {"path": "/etc/hosts", "type": "File"}}],
            },
        },
    }


class NodeRegistry(pulumi.ComponentResource):
    """containerd's hosts.toml for the registry, and node name resolution for the gateway."""

    def __init__(self, name: str, args: NodeRegistryArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("blueprint:index:NodeRegistry", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        local.Command(
            f"{name}-hosts-toml",
            create=WRITE_SCRIPT,
            update=WRITE_SCRIPT,
            delete='rm -rf "${HOSTS_DIR:?}/${REGISTRY_HOST:?}"',
            environment={
                "HOSTS_DIR": args.hosts_dir_host,
                "REGISTRY_HOST": args.registry_host,
                "HOSTS_TOML": hosts_toml(args),
                "CA_PEM": args.ca_pem,
            },
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=list(args.hosts_dir_claim))),
        )
        # privileged: the node-hosts DaemonSet mounts each node's /etc/hosts (hostPath, which baseline forbids).
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=NAMESPACE, labels=pod_security_labels("privileged")),
            opts=child,
        )
        labels = {"app.kubernetes.io/name": "node-hosts"}
        k8s.apps.v1.DaemonSet(
            f"{name}-node-hosts",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="node-hosts", namespace=namespace.metadata.name, labels=labels),
            spec=as_input(keeper_spec(args, labels)),
            opts=child,
        )
        self.register_outputs({})
