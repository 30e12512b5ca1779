"""phase2, part 1: the data and secrets half of the platform, on the phase1 cluster.

Gateway API CRDs, stable storage, Postgres, Redis, MinIO, OpenBao (initialised, unsealed, holding
every generated credential) and TLS. What does not need Postgres (TLS, Redis, MinIO, the CRDs)
starts beside it; OpenBao waits for its database, and the KV writes for OpenBao.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

import versions
from components import postgres as pg
from components.gateway_crds import GatewayCrds, GatewayCrdsArgs
from components.minio import Minio, MinioArgs
from components.openbao import OpenBao, OpenBaoArgs
from components.postgres import Postgres, PostgresArgs
from components.redis import Redis, RedisArgs
from components.storage import PLATFORM_SUBDIR, Storage, StorageArgs, Volume
from components.tls import Tls, TlsArgs
from providers.openbao_kv import OpenBaoKv, OpenBaoKvArgs
from stacks import outputs
from stacks.config import load_phase2

POSTGRES_VOLUME = Volume(namespace="postgres", claim=f"{pg.CLUSTER}-1", size="10Gi")
REDIS_VOLUME = Volume(namespace="redis", claim="valkey-data", size="2Gi")
MINIO_VOLUME = Volume(namespace="minio", claim="minio-data", size="20Gi")
GITALY_VOLUME = Volume(namespace="gitlab", claim="repo-data-gitlab-gitaly-0", size="20Gi")
"""Gitaly's StatefulSet claim (release `gitlab`), bound here ahead of GitLab itself."""
VOLUMES = (POSTGRES_VOLUME, REDIS_VOLUME, MINIO_VOLUME, GITALY_VOLUME)


def deploy(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Build phase2 on the cluster phase1 describes (`inputs`: phase1's outputs, plain values but
    the kubeconfig, which stays a secret Output).
    """
    config = load_phase2()
    owner = f"{pulumi.get_project()}/{pulumi.get_stack()}"
    host_folder = f"{inputs[outputs.DATA_DIR]}/{PLATFORM_SUBDIR}"
    node_folder = f"{inputs[outputs.NODE_DATA_PATH]}/{PLATFORM_SUBDIR}"
    secrets_folder = f"{host_folder}/secrets"

    # Explicit, never ambient. delete_unreachable: phase2 can still be destroyed once the cluster is gone.
    provider = k8s.Provider("kubernetes", kubeconfig=inputs[outputs.KUBECONFIG], delete_unreachable=True)
    on_cluster = pulumi.ResourceOptions(providers=[provider])

    storage = Storage(
        "storage",
        StorageArgs(
            host_path=host_folder,
            node_path=node_folder,
            owner=owner,
            preserve=bool(inputs[outputs.PRESERVE_DATA]),
            wipe_image=versions.KIND_NODE_IMAGE,
            volumes=VOLUMES,
        ),
        opts=on_cluster,
    )
    GatewayCrds("gateway-crds", GatewayCrdsArgs(), opts=on_cluster)

    gitlab_namespace = k8s.core.v1.Namespace("gitlab-namespace", metadata={"name": GITALY_VOLUME.namespace}, opts=on_cluster)
    tls = Tls(
        "tls",
        TlsArgs(
            domain=str(inputs[outputs.DOMAIN]),
            namespace=gitlab_namespace.metadata.name,
            ca_file=f"{host_folder}/ca.crt",
            ca_folder=storage.folder,
        ),
        opts=on_cluster,
    )
    postgres = Postgres(
        "postgres",
        PostgresArgs(
            volume=POSTGRES_VOLUME,
            volume_resource=storage.volumes[POSTGRES_VOLUME.key],
            data_host_path=f"{host_folder}/{POSTGRES_VOLUME.folder}",
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
            keys_file=f"{secrets_folder}/openbao-init.json",
            keys_folder=storage.folder,
            key_shares=config.openbao_key_shares,
            key_threshold=config.openbao_key_threshold,
        ),
        opts=on_cluster,
    )

    credentials: dict[str, dict[str, pulumi.Input[str]]] = {
        "postgres/gitlab": {"username": pg.GITLAB_ROLE, "password": postgres.gitlab_password, "host": postgres.host},
        "postgres/openbao": {"username": pg.OPENBAO_ROLE, "password": postgres.openbao_password, "host": postgres.host},
        "redis": {"password": redis.password, "host": redis.host},
        "minio": {"accessKey": minio.access_key, "secretKey": minio.secret_key, "endpoint": minio.endpoint},
    }
    for path, data in credentials.items():
        OpenBaoKv(
            f"openbao-kv-{path.replace('/', '-')}",
            OpenBaoKvArgs(address=openbao.address, token=openbao.root_token, path=path, data=data),
            opts=pulumi.ResourceOptions(depends_on=[openbao.init]),
        )

    return {
        outputs.CA_CERT_PEM: tls.ca_cert_pem,
        outputs.CA_CERT_FILE: tls.ca_file,
        outputs.OPENBAO_ADDR: openbao.address,
        outputs.OPENBAO_CLUSTER_ADDR: openbao.cluster_address,
        outputs.OPENBAO_ROOT_TOKEN: openbao.root_token,
        outputs.POSTGRES_HOST: postgres.host,
        outputs.REDIS_HOST: redis.host,
        outputs.MINIO_ENDPOINT: minio.endpoint,
    }
