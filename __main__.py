"""Pulumi's entry point: run the phase(s) that the stack name selects."""

import pulumi

from stacks import program

program.run(pulumi.get_stack())
