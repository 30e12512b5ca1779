"""One stack's `pulumi destroy` in `blueprint destroy`: from its state, or, for phase2 on an existing
cluster, by running its program (`pulumi destroy --run-program`), so that its Kubernetes provider gets
the context's kubeconfig as kubectl resolves it now, not the copy its state keeps from the last `up`,
whose embedded token may have expired since (an OpenShift `oc login` token lasts 24 h).

Running the program must never make a destroy worse than the destroy from the state it stands for.
The program skips what only an `up` needs (stacks/program.py, `Runtime.destroying`), and it runs only
when it can succeed: this checkout's release brought phase1 and phase2 up, and no wipe of phase2's
folders stopped half-way. When it fails before deleting anything (a registry the Gateway API CRD chart
comes from out of reach), the destroy goes on once from the state; after deleting, it stops with what to
run. Why: docs/design/decisions.md, entry 55.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import versions
from cli.cluster_identity import Identity
from cli.stack_runner import StackFailed, StackRunner
from stacks import outputs
from stacks.config.schema import ENV_STEP
from stacks.runtime import DESTROYING

FROM_STATE = "destroyed from its state, with the credential its last `up` recorded"


def destroy_stack(
    runner: StackRunner,
    say: Callable[[str], None],
    stack: str,
    state: Mapping[str, Any],
    *,
    program_reason: str | None,
) -> None:
    """Destroy `stack`, whose state (imported) is `state`: from it alone when `program_reason` is not None
    (`program_blocker` says why, "" for a stack whose program never runs), else by running the program.
    """
    if program_reason is not None:
        if program_reason:
            say(f"   {stack}: {FROM_STATE}: {program_reason}")
        runner.destroy(stack, say, {})
        return
    try:
        runner.destroy(stack, say, {DESTROYING: "1"}, run_program=True)
    except StackFailed:
        deleted = len(_urns(state) - _urns(runner.export_state(stack).get("deployment") or {}))
        if deleted:
            say(
                f"   {stack}: running its program failed after it deleted {deleted} resource{'s' if deleted != 1 else ''}, "
                f"so blueprint does not go on from the state: fix what Pulumi said, then run this `uv run blueprint destroy` "
                f"again, or destroy the rest from the state with `pulumi destroy -s {stack}` in a shell that ran `{ENV_STEP}`"
            )
            raise
        say(f"   {stack}: running its program failed before it deleted anything: destroying it from its state instead")
        runner.destroy(stack, say, {})


def _urns(deployment: Mapping[str, Any]) -> set[str]:
    return {str(resource.get("urn")) for resource in deployment.get("resources") or []}


def program_blocker(
    stack: str,
    existing: Mapping[str, Mapping[str, Any]],
    *,
    cluster_running: bool,
    identity: Callable[[str], Identity],
    unfinished_wipe: Callable[[str], str | None],
) -> str | None:
    """None when `stack`'s destroy runs its program; else why not, said in one line ("": a stack whose
    program never runs on a destroy: phase1 and phase3, and phase2 on kind, whose kubeconfig is kind's
    admin.conf, valid a year; phase3's providers run kubectl with the context itself). `existing`: the
    outputs of the stacks that are up.
    """
    phase1 = existing.get("phase1") or {}
    if stack != "phase2" or not outputs.on_existing(phase1) or not cluster_running:
        return ""
    # The deletes go where the fresh kubeconfig points: only while the context reaches the platform's cluster.
    context = outputs.kube_context(phase1)
    now = identity(context)
    if now.status != "answered" or now.uid != phase1.get(outputs.CLUSTER_ID):
        reached = f"kube-system UID {now.uid}" if now.status == "answered" else now.detail or now.status
        return f"the context {context} does not reach the platform's cluster now ({reached}), and that credential names its API server"
    for name in ("phase1", "phase2"):
        release = (existing.get(name) or {}).get(outputs.BLUEPRINT_VERSION)
        if str(release) != versions.BLUEPRINT:
            by = f"blueprint {release}" if release is not None else "a blueprint that recorded no release"
            return f"{by} brought {name} up, and the program of this checkout ({versions.BLUEPRINT}) reads only its own"
    for folder in _phase2_folders(phase1):
        if unfinished_wipe(folder):
            return f"a wipe of {folder} stopped half-way, which this destroy finishes"
    return None


def _phase2_folders(phase1: Mapping[str, Any]) -> list[str]:
    """phase2's host folders, where a wipe that stopped half-way leaves its marker (stacks/program.py)."""
    from stacks.program import claimed_folders

    return claimed_folders(("phase2",), phase1)
