"""GitLab's images pulled through the image cache while the data tier comes up.

GitLab's release is the slowest step of phase2, and waits for Postgres, Redis and MinIO; its images
are gigabytes. This one pod, on a GitLab node, starts pulling them as soon as the cluster answers,
which fills the image cache with them: when GitLab's pods start, their nodes pull from the cache on
this machine, and the node this pod ran on has them already. One pod, not one per GitLab node: the
mirror sends a second request for a layer it is still fetching to the registry itself
(distribution registry/proxy/proxyblobstore.go, `inflight`), so nodes pulling the same images at
the same moment would each download them. One container per image, each sleeping in a static busybox copied into a shared emptyDir
by an init container, since some of those images have no shell of their own (Envoy's are
distroless). Containers, not one init container per image as JupyterHub's image puller has it:
init containers run one after the other, so one reference that cannot be pulled would hold back
every pull after it; a container that cannot be pulled only retries its own. Nothing waits for it: the GitLab release does not
depend on it, and Pulumi does not wait for its pod (`pulumi.com/skipAwait`), so a slow or failed
pull costs GitLab nothing but the head start.

It runs only with the image cache (`components/image_cache.py`), which it is there to fill.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

import versions
from components.storage import as_input

SHARED = "/prepull"
"""Where the static busybox is copied to, in every container."""
SLEEP = [f"{SHARED}/busybox", "sleep", "2147483647"]
"""What each container runs: nothing of its image's own, for as long as the pod lives."""
NOBODY = 65534
CONTAINER_SECURITY = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "runAsNonRoot": True,
    "runAsUser": NOBODY,
    "runAsGroup": NOBODY,
}
"""What Pod Security's `restricted` level asks of a container: the pods run nothing of the images
they pull, so nothing needs more."""


@dataclass(frozen=True, kw_only=True)
class ImagePrepullArgs:
    namespace: pulumi.Input[str]
    node_selector: dict[str, str]
    """The GitLab nodes."""
    images: tuple[str, ...]
    """Exactly the references the chart renders, in the order its pods need them: another reference
    to the same image would be resolved and stored again."""
    mirrors_joined: tuple[pulumi.Resource, ...] = ()
    """The step that connects the nodes to the mirrors' network, when it is in the same graph (`dev`)."""
    busybox_image: str = versions.STATIC_BUSYBOX_IMAGE
    """Whose statically linked /bin/busybox runs in every pulled image."""


def container_name(index: int, image: str) -> str:
    """A container's name: a DNS label that says which image it pulls (`pull-3-gitaly`)."""
    name = image.split("@", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0].lower()
    label = "".join(char if char.isalnum() else "-" for char in name).strip("-")
    return f"pull-{index}-{label}"[:63].rstrip("-")


def prepull_spec(args: ImagePrepullArgs, labels: dict[str, str]) -> dict[str, Any]:
    """The Deployment's spec: one pod that copies busybox, then runs one container per image."""
    shared = {"name": "prepull", "mountPath": SHARED}
    copy = {
        "name": "copy-busybox",
        "image": args.busybox_image,
        "command": ["cp", "/bin/busybox", f"{SHARED}/busybox"],
        "volumeMounts": [shared],
        "securityContext": CONTAINER_SECURITY,
    }
    pulls = [
        {
            "name": container_name(index, image),
            "image": image,
            "imagePullPolicy": "IfNotPresent",
            "command": SLEEP,
            "volumeMounts": [shared],
            "securityContext": CONTAINER_SECURITY,
        }
        for index, image in enumerate(args.images, start=1)
    ]
    return {
        "replicas": 1,
        "selector": {"matchLabels": labels},
        "template": {
            "metadata": {"labels": labels},
            "spec": {
                "nodeSelector": args.node_selector,
                # No resources: a sleeping busybox needs none to speak of, and a BestEffort pod asks
                # the scheduler for nothing and is the first to go if a node runs short.
                "automountServiceAccountToken": False,
                "terminationGracePeriodSeconds": 0,
                "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                "initContainers": [copy],
                "containers": pulls,
                "volumes": [{"name": "prepull", "emptyDir": {"sizeLimit": "16Mi"}}],
            },
        },
    }


class ImagePrepull(pulumi.ComponentResource):
    """A pod that pulls `images` on a node `node_selector` picks, through the image cache; nothing waits for it."""

    def __init__(self, name: str, args: ImagePrepullArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("blueprint:index:ImagePrepull", name, None, opts)
        labels = {"app.kubernetes.io/name": name}
        k8s.apps.v1.Deployment(
            f"{name}-deployment",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=name,
                namespace=args.namespace,
                labels=labels,
                # pulumi-kubernetes waits for a Deployment's pods otherwise (provider/pkg/await/deployment.go):
                # the pulls would hold `up` for as long as they take.
                annotations={"pulumi.com/skipAwait": "true"},
            ),
            spec=as_input(prepull_spec(args, labels)),
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.mirrors_joined)),
        )
        self.register_outputs({})
