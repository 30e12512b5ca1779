"""The Headlamp dashboard (optional, `blueprint:headlamp`), from its official chart repository.

It is reached with `kubectl -n headlamp port-forward svc/headlamp 4466:80` and a token from
`kubectl -n headlamp create token headlamp`: no host port is mapped for it, because adding one
later would change the kind config, and that replaces the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi_kubernetes.helm.v3 import Release, ReleaseArgs, RepositoryOptsArgs

import versions


@dataclass(frozen=True, kw_only=True)
class HeadlampArgs:
    namespace: str = "headlamp"
    """Namespace the chart is installed into (created if missing)."""


def headlamp_values() -> dict[str, Any]:
    """Chart values: a stable name and laptop-sized requests; the rest is the chart's default."""
    return {
        "fullnameOverride": "headlamp",
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
    }


class Headlamp(pulumi.ComponentResource):
    """Headlamp, installed with Helm; pass the cluster's Kubernetes provider through `opts`."""

    status: pulumi.Output[Any]
    """Status of the Helm release."""

    def __init__(self, name: str, args: HeadlampArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("blueprint:index:Headlamp", name, None, opts)
        release = Release(
            f"{name}-chart",
            ReleaseArgs(
                name="headlamp",
                chart="headlamp",
                version=versions.HEADLAMP_CHART_VERSION,
                repository_opts=RepositoryOptsArgs(repo=versions.HEADLAMP_CHART_REPO),
                namespace=args.namespace,
                create_namespace=True,
                values=headlamp_values(),
            ),
            # The SDK does not hand deleted_with down to children; the release is what it must skip.
            opts=pulumi.ResourceOptions(parent=self, deleted_with=opts.deleted_with if opts else None),
        )
        self.status = release.status
        self.register_outputs({"status": self.status})
