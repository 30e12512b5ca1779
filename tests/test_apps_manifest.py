"""apps/apps_manifest.yaml: read before anything is registered; a malformed one is refused with
the entry and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from apps_manifest import ManifestError, load_manifest, parse_manifest
from cli.plan import ProgramFailed, _run
from stacks.config import PROJECT_DIR, ConfigError, stack_config


@pytest.fixture
def apps(tmp_path: Path) -> Path:
    for name in ("shared-code", "guestbook"):
        (tmp_path / name).mkdir()
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
