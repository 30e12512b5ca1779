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

from apps_manifest import ManifestError, load_manifest
from git_trust import git_refusal
from tests.apps_copy import copy_apps
from tests.cli.doctor.fakes import FakeMachine, run_doctor

FIX = "git config --global --add safe.directory"


def checkout(folder: Path) -> Path:
    """`folder` made a git checkout, its apps/ as the real one's (the files each project pushes)."""
    copy_apps(folder / "apps")
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


def planted(folder: Path) -> Path:
    """`folder` made someone else's repository (a .git planted in a shared folder, CVE-2022-24765's own
    case), whose core.fsmonitor would run, as whoever runs git in it, a script that leaves a mark."""
    subprocess.run(["git", "init", "-q", str(folder)], check=True, env=os.environ | {"GIT_CONFIG_GLOBAL": os.devnull})
    (folder / "mark.sh").write_text(f"#!/bin/sh\ntouch '{folder}/RAN'\n")
    (folder / "mark.sh").chmod(0o755)
    subprocess.run(["git", "-C", str(folder), "config", "core.fsmonitor", str(folder / "mark.sh")], check=True)
    return folder / "RAN"


def unpacked(folder: Path) -> Path:
    """The project unpacked from a tarball at `folder`: apps/ as a checkout's, but no .git of its own."""
    checkout(folder)
    shutil.rmtree(folder / ".git")
    return folder / "apps"


def test_a_repository_above_a_project_without_its_own_is_never_offered_to_trust(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Trusting it (`safe.directory`) would let its core.fsmonitor run as the user at the next `git ls-files`."""
    planted(tmp_path)
    apps = unpacked(tmp_path / "blueprint-0.1.0")
    monkeypatch.setenv("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    refusal = git_refusal(apps)
    assert refusal is None or "safe.directory" not in refusal, refusal


def test_git_never_reads_a_repository_above_the_project_even_one_the_user_trusts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """GIT_CEILING_DIRECTORIES at the project folder's parent: with a `safe.directory = *` of the user's,
    git would otherwise run the planted repository's core.fsmonitor; the project is listed without git."""
    ran = planted(tmp_path)
    apps = unpacked(tmp_path / "blueprint-0.1.0")
    (tmp_path / "gitconfig").write_text("[safe]\n\tdirectory = *\n")
    monkeypatch.setenv("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    assert [project.name for project in load_manifest(apps / "apps_manifest.yaml")][0] == "shared-code"
    assert not ran.exists()


def test_a_refused_repository_that_is_not_the_project_folder_is_not_offered_to_trust(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An apps/.git in a project without its own: someone else's, the user is told to remove it, not trust it."""
    apps = unpacked(tmp_path / "blueprint-0.1.0")
    subprocess.run(["git", "init", "-q", str(apps)], check=True, env=os.environ | {"GIT_CONFIG_GLOBAL": os.devnull})
    monkeypatch.setenv("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    (problem,) = manifest_problems(tmp_path / "blueprint-0.1.0")
    assert FIX not in problem
    assert f"git refuses the repository at {apps}, which holds apps/ but is not this project's folder" in problem
    assert f"remove {apps / '.git'} if it should not be there, or move the project out of it; do not add it to safe.directory" in problem


def test_the_refusal_names_who_owns_the_repositorys_git_folder(other_users: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The .git is what git runs the config of: its owner, not only the folder's, is the one to trust or not."""
    monkeypatch.setattr("os.getuid", lambda: 4242)  # as if another user ran it
    (problem,) = manifest_problems(other_users)
    assert f"{other_users}: {other_users / '.git'} belongs to " in problem
    assert "and you are uid 4242" in problem


OLDER_GIT = """#!/bin/sh
# git 2.35.2 to 2.35.3, 2.36.0 to 2.36.1, 2.37.0, and the backports 2.30.3 to 2.34.3, in a checkout another user owns
printf "fatal: unsafe repository ('%s' is owned by someone else)\\n" '{where}' >&2
printf "To add an exception for this directory, call:\\n\\n\\tgit config --global --add safe.directory %s\\n" '{where}' >&2
exit 128
"""


def test_older_gits_refusal_is_one_problem_with_the_fix_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = checkout(tmp_path / "blue print")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "git").write_text(OLDER_GIT.format(where=folder))
    (tmp_path / "bin" / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    (problem,) = manifest_problems(folder)
    assert problem.startswith(f"apps/apps_manifest.yaml: git refuses to read this checkout, {folder}: ")
    assert f"`{FIX} '{folder}'`" in problem


def test_no_git_in_a_checkout_is_one_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = checkout(tmp_path / "mine")
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools-here"))
    (problem,) = manifest_problems(folder)
    assert problem.startswith("apps/apps_manifest.yaml: git cannot be run (No such file or directory): is it installed?, ")
    assert f"and this checkout is a git repository ({folder}/.git)" in problem


def test_without_git_a_project_in_no_repository_is_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    apps = unpacked(tmp_path / "blueprint-0.1.0")
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools-here"))
    assert [project.name for project in load_manifest(apps / "apps_manifest.yaml")][0] == "shared-code"


def test_a_git_that_does_not_answer_is_one_problem_within_its_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = checkout(tmp_path / "mine")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "git").write_text("#!/bin/sh\nexec sleep 600\n")
    (tmp_path / "bin" / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr("git_trust.ANSWER_SECONDS", 1)
    (problem,) = manifest_problems(folder)
    assert problem.startswith("apps/apps_manifest.yaml: `git rev-parse` did not answer within 1 s, and this checkout is a git repository")


def test_the_refusal_does_not_hide_the_manifests_other_problems(other_users: Path) -> None:
    """Every problem at once: only the checks of the projects' files are left out."""
    manifest = other_users / "apps" / "apps_manifest.yaml"
    manifest.write_text(manifest.read_text().replace("  - name: guestbook\n", "  - name: redis\n", 1))
    problems = manifest_problems(other_users)
    assert "git refuses to read this checkout" in problems[0]
    assert any("the name 'redis' is used twice" in problem for problem in problems[1:]), problems
