"""What CI deploys with: a namespace for the apps and a ServiceAccount whose rights end there.

The old blueprint handed jobs the cluster-admin kubeconfig. Here the account `ci-deployer` may
manage the usual application objects in the apps namespace only. Its kubeconfig, for pods (server
`https://kubernetes.default.svc`), carries a token of a year (`kubectl create token`) and the
cluster's CA; it is made when the namespace is, so a new cluster gets a new one.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s
from pulumi_command import local

from components.storage import as_input

DEPLOYER = "ci-deployer"
TOKEN_HOURS = 8760
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
    kind_cluster_name: pulumi.Input[str]
    """For `kind get kubeconfig`, which the token step uses (no credential passes through Pulumi)."""
    namespace: str = "apps"


KUBECONFIG_SCRIPT = f"""\
set -eu
admin=$(mktemp)
trap 'rm -f "$admin"' EXIT
kind get kubeconfig --name "$KIND_CLUSTER_NAME" > "$admin"
token=$(kubectl --kubeconfig "$admin" -n "$NAMESPACE" create token {DEPLOYER} --duration={TOKEN_HOURS}h)
ca=$(kubectl --kubeconfig "$admin" -n "$NAMESPACE" get configmap kube-root-ca.crt -o jsonpath='{{.data.ca\\.crt}}' | base64 | tr -d '\\n')
cat <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: platform
  cluster:
    server: https://kubernetes.default.svc
    certificate-authority-data: $ca
users:
- name: {DEPLOYER}
  user:
    token: $token
contexts:
- name: {DEPLOYER}
  context:
    cluster: platform
    user: {DEPLOYER}
    namespace: $NAMESPACE
current-context: {DEPLOYER}
KUBECONFIG
"""
"""Print the deployer's kubeconfig; nothing else goes to stdout."""


class CiAccess(pulumi.ComponentResource):
    """The apps namespace, the deployer account, its Role and its kubeconfig."""

    namespace: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    """The deployer's kubeconfig (secret)."""

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
        binding = k8s.rbac.v1.RoleBinding(
            f"{name}-binding",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=DEPLOYER, namespace=namespace.metadata.name),
            role_ref=k8s.rbac.v1.RoleRefArgs(api_group="rbac.authorization.k8s.io", kind="Role", name=DEPLOYER),
            subjects=[k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=DEPLOYER, namespace=args.namespace)],
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[account, role])),
        )
        token = local.Command(
            f"{name}-kubeconfig",
            create=KUBECONFIG_SCRIPT,
            environment={"KIND_CLUSTER_NAME": args.kind_cluster_name, "NAMESPACE": args.namespace},
            logging=local.Logging.STDERR,
            add_previous_output_in_env=False,
            triggers=[namespace.metadata.apply(lambda metadata: metadata.uid)],
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[binding], additional_secret_outputs=["stdout"])),
        )
        self.namespace = namespace.metadata.apply(lambda metadata: str(metadata.name))
        self.kubeconfig = pulumi.Output.secret(token.stdout)
        self.register_outputs({"namespace": self.namespace, "kubeconfig": self.kubeconfig})
