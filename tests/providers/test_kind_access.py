"""The cluster's admin kubeconfig reaches `kubectl` and is left nowhere: not after the `with`, and
not when the process is killed inside it (no `finally` runs then)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from providers import kind_access
from tests.plans import fake_command

ADMIN = "apiVersion: v1\nkind: Config\nusers:\n- name: kind-blueprint\n  user:\n    client-key-data: QURNSU4tS0VZ\n"

HOLDER = """
import sys
from pathlib import Path
from providers.kind_access import admin_kubeconfig

with admin_kubeconfig("blueprint") as path:
    # Written whole, then renamed: the parent sees the file only once it holds everything.
    Path(sys.argv[1] + ".part").write_text(Path(path).read_text())
    Path(sys.argv[1] + ".part").rename(sys.argv[1])
    input()  # until killed
"""


@pytest.fixture
def kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `kind` that prints the admin kubeconfig, first on PATH; the temporary folder is the test's own."""
    fake_command(tmp_path / "bin", "kind", f"cat <<'EOF'\n{ADMIN}EOF\n")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setenv("TMPDIR", str(temporary))
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))  # the module kind_access reads it from
    return temporary


def left_in(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())


def test_the_kubeconfig_is_readable_inside_the_block_and_gone_after_it(kind: Path) -> None:
    with kind_access.admin_kubeconfig("blueprint") as path:
        assert Path(path).read_text() == ADMIN
        assert Path(path).read_text() == ADMIN  # read again from the start, as kubectl may
    assert not Path(path).exists()
    assert left_in(kind) == []


def test_a_run_killed_while_it_holds_the_kubeconfig_leaves_no_kubeconfig_behind(kind: Path, tmp_path: Path) -> None:
    """A provider killed mid-call (SIGKILL from the engine's cancel, an OOM kill): no admin credential stays in /tmp."""
    seen = tmp_path / "seen"
    environment = {**os.environ, "PYTHONPATH": str(Path.cwd())}
    with subprocess.Popen([sys.executable, "-c", HOLDER, str(seen)], stdin=subprocess.PIPE, env=environment) as holder:
        try:
            deadline = time.monotonic() + 60  # the child's start, however busy the machine
            while not seen.exists() and holder.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert seen.exists(), "the child never held the kubeconfig"
        finally:
            holder.send_signal(signal.SIGKILL)
            holder.wait(timeout=60)
    assert seen.read_text() == ADMIN
    assert left_in(kind) == []


def test_without_memory_files_a_killed_runs_kubeconfig_is_removed_by_the_next_use(kind: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """macOS has no memfd_create: the file is private, named after its process, and gone at the next use."""
    monkeypatch.delattr(os, "memfd_create")
    folder = kind_access.private_folder()
    (folder / f"kubeconfig-{2**22 + 7}-x").write_text(ADMIN)  # above Linux's largest pid_max: no such process
    with kind_access.admin_kubeconfig("blueprint") as path:
        assert Path(path).read_text() == ADMIN
        assert oct(Path(path).stat().st_mode & 0o777) == "0o600"
        assert left_in(folder) == [Path(path).name]
    assert left_in(kind) == []


KIND_PROVIDERS = (
    ("pulumi-python:dynamic/blueprint:DeployKubeconfig", "ci-access-kubeconfig"),
    ("pulumi-python:dynamic/openbao:Init", "openbao-init"),
    ("pulumi-python:dynamic/gitlab:AdminToken", "gitlab-admin-token"),
)
"""phase2's resources whose providers ask kind for the admin kubeconfig (deploy kubeconfig, OpenBao's
rollout, GitLab's token seeding)."""

SAYS_PROVIDER = 'echo "provider=${KIND_EXPERIMENTAL_PROVIDER:-detect}" >&2; exit 1\n'


def _provider_kind_was_told(props: dict[str, object]) -> str:
    """What KIND_EXPERIMENTAL_PROVIDER the `kind` run for `props` saw ("detect": none)."""
    with pytest.raises(kind_access.KindAccessError) as failed, kind_access.cluster_kubeconfig(props):
        pass
    return failed.value.said.removeprefix("provider=")


@pytest.mark.parametrize(("type_", "name"), KIND_PROVIDERS, ids=[name for _, name in KIND_PROVIDERS])
def test_on_podman_the_providers_ask_kind_on_podman_whatever_the_shell_says(
    type_: str, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With Docker installed too, a kind left to detect finds Docker first and no such cluster."""
    from tests.plans import planned

    props = planned("phase2", containerEngine="podman").one(type_, name)["inputs"]
    fake_command(tmp_path / "bin", "kind", SAYS_PROVIDER)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    monkeypatch.delenv("KIND_EXPERIMENTAL_PROVIDER", raising=False)
    assert _provider_kind_was_told(props) == "podman"
    monkeypatch.setenv("KIND_EXPERIMENTAL_PROVIDER", "docker")
    assert _provider_kind_was_told(props) == "podman"


@pytest.mark.parametrize(("type_", "name"), KIND_PROVIDERS, ids=[name for _, name in KIND_PROVIDERS])
def test_on_docker_the_providers_inputs_name_no_engine_and_kind_is_not_sent_elsewhere(
    type_: str, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Docker's plan is as it was (no engine among the inputs), and a Podman user's exported variable does
    not send kind to Podman for a platform on Docker."""
    from tests.plans import planned

    props = planned("phase2").one(type_, name)["inputs"]
    assert not any("docker" in str(value) or "podman" in str(value) for key, value in props.items() if key != "script")
    fake_command(tmp_path / "bin", "kind", SAYS_PROVIDER)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setenv("KIND_EXPERIMENTAL_PROVIDER", "podman")
    assert _provider_kind_was_told(props) == "detect"
