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
