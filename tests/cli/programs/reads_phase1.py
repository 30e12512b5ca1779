"""A program that only reads phase1 through the StackReference phase2 uses."""

import pulumi

from stacks import outputs

reference = pulumi.StackReference(outputs.upstream_stack_name(pulumi.get_project(), "phase2"))
pulumi.export("upstreamClusterName", reference.require_output(outputs.CLUSTER_NAME))
pulumi.export("upstreamKubeconfig", reference.require_output(outputs.KUBECONFIG))
pulumi.export(
    "upstreamServer",
    reference.require_output(outputs.KUBECONFIG).apply(lambda text: text.split("server: ")[1].split()[0]),
)
