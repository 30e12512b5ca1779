"""Planning phase1 must stay cheap: at most 1.5 times a bare `import pulumi, pulumi_kubernetes,
pulumi_command` in a fresh interpreter. Each is measured in the CPU time its process takes (user and
system), not the time on the clock, which the rest of the suite running beside it on 2 cores
stretches unevenly; the two are run alternately, best of several runs each. Each process's own CPU
time comes from `wait4` on that process alone: RUSAGE_CHILDREN would also count any other child
of this test worker reaped meanwhile (a server an earlier test started)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from stacks.config import PROJECT_DIR

RUNS = 7
BARE_IMPORT = ("-c", "import pulumi, pulumi_kubernetes, pulumi_command")
PHASE1_PLAN = (str(PROJECT_DIR / "tests" / "cli" / "programs" / "main_with_defaults.py"), "plan", "phase1", "--json")
"""Planned with Pulumi.yaml's defaults, whatever a checkout's Pulumi.phase1.yaml says (Headlamp on costs more)."""


WRITING_BYTECODE = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
"""As Python runs by default, writing and reusing each module's compiled bytecode: with
PYTHONDONTWRITEBYTECODE set (as CI machines often do), every run would compile the project's changed
modules from source, a cost of the machine, not of the plan."""


def seconds(argv: tuple[str, ...]) -> float:
    """The CPU seconds (user and system) a fresh interpreter running `argv` takes."""
    with tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen([sys.executable, *argv], cwd=PROJECT_DIR, env=WRITING_BYTECODE, stdout=subprocess.DEVNULL, stderr=stderr)
        _, status, usage = os.wait4(process.pid, 0)  # this process alone, reaped here (Popen never waits for it)
        process.returncode = os.waitstatus_to_exitcode(status)
        stderr.seek(0)
        assert process.returncode == 0, stderr.read().decode()
    return usage.ru_utime + usage.ru_stime


def test_phase1_plan_costs_at_most_one_and_a_half_bare_imports() -> None:
    imports, plans = [], []
    for _ in range(RUNS):
        imports.append(seconds(BARE_IMPORT))
        plans.append(seconds(PHASE1_PLAN))
    assert min(plans) <= 1.5 * min(imports), f"plan {min(plans):.2f}s vs import {min(imports):.2f}s"
