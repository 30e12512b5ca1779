"""phase2: the platform on the phase1 cluster.

Gateway API CRDs, stable storage, Postgres, Redis, MinIO, OpenBao (self-initialised, unsealed by
its static key, holding every generated credential), TLS, then GitLab, its admin token, the
platform's group and its two Runners. The slowest chain is Postgres -> GitLab -> token -> group ->
runners; everything else starts beside it: TLS, Redis, MinIO and the CRDs beside Postgres, OpenBao
beside GitLab, cluster DNS and node registry access at once. `deploy` is the table of contents:
one function per tier, called in the order the tiers are registered (the order a plan lists).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

import credentials
import versions
from apps_manifest import HEADLAMP_HOST
from components import gitlab as gl
from components import gitlab_gateway as gw
from components import minio as mn
from components import postgres as pg
from components import tls as tls_component
from components.ci_access import CiAccess, CiAccessArgs
from components.gateway_crds import GatewayCrds, GatewayCrdsArgs
from components.gitlab import GitLab, GitLabArgs
from components.gitlab_projects import GROUP as APPS_GROUP
from components.headlamp import HeadlampArgs
from components.headlamp_route import HeadlampRoute, HeadlampRouteArgs
from components.kind_cluster import cluster_lease
from components.minio import Minio, MinioArgs
from components.openbao import OpenBao, OpenBaoArgs
from components.pod_security import owned_namespaces, pod_security_labels
from components.postgres import Postgres, PostgresArgs
from components.redis import VALKEY_USER, Redis, RedisArgs
from components.runner import DEFAULT_NAMESPACE, IMAGE_BUILD_NAMESPACE, HostAliases, Runner, RunnerArgs
from components.runner_egress import ENVOY_HTTPS_PORT, ENVOY_LABELS, Peer
from components.storage import PLATFORM_SUBDIR, Provisioned, Storage, StorageArgs, Volume, data_namespace, folders_in
from components.tls import Tls, TlsArgs
from providers.deploy_kubeconfig import kubeconfig_token
from providers.gitlab_api import Connection
from providers.gitlab_group import Group, GroupArgs
from providers.gitlab_token import GitLabToken, GitLabTokenArgs, GlabToken, GlabTokenArgs
from providers.host_secret import HostSecret, HostSecretArgs
from stacks import exposure, outputs
from stacks.config.paths import folder_owner, this_checkout
from stacks.migrations import layout
from stacks.mirror import mirror
from stacks.node_access import node_access, runner_host_aliases
from stacks.phase1 import cluster_kubeconfig, engine_of, preserve_data_file

POSTGRES_VOLUME = Volume(namespace="postgres", claim=f"{pg.CLUSTER}-1", size="10Gi", owner=pg.POSTGRES_USER)
REDIS_VOLUME = Volume(namespace="redis", claim="valkey-data", size="2Gi", owner=VALKEY_USER)
MINIO_VOLUME = Volume(namespace="minio", claim="minio-data", size="20Gi", owner=mn.MINIO_USER)
GITALY_USER = (1000, 1000)
"""Gitaly's user: the chart's default (securityContext runAsUser 1000, fsGroup 1000; charts/gitlab/charts/
gitaly/values.yaml), which `components/gitlab.py` sets explicitly from the volume."""
GITALY_VOLUME = Volume(namespace="gitlab", claim="repo-data-gitlab-gitaly-0", size="20Gi", owner=GITALY_USER)
"""Gitaly's StatefulSet claim (release `gitlab`), bound here ahead of GitLab itself."""
VOLUMES = (POSTGRES_VOLUME, REDIS_VOLUME, MINIO_VOLUME, GITALY_VOLUME)
APPS_NAMESPACE = "apps"
"""Where CI deploys the apps (phase3)."""


def namespaces() -> tuple[str, ...]:
    """Every namespace phase2 makes on an existing cluster, by the names its components are given:
    what phase1 and the doctor find taken before an `up` (components/existing_cluster.py `foreign_namespaces`).
    """
    data = (POSTGRES_VOLUME, REDIS_VOLUME, MINIO_VOLUME, GITALY_VOLUME)
    return (
        *(volume.namespace for volume in data),
        OpenBaoArgs.namespace,
        PostgresArgs.operator_namespace,
        DEFAULT_NAMESPACE,
        IMAGE_BUILD_NAMESPACE,
        APPS_NAMESPACE,
    )


def deploy(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Build phase2 on the cluster phase1 describes (`inputs`: phase1's outputs, plain values; in
    `dev`, also what phase1 hands on in the graph only: `outputs.IN_STACK_ONLY`).
    """
    # The stack, as the cluster lease and the Runner's description name it; the host folders it
    # claims name this checkout too (`folder_owner`), since another checkout may hold the same stack.
    owner = f"{pulumi.get_project()}/{pulumi.get_stack()}"
    folders = Folders.of(inputs)
    on_cluster = _cluster_access(inputs, owner)
    storage = _storage(inputs, folders, on_cluster)
    gateway_crds = GatewayCrds("gateway-crds", GatewayCrdsArgs(kept=outputs.on_existing(inputs)), opts=on_cluster)
    # baseline: GitLab chart 10.1's containers drop ALL and run as non-root but set no seccomp profile
    # (e.g. charts/gitlab/charts/gitaly/values.yaml containerSecurityContext); nothing needs the host.
    labels = pod_security_labels("baseline")
    gitlab_namespace = data_namespace("gitlab-namespace", GITALY_VOLUME.namespace, labels, storage.provisioned, on_cluster)
    ground = Ground(
        inputs=inputs, owner=owner, folders=folders, storage=storage, namespace=gitlab_namespace.metadata.name, on_cluster=on_cluster
    )
    tls = _tls(ground, gateway_crds)
    data = _data_tier(ground)
    openbao = _openbao(ground, data.postgres, tls)
    node_access(inputs, namespace=ground.namespace, ca_pem=tls.ca_cert_pem, on_cluster=on_cluster)
    gitlab = _gitlab(ground, gateway_crds, tls, data)
    admin = _admin(ground, tls, gitlab)
    runners = _runners(
        ground, tls, data.minio, admin, runner_host_aliases(inputs, gateway_programmed=gitlab.gateway_programmed, on_cluster=on_cluster)
    )
    _headlamp_route(ground, gitlab)
    ci_access = CiAccess(
        "ci-access",
        CiAccessArgs(
            kind_cluster_name=inputs[outputs.CLUSTER_NAME],
            engine=engine_of(inputs),
            kube_context=exposure.kube_context(inputs),
            namespace=APPS_NAMESPACE,
        ),
        opts=on_cluster,
    )
    platform = Platform(tls=tls, data=data, openbao=openbao, gitlab=gitlab, admin=admin, runners=runners, ci_access=ci_access)
    _mirror_credentials(inputs, platform)
    return _outputs(inputs, platform, owner)


@dataclass(frozen=True, kw_only=True)
class Folders:
    """phase2's two host folders: the platform's own (secrets, the CA; no node mounts it) and its
    volumes, inside the data folder's `volumes`, which every node mounts.
    """

    host: str
    secrets: str
    volumes_host: str
    """The volumes' folder on the host."""
    volumes_node: str
    """The same folder as the nodes mount it."""

    @staticmethod
    def of(inputs: Mapping[str, Any]) -> Folders:
        host, volumes_host = folders_in(inputs[outputs.DATA_DIR])
        return Folders(
            host=host,
            secrets=f"{host}/secrets",
            volumes_host=volumes_host,
            volumes_node=f"{inputs[outputs.VOLUMES_NODE_PATH]}/{PLATFORM_SUBDIR}",
        )


@dataclass(frozen=True, kw_only=True)
class Ground:
    """What every tier builds on: phase1's outputs, the stack, its folders and the cluster."""

    inputs: Mapping[str, Any]
    """phase1's outputs (in `dev`, with what phase1 hands on in the graph)."""
    owner: str
    """`<project>/<stack>`, as the cluster lease and the runners' description name it."""
    folders: Folders
    storage: Storage
    namespace: pulumi.Output[str]
    """GitLab's namespace, which its certificates, token and routes live in too."""
    on_cluster: pulumi.ResourceOptions
    """The options of everything on the cluster: its one Kubernetes provider, after the lease."""


@dataclass(frozen=True, kw_only=True)
class DataTier:
    """The data tier GitLab and OpenBao keep their state in."""

    postgres: Postgres
    redis: Redis
    minio: Minio


@dataclass(frozen=True, kw_only=True)
class Admin:
    """GitLab's admin token and the platform's group, made with it."""

    token_file: str
    """Where the token is kept, without GitLab's prefix."""
    token_value: pulumi.Output[str]
    """The token as the file holds it, with GitLab's prefix."""
    token: GitLabToken
    """The token, once GitLab has it: what waits on it waits for the seeding."""
    glab_token_file: str
    """glab's token (GlabToken), whole: GitLab makes it, with its prefix."""
    glab_token_value: pulumi.Output[str]
    group: Group


@dataclass(frozen=True, kw_only=True)
class Platform:
    """What the tiers made that the catalogue's writes and the stack's outputs read."""

    tls: Tls
    data: DataTier
    openbao: OpenBao
    gitlab: GitLab
    admin: Admin
    runners: tuple[Runner, Runner]
    """The default runner, then the one for image builds."""
    ci_access: CiAccess


def _in_graph(inputs: Mapping[str, Any], key: str) -> list[Any]:
    """In `dev`, what phase1 made in this same graph under `key`; in a phase2 stack, nothing."""
    return [inputs[key]] if key in inputs else []


def _gitlab_host(inputs: Mapping[str, Any]) -> str:
    return f"gitlab.{inputs[outputs.DOMAIN]}"


def _cluster_access(inputs: Mapping[str, Any], owner: str) -> pulumi.ResourceOptions:
    """The lease on the cluster and the one Kubernetes provider: the options of everything on the cluster."""
    # While phase2 has anything on the cluster, the cluster's delete refuses to run (a destroy of
    # phase1, or a change that replaces the cluster, would orphan it). Everything on the cluster
    # comes after the lease, through the provider; in `dev` the lease goes before the cluster.
    lease = cluster_lease(
        "cluster-lease",
        data_dir=str(inputs[outputs.DATA_DIR]),
        user=owner,
        opts=pulumi.ResourceOptions(depends_on=[*_in_graph(inputs, outputs.DATA_FOLDER_CLAIM), *_in_graph(inputs, outputs.CLUSTER)]),
    )
    # Explicit, never ambient. Keyed on the cluster's identity, so that only a replaced cluster
    # replaces it (and every resource on it), not a kubeconfig a preview does not know yet. A
    # destroy with the cluster gone is `blueprint destroy`'s business: it tells Pulumi to forget
    # what lived in the cluster, never a blanket PULUMI_K8S_DELETE_UNREACHABLE.
    # Its kubeconfig is root on the cluster, so no stack exports it: in `dev` it is the cluster
    # command's, in this same graph; a phase2 stack asks kind (or kubectl, for an existing cluster) on each run.
    kubeconfig, existing = cluster_kubeconfig(inputs)
    provider = k8s.Provider(
        "kubernetes",
        kubeconfig=kubeconfig,
        cluster_identifier=str(inputs[outputs.CLUSTER_ID]),
        **existing,
        opts=pulumi.ResourceOptions(depends_on=[lease]),
    )
    # On a cluster others use too, every namespace says it is blueprint's, which phase1 checks (`namespaces`).
    owned = [owned_namespaces(this_checkout())] if outputs.on_existing(inputs) else None
    return pulumi.ResourceOptions(providers=[provider], transformations=owned)


def _storage(inputs: Mapping[str, Any], folders: Folders, on_cluster: pulumi.ResourceOptions) -> Storage:
    return Storage(
        "storage",
        StorageArgs(
            host_path=folders.host,
            volumes_host_path=folders.volumes_host,
            volumes_node_path=folders.volumes_node,
            owner=folder_owner(),
            # phase1's, which phase2 reads its data folder from; in `dev`, dev's own.
            data_folder_owner=folder_owner(outputs.UPSTREAM_STACK.get(pulumi.get_stack(), pulumi.get_stack())),
            preserve=bool(inputs[outputs.PRESERVE_DATA]),
            wipe_image=versions.KIND_NODE_IMAGE,
            engine=engine_of(inputs),
            layout=layout(pulumi.get_stack()),
            volumes=VOLUMES,
            stack_file=preserve_data_file(pulumi.get_stack()),
            inside=tuple(_in_graph(inputs, outputs.DATA_FOLDER_CLAIM)),
            provisioned=Provisioned.of(inputs.get(outputs.STORAGE_CLASS), bool(inputs[outputs.PRESERVE_DATA])),
        ),
        opts=on_cluster,
    )


def _tls(ground: Ground, gateway_crds: GatewayCrds) -> Tls:
    return Tls(
        "tls",
        TlsArgs(
            domain=str(ground.inputs[outputs.DOMAIN]),
            namespace=ground.namespace,
            ca_file=f"{ground.folders.host}/ca.crt",
            ca_folder=ground.storage.folder,
            ca_key_file=f"{ground.folders.secrets}/{tls_component.CA_KEY_FILE}",
            brought=outputs.brought(ground.inputs),
            gateway_api=(gateway_crds.chart,),
        ),
        opts=ground.on_cluster,
    )


def _data_tier(ground: Ground) -> DataTier:
    inputs, folders, storage, on_cluster = ground.inputs, ground.folders, ground.storage, ground.on_cluster
    provisioned, pv = storage.provisioned, storage.volumes.get  # provisioned: an existing cluster's (no PV, no host path)
    postgres = Postgres(
        "postgres",
        PostgresArgs(
            volume=POSTGRES_VOLUME,
            volume_resource=pv(POSTGRES_VOLUME.key),
            data_host_path="" if provisioned else f"{folders.volumes_host}/{POSTGRES_VOLUME.folder}",
            kind_cluster_name=inputs[outputs.CLUSTER_NAME],
            engine=engine_of(inputs),
            provisioned=provisioned,
            kube_context=str(inputs.get(outputs.KUBE_CONTEXT, "")),
        ),
        opts=on_cluster,
    )
    redis = Redis("redis", RedisArgs(volume=REDIS_VOLUME, volume_resource=pv(REDIS_VOLUME.key), provisioned=provisioned), opts=on_cluster)
    minio = Minio(
        "minio",
        MinioArgs(
            volume=MINIO_VOLUME,
            volume_resource=pv(MINIO_VOLUME.key),
            secrets_path=folders.secrets,
            secrets_folder=storage.folder,
            provisioned=provisioned,
        ),
        opts=on_cluster,
    )
    return DataTier(postgres=postgres, redis=redis, minio=minio)


def _openbao(ground: Ground, postgres: Postgres, tls: Tls) -> OpenBao:
    inputs, folders = ground.inputs, ground.folders
    namespace = OpenBaoArgs.namespace
    return OpenBao(
        "openbao",
        OpenBaoArgs(
            node_port=None if outputs.on_existing(inputs) else int(inputs[outputs.OPENBAO_NODE_PORT]),
            host_address=exposure.openbao_host_address(inputs, namespace),
            forward=exposure.openbao_forward(inputs, namespace),
            kube_context=exposure.kube_context(inputs),
            server_name=tls_component.openbao_server_name(str(inputs[outputs.DOMAIN])),
            tls_cert_pem=tls.openbao_cert_pem,
            tls_key_pem=tls.openbao_key_pem,
            ca_cert_pem=tls.ca_cert_pem,
            ca_file=tls.ca_file,
            postgres_host=postgres.host,
            database=pg.OPENBAO_DATABASE,
            role=pg.OPENBAO_ROLE,
            password=postgres.openbao_password,
            database_ready=postgres.openbao_database,
            postgres_namespace=POSTGRES_VOLUME.namespace,
            postgres_pod=f"{pg.CLUSTER}-1",
            secrets_path=folders.secrets,
            secrets_folder=ground.storage.folder,
            kind_cluster_name=inputs[outputs.CLUSTER_NAME],
            engine=engine_of(inputs),
        ),
        opts=ground.on_cluster,
    )


def _gitlab(ground: Ground, gateway_crds: GatewayCrds, tls: Tls, data: DataTier) -> GitLab:
    inputs, storage = ground.inputs, ground.storage
    return GitLab(
        "gitlab",
        GitLabArgs(
            namespace=ground.namespace,
            domain=str(inputs[outputs.DOMAIN]),
            ssh_port=exposure.ssh_port(inputs),
            node_ports=exposure.gateway_node_ports(inputs),
            service_type=exposure.gateway_service_type(inputs),
            service_fields=exposure.gateway_service(inputs),
            node_selector=exposure.gitlab_nodes(inputs),
            postgres_host=data.postgres.host,
            postgres_database=pg.GITLAB_DATABASE,
            postgres_user=pg.GITLAB_ROLE,
            postgres_password=data.postgres.gitlab_password,
            redis_host=data.redis.host,
            redis_password=data.redis.password,
            s3_endpoint=data.minio.endpoint,
            s3_access_key=data.minio.credentials_for(mn.GITLAB).access_key,
            s3_secret_key=data.minio.credentials_for(mn.GITLAB).secret_key,
            ca_secret=tls_component.CA_SECRET,
            certificate=brought_certificate.ref if (brought_certificate := outputs.brought(inputs)) else None,
            gitaly_volume=GITALY_VOLUME,
            gitaly_provisioned=storage.provisioned,
            apps_namespace=APPS_NAMESPACE,
            headlamp_namespace=HeadlampArgs().namespace if inputs[outputs.HEADLAMP] else None,
            secrets_path=ground.folders.secrets,
            secrets_folder=storage.folder,
            depends_on=(
                gateway_crds.chart,
                data.postgres.gitlab_database,
                data.redis.release,
                data.minio.buckets,
                *tls.secrets,
                *storage.pv(GITALY_VOLUME),
            ),
        ),
        opts=ground.on_cluster,
    )


def _admin(ground: Ground, tls: Tls, gitlab: GitLab) -> Admin:
    """GitLab's admin token, from its file, checked at GitLab's URL; then the platform's group."""
    inputs = ground.inputs
    gitlab_url = f"https://{_gitlab_host(inputs)}"
    # Lives with the data, like the rails secrets: after a preserveData cycle GitLab's database
    # still holds this token, and what users scripted against it keeps working. The file keeps it
    # without GitLab's prefix, which `outputs.admin_token` adds (for every reader of the file too).
    token_file = f"{ground.folders.secrets}/gitlab-admin-token"
    token_value = HostSecret(
        "gitlab-admin-token-value",
        HostSecretArgs(path=token_file),
        opts=pulumi.ResourceOptions(depends_on=[ground.storage.folder]),
    ).value.apply(outputs.admin_token)
    token = GitLabToken(
        "gitlab-admin-token",
        GitLabTokenArgs(
            gitlab_url=gitlab_url,
            ca_file=tls.gateway_ca_file,
            token=token_value,
            kind_cluster_name=inputs[outputs.CLUSTER_NAME],
            engine=engine_of(inputs),
            namespace=ground.namespace,
            toolbox=gl.TOOLBOX,
            forward=exposure.gitlab_forward(inputs),
            kube_context=exposure.kube_context(inputs),
        ),
        # It checks the token at GitLab's URL, through the Gateway: that must be Programmed first.
        opts=pulumi.ResourceOptions(depends_on=[gitlab.release, gitlab.gateway_programmed]),
    )
    # The platform's group, before its runners: they serve its projects and no other, and phase3
    # puts the apps' projects in it. The seeded token: making it waits for the seeding.
    group = Group(
        "apps-group",
        GroupArgs(
            connection=Connection(gitlab_url, token.token, tls.gateway_ca_file, exposure.gitlab_forward(inputs)),
            path=APPS_GROUP,
            name=APPS_GROUP,
            owner=ground.owner,
            description="Apps that blueprint builds and deploys.",
        ),
        opts=pulumi.ResourceOptions(retain_on_delete=bool(inputs[outputs.PRESERVE_DATA])),
    )
    glab_file, glab_value = _glab_token(ground, tls, gitlab_url, after=token)
    return Admin(
        token_file=token_file, token_value=token_value, token=token, glab_token_file=glab_file, glab_token_value=glab_value, group=group
    )


def _glab_token(ground: Ground, tls: Tls, gitlab_url: str, *, after: GitLabToken) -> tuple[str, pulumi.Output[str]]:
    """The token glab logs in with (GlabToken): made by GitLab with the admin token, written whole to a
    file beside the admin token's; the file, and the value.
    """
    token_file = f"{ground.folders.secrets}/gitlab-glab-token"
    glab = GlabToken(
        "gitlab-glab-token",
        GlabTokenArgs(
            connection=Connection(gitlab_url, after.token, tls.gateway_ca_file, exposure.gitlab_forward(ground.inputs)), path=token_file
        ),
        opts=pulumi.ResourceOptions(depends_on=[ground.storage.folder]),
    )
    return token_file, glab.value


def _runners(ground: Ground, tls: Tls, minio: Minio, admin: Admin, host_aliases: HostAliases | None) -> tuple[Runner, Runner]:
    """The group's two runners: the default one, confined, and the one for image builds alone."""
    inputs = ground.inputs
    gitlab_host = _gitlab_host(inputs)
    runner, image_build_runner = (
        Runner(
            "image-build-runner" if image_builds else "runner",
            RunnerArgs(
                image_builds=image_builds,
                gitlab_url=f"https://{gitlab_host}",
                gitlab_host=gitlab_host,
                # The seeded token: registering the runner waits for the seeding.
                token=admin.token.token,
                ca_file=tls.gateway_ca_file,
                ca_pem=tls.gateway_ca_pem,
                group_id=admin.group.id,
                owner=ground.owner,
                preserve_data=bool(inputs[outputs.PRESERVE_DATA]),
                node_selector=exposure.job_nodes(inputs),
                api_server=exposure.api_server(inputs),
                gitlab_forward=exposure.gitlab_forward(inputs),
                host_aliases=host_aliases,
                s3_host=minio.host_port,
                s3_access_key=minio.credentials_for(mn.RUNNER_CACHE).access_key,
                s3_secret_key=minio.credentials_for(mn.RUNNER_CACHE).secret_key,
                concurrent=2 if image_builds else 4,
                docker_hub_mirror=str(dict(inputs[outputs.IMAGE_MIRRORS]).get("docker.io", "")),
                gitlab_peer=Peer(namespace=GITALY_VOLUME.namespace, labels=ENVOY_LABELS, ports=(ENVOY_HTTPS_PORT,)),
                minio_peer=Peer(namespace=MINIO_VOLUME.namespace, labels=mn.SERVER_LABELS, ports=(mn.API_PORT,)),
            ),
            opts=ground.on_cluster,
        )
        for image_builds in (False, True)
    )
    return runner, image_build_runner


def _headlamp_route(ground: Ground, gitlab: GitLab) -> None:
    inputs = ground.inputs
    if inputs[outputs.HEADLAMP]:
        # Headlamp at https://headlamp.<domain>, like every other UI: after its listener (the gate
        # comes after every writer of the Gateway), and in `dev` after Headlamp itself.
        HeadlampRoute(
            "headlamp-route",
            HeadlampRouteArgs(
                host=f"{HEADLAMP_HOST}.{inputs[outputs.DOMAIN]}",
                gateway=gl.GATEWAY,
                gateway_namespace=ground.namespace,
                listener=gw.HEADLAMP_LISTENER,
                depends_on=(gitlab.gateway_programmed, *_in_graph(inputs, outputs.HEADLAMP_DASHBOARD)),
            ),
            opts=ground.on_cluster,
        )


def _mirror_credentials(inputs: Mapping[str, Any], platform: Platform) -> None:
    """Every credential phase2 generates, mirrored into OpenBao from the catalogue (credentials.py),
    each write after OpenBao's initialisation and its own source only; the three that open OpenBao
    itself stay in their files alone.
    """
    postgres, redis, minio = platform.data.postgres, platform.data.redis, platform.data.minio
    tls, gitlab, openbao, ci_access = platform.tls, platform.gitlab, platform.openbao, platform.ci_access
    runner, image_build_runner = platform.runners
    mirror(
        credentials.PLATFORM,
        {
            "postgres-gitlab-password": postgres.gitlab_password,
            "postgres-openbao-password": postgres.openbao_password,
            "redis-password": redis.password,
            "minio-root-user": minio.root_user,
            "minio-root-password": minio.root_password,
            "minio-gitlab-secret-key": minio.credentials_for(mn.GITLAB).secret_key,
            "minio-runner-cache-secret-key": minio.credentials_for(mn.RUNNER_CACHE).secret_key,
            "gitlab-root-password": gitlab.root_password,
            "gitlab-admin-token": platform.admin.token_value,
            "gitlab-glab-token": platform.admin.glab_token_value,
            "gitlab-rails-secrets": gitlab.rails_secrets,
            "gitlab-ssh-host-keys": gitlab.ssh_host_keys,
            "platform-ca-key": tls.ca_key_pem,
            "gateway-tls-key": tls.wildcard_key_pem,
            "openbao-tls-key": tls.openbao_key_pem,
            "runner-token": runner.token,
            "image-build-runner-token": image_build_runner.token,
            "ci-deploy-kubeconfig": ci_access.kubeconfig,
        },
        context={
            "postgres/gitlab": {"username": pg.GITLAB_ROLE, "host": postgres.host},
            "postgres/openbao": {"username": pg.OPENBAO_ROLE, "host": postgres.host},
            "redis": {"host": redis.host},
            "minio/root": {"endpoint": minio.endpoint},
            **{
                f"minio/{consumer}": {"accessKey": user.access_key, "endpoint": minio.endpoint}
                for consumer, user in minio.credentials.items()
            },
            "gitlab/root": {"username": "root", "url": f"https://{_gitlab_host(inputs)}"},
            "tls/ca": {"certificate": tls.ca_cert_pem},
            "ci/deploy-kubeconfig": {"token": ci_access.kubeconfig.apply(kubeconfig_token)},
        },
        address=openbao.address,
        ca_file=openbao.ca_file,
        server_name=openbao.server_name,
        username=openbao.writer_username,
        password=openbao.writer_password,
        depends_on=[openbao.init],
        forward=exposure.openbao_forward(inputs, OpenBaoArgs.namespace),
    )


def _outputs(inputs: Mapping[str, Any], platform: Platform, owner: str) -> dict[str, Any]:
    tls, openbao, gitlab, admin, ci_access = platform.tls, platform.openbao, platform.gitlab, platform.admin, platform.ci_access
    runner, image_build_runner = platform.runners
    return {
        # phase3's group and projects live in GitLab's database: they follow the same flag.
        outputs.PRESERVE_DATA: bool(inputs[outputs.PRESERVE_DATA]),
        outputs.CA_CERT_PEM: tls.ca_cert_pem,
        outputs.CA_CERT_FILE: tls.ca_file,
        outputs.OPENBAO_ADDR: openbao.address,
        outputs.OPENBAO_SERVER_NAME: openbao.server_name,
        outputs.OPENBAO_CLUSTER_ADDR: openbao.cluster_address,
        # Where the admin's password is, never the password: no output is a root credential.
        outputs.OPENBAO_ADMIN_PASSWORD_FILE: openbao.admin_password_file,
        outputs.OPENBAO_WRITER_PASSWORD_FILE: openbao.writer_password_file,
        # In `dev` only, never exported: what phase3's KV writes log in with, and wait for.
        outputs.OPENBAO_WRITER_PASSWORD: openbao.writer_password,
        outputs.OPENBAO_INIT: openbao.init,
        outputs.POSTGRES_HOST: platform.data.postgres.host,
        outputs.REDIS_HOST: platform.data.redis.host,
        outputs.MINIO_ENDPOINT: platform.data.minio.endpoint,
        # Plain strings, not the component's Outputs: phase3 derives names from them in `dev` too.
        outputs.GITLAB_URL: f"https://{_gitlab_host(inputs)}",
        outputs.REGISTRY_HOST: f"registry.{inputs[outputs.DOMAIN]}",
        # Where root's token and password are, never what they are: no output is a root credential.
        # phase3 and the `blueprint` commands read the token from its file.
        outputs.ADMIN_TOKEN_FILE: admin.token_file,
        outputs.GLAB_TOKEN_FILE: admin.glab_token_file,
        outputs.GITLAB_ROOT_PASSWORD_FILE: gitlab.root_password_file,
        # In `dev` only, never exported: the seeded token, so that what phase3 does through GitLab's
        # API waits for the seeding.
        outputs.SEEDED_ADMIN_TOKEN: pulumi.Output.secret(admin.token.token),
        outputs.APPS_NAMESPACE: ci_access.namespace,
        outputs.DEPLOY_KUBECONFIG: ci_access.kubeconfig,
        # The default runner's id, once both runners are up: a smoke pipeline needs both.
        outputs.RUNNER_ID: pulumi.Output.all(runner.runner_id, image_build_runner.runner_id).apply(lambda ids: str(ids[0])),
        outputs.APPS_GROUP_ID: admin.group.id,
        outputs.APPS_GROUP_PATH: APPS_GROUP,
        outputs.APPS_GROUP_OWNER: owner,
        **exposure.forwards(inputs, OpenBaoArgs.namespace),
        **({outputs.GATEWAY_CA_FILE: tls.gateway_ca_file} if outputs.brought(inputs) else {}),
    }
