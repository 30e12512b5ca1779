"""Pod Security Admission labels for the namespaces blueprint creates.

Every namespace states the strictest Pod Security Standard its workloads allow (`enforce`), pinned
to the cluster's Kubernetes minor so that a newer policy version never breaks a running platform
on an upgrade of the node image; `warn` and `audit` always ask for `restricted`, so that what a
namespace is allowed beyond it is visible (kubectl warnings, the audit log).
See https://kubernetes.io/docs/concepts/security/pod-security-admission/ for the label names.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

import pulumi
import pulumi_kubernetes as k8s

from components.markers import NAMESPACE_OWNER_LABEL

Level = Literal["privileged", "baseline", "restricted"]

POLICY_VERSION = "v1.35"
"""The Kubernetes minor of versions.KIND_NODE_IMAGE: the policy version the levels were checked against."""


def pod_security_labels(enforce: Level) -> dict[str, str]:
    """The labels that make a namespace enforce `enforce`, and warn and audit against `restricted`."""
    prefix = "pod-security.kubernetes.io"
    return {
        f"{prefix}/enforce": enforce,
        f"{prefix}/enforce-version": POLICY_VERSION,
        f"{prefix}/warn": "restricted",
        f"{prefix}/warn-version": POLICY_VERSION,
        f"{prefix}/audit": "restricted",
        f"{prefix}/audit-version": POLICY_VERSION,
    }


def _unset_or_not(path: str, field: str, value: str) -> str:
    """CEL: `path` has no `field`, or not `value` (`path` itself present)."""
    return f"(!has({path}.{field}) || {path}.{field} != {value})"


def _not_unconfined(path: str) -> str:
    """CEL: neither the seccomp nor the AppArmor profile of `path` (a security context) is `Unconfined`."""
    unconfined = "'Unconfined'"
    seccomp, apparmor = (f"(!has({path}.{kind}) || {path}.{kind}.type != {unconfined})" for kind in ("seccompProfile", "appArmorProfile"))
    return f"{seccomp} && {apparmor}"


def one_relaxed_container_policy(*, namespace: str, container: str, image: str) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """A ValidatingAdmissionPolicy's `variables` and `validations` that hold pods in `namespace`
    (whose Pod Security level is `privileged`) to `baseline` and more, but for one relaxation: the
    container named `container`, running `image` as non-root, may have seccomp and AppArmor
    `Unconfined` and may escalate privileges. Nothing else may, and every other container says so
    (`allowPrivilegeEscalation: false`, seccomp `RuntimeDefault` or `Localhost`, its own or the
    pod's): no host namespace, path or port, no privileged container or added capability, no SELinux
    options, unmasked proc mount or sysctl, no ephemeral container.
    Fields: admissionregistration.k8s.io/v1 (GA since Kubernetes 1.30).
    """
    context, pod = "c.securityContext", "object.spec.securityContext"
    relaxed = (
        f"(c.name == '{container}' && c.image == '{image}' && has({context}) && has({context}.runAsNonRoot) && {context}.runAsNonRoot)"
    )
    no_caps = f"(!has({context}.capabilities) || !has({context}.capabilities.add) || size({context}.capabilities.add) == 0)"
    confined = f"{_unset_or_not(context, 'privileged', 'true')} && {no_caps} && !has({context}.seLinuxOptions)"
    unmasked = _unset_or_not(context, "procMount", "'Unmasked'")
    confining = "{}.seccompProfile.type in ['RuntimeDefault', 'Localhost']"
    annotation = "container.apparmor.security.beta.kubernetes.io/"
    host = " && ".join(f"!(has(object.spec.{name}) && object.spec.{name})" for name in ("hostNetwork", "hostPID", "hostIPC"))
    rules = {
        "no host namespace": host,
        "no hostPath volume": "!has(object.spec.volumes) || object.spec.volumes.all(v, !has(v.hostPath))",
        "no ephemeral container": "!has(object.spec.ephemeralContainers) || size(object.spec.ephemeralContainers) == 0",
        "no host port": "variables.containers.all(c, !has(c.ports) || c.ports.all(p, !has(p.hostPort) || p.hostPort == 0))",
        "the pod: nothing unconfined, no sysctl, no SELinux options": f"!has({pod}) || ({_not_unconfined(pod)}"
        f" && !has({pod}.sysctls) && !has({pod}.seLinuxOptions))",
        "no privileged container, added capability, SELinux options or unmasked proc mount": f"variables.containers.all(c, !has({context})"
        f" || ({confined} && {unmasked}))",
        f"only the {container} container, running {image} as non-root, is unconfined or may escalate": "variables.containers.all(c, "
        f"{relaxed} || !has({context}) || ({_not_unconfined(context)} && {_unset_or_not(context, 'allowPrivilegeEscalation', 'true')}))",
        # kind's kubelet has no seccompDefault and Kubernetes allows escalation by default: a setting
        # left out is the relaxation itself, so every other container must state both.
        "every container but the relaxed one forbids privilege escalation": f"variables.containers.all(c, {relaxed}"
        f" || (has({context}) && has({context}.allowPrivilegeEscalation) && !{context}.allowPrivilegeEscalation))",
        "every container but the relaxed one has a seccomp profile RuntimeDefault or Localhost, its own or the pod's": "variables"
        f".containers.all(c, {relaxed} || ((has({context}) && has({context}.seccompProfile)) ? {confining.format(context)}"
        f" : (has({pod}) && has({pod}.seccompProfile) && {confining.format(pod)})))",
        f"only the {container} container's AppArmor annotation may say unconfined": "!has(object.metadata.annotations)"
        f" || object.metadata.annotations.all(k, !k.startsWith('{annotation}') || k == '{annotation}{container}'"
        " || object.metadata.annotations[k] != 'unconfined')",
    }
    variables = [
        {"name": "containers", "expression": "object.spec.containers + (has(object.spec.initContainers) ? object.spec.initContainers : [])"}
    ]
    validations = [{"expression": expression, "message": f"{namespace}: {rule}"} for rule, expression in rules.items()]
    return variables, validations


def owned_namespaces(owner: str) -> pulumi.ResourceTransformation:
    """A transformation that labels every Namespace made under it NAMESPACE_OWNER_LABEL=`owner`: on an
    existing cluster, what tells blueprint's namespaces from someone else's of the same name. One
    place, so that no namespace a component adds goes unlabelled.
    """

    def label(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
        if args.type_ != "kubernetes:core/v1:Namespace":
            return None
        given: Any = args.props["metadata"]

        def labelled(labels: Any) -> pulumi.Output[dict[str, str]]:
            return pulumi.Output.from_input(labels or {}).apply(lambda known: {**known, NAMESPACE_OWNER_LABEL: owner})

        # The components give it as a dict or as ObjectMetaArgs: a copy, every other field as given.
        metadata: Any
        if isinstance(given, k8s.meta.v1.ObjectMetaArgs):
            metadata = copy.copy(given)
            metadata.labels = labelled(given.labels)
        else:
            metadata = {**given, "labels": labelled(given.get("labels"))}
        return pulumi.ResourceTransformationResult({**args.props, "metadata": metadata}, args.opts)

    return label
