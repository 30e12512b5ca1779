"""Headlamp at `https://headlamp.<domain>`, through the same gateway as every other UI (phase2).

phase1 installs Headlamp (`components/headlamp.py`), but the Gateway API and GitLab's Gateway exist
only from phase2 on, so the HTTPRoute is phase2's, made only when phase1 says it installed Headlamp.
It lives in Headlamp's namespace, next to the Service it sends to (a backend in the route's own
namespace needs no ReferenceGrant: Gateway API v1.6, HTTPBackendRef), and attaches to the listener
`components/gitlab.py` adds for it, whose `allowedRoutes` admit that namespace alone.

What it exposes is what the port-forward did: the gateway's host ports listen on 127.0.0.1 only
(`components/kind_cluster.py`, `listenAddress`), and the dashboard still asks each visitor for a token
(`components/headlamp.py`, `unsafeUseServiceAccountToken`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.headlamp import FULLNAME, SERVICE_PORT, HeadlampArgs


@dataclass(frozen=True, kw_only=True)
class HeadlampRouteArgs:
    host: str
    """The name it answers at, `headlamp.<domain>`."""
    gateway: str
    """GitLab's Gateway."""
    gateway_namespace: pulumi.Input[str]
    listener: str
    """The Gateway's listener for this route (its `sectionName`)."""
    namespace: str = HeadlampArgs().namespace
    """Headlamp's namespace: the route's, and its Service's."""
    depends_on: tuple[pulumi.Resource, ...] = ()
    """What the route waits for, and on destroy goes before: the Gateway's listener, and in `dev`
    Headlamp itself (its namespace)."""


def route_spec(args: HeadlampRouteArgs, gateway_namespace: str) -> dict[str, Any]:
    """The HTTPRoute's spec: every path of `host` to Headlamp's Service."""
    return {
        "parentRefs": [
            {
                "group": "gateway.networking.k8s.io",
                "kind": "Gateway",
                "name": args.gateway,
                "namespace": gateway_namespace,
                "sectionName": args.listener,
            }
        ],
        "hostnames": [args.host],
        "rules": [
            {
                "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                "backendRefs": [{"group": "", "kind": "Service", "name": FULLNAME, "port": SERVICE_PORT}],
            }
        ],
    }


class HeadlampRoute(pulumi.ComponentResource):
    """The HTTPRoute to Headlamp; pass the cluster's Kubernetes provider through `opts`."""

    url: pulumi.Output[str]
    """Where Headlamp answers."""

    def __init__(self, name: str, args: HeadlampRouteArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("blueprint:index:HeadlampRoute", name, None, opts)
        k8s.apiextensions.CustomResource(
            f"{name}-http-route",
            api_version="gateway.networking.k8s.io/v1",
            kind="HTTPRoute",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=FULLNAME, namespace=args.namespace),
            spec=pulumi.Output.from_input(args.gateway_namespace).apply(lambda namespace: route_spec(args, namespace)),
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.depends_on)),
        )
        self.url = pulumi.Output.from_input(f"https://{args.host}")
        self.register_outputs({"url": self.url})
