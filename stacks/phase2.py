"""phase2: the platform on the phase1 cluster.

Gateway API CRDs, stable storage, Postgres, Redis, MinIO, OpenBao (self-initialised, unsealed by
its static key, holding every generated credential), TLS, then GitLab, its admin token, the
platform's group and its two Runners. The slowest chain is Postgres -> GitLab -> token -> group ->
runners; everything else starts beside it: TLS, Redis, MinIO and the CRDs beside Postgres, OpenBao
beside GitLab, cluster DNS and node registry access at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

import credentials
import versions
from apps_manifest import HEADLAMP_HOST, host_names, load_manifest
from components import gitlab as gl
from components import kind_cluster
from components import minio as mn
from components import postgres as pg
from components import tls as tls_component
from components.ci_access import CiAccess, CiAccessArgs
from components.cluster_dns import ClusterDns, ClusterDnsArgs
from components.gateway_crds import GatewayCrds, GatewayCrdsArgs
from components.gitlab import GitLab, GitLabArgs
from components.gitlab_projects import GROUP as APPS_GROUP
from components.headlamp import HeadlampArgs
from components.headlamp_route import HeadlampRoute, HeadlampRouteArgs
from components.image_prepull import ImagePrepull, ImagePrepullArgs
from components.kind_cluster import cluster_lease
from components.minio import Minio, MinioArgs
from components.node_registry import NodeRegistry, NodeRegistryArgs
from components.openbao import OpenBao, OpenBaoArgs
from components.pod_security import pod_security_labels
from components.postgres import Postgres, PostgresArgs
from components.redis import VALKEY_USER, Redis, RedisArgs
from components.runner import Runner, RunnerArgs
from components.storage import PLATFORM_SUBDIR, Storage, StorageArgs, Volume
from components.tls import Tls, TlsArgs
from providers.deploy_kubeconfig import kubeconfig_token
from providers.gitlab_api import Connection
from providers.gitlab_group import Group, GroupArgs
from providers.gitlab_token import GitLabToken, GitLabTokenArgs
from providers.host_secret import HostSecret, HostSecretArgs
from stacks import outputs
from stacks.config import folder_owner
from stacks.mirror import mirror
from stacks.phase1 import kind_kubeconfig

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


def deploy(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Build phase2 on the cluster phase1 describes (`inputs`: phase1's outputs, plain values; in
    `dev`, also what phase1 hands on in the graph only: `outputs.IN_STACK_ONLY`).
    """
    # The stack, as the cluster lease and the Runner's description name it; the host folders it
    # claims name this checkout too (`folder_owner`), since another checkout may hold the same stack.
    owner = f"{pulumi.get_project()}/{pulumi.get_stack()}"
    # Two folders: the platform's own (secrets, the CA; no node mounts it) and its volumes, inside
    # the data folder's `volumes`, which every node mounts.
    host_folder = f"{inputs[outputs.DATA_DIR]}/{PLATFORM_SUBDIR}"
    volumes_host_folder = f"{inputs[outputs.DATA_DIR]}/{kind_cluster.VOLUMES_SUBDIR}/{PLATFORM_SUBDIR}"
    volumes_node_folder = f"{inputs[outputs.VOLUMES_NODE_PATH]}/{PLATFORM_SUBDIR}"
    secrets_folder = f"{host_folder}/secrets"

    # In `dev`, what phase1 made in this same graph: the data folder's claim and the cluster.
    data_claim = [inputs[outputs.DATA_FOLDER_CLAIM]] if outputs.DATA_FOLDER_CLAIM in inputs else []
    cluster = [inputs[outputs.CLUSTER]] if outputs.CLUSTER in inputs else []
    headlamp_dashboard = [inputs[outputs.HEADLAMP_DASHBOARD]] if outputs.HEADLAMP_DASHBOARD in inputs else []

    # While phase2 has anything on the cluster, the cluster's delete refuses to run (a destroy of
    # phase1, or a change that replaces the cluster, would orphan it). Everything on the cluster
    # comes after the lease, through the provider; in `dev` the lease goes before the cluster.
    lease = cluster_lease(
        "cluster-lease",
        data_dir=str(inputs[outputs.DATA_DIR]),
        user=owner,
        opts=pulumi.ResourceOptions(depends_on=[*data_claim, *cluster]),
    )
    # Explicit, never ambient. Keyed on the cluster's identity, so that only a replaced cluster
    # replaces it (and every resource on it), not a kubeconfig a preview does not know yet. A
    # destroy with the cluster gone is `blueprint destroy`'s business: it tells Pulumi to forget
    # what lived in the cluster, never a blanket PULUMI_K8S_DELETE_UNREACHABLE.
    # Its kubeconfig is root on the cluster, so no stack exports it: in `dev` it is the cluster
    # command's, in this same graph; a phase2 stack asks kind for it on each run.
    kubeconfig = inputs[outputs.KUBECONFIG] if outputs.KUBECONFIG in inputs else kind_kubeconfig(str(inputs[outputs.CLUSTER_NAME]))
    provider = k8s.Provider(
        "kubernetes",
        kubeconfig=kubeconfig,
        cluster_identifier=str(inputs[outputs.CLUSTER_ID]),
        opts=pulumi.ResourceOptions(depends_on=[lease]),
    )
    on_cluster = pulumi.ResourceOptions(providers=[provider])

    storage = Storage(
        "storage",
        StorageArgs(
            host_path=host_folder,
            volumes_host_path=volumes_host_folder,
            volumes_node_path=volumes_node_folder,
            owner=folder_owner(),
            # phase1's, which phase2 reads its data folder from; in `dev`, dev's own.
            data_folder_owner=folder_owner(outputs.UPSTREAM_STACK.get(pulumi.get_stack(), pulumi.get_stack())),
            preserve=bool(inputs[outputs.PRESERVE_DATA]),
            wipe_image=versions.KIND_NODE_IMAGE,
            volumes=VOLUMES,
            inside=tuple(data_claim),
        ),
        opts=on_cluster,
    )
    gateway_crds = GatewayCrds("gateway-crds", GatewayCrdsArgs(), opts=on_cluster)

    # baseline: GitLab chart 10.1's containers drop ALL and run as non-root but set no seccomp profile
    # (e.g. charts/gitlab/charts/gitaly/values.yaml containerSecurityContext); nothing needs the host.
    gitlab_namespace = k8s.core.v1.Namespace(
        "gitlab-namespace", metadata={"name": GITALY_VOLUME.namespace, "labels": pod_security_labels("baseline")}, opts=on_cluster
    )
    tls = Tls(
        "tls",
        TlsArgs(
            domain=str(inputs[outputs.DOMAIN]),
            namespace=gitlab_namespace.metadata.name,
            ca_file=f"{host_folder}/ca.crt",
            ca_folder=storage.folder,
            ca_key_file=f"{secrets_folder}/{tls_component.CA_KEY_FILE}",
        ),
        opts=on_cluster,
    )
    postgres = Postgres(
        "postgres",
        PostgresArgs(
            volume=POSTGRES_VOLUME,
            volume_resource=storage.volumes[POSTGRES_VOLUME.key],
            data_host_path=f"{volumes_host_folder}/{POSTGRES_VOLUME.folder}",
            kind_cluster_name=inputs[outputs.CLUSTER_NAME],
        ),
        opts=on_cluster,
    )
    redis = Redis("redis", RedisArgs(volume=REDIS_VOLUME, volume_resource=storage.volumes[REDIS_VOLUME.key]), opts=on_cluster)
    minio = Minio(
        "minio",
        MinioArgs(
            volume=MINIO_VOLUME,
            volume_resource=storage.volumes[MINIO_VOLUME.key],
            secrets_path=secrets_folder,
            secrets_folder=storage.folder,
        ),
        opts=on_cluster,
    )
    openbao = OpenBao(
        "openbao",
        OpenBaoArgs(
            node_port=int(inputs[outputs.OPENBAO_NODE_PORT]),
            host_address=f"http://127.0.0.1:{int(inputs[outputs.OPENBAO_PORT])}",
            postgres_host=postgres.host,
            database=pg.OPENBAO_DATABASE,
            role=pg.OPENBAO_ROLE,
            password=postgres.openbao_password,
            database_ready=postgres.openbao_database,
            postgres_namespace=POSTGRES_VOLUME.namespace,
            postgres_pod=f"{pg.CLUSTER}-1",
            secrets_path=secrets_folder,
            secrets_folder=storage.folder,
            kind_cluster_name=inputs[outputs.CLUSTER_NAME],
        ),
        opts=on_cluster,
    )

    domain = str(inputs[outputs.DOMAIN])
    gitlab_host, registry_host = f"gitlab.{domain}", f"registry.{domain}"
    gitlab_nodes = {str(inputs[outputs.NODE_LABEL_KEY]): str(inputs[outputs.GITLAB_NODE_LABEL])}
    envoy = f"{gl.ENVOY_SERVICE}.{GITALY_VOLUME.namespace}.svc.cluster.local"
    platform_names = host_names(domain, [])
    # Pods reach the apps by name too (a pipeline's verify job calls https://<app>.<domain>).
    if inputs[outputs.IMAGE_MIRRORS]:
        # GitLab's images onto its nodes while the data tier comes up; nothing waits for it.
        ImagePrepull(
            "gitlab-image-prepull",
            ImagePrepullArgs(
                namespace=gitlab_namespace.metadata.name,
                node_selector=gitlab_nodes,
                images=versions.GITLAB_CHART_IMAGES,
                mirrors_joined=tuple(inputs[key] for key in [outputs.IMAGE_CACHE_JOINED] if key in inputs),
            ),
            opts=on_cluster,
        )
    ClusterDns("cluster-dns", ClusterDnsArgs(names=host_names(domain, load_manifest()), target=envoy), opts=on_cluster)
    NodeRegistry(
        "node-registry",
        NodeRegistryArgs(
            registry_host=registry_host,
            names=platform_names,
            target=envoy,
            hosts_dir_host=str(inputs[outputs.REGISTRY_HOSTS_DIR]),
            hosts_dir_node=f"{inputs[outputs.NODE_DATA_PATH]}/{kind_cluster.REGISTRY_HOSTS_SUBDIR}",
            ca_pem=tls.ca_cert_pem,
            hosts_dir_claim=tuple(data_claim),
        ),
        opts=on_cluster,
    )
    gitlab_release = GitLab(
        "gitlab",
        GitLabArgs(
            namespace=gitlab_namespace.metadata.name,
            domain=domain,
            ssh_port=int(inputs[outputs.SSH_PORT]),
            node_ports=(
                int(inputs[outputs.GATEWAY_HTTP_NODE_PORT]),
                int(inputs[outputs.GATEWAY_HTTPS_NODE_PORT]),
                int(inputs[outputs.GATEWAY_SSH_NODE_PORT]),
            ),
            node_selector=gitlab_nodes,
            postgres_host=postgres.host,
            postgres_database=pg.GITLAB_DATABASE,
            postgres_user=pg.GITLAB_ROLE,
            postgres_password=postgres.gitlab_password,
            redis_host=redis.host,
            redis_password=redis.password,
            s3_endpoint=minio.endpoint,
            s3_access_key=minio.credentials_for(mn.GITLAB).access_key,
            s3_secret_key=minio.credentials_for(mn.GITLAB).secret_key,
            ca_secret=tls_component.CA_SECRET,
            gitaly_volume=GITALY_VOLUME,
            apps_namespace=APPS_NAMESPACE,
            headlamp_namespace=HeadlampArgs().namespace if inputs[outputs.HEADLAMP] else None,
            secrets_path=secrets_folder,
            secrets_folder=storage.folder,
            depends_on=(
                gateway_crds.chart,
                postgres.gitlab_database,
                redis.release,
                minio.buckets,
                *tls.secrets,
                storage.volumes[GITALY_VOLUME.key],
            ),
        ),
        opts=on_cluster,
    )

    # Lives with the data, like the rails secrets: after a preserveData cycle GitLab's database
    # still holds this token, and what users scripted against it keeps working. The file keeps it
    # without GitLab's prefix, which `outputs.admin_token` adds (for every reader of the file too).
    admin_token_file = f"{secrets_folder}/gitlab-admin-token"
    admin_token_value = HostSecret(
        "gitlab-admin-token-value",
        HostSecretArgs(path=admin_token_file),
        opts=pulumi.ResourceOptions(depends_on=[storage.folder]),
    ).value.apply(outputs.admin_token)
    admin_token = GitLabToken(
        "gitlab-admin-token",
        GitLabTokenArgs(
            gitlab_url=f"https://{gitlab_host}",
            ca_file=tls.ca_file,
            token=admin_token_value,
            kind_cluster_name=inputs[outputs.CLUSTER_NAME],
            namespace=gitlab_namespace.metadata.name,
            toolbox=gl.TOOLBOX,
        ),
        # It checks the token at GitLab's URL, through the Gateway: that must be Programmed first.
        opts=pulumi.ResourceOptions(depends_on=[gitlab_release.release, gitlab_release.gateway_programmed]),
    )
    # The platform's group, before its runners: they serve its projects and no other, and phase3
    # puts the apps' projects in it. The seeded token: making it waits for the seeding.
    apps_group = Group(
        "apps-group",
        GroupArgs(
            connection=Connection(f"https://{gitlab_host}", admin_token.token, tls.ca_file),
            path=APPS_GROUP,
            name=APPS_GROUP,
            owner=owner,
            description="Apps that blueprint builds and deploys.",
        ),
        opts=pulumi.ResourceOptions(retain_on_delete=bool(inputs[outputs.PRESERVE_DATA])),
    )
    # Two runners of the group: the default one, confined, and the one for image builds alone.
    runner, image_build_runner = (
        Runner(
            "image-build-runner" if image_builds else "runner",
            RunnerArgs(
                image_builds=image_builds,
                gitlab_url=f"https://{gitlab_host}",
                gitlab_host=gitlab_host,
                # The seeded token: registering the runner waits for the seeding.
                token=admin_token.token,
                ca_file=tls.ca_file,
                ca_pem=tls.ca_cert_pem,
                group_id=apps_group.id,
                owner=owner,
                preserve_data=bool(inputs[outputs.PRESERVE_DATA]),
                node_label_key=str(inputs[outputs.NODE_LABEL_KEY]),
                node_label=str(inputs[outputs.RUNNER_NODE_LABEL]),
                s3_host=minio.host_port,
                s3_access_key=minio.credentials_for(mn.RUNNER_CACHE).access_key,
                s3_secret_key=minio.credentials_for(mn.RUNNER_CACHE).secret_key,
                concurrent=2 if image_builds else 4,
                docker_hub_mirror=str(dict(inputs[outputs.IMAGE_MIRRORS]).get("docker.io", "")),
            ),
            opts=on_cluster,
        )
        for image_builds in (False, True)
    )
    if inputs[outputs.HEADLAMP]:
        # Headlamp at https://headlamp.<domain>, like every other UI: after its listener (the gate
        # comes after every writer of the Gateway), and in `dev` after Headlamp itself.
        HeadlampRoute(
            "headlamp-route",
            HeadlampRouteArgs(
                host=f"{HEADLAMP_HOST}.{domain}",
                gateway=gl.GATEWAY,
                gateway_namespace=gitlab_namespace.metadata.name,
                listener=gl.HEADLAMP_LISTENER,
                depends_on=(gitlab_release.gateway_programmed, *headlamp_dashboard),
            ),
            opts=on_cluster,
        )
    ci_access = CiAccess(
        "ci-access", CiAccessArgs(kind_cluster_name=inputs[outputs.CLUSTER_NAME], namespace=APPS_NAMESPACE), opts=on_cluster
    )

    # Every credential phase2 generates, mirrored into OpenBao from the catalogue (credentials.py),
    # each write after OpenBao's initialisation and its own source only; the three that open
    # OpenBao itself stay in their files alone.
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
            "gitlab-root-password": gitlab_release.root_password,
            "gitlab-admin-token": admin_token_value,
            "gitlab-rails-secrets": gitlab_release.rails_secrets,
            "gitlab-ssh-host-keys": gitlab_release.ssh_host_keys,
            "platform-ca-key": tls.ca_key_pem,
            "gateway-tls-key": tls.wildcard_key_pem,
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
            "gitlab/root": {"username": "root", "url": f"https://{gitlab_host}"},
            "tls/ca": {"certificate": tls.ca_cert_pem},
            "ci/deploy-kubeconfig": {"token": ci_access.kubeconfig.apply(kubeconfig_token)},
        },
        address=openbao.address,
        username=openbao.writer_username,
        password=openbao.writer_password,
        depends_on=[openbao.init],
    )

    return {
        # phase3's group and projects live in GitLab's database: they follow the same flag.
        outputs.PRESERVE_DATA: bool(inputs[outputs.PRESERVE_DATA]),
        outputs.CA_CERT_PEM: tls.ca_cert_pem,
        outputs.CA_CERT_FILE: tls.ca_file,
        outputs.OPENBAO_ADDR: openbao.address,
        outputs.OPENBAO_CLUSTER_ADDR: openbao.cluster_address,
        # Where the admin's password is, never the password: no output is a root credential.
        outputs.OPENBAO_ADMIN_PASSWORD_FILE: openbao.admin_password_file,
        outputs.OPENBAO_WRITER_PASSWORD_FILE: openbao.writer_password_file,
        # In `dev` only, never exported: what phase3's KV writes log in with, and wait for.
        outputs.OPENBAO_WRITER_PASSWORD: openbao.writer_password,
        outputs.OPENBAO_INIT: openbao.init,
        outputs.POSTGRES_HOST: postgres.host,
        outputs.REDIS_HOST: redis.host,
        outputs.MINIO_ENDPOINT: minio.endpoint,
        # Plain strings, not the component's Outputs: phase3 derives names from them in `dev` too.
        outputs.GITLAB_URL: f"https://{gitlab_host}",
        outputs.REGISTRY_HOST: registry_host,
        # Where root's token and password are, never what they are: no output is a root credential.
        # phase3 and the `blueprint` commands read the token from its file.
        outputs.ADMIN_TOKEN_FILE: admin_token_file,
        outputs.GITLAB_ROOT_PASSWORD_FILE: gitlab_release.root_password_file,
        # In `dev` only, never exported: the seeded token, so that what phase3 does through GitLab's
        # API waits for the seeding.
        outputs.SEEDED_ADMIN_TOKEN: pulumi.Output.secret(admin_token.token),
        outputs.APPS_NAMESPACE: ci_access.namespace,
        outputs.DEPLOY_KUBECONFIG: ci_access.kubeconfig,
        # The default runner's id, once both runners are up: a smoke pipeline needs both.
        outputs.RUNNER_ID: pulumi.Output.all(runner.runner_id, image_build_runner.runner_id).apply(lambda ids: str(ids[0])),
        outputs.APPS_GROUP_ID: apps_group.id,
        outputs.APPS_GROUP_PATH: APPS_GROUP,
        outputs.APPS_GROUP_OWNER: owner,
    }
