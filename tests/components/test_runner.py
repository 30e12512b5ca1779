"""The Runners: two runners of the platform's group (never of the instance), registered through
the runner API, chart matching GitLab 19.1, jobs on the runner nodes, narrow RBAC, our CA; every
job confined (no privilege escalation, seccomp RuntimeDefault) but the image builds, which alone go
to a runner whose build container has seccomp and AppArmor `Unconfined`, and nothing privileged."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

import versions
from apps_manifest import APPS_DIR
from components.gitlab_projects import GROUP
from components.runner import (
    BUILDKIT_USER,
    DOCKER_HUB_MIRROR_VARIABLE,
    IMAGE_BUILD_TAG,
    NO_SERVICES,
    SECRETS_DIGEST_ANNOTATION,
    secrets_digest,
)
from stacks import outputs
from tests.plans import planned

RELEASE = "kubernetes:helm.sh/v3:Release"
RUNNER = "pulumi-python:dynamic/gitlab:Runner"
GROUP_TYPE = "pulumi-python:dynamic/gitlab:Group"
RUNNERS = ("runner", "image-build-runner")
"""The default runner and the image-build one (their resource name prefixes)."""
CONTAINERS = ("build", "helper", "service", "init_permissions")
"""The containers of a job's pod, as the runner's config.toml names their security contexts."""


def values(runner: str = "runner") -> dict[str, Any]:
    return dict(planned("phase2").one(RELEASE, f"{runner}-chart")["inputs"]["values"])


def config(runner: str = "runner") -> dict[str, Any]:
    return tomllib.loads(values(runner)["runners"]["config"].replace("{{.Release.Namespace}}", "gitlab-runner"))


def kubernetes(runner: str) -> dict[str, Any]:
    return dict(config(runner)["runners"][0]["kubernetes"])


def effective(runner: str, container: str, key: str) -> Any:
    """A container's setting as gitlab-runner applies it: its own context's, else the runner-wide one
    (common/config.go `GetContainerSecurityContext`, `getContainerSecurityContextEffectiveFlagValue`)."""
    settings = kubernetes(runner)
    return settings.get(f"{container}_container_security_context", {}).get(key, settings.get(key))


def profile(runner: str, container: str, kind: str) -> str | None:
    """A container's seccomp or AppArmor profile type: its own, else the pod's (Kubernetes' rule)."""
    settings = kubernetes(runner)
    own = settings.get(f"{container}_container_security_context", {}).get(kind)
    return (own or settings.get("pod_security_context", {}).get(kind) or {}).get("type")


def test_the_runners_are_runners_of_the_group_not_of_the_instance() -> None:
    result = planned("phase2")
    group = result.one(GROUP_TYPE, "apps-group")
    assert group["inputs"]["path"] == GROUP
    for runner in RUNNERS:
        registration = result.one(RUNNER, f"{runner}-registration")
        assert registration["inputs"]["group_id"] == result.outputs["appsGroupId"]["value"], runner
        assert group["urn"] in registration["dependsOn"], runner


def test_the_group_is_phase2s_and_phase3_puts_its_projects_in_it() -> None:
    group = planned("phase2").one(GROUP_TYPE, "apps-group")
    assert group["inputs"]["owner"] == "blueprint/phase2"
    assert planned("phase3").find(GROUP_TYPE) == []
    for project in planned("phase3").find("pulumi-python:dynamic/gitlab:Project"):
        inputs = project["inputs"]
        assert (inputs["namespace_id"], inputs["group_owner"]) == (planned("phase2").outputs["appsGroupId"]["value"], "blueprint/phase2")


def test_the_runners_are_ours_by_a_description_that_names_the_stack() -> None:
    result = planned("phase2")
    default, build = (result.one(RUNNER, f"{runner}-registration")["inputs"] for runner in RUNNERS)
    assert default["description"] == "blueprint/phase2: Kubernetes executor on the runner nodes"
    assert build["description"] == "blueprint/phase2: image builds on the runner nodes"


def test_the_default_runner_takes_untagged_jobs_and_the_image_build_runner_only_tagged_ones() -> None:
    result = planned("phase2")
    default, build = (result.one(RUNNER, f"{runner}-registration")["inputs"] for runner in RUNNERS)
    assert (default["tag_list"], default["run_untagged"]) == (["kubernetes", "blueprint"], True)
    assert (build["tag_list"], build["run_untagged"]) == ([IMAGE_BUILD_TAG], False)


@pytest.mark.parametrize("preserve", [True, False])
def test_the_runners_and_the_group_stay_in_gitlab_on_destroy_with_preserve_data(preserve: bool) -> None:
    result = planned("phase2", preserveData=str(preserve).lower())
    for resource in [*(result.one(RUNNER, f"{runner}-registration") for runner in RUNNERS), result.one(GROUP_TYPE, "apps-group")]:
        assert resource["retainOnDelete"] is preserve, resource["urn"]


def test_the_chart_matches_gitlab_19_1() -> None:
    for runner in RUNNERS:
        inputs = planned("phase2").one(RELEASE, f"{runner}-chart")["inputs"]
        assert (inputs["chart"], inputs["version"]) == ("gitlab-runner", versions.GITLAB_RUNNER_CHART_VERSION)
        assert inputs["version"].startswith("0.90.")


def test_the_runner_token_reaches_the_chart_by_secret() -> None:
    result = planned("phase2")
    for runner in RUNNERS:
        assert values(runner)["runners"]["secret"] == "gitlab-runner-token"
        secret = result.one("kubernetes:core/v1:Secret", f"{runner}-token")
        assert secret["inputs"]["stringData"] == {"runner-registration-token": "[secret]", "runner-token": "[secret]"}
        registration = result.one(RUNNER, f"{runner}-registration")
        assert registration["urn"] in secret["dependsOn"]
        assert registration["additionalSecretOutputs"] == ["authentication_token"]


def test_the_runner_waits_for_its_registration_and_the_admin_token() -> None:
    result = planned("phase2")
    for runner in RUNNERS:
        chart = result.one(RELEASE, f"{runner}-chart")
        assert result.one("kubernetes:core/v1:Secret", f"{runner}-token")["urn"] in chart["dependsOn"]
        registration = result.one(RUNNER, f"{runner}-registration")
        assert result.one("pulumi-python:dynamic/gitlab:AdminToken", "gitlab-admin-token")["urn"] in registration["dependsOn"]
        assert registration["inputs"]["token"] == "[secret]"


@pytest.mark.parametrize("runner", RUNNERS)
def test_jobs_and_manager_run_on_the_runner_nodes(runner: str) -> None:
    assert values(runner)["nodeSelector"] == {"blueprint/role": "runner"}
    assert kubernetes(runner)["node_selector"] == {"blueprint/role": "runner"}


def test_each_runner_has_its_own_namespace() -> None:
    result = planned("phase2")
    namespaces = [result.one("kubernetes:core/v1:Namespace", f"{runner}-namespace")["inputs"]["metadata"]["name"] for runner in RUNNERS]
    assert namespaces == ["gitlab-runner", "gitlab-runner-image-build"]
    for runner, namespace in zip(RUNNERS, namespaces, strict=True):
        assert result.one(RELEASE, f"{runner}-chart")["inputs"]["namespace"] == namespace


def test_the_runner_namespaces_enforce_the_strictest_level_their_jobs_pass() -> None:
    """Job images often run as root: `baseline`; an image build's Unconfined profiles pass only `privileged`."""
    result = planned("phase2")
    labels = [result.one("kubernetes:core/v1:Namespace", f"{runner}-namespace")["inputs"]["metadata"]["labels"] for runner in RUNNERS]
    levels = [label["pod-security.kubernetes.io/enforce"] for label in labels]
    assert levels == ["baseline", "privileged"]


@pytest.mark.parametrize("runner", RUNNERS)
def test_rbac_is_limited_to_what_the_executor_needs(runner: str) -> None:
    rules = values(runner)["rbac"]["rules"]
    assert values(runner)["rbac"]["create"] is True
    for rule in rules:
        assert "*" not in rule["resources"]
        assert "*" not in rule["verbs"]
    assert {resource for rule in rules for resource in rule["resources"]} == {
        "pods", "pods/exec", "pods/attach", "pods/log", "secrets", "serviceaccounts", "services", "events",
    }  # fmt: skip


@pytest.mark.parametrize("runner", RUNNERS)
def test_the_manager_meets_the_restricted_level(runner: str) -> None:
    manager, pod = values(runner)["securityContext"], values(runner)["podSecurityContext"]
    assert (manager["allowPrivilegeEscalation"], manager["privileged"], manager["runAsNonRoot"]) == (False, False, True)
    assert manager["capabilities"] == {"drop": ["ALL"]}
    assert manager["seccompProfile"] == pod["seccompProfile"] == {"type": "RuntimeDefault"}


@pytest.mark.parametrize("runner", RUNNERS)
def test_the_manager_and_jobs_trust_our_ca(runner: str) -> None:
    assert values(runner)["certsSecretName"] == "gitlab-runner-certs"
    certs = planned("phase2").one("kubernetes:core/v1:Secret", f"{runner}-certs")["inputs"]["stringData"]
    assert list(certs) == ["gitlab.local.example.net.crt"]


@pytest.mark.parametrize("container", CONTAINERS)
def test_the_default_runner_forbids_privilege_escalation_in_every_container(container: str) -> None:
    assert effective("runner", container, "allow_privilege_escalation") is False
    assert effective("runner", container, "privileged") is False


@pytest.mark.parametrize("container", CONTAINERS)
def test_the_default_runner_keeps_every_container_under_runtime_default_seccomp(container: str) -> None:
    assert profile("runner", container, "seccomp_profile") == "RuntimeDefault"
    assert profile("runner", container, "app_armor_profile") in (None, "RuntimeDefault")


@pytest.mark.parametrize(("runner", "container"), [(runner, container) for runner in RUNNERS for container in CONTAINERS])
def test_only_the_image_build_runners_build_container_is_unconfined(runner: str, container: str) -> None:
    relaxed = (runner, container) == ("image-build-runner", "build")
    for kind in ("seccomp_profile", "app_armor_profile"):
        assert (profile(runner, container, kind) == "Unconfined") is relaxed, kind
    assert (effective(runner, container, "allow_privilege_escalation") is not False) is relaxed
    assert effective(runner, container, "privileged") is False


def test_the_build_image_job_carries_the_image_build_tag_and_no_other_job_does() -> None:
    tagged = {}
    for path in sorted((APPS_DIR / "shared-code" / "templates").glob("*.yml")):
        for name, job in (yaml.safe_load(path.read_text()) or {}).items():
            if isinstance(job, dict) and "tags" in job:
                tagged[f"{path.name}:{name}"] = job["tags"]
    assert tagged == {"pipeline.yml:build-image": [IMAGE_BUILD_TAG]}


@pytest.mark.parametrize("runner", RUNNERS)
def test_the_cache_is_minios_runner_cache_bucket(runner: str) -> None:
    cache = config(runner)["runners"][0]["cache"]
    assert (cache["Type"], cache["s3"]["BucketName"], cache["s3"]["ServerAddress"]) == (
        "s3",
        "runner-cache",
        "minio.minio.svc.cluster.local:9000",
    )
    assert values(runner)["runners"]["cache"] == {"secretName": "gitlab-runner-cache"}


@pytest.mark.parametrize("runner", RUNNERS)
def test_uninstalling_the_chart_leaves_the_runner_to_pulumi(runner: str) -> None:
    assert values(runner)["unregisterRunners"] is False


def pipeline_variables() -> dict[str, Any]:
    return dict(yaml.safe_load((APPS_DIR / "shared-code" / "templates" / "pipeline.yml").read_text())["variables"])


def test_the_image_build_runner_allows_only_the_pipelines_buildkit_image() -> None:
    """Any job author can write the tag: the runner, not the tag, decides what runs unconfined."""
    assert kubernetes("image-build-runner")["allowed_images"] == [versions.BUILDKIT_IMAGE]
    assert pipeline_variables()["BUILDKIT_IMAGE"] == versions.BUILDKIT_IMAGE


def test_the_image_build_runners_default_image_is_buildkit_too() -> None:
    """gitlab-runner lets its default image through whatever `allowed_images` says
    (executors/kubernetes `verifyAllowedImages`: internal images)."""
    assert kubernetes("image-build-runner")["image"] == versions.BUILDKIT_IMAGE


def test_the_image_build_runner_allows_no_service_image_of_its_own_choosing() -> None:
    """An empty `allowed_services` allows every service (common/allowed_images.go): the one entry
    is no image reference at all, so nothing matches it."""
    [entry] = kubernetes("image-build-runner")["allowed_services"]
    assert entry == NO_SERVICES
    assert " " in entry, "an image reference has no space: this must match no image"


def test_the_image_build_runners_build_container_runs_as_buildkits_non_root_user() -> None:
    """Whatever user the job asks for (`image: kubernetes: user`), and whatever image would be let
    through: never root in the unconfined container."""
    context = kubernetes("image-build-runner")["build_container_security_context"]
    assert (context["run_as_user"], context["run_as_group"], context["run_as_non_root"]) == (BUILDKIT_USER, BUILDKIT_USER, True)
    assert BUILDKIT_USER != 0


@pytest.mark.parametrize("runner", RUNNERS)
def test_job_pods_get_no_service_account_token(runner: str) -> None:
    """Jobs need no Kubernetes API: the deploy job brings DEPLOY_KUBECONFIG."""
    assert kubernetes(runner)["automount_service_account_token"] is False


# moby/buildkit v0.24.0 util/resolver/config/config.go, RegistryConfig's toml keys.
BUILDKIT_REGISTRY_KEYS = {"mirrors", "http", "insecure", "ca", "keypair", "tlsconfigdir"}


def buildkitd_toml(tmp_path: Path, **env: str) -> dict[str, Any]:
    """The buildkitd.toml the pipeline's build-image job writes, run as its script runs it."""
    pipeline = yaml.safe_load((APPS_DIR / "shared-code" / "templates" / "pipeline.yml").read_text())
    lines = [line for line in pipeline["build-image"]["script"] if "/tmp/buildkitd.toml" in line]
    script = "\n".join(lines).replace("/tmp/buildkitd.toml", str(tmp_path / "buildkitd.toml"))
    base = {"PATH": os.environ["PATH"], "CI_REGISTRY": "registry.local.example.net", "CI_SERVER_TLS_CA_FILE": "/ca.crt"}
    subprocess.run(["/bin/sh", "-ec", script], env={**base, **env}, check=True)
    return tomllib.loads((tmp_path / "buildkitd.toml").read_text())


def test_the_image_build_runner_names_the_docker_hub_mirror_to_its_jobs() -> None:
    mirror = planned("phase1").outputs[outputs.IMAGE_MIRRORS]["value"]["docker.io"]
    assert config("image-build-runner")["runners"][0]["environment"] == [f"{DOCKER_HUB_MIRROR_VARIABLE}={mirror}"]
    assert "environment" not in config("runner")["runners"][0]


def test_image_builds_pull_base_images_through_the_docker_hub_mirror(tmp_path: Path) -> None:
    mirror = planned("phase1").outputs[outputs.IMAGE_MIRRORS]["value"]["docker.io"]
    document = buildkitd_toml(tmp_path, **{DOCKER_HUB_MIRROR_VARIABLE: mirror})
    assert document["registry"]["docker.io"] == {"mirrors": [mirror]}
    assert document["registry"][mirror] == {"http": True}
    for registry in document["registry"].values():
        assert set(registry) <= BUILDKIT_REGISTRY_KEYS


def test_image_builds_without_the_cache_go_to_docker_hub_itself(tmp_path: Path) -> None:
    assert set(buildkitd_toml(tmp_path)["registry"]) == {"registry.local.example.net"}


def test_no_runner_names_a_mirror_when_phase1_runs_no_image_cache() -> None:
    chart = planned("phase2", imageCache="false").one(RELEASE, "image-build-runner-chart")
    assert "environment" not in tomllib.loads(chart["inputs"]["values"]["runners"]["config"])["runners"][0]


def test_the_image_build_runner_takes_only_protected_refs_jobs() -> None:
    result = planned("phase2")
    assert result.one(RUNNER, "image-build-runner-registration")["inputs"]["access_level"] == "ref_protected"
    assert result.one(RUNNER, "runner-registration")["inputs"]["access_level"] == "not_protected"


def test_the_build_image_job_runs_on_protected_refs_alone() -> None:
    """Else, on any other branch, it would wait forever for a runner that never takes it."""
    pipeline = yaml.safe_load((APPS_DIR / "shared-code" / "templates" / "pipeline.yml").read_text())
    assert pipeline["build-image"]["rules"] == [{"if": '$CI_COMMIT_REF_PROTECTED == "true"', "exists": ["Dockerfile"]}]


def test_an_admission_policy_narrows_the_image_build_namespace_to_the_build_containers_profiles() -> None:
    result = planned("phase2")
    policy = result.one("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", "image-build-runner-pod-policy")
    binding = result.one(
        "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding", "image-build-runner-pod-policy-binding"
    )
    spec = policy["inputs"]["spec"]
    assert spec["matchConstraints"]["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "gitlab-runner-image-build"}}
    assert (spec["failurePolicy"], binding["inputs"]["spec"]["validationActions"]) == ("Fail", ["Deny"])
    relaxed = [v["expression"] for v in spec["validations"] if "Unconfined" in v["expression"] and "c.name" in v["expression"]]
    assert len(relaxed) == 1
    assert f"c.name == 'build' && c.image == '{versions.BUILDKIT_IMAGE}'" in relaxed[0]
    assert binding["urn"] in result.one(RELEASE, "image-build-runner-chart")["dependsOn"]


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("container", ["", "helper_", "service_"])
def test_every_job_container_has_cpu_and_memory_requests_and_limits(runner: str, container: str) -> None:
    settings = kubernetes(runner)
    for key in ("cpu_request", "cpu_limit", "memory_request", "memory_limit"):
        assert settings.get(f"{container}{key}"), f"{runner}: {container}{key}"
    assert not [key for key in settings if key.endswith("_overwrite_max_allowed")]


def test_every_pods_pids_are_limited() -> None:
    cluster = planned("phase1").one("command:local:Command", "kind-cluster")
    patches = yaml.safe_load(cluster["inputs"]["stdin"])["kubeadmConfigPatches"]
    kubelet = [yaml.safe_load(patch) for patch in patches if "KubeletConfiguration" in patch]
    assert [int(config["podPidsLimit"]) > 0 for config in kubelet] == [True]


@pytest.mark.parametrize("runner", RUNNERS)
def test_the_manager_restarts_when_its_secrets_change(runner: str) -> None:
    """The pod's annotation is the registration's token's digest: a new token changes the pod template."""
    result = planned("phase2")
    chart = result.one(RELEASE, f"{runner}-chart")
    annotations = chart["inputs"]["values"]["podAnnotations"]
    assert set(annotations) == {SECRETS_DIGEST_ANNOTATION}
    assert re.fullmatch(r"[0-9a-f]{64}", annotations[SECRETS_DIGEST_ANNOTATION])
    assert result.one(RUNNER, f"{runner}-registration")["urn"] in chart["dependsOn"]


def test_a_new_token_changes_the_managers_digest_and_the_digest_is_keyed() -> None:
    digest = secrets_digest("glrt-one", "runner-cache", "key", "PEM")
    assert digest != secrets_digest("glrt-two", "runner-cache", "key", "PEM")
    assert digest == secrets_digest("glrt-one", "runner-cache", "key", "PEM")
    unkeyed = [hashlib.sha256(text.encode()).hexdigest() for text in ("glrt-one", json.dumps(["runner-cache", "key", "PEM"]))]
    assert digest not in unkeyed
