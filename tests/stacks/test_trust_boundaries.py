"""What a pod can reach, read from the plans: the trust boundaries between CI, the platform's pods,
the kind nodes and the host.

A pod with a hostPath volume sees whatever its node sees, and a node sees what the kind config
mounts into it. So no node may mount a folder that holds a secret file (OpenBao's keys, the CA's
key, MinIO's root credentials, GitLab's rails secrets); every namespace states the Pod Security
level it enforces, `restricted` for the apps CI deploys; and each volume's folder belongs to the
user its pod runs as, never world-writable.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

import pytest

from cli.lifecycle import is_under
from cli.plan import Plan
from components.pod_security import POLICY_VERSION
from stacks.phase2 import APPS_NAMESPACE, VOLUMES
from tests.plans import COMMAND, kind_config_of, planned, planned_as
from tests.pod_security import LEVELS, pods, violations

HOST_SECRET = "pulumi-python:dynamic/blueprint:HostSecret"
DYNAMIC = "pulumi-python:dynamic/"
NAMESPACE = "kubernetes:core/v1:Namespace"
PUBLIC_FILE_INPUTS = {"ca_file"}
"""File inputs of dynamic resources that name no secret: the CA's certificate is public."""

PLANS = {"phase1": ("phase1",), "phase2": ("phase1", "phase2"), "dev": ("dev",)}
"""Each stack, and the plans its node mounts and its files come from (phase2's nodes are phase1's)."""


def _strings(value: Any, key: str = "") -> list[tuple[str, str]]:
    if isinstance(value, str):
        return [(key, value)]
    if isinstance(value, dict):
        return [pair for k, item in value.items() for pair in _strings(item, str(k))]
    if isinstance(value, list):
        return [pair for item in value for pair in _strings(item, key)]
    return []


def secret_files(result: Plan) -> set[str]:
    """Every host file the plan's resources keep a credential in: each HostSecret's file, each file
    a dynamic provider reads or writes (`path`, `*_file`: the OpenBao seal key, its users' password
    files, the old keys file), and anything else named under a `secrets` folder."""
    found: set[str] = set()
    for resource in result.resources:
        dynamic = str(resource["type"]).startswith(DYNAMIC)
        for key, text in _strings(resource.get("inputs") or {}):
            if not text.startswith("/") or "\n" in text:
                continue
            kept = resource["type"] == HOST_SECRET and key == "path"
            read_or_written = dynamic and (key == "path" or key.endswith("_file")) and key not in PUBLIC_FILE_INPUTS
            if kept or read_or_written or "secrets" in PurePosixPath(text).parts[:-1]:
                found.add(text)
    return found


def node_mounts(result: Plan) -> list[str]:
    """The host folders the kind config mounts into any node."""
    return [mount["hostPath"] for node in kind_config_of(result)["nodes"] for mount in node.get("extraMounts", [])]


def plans_of(stack: str) -> list[Plan]:
    return [planned(name) for name in PLANS[stack]]


@pytest.mark.parametrize("stack", ["phase2", "dev"])
def test_no_node_mount_contains_a_secret_file(stack: str) -> None:
    """Whatever a hostPath pod on any node can read is not a credential."""
    results = plans_of(stack)
    mounts = node_mounts(results[0])
    secrets = set().union(*(secret_files(result) for result in results))
    assert mounts, "the kind config mounts the containerd and volumes folders"
    assert any(path.endswith("/openbao-seal-key") for path in secrets), sorted(secrets)
    for mount in mounts:
        inside = sorted(path for path in secrets if is_under(path, mount))
        assert not inside, f"{mount} is mounted on every node and holds {inside}"


@pytest.mark.parametrize("stack", ["phase1", "dev"])
def test_no_node_mount_is_the_data_folder_or_one_of_its_parents(stack: str) -> None:
    """The data folder holds phase2's secrets folder, whatever files it comes to hold."""
    result = planned(stack)
    data_dir = result.one(COMMAND, "kind-data-folder")["inputs"]["environment"]["FOLDER"]
    for mount in node_mounts(result):
        assert not is_under(data_dir, mount), f"{mount} contains the data folder {data_dir}"


def namespaces(stack: str) -> dict[str, dict[str, str]]:
    """Each Namespace the stack's plan creates, by name, with its labels."""
    result = planned_as("up", stack, headlamp="true")  # the plan test_kind_cluster.py makes too
    return {r["inputs"]["metadata"]["name"]: r["inputs"]["metadata"].get("labels") or {} for r in result.find(NAMESPACE)}


@pytest.mark.parametrize("stack", ["phase1", "phase2", "dev"])
def test_every_namespace_enforces_a_pod_security_level_pinned_to_the_clusters_version(stack: str) -> None:
    found = namespaces(stack)
    assert found
    for name, labels in found.items():
        assert labels.get("pod-security.kubernetes.io/enforce") in LEVELS, name
        assert labels.get("pod-security.kubernetes.io/enforce-version") == POLICY_VERSION, name


@pytest.mark.parametrize("stack", ["phase1", "phase2", "dev"])
def test_every_namespace_warns_and_audits_against_restricted(stack: str) -> None:
    """What a namespace is allowed beyond `restricted` shows as kubectl warnings and audit events."""
    for name, labels in namespaces(stack).items():
        for mode in ("warn", "audit"):
            assert labels.get(f"pod-security.kubernetes.io/{mode}") == "restricted", (name, mode)
            assert labels.get(f"pod-security.kubernetes.io/{mode}-version") == POLICY_VERSION, (name, mode)


@pytest.mark.parametrize("stack", ["phase2", "dev"])
def test_the_apps_namespace_ci_deploys_into_enforces_restricted(stack: str) -> None:
    """The deploy account may create pods there: restricted refuses hostPath, privileged, host
    namespaces and root, so it cannot reach the node or what the node mounts."""
    assert namespaces(stack)[APPS_NAMESPACE]["pod-security.kubernetes.io/enforce"] == "restricted"


EXPECTED_LEVELS = {
    "apps": "restricted",  # whatever CI deploys
    "cnpg-system": "restricted",  # the CloudNativePG operator chart's own securityContext
    "postgres": "restricted",  # CloudNativePG's instance pods
    "redis": "restricted",  # the valkey chart
    "minio": "restricted",  # our own server and setup Job
    "openbao": "restricted",  # the openbao chart, with its container's capabilities dropped
    "headlamp": "restricted",  # the headlamp chart, with our container securityContext
    "gitlab": "baseline",  # GitLab's chart sets no seccomp profile
    "gitlab-runner": "baseline",  # the runner and the jobs that build no image
    "gitlab-runner-image-build": "privileged",  # rootless BuildKit: seccomp and AppArmor Unconfined
    "blueprint-system": "privileged",  # the node-hosts DaemonSet mounts each node's /etc/hosts
}
"""The level each namespace enforces: a change here is a decision, with its reason in the code."""


def test_each_namespace_enforces_the_level_decided_for_it() -> None:
    levels = {name: labels["pod-security.kubernetes.io/enforce"] for name, labels in namespaces("dev").items()}
    assert levels == EXPECTED_LEVELS


def subfolder_lines(result: Plan) -> list[tuple[str, str, str, str]]:
    """(claim, path, mode, owner) of every subfolder a host-folder claim in the plan makes."""
    lines = []
    for command in result.find(COMMAND):
        environment = command["inputs"].get("environment") or {}
        if {"FOLDER", "OWNER"} <= set(environment):
            for line in str(environment.get("SUBFOLDERS") or "").splitlines():
                path, mode, owner = line.split()
                lines.append((command["name"], path, mode, owner))
    return lines


@pytest.mark.parametrize("stack", ["phase1", "phase2", "dev"])
def test_no_folder_the_plan_makes_is_world_writable(stack: str) -> None:
    lines = subfolder_lines(planned(stack))
    assert lines
    for claim, path, mode, _ in lines:
        assert int(mode, 8) & 0o002 == 0, f"{claim} makes {path} mode {mode}"


def test_every_volume_folder_is_its_pods_user_alone() -> None:
    lines = {path: (mode, owner) for claim, path, mode, owner in subfolder_lines(planned("phase2")) if claim == "storage-volumes-folder"}
    assert lines == {volume.folder: ("0700", f"{volume.owner[0]}:{volume.owner[1]}") for volume in VOLUMES}


def _pod_user(result: Plan, namespace: str) -> tuple[int, int]:
    """The (uid, gid) the plan runs the pod that uses `namespace`'s volume as."""
    if namespace == "postgres":
        spec = result.one("kubernetes:postgresql.cnpg.io/v1:Cluster", "postgres-cluster")["inputs"]["spec"]
        return spec["postgresUID"], spec["postgresGID"]
    if namespace == "minio":
        pod = result.one("kubernetes:apps/v1:Deployment", "minio-server")["inputs"]["spec"]["template"]["spec"]
        return pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"]
    if namespace == "redis":
        values = result.one("kubernetes:helm.sh/v3:Release", "redis-chart")["inputs"]["values"]
        return values["podSecurityContext"]["runAsUser"], values["podSecurityContext"]["runAsGroup"]
    values = result.one("kubernetes:helm.sh/v3:Release", "gitlab-chart")["inputs"]["values"]["gitlab"]["gitaly"]
    return values["securityContext"]["runAsUser"], values["securityContext"]["runAsGroup"]


@pytest.mark.parametrize("volume", VOLUMES, ids=lambda volume: volume.key)
def test_each_volume_folder_belongs_to_the_user_its_pod_runs_as(volume: Any) -> None:
    """kubelet applies no fsGroup to hostPath volumes: the folder must already be the pod user's."""
    assert _pod_user(planned("phase2"), volume.namespace) == volume.owner


@pytest.mark.parametrize("stack", ["phase2", "dev"])
def test_every_pod_the_plan_declares_is_admitted_by_its_namespaces_level(stack: str) -> None:
    """Our own Deployments, Jobs and DaemonSets (the charts' pods are checked against their
    upstream sources, as the comments beside each namespace say)."""
    levels = {name: labels["pod-security.kubernetes.io/enforce"] for name, labels in namespaces(stack).items()}
    checked = 0
    for resource in planned_as("up", stack, headlamp="true").resources:
        manifest = {"kind": str(resource["type"]).rsplit(":", 1)[-1], **resource["inputs"]}
        for pod in pods(manifest):
            namespace = manifest["metadata"]["namespace"]
            assert violations(pod, levels[namespace]) == [], resource["urn"]
            checked += 1
    assert checked


def test_minio_meets_restricted_on_its_own() -> None:
    """The one workload of ours with a volume: it runs as its volume's user, not as root."""
    spec = planned("phase2").one("kubernetes:apps/v1:Deployment", "minio-server")["inputs"]["spec"]
    assert violations(spec["template"], "restricted") == []
