"""phase1: the kind cluster, its data folder and, optionally, Headlamp."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi

from components import kind_cluster
from components.kind_cluster import KindCluster, KindClusterArgs
from stacks import outputs
from stacks.config import Phase1Config, load_phase1


def cluster_args(config: Phase1Config, *, owner: str) -> KindClusterArgs:
    """The kind cluster phase1's config describes (the CLI derives the cluster's identity from it)."""
    return KindClusterArgs(
        cluster_name=config.cluster_name,
        gitlab_nodes=config.gitlab_nodes,
        runner_nodes=config.runner_nodes,
        data_dir=config.data_dir,
        preserve_data=config.preserve_data,
        http_port=config.ports.http,
        https_port=config.ports.https,
        ssh_port=config.ports.ssh,
        openbao_port=config.ports.openbao,
        api_server_port=config.ports.api_server,
        owner=owner,
    )


def deploy(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Build phase1 from the stack's config; phase1 has no upstream, so `inputs` is empty."""
    config = load_phase1()
    cluster = KindCluster("kind", cluster_args(config, owner=f"{pulumi.get_project()}/{pulumi.get_stack()}"))
    if config.headlamp:
        # Imported here: pulumi_kubernetes' helm module is costly to load, and only Headlamp needs it.
        import pulumi_kubernetes as k8s

        from components.headlamp import Headlamp, HeadlampArgs

        provider = k8s.Provider("kind-kubernetes", kubeconfig=cluster.kubeconfig, cluster_identifier=cluster.cluster_id)
        # Not `deleted_with` the cluster: when the cluster's delete refuses (phase2 still on it), the
        # engine would already have dropped the release from state, and the next `up` could not
        # install it again over the one still in the cluster. Helm uninstalls it first, quickly.
        Headlamp("headlamp", HeadlampArgs(), opts=pulumi.ResourceOptions(providers=[provider]))
    return {
        outputs.KUBECONFIG: cluster.kubeconfig,
        outputs.CLUSTER_NAME: config.cluster_name,
        outputs.CLUSTER_ID: cluster.cluster_id,
        outputs.DATA_DIR: str(config.data_dir),
        outputs.NODE_DATA_PATH: kind_cluster.NODE_DATA_PATH,
        outputs.REGISTRY_HOSTS_DIR: str(config.data_dir / kind_cluster.REGISTRY_HOSTS_SUBDIR),
        outputs.PRESERVE_DATA: config.preserve_data,
        outputs.DOMAIN: config.domain,
        outputs.HTTP_PORT: config.ports.http,
        outputs.HTTPS_PORT: config.ports.https,
        outputs.SSH_PORT: config.ports.ssh,
        outputs.OPENBAO_PORT: config.ports.openbao,
        outputs.API_SERVER_PORT: config.ports.api_server,
        outputs.GATEWAY_HTTP_NODE_PORT: kind_cluster.NODE_PORTS.gateway_http,
        outputs.GATEWAY_HTTPS_NODE_PORT: kind_cluster.NODE_PORTS.gateway_https,
        outputs.GATEWAY_SSH_NODE_PORT: kind_cluster.NODE_PORTS.gateway_ssh,
        outputs.OPENBAO_NODE_PORT: kind_cluster.NODE_PORTS.openbao,
        outputs.NODE_LABEL_KEY: kind_cluster.NODE_LABEL_KEY,
        outputs.GITLAB_NODE_LABEL: kind_cluster.GITLAB_NODE_LABEL,
        outputs.RUNNER_NODE_LABEL: kind_cluster.RUNNER_NODE_LABEL,
        outputs.DATA_FOLDER_CLAIM: cluster.data_folder,
        outputs.CLUSTER: cluster.cluster,
    }
