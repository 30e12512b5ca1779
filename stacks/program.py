"""The Pulumi program (run from __main__.py): the phases the stack selects, and how their outputs travel.

A phase stack (`phase1`, `phase2`, `phase3`) runs one phase and reads its inputs from the upstream
stack's outputs through a StackReference (`read_upstream`); `dev` runs the phases in order in one
program and passes each phase's outputs straight to the next (`_deploy`): one code path, two wirings.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import pulumi

import versions
from stacks import STACK_PHASES, outputs, runtime
from stacks.config.phases import load_phase1
from stacks.migrations import behind, bring_up_to_date, refusal
from stacks.validation import check_running_stack


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
    # one pass before anything is registered; then its upstream's outputs (a read: they say where
    # phase2's data is); then the folders it claims, refused while a wipe of one stopped half-way
    # (providers/host_secret.py); then the release that last brought it up (its state) and its data's layout
    # (beside the data), refused when newer, migrated from when older: before anything is registered.
    # A destroy (`Runtime.destroying`) only registers the resources for their providers' fresh inputs:
    # every refusal and write of an `up` is skipped, so it is never worse than a destroy from the state
    # (a wipe's refusal would even name this destroy as its fix; docs/design/decisions.md, entry 55).
    destroying = runtime.current().destroying
    if not destroying:
        check_running_stack(stack)
    inputs = await read_upstream(stack, checked=not destroying) if stack in outputs.UPSTREAM_STACK else {}
    if not destroying:
        folders = claimed_folders(phases, inputs)
        if why := next(filter(None, map(runtime.current().layout_records.unfinished_wipe, folders)), None):
            raise pulumi.RunError(why)
        await bring_up_to_date(stack, folders[0] if folders else None)
    exports: dict[str, Any] = {outputs.BLUEPRINT_VERSION: versions.BLUEPRINT}
    for phase in phases:
        module = importlib.import_module(f"stacks.{phase}")
        produced = module.deploy(inputs)
        inputs = {**inputs, **produced}
        exports.update({key: value for key, value in produced.items() if key not in outputs.IN_STACK_ONLY})
    return exports


def claimed_folders(phases: tuple[str, ...], inputs: Mapping[str, Any]) -> list[str]:
    """The host folders a stack that runs `phases` claims (`inputs`: its upstream's outputs): phase1's
    data folder, and phase2's two folders inside it (components/storage.py `folders_in`). The first
    holds the stack's layout record (stacks/layout_record.py); phase3 claims none, and its state
    outlives a destroy that keeps the data.
    """
    from components.storage import folders_in

    data = str(load_phase1().data_dir) if "phase1" in phases else inputs.get(outputs.DATA_DIR)
    if data is None:
        return []
    return [*([data] if "phase1" in phases else []), *(folders_in(data) if "phase2" in phases else ())]


async def read_upstream(stack: str, *, checked: bool = True) -> dict[str, Any]:
    """The upstream stack's outputs: plain values, and secret Outputs for its secrets. Refused when
    a newer release brought the upstream up, and when an older one did (a preview only warns, and
    reads the outputs as they are, unless one this release reads is missing); the upstream's
    `blueprintVersion` is checked, never an input. Not `checked` (a destroy): read as they are.
    """
    upstream = outputs.UPSTREAM_STACK[stack]
    reference = pulumi.StackReference(outputs.upstream_stack_name(pulumi.get_project(), stack))
    values: dict[str, Any] = {}
    for key in (*outputs.EXPORTS[upstream], *outputs.EXPORTS_IF_ANY[upstream]):
        details = await reference.get_output_details(key)
        if details.secret_value is not None:
            values[key] = pulumi.Output.secret(details.secret_value)
        elif details.value is not None:
            values[key] = details.value
    release = (await reference.get_output_details(outputs.BLUEPRINT_VERSION)).value
    if not checked:
        return values
    if release is not None and (refused := refusal(upstream, release)):
        raise pulumi.RunError(f"stack {stack} reads the outputs of stack {upstream}: {refused}")
    missing = [key for key in outputs.EXPORTS[upstream] if key not in values]
    if (release is not None or values) and (lag := behind(stack, upstream, release)):
        # An older upstream lacks what this release added: that is why, not that it is down.
        if missing or not pulumi.runtime.is_dry_run():
            raise pulumi.RunError(lag)
        pulumi.log.warn(f"{lag}; this preview reads {upstream}'s outputs as they are")
    if missing:
        raise pulumi.RunError(
            f"stack {stack!r} reads {', '.join(missing)} from stack {upstream!r}, which does not export "
            f"{'it' if len(missing) == 1 else 'them'} (it is not up): bring {upstream} up "
            f"first with `uv run blueprint up`, which brings every phase up in order (and applies a change that replaces "
            f"phase1's cluster under a running phase2)"
        )
    return values
