"""A small, pure checker of the Kubernetes Pod Security Standards, for tests.

What `pod-security.kubernetes.io/enforce: <level>` would refuse of a pod, following the standard's
table (https://kubernetes.io/docs/concepts/security/pod-security-standards/, policy version v1.35,
the cluster's). `baseline` forbids the known privilege escalations; `restricted` is baseline plus the
hardening rules. Only what a pod spec says is checked (never what an image does): a pod this passes
is one the admission controller admits at that level.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

LEVELS = ("privileged", "baseline", "restricted")

BASELINE_CAPABILITIES = frozenset(
    {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE", "SETFCAP", "SETGID",
     "SETPCAP", "SETUID", "SYS_CHROOT"}
)  # fmt: skip
"""What baseline lets a container add (the container runtime's default set)."""
SAFE_SYSCTLS = frozenset(
    {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies",
     "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
     "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}
)  # fmt: skip
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
RESTRICTED_VOLUMES = frozenset({"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"})
"""The only volume types restricted allows (besides a volume's `name`)."""

POD_KINDS = {
    "Pod": (),
    "Deployment": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}
"""Where each workload kind keeps its pod (metadata and spec)."""


def pods(manifest: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """The pod (`{"metadata": ..., "spec": ...}`) a manifest makes, if it makes one."""
    path = POD_KINDS.get(str(manifest.get("kind")))
    if path is None:
        return
    pod: Any = manifest
    for key in path:
        pod = (pod or {}).get(key)
    if pod:
        yield pod


def _containers(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [*(spec.get("initContainers") or []), *(spec.get("containers") or []), *(spec.get("ephemeralContainers") or [])]


def _baseline(pod: Mapping[str, Any]) -> Iterator[str]:
    spec = pod.get("spec") or {}
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    pod_context = spec.get("securityContext") or {}
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field):
            yield f"{field}: true"
    if (pod_context.get("windowsOptions") or {}).get("hostProcess"):
        yield "pod windowsOptions.hostProcess"
    for volume in spec.get("volumes") or []:
        if "hostPath" in volume:
            yield f"volume {volume.get('name')}: hostPath"
    for sysctl in pod_context.get("sysctls") or []:
        if sysctl.get("name") not in SAFE_SYSCTLS:
            yield f"sysctl {sysctl.get('name')}"
    for key, value in annotations.items():
        if key.startswith("container.apparmor.security.beta.kubernetes.io/") and not (
            value == "runtime/default" or str(value).startswith("localhost/")
        ):
            yield f"annotation {key}: {value}"
    contexts = [("pod", pod_context)] + [(f"container {c.get('name')}", c.get("securityContext") or {}) for c in _containers(spec)]
    for where, context in contexts:
        if (context.get("seccompProfile") or {}).get("type") == "Unconfined":
            yield f"{where}: seccompProfile Unconfined"
        if (context.get("appArmorProfile") or {}).get("type") not in (None, "RuntimeDefault", "Localhost"):
            yield f"{where}: appArmorProfile {context['appArmorProfile']['type']}"
        selinux = context.get("seLinuxOptions") or {}
        if selinux.get("type", "") not in SELINUX_TYPES or selinux.get("user") or selinux.get("role"):
            yield f"{where}: seLinuxOptions {selinux}"
    for container in _containers(spec):
        name = f"container {container.get('name')}"
        context = container.get("securityContext") or {}
        if context.get("privileged"):
            yield f"{name}: privileged"
        if (context.get("windowsOptions") or {}).get("hostProcess"):
            yield f"{name}: windowsOptions.hostProcess"
        if context.get("procMount") not in (None, "Default"):
            yield f"{name}: procMount {context['procMount']}"
        for added in set((context.get("capabilities") or {}).get("add") or []) - BASELINE_CAPABILITIES:
            yield f"{name}: adds capability {added}"
        for port in container.get("ports") or []:
            if port.get("hostPort"):
                yield f"{name}: hostPort {port['hostPort']}"
        handlers = [container.get(probe) or {} for probe in ("livenessProbe", "readinessProbe", "startupProbe")]
        handlers += list((container.get("lifecycle") or {}).values())
        for handler in handlers:
            for action in ("httpGet", "tcpSocket"):
                if (handler.get(action) or {}).get("host"):
                    yield f"{name}: a probe or hook sets {action}.host"


def _restricted(pod: Mapping[str, Any]) -> Iterator[str]:
    spec = pod.get("spec") or {}
    pod_context = spec.get("securityContext") or {}
    for volume in spec.get("volumes") or []:
        kinds = set(volume) - {"name"}
        if not kinds <= RESTRICTED_VOLUMES:
            yield f"volume {volume.get('name')}: {', '.join(sorted(kinds - RESTRICTED_VOLUMES))}"
    if pod_context.get("runAsUser") == 0:
        yield "pod: runAsUser 0"
    if (pod_context.get("seccompProfile") or {}).get("type") not in (None, "RuntimeDefault", "Localhost"):
        yield f"pod: seccompProfile {pod_context['seccompProfile'].get('type')}"
    for container in _containers(spec):
        name = f"container {container.get('name')}"
        context = container.get("securityContext") or {}
        if context.get("allowPrivilegeEscalation") is not False:
            yield f"{name}: allowPrivilegeEscalation is not false"
        non_root = context.get("runAsNonRoot", pod_context.get("runAsNonRoot"))
        if non_root is not True:
            yield f"{name}: runAsNonRoot is not true (on the container or the pod)"
        if context.get("runAsUser") == 0:
            yield f"{name}: runAsUser 0"
        seccomp = (context.get("seccompProfile") or pod_context.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            yield f"{name}: seccompProfile is {seccomp or 'unset'} (RuntimeDefault or Localhost on the container or the pod)"
        capabilities = context.get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or []):
            yield f"{name}: does not drop ALL capabilities"
        for added in set(capabilities.get("add") or []) - {"NET_BIND_SERVICE"}:
            yield f"{name}: adds capability {added}"


def violations(pod: Mapping[str, Any], level: str) -> list[str]:
    """What `level` refuses in `pod` (`{"metadata": ..., "spec": ...}`); empty when it is admitted."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    found: list[str] = []
    if level in ("baseline", "restricted"):
        found += _baseline(pod)
    if level == "restricted":
        found += _restricted(pod)
    return found


def strictest_level(pod: Mapping[str, Any]) -> str:
    """The strictest level that admits `pod`."""
    return next(level for level in reversed(LEVELS) if not violations(pod, level))
