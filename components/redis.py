"""Redis for GitLab: one password-protected, persistent Valkey server from the official chart.

Valkey, because Bitnami's free Redis images are gone and GitLab documents Valkey as its external
Redis. The password is generated (pulumi-random) into the Secret the chart reads; Valkey does not
store it with the data, so a new password over preserved data is fine. Data lives on a static
volume (`components/storage.py`) with the append-only file on, so a restart loses nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random

import versions
from components.pod_security import pod_security_labels
from components.storage import Provisioned, Volume, bound_claim, data_namespace

RELEASE = "valkey"
PASSWORD_KEY = "default-password"
"""The key GitLab's Valkey example reads (global.redis.auth.key)."""
VALKEY_USER = (1000, 1000)
"""(uid, gid) Valkey runs as: the chart's default (podSecurityContext, valkey-helm values.yaml at
valkey-0.11.0), set explicitly here, and the owner of the volume's folder."""


@dataclass(frozen=True, kw_only=True)
class RedisArgs:
    namespace: str = "redis"
    volume: Volume
    volume_resource: pulumi.Resource | None
    """The PV the data claim binds to (None on an existing cluster)."""
    provisioned: Provisioned | None = None
    """On an existing cluster, the class that provisions the data claim (then no PV)."""

    def __post_init__(self) -> None:
        if (self.volume_resource is None) == (self.provisioned is None):
            raise ValueError("the data claim binds to a PV (volume_resource) or its class provisions it (provisioned): exactly one")
        if self.volume.namespace != self.namespace:
            raise ValueError(f"the volume must be in namespace {self.namespace}, got {self.volume.key}")
        if self.volume.owner != VALKEY_USER:
            raise ValueError(f"the volume must belong to Valkey's user {VALKEY_USER}, got {self.volume.owner}")


def valkey_values(args: RedisArgs, secret_name: str) -> dict[str, Any]:
    """Values of the valkey chart: standalone, ACL default user from our Secret, our claim, AOF on."""
    return {
        "image": {"tag": versions.VALKEY_IMAGE_TAG},
        "auth": {
            "enabled": True,
            "usersExistingSecret": secret_name,
            "aclUsers": {"default": {"permissions": "~* &* +@all", "passwordKey": PASSWORD_KEY}},
        },
        "dataStorage": {"enabled": True, "persistentVolumeClaimName": args.volume.claim},
        "valkeyConfig": "appendonly yes\n",
        # One volume, one writer: stop the old pod before the new one mounts the data.
        "deploymentStrategy": "Recreate",
        "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
        # Merged into the chart's defaults (which add fsGroup and seccomp RuntimeDefault, and drop
        # every capability): the user the volume's folder is given to.
        "podSecurityContext": {"runAsUser": VALKEY_USER[0], "runAsGroup": VALKEY_USER[1]},
        "securityContext": {"runAsUser": VALKEY_USER[0], "runAsGroup": VALKEY_USER[1]},
    }


class Redis(pulumi.ComponentResource):
    """Valkey, reachable in the cluster at `host`:6379."""

    host: pulumi.Output[str]
    password: pulumi.Output[str]
    """The `default` user's password (secret)."""
    release: k8s.helm.v3.Release
    """Ready once Valkey answers: what needs Redis waits for this."""

    def __init__(self, name: str, args: RedisArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("blueprint:index:Redis", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # restricted: the valkey chart's pod and container securityContext (valkey-0.11.0 values.yaml, templates/deploy_valkey.yaml).
        namespace = data_namespace(f"{name}-namespace", args.namespace, pod_security_labels("restricted"), args.provisioned, child)
        password = random.RandomPassword(f"{name}-password", length=32, special=False, opts=child)
        secret = k8s.core.v1.Secret(
            f"{name}-auth",
            metadata={"name": f"{RELEASE}-auth", "namespace": namespace.metadata.name},
            string_data={PASSWORD_KEY: password.result},
            opts=child,
        )
        claim = bound_claim(f"{name}-data", args.volume, args.volume_resource, namespace.metadata.name, child, args.provisioned)
        self.release = k8s.helm.v3.Release(
            f"{name}-chart",
            k8s.helm.v3.ReleaseArgs(
                name=RELEASE,
                chart="valkey",
                version=versions.VALKEY_CHART_VERSION,
                repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=versions.VALKEY_CHART_REPO),
                namespace=namespace.metadata.name,
                values=valkey_values(args, f"{RELEASE}-auth"),
            ),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[secret, claim])),
        )
        self.host = pulumi.Output.concat(RELEASE, ".", namespace.metadata.name, ".svc.cluster.local")
        self.password = password.result
        self.register_outputs({"host": self.host, "password": self.password})
