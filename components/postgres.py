"""PostgreSQL 17 for GitLab and OpenBao: the CloudNativePG operator and one `Cluster`.

- Databases `gitlabhq_production` (owner `gitlab`, with GitLab's extensions `pg_trgm`, `btree_gist`
  and `amcheck`) and `openbao` (owner `openbao`), as `Database` objects with the `retain` reclaim
  policy, so deleting the object never drops a database.
- Roles `gitlab` (the bootstrap owner) and `openbao` (a managed role) with generated passwords in
  `kubernetes.io/basic-auth` Secrets. CloudNativePG sets a role's password from its Secret on
  every start, so a password generated anew after a destroy is applied to preserved data too
  (`data-readoption.md` section 1).
- Re-adoption. A new `Cluster` over an existing PGDATA would move the data aside and run initdb.
  CloudNativePG adopts instead when, before the Cluster exists, a claim `<cluster>-1` labelled as
  its own, with the `cnpg.io/nodeSerial` annotation and no owner, is there
  (`reconcileRestoredCluster`, internal/controller/cluster_restore.go at v1.30.0). Whether data is
  there is a fact of the data folder at the moment the Cluster is about to be created, not of the
  program: `<name>-adopt-data` decides it then, and creates that claim with kubectl only when the
  folder holds a PGDATA and the API holds no Cluster. Its inputs never change, so a second `up`
  registers the same graph.
- On an existing cluster the claim is CloudNativePG's own; with preserveData `<name>-release-claim`
  releases it from the Cluster before the Cluster's delete, for the next Cluster to adopt (entry 52).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random
import yaml
from pulumi_command import local

import versions
from components.engine import DOCKER, for_engine
from components.host_folder import PRESERVE_DATA
from components.markers import RELEASED_CLAIM
from components.pod_security import pod_security_labels
from components.scripts import script
from components.storage import STORAGE_CLASS, Provisioned, Volume, data_namespace, volume_name

CLUSTER = "postgresql-cnpg"
"""The CloudNativePG `Cluster`, named as the old blueprint named it, so that its commands work
(`kubectl wait cluster/postgresql-cnpg`); its service `postgresql-cnpg-rw`, its first instance and claim
`postgresql-cnpg-1`."""
GITLAB_DATABASE = "gitlabhq_production"
GITLAB_ROLE = "gitlab"
OPENBAO_DATABASE = "openbao"
OPENBAO_ROLE = "openbao"
GITLAB_EXTENSIONS = ("pg_trgm", "btree_gist", "amcheck")
"""What GitLab needs in its database (GitLab chart docs, external PostgreSQL)."""
POSTGRES_USER = (26, 26)
"""(uid, gid) of the instance pods: CloudNativePG's default (DefaultPostgresUID/GID, api/v1/cluster_types.go),
set explicitly in the Cluster, and the owner of the volume's folder."""


@dataclass(frozen=True, kw_only=True)
class PostgresArgs:
    namespace: str = "postgres"
    operator_namespace: str = "cnpg-system"
    volume: Volume
    """The static volume the instance's claim `<cluster>-1` binds to."""
    data_host_path: str = ""
    """Host path of that volume's folder: PGDATA is `<data_host_path>/pgdata` (kind only)."""
    volume_resource: pulumi.Resource | None
    """The PV of `volume`: the Cluster is created after it and deleted before it (None on an existing cluster)."""
    kind_cluster_name: pulumi.Input[str] = ""
    """For `kind get kubeconfig`, which the adoption step uses (no credentials pass through Pulumi; kind only)."""
    engine: str = DOCKER
    """The container engine that probes the kept volume (components/engine.py; kind only)."""
    provisioned: Provisioned | None = None
    """On an existing cluster, the class CloudNativePG's claim is on, and whether a destroy keeps it."""
    kube_context: str = ""
    """On an existing cluster, the kubeconfig context the release step's kubectl uses (the user's KUBECONFIG)."""

    def __post_init__(self) -> None:
        if self.provisioned is None and (self.volume_resource is None or not self.data_host_path):
            raise ValueError("a static volume needs its PV (volume_resource) and its host folder (data_host_path)")
        if self.provisioned is not None and (self.volume_resource is not None or not self.kube_context):
            raise ValueError("a provisioned claim has no PV (volume_resource), and needs the cluster's kube_context")
        if (self.volume.namespace, self.volume.claim) != (self.namespace, f"{CLUSTER}-1"):
            raise ValueError(f"the volume must serve {self.namespace}/{CLUSTER}-1, got {self.volume.key}")
        if self.volume.owner != POSTGRES_USER:
            raise ValueError(f"the volume must belong to Postgres' user {POSTGRES_USER}, got {self.volume.owner}")


def cluster_spec(args: PostgresArgs) -> dict[str, Any]:
    """The CloudNativePG `Cluster` spec: one instance on the static volume."""
    return {
        "instances": 1,
        "imageName": versions.POSTGRES_IMAGE,
        "postgresUID": POSTGRES_USER[0],
        "postgresGID": POSTGRES_USER[1],
        "storage": storage_spec(args),
        "bootstrap": {"initdb": {"database": GITLAB_DATABASE, "owner": GITLAB_ROLE, "secret": {"name": f"{CLUSTER}-{GITLAB_ROLE}"}}},
        "managed": {
            "roles": [
                {
                    "name": OPENBAO_ROLE,
                    "ensure": "present",
                    "login": True,
                    "passwordSecret": {"name": f"{CLUSTER}-{OPENBAO_ROLE}"},
                }
            ]
        },
        "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}},
    }


def storage_spec(args: PostgresArgs) -> dict[str, Any]:
    """The Cluster's `storage`: kind's static class; on an existing cluster the configured class, or
    none for the cluster's default (CloudNativePG then names no class on its claim).
    """
    if args.provisioned is None:
        return {"storageClass": STORAGE_CLASS, "size": args.volume.size}
    storage_class = args.provisioned.storage_class
    return {**({"storageClass": storage_class} if storage_class else {}), "size": args.volume.size}


def database_spec(name: str, owner: str, extensions: tuple[str, ...] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": name, "owner": owner, "cluster": {"name": CLUSTER}, "databaseReclaimPolicy": "retain"}
    if extensions:
        spec["extensions"] = [{"name": extension, "ensure": "present"} for extension in extensions]
    return spec


def adopted_claim(args: PostgresArgs) -> dict[str, Any]:
    """The claim CloudNativePG takes as its own orphan and restores the instance from, no initdb."""
    instance = f"{CLUSTER}-1"
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": instance,
            "namespace": args.namespace,
            "labels": {
                "cnpg.io/cluster": CLUSTER,
                "cnpg.io/instanceName": instance,
                "cnpg.io/pvcRole": "PG_DATA",
                "cnpg.io/instanceRole": "primary",
            },
            "annotations": {"cnpg.io/nodeSerial": "1", "cnpg.io/pvcStatus": "ready"},
        },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": STORAGE_CLASS,
            "volumeName": volume_name(args.volume),
            "resources": {"requests": {"storage": args.volume.size}},
        },
    }


RELEASE_SCRIPT = script("postgres_release_claim.sh")
"""Release the Cluster's claim RELEASED_CLAIM (its ownerReferences removed) when PRESERVE_DATA is
true: then the Cluster's delete leaves it, for the next Cluster to adopt."""
ADOPT_SCRIPT = script("postgres_adopt.sh")
"""Adopt kept PostgreSQL data: make the claim of `adopted_claim` (stdin) before the Cluster, when the
volume holds data and no Cluster exists yet."""


class Postgres(pulumi.ComponentResource):
    """The CloudNativePG operator and the `postgresql-cnpg` cluster with GitLab's and OpenBao's databases."""

    host: pulumi.Output[str]
    """In-cluster address of the read-write service."""
    gitlab_password: pulumi.Output[str]
    """Password of role `gitlab` (secret)."""
    openbao_password: pulumi.Output[str]
    """Password of role `openbao` (secret)."""
    gitlab_database: pulumi.Resource
    """GitLab's database, reported created once CloudNativePG has applied it (extensions included)."""
    openbao_database: pulumi.Resource
    """OpenBao's database, reported created once CloudNativePG has applied it."""

    def __init__(self, name: str, args: PostgresArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("blueprint:index:Postgres", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        operator = self._operator(name, args, child)
        # restricted: CloudNativePG's instance and job pods (pkg/specs/pods.go GetPodSecurityContext, containers.go GetSecurityContext).
        namespace = data_namespace(f"{name}-namespace", args.namespace, pod_security_labels("restricted"), args.provisioned, child)
        gitlab_password, gitlab_secret = self._role_secret(name, GITLAB_ROLE, namespace, child)
        openbao_password, openbao_secret = self._role_secret(name, OPENBAO_ROLE, namespace, child)

        before: list[pulumi.Resource] = [operator, gitlab_secret, openbao_secret]
        if args.volume_resource is not None:  # kind's static volume (PostgresArgs checks it is there exactly then)
            before += [self._adopt(name, args, namespace, child, args.volume_resource), args.volume_resource]
        cluster = self._cluster(name, args, namespace, child, before)
        if args.provisioned is not None:
            self._release(name, args, cluster, child)
        self.gitlab_database = self._database(name, namespace, cluster, child, GITLAB_DATABASE, GITLAB_ROLE, GITLAB_EXTENSIONS)
        self.openbao_database = self._database(name, namespace, cluster, child, OPENBAO_DATABASE, OPENBAO_ROLE)
        self.host = pulumi.Output.concat(CLUSTER, "-rw.", namespace.metadata.name, ".svc.cluster.local")
        self.gitlab_password = gitlab_password.result
        self.openbao_password = openbao_password.result
        self.register_outputs(
            {
                "host": self.host,
                "gitlab_password": self.gitlab_password,
                "openbao_password": self.openbao_password,
            }
        )

    def _adopt(
        self, name: str, args: PostgresArgs, namespace: k8s.core.v1.Namespace, child: pulumi.ResourceOptions, volume: pulumi.Resource
    ) -> local.Command:
        """kind: the claim CloudNativePG adopts kept data from, made before the Cluster when the volume holds data."""
        return local.Command(
            f"{name}-adopt-data",
            create=for_engine(ADOPT_SCRIPT, args.engine),
            delete="true",
            stdin=yaml.safe_dump(adopted_claim(args), sort_keys=False),
            environment={
                "PGDATA_DIR": f"{args.data_host_path}/pgdata",
                # The host user may not look into the volume's folder, which is Postgres' own.
                "PROBE_IMAGE": versions.KIND_NODE_IMAGE,
                "KIND_CLUSTER_NAME": args.kind_cluster_name,
                "NAMESPACE": args.namespace,
                "CLUSTER": CLUSTER,
            },
            # A new cluster (a new namespace) decides again; nothing else does.
            triggers=[namespace.metadata.apply(lambda metadata: metadata.uid)],
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[namespace, volume])),
        )

    def _release(self, name: str, args: PostgresArgs, cluster: pulumi.Resource, child: pulumi.ResourceOptions) -> local.Command:
        """An existing cluster's: after the Cluster, so that its delete (the release) runs before the Cluster's.
        Nothing to do on `up`; PRESERVE_DATA is recorded, as a host folder's is (`cli/lifecycle.py` flips it).
        """
        assert args.provisioned is not None
        return local.Command(
            f"{name}-release-claim",
            delete=RELEASE_SCRIPT,
            environment={
                "KUBE_CONTEXT": args.kube_context,
                "NAMESPACE": args.namespace,
                RELEASED_CLAIM: args.volume.claim,
                PRESERVE_DATA: "true" if args.provisioned.keep else "false",
            },
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[cluster])),
        )

    def _operator(self, name: str, args: PostgresArgs, child: pulumi.ResourceOptions) -> k8s.helm.v3.Release:
        """The CloudNativePG operator, in a namespace of its own."""
        # restricted: the operator chart's pod and container securityContext (cloudnative-pg 0.29.0 values.yaml).
        operator_namespace = k8s.core.v1.Namespace(
            f"{name}-operator-namespace",
            metadata={"name": args.operator_namespace, "labels": pod_security_labels("restricted")},
            opts=child,
        )
        return k8s.helm.v3.Release(
            f"{name}-operator",
            k8s.helm.v3.ReleaseArgs(
                name="cnpg",
                chart="cloudnative-pg",
                version=versions.CNPG_CHART_VERSION,
                repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=versions.CNPG_CHART_REPO),
                namespace=operator_namespace.metadata.name,
                values={"resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}}},
            ),
            opts=child,
        )

    def _role_secret(
        self, name: str, role: str, namespace: k8s.core.v1.Namespace, child: pulumi.ResourceOptions
    ) -> tuple[random.RandomPassword, k8s.core.v1.Secret]:
        """`role`'s generated password, and the Secret CloudNativePG sets it from (on every start)."""
        password = random.RandomPassword(f"{name}-{role}-password", length=32, special=False, opts=child)
        secret = k8s.core.v1.Secret(
            f"{name}-{role}-secret",
            metadata={
                "name": f"{CLUSTER}-{role}",
                "namespace": namespace.metadata.name,
                "labels": {"cnpg.io/reload": "true"},
            },
            type="kubernetes.io/basic-auth",
            string_data={"username": role, "password": password.result},
            opts=child,
        )
        return password, secret

    def _cluster(
        self,
        name: str,
        args: PostgresArgs,
        namespace: k8s.core.v1.Namespace,
        child: pulumi.ResourceOptions,
        depends_on: list[pulumi.Resource],
    ) -> k8s.apiextensions.CustomResource:
        """The `Cluster`, created after `depends_on` (the operator, the roles' Secrets, the adoption, the PV)."""
        return k8s.apiextensions.CustomResource(
            f"{name}-cluster",
            api_version="postgresql.cnpg.io/v1",
            kind="Cluster",
            metadata={
                "name": CLUSTER,
                "namespace": namespace.metadata.name,
                # pulumi-kubernetes >= 4.18: report the Cluster created only once CloudNativePG says Ready.
                "annotations": {"pulumi.com/waitFor": "condition=Ready", "pulumi.com/timeoutSeconds": "900"},
            },
            spec=cluster_spec(args),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=depends_on)),
        )

    def _database(
        self,
        name: str,
        namespace: k8s.core.v1.Namespace,
        cluster: pulumi.Resource,
        child: pulumi.ResourceOptions,
        database: str,
        owner: str,
        extensions: tuple[str, ...] = (),
    ) -> k8s.apiextensions.CustomResource:
        """A `Database` of the cluster, reported created once CloudNativePG has applied it."""
        return k8s.apiextensions.CustomResource(
            f"{name}-{database.replace('_', '-')}-database",
            api_version="postgresql.cnpg.io/v1",
            kind="Database",
            metadata={
                "name": database.replace("_", "-"),
                "namespace": namespace.metadata.name,
                "annotations": {"pulumi.com/waitFor": "jsonpath={.status.applied}=true"},
            },
            spec=database_spec(database, owner, extensions),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[cluster])),
        )
