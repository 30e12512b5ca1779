"""apps/apps_manifest.yaml: read before anything is registered; a malformed one is refused with
the entry and the fix."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from apps_manifest import FILE_CAP, SHARED_TEMPLATES, ManifestError, ProjectFiles, folder_files, load_manifest, parse_manifest
from cli.main import main
from cli.plan import ProgramFailed, _run
from stacks.config import PROJECT_DIR, ConfigError
from stacks.config.schema import stack_config


@pytest.fixture
def apps(tmp_path: Path) -> Path:
    for name in ("shared-code", "guestbook"):
        (tmp_path / name).mkdir()
    (tmp_path / "shared-code" / "templates").mkdir()
    for template in SHARED_TEMPLATES:
        (tmp_path / "shared-code" / template).write_text("stages: [test]\n")
    (tmp_path / "guestbook" / "chart").mkdir()
    (tmp_path / "guestbook" / "chart" / "Chart.yaml").write_text("name: guestbook\n")
    return tmp_path


def error_for(document: Any, apps: Path) -> str:
    with pytest.raises(ManifestError) as error:
        parse_manifest(document, apps)
    return str(error.value)


def test_the_real_manifest_lists_shared_code_first_then_the_apps() -> None:
    assert [project.name for project in load_manifest()] == ["shared-code", "guestbook", "redis", "redis-slave"]


def test_an_unknown_key_is_refused_naming_the_entry_and_the_valid_keys(apps: Path) -> None:
    message = error_for({"projects": [{"name": "shared-code"}, {"name": "guestbook", "deploys": True}]}, apps)
    assert "projects[1] ('guestbook'): unknown key(s) deploys" in message
    assert "valid keys are" in message


def test_a_duplicate_name_is_refused(apps: Path) -> None:
    assert "the name 'shared-code' is used twice" in error_for({"projects": [{"name": "shared-code"}, {"name": "shared-code"}]}, apps)


def test_shared_code_must_come_first(apps: Path) -> None:
    message = error_for({"projects": [{"name": "guestbook"}, {"name": "shared-code"}]}, apps)
    assert "'shared-code' must come first" in message


def test_a_missing_app_folder_is_refused_with_the_fix(apps: Path) -> None:
    message = error_for({"projects": [{"name": "shared-code"}, {"name": "ghost"}]}, apps)
    assert "apps/ghost/ does not exist; create it or remove the entry" in message


def test_a_deploying_project_needs_its_chart(apps: Path) -> None:
    message = error_for({"projects": [{"name": "shared-code"}, {"name": "guestbook", "deploy": True, "chart": "helm"}]}, apps)
    assert "deploys, so `chart` ('helm') holds no Chart.yaml" in message


def test_needs_must_name_another_deploying_project(apps: Path) -> None:
    document = {"projects": [{"name": "shared-code"}, {"name": "guestbook", "deploy": True, "chart": "chart", "needs": ["redis"]}]}
    assert "'guestbook' needs 'redis', which is not another deploying project" in error_for(document, apps)


def test_a_malformed_manifest_stops_the_program_before_any_resource(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bad = tmp_path / "apps_manifest.yaml"
    bad.write_text("projects:\n  - name: guestbook\n")
    monkeypatch.setattr("apps_manifest.MANIFEST", bad)
    config, secret_keys = stack_config("dev")
    with pytest.raises(ProgramFailed) as failed:
        _run("dev", config, secret_keys, PROJECT_DIR / "__main__.py", {})
    assert isinstance(failed.value.cause, ConfigError)
    assert "'shared-code' project, whose templates every pipeline includes, is missing" in str(failed.value.cause)
    assert [r["type"] for r in failed.value.registered] == ["pulumi:pulumi:Stack"]


def test_a_link_to_a_folder_is_refused_since_the_sync_pushes_files(apps: Path) -> None:
    (apps / "shared-code" / "static").mkdir()
    (apps / "shared-code" / "assets").symlink_to("static")
    found = folder_files(apps / "shared-code", "apps/shared-code")
    assert found.problems == [
        "apps/shared-code/assets is a link to a folder, which the sync does not follow (it pushes files); "
        "copy what it should hold into the folder, or remove the link"
    ]


def test_a_loop_of_links_leads_nowhere_and_is_no_traceback(apps: Path) -> None:
    (apps / "shared-code" / "loop1").symlink_to("loop2")
    (apps / "shared-code" / "loop2").symlink_to("loop1")
    found = folder_files(apps / "shared-code", "apps/shared-code")
    assert [problem.split(" is ", 1)[1] for problem in found.problems] == [
        "a link that leads nowhere; copy what it should hold into the folder, or remove the link"
    ] * 2


def test_a_file_whose_name_is_not_utf8_is_refused(apps: Path) -> None:
    (apps / "shared-code" / os.fsdecode(b"caf\xe9.txt")).write_text("x")
    [problem] = folder_files(apps / "shared-code", "apps/shared-code").problems
    assert "its name is not UTF-8 text, which GitLab's API takes; rename it" in problem


def test_a_link_to_a_file_outside_its_project_folder_is_refused(apps: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    secret = tmp_path_factory.mktemp("elsewhere") / "id_rsa"
    secret.write_text("not for GitLab")
    (apps / "shared-code" / "key").symlink_to(secret)
    message = error_for({"projects": [{"name": "shared-code"}]}, apps)
    assert "apps/shared-code/key is a link that leads outside apps/shared-code/" in message
    assert "copy what it should hold into the folder, or remove the link" in message
    assert "not for GitLab" not in message


def test_a_link_that_stays_inside_its_project_folder_is_taken(apps: Path) -> None:
    (apps / "shared-code" / "README.md").write_text("hello\n")
    (apps / "shared-code" / "LINK.md").symlink_to("README.md")
    assert [project.name for project in parse_manifest({"projects": [{"name": "shared-code"}]}, apps)] == ["shared-code"]


def test_a_bad_manifest_is_phase3s_own_problem_not_a_phase2_that_does_not_plan(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "apps_manifest.yaml"
    bad.write_text("projects:\n  - name: guestbook\n")
    monkeypatch.setattr("apps_manifest.MANIFEST", bad)
    assert main(["plan", "phase3"]) == 1
    err = capsys.readouterr().err
    assert "\n  apps/apps_manifest.yaml: 'shared-code' must come first" in err
    assert "does not plan" not in err


def test_a_chart_at_the_root_of_its_project_is_taken(apps: Path) -> None:
    (apps / "guestbook" / "Chart.yaml").write_text("name: guestbook\n")
    document = {"projects": [{"name": "shared-code"}, {"name": "guestbook", "deploy": True, "chart": "."}]}
    assert [project.chart for project in parse_manifest(document, apps)] == [None, "."]


def test_a_file_of_a_project_that_cannot_be_read_is_refused_before_the_sync_would_stop_on_it(
    apps: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    locked = apps / "shared-code" / "locked.txt"
    locked.write_text("x")
    monkeypatch.setattr("os.access", lambda path, mode: Path(path) != locked)  # root reads everything: say it cannot
    message = error_for({"projects": [{"name": "shared-code"}]}, apps)
    assert "apps/shared-code/locked.txt cannot be read; make it readable (`chmod u+r`), or remove it" in message


def fake_git(folder: Path, body: str) -> str:
    """A PATH whose `git` runs the shell `body`."""
    folder.mkdir(exist_ok=True)
    (folder / "git").write_text("#!/bin/sh\n" + body)
    (folder / "git").chmod(0o755)
    return f"{folder}:/usr/bin:/bin"


def test_what_git_ignores_is_not_checked_either(tmp_path: Path) -> None:
    """A `.venv` stays home, links and all: refusing its links would refuse every app with a virtualenv."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text(".venv/\n")
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").symlink_to("/usr/bin/python3")
    (tmp_path / "app.py").write_text("x\n")
    assert folder_files(tmp_path, "apps/app") == ProjectFiles(paths=[tmp_path / ".gitignore", tmp_path / "app.py"], problems=[])


def test_a_git_that_fails_in_a_work_tree_pushes_nothing_and_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without git's word, what .gitignore keeps home (a .env) cannot be told apart."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".env").write_text("DB_PASSWORD=hunter2\n")
    monkeypatch.setenv("PATH", fake_git(tmp_path / "bin", "echo 'fatal: detected dubious ownership in repository' >&2; exit 128\n"))
    found = folder_files(tmp_path, "apps/app")
    assert found.paths == []
    assert found.problems == [
        "apps/app/: git cannot list the files to push (fatal: detected dubious ownership in repository); "
        "fix that (is git installed? does it trust this checkout?)"
    ]


def test_without_git_outside_a_work_tree_every_file_is_pushed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "app"
    folder.mkdir()
    (folder / "app.py").write_text("x\n")
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools-here"))
    assert folder_files(folder, "apps/app") == ProjectFiles(paths=[folder / "app.py"], problems=[])


def test_a_template_every_pipeline_includes_must_be_among_shared_codes_files(apps: Path) -> None:
    (apps / "shared-code" / "templates" / "pipeline.yml").unlink()
    message = error_for({"projects": [{"name": "shared-code"}]}, apps)
    assert "every pipeline includes templates/pipeline.yml, which is not among its files pushed; put it back" in message


def test_a_chart_that_gitignore_keeps_home_is_refused_since_the_pipeline_would_not_find_it(apps: Path) -> None:
    subprocess.run(["git", "init", "-q", str(apps)], check=True)
    (apps / "guestbook" / ".gitignore").write_text("chart/\n")
    document = {"projects": [{"name": "shared-code"}, {"name": "guestbook", "deploy": True, "chart": "chart"}]}
    assert "holds no Chart.yaml among the files pushed (none there, or one .gitignore keeps home)" in error_for(document, apps)


def test_git_is_read_in_english_whatever_the_users_language(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside a work tree git says so, and only in English does the check know it."""
    folder = tmp_path / "app"
    folder.mkdir()
    (folder / "app.py").write_text("x\n")
    german = 'echo "Schwerwiegend: Kein Git-Repository" >&2'
    speaks = f'if [ "$LC_ALL" = C ]; then echo "fatal: not a git repository" >&2; else {german}; fi; exit 128\n'
    monkeypatch.setenv("PATH", fake_git(tmp_path / "bin", speaks))
    monkeypatch.setenv("LANGUAGE", "de")
    assert folder_files(folder, "apps/app") == ProjectFiles(paths=[folder / "app.py"], problems=[])


def test_a_key_written_out_overrides_a_merged_one_as_go_yaml_takes_it(tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text("- &redis\n  name: redis\n  deploy: true\n- <<: *redis\n  name: redis-slave\n")
    from yaml_files import load_file

    assert load_file(manifest) == [{"name": "redis", "deploy": True}, {"name": "redis-slave", "deploy": True}]


def test_a_file_name_with_a_control_character_is_refused_as_git_lists_it(tmp_path: Path) -> None:
    """git commits a name with a newline in it (`ls-files -z` lists it whole); the refusal shows it escaped."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "notes\n.txt").write_text("x\n")
    (tmp_path / "app.py").write_text("x\n")
    assert folder_files(tmp_path, "apps/app").problems == [
        "apps/app/'notes\\n.txt': its name holds a control, line-breaking or invisible formatting character ('\\n'); rename it"
    ]


def test_a_file_over_the_cap_is_refused_by_its_size_without_being_read(apps: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = apps / "guestbook" / "video.bin"
    big.touch()
    os.truncate(big, 30 * FILE_CAP)  # sparse: 60 MiB that take no room
    monkeypatch.setattr(Path, "open", lambda *args, **kwargs: pytest.fail("a file was opened"))
    [problem, _total] = folder_files(apps / "guestbook", "apps/guestbook").problems
    assert problem.startswith("apps/guestbook/video.bin is 60 MiB, over the cap of 2 MiB a file")


def test_a_file_of_the_cap_exactly_is_taken(apps: Path) -> None:
    (apps / "guestbook" / "logo.png").touch()
    os.truncate(apps / "guestbook" / "logo.png", FILE_CAP)
    assert folder_files(apps / "guestbook", "apps/guestbook").problems == []


def test_files_under_the_cap_each_but_over_the_projects_together_are_refused_naming_the_biggest(apps: Path) -> None:
    for index, size in enumerate((FILE_CAP, FILE_CAP, FILE_CAP, FILE_CAP, 100 * 1024)):
        (apps / "guestbook" / f"part-{index}").touch()
        os.truncate(apps / "guestbook" / f"part-{index}", size)
    [problem] = folder_files(apps / "guestbook", "apps/guestbook").problems
    assert problem.startswith("apps/guestbook: its files come to 8.1 MiB, over the cap of 8 MiB a project")
    assert "the biggest: part-0 (2 MiB), part-1 (2 MiB), part-2 (2 MiB)" in problem


def sparse(path: Path, size: int) -> Path:
    """A file of `size` bytes at `path` that takes no room."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    os.truncate(path, size)
    return path


def commit_all(folder: Path) -> None:
    for command in (["init", "-q"], ["add", "."], ["-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(folder), *command], check=True, capture_output=True)


def test_the_projects_total_counts_the_files_over_the_cap_too(tmp_path: Path) -> None:
    """A node_modules/ left without a .gitignore: its biggest files are its bulk."""
    for index in range(3):
        sparse(tmp_path / "node_modules" / f"big-{index}", 10 * FILE_CAP)
    for index in range(30):
        sparse(tmp_path / "node_modules" / f"small-{index}", 100 * 1024)
    [total] = [problem for problem in folder_files(tmp_path, "apps/app").problems if "come to" in problem]
    assert total.startswith("apps/app: its files come to 63 MiB, over the cap of 8 MiB a project"), total


def test_the_projects_total_names_its_biggest_top_level_folders(tmp_path: Path) -> None:
    for index in range(30):
        sparse(tmp_path / "node_modules" / "lib" / f"part-{index}.js", FILE_CAP // 2)
    sparse(tmp_path / "logo.png", 100 * 1024)
    [problem] = folder_files(tmp_path, "apps/app").problems
    assert "the biggest: node_modules/ (30 MiB in 30 files), logo.png (100 KiB)" in problem, problem


def test_many_files_over_the_cap_are_named_a_few_and_counted(tmp_path: Path) -> None:
    for index in range(300):
        sparse(tmp_path / "photos" / f"photo-{index:03}.jpg", FILE_CAP + 100 * 1024)
    problems = folder_files(tmp_path, "apps/app").problems
    assert len("\n".join(problems).encode()) < 5_000
    assert "apps/app: and 295 more files over the cap of 2 MiB a file (618.9 MiB together; 295 in photos/)" in problems[5]


def test_a_committed_file_over_the_cap_is_told_to_be_untracked_too(tmp_path: Path) -> None:
    """.gitignore alone keeps nothing git has committed out of the files pushed."""
    sparse(tmp_path / "shot.png", 2 * FILE_CAP)
    commit_all(tmp_path)
    [problem] = folder_files(tmp_path, "apps/app").problems
    assert "list apps/app/shot.png in a .gitignore and untrack it (`git rm -r --cached -- apps/app/shot.png`)" in problem


def test_an_untracked_file_over_the_cap_is_told_to_go_in_a_gitignore(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    sparse(tmp_path / "shot.png", 2 * FILE_CAP)
    [problem] = folder_files(tmp_path, "apps/app").problems
    assert "; list apps/app/shot.png in a .gitignore, or fetch what is bigger when the image is built" in problem


def test_outside_a_git_checkout_a_file_over_the_cap_is_told_to_be_removed_not_ignored(tmp_path: Path) -> None:
    """A tarball's apps/: no .gitignore is read there."""
    folder = tmp_path / "app"
    sparse(folder / "shot.png", 2 * FILE_CAP)
    [problem] = folder_files(folder, "apps/app").problems
    assert "; remove apps/app/shot.png from apps/app/ (outside a git checkout every file is pushed: no .gitignore is read)" in problem
    assert ".gitignore," not in problem


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\u202e", "\u2066", "\u200f"])
def test_a_line_separator_or_a_bidi_control_in_a_name_is_refused(tmp_path: Path, char: str) -> None:
    (tmp_path / f"a{char}b.txt").write_text("x\n")
    assert folder_files(tmp_path, "apps/app").problems == [
        f"apps/app/{f'a{char}b.txt'!r}: its name holds a control, line-breaking or invisible formatting character ({char!r}); rename it"
    ]


def test_a_file_in_a_folder_without_search_permission_is_a_problem_not_a_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    locked = tmp_path / "secret" / "key.txt"
    locked.parent.mkdir()
    locked.write_text("x")
    commit_all(tmp_path)
    real = Path.is_symlink

    def is_symlink(path: Path) -> bool:  # root searches every folder: say it cannot, as a user's `chmod a-x secret` would
        if path == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(Path, "is_symlink", is_symlink)
    assert folder_files(tmp_path, "apps/app").problems == [
        "apps/app/secret/key.txt cannot be read (Permission denied); make it and its folders readable (`chmod u+rx`), or remove it"
    ]


def test_a_folder_git_cannot_open_is_a_problem_not_left_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """git only warns of it (exit 0), and lists the rest: its files would be missing from the project."""
    listing = "printf 'H app.py\\0'; echo \"warning: could not open directory 'secret/': Permission denied\" >&2\n"
    monkeypatch.setenv("PATH", fake_git(tmp_path / "bin", listing))
    (tmp_path / "app.py").write_text("x\n")
    assert folder_files(tmp_path, "apps/app").problems == [
        "apps/app/: a folder in it cannot be read (git: could not open directory 'secret/': Permission denied); "
        "make it readable (`chmod u+rx`), or remove it"
    ]


def test_a_file_gone_since_it_was_listed_is_left_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "app.py").write_text("x\n")
    gone = tmp_path / "draft.txt"
    gone.write_text("x\n")
    real = Path.is_file

    def is_file(path: Path) -> bool:  # an editor removes its draft right after the check saw it
        found = real(path)
        if path == gone:
            path.unlink(missing_ok=True)
        return found

    monkeypatch.setattr(Path, "is_file", is_file)
    assert folder_files(tmp_path, "apps/app") == ProjectFiles(paths=[tmp_path / "app.py"], problems=[])


@pytest.fixture
def big_file_in_apps(apps: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A manifest of shared-code and a guestbook at guestbook.<domain>, whose folder holds a file over the cap."""
    guestbook = "  - name: guestbook\n    deploy: true\n    chart: chart\n    host: guestbook\n"
    (apps / "apps_manifest.yaml").write_text(f"projects:\n  - name: shared-code\n{guestbook}")
    sparse(apps / "guestbook" / "video.bin", 10 * FILE_CAP)
    monkeypatch.setattr("apps_manifest.MANIFEST", apps / "apps_manifest.yaml")
    return apps


def test_phase2_which_reads_only_the_apps_names_is_not_refused_for_their_files(big_file_in_apps: Path) -> None:
    from stacks.validation import check_stack_files

    assert check_stack_files(["phase2"]) is None


def test_phase3_which_pushes_the_apps_files_is_refused_for_them(big_file_in_apps: Path) -> None:
    from stacks.validation import check_stack_files

    assert "apps/guestbook/video.bin is 20 MiB, over the cap of 2 MiB a file" in (check_stack_files(["phase2", "phase3"]) or "")


def test_the_commands_that_need_the_apps_names_read_them_past_a_big_file(big_file_in_apps: Path) -> None:
    """`blueprint secrets` (which apps build), `status` (the smoke pipelines' tally), the doctor's host names."""
    from cli import report, secrets
    from cli.doctor import platform_names

    assert secrets.catalogue()[1] is None
    assert report.pipeline_tally({"pipelines": {}}) is not None
    assert "not tallied" not in (report.pipeline_tally({"pipelines": {}}) or "")
    assert platform_names("example.test")[-1] == "guestbook.example.test"
