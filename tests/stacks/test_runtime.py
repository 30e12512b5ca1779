"""The program never asks whether it runs under Pulumi's mocks: the plan harness hands it what
differs (stacks/runtime.py), and a real run gets the real runtime."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pulumi
import pytest

import cli.stand_ins
from cli.plan import ProgramFailed, _run, plan
from stacks import runtime
from stacks.config import PROJECT_DIR
from stacks.config.schema import stack_config
from tests.plans import planned

HARNESS = PROJECT_DIR / "cli" / "plan.py"


def program_files() -> list[Path]:
    """Every Python file of the project but the tests', its virtual environment's and other hidden folders'."""
    return [
        path
        for path in PROJECT_DIR.rglob("*.py")
        if not {part for part in path.relative_to(PROJECT_DIR).parts[:-1] if part == "tests" or part.startswith(".")}
    ]


def test_only_the_plan_harness_knows_about_pulumis_mocks() -> None:
    files = program_files()
    assert HARNESS in files
    asking = [
        str(path.relative_to(PROJECT_DIR))
        for path in files
        if path != HARNESS and any(word in path.read_text() for word in ("pulumi.runtime.mocks", "MockMonitor", "get_monitor"))
    ]
    assert asking == []


def test_a_plan_leaves_the_real_runtime_behind() -> None:
    plan("phase1")
    assert runtime.current() is runtime.REAL


def test_a_program_that_fails_in_the_plan_leaves_the_real_runtime_behind() -> None:
    config, secret_keys = stack_config("phase1", {"blueprint:gitlabNodes": "0"})
    with pytest.raises(ProgramFailed):
        _run("phase1", config, secret_keys, PROJECT_DIR / "__main__.py", {})
    assert runtime.current() is runtime.REAL


@pytest.mark.parametrize("stack", ["phase1", "phase2", "dev"])
def test_a_plan_reads_and_writes_no_layout_record_in_a_host_folder(monkeypatch: pytest.MonkeyPatch, stack: str) -> None:
    from stacks.layout_record import HostLayoutRecords

    def touched(self: HostLayoutRecords, folder: str, *layout: str) -> None:
        raise AssertionError(f"the plan touched {folder}")

    monkeypatch.setattr(HostLayoutRecords, "read", touched)
    monkeypatch.setattr(HostLayoutRecords, "write", touched)
    plan(stack)


def test_a_phase3_stack_takes_the_platforms_secrets_and_check_from_the_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    """phase3 asks no question of its own about whether the platform is real: the runtime's platform answers."""
    asked: list[str] = []

    class Recording(cli.stand_ins.StandInPlatform):
        def admin_token(self, inputs: Mapping[str, Any]) -> pulumi.Input[str]:
            asked.append("admin_token")
            return super().admin_token(inputs)

        def writer_password(self, inputs: Mapping[str, Any]) -> pulumi.Input[str]:
            asked.append("writer_password")
            return super().writer_password(inputs)

        def preflight(self, inputs: Mapping[str, Any]) -> None:
            asked.append("preflight")

    monkeypatch.setattr(cli.stand_ins, "PLATFORM", Recording())
    plan("phase3", planned_upstream={name: planned(name) for name in ("phase1", "phase2")})  # phase3's own questions
    assert asked == ["preflight", "admin_token", "writer_password"]


def test_a_real_run_reads_phase2s_files_and_checks_the_platform() -> None:
    assert isinstance(runtime.REAL.platform, runtime.Phase2OnThisMachine)
