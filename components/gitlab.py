"""GitLab 19 (chart 10.1.x) on the external data tier, behind its bundled Envoy Gateway.

Chart facts come from the chart's own values.yaml, templates and docs (mirror nobidev/gitlab-charts).
The values name every credential by its Secret and hold none. Object storage takes three formats
(Rails' Fog connection, the registry's S3 driver config, the toolbox's s3cmd INI), built below from
plain strings. Envoy's Service is a NodePort on the NodePorts phase1 maps (kind) or a LoadBalancer
(an existing cluster), under a fixed name that kind's in-cluster DNS points `*.<domain>` at
(`components/cluster_dns.py`); the apps' and Headlamp's
listeners are patched onto the chart's Gateway, and a last patch waits for it to be Programmed
(the Service patch, the listeners and the gate's annotations: `components/gitlab_gateway.py`).
The rails secret and the SSH host keys are kept in the data folder (`providers/host_secret.py`).
Why the bundled data tier, runner, cert-manager, Prometheus and OpenBao are off, and the rest:
docs/design/decisions.md, entries 7, 11, 19 and 20.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

import versions
from components.gitlab_gateway import (
    chart_listeners_serving,
    check_envoy_service_ports,
    envoy_proxy_spec,
    gateway_listeners,
    programmed_gate_annotations,
)
from components.minio import GITLAB_BUCKETS
from components.storage import STORAGE_CLASS, Provisioned, Volume, bound_claim
from providers.host_secret import HostSecret, HostSecretArgs

RELEASE = "gitlab"
GATEWAY = f"{RELEASE}-gw"
"""The chart's Gateway (templates/gateway.yaml)."""
APPS_LISTENER_DIGEST_ANNOTATION = "blueprint/apps-listener-release-sha256"
"""On the apps listener's patch: the release's chart and values, so a changed release re-applies it."""
TOOLBOX = f"{RELEASE}-toolbox"
"""The toolbox Deployment and its container is `toolbox`: `gitlab-rails runner` runs there."""
REGION = "us-east-1"
"""MinIO ignores the region, but the S3 clients want one."""

PSQL_SECRET = "gitlab-postgres"
REDIS_SECRET = "gitlab-redis"
OBJECT_STORE_SECRET = "gitlab-object-storage"
REGISTRY_STORAGE_SECRET = "gitlab-registry-storage"
BACKUP_STORAGE_SECRET = "gitlab-backup-storage"
ROOT_PASSWORD_SECRET = "gitlab-initial-root-password"
RAILS_SECRET = "gitlab-rails-secret"
HOST_KEYS_SECRET = "gitlab-shell-host-keys"


@dataclass(frozen=True, kw_only=True)
class GitLabArgs:
    namespace: pulumi.Input[str]
    domain: str
    ssh_port: int
    """Host port of SSH: what clone URLs show."""
    node_ports: tuple[int, int, int] | None
    """NodePorts of HTTP, HTTPS and SSH that phase1 maps from the host (kind), or None: the API
    server numbers them, if `service_type` has any (an existing cluster)."""
    node_selector: dict[str, str]
    """Where GitLab's pods run: the nodes phase1 labels for GitLab (kind), or `blueprint:gitlabNodeSelector`
    (an existing cluster); {}: any node, and no nodeSelector in the values at all."""
    service_type: str = "NodePort"
    """The type of Envoy's Service: NodePort (kind; `blueprint:exposure=nodePort`) or LoadBalancer."""
    service_fields: dict[str, Any] = field(default_factory=dict)
    """Fields added to Envoy's Service (annotations, loadBalancerSourceRanges, loadBalancerClass): an
    existing cluster's config (stacks/config/cluster.py `gateway_service_fields`); {}: none (kind)."""
    postgres_host: pulumi.Input[str]
    postgres_database: str
    postgres_user: str
    postgres_password: pulumi.Input[str]
    redis_host: pulumi.Input[str]
    redis_password: pulumi.Input[str]
    s3_endpoint: pulumi.Input[str]
    """MinIO's in-cluster endpoint, http://host:port."""
    s3_access_key: pulumi.Input[str]
    s3_secret_key: pulumi.Input[str]
    ca_secret: str
    """Secret (in the namespace) with our CA, for `global.certificates.customCAs`."""
    gitaly_volume: Volume
    secrets_path: str
    """Host folder (under the data folder) for the secrets that must survive a destroy."""
    secrets_folder: pulumi.Resource
    """What creates that folder."""
    apps_namespace: str
    """The namespace whose HTTPRoutes may attach to the apps listener."""
    headlamp_namespace: str | None = None
    """Headlamp's namespace, when phase1 installed it: a listener for `headlamp.<domain>` admits its routes."""
    depends_on: tuple[pulumi.Resource, ...] = ()
    """What the release waits for: the CRDs, the databases, the buckets, the TLS Secrets, Gitaly's PV."""
    certificate: dict[str, str] | None = None
    """The `certificateRefs` entry of a Secret the user brought (components/brought_tls.py), which every
    TLS listener then serves; None: the platform CA's wildcard, under the names the listeners look up."""
    gitaly_provisioned: Provisioned | None = None
    """On an existing cluster, the class of Gitaly's claim, which this component then makes itself,
    ahead of the chart, so that a destroy with preserveData can keep it; None: kind's static volume."""


def fog_connection(*, endpoint: str, access_key: str, secret_key: str) -> str:
    """Rails' object storage connection (chart examples/objectstorage/rails.minio.yaml)."""
    return yaml.safe_dump(
        {
            "provider": "AWS",
            "region": REGION,
            "aws_access_key_id": access_key,
            "aws_secret_access_key": secret_key,
            "aws_signature_version": 4,
            "endpoint": endpoint,
            "path_style": True,
        },
        sort_keys=False,
    )


REGISTRY_S3_DRIVER = "s3_v2"
"""The registry's AWS SDK v2 driver. The SDK v1 driver (`s3`) is removed in GitLab 19 (gitlab-org/gitlab#523095),
and `s3_v2` takes the same parameters (container-registry registry/storage/driver/s3-aws/common/parser.go)."""


def registry_storage(*, endpoint: str, access_key: str, secret_key: str, bucket: str = "registry") -> str:
    """The registry's S3 storage driver config (chart examples/objectstorage/registry.minio.yaml, on the
    v2 driver). Path-style addressing, which MinIO needs, is `pathstyle`: the v2 driver sets the SDK's
    `UsePathStyle` from it (s3-aws/v2/s3.go NewS3API); there is no `forcepathstyle`. The v2 driver
    signs with v4 only and ignores `v4auth`, kept true for the record.
    """
    return yaml.safe_dump(
        {
            REGISTRY_S3_DRIVER: {
                "v4auth": True,
                "regionendpoint": endpoint,
                "pathstyle": True,
                "region": REGION,
                "bucket": bucket,
                "accesskey": access_key,
                "secretkey": secret_key,
                "secure": endpoint.startswith("https://"),
            }
        },
        sort_keys=False,
    )


def backup_storage(*, endpoint: str, access_key: str, secret_key: str) -> str:
    """The toolbox's s3cmd config for backups (chart doc/installation/migration/bundled_chart_migration.md)."""
    host = endpoint.split("://", 1)[-1].rstrip("/")
    https = "True" if endpoint.startswith("https://") else "False"
    return (
        "[default]\n"
        f"access_key = {access_key}\n"
        f"secret_key = {secret_key}\n"
        f"host_base = {host}\n"
        f"host_bucket = {host}\n"
        f"use_https = {https}\n"
        "bucket_location = us-east-1\n"
    )


def _check_buckets(names: dict[str, str]) -> dict[str, str]:
    missing = sorted(set(names.values()) - set(GITLAB_BUCKETS))
    if missing:
        raise ValueError(f"GitLab would use buckets its MinIO user may not use: {missing}; add them to components.minio.GITLAB_BUCKETS")
    return names


BUCKET_OF = _check_buckets(
    {
        "lfs": "git-lfs",
        "artifacts": "gitlab-artifacts",
        "uploads": "gitlab-uploads",
        "packages": "gitlab-packages",
        "externalDiffs": "gitlab-mr-diffs",
        "terraformState": "gitlab-terraform-state",
        "ciSecureFiles": "gitlab-ci-secure-files",
        "dependencyProxy": "gitlab-dependency-proxy",
    }
)
"""Every object type, on, in the bucket MinIO creates for it and lets GitLab's user use."""


def release_digest(chart_version: str, values: dict[str, Any]) -> str:
    """The release's chart version and values, hashed (they hold Secret names, never secrets)."""
    return hashlib.sha256(json.dumps([chart_version, values], sort_keys=True).encode()).hexdigest()


def _one_replica(memory: str, cpu: str = "100m") -> dict[str, Any]:
    return {"minReplicas": 1, "maxReplicas": 1, "resources": {"requests": {"cpu": cpu, "memory": memory}}}


def _app_config() -> dict[str, Any]:
    """Rails' object storage: one connection (a Secret), every object type in its bucket, and the backups'."""
    return {
        "object_store": {"enabled": True, "proxy_download": True, "connection": {"secret": OBJECT_STORE_SECRET, "key": "connection"}},
        **{kind: {"enabled": True, "bucket": bucket} for kind, bucket in BUCKET_OF.items()},
        "backups": {"bucket": "gitlab-backups", "tmpBucket": "tmp"},
    }


def _global_values(args: GitLabArgs, *, postgres_host: str, redis_host: str) -> dict[str, Any]:
    """`global`: the hosts, the secrets by name, the external data tier, the Gateway, our CA."""
    return {
        "edition": "ce",
        "hosts": {"domain": args.domain, "https": True},
        "shell": {"port": args.ssh_port, "hostKeys": {"secret": HOST_KEYS_SECRET}},
        "initialRootPassword": {"secret": ROOT_PASSWORD_SECRET, "key": "password"},
        "railsSecrets": {"secret": RAILS_SECRET},
        # One database for GitLab's `main` and `ci` connections (check_one_database; decisions.md 45).
        "psql": {
            "host": postgres_host,
            "port": 5432,
            "database": args.postgres_database,
            "username": args.postgres_user,
            "password": {"secret": PSQL_SECRET, "key": "password"},
        },
        "redis": {"host": redis_host, "port": 6379, "auth": {"enabled": True, "secret": REDIS_SECRET, "key": "password"}},
        "minio": {"enabled": False},
        "appConfig": _app_config(),
        "registry": {"bucket": "registry"},
        # The redirect (the chart's default since 9.10.0) is what makes the Gateway listen on 80,
        # which the Envoy Service patch names (check_envoy_service_ports).
        "gatewayApi": {"enabled": True, "installEnvoy": True, "configureCertmanager": False, "httpToHttpsRedirect": True},
        "openbao": {"enabled": False},
        "certificates": {"customCAs": [{"secret": args.ca_secret}]},
        **_placed(args.node_selector),
    }


def _placed(node_selector: dict[str, str]) -> dict[str, Any]:
    """A `nodeSelector` value, or nothing at all for any node (an empty map is no selector, but a key the chart merges)."""
    return {"nodeSelector": node_selector} if node_selector else {}


def check_one_database(values: dict[str, Any]) -> dict[str, Any]:
    """`values`, once they give GitLab one database, its `ci` connection on `main`'s: GitLab then runs
    in its `single-database-ci-connection` mode (lib/gitlab/database.rb `database_mode`), which it
    takes without a warning (lib/gitlab/database_warnings.rb warns of `single-database` alone). The
    chart renders `ci` from `global.psql` and, on the same database, host and port as `main`,
    without database tasks (templates/_database.tpl `gitlab.database.setDefaultForDatabaseTasks`).
    A separate `ci` database is Beta in the chart and "not ready for production use" in GitLab
    (docs/design/decisions.md, 45): a `global.psql.main` or `global.psql.ci` elsewhere stops the plan.
    """
    psql = values["global"]["psql"]
    main = {key: psql.get(key) for key in ("host", "port", "database")}
    for name in ("main", "ci"):
        own = psql.get(name) or {}
        if elsewhere := {key: own[key] for key in main if key in own and own[key] != main[key]}:
            raise ValueError(
                f"global.psql.{name} points GitLab's {name} connection elsewhere ({elsewhere}) than global.psql "
                f"({main}): blueprint gives GitLab one database (docs/design/decisions.md, 45); drop global.psql.{name}"
            )
    return values


def _envoy_gateway_values(args: GitLabArgs) -> dict[str, Any]:
    """`envoy-gateway`: the bundled Envoy Gateway's controller, on GitLab's nodes."""
    return {
        # The CRD chart installs this policy; a second copy from this release would collide with it.
        "crds": {"gatewayAPI": {"safeUpgradePolicy": {"enabled": False}}},
        **({"deployment": {"pod": placed}, "certgen": {"job": placed}} if (placed := _placed(args.node_selector)) else {}),
    }


def _gitlab_subchart_values(args: GitLabArgs) -> dict[str, Any]:
    """`gitlab`: one replica of each service, and Gitaly on its static volume."""
    return {
        "webservice": {**_one_replica("2.5Gi", "300m"), "workhorse": {"resources": {"requests": {"cpu": "50m", "memory": "100Mi"}}}},
        "sidekiq": _one_replica("1.5Gi", "200m"),
        "gitlab-shell": _one_replica("64Mi", "20m"),
        "kas": _one_replica("128Mi", "20m"),
        "toolbox": {"backups": {"objectStorage": {"config": {"secret": BACKUP_STORAGE_SECRET, "key": "config"}}}},
        "gitaly": {
            "persistence": _gitaly_persistence(args),
            "resources": {"requests": {"cpu": "100m", "memory": "400Mi"}},
            # The user its volume's folder is given to (the chart's default, 1000, made explicit:
            # charts/gitlab/charts/gitaly/values.yaml securityContext, containerSecurityContext).
            "securityContext": {
                "runAsUser": args.gitaly_volume.owner[0],
                "runAsGroup": args.gitaly_volume.owner[1],
                "fsGroup": args.gitaly_volume.owner[1],
            },
            "containerSecurityContext": {"runAsUser": args.gitaly_volume.owner[0], "runAsGroup": args.gitaly_volume.owner[1]},
        },
    }


def _gitaly_persistence(args: GitLabArgs) -> dict[str, Any]:
    """Gitaly's volume claim template. On an existing cluster the StatefulSet finds its claim already
    made (`GitLab._gitaly_claim`) and uses it as it is; the template then says the same class.
    """
    provisioned = args.gitaly_provisioned
    if provisioned is None:
        return {"storageClass": STORAGE_CLASS, "size": args.gitaly_volume.size, "matchLabels": {}}
    return {**({"storageClass": provisioned.storage_class} if provisioned.storage_class else {}), "size": args.gitaly_volume.size}


def _registry_values() -> dict[str, Any]:
    """`registry`: its storage in MinIO (a Secret), no metadata database, one replica."""
    return {
        "storage": {"secret": REGISTRY_STORAGE_SECRET, "key": "config", "redirect": {"disable": True}},
        # The metadata database, set explicitly: with external PostgreSQL the chart refuses its
        # default, `prefer` (templates/_checkConfig_registry.tpl, charts MR !4671/!4672). Off, not on:
        # the registry's images live in MinIO, which preserveData keeps; over a registry that holds
        # images the metadata database starts empty and they become unreachable (gitlab-org/gitlab#600955;
        # GitLab's docs enable it for "a new container registry with no images pushed" only, and
        # migrate an existing one by an import). Metadata in object storage is deprecated, not removed,
        # and no breaking change (gitlab-org/gitlab#571531).
        "database": {"enabled": False},
        "hpa": {"minReplicas": 1, "maxReplicas": 1},
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
    }


def gitlab_values(args: GitLabArgs, *, postgres_host: str, redis_host: str) -> dict[str, Any]:
    """The chart's values. Every credential is a Secret's name: the values hold no secret."""
    return {
        "global": _global_values(args, postgres_host=postgres_host, redis_host=redis_host),
        "installCertmanager": False,
        "prometheus": {"install": False},
        "gitlab-runner": {"install": False},
        "postgresql": {"install": False},
        "redis": {"install": False},
        "gatewayApiResources": {
            "envoy": {
                "proxySpec": envoy_proxy_spec(
                    node_ports=args.node_ports,
                    ssh_port=args.ssh_port,
                    node_selector=args.node_selector,
                    service_type=args.service_type,
                    service_fields=args.service_fields,
                )
            },
            **({"gateway": {"listeners": chart_listeners_serving(args.certificate)}} if args.certificate else {}),
        },
        "envoy-gateway": _envoy_gateway_values(args),
        "gitlab": _gitlab_subchart_values(args),
        "registry": _registry_values(),
    }


class GitLab(pulumi.ComponentResource):
    """GitLab at https://gitlab.<domain>, its registry at registry.<domain>."""

    root_password: pulumi.Output[str]
    """The initial root password (secret)."""
    root_password_file: str
    """Host path of the same password (0600): where it is, never what it is."""
    rails_secrets: pulumi.Output[str]
    """GitLab's rails secrets, secrets.yml (secret): mirrored into OpenBao (credentials.py)."""
    ssh_host_keys: pulumi.Output[str]
    """GitLab SSH's host keys, JSON (secret): mirrored into OpenBao (credentials.py)."""
    release: k8s.helm.v3.Release
    """What waits for GitLab waits for this (Helm waits for every pod and hook)."""
    gateway_programmed: k8s.apiextensions.CustomResourcePatch
    """Done once GitLab's Gateway is Programmed: what calls GitLab through its URL waits for this."""

    def __init__(self, name: str, args: GitLabArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("blueprint:index:GitLab", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # Before any resource: a Service patch that does not match the chart's listeners stops the plan.
        check_envoy_service_ports(versions.GITLAB_CHART_VERSION, gitlab_values(args, postgres_host="", redis_host=""))
        check_one_database(gitlab_values(args, postgres_host="", redis_host=""))
        self.root_password_file = f"{args.secrets_path}/gitlab-root-password"
        root_password, rails, host_keys = kept = self._host_secrets(name, args, child)
        secrets = self._secrets(name, args, child, kept)
        values = pulumi.Output.all(args.postgres_host, args.redis_host).apply(
            lambda hosts: gitlab_values(args, postgres_host=hosts[0], redis_host=hosts[1])
        )
        after = pulumi.ResourceOptions(depends_on=[*secrets, *args.depends_on, *self._gitaly_claim(name, args, child)])
        self.release = self._release(name, args, values, pulumi.ResourceOptions.merge(child, after))
        self.gateway_programmed = self._gateway_patches(name, args, child, values)
        self.root_password = root_password.value
        self.rails_secrets = rails.value
        self.ssh_host_keys = host_keys.value
        self.register_outputs({"root_password": self.root_password})

    def _gitaly_claim(self, name: str, args: GitLabArgs, child: pulumi.ResourceOptions) -> list[pulumi.Resource]:
        """On an existing cluster, Gitaly's claim, under the name its StatefulSet gives it (GitLab's chart has
        no existingClaim for Gitaly: gitlab-org/gitlab#31027): the StatefulSet uses it as it finds it.
        """
        if args.gitaly_provisioned is None:
            return []
        volume = args.gitaly_volume
        return [bound_claim(f"{name}-gitaly-data", volume, None, args.namespace, child, args.gitaly_provisioned)]

    def _host_secrets(self, name: str, args: GitLabArgs, child: pulumi.ResourceOptions) -> tuple[HostSecret, HostSecret, HostSecret]:
        """The root password, the rails secrets and the SSH host keys, kept in the data folder."""
        after_folder = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[args.secrets_folder]))
        # With the data, not the stack: the preserved database keeps the password it was seeded
        # with, so a new one after a preserveData cycle would be a documented login that fails.
        root_password = HostSecret(f"{name}-root-password", HostSecretArgs(path=self.root_password_file, length=32), opts=after_folder)
        rails = HostSecret(
            f"{name}-rails-secrets",
            HostSecretArgs(path=f"{args.secrets_path}/gitlab-rails-secrets.yml", kind="gitlab-rails-secrets"),
            opts=after_folder,
        )
        host_keys = HostSecret(
            f"{name}-ssh-host-keys",
            HostSecretArgs(path=f"{args.secrets_path}/gitlab-ssh-host-keys.json", kind="ssh-host-keys"),
            opts=after_folder,
        )
        return root_password, rails, host_keys

    def _secrets(
        self, name: str, args: GitLabArgs, child: pulumi.ResourceOptions, kept: tuple[HostSecret, HostSecret, HostSecret]
    ) -> list[k8s.core.v1.Secret]:
        """The Secrets the chart's values name: every credential GitLab reads."""
        root_password, rails, host_keys = kept

        def secret(suffix: str, secret_name: str, data: dict[str, pulumi.Input[str]]) -> k8s.core.v1.Secret:
            return k8s.core.v1.Secret(
                f"{name}-{suffix}",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=secret_name, namespace=args.namespace),
                string_data=data,
                opts=child,
            )

        s3 = pulumi.Output.all(args.s3_endpoint, args.s3_access_key, args.s3_secret_key)

        def s3_config(render: Callable[..., str]) -> pulumi.Output[str]:
            return s3.apply(lambda v: render(endpoint=v[0], access_key=v[1], secret_key=v[2]))

        return [
            secret("postgres-password", PSQL_SECRET, {"password": args.postgres_password}),
            secret("redis-password", REDIS_SECRET, {"password": args.redis_password}),
            secret("object-storage", OBJECT_STORE_SECRET, {"connection": s3_config(fog_connection)}),
            secret("registry-storage", REGISTRY_STORAGE_SECRET, {"config": s3_config(registry_storage)}),
            secret("backup-storage", BACKUP_STORAGE_SECRET, {"config": s3_config(backup_storage)}),
            secret("root-password-secret", ROOT_PASSWORD_SECRET, {"password": root_password.value}),
            secret("rails-secret", RAILS_SECRET, {"secrets.yml": rails.value}),
            k8s.core.v1.Secret(
                f"{name}-shell-host-keys",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=HOST_KEYS_SECRET, namespace=args.namespace),
                string_data=host_keys.value.apply(json.loads),
                opts=child,
            ),
        ]

    def _release(
        self, name: str, args: GitLabArgs, values: pulumi.Output[dict[str, Any]], opts: pulumi.ResourceOptions
    ) -> k8s.helm.v3.Release:
        """The chart's release."""
        return k8s.helm.v3.Release(
            f"{name}-chart",
            k8s.helm.v3.ReleaseArgs(
                name=RELEASE,
                chart="gitlab",
                version=versions.GITLAB_CHART_VERSION,
                repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=versions.GITLAB_CHART_REPO),
                namespace=args.namespace,
                values=values,
                # Gateway API CRDs have one source in the cluster (components/gateway_crds.py).
                skip_crds=True,
                # GitLab's first install runs migrations and seeds the database: allow 30 minutes.
                timeout=1800,
            ),
            opts=opts,
        )

    def _gateway_patches(
        self, name: str, args: GitLabArgs, child: pulumi.ResourceOptions, values: pulumi.Output[dict[str, Any]]
    ) -> k8s.apiextensions.CustomResourcePatch:
        """The two patches of the chart's Gateway, after the release: our listeners, then the gate."""
        # The release's chart and values, hashed: both patches carry it, so a new release re-applies them.
        digest = values.apply(lambda v: release_digest(versions.GITLAB_CHART_VERSION, v))
        apps_listener_patch = k8s.apiextensions.CustomResourcePatch(
            f"{name}-apps-listener",
            api_version="gateway.networking.k8s.io/v1",
            kind="Gateway",
            # Helm upgrades a custom resource with a JSON merge patch: a release whose listeners
            # changed replaces the whole list and drops this one, with no diff for Pulumi to see.
            # The release's digest here changes with every new release, and so re-applies it after.
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=GATEWAY,
                namespace=args.namespace,
                annotations=digest.apply(lambda d: {APPS_LISTENER_DIGEST_ANNOTATION: d}),
            ),
            spec={
                "listeners": gateway_listeners(
                    domain=args.domain,
                    apps_namespace=args.apps_namespace,
                    headlamp_namespace=args.headlamp_namespace,
                    certificate=args.certificate,
                )
            },
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[self.release])),
        )
        # The gate: an annotation-only server-side apply on the chart's Gateway that completes once
        # the Gateway is Programmed (see programmed_gate_annotations), after every writer of its spec.
        return k8s.apiextensions.CustomResourcePatch(
            f"{name}-gateway-programmed",
            api_version="gateway.networking.k8s.io/v1",
            kind="Gateway",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=GATEWAY,
                namespace=args.namespace,
                annotations=digest.apply(programmed_gate_annotations),
            ),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[self.release, apps_listener_patch])),
        )
