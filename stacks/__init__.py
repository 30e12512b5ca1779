"""The stacks: which phases each one runs, and how their outputs travel.

A phase stack (`phase1`, `phase2`, `phase3`) runs one phase and reads its inputs from the
upstream stack's outputs through a StackReference; `dev` runs the phases in order in one
program and passes each phase's outputs straight to the next.
"""

from __future__ import annotations

import importlib
from typing import Any

import pulumi

from stacks import outputs

STACK_PHASES = {
    "phase1": ("phase1",),
    "phase2": ("phase2",),
    "phase3": ("phase3",),
    "dev": ("phase1", "phase2", "phase3"),
}


def run(stack: str) -> None:
    """Run the phases `stack` selects and export their outputs."""
    if stack not in STACK_PHASES:
        raise pulumi.RunError(
            f"unknown stack {stack!r}: blueprint's stacks are {', '.join(STACK_PHASES)}; "
            f"select one with `pulumi stack select --create phase1`"
        )
    # Async, so a phase stack can read its upstream's outputs as plain values (they decide which
    # resources exist, which an Output cannot); pulumi.run exports what the program returns.
    pulumi.run(lambda: _deploy(stack, STACK_PHASES[stack]))


async def _deploy(stack: str, phases: tuple[str, ...]) -> dict[str, Any]:
    # Everything this stack reads (the config of each of its phases, the apps manifest), checked in
    # one pass before anything is registered; then the release that last brought it up, read back
    # (its first resource), refused when newer, migrated from when older: before anything else.
    import versions
    from stacks.migrations import bring_up_to_date
    from stacks.validation import check_running_stack

    check_running_stack(stack)
    await bring_up_to_date(stack, phases)
    inputs = await read_upstream(stack) if stack in outputs.UPSTREAM_STACK else {}
    exports: dict[str, Any] = {outputs.BLUEPRINT_VERSION: versions.BLUEPRINT}
    for phase in phases:
        module = importlib.import_module(f"stacks.{phase}")
        produced = module.deploy(inputs)
        inputs = {**inputs, **produced}
        exports.update({key: value for key, value in produced.items() if key not in outputs.IN_STACK_ONLY})
    return exports


async def read_upstream(stack: str) -> dict[str, Any]:
    """The upstream stack's outputs: plain values, and secret Outputs for its secrets."""
    upstream = outputs.UPSTREAM_STACK[stack]
    reference = pulumi.StackReference(outputs.upstream_stack_name(pulumi.get_project(), stack))
    values: dict[str, Any] = {}
    for key in outputs.EXPORTS[upstream]:
        details = await reference.get_output_details(key)
        if details.secret_value is not None:
            values[key] = pulumi.Output.secret(details.secret_value)
        elif details.value is not None:
            values[key] = details.value
    missing = [key for key in outputs.EXPORTS[upstream] if key not in values]
    if missing:
        raise pulumi.RunError(
            f"stack {stack!r} reads {', '.join(missing)} from stack {upstream!r}, which does not export "
            f"{'it' if len(missing) == 1 else 'them'} (it is not up): bring {upstream} up "
            f"first with `uv run blueprint up`, which brings every phase up in order (and applies a change that replaces "
            f"phase1's cluster under a running phase2), or with `pulumi up -s {upstream}`"
        )
    return values
