"""A checkout git refuses as another user's ("detected dubious ownership", git setup.c
`die_upon_dubious_ownership`) is one problem with git's own `safe.directory` fix, not a problem for
every check of the apps' files that git's refusal fails.

The refusal is real git's: GIT_TEST_ASSUME_DIFFERENT_OWNER=1 makes git take every repository as
another user's (git-compat-util.h `is_path_owned_by_current_uid`; git's own t/t0033-safe-directory.sh
runs so), which needs no second user; no global or system config, so no `safe.directory` of the
machine's lets it through.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from apps_manifest import APPS_DIR, ManifestError, folder_files, load_manifest
from git_trust import git_refusal
from tests.cli.doctor.fakes import FakeMachine, run_doctor

FIX = "git config --global --add safe.directory"


def checkout(folder: Path) -> Path:
    """`folder` made a git checkout, its apps/ as the real one's (the files each project pushes)."""
    apps = folder / "apps"
    apps.mkdir(parents=True)
    shutil.copy2(APPS_DIR / "apps_manifest.yaml", apps / "apps_manifest.yaml")
    for project in load_manifest():
        for path in folder_files(project.folder, project.name).paths:
            target = apps / project.name / path.relative_to(project.folder)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
    subprocess.run(["git", "init", "-q", str(folder)], check=True, env=os.environ | {"GIT_CONFIG_GLOBAL": os.devnull})
    return folder


@pytest.fixture
def other_users(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout git takes as another user's."""
    folder = checkout(tmp_path / "blue print")  # a space: git's fix quotes the path for the shell
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1")
    return folder


def manifest_problems(folder: Path) -> list[str]:
    with pytest.raises(ManifestError) as error:
        load_manifest(folder / "apps" / "apps_manifest.yaml")
    return str(error.value).removeprefix("invalid apps manifest:\n  ").split("\n  ")


def test_git_refuses_the_checkout_of_these_tests(other_users: Path) -> None:
    """The premise: real git refuses it, in its own words."""
    done = subprocess.run(
        ["git", "-C", str(other_users), "status"], capture_output=True, text=True, check=False, env=os.environ | {"LC_ALL": "C"}
    )
    assert (done.returncode, f"fatal: detected dubious ownership in repository at '{other_users}'") == (128, done.stderr.splitlines()[0])


def test_a_checkout_git_refuses_is_one_problem_whatever_the_projects(other_users: Path) -> None:
    assert len(manifest_problems(other_users)) == 1


def test_the_refusal_gives_gits_own_safe_directory_fix_for_the_checkout(other_users: Path) -> None:
    (problem,) = manifest_problems(other_users)
    assert problem.startswith(f"apps/apps_manifest.yaml: git refuses to read this checkout, {other_users}: ")
    assert f"`{FIX} '{other_users}'`" in problem
    assert '"detected dubious ownership"' in problem


def test_a_checkout_git_reads_is_no_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = checkout(tmp_path / "mine")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    assert git_refusal(folder / "apps") is None
    assert [project.name for project in load_manifest(folder / "apps" / "apps_manifest.yaml")][0] == "shared-code"


def test_a_folder_in_no_checkout_is_no_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tarball of the project, say: git has nothing to refuse."""
    monkeypatch.setenv("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    assert git_refusal(tmp_path) is None


def test_without_git_there_is_no_refusal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools-here"))
    assert git_refusal(tmp_path) is None


def test_the_doctor_says_it_once_with_the_fix(other_users: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("apps_manifest.MANIFEST", other_users / "apps" / "apps_manifest.yaml")
    out = io.StringIO()
    code = run_doctor([], machine=FakeMachine(), out=out)
    output = out.getvalue()
    assert output.count(FIX) == 1, output
    assert "1 problem in what blueprint reads" in output
    assert code == 1
