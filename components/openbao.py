"""OpenBao, the platform's vault: our own install of the openbao chart, initialised and unsealed by
`providers/openbao_init.py`.

- Standalone, storage `postgresql` in the `openbao` database, set explicitly: the chart still
  defaults to `file` storage, which OpenBao 2.7 removed. The connection URL, which carries the
  role's password, reaches the server as `BAO_PG_CONNECTION_URL` from a Secret (OpenBao reads it
  in place of `connection_url`: physical/postgresql/postgresql.go), so the values hold no secret.
  The backend creates its table itself when the role owns the database.
- A sealed server is not Ready under the chart's default probe (`bao status`), and an awaiting
  Helm release would then hang before anything can unseal it. The readiness probe asks
  `sys/health` with `sealedcode=204&uninitcode=204` instead, so "up but sealed" counts as Ready.
- The API is a NodePort on the port phase1 maps to 127.0.0.1, so the provider on the host
  initialises and unseals it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

import versions
from providers.openbao_init import OpenBaoInit, OpenBaoInitArgs

RELEASE = "openbao"
PORT = 8200
SERVER_CONFIG = """\
ui = true

listener "tcp" {
  tls_disable = 1
  address = "[::]:8200"
  cluster_address = "[::]:8201"
}

# The connection URL comes from BAO_PG_CONNECTION_URL.
storage "postgresql" {
}
"""


@dataclass(frozen=True, kw_only=True)
class OpenBaoArgs:
    namespace: str = "openbao"
    node_port: int
    """The NodePort phase1 maps from the host."""
    host_address: str
    """The API as the host reaches it, e.g. http://127.0.0.1:8200."""
    postgres_host: pulumi.Input[str]
    database: str
    role: str
    password: pulumi.Input[str]
    """The role's password (secret)."""
    database_ready: pulumi.Resource
    """OpenBao starts only once its database exists."""
    keys_file: str
    """Host path of the file that keeps the unseal keys and root token (0600, under the data folder)."""
    keys_folder: pulumi.Resource
    """What creates the folder of `keys_file`."""
    key_shares: int = 1
    key_threshold: int = 1


def openbao_values(args: OpenBaoArgs, storage_secret: str) -> dict[str, Any]:
    return {
        "injector": {"enabled": False},
        "server": {
            "image": {"tag": versions.OPENBAO_IMAGE_TAG},
            # The chart's default, OnDelete, never rolls the pod and makes Helm skip waiting for it.
            "updateStrategyType": "RollingUpdate",
            "standalone": {"enabled": True, "config": SERVER_CONFIG},
            "dataStorage": {"enabled": False},
            "extraSecretEnvironmentVars": [
                {"envName": "BAO_PG_CONNECTION_URL", "secretName": storage_secret, "secretKey": "connection-url"}
            ],
            "readinessProbe": {"path": "/v1/sys/health?standbyok=true&sealedcode=204&uninitcode=204"},
            "service": {"type": "NodePort", "nodePort": args.node_port},
            "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
        },
    }


class OpenBao(pulumi.ComponentResource):
    """OpenBao, initialised, unsealed, KV v2 at `secret/`."""

    address: pulumi.Output[str]
    """The API as the host reaches it."""
    cluster_address: pulumi.Output[str]
    """The API as pods reach it."""
    root_token: pulumi.Output[str]
    """The root token (secret)."""
    init: OpenBaoInit
    """The initialised vault: what writes to it depends on this."""

    def __init__(self, name: str, args: OpenBaoArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("blueprint:index:OpenBao", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        namespace = k8s.core.v1.Namespace(f"{name}-namespace", metadata={"name": args.namespace}, opts=child)
        storage = k8s.core.v1.Secret(
            f"{name}-storage",
            metadata={"name": f"{RELEASE}-storage", "namespace": namespace.metadata.name},
            string_data={
                "connection-url": pulumi.Output.format(
                    "postgres://{0}:{1}@{2}:5432/{3}?sslmode=require", args.role, args.password, args.postgres_host, args.database
                )
            },
            opts=child,
        )
        release = k8s.helm.v3.Release(
            f"{name}-chart",
            k8s.helm.v3.ReleaseArgs(
                name=RELEASE,
                chart="openbao",
                version=versions.OPENBAO_CHART_VERSION,
                repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=versions.OPENBAO_CHART_REPO),
                namespace=namespace.metadata.name,
                values=openbao_values(args, f"{RELEASE}-storage"),
            ),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[storage, args.database_ready])),
        )
        self.init = OpenBaoInit(
            f"{name}-init",
            OpenBaoInitArgs(
                address=args.host_address,
                keys_file=args.keys_file,
                key_shares=args.key_shares,
                key_threshold=args.key_threshold,
            ),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[release, args.keys_folder])),
        )
        self.address = pulumi.Output.from_input(args.host_address)
        self.cluster_address = pulumi.Output.concat("http://", RELEASE, ".", namespace.metadata.name, f".svc.cluster.local:{PORT}")
        self.root_token = self.init.root_token
        self.register_outputs({"address": self.address, "cluster_address": self.cluster_address, "root_token": self.root_token})
