"""The doctor's load balancer check when `blueprint:loadBalancerClass` is set: only that class's
controller serves the gateway's Service then. Kubernetes' ServiceSpec `loadBalancerClass`: "Any
default load balancer implementation (e.g. cloud providers) should ignore Services that set this
field", so the nodes' cloud provider, or another Service's address, says nothing of it.
"""

from __future__ import annotations

from collections.abc import Sequence

from cli.doctor.checks import Check

CLASS_CONTROLLERS = {"service.k8s.aws/": ("the AWS Load Balancer Controller", "targetgroupbindings.elbv2.k8s.aws")}
"""Class prefixes whose controller installs a CRD, its name and that CRD: the AWS Load Balancer
Controller serves `service.k8s.aws/nlb` (its docs, guide/service/nlb) and its chart installs the CRD
TargetGroupBinding (`elbv2.k8s.aws`). An add-on EKS does not install by default."""


def class_check(name: str, class_name: str, served: Sequence[str], crds: Sequence[str] | None, stack: str) -> Check:
    """Check `name` for class `class_name`, given the Services of that class with an address (`served`)
    and the cluster's CRDs (None: unread). A warning, never a failure, like the classless check.
    """
    if served:
        return Check(name=name, ok=True, found=f"Services of class {class_name} get an address (Service {served[0]} has one)")
    controller = next((known for prefix, known in CLASS_CONTROLLERS.items() if class_name.startswith(prefix)), None)
    if controller and controller[1] in (crds or ()):
        return Check(name=name, ok=True, found=f"{controller[0]} is installed (CRD {controller[1]}): it serves class {class_name}")
    missing = f", and {controller[0]} is not installed (no CRD {controller[1]})" if controller and crds is not None else ""
    install = controller[0] if controller else "the controller of that class"
    return Check(
        name=name,
        ok=True,
        found=f"no sign anything serves blueprint:loadBalancerClass {class_name}: no Service of that class has an address{missing}; "
        "the cloud's own controller ignores a Service with a class",
        advice=f"if nothing serves it, `up` waits for the gateway's address until it times out: install {install} first, or "
        f"empty blueprint:loadBalancerClass in Pulumi.{stack}.yaml for the cluster's default load balancer",
    )
