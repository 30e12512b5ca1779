"""What CI deploys with: a namespace for the apps and a ServiceAccount whose rights end there.

The old blueprint handed jobs the cluster-admin kubeconfig. Here the account `ci-deployer` may
manage the usual application objects in the apps namespace only, and its token lives in a
`kubernetes.io/service-account-token` Secret that phase3 reads to build the jobs' kubeconfig.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.storage import as_input

DEPLOYER = "ci-deployer"
TOKEN_SECRET = f"{DEPLOYER}-token"
DEPLOY_RULES = [
    {"apiGroups": [""], "resources": ["pods", "pods/log", "services", "configmaps", "secrets", "serviceaccounts", "persistentvolumeclaims"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    {"apiGroups": ["apps"], "resources": ["deployments", "statefulsets", "replicasets"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    {"apiGroups": ["gateway.networking.k8s.io"], "resources": ["httproutes", "gateways"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["get", "list", "watch"]},
]  # fmt: skip
"""What `helm upgrade --install` of the apps' charts touches, in the apps namespace only."""


@dataclass(frozen=True, kw_only=True)
class CiAccessArgs:
    namespace: str = "apps"


class CiAccess(pulumi.ComponentResource):
    """The apps namespace, the deployer account, its Role and its token Secret."""

    namespace: pulumi.Output[str]
    token_secret: pulumi.Output[str]
    """Name of the Secret (in `namespace`) whose `token`, `ca.crt` and `namespace` CI uses."""

    def __init__(self, name: str, args: CiAccessArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("blueprint:index:CiAccess", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        namespace = k8s.core.v1.Namespace(f"{name}-namespace", metadata=k8s.meta.v1.ObjectMetaArgs(name=args.namespace), opts=child)
        account = k8s.core.v1.ServiceAccount(
            f"{name}-deployer", metadata=k8s.meta.v1.ObjectMetaArgs(name=DEPLOYER, namespace=namespace.metadata.name), opts=child
        )
        role = k8s.rbac.v1.Role(
            f"{name}-role",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=DEPLOYER, namespace=namespace.metadata.name),
            rules=as_input(DEPLOY_RULES),
            opts=child,
        )
        k8s.rbac.v1.RoleBinding(
            f"{name}-binding",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=DEPLOYER, namespace=namespace.metadata.name),
            role_ref=k8s.rbac.v1.RoleRefArgs(api_group="rbac.authorization.k8s.io", kind="Role", name=DEPLOYER),
            subjects=[k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=DEPLOYER, namespace=args.namespace)],
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[account, role])),
        )
        token = k8s.core.v1.Secret(
            f"{name}-token",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=TOKEN_SECRET,
                namespace=namespace.metadata.name,
                annotations={"kubernetes.io/service-account.name": DEPLOYER},
            ),
            type="kubernetes.io/service-account-token",
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[account])),
        )
        self.namespace = namespace.metadata.apply(lambda metadata: str(metadata.name))
        self.token_secret = token.metadata.apply(lambda metadata: str(metadata.name))
        self.register_outputs({"namespace": self.namespace, "token_secret": self.token_secret})
