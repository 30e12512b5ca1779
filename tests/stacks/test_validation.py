"""The one pass over what a stack reads: a bad value stops the program before its first resource,
a secret the CLI cannot decrypt is left to the program, and a problem two stacks share is said once."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.plan import ProgramFailed, _chain, _run
from stacks.config import PROJECT_DIR, ConfigError
from stacks.config.schema import stack_config
from stacks.validation import check_stack_files, message


def test_bad_config_stops_the_program_before_any_resource_is_registered() -> None:
    config, secret_keys = stack_config("phase1", {"blueprint:gitlabNodes": "0"})
    with pytest.raises(ProgramFailed) as failed:
        _run("phase1", config, secret_keys, PROJECT_DIR / "__main__.py", {})
    assert isinstance(failed.value.cause, ConfigError)
    assert [r["type"] for r in failed.value.registered] == ["pulumi:pulumi:Stack"]


def test_a_secure_value_of_ours_is_checked_by_the_program_not_refused_by_its_stand_in(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr("stacks.config.schema.STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.phase1.yaml").write_text("config:\n  blueprint:domain:\n    secure: v1:AAAA\n")
    assert check_stack_files(["phase1"]) is None
    assert stack_config("phase1") == ({**stack_config("phase2")[0]}, ["blueprint:domain"])


def test_a_problem_two_stacks_share_is_said_once() -> None:
    said = message({"phase2": ["apps/apps_manifest.yaml: broken"], "phase3": ["apps/apps_manifest.yaml: broken", "other"]})
    assert said.startswith("2 problems in what blueprint reads")
    assert said.count("apps/apps_manifest.yaml: broken") == 1


@pytest.mark.parametrize(("stack", "readers"), [("phase3", "phase2 and phase3"), ("phase2", "phase2"), ("dev", "dev")])
def test_a_manifest_problem_is_said_under_the_manifest_with_the_stacks_that_read_it_not_under_one_stack(
    stack: str, readers: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "apps_manifest.yaml").write_text("projects: []\n")
    monkeypatch.setattr("apps_manifest.MANIFEST", tmp_path / "apps_manifest.yaml")
    said = check_stack_files(list(reversed(_chain(stack))))
    assert said is not None
    assert said.splitlines()[1:] == [
        f"the apps manifest (read by {readers}):",
        "  apps/apps_manifest.yaml: the 'shared-code' project, whose templates every pipeline includes, is missing; put it back first",
    ]
