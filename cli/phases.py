"""`blueprint up | preview | destroy`: the phases' stacks in order (destroy in reverse, through
cli/teardown.py), each through a `StackRunner` (cli/stack_runner.py).

Before anything changes, a stack that a newer release brought up stops them all (`newer_release`).

A failure names the phase and the resource, explains Kubernetes timeouts with the pods that are
not Ready, and gives the command that resumes; every step is re-runnable. An `up` that succeeded
ends with the report of cli/report.py.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from cli.dns_gate import DnsRecord, Resolve, resolve
from cli.report import Gateway, check_apps, gateway_address, pipeline_tally, summary
from cli.stack_runner import StackFailed, StackRunner
from cli.status import probe
from stacks import PHASE_STACKS, outputs


@dataclass(frozen=True, kw_only=True)
class Context:
    runner: StackRunner
    out: TextIO = sys.stdout
    doctor: Callable[[], int] | None = None
    """Run before `up`; a non-zero result stops it."""
    explain: Callable[[str, str, str, str], str] | None = None
    """(phase, stack, Pulumi's output, the command that resumes) -> what to tell the user."""
    world: Any = None
    """What `cli/teardown.py` asks of the machine (a `teardown.World`; None: the real one)."""
    confirm: Callable[[str], bool] = lambda question: False
    """Ask the user a yes/no question (no: when nobody can answer)."""
    probe: Callable[[str, str, Mapping[str, str]], str] | None = None
    """(url, CA file, headers) -> what the URL says, as `probe` (None: `probe` itself)."""
    gateway: Callable[[Mapping[str, Any]], Gateway] = gateway_address
    """On an existing cluster, phase1's outputs -> the gateway's addresses now."""
    resolve: Resolve = resolve
    """A host name -> the addresses it resolves to from this machine (`cli.dns_gate`)."""
    dns_check: bool = True
    """Whether `up` checks the DNS record from this machine before phase3 (False: `--skip-dns-check`)."""
    checks: Callable[[str], str] | None = None
    """(the phase brought up) -> the tally of `blueprint verify`'s fast checks, said after the summary (None: none run)."""
    cache_served: Callable[[Mapping[str, Any]], str | None] | None = None
    """phase1's outputs -> whether the image cache served the pulls, recorded and said after the summary
    (cli/cache_served.py `after_up`; None: not read)."""

    def say(self, text: str) -> None:
        self.out.write(text if text.endswith("\n") else text + "\n")
        self.out.flush()


def _phase_number(stack: str) -> str:
    return stack.removeprefix("phase")


def _as_run(verb: str, phase: str, *flags: str) -> str:
    """The command the user ran, to resume with: every step is re-runnable, and a `--phase` dropped
    would run phases they did not ask for (a destroy's, phases they meant to keep).
    """
    return " ".join(["uv run blueprint", verb, *([] if phase == "all" else ["--phase", phase]), *flags])


def _failed(context: Context, failure: StackFailed, verb: str, command: str) -> int:
    """Say that `verb` failed at `failure`, and that `command`, the one the user ran, resumes it.
    A failed destroy resumes with the same destroy, never with an `up` that would rebuild it.
    """
    resume = command if verb == "up" else f"the same `{command}` again"
    if context.explain is not None:
        context.say(context.explain(_phase_number(failure.stack), failure.stack, failure.output, resume))
    else:
        context.say(f"{verb} of {failure.stack} failed; to resume: {resume}")
    return 1


def _in_order(
    context: Context, phase: str, verb: str, action: Callable[[str, Callable[[str], None]], None], steps: DnsRecord | None = None
) -> int:
    """Run `action` on the phase's stacks in order; stop at the first failure, explained, or where
    `steps` says (before a stack, each said; after a stack, and after a failure, what it adds).
    """
    for stack in PHASE_STACKS[phase]:
        if steps is not None and steps.before(stack):
            return 1
        context.say(f"== {stack}: pulumi {verb}")
        try:
            action(stack, context.say)
        except StackFailed as failure:
            # The command as run: after a whole `up` stopped, the whole `up` again (every phase after the
            # failed one is still to do); after one phase's, that phase's.
            code = _failed(context, failure, verb, _as_run(verb, phase))
            if steps is not None:
                steps.failed(stack)
            return code
        if steps is not None:
            steps.after(stack)
    return 0


def newer_release(context: Context) -> bool:
    """Whether a phase stack records another release than this checkout may act on (said, with the
    fix): checked before anything changes (a cluster change's export and destroy, a stack's up, a
    destroy's preserveData and its scripts in a newer release's state) in up, preview and destroy;
    `up` runs the doctor, which changes nothing, first.
    """
    from stacks.migrations import newer_stack

    if (problem := newer_stack(context.runner.outputs)) is not None:
        context.say(f"blueprint: {problem}")
    return problem is not None


def upstream_not_up(context: Context, phase: str, verb: str) -> bool:
    """Whether `--phase N` names a stack whose upstream is not up (said, with the fix): its program would
    refuse, but only once Pulumi ran it, having made the stack, its encryptionsalt in Pulumi.phaseN.yaml and
    blueprint's passphrase file. A whole `up` brings the upstream up first.
    """
    if phase == "all":
        return False
    [stack] = PHASE_STACKS[phase]
    upstream = outputs.UPSTREAM_STACK.get(stack)
    if upstream is None or context.runner.outputs(upstream) is not None:
        return False
    context.say(
        f"blueprint: {upstream} is not up, and {stack} reads its outputs: nothing was {'changed' if verb == 'up' else 'previewed'}. "
        f"Bring it up first (`uv run blueprint up --phase {_phase_number(upstream)}`), or everything (`uv run blueprint up`)."
    )
    return True


def cluster_deleted_by_hand(context: Context) -> bool:
    """Whether phase1 is up, its config keeps its cluster, and kind (answering) lists no such cluster
    (said, with the fix): deleted outside blueprint, or with Docker's data. No `up` makes it again, its
    command having no change, so every later phase would fail on it; a destroy that keeps the data
    forgets what lived in it (`cli/teardown.py`), and the next `up` brings the platform back over it.
    """
    from cli.cluster_change import planned_cluster_id
    from cli.teardown import World

    phase1, world = context.runner.outputs("phase1") or {}, context.world or World()
    recorded = phase1.get(outputs.CLUSTER_ID)
    if recorded is None or recorded != planned_cluster_id(world.phase1_config()):
        return False  # not up, or a new cluster replaces it (cli/cluster_change.py)
    name = str(phase1.get(outputs.CLUSTER_NAME))
    if world.cluster(name).status != "gone":
        return False
    context.say(
        f"blueprint: phase1 is up, but kind lists no cluster {name}: it was deleted outside blueprint, and an `up` does "
        "not make it again while phase1's state records it. Take the platform down keeping its data, then bring it back: "
        "`uv run blueprint destroy --preserve-data`, then `uv run blueprint up`."
    )
    return True


def up(context: Context, phase: str) -> int:
    # The doctor first: it changes nothing, and reading the stacks' releases needs the Pulumi CLI, whose
    # absence on a fresh machine would otherwise hide every other thing the doctor has to say.
    if context.doctor is not None and context.doctor() != 0:
        context.say(f"blueprint doctor found what stops a real run (above); fix it and run `{_as_run('up', phase)}` again.")
        return 1
    if newer_release(context) or upstream_not_up(context, phase, "up") or cluster_deleted_by_hand(context):
        return 1
    from cli.cluster_change import make_way_for_a_new_cluster, phase2_moved

    if phase == "2" and phase2_moved(context.runner, context.say, world=context.world) != 0:
        return 1
    if phase in ("all", "1"):
        try:
            code = make_way_for_a_new_cluster(context.runner, context.say, phase, world=context.world, confirm=context.confirm)
        except StackFailed as failure:
            # Half-way through a cluster change: the same `up` takes it up again, never a destroy.
            return _failed(context, failure, "up", _as_run("up", phase))
        if code != 0:
            return code
    # On an existing cluster, the DNS record phase3 needs, in time (cli/dns_gate.py); on kind it does nothing.
    dns = DnsRecord(
        say=context.say,
        outputs=context.runner.outputs,
        gateway=context.gateway,
        resolve=context.resolve,
        again=_as_run("up", phase),
        check=context.dns_check,
    )
    code = _in_order(context, phase, "up", context.runner.up, dns)
    if code == 0:
        values = {stack: context.runner.outputs(stack) or {} for stack in PHASE_STACKS["all"]}
        from cli.doctor.machine import RealMachine, machine_family

        tally, checked = pipeline_tally(values.get("phase3") or {}), check_apps(values, context.probe or probe)
        gateway = context.gateway(values["phase1"]) if values.get("phase2") and outputs.on_existing(values.get("phase1") or {}) else None
        context.say(summary(values, tally=tally, checked=checked, family=machine_family(RealMachine()), gateway=gateway))
        if context.cache_served is not None and (served := context.cache_served(values["phase1"])):
            context.say(served)
        if context.checks is not None:
            context.say(context.checks(phase))
    return code


def preview(context: Context, phase: str) -> int:
    if newer_release(context) or upstream_not_up(context, phase, "preview"):
        return 1
    return _in_order(context, phase, "preview", context.runner.preview)


def destroy(context: Context, phase: str, preserve: bool | None, *, cluster_gone: bool = False, wipe_cache: bool = False) -> int:
    """Destroy in reverse order, on every route: see `cli/teardown.py`."""
    from cli import teardown

    if newer_release(context):
        return 1
    try:
        return teardown.destroy(
            context.runner,
            context.say,
            PHASE_STACKS[phase],
            preserve,
            cluster_gone=cluster_gone,
            wipe_cache=wipe_cache,
            world=context.world,
            confirm=context.confirm,
        )
    except StackFailed as failure:
        data = {True: ["--preserve-data"], False: ["--wipe-data"], None: []}[preserve]
        flags = [*data, *(["--cluster-gone"] if cluster_gone else []), *(["--wipe-cache"] if wipe_cache else [])]
        return _failed(context, failure, "destroy", _as_run("destroy", phase, *flags))
