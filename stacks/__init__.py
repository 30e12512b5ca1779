"""The stacks: which phases each one runs.

A phase stack (`phase1`, `phase2`, `phase3`) runs one phase and reads its inputs from the
upstream stack's outputs through a StackReference; `dev` runs the phases in order in one
program and passes each phase's outputs straight to the next (stacks/program.py). Nothing is
imported here, so the CLI takes the stacks' names from here and its `--help` stays fast.
"""

STACK_PHASES = {
    "phase1": ("phase1",),
    "phase2": ("phase2",),
    "phase3": ("phase3",),
    "dev": ("phase1", "phase2", "phase3"),
}
"""The phases each stack runs; dev's are every phase, in order: the one place that order is written."""

PHASE_STACKS = {**{phase.removeprefix("phase"): (phase,) for phase in STACK_PHASES["dev"]}, "all": STACK_PHASES["dev"]}
"""The stacks of each `--phase` (a phase's stack has its name), in the order `blueprint up` runs them."""
