"""S3 for GitLab and the runner cache: one MinIO server, their buckets, and one user for each.

The last image published on quay.io, pinned, as a plain Deployment: MinIO's community edition is
source-only now, its charts archived. The root credentials are generated once into files under the
data folder (`providers/host_secret.py`), so they stay the same over preserved data; no consumer
gets them (only their mirror in OpenBao: credentials.py). Each consumer (GitLab, the runner cache)
gets a MinIO user of its own, its secret key generated once beside the root ones, whose policy
allows every S3 action on its buckets alone and denies bucket administration, which neither does
(DENIED_BUCKET_ACTIONS: making a bucket public, deleting it, changing its versioning, object lock,
lifecycle, encryption, notifications or replication). A Deny wins over any Allow (minio/pkg
policy/policy.go `IsAllowed` checks every Deny statement first).

Without a KMS, MinIO keeps its users' secret keys as plain text under the volume's `.minio.sys/`:
the volume's folder (0700, MinIO's user's) is what protects them. One Job with no shell makes the
buckets, the policies and the users, one mc command per container, each safe to run again
(`setup_job_spec`). Why: docs/design/decisions.md, entry 16.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

import versions
from components.pod_security import pod_security_labels
from components.storage import Provisioned, Volume, as_input, bound_claim, data_namespace
from providers.host_secret import HostSecret, HostSecretArgs

NAME = "minio"
API_PORT = 9000
CONSOLE_PORT = 9001
SERVER_LABELS = {"app.kubernetes.io/name": NAME}
"""The labels of MinIO's server pods."""
GITLAB = "gitlab"
RUNNER_CACHE = "runner-cache"
GITLAB_BUCKETS = (
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
)
"""GitLab chart 10.x's default bucket names (values.yaml) and the registry's."""
CONSUMERS: Mapping[str, tuple[str, ...]] = {GITLAB: GITLAB_BUCKETS, RUNNER_CACHE: ("runner-cache",)}
"""Who uses MinIO: each gets a user of this name (its access key) allowed only these buckets."""
POLICY_PREFIX = "blueprint-"
"""A consumer's policy is `blueprint-<consumer>`."""
_CONSUMER_NAME = re.compile(r"[a-z0-9][a-z0-9-]{1,18}[a-z0-9]")
"""A MinIO access key (3 to 20 characters, no `=` or `,`: minio internal/auth/credentials.go), also
a Kubernetes container name and Secret key."""
_BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
MINIO_USER = (1000, 1000)
"""(uid, gid) the server runs as (what MinIO's own operator runs it as), and the owner of the
volume's folder."""
SERVER_HOME = "/home/minio"


@dataclass(frozen=True, kw_only=True)
class MinioArgs:
    namespace: str = "minio"
    volume: Volume
    volume_resource: pulumi.Resource | None
    """The PV the data claim binds to (None on an existing cluster)."""
    secrets_path: str
    """Host folder (under the data folder) that keeps the root credentials and the users' keys."""
    secrets_folder: pulumi.Resource
    """What creates that folder: the credentials are written after it."""
    consumers: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: dict(CONSUMERS))
    """One MinIO user per consumer (the key is its name and access key), allowed only the buckets listed."""
    provisioned: Provisioned | None = None
    """On an existing cluster, the class that provisions the data claim (then no PV)."""

    def __post_init__(self) -> None:
        if (self.volume_resource is None) == (self.provisioned is None):
            raise ValueError("the data claim binds to a PV (volume_resource) or its class provisions it (provisioned): exactly one")
        if self.volume.namespace != self.namespace:
            raise ValueError(f"the volume must be in namespace {self.namespace}, got {self.volume.key}")
        if self.volume.owner != MINIO_USER:
            raise ValueError(f"the volume must belong to MinIO's user {MINIO_USER}, got {self.volume.owner}")
        for consumer, buckets in self.consumers.items():
            if not _CONSUMER_NAME.fullmatch(consumer):
                raise ValueError(
                    f"MinioArgs.consumers: {consumer!r} is not a usable MinIO user name; "
                    "use 3 to 20 lowercase letters, digits and dashes, starting and ending with a letter or digit"
                )
            if isinstance(buckets, str) or not buckets:
                raise ValueError(f"MinioArgs.consumers[{consumer!r}]: expected a non-empty tuple of bucket names, got {buckets!r}")
            for bucket in buckets:
                if not _BUCKET_NAME.fullmatch(bucket):
                    raise ValueError(
                        f"MinioArgs.consumers[{consumer!r}]: {bucket!r} is not an S3 bucket name; "
                        "use 3 to 63 lowercase letters, digits, dots and dashes"
                    )

    @property
    def buckets(self) -> tuple[str, ...]:
        """Every consumer's buckets, each once."""
        return tuple(dict.fromkeys(bucket for buckets in self.consumers.values() for bucket in buckets))


def _credentials_env(secret_name: str) -> list[dict[str, Any]]:
    return [
        {"name": key, "valueFrom": {"secretKeyRef": {"name": secret_name, "key": key}}}
        for key in ("MINIO_ROOT_USER", "MINIO_ROOT_PASSWORD")
    ]


def server_pod_spec(args: MinioArgs, secret_name: str) -> dict[str, Any]:
    """MinIO's pod, as MINIO_USER, meeting the `restricted` Pod Security Standard. The image's
    entrypoint only switches user when MINIO_USERNAME is set (dockerscripts/docker-entrypoint.sh);
    MinIO creates its certs folder under $HOME (`~/.minio/certs`, fatal if it cannot), so HOME is
    an emptyDir: this user has no home in the image.
    """

    def probe(path: str) -> dict[str, Any]:
        return {"httpGet": {"path": path, "port": API_PORT}, "periodSeconds": 10}

    security: dict[str, Any] = {
        "runAsNonRoot": True,
        "runAsUser": MINIO_USER[0],
        "runAsGroup": MINIO_USER[1],
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    if args.provisioned is not None:
        # A provisioned volume is root's: kubelet gives it to this group (on kind the host folder is MinIO's already).
        security["fsGroup"] = MINIO_USER[1]
    return {
        "automountServiceAccountToken": False,
        "securityContext": security,
        "containers": [
            {
                "name": "minio",
                "image": versions.MINIO_IMAGE,
                "args": ["server", "/data", "--console-address", f":{CONSOLE_PORT}"],
                "env": [*_credentials_env(secret_name), {"name": "HOME", "value": SERVER_HOME}],
                "ports": [{"name": "api", "containerPort": API_PORT}, {"name": "console", "containerPort": CONSOLE_PORT}],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}, {"name": "home", "mountPath": SERVER_HOME}],
                "readinessProbe": probe("/minio/health/ready"),
                "livenessProbe": probe("/minio/health/live"),
                "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
            }
        ],
        "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": args.volume.claim}},
            {"name": "home", "emptyDir": {}},
        ],
    }


def deployment_spec(args: MinioArgs, secret_name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "replicas": 1,
        "strategy": {"type": "Recreate"},  # one volume, one writer
        "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": server_pod_spec(args, secret_name)},
    }


DENIED_BUCKET_ACTIONS = (
    "s3:PutBucketPolicy",
    "s3:DeleteBucketPolicy",
    "s3:DeleteBucket",
    "s3:ForceDeleteBucket",
    "s3:PutBucketVersioning",
    "s3:PutBucketObjectLockConfiguration",
    "s3:PutLifecycleConfiguration",
    "s3:PutEncryptionConfiguration",
    "s3:PutBucketNotification",
    "s3:PutReplicationConfiguration",
)
"""Bucket administration no consumer does, denied to every consumer. Each is in MinIO's list of
supported policy actions (minio/pkg policy/action.go `supportedActions`; MinIO refuses a policy that
names an action it does not know), and has been since 2021 (minio/pkg v1.0.x), before the pinned
server."""


def bucket_policy(buckets: Sequence[str]) -> str:
    """A MinIO policy (IAM syntax) allowing every S3 action on `buckets` and their objects, and
    nothing else: no other bucket, no listing of all buckets, no admin action; and denying
    DENIED_BUCKET_ACTIONS on every bucket. Compact JSON, to stay far under MinIO's limit for a
    policy file.
    """
    resources = [arn for bucket in buckets for arn in (f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*")]
    allow = {"Effect": "Allow", "Action": ["s3:*"], "Resource": resources}
    deny = {"Effect": "Deny", "Action": list(DENIED_BUCKET_ACTIONS), "Resource": ["arn:aws:s3:::*"]}
    document = {"Version": "2012-10-17", "Statement": [allow, deny]}
    return json.dumps(document, separators=(",", ":"))


def policy_files(args: MinioArgs) -> dict[str, str]:
    """The policies, as the files the Job reads: `<consumer>.json`."""
    return {f"{consumer}.json": bucket_policy(buckets) for consumer, buckets in args.consumers.items()}


def _secret_key_variable(consumer: str) -> str:
    return "SECRET_KEY_" + consumer.upper().replace("-", "_")


POLICIES_DIR = "/policies"
CONFIG_DIR = "/config"
"""mc's configuration folder (`MC_CONFIG_DIR`): an emptyDir, so the root filesystem stays read-only."""
RUN_AS = 65532
"""The mc image sets no user; any non-root one works, since mc writes only to CONFIG_DIR."""


def setup_job_spec(args: MinioArgs, *, root_secret: str, users_secret: str, policies: str, endpoint_host: str) -> dict[str, Any]:
    """The Job that creates every bucket, then each consumer's policy and user, and attaches the
    one to the other. Each step is one container (init containers run in order). `$(VAR)`
    expansion builds the mc alias from the root Secret and passes each user's secret key from the
    users Secret, so the spec holds names only. The pod meets the `restricted` Pod Security Standard.
    The mc image has no shell to rely on. Each step is safe to run again after a crash: `mc mb
    --ignore-existing`; `mc admin policy create` overwrites a policy of the same name; `mc admin
    user add` sets an existing user's secret key again; `mc admin policy attach` succeeds when the
    policy is already attached, since mc RELEASE.2024-10 (minio/mc#5058, cmd/admin-policy-attach.go:
    `XMinioAdminPolicyChangeAlreadyApplied`).
    """
    files = policy_files(args)
    env = [
        *_credentials_env(root_secret),
        {"name": "MC_HOST_platform", "value": f"http://$(MINIO_ROOT_USER):$(MINIO_ROOT_PASSWORD)@{endpoint_host}:{API_PORT}"},
        {"name": "MC_CONFIG_DIR", "value": CONFIG_DIR},
        {"name": "HOME", "value": CONFIG_DIR},
    ]
    mounts = [{"name": "config", "mountPath": CONFIG_DIR}, {"name": "policies", "mountPath": POLICIES_DIR, "readOnly": True}]
    security = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": True}

    def mc(name: str, command: list[str], extra_env: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
        return {
            "name": name,
            "image": versions.MINIO_CLIENT_IMAGE,
            "args": command,
            "env": [*env, *extra_env],
            "volumeMounts": mounts,
            "securityContext": security,
        }

    steps = [mc("buckets", ["mb", "--ignore-existing", *(f"platform/{bucket}" for bucket in args.buckets)])]
    for consumer in args.consumers:
        policy = f"{POLICY_PREFIX}{consumer}"
        variable = _secret_key_variable(consumer)
        secret_env = [{"name": variable, "valueFrom": {"secretKeyRef": {"name": users_secret, "key": consumer}}}]
        steps += [
            mc(f"policy-{consumer}", ["admin", "policy", "create", "platform", policy, f"{POLICIES_DIR}/{consumer}.json"]),
            mc(f"user-{consumer}", ["admin", "user", "add", "platform", consumer, f"$({variable})"], secret_env),
            mc(f"attach-{consumer}", ["admin", "policy", "attach", "platform", policy, "--user", consumer]),
        ]
    # A changed policy changes the pod template, so the Job is replaced and runs again.
    digest = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
    return {
        "backoffLimit": 20,
        "template": {
            "metadata": {"annotations": {"blueprint/policies-sha256": digest}},
            "spec": {
                "restartPolicy": "OnFailure",
                "automountServiceAccountToken": False,
                "securityContext": {
                    "runAsNonRoot": True,
                    "runAsUser": RUN_AS,
                    "runAsGroup": RUN_AS,
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "initContainers": steps[:-1],
                "containers": steps[-1:],
                "volumes": [{"name": "config", "emptyDir": {}}, {"name": "policies", "configMap": {"name": policies}}],
            },
        },
    }


@dataclass(frozen=True)
class S3Credentials:
    """A consumer's MinIO user."""

    access_key: str
    secret_key: pulumi.Output[str]
    """Secret."""


def lookup_credentials(credentials: Mapping[str, S3Credentials], consumer: str) -> S3Credentials:
    if consumer not in credentials:
        raise ValueError(
            f"MinIO has no user for consumer {consumer!r}; the consumers are {sorted(credentials)}: "
            "add it to MinioArgs.consumers with the buckets it may use"
        )
    return credentials[consumer]


class Minio(pulumi.ComponentResource):
    """MinIO at `endpoint` in the cluster, with GitLab's and the runner cache's buckets and users.
    Its root credentials stay inside: consumers get `credentials_for(consumer)`.
    """

    endpoint: pulumi.Output[str]
    """In-cluster S3 endpoint, http."""
    host_port: str
    """In-cluster host:port of the S3 API."""
    credentials: Mapping[str, S3Credentials]
    """Each consumer's user, by consumer (MinioArgs.consumers)."""
    root_user: pulumi.Output[str]
    root_password: pulumi.Output[str]
    """The root pair (secret): no consumer gets it; phase2 mirrors it into OpenBao (credentials.py)."""
    buckets: k8s.batch.v1.Job
    """Completes once every bucket, and every consumer's user with its policy, exists: what uses
    MinIO waits for this."""

    def __init__(self, name: str, args: MinioArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("blueprint:index:Minio", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # restricted: our own server and setup pods (server_pod_spec, setup_job_spec).
        namespace = data_namespace(f"{name}-namespace", args.namespace, pod_security_labels("restricted"), args.provisioned, child)
        after_folder = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[args.secrets_folder]))
        user = HostSecret(f"{name}-root-user", HostSecretArgs(path=f"{args.secrets_path}/minio-root-user", length=20), opts=after_folder)
        password = HostSecret(f"{name}-root-password", HostSecretArgs(path=f"{args.secrets_path}/minio-root-password"), opts=after_folder)
        secret = k8s.core.v1.Secret(
            f"{name}-root",
            metadata={"name": f"{NAME}-root", "namespace": namespace.metadata.name},
            string_data={"MINIO_ROOT_USER": user.value, "MINIO_ROOT_PASSWORD": password.value},
            opts=child,
        )
        # Generated once, like the root pair: `mc admin user add` sets them again on every run of
        # the Job, but a Job that does not run again would leave MinIO with an older key.
        secret_keys = {
            consumer: HostSecret(
                f"{name}-user-{consumer}", HostSecretArgs(path=f"{args.secrets_path}/minio-user-{consumer}"), opts=after_folder
            ).value
            for consumer in args.consumers
        }
        users = k8s.core.v1.Secret(
            f"{name}-users",
            metadata={"name": f"{NAME}-users", "namespace": namespace.metadata.name},
            string_data=secret_keys,
            opts=child,
        )
        policies = k8s.core.v1.ConfigMap(
            f"{name}-policies",
            metadata={"name": f"{NAME}-policies", "namespace": namespace.metadata.name},
            data=policy_files(args),
            opts=child,
        )
        claim = bound_claim(f"{name}-data", args.volume, args.volume_resource, namespace.metadata.name, child, args.provisioned)
        labels = dict(SERVER_LABELS)
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
            spec=as_input(
                setup_job_spec(
                    args, root_secret=f"{NAME}-root", users_secret=f"{NAME}-users", policies=f"{NAME}-policies", endpoint_host=host
                )
            ),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[server, service, users, policies])),
        )
        self.host_port = f"{host}:{API_PORT}"
        self.endpoint = pulumi.Output.concat("http://", self.host_port)
        self.credentials = {consumer: S3Credentials(access_key=consumer, secret_key=key) for consumer, key in secret_keys.items()}
        self.root_user, self.root_password = user.value, password.value
        self.register_outputs({"endpoint": self.endpoint, "credentials": {c: creds.access_key for c, creds in self.credentials.items()}})

    def credentials_for(self, consumer: str) -> S3Credentials:
        """`consumer`'s MinIO user; an unknown consumer is a programming error that names the known ones."""
        return lookup_credentials(self.credentials, consumer)
