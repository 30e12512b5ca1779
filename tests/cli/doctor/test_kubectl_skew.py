"""A kubectl outside the supported version skew of the cluster's Kubernetes (within one minor of
kube-apiserver, older or newer: kubernetes.io/releases/version-skew-policy) is a warning, which
`--fix` acts on: it installs the pinned kubectl into blueprint's own folder, beside the user's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cli.doctor.install import KUBECTL, KUBECTL_VERSION
from tests.cli.doctor.fakes import KUBECTL_URL, FakeMachine, checked, doctor_output, serve_releases

CLUSTER = "v1.35.0"
"""The node image's Kubernetes (versions.py KIND_NODE_IMAGE): the tests below are written for it."""


def with_kubectl(version: str, machine: FakeMachine | None = None) -> FakeMachine:
    machine = machine or FakeMachine()
    machine.outputs["kubectl"] = (0, f"Client Version: {version}\nKustomize Version: v5.5.0\n")
    return machine


def test_the_cluster_is_the_kubernetes_these_tests_are_written_for() -> None:
    assert KUBECTL_VERSION == CLUSTER


@pytest.mark.parametrize("version", ["v1.32.4", "v1.33.9", "v1.37.0", "v2.35.0"])
def test_a_kubectl_outside_the_skew_warns_naming_its_version_the_supported_range_and_the_fix(version: str) -> None:
    check = checked(with_kubectl(version))[KUBECTL]
    assert check.ok
    assert f"{version} at /usr/bin/kubectl, outside kubectl's supported version skew" in check.found
    assert f"the cluster is Kubernetes {CLUSTER}" in check.found
    assert "v1.34 to v1.36" in check.found
    assert check.advice.startswith("`uv run blueprint doctor --fix` (downloads https://dl.k8s.io/release/v1.35.0/")


@pytest.mark.parametrize("version", ["v1.34.1", "v1.35.0", "v1.36.2"])
def test_a_kubectl_within_one_minor_of_the_cluster_passes_without_a_warning(version: str) -> None:
    check = checked(with_kubectl(version))[KUBECTL]
    assert (check.ok, check.advice, check.found) == (True, "", version)


def test_a_kubectl_outside_the_skew_fails_nothing() -> None:
    code, output = doctor_output(["--phase", "1"], with_kubectl("v1.32.4"))
    assert "WARN  kubectl" in output
    assert "      fix: `uv run blueprint doctor --fix`" in output
    assert code == 0, output


def test_the_warning_says_the_users_own_kubectl_stays_where_it_is() -> None:
    """One a package manager installed: blueprint puts its own first on its PATH instead of replacing it."""
    advice = checked(with_kubectl("v1.32.4"))[KUBECTL].advice
    assert '(/usr/bin/kubectl stays as it is; `eval "$(uv run blueprint env)"` puts the pinned one first in your shell too)' in advice


def test_fix_installs_the_pinned_kubectl_beside_one_outside_the_skew_and_finds_it_first(tmp_path: Path) -> None:
    fake = serve_releases(with_kubectl("v1.32.4", FakeMachine(home_dir=tmp_path)))
    code, output = doctor_output(["--fix", "--phase", "1"], fake)
    installed = tmp_path / ".local/share/blueprint/bin/kubectl"
    assert fake.downloads == [KUBECTL_URL]
    assert installed.read_bytes() == fake.served[KUBECTL_URL]
    assert f"install kubectl {CLUSTER} as {installed}" in output
    first, again = output.split("checking again:")
    assert "WARN  kubectl" in first
    assert re.search(rf"^PASS  kubectl +{CLUSTER}$", again, re.MULTILINE), again
    assert fake.which("kubectl") == str(installed)
    assert fake.tools["kubectl"] == "/usr/bin/kubectl"  # the user's own, left alone
    assert code == 0, output


def test_the_warning_about_blueprints_own_kubectl_says_nothing_of_it_staying(tmp_path: Path) -> None:
    """An older blueprint's pin, in blueprint's own folder: `--fix` replaces it."""
    ours = tmp_path / ".local/share/blueprint/bin/kubectl"
    fake = with_kubectl("v1.32.4", FakeMachine(home_dir=tmp_path, tools={"kubectl": str(ours)}))
    advice = checked(fake)[KUBECTL].advice
    assert advice.startswith("`uv run blueprint doctor --fix`")
    assert "stays as it is" not in advice
