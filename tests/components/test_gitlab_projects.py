"""The apps on GitLab: projects in manifest order in the platform's group (phase2's), variables
(the deploy credential protected), the rendered CI files (valid against GitLab's CI schema), what
an edit to one file changes, and that everything GitLab's database holds follows preserveData on
destroy."""

from __future__ import annotations

import base64
import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import apps_manifest
from apps_manifest import APPS_DIR, AppProject, ProjectFiles, load_manifest
from cli.plan import plan
from components.gitlab_projects import project_files, render_ci, templates_digest
from providers.gitlab_sync import commit_actions
from tests.apps_copy import copy_apps
from tests.plans import planned, waits_for

SYNC = "pulumi-python:dynamic/gitlab:ProjectSync"
PIPELINE = "pulumi-python:dynamic/gitlab:SmokePipeline"
GROUP = "pulumi-python:dynamic/gitlab:Group"
PROJECT = "pulumi-python:dynamic/gitlab:Project"
GROUP_VARIABLE = "pulumi-python:dynamic/gitlab:GroupVariable"
PROJECT_VARIABLE = "pulumi-python:dynamic/gitlab:ProjectVariable"
IN_GITLABS_DATABASE = (GROUP, PROJECT, GROUP_VARIABLE, PROJECT_VARIABLE, "pulumi-python:dynamic/gitlab:DeployToken")


def test_the_group_is_internal() -> None:
    group = planned("phase2").one(GROUP, "apps-group")["inputs"]
    assert (group["path"], group["visibility"]) == ("blueprint-apps", "internal")


def test_the_projects_are_marked_as_the_stacks() -> None:
    result = planned("phase3")
    assert result.find(PROJECT)
    for resource in result.find(PROJECT):
        assert resource["inputs"]["owner"] == "blueprint/phase3", resource["urn"]


@pytest.mark.parametrize("preserve", [True, False])
def test_every_object_in_gitlabs_database_is_retained_with_preserve_data(preserve: bool) -> None:
    """phase3 takes the flag from phase2, which takes it from phase1's config."""
    result = planned("phase3", preserveData=str(preserve).lower())
    kept = [r for r in result.resources if r["type"] in IN_GITLABS_DATABASE]
    assert len(kept) == 4 + 2 + 5 + 1  # projects, group variables, project variables, deploy token (the group is phase2's)
    for resource in kept:
        assert resource["retainOnDelete"] is preserve, resource["urn"]


def test_gitlab_is_called_with_the_admin_token_kept_secret() -> None:
    for resource in planned("phase3").resources:
        if resource["type"].startswith("pulumi-python:dynamic/gitlab:"):
            assert resource["inputs"]["token"] == "[secret]", resource["urn"]


def test_projects_are_created_in_manifest_order() -> None:
    result = planned("phase3")
    names = [project.name for project in load_manifest()]
    urns = [result.one(PROJECT, f"apps-{name}")["urn"] for name in names]
    for before, after in zip(urns, urns[1:], strict=False):
        assert before in next(r for r in result.resources if r["urn"] == after)["dependsOn"]


def test_the_deploy_credential_is_a_secret_file_variable_of_the_group() -> None:
    variable = planned("phase3").one(GROUP_VARIABLE, "apps-deploy-kubeconfig")
    inputs = variable["inputs"]
    assert (inputs["key"], inputs["variable_type"], inputs["value"]) == ("DEPLOY_KUBECONFIG", "file", "[secret]")
    assert variable["additionalSecretOutputs"] == ["value"]
    assert inputs["parent"] == planned("phase2").outputs["appsGroupId"]["value"]


def test_the_deploy_kubeconfig_variable_is_protected() -> None:
    """GitLab hands a protected variable only to jobs of protected refs: the default branch, which
    each project protects, and from which alone the pipeline deploys."""
    assert planned("phase3").one(GROUP_VARIABLE, "apps-deploy-kubeconfig")["inputs"]["protected"] is True


def test_the_group_variables_are_checked_against_the_groups_mark() -> None:
    for variable in planned("phase3").find(GROUP_VARIABLE):
        assert (variable["inputs"]["parent_owner"], variable["inputs"]["owner"]) == ("blueprint/phase2", "blueprint/phase3"), variable[
            "urn"
        ]


def test_only_the_default_branch_deploys() -> None:
    """The deploy job is the one that reads DEPLOY_KUBECONFIG; it runs on the default branch alone."""
    pipeline = yaml.safe_load((APPS_DIR / "shared-code" / "templates" / "pipeline.yml").read_text())
    assert pipeline["deploy"]["rules"] == [{"if": "$CI_HELM_CHART_DIR && $CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH"}]
    readers = [name for name, job in pipeline.items() if isinstance(job, dict) and "DEPLOY_KUBECONFIG" in str(job)]
    assert readers == ["deploy"]


def test_each_project_gets_its_chart_and_image_variables() -> None:
    result = planned("phase3")
    chart = result.one(PROJECT_VARIABLE, "apps-guestbook-ci-helm-chart-dir")["inputs"]
    assert (chart["key"], chart["value"]) == ("CI_HELM_CHART_DIR", "chart")
    image = result.one(PROJECT_VARIABLE, "apps-guestbook-ci-registry-image")["inputs"]
    assert image["value"] == "registry.local.example.net/blueprint-apps/guestbook"


def test_a_building_project_gets_the_deploy_token_gitlab_hands_to_its_jobs() -> None:
    token = planned("phase3").one("pulumi-python:dynamic/gitlab:DeployToken", "apps-guestbook-deploy-token")["inputs"]
    assert (token["name"], token["scopes"]) == ("gitlab-deploy-token", ["read_registry"])


def test_each_smoke_pipeline_knows_the_runner_it_waits_for() -> None:
    result = planned("phase3")
    for pipeline in result.find(PIPELINE):
        assert pipeline["inputs"]["runner"] == planned("phase2").outputs["runnerId"]["value"], pipeline["urn"]


def test_every_smoke_pipeline_waits_for_both_runners() -> None:
    """A deploying project's pipeline builds its image on the image-build runner and runs the rest on the default one."""
    result = planned("dev")
    charts = [result.one("kubernetes:helm.sh/v3:Release", f"{runner}-chart")["urn"] for runner in ("runner", "image-build-runner")]
    assert result.find(PIPELINE)
    for pipeline in result.find(PIPELINE):
        assert set(charts) <= waits_for(result, pipeline["urn"]), pipeline["urn"]


def test_the_plan_shows_each_projects_rendered_ci_file() -> None:
    files = planned("phase3").one(SYNC, "apps-guestbook-sync")["inputs"]["files"]
    assert files[".gitlab-ci.yml"] == render_ci(next(p for p in load_manifest() if p.name == "guestbook"))
    assert "blueprint-apps/shared-code" in files[".gitlab-ci.yml"]


def test_a_project_holds_exactly_its_folder_and_its_ci_file() -> None:
    """Every file git tracks there, and nothing git ignores (whatever else a checkout holds there)."""
    guestbook = next(p for p in load_manifest() if p.name == "guestbook")
    listed = subprocess.run(["git", "ls-files", "-z", "--", "."], cwd=guestbook.folder, capture_output=True, check=True).stdout
    tracked = {name for name in listed.decode().split("\0") if name}
    pushed = set(project_files(guestbook)) - {".gitlab-ci.yml"}
    assert tracked <= pushed
    ignored = subprocess.run(["git", "check-ignore", "--", *pushed], cwd=guestbook.folder, capture_output=True, text=True, check=False)
    assert ignored.stdout == "", "a file git ignores is pushed"


def test_a_binary_file_in_an_app_folder_is_synced_as_one_base64_action_of_its_exact_bytes(tmp_path: Path) -> None:
    image = b"\x89PNG\r\n\x1a\n\x00\xff\xd8 not UTF-8"
    (tmp_path / "static").mkdir()
    (tmp_path / "static" / "logo.png").write_bytes(image)
    (tmp_path / "app.py").write_text("print()\n")
    project = dataclasses.replace(next(p for p in load_manifest() if p.name == "guestbook"), folder=tmp_path)
    actions = [a for a in commit_actions(project_files(project), {}) if a["file_path"] == "static/logo.png"]
    assert [(a["action"], a["encoding"], base64.b64decode(a["content"], validate=True)) for a in actions] == [("create", "base64", image)]


def test_an_app_text_file_stays_a_plain_string_byte_for_byte(tmp_path: Path) -> None:
    """A file that decodes as UTF-8 is text: the plan shows it as it is, line endings included."""
    (tmp_path / "notes.txt").write_bytes("café\r\nline two\n".encode())
    project = dataclasses.replace(next(p for p in load_manifest() if p.name == "guestbook"), folder=tmp_path)
    assert project_files(project)["notes.txt"] == "café\r\nline two\n"


def test_the_plan_carries_todays_app_files_as_plain_strings() -> None:
    """Today's apps hold text files only: their plan is what it was before binary files could sync."""
    for sync in planned("phase3").find(SYNC):
        assert all(isinstance(content, str) for content in sync["inputs"]["files"].values()), sync["urn"]


def test_a_deploying_project_waits_for_what_it_needs_before_its_push() -> None:
    result = planned("phase3")
    sync = result.one(SYNC, "apps-guestbook-sync")
    for need in ("redis", "redis-slave"):
        assert result.one(PIPELINE, f"apps-{need}-pipeline")["urn"] in sync["dependsOn"]
    assert result.one(SYNC, "apps-shared-code-sync")["urn"] in sync["dependsOn"]


def test_every_project_has_a_smoke_pipeline_on_its_synced_commit() -> None:
    """shared-code's own pipeline (its templates checked) is awaited like each deploying project's."""
    result = planned("phase3")
    names = [project.name for project in load_manifest()]
    assert {r["name"] for r in result.find(PIPELINE)} == {f"apps-{name}-pipeline" for name in names}
    for name in names:
        pipeline = result.one(PIPELINE, f"apps-{name}-pipeline")
        assert result.one(SYNC, f"apps-{name}-sync")["urn"] in pipeline["dependsOn"], name
        assert pipeline["inputs"]["timeout_seconds"] == 600
    assert set(result.outputs["pipelines"]["value"]) == set(names)


def test_shared_codes_pipeline_runs_on_every_push_to_its_branch() -> None:
    """What the awaited pipeline rests on: shared-code's CI file includes its own pipeline, whose jobs
    carry no rules, `only`, `except` or `when` and which has no `workflow` (a push makes a pipeline
    with every such job), and none of which waits for a person or needs the image-build runner's tag."""
    shared_code = next(p for p in load_manifest() if p.name == "shared-code")
    assert yaml.safe_load(render_ci(shared_code))["include"] == [{"local": "templates/shared-code.yml"}]
    document = yaml.safe_load((APPS_DIR / "shared-code" / "templates" / "shared-code.yml").read_text())
    assert "workflow" not in document
    jobs = {name: job for name, job in document.items() if isinstance(job, dict) and "script" in job}
    assert jobs
    for name, job in jobs.items():
        assert not {"rules", "only", "except", "when", "tags"} & set(job), name


def check_ci_schema(paths: list[Path]) -> subprocess.CompletedProcess[str]:
    tool = Path(sys.executable).parent / "check-jsonschema"
    return subprocess.run(
        [str(tool), "--builtin-schema", "vendor.gitlab-ci", *map(str, paths)], capture_output=True, text=True, check=False
    )


def test_every_rendered_ci_file_and_the_templates_are_valid_gitlab_ci(tmp_path: Path) -> None:
    paths = []
    for project in load_manifest():
        path = tmp_path / f"{project.name}.gitlab-ci.yml"
        path.write_text(render_ci(project))
        paths.append(path)
    paths += sorted((APPS_DIR / "shared-code" / "templates").glob("*.yml"))
    done = check_ci_schema(paths)
    assert done.returncode == 0, done.stdout + done.stderr


def test_editing_one_app_file_changes_at_most_its_sync_and_its_pipeline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Both plans over an apps/ of the test's own, in this process: the plan reads the apps' files anew
    # each time. Every module that holds the checkout's apps/ or manifest by name sees the copy instead.
    apps = tmp_path / "apps"
    copy_apps(apps)
    copies = {apps_manifest.APPS_DIR: apps, apps_manifest.MANIFEST: apps / "apps_manifest.yaml"}
    for module in list(sys.modules.values()):
        for name in ("APPS_DIR", "MANIFEST"):
            if isinstance(held := vars(module).get(name), Path) and held in copies:  # vars: no lazy import
                monkeypatch.setattr(module, name, copies[held])

    def inputs() -> dict[str, str]:
        return {r["name"]: json.dumps(r["inputs"], sort_keys=True) for r in plan("phase3").resources}

    before = inputs()
    app = apps / "guestbook" / "app.py"
    app.write_text(app.read_text() + "\n# an edit\n")
    after = inputs()
    changed = sorted(name for name in before if before[name] != after.get(name))
    assert changed == ["apps-guestbook-pipeline", "apps-guestbook-sync"]


def test_the_plan_harness_sees_the_real_manifest() -> None:
    assert plan("phase3").find(SYNC)


def guestbook_in(folder: Path) -> AppProject:
    return dataclasses.replace(next(p for p in load_manifest() if p.name == "guestbook"), folder=folder)


def test_a_utf8_file_holding_a_nul_byte_is_binary_as_git_sees_it(tmp_path: Path) -> None:
    """GitLab refuses a request with a NUL in any string (Gitlab::Middleware::HandleMalformedStrings)."""
    (tmp_path / "fixture.tar").write_bytes(b"README.md\x00\x00\x00hello\n")
    assert project_files(guestbook_in(tmp_path))["fixture.tar"] == {"base64": base64.b64encode(b"README.md\x00\x00\x00hello\n").decode()}


def test_what_git_ignores_and_any_git_folder_stay_home(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text(".venv/\n.env\n")
    for name in ("app.py", ".env", ".venv/bin/python", "sub/.git/config"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("url = https://user:token@example.net\n" if "config" in name else "x\n")
    assert sorted(project_files(guestbook_in(tmp_path))) == [".gitignore", ".gitlab-ci.yml", "app.py"]


def test_outside_a_git_work_tree_every_file_but_a_git_folder_is_pushed(tmp_path: Path) -> None:
    folder = tmp_path / "not-a-repository"
    for name in ("app.py", ".git/config"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("x\n")
    assert sorted(project_files(guestbook_in(folder))) == [".gitlab-ci.yml", "app.py"]


def test_a_folder_among_shared_codes_templates_is_not_read_as_a_template(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    shutil.copytree(APPS_DIR / "shared-code", tmp_path / "shared-code", symlinks=True)
    before = templates_digest()
    monkeypatch.setattr("components.gitlab_projects.APPS_DIR", tmp_path)
    (tmp_path / "shared-code" / "templates" / "drafts").mkdir()
    assert templates_digest() == before


def test_the_templates_digest_leaves_out_what_git_ignores(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An editor's swap file is not pushed: were it read, every project would get a commit and a pipeline."""
    templates = tmp_path / "shared-code" / "templates"
    templates.mkdir(parents=True)
    (templates / "pipeline.yml").write_text("x: 1\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.setattr("components.gitlab_projects.APPS_DIR", tmp_path)
    before = templates_digest()
    (tmp_path / "shared-code" / ".gitignore").write_text("*.swp\n")
    (templates / ".pipeline.yml.swp").write_bytes(b"editor state")
    assert templates_digest() == before


def test_a_file_gone_since_it_was_listed_is_not_pushed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("x\n")
    listed = ProjectFiles(paths=[tmp_path / "app.py", tmp_path / "draft.txt"], problems=[])
    monkeypatch.setattr("components.gitlab_projects.folder_files", lambda folder, shown: listed)
    assert sorted(project_files(guestbook_in(tmp_path))) == [".gitlab-ci.yml", "app.py"]
