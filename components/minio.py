"""S3 for GitLab: one MinIO server and every bucket GitLab and its registry use.

MinIO's community edition is no longer published (source-only since October 2025, Docker Hub's
images removed in 2026), so this runs the last image published on quay.io, pinned, as a plain
Deployment: MinIO's own charts are archived. The root credentials are generated once into files
under the data folder (`providers/host_secret.py`), because MinIO encrypts its IAM data with them:
new credentials over preserved data would lock MinIO out of it. The buckets are made by a Job that
runs `mc mb --ignore-existing` (idempotent) with no shell, configured through `MC_HOST_<alias>`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

import versions
from components.storage import Volume, as_input, bound_claim
from providers.host_secret import HostSecret, HostSecretArgs

NAME = "minio"
API_PORT = 9000
CONSOLE_PORT = 9001
BUCKETS = (
    "git-lfs",
    "gitlab-artifacts",
    "gitlab-uploads",
    "gitlab-packages",
    "gitlab-backups",
    "tmp",
    "registry",
    "gitlab-terraform-state",
    "gitlab-ci-secure-files",
    "gitlab-pages",
    "gitlab-dependency-proxy",
    "gitlab-mr-diffs",
    "runner-cache",
)
"""GitLab chart 10.x's default bucket names (values.yaml), the registry's and the runner cache's."""


@dataclass(frozen=True, kw_only=True)
class MinioArgs:
    namespace: str = "minio"
    volume: Volume
    volume_resource: pulumi.Resource
    """The PV the data claim binds to."""
    secrets_path: str
    """Host folder (under the data folder) that keeps the root credentials."""
    secrets_folder: pulumi.Resource
    """What creates that folder: the credentials are written after it."""
    buckets: tuple[str, ...] = BUCKETS

    def __post_init__(self) -> None:
        if self.volume.namespace != self.namespace:
            raise ValueError(f"the volume must be in namespace {self.namespace}, got {self.volume.key}")


def _credentials_env(secret_name: str) -> list[dict[str, Any]]:
    return [
        {"name": key, "valueFrom": {"secretKeyRef": {"name": secret_name, "key": key}}}
        for key in ("MINIO_ROOT_USER", "MINIO_ROOT_PASSWORD")
    ]


def server_pod_spec(args: MinioArgs, secret_name: str) -> dict[str, Any]:
    def probe(path: str) -> dict[str, Any]:
        return {"httpGet": {"path": path, "port": API_PORT}, "periodSeconds": 10}

    return {
        "containers": [
            {
                "name": "minio",
                "image": versions.MINIO_IMAGE,
                "args": ["server", "/data", "--console-address", f":{CONSOLE_PORT}"],
                "env": _credentials_env(secret_name),
                "ports": [{"name": "api", "containerPort": API_PORT}, {"name": "console", "containerPort": CONSOLE_PORT}],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                "readinessProbe": probe("/minio/health/ready"),
                "livenessProbe": probe("/minio/health/live"),
                "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
            }
        ],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": args.volume.claim}}],
    }


def deployment_spec(args: MinioArgs, secret_name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "replicas": 1,
        "strategy": {"type": "Recreate"},  # one volume, one writer
        "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": server_pod_spec(args, secret_name)},
    }


def buckets_job_spec(args: MinioArgs, secret_name: str, endpoint_host: str) -> dict[str, Any]:
    """A Job that creates every bucket unless it exists; `$(VAR)` expansion builds the mc alias
    from the Secret without a shell (the mc image has none to rely on).
    """
    return {
        "backoffLimit": 20,
        "template": {
            "spec": {
                "restartPolicy": "OnFailure",
                "containers": [
                    {
                        "name": "buckets",
                        "image": versions.MINIO_CLIENT_IMAGE,
                        "args": ["mb", "--ignore-existing", *(f"platform/{bucket}" for bucket in args.buckets)],
                        "env": [
                            *_credentials_env(secret_name),
                            {
                                "name": "MC_HOST_platform",
                                "value": f"http://$(MINIO_ROOT_USER):$(MINIO_ROOT_PASSWORD)@{endpoint_host}:{API_PORT}",
                            },
                        ],
                    }
                ],
            }
        },
    }


class Minio(pulumi.ComponentResource):
    """MinIO at `endpoint` in the cluster, with GitLab's buckets."""

    endpoint: pulumi.Output[str]
    """In-cluster S3 endpoint, http."""
    access_key: pulumi.Output[str]
    """Root user (secret)."""
    secret_key: pulumi.Output[str]
    """Root password (secret)."""
    host_port: str
    """In-cluster host:port of the S3 API."""
    buckets: k8s.batch.v1.Job
    """Completes once every bucket exists: what uses the buckets waits for this."""

    def __init__(self, name: str, args: MinioArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("blueprint:index:Minio", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        namespace = k8s.core.v1.Namespace(f"{name}-namespace", metadata={"name": args.namespace}, opts=child)
        after_folder = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[args.secrets_folder]))
        user = HostSecret(f"{name}-root-user", HostSecretArgs(path=f"{args.secrets_path}/minio-root-user", length=20), opts=after_folder)
        password = HostSecret(f"{name}-root-password", HostSecretArgs(path=f"{args.secrets_path}/minio-root-password"), opts=after_folder)
        secret = k8s.core.v1.Secret(
            f"{name}-root",
            metadata={"name": f"{NAME}-root", "namespace": namespace.metadata.name},
            string_data={"MINIO_ROOT_USER": user.value, "MINIO_ROOT_PASSWORD": password.value},
            opts=child,
        )
        claim = bound_claim(f"{name}-data", args.volume, args.volume_resource, namespace.metadata.name, child)
        labels = {"app.kubernetes.io/name": NAME}
        server = k8s.apps.v1.Deployment(
            f"{name}-server",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=NAME, namespace=namespace.metadata.name, labels=labels),
            spec=as_input(deployment_spec(args, f"{NAME}-root", labels)),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[secret, claim])),
        )
        service = k8s.core.v1.Service(
            f"{name}-service",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=NAME, namespace=namespace.metadata.name, labels=labels),
            spec=k8s.core.v1.ServiceSpecArgs(
                selector=labels,
                ports=[
                    k8s.core.v1.ServicePortArgs(name="api", port=API_PORT, target_port="api"),
                    k8s.core.v1.ServicePortArgs(name="console", port=CONSOLE_PORT, target_port="console"),
                ],
            ),
            opts=child,
        )
        host = f"{NAME}.{args.namespace}.svc.cluster.local"
        self.buckets = k8s.batch.v1.Job(
            f"{name}-buckets",
            metadata=k8s.meta.v1.ObjectMetaArgs(namespace=namespace.metadata.name, labels=labels),
            spec=as_input(buckets_job_spec(args, f"{NAME}-root", host)),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[server, service])),
        )
        self.host_port = f"{host}:{API_PORT}"
        self.endpoint = pulumi.Output.concat("http://", self.host_port)
        self.access_key = user.value
        self.secret_key = password.value
        self.register_outputs({"endpoint": self.endpoint, "access_key": self.access_key, "secret_key": self.secret_key})
