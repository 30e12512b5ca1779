"""Pulumi's entry point: run the phase(s) that the stack name selects."""

import pulumi

import stacks

stacks.run(pulumi.get_stack())
