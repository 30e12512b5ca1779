"""Which phases each stack runs, and the errors for stacks that cannot run."""

from __future__ import annotations

import pulumi
import pytest

from cli.plan import ProgramFailed, plan
from stacks import outputs
from tests.plans import planned


def test_unknown_stack_is_refused_naming_the_valid_ones() -> None:
    with pytest.raises(ProgramFailed) as failed:
        plan("staging")
    assert isinstance(failed.value.cause, pulumi.RunError)
    assert "unknown stack 'staging'" in str(failed.value.cause)
    assert "phase1, phase2, phase3, dev" in str(failed.value.cause)


@pytest.mark.parametrize("stack", ["phase2", "phase3"])
def test_stack_of_a_phase_not_built_yet_says_so(stack: str) -> None:
    with pytest.raises(ProgramFailed) as failed:
        plan(stack)
    assert "does not build yet" in str(failed.value.cause)


def test_phase1_exports_every_cross_phase_output() -> None:
    exported = set(planned("phase1").outputs)
    declared = {value for name, value in vars(outputs).items() if name.isupper() and isinstance(value, str)}
    assert declared <= exported


def test_dev_stack_runs_the_built_phases_in_one_graph() -> None:
    dev = planned("dev")
    assert [r["name"] for r in dev.find("command:local:Command")] == ["kind-data-folder", "kind-cluster"]
    assert set(dev.outputs) == set(planned("phase1").outputs)


def test_dev_stack_has_its_own_cluster_and_data_folder() -> None:
    dev, phase1 = planned("dev").outputs, planned("phase1").outputs
    assert dev[outputs.CLUSTER_NAME] != phase1[outputs.CLUSTER_NAME]
    assert dev[outputs.DATA_DIR] != phase1[outputs.DATA_DIR]


def test_a_stack_whose_upstream_does_not_plan_names_both() -> None:
    with pytest.raises(ProgramFailed) as failed:
        plan("phase3")
    assert str(failed.value.cause).startswith("phase3 reads the outputs of phase2, which does not plan:")
