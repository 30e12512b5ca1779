"""What CI deploys with: a namespace for the apps and a ServiceAccount whose rights end there.

`ci-deployer` may manage what the apps' charts need, and HTTPRoutes but no Gateway, in the apps
namespace only. Its kubeconfig (for pods, with the cluster's CA) carries a bound token of a year,
made with the namespace or the account, and again by the first `up` within RENEW_DAYS of its expiry
(`providers/deploy_kubeconfig.py`), which hands it on to phase3's CI variable. Bound tokens die with
the account, so no job may mint a credential of its own: two ValidatingAdmissionPolicies
(CREDENTIAL_POLICIES) refuse a token Secret and a `ci-deployer` pod (docs/design/decisions.md, entry 29).
The apps' pods reach only DNS, each other and the public internet (`components/apps_egress.py`).

To take CI's access away at once, delete the account, tell Pulumi it is gone, and `up`:

    kubectl --context kind-<clusterName> -n apps delete serviceaccount ci-deployer
    eval "$(uv run blueprint env)"
    deployer='urn:pulumi:phase2::blueprint::blueprint:index:CiAccess$kubernetes:core/v1:ServiceAccount::ci-access-deployer'
    pulumi refresh -s phase2 --yes --target "$deployer"
    uv run blueprint up

Without the refresh `up` compares with the state, where the account still exists, and makes nothing.
The new account's uid is an input of the kubeconfig: the same `up` makes a new token for CI.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.apps_egress import AppsEgress, AppsEgressArgs
from components.engine import DOCKER
from components.pod_security import pod_security_labels
from components.scripts import script
from components.storage import as_input
from providers.deploy_kubeconfig import DeployKubeconfig, DeployKubeconfigArgs

DEPLOYER = "ci-deployer"
TOKEN_HOURS = 8760
RENEW_DAYS = 30
"""An `up` this close to the token's expiry makes a new one: a month to run one in."""
DEPLOY_RULES = [
    {"apiGroups": [""], "resources": ["pods", "pods/log", "services", "configmaps", "secrets", "serviceaccounts", "persistentvolumeclaims"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    {"apiGroups": ["apps"], "resources": ["deployments", "statefulsets", "replicasets"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    {"apiGroups": ["gateway.networking.k8s.io"], "resources": ["httproutes"],
     "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["get", "list", "watch"]},
]  # fmt: skip
"""What `helm upgrade --install` of the apps' charts touches, in the apps namespace only."""
SERVICE_ACCOUNT_TOKEN = "kubernetes.io/service-account-token"
CREDENTIAL_POLICIES: dict[str, tuple[str, dict[str, str]]] = {
    "ci-deployer-no-token-secrets": (
        "secrets",
        {
            "expression": f"!has(object.type) || object.type != '{SERVICE_ACCOUNT_TOKEN}'",
            "reason": "Forbidden",
            "message": f"no Secret of type {SERVICE_ACCOUNT_TOKEN} in this namespace: a ServiceAccount token of no "
            "expiry would outlive the renewal of CI's deploy token (ask the TokenRequest API for a token instead)",
        },
    ),
    "ci-deployer-no-deployer-pods": (
        "pods",
        {
            "expression": f"!has(object.spec.serviceAccountName) || object.spec.serviceAccountName != '{DEPLOYER}'",
            "reason": "Forbidden",
            "message": f"no pod in this namespace runs as ServiceAccount {DEPLOYER}, CI's deploy account: "
            "leave serviceAccountName out (the namespace's default account) or name another",
        },
    ),
}
"""The ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1, GA since Kubernetes 1.30), each
bound to the apps namespace, that keep it from minting credentials of the deployer: by name, what
they match and their one validation. One kind each, so each expression is type-checked against
its own kind's schema. CEL sees the object after defaulting and mutating admission (a Secret's
`type` defaults to `Opaque`, a pod's `serviceAccountName` to `default`); `has()` guards all the
same."""


def credential_policy_spec(resource: str, validation: dict[str, str]) -> dict[str, object]:
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": [resource]}]
        },
        "validations": [validation],
    }


def credential_binding_spec(policy: str, namespace: str) -> dict[str, object]:
    """Bound to one namespace: `kubernetes.io/metadata.name` is the label the API server itself
    sets on every namespace, to its name, so no one can put it on another.
    """
    return {
        "policyName": policy,
        "validationActions": ["Deny"],
        "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}},
    }


@dataclass(frozen=True, kw_only=True)
class CiAccessArgs:
    kind_cluster_name: pulumi.Input[str]
    """For `kind get kubeconfig`, which the token step uses (no credential passes through Pulumi)."""
    engine: str = DOCKER
    """The container engine kind runs on (components/engine.py), which `kind get kubeconfig` is told."""
    kube_context: str = ""
    """On an existing cluster, its context, whose kubeconfig the token step uses instead; "" on kind."""
    namespace: str = "apps"


KUBECONFIG_SCRIPT = script("ci_access_kubeconfig.sh")
"""Print the deployer's kubeconfig; nothing else goes to stdout."""


class CiAccess(pulumi.ComponentResource):
    """The apps namespace, the deployer account, its Role and its kubeconfig."""

    namespace: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    """The deployer's kubeconfig (secret)."""

    def __init__(self, name: str, args: CiAccessArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("blueprint:index:CiAccess", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # restricted: CI deploys whatever a pipeline renders here, so nothing may reach the node (hostPath, privileged, root).
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.namespace, labels=pod_security_labels("restricted")),
            opts=child,
        )
        account = k8s.core.v1.ServiceAccount(
            f"{name}-deployer", metadata=k8s.meta.v1.ObjectMetaArgs(name=DEPLOYER, namespace=namespace.metadata.name), opts=child
        )
        role = k8s.rbac.v1.Role(
            f"{name}-role",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=DEPLOYER, namespace=namespace.metadata.name),
            rules=as_input(DEPLOY_RULES),
            opts=child,
        )
        guards: list[pulumi.Resource] = []
        for policy_name, (resource, validation) in CREDENTIAL_POLICIES.items():
            policy = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
                f"{name}-{policy_name}",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=policy_name),
                spec=as_input(credential_policy_spec(resource, validation)),
                opts=child,
            )
            guards.append(
                k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
                    f"{name}-{policy_name}-binding",
                    metadata=k8s.meta.v1.ObjectMetaArgs(name=policy_name),
                    spec=as_input(credential_binding_spec(policy_name, args.namespace)),
                    opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[policy, namespace])),
                )
            )
        # What CI deploys runs isolated from the platform (a Developer's code can reach the default branch's build).
        guards.append(AppsEgress(f"{name}-egress", AppsEgressArgs(namespace=namespace.metadata.name), opts=child))
        # The account gets its rights only once the guards are in place.
        binding = k8s.rbac.v1.RoleBinding(
            f"{name}-binding",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=DEPLOYER, namespace=namespace.metadata.name),
            role_ref=k8s.rbac.v1.RoleRefArgs(api_group="rbac.authorization.k8s.io", kind="Role", name=DEPLOYER),
            subjects=[k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=DEPLOYER, namespace=args.namespace)],
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[account, role, *guards])),
        )
        token = DeployKubeconfig(
            f"{name}-kubeconfig",
            DeployKubeconfigArgs(
                kind_cluster_name=args.kind_cluster_name,
                engine=args.engine,
                kube_context=args.kube_context,
                namespace=args.namespace,
                namespace_uid=namespace.metadata.apply(lambda metadata: metadata.uid or ""),
                service_account_uid=account.metadata.apply(lambda metadata: metadata.uid or ""),
                script=KUBECONFIG_SCRIPT,
                environment={"DEPLOYER": DEPLOYER, "TOKEN_HOURS": str(TOKEN_HOURS)},
                renew_days=RENEW_DAYS,
            ),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[binding])),
        )
        self.namespace = namespace.metadata.apply(lambda metadata: str(metadata.name))
        self.kubeconfig = pulumi.Output.secret(token.kubeconfig)
        self.register_outputs({"namespace": self.namespace, "kubeconfig": self.kubeconfig})
