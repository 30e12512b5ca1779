"""What phase1 reads of an existing cluster, and what it makes of the answers: kubectl with the
context from the environment, every failure one error naming the context and what to check, the
StorageClass named or the cluster's default, and where the API server answers pods."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from components import existing_cluster
from components.existing_cluster import READS, ClusterUnreadable, facts
from tests.plans import fake_command

UID = "6c3f5e1a-1b2c-4d3e-8f40-5a6b7c8d9e0f"


def classes(*items: tuple[str, bool, str]) -> str:
    """A StorageClass list as `kubectl get storageclasses -o json` prints it: (name, default, created)."""
    annotation = "storageclass.kubernetes.io/is-default-class"
    return json.dumps(
        {
            "kind": "List",
            "items": [
                {"metadata": {"name": name, "creationTimestamp": created, "annotations": {annotation: "true"} if default else {}}}
                for name, default, created in items
            ],
        }
    )


def answers(**changed: tuple[str, str]) -> dict[str, tuple[str, str]]:
    slices = {
        "items": [{"endpoints": [{"addresses": ["172.18.0.3"]}, {"addresses": ["172.18.0.2"]}], "ports": [{"name": "https", "port": 6443}]}]
    }
    return {
        "identity": (UID, ""),
        "version": (json.dumps({"major": "1", "minor": "33", "gitVersion": "v1.33.2-gke.1240000"}), ""),
        "storageClasses": (classes(("standard-rwo", True, "2025-01-01T00:00:00Z"), ("premium-rwo", False, "2025-01-01T00:00:00Z")), ""),
        "apiServer": (json.dumps(slices), ""),
        **changed,
    }


def test_the_cluster_is_known_by_kube_systems_uid_its_version_its_default_class_and_its_api_servers_endpoints() -> None:
    read = facts("gke-prod", "", answers())
    assert (read.identity, read.version, read.storage_class) == (UID, "v1.33.2-gke.1240000", "standard-rwo")
    assert read.api_server == [{"address": "172.18.0.2", "port": 6443}, {"address": "172.18.0.3", "port": 6443}]


def test_a_class_named_by_the_config_is_used_when_the_cluster_has_it() -> None:
    assert facts("gke-prod", "premium-rwo", answers()).storage_class == "premium-rwo"


def test_a_class_the_cluster_lacks_is_refused_naming_the_ones_it_has() -> None:
    with pytest.raises(ClusterUnreadable) as error:
        facts("gke-prod", "fast", answers())
    assert str(error.value).startswith("blueprint:storageClass = 'fast': the cluster of context gke-prod has no such StorageClass")
    assert "(it has: premium-rwo, standard-rwo)" in str(error.value)


def test_a_cluster_without_a_default_class_is_refused_when_the_config_names_none() -> None:
    listed = classes(("local-path", False, "2025-01-01T00:00:00Z"))
    with pytest.raises(ClusterUnreadable) as error:
        facts("k3s", "", answers(storageClasses=(listed, "")))
    assert "has no default StorageClass, and blueprint:storageClass names none" in str(error.value)
    assert "(local-path)" in str(error.value)


def test_of_two_default_classes_the_newest_is_the_one_a_claim_gets() -> None:
    listed = classes(("old", True, "2024-01-01T00:00:00Z"), ("new", True, "2025-06-01T00:00:00Z"))
    assert facts("k3s", "", answers(storageClasses=(listed, ""))).storage_class == "new"


@pytest.mark.parametrize("read", list(READS))
def test_a_read_that_fails_is_one_error_naming_the_context_the_command_and_what_to_check(read: str) -> None:
    said = 'error: context "gke-prod" does not exist'
    with pytest.raises(ClusterUnreadable) as error:
        facts("gke-prod", "", answers(**{read: ("", said)}))
    message = str(error.value)
    assert message.startswith("phase1 reads the cluster of context gke-prod (blueprint:kubeContext), and `kubectl --context gke-prod ")
    assert said in message
    assert "`kubectl config get-contexts gke-prod` lists it" in message


def test_an_answer_that_is_not_json_is_said_as_a_failed_read() -> None:
    with pytest.raises(ClusterUnreadable) as error:
        facts("lab", "", answers(version=("<html>proxy login</html>", "")))
    assert "`kubectl --context lab get --raw /version` failed: <html>proxy login</html>" in str(error.value)


def run(command: str, tmp_path: Path, kubectl: str) -> subprocess.CompletedProcess[str]:
    """`command` as pulumi-command's `local.run` runs it (/bin/sh -c), with a fake kubectl first on PATH."""
    fake_command(tmp_path / "bin", "kubectl", kubectl)
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "KUBE_CONTEXT": "arn:aws:eks:eu-west-1:1:cluster/prod $(x)"}
    return subprocess.run(["/bin/sh", "-c", command], env=env, capture_output=True, text=True, timeout=10, check=False)


@pytest.mark.parametrize("command", [*READS.values(), existing_cluster.KUBECONFIG_COMMAND])
def test_each_read_passes_the_context_from_the_environment_as_one_argument(command: str, tmp_path: Path) -> None:
    done = run(command, tmp_path, 'for a in "$@"; do printf "<%s>" "$a"; done\n')
    assert "<arn:aws:eks:eu-west-1:1:cluster/prod $(x)>" in done.stdout
    assert "KUBE_CONTEXT" not in command.replace('"$KUBE_CONTEXT"', "")  # never in the text, always quoted


def test_a_failing_kubectl_leaves_stdout_empty_and_says_why_on_stderr(tmp_path: Path) -> None:
    done = run(READS["identity"], tmp_path, 'echo "error: the server has asked for the client to provide credentials" >&2; exit 1\n')
    assert (done.returncode, done.stdout) == (0, "")
    assert "provide credentials" in done.stderr
