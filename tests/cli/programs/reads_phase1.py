"""A program that only reads phase1 through the StackReference phase2 uses."""

import pulumi

from stacks import outputs

reference = pulumi.StackReference(outputs.upstream_stack_name(pulumi.get_project(), "phase2"))
pulumi.export("upstreamClusterName", reference.require_output(outputs.CLUSTER_NAME))
