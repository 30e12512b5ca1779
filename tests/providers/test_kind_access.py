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
