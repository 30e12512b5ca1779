"""A kubectl outside the supported version skew of the cluster's Kubernetes (within one minor of
kube-apiserver, older or newer: kubernetes.io/releases/version-skew-policy) is a warning, which
`--fix` acts on: it installs the pinned kubectl into blueprint's own folder, beside the user's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cli.doctor import install
from cli.doctor.install import KUBECTL, KUBECTL_VERSION
from cli.tools_path import tools_on_path
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
    # the user's own comes first still in their shell, until `blueprint env` is evaled there
    shells = rf"^WARN  kubectl +{CLUSTER} at {installed}, first on blueprint's PATH; your shell's PATH finds /usr/bin/kubectl first$"
    assert re.search(shells, again, re.MULTILINE), again
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


@pytest.mark.parametrize(
    "output",
    [
        "Client Version: v1.27.3\nKustomize Version: v5.0.1\n",
        'Client Version: version.Info{Major:"1", Minor:"27", GitVersion:"v1.27.3", GitCommit:"25b4e43", GoVersion:"go1.20.5"}\n',
        "WARNING: This version information is deprecated and will be replaced with the output from kubectl version --short.\n"
        'Client Version: version.Info{Major:"1", Minor:"27", GitVersion:"v1.27.3", GoVersion:"go1.20.5", Platform:"linux/amd64"}\n'
        "Kustomize Version: v5.0.1\n",
        "kubecolor 0.5.0 passes this to kubectl 1.2.3 of the PATH\nClient Version: v1.27.3\n",
    ],
    ids=["since-1.28", "before-1.28", "before-1.28-with-its-warning", "a-wrapper-that-says-versions-first"],
)
def test_kubectls_own_version_is_read_whatever_is_printed_around_it(output: str) -> None:
    machine = FakeMachine()
    machine.outputs["kubectl"] = (0, output)
    assert checked(machine)[KUBECTL].found.startswith("v1.27.3 at /usr/bin/kubectl, outside kubectl's supported version skew")


@pytest.mark.parametrize("machine", [FakeMachine(machine="riscv64"), FakeMachine(system="windows")], ids=["no-release", "no-install"])
def test_a_warning_with_nothing_to_install_speaks_of_no_pinned_one(machine: FakeMachine) -> None:
    """No release for the arch (or no install on the system): there is no pinned one to put first, only the user's to replace."""
    advice = checked(with_kubectl("v1.30.0", machine))[KUBECTL].advice
    assert "pinned" not in advice, advice
    assert advice.endswith(" (a kubectl from v1.34 to v1.36), and put it before /usr/bin/kubectl on your PATH, or in its place")


def test_a_warning_with_no_sha256_pinned_speaks_of_no_pinned_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(install, "PINS", {**install.PINS, KUBECTL: {}})
    advice = checked(with_kubectl("v1.30.0"))[KUBECTL].advice
    assert "puts the pinned one first" not in advice, advice
    assert advice.startswith(f"install kubectl {CLUSTER} by hand")


def pinned_installed(home: Path, shell_path: str, *elsewhere: str) -> FakeMachine:
    """The pinned kubectl installed in blueprint's folder under `home`; the shell's PATH `shell_path`,
    which holds a kubectl at each of `elsewhere`."""
    installed = home / ".local/share/blueprint/bin/kubectl"
    installed.parent.mkdir(parents=True)
    installed.write_text("#!/bin/sh\n")
    installed.chmod(0o755)
    machine = FakeMachine(home_dir=home, env={"PATH": shell_path}, tools={}, paths=set(elsewhere))
    assert tools_on_path(machine.env, home)  # as the doctor starts
    return machine


def test_the_pinned_kubectl_behind_another_on_the_shells_path_is_a_warning_naming_both(tmp_path: Path) -> None:
    """blueprint finds its own first; the user's shell (Homebrew's first) does not, until `blueprint env` is evaled."""
    machine = pinned_installed(tmp_path, "/opt/homebrew/bin:/usr/bin", "/opt/homebrew/bin/kubectl")
    check = checked(machine)[KUBECTL]
    pinned = tmp_path / ".local/share/blueprint/bin/kubectl"
    assert check.found == f"{CLUSTER} at {pinned}, first on blueprint's PATH; your shell's PATH finds /opt/homebrew/bin/kubectl first"
    assert check.advice.startswith(f'`eval "$(uv run blueprint env)"` puts {pinned} first in your shell')


def test_the_pinned_kubectl_first_on_the_shells_path_too_passes(tmp_path: Path) -> None:
    tools = tmp_path / ".local/share/blueprint/bin"
    machine = pinned_installed(tmp_path, f"{tools}:/opt/homebrew/bin:/usr/bin", "/opt/homebrew/bin/kubectl")
    assert (checked(machine)[KUBECTL].found, checked(machine)[KUBECTL].advice) == (CLUSTER, "")


def test_the_pinned_kubectl_alone_on_the_machine_passes(tmp_path: Path) -> None:
    assert checked(pinned_installed(tmp_path, "/usr/bin"))[KUBECTL].advice == ""
