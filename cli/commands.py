"""The one dispatch of `blueprint up | preview | destroy | status | kubeconfig | secrets` (from
cli/main.py): the pre-flight of what Pulumi needs here, the real `StackRunner`, the failure help, and
each verb's module (cli/phases.py, cli/status.py, cli/kubeconfig.py, cli/secrets.py).

A Pulumi failure for an expected condition (no CLI, a state it cannot decrypt, a locked stack) ends in
one message with its fix, not a traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, TextIO

from cli.kubeconfig import kubeconfig
from cli.main import PHASE_STACKS
from cli.phases import Context, destroy, preview, up
from cli.report import glab_login
from cli.stack_runner import AutomationRunner, StackRunner, pulumi_environment
from cli.status import status
from stacks import outputs
from stacks.config import PROJECT_DIR


def _confirmer(yes: bool) -> Callable[[str], bool]:
    """`--yes` answers yes; a terminal asks; with neither, the answer is no."""

    def confirm(question: str) -> bool:
        if yes:
            return True
        if not sys.stdin.isatty():
            return False
        return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")

    return confirm


def main_for(args: Any, runner: StackRunner | None = None, out: TextIO | None = None) -> int:
    """Dispatch a parsed `up`, `preview`, `destroy`, `status` or `kubeconfig` command. Without a `runner`, the real
    one, after a pre-flight of what Pulumi needs here. A Pulumi failure for an expected condition (no
    CLI, a state it cannot decrypt, a locked stack) ends in one message with its fix, not a traceback.
    """
    import cli.doctor as doctor

    stream = out or sys.stdout  # the stdout of the call, not of the import, so captured output sees it
    if (problem := _preflight(args, real=runner is None)) is not None:
        print(problem, file=sys.stderr)
        return 1
    try:
        return _dispatch(args, runner or AutomationRunner(), stream)
    except Exception as error:
        from pulumi import automation as auto

        known = doctor.pulumi_failure(error, project_dir=PROJECT_DIR, environ=os.environ)
        if known is None and isinstance(error, auto.CommandError):
            known = f"Pulumi failed, and blueprint does not know this failure; what Pulumi said:\n{error}"
        if known is None:
            raise
        print(known, file=sys.stderr)
        return 1


def _preflight(args: Any, *, real: bool) -> str | None:
    """What stops the command before any stack is read, or None: a bad value in a selected phase's
    stack file (`preview`), and, before the `real` runner, what Pulumi needs here.
    """
    import cli.doctor as doctor

    if args.command == "preview":
        from stacks.validation import check_stack_files

        # What every selected phase reads, first (`up` has its doctor check it, with the machine):
        # a bad phase3 value stops the preview of phase1 too, and no tool is needed to say so.
        if (problem := check_stack_files(PHASE_STACKS[args.phase])) is not None:
            return problem
    if not real:
        return None
    from cli import passphrase

    if weak := passphrase.weak_choice(os.environ):
        print(weak, file=sys.stderr)
    try:
        problem = doctor.preflight(args.command)
        pulumi_environment()  # makes, or checks, blueprint's passphrase file
    except passphrase.PassphraseFileError as error:
        problem = str(error)
    return problem


def _dispatch(args: Any, runner: StackRunner, stream: TextIO) -> int:
    import cli.doctor as doctor

    if args.command == "status":
        stream.write(status(runner) + "\n")
        return 0
    if args.command == "kubeconfig":
        return kubeconfig(runner, args.stack, args.output, stream, sys.stderr)
    if args.command == "secrets":
        from cli import secrets

        return secrets.show(args.show, args.stack, runner.outputs(args.stack), stream, sys.stderr)
    doctor_run = (lambda: doctor.run(PHASE_STACKS[args.phase])) if args.command == "up" else None
    confirm = _confirmer(getattr(args, "yes", False))
    context = Context(runner=runner, out=stream, doctor=doctor_run, explain=_explainer(runner), confirm=confirm)
    if args.command == "up":
        code = up(context, args.phase)
        if code == 0 and args.glab_login:
            context.say(glab_login(runner.outputs("phase2") or {}))
        return code
    if args.command == "preview":
        return preview(context, args.phase)
    preserve = True if args.preserve_data else False if args.wipe_data else None
    return destroy(
        context, args.phase, preserve, cluster_gone=getattr(args, "cluster_gone", False), wipe_cache=getattr(args, "wipe_cache", False)
    )


def _explainer(runner: StackRunner) -> Callable[[str, str, str, str], str]:
    """What to tell of a failed stack: blueprint's fix for a Pulumi failure it knows, else the failure
    explained (with the pods that are not Ready, after a Kubernetes timeout).
    """
    import cli.doctor as doctor
    import cli.explain as explain

    def explained(phase: str, stack: str, output: str, resume: str) -> str:
        known = doctor.pulumi_failure(output, project_dir=PROJECT_DIR, environ=os.environ)
        if known is not None:
            return known
        phase1 = runner.outputs("phase1") or {}
        cluster = str(phase1.get(outputs.CLUSTER_NAME, "")) if phase1 else ""
        gathered = explain.gather(cluster) if cluster and explain.is_timeout(output) else None
        pods, events = gathered if gathered else (None, None)
        return explain.explain(phase, stack, output, pods, events, resume=resume, kind_cluster_name=cluster or None)

    return explained
