"""Which phases each stack runs, and the errors for stacks that cannot run."""

from __future__ import annotations

from collections.abc import Mapping

import pulumi
import pytest

import cli.plan
from cli.plan import ProgramFailed, plan
from stacks import outputs
from tests.plans import planned


def test_unknown_stack_is_refused_naming_the_valid_ones() -> None:
    with pytest.raises(ProgramFailed) as failed:
        plan("staging")
    assert isinstance(failed.value.cause, pulumi.RunError)
    assert "unknown stack 'staging'" in str(failed.value.cause)
    assert "phase1, phase2, phase3, dev" in str(failed.value.cause)


def test_phase1_exports_exactly_what_phase2_reads() -> None:
    assert set(planned("phase1").outputs) == set(outputs.PHASE1)


def test_dev_stack_exports_what_every_built_phase_exports() -> None:
    assert set(planned("dev").outputs) == set(outputs.PHASE1) | set(outputs.PHASE2) | set(outputs.PHASE3)


def test_dev_stack_has_its_own_cluster_and_data_folder() -> None:
    dev, phase1 = planned("dev").outputs, planned("phase1").outputs
    assert dev[outputs.CLUSTER_NAME] != phase1[outputs.CLUSTER_NAME]
    assert dev[outputs.DATA_DIR] != phase1[outputs.DATA_DIR]


def test_a_stack_whose_upstream_does_not_plan_names_both(monkeypatch: pytest.MonkeyPatch) -> None:
    real = cli.plan.stack_config

    def broken_phase1(stack: str, overrides: Mapping[str, str] = {}) -> tuple[dict[str, str], list[str]]:
        config, secret_keys = real(stack, overrides)
        return ({**config, "blueprint:gitlabNodes": "0"} if stack == "phase1" else config), secret_keys

    monkeypatch.setattr(cli.plan, "stack_config", broken_phase1)
    with pytest.raises(ProgramFailed) as failed:
        plan("phase2")
    assert str(failed.value.cause).startswith("phase2 reads the outputs of phase1, which does not plan:")
    assert "blueprint:gitlabNodes" in str(failed.value.cause)


def test_dev_wires_phase2_into_phase3_like_the_stack_reference_does() -> None:
    dev, phase3 = planned("dev"), planned("phase3")
    sync = "pulumi-python:dynamic/gitlab:ProjectSync"
    assert dev.one(sync, "apps-guestbook-sync")["inputs"]["gitlab_url"] == phase3.one(sync, "apps-guestbook-sync")["inputs"]["gitlab_url"]
    assert "__str__" not in dev.to_json(), "a phase read an Output as text"
