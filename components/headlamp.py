"""The Headlamp dashboard (optional, `blueprint:headlamp`), from its official chart repository.

It is reached at `https://headlamp.<domain>` through the gateway, like every other UI, once phase2
is up (the route is phase2's: `components/headlamp_route.py`; Gateway API exists only from phase2
on), or with `kubectl -n headlamp port-forward svc/headlamp 4466:80` from phase1 on; either way
with a token from `kubectl -n headlamp create token headlamp`. No host port is mapped for it:
adding one later would change the kind config, and that replaces the cluster.

That token is the chart's ServiceAccount's, and the chart binds that account to `cluster-admin`
unless told otherwise (values.yaml `clusterRoleBinding.clusterRoleName`): anyone holding the
token could read every Secret and change anything. It is bound to Kubernetes' built-in read-only
`view` role instead (no Secrets), and to `cluster-admin` only with `blueprint:headlampAdmin`.

That binding is ours, not the chart's: Kubernetes refuses to change a binding's `roleRef` ("cannot
change roleRef"), so a Helm upgrade that changed the chart's binding (`headlamp-admin`) would fail
on every toggle of the flag. The chart's binding is turned off, and ours is named for its role
(`headlamp-view`, `headlamp-cluster-admin`): a toggle creates the new binding and deletes the old
one. pulumi-kubernetes itself also replaces a ClusterRoleBinding whose `roleRef` changes
(provider/pkg/provider/diff.go, `forceNew` `roleBinding`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi_kubernetes.core.v1 import Namespace
from pulumi_kubernetes.helm.v3 import Release, ReleaseArgs, RepositoryOptsArgs
from pulumi_kubernetes.rbac.v1 import ClusterRoleBinding, RoleRefArgs, SubjectArgs

import versions
from components.pod_security import pod_security_labels


@dataclass(frozen=True, kw_only=True)
class HeadlampArgs:
    namespace: str = "headlamp"
    """Namespace the chart is installed into (created here, with its Pod Security level)."""
    admin: bool = False
    """Bind Headlamp's account to `cluster-admin` rather than the read-only `view` role."""


VIEW_ROLE = "view"
"""Kubernetes' built-in read-only aggregate ClusterRole: no Secrets, no writes."""
ADMIN_ROLE = "cluster-admin"

FULLNAME = "headlamp"
"""The chart's `fullnameOverride`, and so its ServiceAccount's name too: `headlamp.serviceAccountName`
is the fullname when `serviceAccount.create` and no `serviceAccount.name` (chart 0.45.0 _helpers.tpl)."""


SERVICE_PORT = 80
"""The chart's Service port (values.yaml `service.port`, chart 0.45.0), in front of the container's 4466."""


def role_of(args: HeadlampArgs) -> str:
    """The ClusterRole Headlamp's account is bound to."""
    return ADMIN_ROLE if args.admin else VIEW_ROLE


def binding_name(args: HeadlampArgs) -> str:
    """Our ClusterRoleBinding's name: it names the role, so changing the role replaces the binding."""
    return f"{FULLNAME}-{role_of(args)}"


def headlamp_values() -> dict[str, Any]:
    """Chart values: a stable name, laptop-sized requests and no binding of the chart's own (ours is
    made beside the release); the rest is the chart's default.
    """
    return {
        "fullnameOverride": FULLNAME,
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
        "clusterRoleBinding": {"create": False},
        # Every visitor logs in with a token of their own: in-cluster, Headlamp's context carries no
        # credential (backend/pkg/kubeconfig/kubeconfig.go GetInClusterContext: an empty AuthInfo),
        # unless this chart value makes it use its own account's for everyone. Explicit, since
        # https://headlamp.<domain> serves it to anything that reaches the gateway.
        "config": {"unsafeUseServiceAccountToken": False},
        # Replaces the chart's container default (runAsNonRoot, user 100:101, no privilege, but no
        # seccomp or dropped capabilities), so the namespace can enforce `restricted`.
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 100,
            "runAsGroup": 101,
            "privileged": False,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }


class Headlamp(pulumi.ComponentResource):
    """Headlamp, installed with Helm; pass the cluster's Kubernetes provider through `opts`."""

    status: pulumi.Output[Any]
    """Status of the Helm release."""

    def __init__(self, name: str, args: HeadlampArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("blueprint:index:Headlamp", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, deleted_with=opts.deleted_with if opts else None)
        namespace = Namespace(
            f"{name}-namespace",
            # restricted: the chart's only pod, with the securityContext above (chart 0.45.0 templates/deployment.yaml).
            metadata={"name": args.namespace, "labels": pod_security_labels("restricted")},
            opts=child,
        )
        release = Release(
            f"{name}-chart",
            ReleaseArgs(
                name="headlamp",
                chart="headlamp",
                version=versions.HEADLAMP_CHART_VERSION,
                repository_opts=RepositoryOptsArgs(repo=versions.HEADLAMP_CHART_REPO),
                namespace=namespace.metadata.name,
                values=headlamp_values(),
            ),
            # The SDK does not hand deleted_with down to children; the release is what it must skip.
            opts=child,
        )
        ClusterRoleBinding(
            f"{name}-role-binding",
            metadata={"name": binding_name(args)},
            role_ref=RoleRefArgs(api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=role_of(args)),
            subjects=[SubjectArgs(kind="ServiceAccount", name=FULLNAME, namespace=namespace.metadata.name)],
            opts=child,
        )
        self.status = release.status
        self.register_outputs({"status": self.status})
