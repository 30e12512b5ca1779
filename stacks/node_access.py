"""What kind's nodes need of the platform (phase2): GitLab's images ahead of time, and its names
resolved to the Gateway, for pods by cluster DNS and for containerd by the registry's hosts folder.
None of it on an existing cluster, whose DNS, nodes and registry access are its own: `*.<domain>`
is the DNS record the end of `up` names (cli/report.py), and its CoreDNS is not blueprint's to edit.
There the Runners' pods get the names as host aliases instead (`runner_host_aliases`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

import versions
from apps_manifest import host_names, load_manifest
from components import gitlab_gateway as gw
from components import kind_cluster
from components.cluster_dns import ClusterDns, ClusterDnsArgs
from components.image_prepull import ImagePrepull, ImagePrepullArgs
from components.node_registry import NodeRegistry, NodeRegistryArgs
from components.runner import HostAliases
from stacks import exposure, outputs, runtime


def node_access(
    inputs: Mapping[str, Any], *, namespace: pulumi.Input[str], ca_pem: pulumi.Input[str], on_cluster: pulumi.ResourceOptions
) -> None:
    """The prepull (with an image cache), the CoreDNS names and the nodes' registry access of a kind
    cluster (phase1's outputs `inputs`), in GitLab's `namespace`, trusting the CA of `ca_pem`.
    """
    if outputs.on_existing(inputs):
        return
    domain = str(inputs[outputs.DOMAIN])
    envoy = f"{gw.ENVOY_SERVICE}.{exposure.GITLAB_NAMESPACE}.svc.cluster.local"
    if inputs[outputs.IMAGE_MIRRORS]:
        # GitLab's images onto its nodes while the data tier comes up; nothing waits for it.
        ImagePrepull(
            "gitlab-image-prepull",
            ImagePrepullArgs(
                namespace=namespace,
                node_selector=exposure.gitlab_nodes(inputs),
                images=versions.GITLAB_CHART_IMAGES,
                mirrors_joined=tuple(inputs[key] for key in [outputs.IMAGE_CACHE_JOINED] if key in inputs),
            ),
            opts=on_cluster,
        )
    # Pods reach the apps by name too (a pipeline's verify job calls https://<app>.<domain>).
    ClusterDns("cluster-dns", ClusterDnsArgs(names=host_names(domain, load_manifest(files=False)), target=envoy), opts=on_cluster)
    NodeRegistry(
        "node-registry",
        NodeRegistryArgs(
            registry_host=f"registry.{domain}",
            names=host_names(domain, []),
            target=envoy,
            hosts_dir_host=str(inputs[outputs.REGISTRY_HOSTS_DIR]),
            hosts_dir_node=f"{inputs[outputs.NODE_DATA_PATH]}/{kind_cluster.REGISTRY_HOSTS_SUBDIR}",
            ca_pem=ca_pem,
            # In `dev`, after the data folder's claim in the same graph.
            hosts_dir_claim=tuple(inputs[key] for key in [outputs.DATA_FOLDER_CLAIM] if key in inputs),
        ),
        opts=on_cluster,
    )


def runner_host_aliases(
    inputs: Mapping[str, Any], *, gateway_programmed: pulumi.CustomResource, on_cluster: pulumi.ResourceOptions
) -> HostAliases | None:
    """On an existing cluster, the platform's names (the apps' too: a pipeline's verify job calls
    https://<app>.<domain>) at the ClusterIP of Envoy's Service, for the Runners' pods: in-cluster,
    whatever the load balancer and public DNS. None on kind (its CoreDNS has them) and in a destroy,
    which needs no values and must not fail on a Service already gone.
    """
    if not outputs.on_existing(inputs) or runtime.current().destroying:
        return None
    # Envoy Gateway makes the Service: read once the Gateway is Programmed. The id comes from the
    # gate, so a preview that makes the gate reads nothing (an unknown id: the engine's ReadStep skips it).
    service = k8s.core.v1.Service.get(
        "gitlab-envoy-service",
        gateway_programmed.id.apply(lambda _: f"{exposure.GITLAB_NAMESPACE}/{gw.ENVOY_SERVICE}"),
        opts=on_cluster,
    )
    domain = str(inputs[outputs.DOMAIN])
    return HostAliases(address=service.spec.cluster_ip, names=host_names(domain, load_manifest(files=False)))
