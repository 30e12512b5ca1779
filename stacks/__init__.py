"""The stacks: which phases each one runs, and how their outputs travel.

A phase stack (`phase1`, `phase2`, `phase3`) runs one phase and reads its inputs from the
upstream stack's outputs through a StackReference; `dev` runs the phases in order in one
program and passes each phase's outputs straight to the next (DESIGN.md section 4).
"""

from __future__ import annotations

import importlib
from typing import Any

import pulumi

STACK_PHASES = {
    "phase1": ("phase1",),
    "phase2": ("phase2",),
    "phase3": ("phase3",),
    "dev": ("phase1", "phase2", "phase3"),
}
BUILT_PHASES = ("phase1",)
"""Phases whose `stacks/<phase>.py` exists; the others are still to be built."""


def run(stack: str) -> None:
    """Run the phases `stack` selects and export their outputs."""
    if stack not in STACK_PHASES:
        raise pulumi.RunError(
            f"unknown stack {stack!r}: blueprint's stacks are {', '.join(STACK_PHASES)}; "
            f"select one with `pulumi stack select --create phase1`"
        )
    phases = STACK_PHASES[stack]
    missing = [phase for phase in phases if phase not in BUILT_PHASES]
    if len(phases) == 1 and missing:
        raise pulumi.RunError(
            f"stack {stack!r} runs {missing[0]}, which this version of blueprint does not build yet; "
            f"built so far: {', '.join(BUILT_PHASES)}"
        )
    if missing:
        pulumi.log.info(f"{stack}: not built yet, so not run: {', '.join(missing)}")

    inputs: dict[str, Any] = {}
    for phase in phases:
        if phase in BUILT_PHASES:
            module = importlib.import_module(f"stacks.{phase}")
            inputs = {**inputs, **module.deploy(inputs)}
    for key, value in inputs.items():
        pulumi.export(key, value)
