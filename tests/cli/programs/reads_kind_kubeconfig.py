"""A program that only asks kind for the kubeconfig of phase1's cluster, as phase2 does."""

import pulumi

from stacks import outputs
from stacks.phase1 import kind_kubeconfig

reference = pulumi.StackReference(outputs.upstream_stack_name(pulumi.get_project(), "phase2"))
kubeconfig: pulumi.Output[str] = reference.require_output(outputs.CLUSTER_NAME).apply(lambda name: kind_kubeconfig(str(name)))
pulumi.export("server", kubeconfig.apply(lambda text: text.split("server: ")[1].split()[0]))
