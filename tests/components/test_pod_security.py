"""The image-build namespace's admission policy, evaluated: the planned ValidatingAdmissionPolicy's
CEL run by cel-python against sample pods. The runner's own job pod (as gitlab-runner 19.1 builds it
from the planned config.toml) is admitted; a pod that merely leaves a setting out is refused.

cel-python evaluates CEL itself, not Kubernetes' CEL libraries: the policy's expressions use only
the core (`has`, `all`, `in`, `size`, `startsWith`), which it has, so nothing here is left out."""

from __future__ import annotations

import tomllib
from typing import Any

import celpy
import pytest
from celpy.adapter import json_to_cel

import versions
from components.runner import BUILD_CONTAINER
from tests.plans import planned

POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
RELEASE = "kubernetes:helm.sh/v3:Release"
HELPER_IMAGE = "registry.gitlab.com/gitlab-org/gitlab-runner/gitlab-runner-helper:x86_64-v19.1.0"
CONTEXT_KEYS = {
    "allow_privilege_escalation": "allowPrivilegeEscalation",
    "privileged": "privileged",
    "run_as_user": "runAsUser",
    "run_as_group": "runAsGroup",
    "run_as_non_root": "runAsNonRoot",
    "seccomp_profile": "seccompProfile",
    "app_armor_profile": "appArmorProfile",
}
"""config.toml's security-context keys -> the API's (gitlab-runner 19.1 common/config.go)."""


def refusals(pod: dict[str, Any]) -> list[str]:
    """The messages of the planned policy's validations that `pod` fails (none: admitted)."""
    spec = planned("phase2").one(POLICY, "image-build-runner-pod-policy")["inputs"]["spec"]
    env = celpy.Environment()
    activation: dict[str, Any] = {"object": json_to_cel(pod)}
    variables = {
        celpy.celtypes.StringType(v["name"]): env.program(env.compile(v["expression"])).evaluate(activation) for v in spec["variables"]
    }
    activation["variables"] = celpy.celtypes.MapType(variables)
    return [v["message"] for v in spec["validations"] if not env.program(env.compile(v["expression"])).evaluate(activation)]


def _api(context: dict[str, Any]) -> dict[str, Any]:
    return {CONTEXT_KEYS[key]: value for key, value in context.items()}


def runner_pod() -> dict[str, Any]:
    """The image-build runner's job pod, as gitlab-runner 19.1 builds it from the planned config:
    each container's context is its own `<container>_container_security_context`, with the
    runner-wide `privileged` and `allow_privilege_escalation` where it sets none (common/config.go
    `GetContainerSecurityContext`); the pod's from `pod_security_context`."""
    chart = planned("phase2").one(RELEASE, "image-build-runner-chart")
    settings = tomllib.loads(chart["inputs"]["values"]["runners"]["config"])["runners"][0]["kubernetes"]

    def container(name: str, image: str, own: str) -> dict[str, Any]:
        context = {key: settings[key] for key in ("privileged", "allow_privilege_escalation") if key in settings}
        return {"name": name, "image": image, "securityContext": _api(context | settings.get(f"{own}_container_security_context", {}))}

    return {
        "metadata": {"name": "runner-x-project-1-concurrent-0"},
        "spec": {
            "securityContext": _api(settings.get("pod_security_context", {})),
            "initContainers": [container("init-permissions", HELPER_IMAGE, "init_permissions")],
            "containers": [container(BUILD_CONTAINER, versions.BUILDKIT_IMAGE, "build"), container("helper", HELPER_IMAGE, "helper")],
        },
    }


def test_the_image_build_runners_own_job_pod_is_admitted() -> None:
    assert refusals(runner_pod()) == []


def test_a_pod_that_sets_nothing_is_refused() -> None:
    """No securityContext at all: root, escalation allowed, seccomp unconfined on kind's kubelet."""
    bare = {"metadata": {"name": "bare"}, "spec": {"containers": [{"name": "x", "image": "alpine"}]}}
    assert refusals(bare)


@pytest.mark.parametrize("container", ["helper", "init-permissions"])
def test_a_container_but_build_that_does_not_forbid_escalation_is_refused(container: str) -> None:
    pod = runner_pod()
    for c in [*pod["spec"]["containers"], *pod["spec"]["initContainers"]]:
        if c["name"] == container:
            del c["securityContext"]["allowPrivilegeEscalation"]
    assert [message for message in refusals(pod) if "privilege escalation" in message]


def test_a_pod_without_a_confining_seccomp_profile_is_refused() -> None:
    """kind's kubelet has no seccompDefault: a profile left out is Unconfined."""
    pod = runner_pod()
    del pod["spec"]["securityContext"]["seccompProfile"]
    assert [message for message in refusals(pod) if "seccomp" in message]


def test_another_image_as_the_build_container_is_refused() -> None:
    pod = runner_pod()
    pod["spec"]["containers"][0]["image"] = "alpine:3"
    assert refusals(pod)


def test_an_unconfined_init_container_is_refused() -> None:
    pod = runner_pod()
    pod["spec"]["initContainers"][0]["securityContext"]["seccompProfile"] = {"type": "Unconfined"}
    assert refusals(pod)
