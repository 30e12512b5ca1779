"""Planning phase1 must stay cheap: at most 3 times the Python calls of a bare `import pulumi,
pulumi_kubernetes, pulumi_command`, each counted in a fresh interpreter (today about 2.4 times).

Calls, not seconds: a count is the same on a busy laptop and an idle one, so the rule holds whatever
else the machine runs (the CPU time of either process moved by up to half on a loaded 2-core machine,
which no margin could absorb). A plan that did twice the work it needs, or imported and evaluated far
more than it uses, shows in the count.
"""

from __future__ import annotations

import os
import subprocess
import sys

from stacks.config import PROJECT_DIR

BUDGET = 3.0
COUNTING = """
import contextlib, io, runpy, sys, threading
calls = 0
def count(frame, event, arg):
    global calls
    if event == "call":
        calls += 1
sys.setprofile(count)
threading.setprofile(count)
if sys.argv[1] == "import":
    import pulumi, pulumi_kubernetes, pulumi_command
else:
    sys.argv = [sys.argv[2], "plan", "phase1", "--json"]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        runpy.run_path(sys.argv[0], run_name="__main__")
sys.setprofile(None)
print(calls)
"""
PHASE1_PLAN = str(PROJECT_DIR / "tests" / "cli" / "programs" / "main_with_defaults.py")
"""Planned with Pulumi.yaml's defaults, whatever a checkout's Pulumi.phase1.yaml says (Headlamp on costs more)."""


def calls(*argv: str) -> int:
    """The Python calls a fresh interpreter makes running COUNTING with `argv`."""
    environment = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(
        [sys.executable, "-c", COUNTING, *argv], cwd=PROJECT_DIR, env=environment, capture_output=True, text=True, timeout=300, check=True
    )
    return int(done.stdout.split()[-1])


def test_phase1_plan_makes_at_most_three_times_the_calls_of_a_bare_import() -> None:
    imports, plan = calls("import"), calls("plan", PHASE1_PLAN)
    assert plan <= BUDGET * imports, f"planning phase1 made {plan} calls, {plan / imports:.2f} times a bare import's {imports}"
