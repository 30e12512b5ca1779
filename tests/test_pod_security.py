"""The Pod Security Standards checker the tests rely on (tests/pod_security.py): each rule it knows
lowers a compliant pod to the level the standard says, so a passing chart or plan test means
something."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from tests.pod_security import pods, strictest_level, violations

Pod = dict[str, Any]


def restricted_pod() -> Pod:
    """The smallest pod restricted admits."""
    return {
        "metadata": {},
        "spec": {
            "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [
                {
                    "name": "app",
                    "image": "example:1",
                    "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                }
            ],
            "volumes": [{"name": "tmp", "emptyDir": {}}],
        },
    }


def container(pod: Pod) -> dict[str, Any]:
    return dict(pod["spec"]["containers"][0])


def _set(path: str, value: Any) -> Callable[[Pod], None]:
    def apply(pod: Pod) -> None:
        target = pod
        *keys, last = path.split(".")
        for key in keys:
            target = target[int(key)] if isinstance(target, list) else target.setdefault(key, {})
        target[last] = value

    return apply


def _delete(path: str) -> Callable[[Pod], None]:
    def apply(pod: Pod) -> None:
        target = pod
        *keys, last = path.split(".")
        for key in keys:
            target = target[int(key)] if isinstance(target, list) else target[key]
        del target[last]

    return apply


def _both(first: Callable[[Pod], None], then: Callable[[Pod], None]) -> Callable[[Pod], None]:
    def apply(pod: Pod) -> None:
        first(pod)
        then(pod)

    return apply


C = "spec.containers.0.securityContext"
CASES: dict[str, tuple[Callable[[Pod], None], str]] = {
    "host network": (_set("spec.hostNetwork", True), "privileged"),
    "host PID": (_set("spec.hostPID", True), "privileged"),
    "hostPath volume": (_set("spec.volumes", [{"name": "node", "hostPath": {"path": "/"}}]), "privileged"),
    "privileged container": (_set(f"{C}.privileged", True), "privileged"),
    "added SYS_ADMIN": (_set(f"{C}.capabilities.add", ["SYS_ADMIN"]), "privileged"),
    "host port": (_set("spec.containers.0.ports", [{"containerPort": 80, "hostPort": 80}]), "privileged"),
    "unconfined seccomp": (_set(f"{C}.seccompProfile", {"type": "Unconfined"}), "privileged"),
    "unconfined AppArmor": (_set(f"{C}.appArmorProfile", {"type": "Unconfined"}), "privileged"),
    "unsafe sysctl": (_set("spec.securityContext.sysctls", [{"name": "kernel.msgmax", "value": "1"}]), "privileged"),
    "unmasked /proc": (_set(f"{C}.procMount", "Unmasked"), "privileged"),
    "added CHOWN": (_set(f"{C}.capabilities.add", ["CHOWN"]), "baseline"),
    "privilege escalation allowed": (_delete(f"{C}.allowPrivilegeEscalation"), "baseline"),
    "capabilities not dropped": (_delete(f"{C}.capabilities"), "baseline"),
    "runAsNonRoot missing": (_delete("spec.securityContext.runAsNonRoot"), "baseline"),
    "root user": (_set("spec.securityContext.runAsUser", 0), "baseline"),
    "no seccomp profile": (_delete("spec.securityContext.seccompProfile"), "baseline"),
    "a volume restricted does not list": (_set("spec.volumes", [{"name": "n", "nfs": {"server": "x", "path": "/"}}]), "baseline"),
    "NET_BIND_SERVICE added": (_set(f"{C}.capabilities.add", ["NET_BIND_SERVICE"]), "restricted"),
    "seccomp on the container": (
        _both(_delete("spec.securityContext.seccompProfile"), _set(f"{C}.seccompProfile", {"type": "Localhost"})),
        "restricted",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_each_rule_lowers_a_restricted_pod_to_the_level_the_standard_says(case: str) -> None:
    mutate, level = CASES[case]
    pod = copy.deepcopy(restricted_pod())
    mutate(pod)
    assert strictest_level(pod) == level


def test_an_init_container_is_held_to_the_same_rules() -> None:
    pod = restricted_pod()
    pod["spec"]["initContainers"] = [{"name": "init", "image": "example:1"}]
    assert violations(pod, "restricted")


def test_the_pod_of_every_workload_kind_is_found() -> None:
    pod = restricted_pod()
    manifests = [
        {"kind": "Deployment", "spec": {"template": pod}},
        {"kind": "Job", "spec": {"template": pod}},
        {"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": pod}}}},
        {"kind": "Pod", **pod},
    ]
    assert [len(list(pods(manifest))) for manifest in manifests] == [1, 1, 1, 1]
    assert list(pods({"kind": "Service", "spec": {}})) == []
