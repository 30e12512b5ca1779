"""Which phases each stack runs, and the errors for stacks that cannot run."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pulumi
import pytest

from cli.plan import ProgramFailed, plan
from stacks import outputs
from stacks.config import PROJECT_DIR
from tests.plans import planned


def test_unknown_stack_is_refused_naming_the_valid_ones() -> None:
    with pytest.raises(ProgramFailed) as failed:
        plan("staging")
    assert isinstance(failed.value.cause, pulumi.RunError)
    assert "unknown stack 'staging'" in str(failed.value.cause)
    assert "phase1, phase2, phase3, dev" in str(failed.value.cause)


def test_phase1_exports_exactly_what_phase2_reads() -> None:
    assert set(planned("phase1").outputs) == set(outputs.PHASE1) | {outputs.BLUEPRINT_VERSION}


def test_dev_stack_exports_what_every_built_phase_exports() -> None:
    assert set(planned("dev").outputs) == set(outputs.PHASE1) | set(outputs.PHASE2) | set(outputs.PHASE3) | {outputs.BLUEPRINT_VERSION}


def test_dev_stack_as_committed_has_its_own_cluster_and_data_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Pulumi.dev.yaml as committed, not as a user may have changed it.
    committed = subprocess.run(["git", "show", "HEAD:Pulumi.dev.yaml"], cwd=PROJECT_DIR, capture_output=True, text=True, check=True)
    (tmp_path / "Pulumi.dev.yaml").write_text(committed.stdout)
    monkeypatch.setattr("stacks.config.schema.STACK_FILES_DIR", tmp_path)
    dev, phase1 = plan("dev").outputs, planned("phase1").outputs
    assert dev[outputs.CLUSTER_NAME] != phase1[outputs.CLUSTER_NAME]
    assert dev[outputs.DATA_DIR] != phase1[outputs.DATA_DIR]


def test_a_stack_whose_upstream_stack_file_is_wrong_names_that_stack(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "Pulumi.phase1.yaml").write_text("config:\n  blueprint:gitlabNodes: 0\n")
    monkeypatch.setattr("stacks.config.schema.STACK_FILES_DIR", tmp_path)
    with pytest.raises(ProgramFailed) as failed:
        plan("phase2")
    assert "\nstack phase1:\n  blueprint:gitlabNodes = '0' is not valid" in str(failed.value.cause)


def test_dev_wires_phase2_into_phase3_like_the_stack_reference_does() -> None:
    dev, phase3 = planned("dev"), planned("phase3")
    sync = "pulumi-python:dynamic/gitlab:ProjectSync"
    assert dev.one(sync, "apps-guestbook-sync")["inputs"]["gitlab_url"] == phase3.one(sync, "apps-guestbook-sync")["inputs"]["gitlab_url"]
    assert "__str__" not in dev.to_json(), "a phase read an Output as text"
