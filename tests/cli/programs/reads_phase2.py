"""A program that only reads phase2's secret output through the StackReference phase3 uses."""

import pulumi
import yaml

from stacks import outputs

reference = pulumi.StackReference(outputs.upstream_stack_name(pulumi.get_project(), "phase3"))
pulumi.export(
    "upstreamDeployUser",
    reference.require_output(outputs.DEPLOY_KUBECONFIG).apply(lambda text: yaml.safe_load(text)["users"][0]["name"]),
)
