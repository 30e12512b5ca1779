"""The verbs that drive Pulumi: `blueprint up | preview | destroy | status | cache | kubeconfig`, each a `Verb`
that cli/main.py's table runs through `main_for` (as cli/secrets.py runs `secrets --show`).

`main_for` gives a verb the real `StackRunner` after the pre-flight of what Pulumi needs here
(cli/stack_runner.py `preflight`), and ends a Pulumi failure for an expected condition (no CLI, a
state it cannot decrypt, a locked stack) in one message with its fix, not a traceback. Each verb's
logic is in its own module: cli/phases.py, cli/status.py, cli/kubeconfig.py.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TextIO

from cli import backend, phases
from cli.kubeconfig import kubeconfig
from cli.phases import Context
from cli.report import glab_login
from cli.stack_runner import AutomationRunner, StackFailed, StackRunner, preflight, pulumi_environment, pulumi_failure
from cli.status import status
from stacks import PHASE_STACKS, outputs
from stacks.config import PROJECT_DIR

if TYPE_CHECKING:
    from cli.doctor.machine import Machine


def _nothing_first(args: Any) -> str | None:
    return None


@dataclass(frozen=True)
class Verb:
    """A verb that drives Pulumi, as `main_for` runs it."""

    run: Callable[[Any, StackRunner, TextIO], int]
    """(the parsed arguments, the runner, where to print) -> the exit code."""
    first: Callable[[Any], str | None] = _nothing_first
    """What stops it before anything else, Pulumi's pre-flight included (no tool is needed to say it), or None."""
    owns: bool = False
    """Whether it runs a stack's program, or reads this checkout's id: with the user's backend, the id
    its phase1 recorded is taken first, and the stacks' passphrase asked for (cli/backend.py `second_operator`)."""


def main_for(verb: Verb, args: Any, runner: StackRunner | None = None, out: TextIO | None = None) -> int:
    """Run `verb` with the parsed `args`. Without a `runner`, the real one, after a pre-flight of what
    Pulumi needs here. A Pulumi failure for an expected condition ends in one message with its fix.
    """
    stream = out or sys.stdout  # the stdout of the call, not of the import, so captured output sees it
    if (problem := verb.first(args) or (_ready(args.command) if runner is None else None)) is not None:
        print(problem, file=sys.stderr)
        return 1
    runner = runner or AutomationRunner()
    try:
        if verb.owns and (refused := backend.second_operator(runner)) is not None:
            print(refused, file=sys.stderr)
            return 1
        return verb.run(args, runner, stream)
    except Exception as error:
        from pulumi import automation as auto

        known = pulumi_failure(error, project_dir=PROJECT_DIR, environ=os.environ)
        if known is None and isinstance(error, (auto.CommandError, StackFailed)):
            said = error.output if isinstance(error, StackFailed) else error
            known = f"Pulumi failed, and blueprint does not know this failure; what Pulumi said:\n{said}"
        if known is None:
            raise
        print(known, file=sys.stderr)
        return 1


def _ready(command: str) -> str | None:
    """What stops `command` before the real runner runs: the passphrase (checked, never made: the
    runner makes blueprint's own only when it first writes a stack, after every other check), then
    what Pulumi needs here.
    """
    from cli import passphrase

    try:
        pulumi_environment(create=False)
    except passphrase.PassphraseFileError as error:
        return str(error)
    if legacy := backend.legacy_layout():
        return legacy
    if weak := passphrase.weak_choice(os.environ):  # read once checked: a pipe there would never answer
        print(weak, file=sys.stderr)
    return preflight(command)


def _confirmer(yes: bool) -> Callable[[str], bool]:
    """`--yes` answers yes; a terminal asks; with neither, the answer is no."""

    def confirm(question: str) -> bool:
        if yes:
            return True
        if not sys.stdin.isatty():
            return False
        return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")

    return confirm


def _context(args: Any, runner: StackRunner, out: TextIO, doctor: Callable[[], int] | None = None) -> Context:
    confirm = _confirmer(getattr(args, "yes", False))
    return Context(runner=runner, out=out, doctor=doctor, explain=_explainer(runner), confirm=confirm)


def _up(args: Any, runner: StackRunner, out: TextIO) -> int:
    import cli.doctor as doctor
    from cli import verify

    context = _context(args, runner, out, doctor=lambda: doctor.run(PHASE_STACKS[args.phase]))
    context = replace(
        context,
        checks=lambda phase: verify.fast_tally(verify.real_platform(lambda: runner), phase),
        cache_served=_cache_served,
        dns_check=not getattr(args, "skip_dns_check", False),
    )
    code = phases.up(context, args.phase)
    if code == 0 and args.glab_login:
        context.say(glab_login(runner.outputs("phase2") or {}))
    return code


def _cache_served(phase1: Mapping[str, Any], machine: Machine | None = None) -> str | None:
    """What the image cache's mirrors hold of what the pods run, the mirrors asked from a node (cli/cache_served.py)."""
    from cli import cache_served
    from cli.doctor.machine import RealMachine
    from cli.image_cache import engine_of, on_engine
    from providers.kubectl import kubectl_argv
    from stacks.config.paths import LOCAL_STATE_DIR

    on = machine or RealMachine()
    pods = kubectl_argv(outputs.kube_context(phase1), "get", "pods", "--all-namespaces", "-o", "json")
    try:
        engine = on_engine(lambda argv: on.run_apart(argv, timeout=cache_served.EXEC_SECONDS), engine_of(phase1, lambda: {}))
        get = cache_served.from_node(engine, str(phase1.get(outputs.CLUSTER_NAME)))
        return cache_served.after_up(phase1, LOCAL_STATE_DIR, lambda: on.run(pods, timeout=20), get)
    except Exception as error:  # a reading that fails unforeseen never turns an up that succeeded into a traceback
        return f"image cache: whether it served the pulls could not be read ({type(error).__name__})"


def _stack_files(args: Any) -> str | None:
    from stacks.validation import check_stack_files

    # What every selected phase reads, first (`up` has its doctor check it, with the machine):
    # a bad phase3 value stops the preview of phase1 too, and no tool is needed to say so.
    return check_stack_files(PHASE_STACKS[args.phase])


def _preview(args: Any, runner: StackRunner, out: TextIO) -> int:
    return phases.preview(_context(args, runner, out), args.phase)


def _destroy_first(args: Any) -> str | None:
    """What stops a destroy before any stack is read: `--wipe-cache` while phase1 stays, and a phase1
    stack file with a problem (a destroy reads its preserveData, dataDir, clusterName and imageCacheDir:
    a `preserveData: yes`, not `true`, would wipe the data).
    """
    from cli.teardown import Refused, refuse_cache_wipe_without_phase1
    from stacks.validation import check_stack_files

    if args.wipe_cache:
        try:
            refuse_cache_wipe_without_phase1(PHASE_STACKS[args.phase])
        except Refused as refused:
            return f"blueprint: {refused}"
    return check_stack_files(("phase1",))


def _destroy(args: Any, runner: StackRunner, out: TextIO) -> int:
    preserve = True if args.preserve_data else False if args.wipe_data else None
    return phases.destroy(_context(args, runner, out), args.phase, preserve, cluster_gone=args.cluster_gone, wipe_cache=args.wipe_cache)


def _status(args: Any, runner: StackRunner, out: TextIO) -> int:
    out.write(status(runner) + "\n")
    return 0


def _cache(args: Any, runner: StackRunner, out: TextIO) -> int:
    from cli.image_cache import WIPE_TIMEOUT, docker_run, engine_of, on_engine, prune, said_on
    from stacks.config.schema import stack_config

    phase1 = runner.outputs(args.stack)
    engine = engine_of(phase1, lambda: stack_config(args.stack)[0])
    code, lines = prune(
        phase1,
        lambda: stack_config(args.stack)[0],
        on_engine(docker_run, engine),
        on_engine(lambda argv: docker_run(argv, WIPE_TIMEOUT), engine),
    )
    out.write("\n".join(map(said_on(engine), lines)) + "\n")
    return code


def _kubeconfig(args: Any, runner: StackRunner, out: TextIO) -> int:
    return kubeconfig(runner, args.stack, args.output, out, sys.stderr)


UP = Verb(_up, owns=True)
PREVIEW = Verb(_preview, first=_stack_files, owns=True)
DESTROY = Verb(_destroy, first=_destroy_first, owns=True)
STATUS = Verb(_status)
CACHE = Verb(_cache)
KUBECONFIG = Verb(_kubeconfig)


def _explainer(runner: StackRunner) -> Callable[[str, str, str, str], str]:
    """What to tell of a failed stack: blueprint's fix for a Pulumi failure it knows, else the failure
    explained (with the pods that are not Ready, after a Kubernetes timeout).
    """
    import cli.explain as explain

    def explained(phase: str, stack: str, output: str, resume: str) -> str:
        known = pulumi_failure(output, project_dir=PROJECT_DIR, environ=os.environ)
        if known is not None:
            return known
        phase1 = runner.outputs("phase1") or {}
        cluster = str(phase1.get(outputs.CLUSTER_NAME, "")) if phase1 else ""
        gathered = explain.gather(cluster) if cluster and explain.is_timeout(output) else None
        pods, events = gathered if gathered else (None, None)
        return explain.explain(phase, stack, output, pods, events, resume=resume, kind_cluster_name=cluster or None)

    return explained
