"""Pod Security Admission labels for the namespaces blueprint creates.

Every namespace states the strictest Pod Security Standard its workloads allow (`enforce`), pinned
to the cluster's Kubernetes minor so that a newer policy version never breaks a running platform
on an upgrade of the node image; `warn` and `audit` always ask for `restricted`, so that what a
namespace is allowed beyond it is visible (kubectl warnings, the audit log).
See https://kubernetes.io/docs/concepts/security/pod-security-admission/ for the label names.
"""

from __future__ import annotations

from typing import Literal

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
