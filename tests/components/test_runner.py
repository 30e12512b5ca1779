"""The Runner: registered through the runner API, chart matching GitLab 19.1, jobs on the runner
nodes, narrow RBAC, our CA, and rootless image builds without privileged pods."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

import versions
from tests.plans import planned

RELEASE = "kubernetes:helm.sh/v3:Release"
RUNNER = "pulumi-python:dynamic/gitlab:Runner"


def values() -> dict[str, Any]:
    return dict(planned("phase2").one(RELEASE, "runner-chart")["inputs"]["values"])


def config() -> dict[str, Any]:
    return tomllib.loads(values()["runners"]["config"].replace("{{.Release.Namespace}}", "gitlab-runner"))


def test_the_runner_is_ours_by_a_description_that_names_the_stack() -> None:
    inputs = planned("phase2").one(RUNNER, "runner-registration")["inputs"]
    assert inputs["description"] == "blueprint/phase2: Kubernetes executor on the runner nodes"
    assert (inputs["tag_list"], inputs["run_untagged"]) == (["kubernetes", "blueprint"], True)


@pytest.mark.parametrize("preserve", [True, False])
def test_the_runner_stays_in_gitlab_on_destroy_with_preserve_data(preserve: bool) -> None:
    registration = planned("phase2", preserveData=str(preserve).lower()).one(RUNNER, "runner-registration")
    assert registration["retainOnDelete"] is preserve


def test_the_chart_matches_gitlab_19_1() -> None:
    inputs = planned("phase2").one(RELEASE, "runner-chart")["inputs"]
    assert (inputs["chart"], inputs["version"]) == ("gitlab-runner", versions.GITLAB_RUNNER_CHART_VERSION)
    assert inputs["version"].startswith("0.90.")


def test_the_runner_token_reaches_the_chart_by_secret() -> None:
    result = planned("phase2")
    assert values()["runners"]["secret"] == "gitlab-runner-token"
    secret = result.one("kubernetes:core/v1:Secret", "runner-token")
    assert secret["inputs"]["stringData"] == {"runner-registration-token": "[secret]", "runner-token": "[secret]"}
    registration = result.one(RUNNER, "runner-registration")
    assert registration["urn"] in secret["dependsOn"]
    assert registration["additionalSecretOutputs"] == ["authentication_token"]


def test_the_runner_waits_for_its_registration_and_the_admin_token() -> None:
    result = planned("phase2")
    chart = result.one(RELEASE, "runner-chart")
    assert result.one("kubernetes:core/v1:Secret", "runner-token")["urn"] in chart["dependsOn"]
    registration = result.one(RUNNER, "runner-registration")
    assert result.one("pulumi-python:dynamic/gitlab:AdminToken", "gitlab-admin-token")["urn"] in registration["dependsOn"]
    assert registration["inputs"]["token"] == "[secret]"


def test_jobs_and_manager_run_on_the_runner_nodes() -> None:
    assert values()["nodeSelector"] == {"blueprint/role": "runner"}
    assert config()["runners"][0]["kubernetes"]["node_selector"] == {"blueprint/role": "runner"}


def test_rbac_is_limited_to_what_the_executor_needs() -> None:
    rules = values()["rbac"]["rules"]
    assert values()["rbac"]["create"] is True
    for rule in rules:
        assert "*" not in rule["resources"]
        assert "*" not in rule["verbs"]
    assert {resource for rule in rules for resource in rule["resources"]} == {
        "pods", "pods/exec", "pods/attach", "pods/log", "secrets", "serviceaccounts", "services", "events",
    }  # fmt: skip


def test_the_manager_and_jobs_trust_our_ca() -> None:
    assert values()["certsSecretName"] == "gitlab-runner-certs"
    certs = planned("phase2").one("kubernetes:core/v1:Secret", "runner-certs")["inputs"]["stringData"]
    assert list(certs) == ["gitlab.local.example.net.crt"]


def test_builds_need_unconfined_seccomp_and_apparmor_not_privileged() -> None:
    kubernetes = config()["runners"][0]["kubernetes"]
    assert kubernetes["privileged"] is False
    context = kubernetes["build_container_security_context"]
    assert context == {"seccomp_profile": {"type": "Unconfined"}, "app_armor_profile": {"type": "Unconfined"}}


def test_the_cache_is_minios_runner_cache_bucket() -> None:
    cache = config()["runners"][0]["cache"]
    assert (cache["Type"], cache["s3"]["BucketName"], cache["s3"]["ServerAddress"]) == (
        "s3",
        "runner-cache",
        "minio.minio.svc.cluster.local:9000",
    )
    assert values()["runners"]["cache"] == {"secretName": "gitlab-runner-cache"}


def test_uninstalling_the_chart_leaves_the_runner_to_pulumi() -> None:
    assert values()["unregisterRunners"] is False
