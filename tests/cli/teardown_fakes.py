"""Fakes for the destroy routes: stacks with the state the real program's plans record, a fake
Pulumi whose destroy fails as the real providers do, and the world outside Pulumi's state.

The stacks' states here are made from the real program's plans (what `pulumi up` would have
recorded), and the fake Pulumi fails a destroy the way the real providers do when what a resource
lives in is unreachable: pulumi-kubernetes refuses to delete a Helm release on an unreachable
cluster before it looks at PULUMI_K8S_DELETE_UNREACHABLE (provider.go, v4.32; pulumi-kubernetes
#2675), and GitLab's objects need GitLab's API. So a route passes only if it removed exactly those
resources from state first.
"""

from __future__ import annotations

import copy
import subprocess
from collections.abc import Callable, Mapping
from typing import Any

from cli.cluster_identity import Identity
from cli.lifecycle import lives_in_cluster, lives_in_gitlab
from cli.stack_runner import StackFailed, is_up
from cli.teardown import ClusterState, World, destroy
from stacks import PHASE_STACKS, outputs
from stacks.config.schema import stack_config
from tests.plans import planned


def recorded_state(stack: str, **config: str) -> dict[str, Any]:
    """What `pulumi stack export` would give after an `up` of `stack` with `config`."""
    resources = []
    for resource in planned(stack, **config).resources:
        state = {
            "urn": resource["urn"],
            "type": resource["type"],
            "custom": resource["custom"],
            "inputs": resource["inputs"],
            "outputs": resource["inputs"],
            "dependencies": resource["dependsOn"],
            "retainOnDelete": resource["retainOnDelete"],
        }
        for key in ("parent", "provider", "deletedWith"):
            if resource[key]:
                state[key] = resource[key]
        resources.append(state)
    return {"version": 3, "deployment": {"manifest": {}, "resources": resources}}


def stale_create(state: dict[str, Any], name: str) -> dict[str, Any]:
    """A pending CREATE of the resource `name` that `state` records, as an interrupted `up` leaves it
    and every later run keeps it (pulumi/pulumi pkg/backend/snapshot.go keeps a base snapshot's
    pending CREATEs), though a later `up` made the resource."""
    [resource] = [r for r in state["deployment"]["resources"] if r["urn"].endswith(f"::{name}")]
    return {"resource": {key: resource[key] for key in ("urn", "custom", "type", "inputs") if key in resource}, "type": "creating"}


def interrupted_replacement(state: dict[str, Any], name: str, *, delete_first: bool) -> dict[str, Any]:
    """The pending CREATE an interrupted replacement of `name` leaves: the new resource, its URN the
    old one's and its inputs changed, while `state` keeps the old resource (pulumi/pulumi
    pkg/backend/snapshot.go marks `step.New()` pending for OpCreateReplacement as for OpCreate); a
    delete-first replacement keeps it marked `pendingReplacement` (pkg/resource/deploy/step_generator.go)."""
    [resource] = [r for r in state["deployment"]["resources"] if r["urn"].endswith(f"::{name}")]
    if delete_first:
        resource["pendingReplacement"] = True
    operation = stale_create(state, name)
    operation["resource"]["inputs"] = {**operation["resource"].get("inputs", {}), "replaced": "by new inputs"}
    return operation


class FakePulumi:
    """Stacks with recorded state; a destroy fails like the real providers would."""

    def __init__(self, stacks: Mapping[str, dict[str, Any]], *, cluster: str = "running", gitlab: bool = True) -> None:
        self.states = {stack: copy.deepcopy(state) for stack, state in stacks.items()}
        self.stack_outputs = {stack: planned(stack).raw_outputs for stack in stacks}
        self.cluster, self.gitlab = cluster, gitlab
        self.calls: list[tuple[str, str]] = []
        self.ran_program: list[str] = []
        """The stacks whose destroy ran their program (`StackRunner.destroy`'s `run_program`)."""
        self.config: dict[tuple[str, str], str] = {}
        self.destroyed: dict[str, list[dict[str, Any]]] = {}
        self.envs: list[tuple[str, dict[str, str]]] = []
        """Each destroy's stack and the environment it was given."""
        self.program_fails: str | None = None
        """What Pulumi says when a destroy that runs the program fails (None: it does not)."""
        self.deleted_before_failing = 0
        """How many of its resources that failing destroy deleted first."""

    def outputs(self, stack: str) -> dict[str, Any] | None:
        if not self.is_up(stack):
            return None
        return {key: value for key, (value, _) in self.stack_outputs[stack].items()}

    def export_state(self, stack: str) -> dict[str, Any]:
        self.calls.append(("export", stack))
        return copy.deepcopy(self.states[stack])

    def import_state(self, stack: str, state: dict[str, Any]) -> None:
        self.calls.append(("import", stack))
        self.states[stack] = copy.deepcopy(state)

    def destroy(self, stack: str, on_output: Callable[[str], None], env: Mapping[str, str], *, run_program: bool = False) -> None:
        self.calls.append(("destroy", stack))
        self.envs.append((stack, dict(env)))
        if run_program:
            self.ran_program.append(stack)
            if self.program_fails is not None:
                kept = self.states[stack]["deployment"]["resources"][self.deleted_before_failing :]
                self.states[stack]["deployment"]["resources"] = kept
                raise StackFailed(stack, self.program_fails)
        resources = self.states[stack]["deployment"]["resources"]
        for resource in resources:
            if resource.get("retainOnDelete"):
                continue
            if self.cluster != "running" and lives_in_cluster(resource):
                raise StackFailed(stack, f"{resource['urn']}: can't delete Helm Release with unreachable cluster")
            if not self.gitlab and lives_in_gitlab(resource):
                raise StackFailed(stack, f"{resource['urn']}: GitLab does not answer")
        self.destroyed[stack] = resources
        self.states[stack] = {"version": 3, "deployment": {"resources": []}}  # as Pulumi does: the stack stays, empty

    def is_up(self, stack: str) -> bool:
        """As `AutomationRunner.outputs` decides it: from the state, as Pulumi keeps it."""
        return is_up(self.states.get(stack, {}))

    def set_config(self, stack: str, key: str, value: str) -> None:
        self.config[(stack, key)] = value

    def up(self, stack: str, on_output: Callable[[str], None]) -> None:
        self.calls.append(("up", stack))

    def preview(self, stack: str, on_output: Callable[[str], None]) -> None:
        self.calls.append(("preview", stack))


CHECKOUT = "0123456789abcdef"
"""This checkout's id, in the tests' world."""


PHASE1_HERE = f"blueprint/phase1@{CHECKOUT}"
"""phase1 of this checkout: the owner its data folder's marker names."""


def world(
    pulumi: FakePulumi,
    *,
    cluster: ClusterState | None = None,
    checkout: str | None = CHECKOUT,
    dev_clusters: tuple[str, ...] = (),
    identity: Identity | None = None,
    **config: str,
) -> tuple[World, list[tuple[str, str]]]:
    """`identity`: what every context reaches; None: each context its own cluster, phase1's recorded
    context the platform's (its recorded clusterId)."""
    wiped: list[tuple[str, str]] = []

    def reaches(context: str) -> Identity:
        recorded = pulumi.outputs("phase1") or {}
        if context == recorded.get(outputs.KUBE_CONTEXT):
            return Identity("answered", uid=str(recorded[outputs.CLUSTER_ID]))
        return Identity("answered", uid=f"uid-of-{context}")

    def wipe(folder: str, owner: str) -> subprocess.CompletedProcess[str]:
        wiped.append((folder, owner))
        return subprocess.CompletedProcess([], 0, "wiped", "")

    phase1_config = {**stack_config("phase1")[0], **{f"blueprint:{key}": value for key, value in config.items()}}
    return (
        World(
            cluster=lambda name: cluster or ClusterState("gone" if pulumi.cluster == "gone" else "running"),
            gitlab_answers=lambda phase2: pulumi.gitlab,
            phase1_config=lambda: phase1_config,
            dev_cluster_names=lambda: list(dev_clusters),
            wipe_folder=wipe,
            checkout_id=lambda: checkout,
            identity=lambda context: identity or reaches(context),
        ),
        wiped,
    )


def all_stacks(**config: str) -> dict[str, dict[str, Any]]:
    return {stack: recorded_state(stack, **config) for stack in ("phase1", "phase2", "phase3")}


def run_destroy(pulumi: FakePulumi, preserve: bool | None, phase: str = "all", **options: Any) -> tuple[int, str]:
    out: list[str] = []
    the_world = options.pop("world", None) or world(pulumi)[0]
    code = destroy(pulumi, out.append, PHASE_STACKS[phase], preserve, world=the_world, **options)
    return code, "\n".join(out)
