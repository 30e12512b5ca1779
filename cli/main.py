"""The `blueprint` command: one command for the whole platform, and an offline look at it."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from cli import passphrase, tools_path
from shown import shown
from stacks import PHASE_STACKS, STACK_PHASES

if TYPE_CHECKING:
    Verbs = argparse._SubParsersAction[argparse.ArgumentParser]

Handler = Callable[[argparse.Namespace], int]
"""What runs one verb: its parsed arguments -> the exit code."""

STACKS = tuple(STACK_PHASES)
"""The stacks of this project."""


def _config_override(text: str) -> tuple[str, str]:
    """`KEY=VALUE`; a key without a namespace is blueprint's, as `pulumi config set` takes it."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, such as blueprint:gitlabNodes=2, got {shown(text)}")
    from stacks.config import NAMESPACE, ConfigError
    from stacks.config.schema import declared_keys, full_key

    name = full_key(key)
    if name.count(":") != 1 or not name.startswith(f"{NAMESPACE}:"):
        suggestion = name.rsplit(":", 1)[-1]
        try:
            known = declared_keys()
        except ConfigError:  # a Pulumi.yaml refused: no suggestion from it (argparse would show a traceback)
            known = {}
        fix = f"write it as {NAMESPACE}:{suggestion}" if suggestion in known else "Pulumi.yaml lists them"
        raise argparse.ArgumentTypeError(f"{shown(key)} is not a blueprint setting: blueprint reads {NAMESPACE}:<key> alone; {fix}")
    return name, value


class _Overrides(argparse.Action):
    """`--config`, repeated: each key once, however it is spelt (`x`, `blueprint:x` and `blueprint:config:x`
    are one key to Pulumi, `stacks.config.schema.full_key`), since of two the last would silently win.
    """

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: str | None = None) -> None:
        text = str(values)
        try:
            name, value = _config_override(text)
        except argparse.ArgumentTypeError as error:
            raise argparse.ArgumentError(self, str(error)) from None
        given: list[tuple[str, str]] = list(getattr(namespace, self.dest) or [])
        spelt: dict[str, str] = dict(getattr(namespace, "config_spelt", {}))
        key = text.partition("=")[0]
        if name in spelt:
            earlier = dict(given)[name]
            same = f", as {shown(spelt[name])} and as {shown(key)} (one key to Pulumi)" if spelt[name] != key else ""
            values = f"both {shown(value)}" if earlier == value else f"{shown(earlier)}, then {shown(value)}: the last would win"
            raise argparse.ArgumentError(self, f"{name} is given twice{same} ({values}): give it once")
        setattr(namespace, self.dest, [*given, (name, value)])
        namespace.config_spelt = {**spelt, name: key}


def parser() -> argparse.ArgumentParser:
    """The whole `blueprint` command tree, each flag declared once: what `main` parses, and what
    docs/reference/cli.md is generated from (`blueprint docs`).
    """
    root = argparse.ArgumentParser(prog="blueprint", description="A self-hosted developer platform on one laptop.")
    verbs = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for verb in (
        _verb_up,
        _verb_preview,
        _verb_destroy,
        _verb_plan,
        _verb_doctor,
        _verb_status,
        _verb_verify,
        _verb_cache,
        _verb_kubeconfig,
        _verb_secrets,
        _verb_images,
        _verb_diagram,
        _verb_docs,
        _verb_env,
    ):
        verb(verbs)
    return root


def _phase(target: argparse.ArgumentParser | argparse._MutuallyExclusiveGroup, help_text: str) -> None:
    """`--phase`, which up, preview, destroy and doctor take: one phase, or all of them in order."""
    target.add_argument("--phase", choices=PHASE_STACKS, default="all", help=help_text)


def _add_verb(verbs: Verbs, name: str, help_text: str, description: str | None = None) -> argparse.ArgumentParser:
    """The verb `name`: `help_text` in the list of commands, and in its own --help unless a longer
    `description` is given, so every verb's --help says what it does (docs/reference/cli.md the same).
    """
    own = description or help_text
    return verbs.add_parser(name, help=help_text, description=own[:1].upper() + own[1:])


def _with_phase(verbs: Verbs, name: str, help_text: str, description: str | None = None) -> argparse.ArgumentParser:
    verb = _add_verb(verbs, name, help_text, description)
    _phase(verb, "one phase, or all of them in order (default)")
    return verb


def _verb_up(verbs: Verbs) -> None:
    up = _with_phase(
        verbs,
        "up",
        "check the machine, then bring the phases up in order",
        "check the machine, then bring the phases up in order, and say where everything is",
    )
    up.add_argument(
        "--glab-login",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="afterwards, when glab is installed, log it in to gitlab.<domain> with its own token (api scope, 30 days), "
        "trusting the platform CA, and touch no other host's entry (default; --no-glab-login leaves glab alone)",
    )
    up.add_argument(
        "--yes",
        action="store_true",
        help="when a cluster setting changed, take phase2 down (its data kept) and bring it back without asking",
    )
    up.add_argument(
        "--skip-dns-check",
        action="store_true",
        help="on an existing cluster, start phase3 without checking from this machine that gitlab.<domain> and "
        "registry.<domain> resolve to the gateway: for a private DNS zone or split-horizon DNS, which the cluster "
        "resolves and this machine does not",
    )


def _verb_preview(verbs: Verbs) -> None:
    _with_phase(verbs, "preview", "show what `up` would change, phase by phase")


def _verb_destroy(verbs: Verbs) -> None:
    destroy = _with_phase(
        verbs,
        "destroy",
        "destroy the phases in reverse order (the image cache is kept)",
        "destroy the phases in reverse order; the image cache (the registry mirrors' images) is kept whatever preserveData says: "
        "--wipe-cache removes it",
    )
    keep = destroy.add_mutually_exclusive_group()
    keep.add_argument("--preserve-data", action="store_true", help="record preserveData=true first, so every piece of data stays")
    keep.add_argument("--wipe-data", action="store_true", help="record preserveData=false first, so the data folder is removed")
    destroy.add_argument("--yes", action="store_true", help="do not ask before destroying (for scripts)")
    destroy.add_argument(
        "--cluster-gone",
        action="store_true",
        help="Docker and the kind cluster are gone for good: remove what lived in the cluster from Pulumi's state instead of deleting it",
    )
    destroy.add_argument(
        "--wipe-cache",
        action="store_true",
        help="also remove the image cache folder (blueprint:imageCacheDir) once phase1's destroy stopped its mirrors; refused when "
        "this destroy keeps phase1, and while another platform's mirrors still use the folder",
    )


def _verb_plan(verbs: Verbs) -> None:
    plan = _add_verb(
        verbs,
        "plan",
        "show offline what a stack registers (no Pulumi CLI, no cluster)",
        "Show offline what `pulumi up` would register for a stack (no Pulumi CLI, cluster or network): evaluate the real "
        "program under Pulumi mocks and print every resource it would register.",
    )
    plan.add_argument("stack", choices=STACKS, help="phase1, phase2, phase3 or dev")
    plan.add_argument("--json", action="store_true", help="print the plan as one JSON object")
    mode = plan.add_mutually_exclusive_group()
    mode.add_argument(
        "--preview",
        action="store_true",
        help="plan as `pulumi preview` sees a first up: what only a provider can compute shows as [unknown]",
    )
    mode.add_argument(
        "--destroy",
        action="store_true",
        help="show what `pulumi destroy` would do to each resource (delete, retain, forget) and each host folder (keep, wipe)",
    )
    plan.add_argument(
        "--config",
        metavar="KEY=VALUE",
        action=_Overrides,
        default=[],
        help="override a config value for this plan, e.g. blueprint:gitlabNodes=2 (one per --config; repeat it for more)",
    )


def _verb_doctor(verbs: Verbs) -> None:
    doctor = _add_verb(verbs, "doctor", "check every prerequisite of a real run, with the fix for each")
    doctor.add_argument(
        "--fix",
        action="store_true",
        help="install the Pulumi CLI, kind and kubectl into blueprint's own folders under ~/.local/share/blueprint; show your OS "
        "family's commands for Docker and the kernel limits, and run them once you say yes; say what to do for the rest",
    )
    doctor.add_argument("--yes", action="store_true", help="with --fix: run those commands without asking (for scripts)")
    chosen = doctor.add_mutually_exclusive_group()
    _phase(chosen, "check what these phases read (default: all, in order)")
    chosen.add_argument("--stack", choices=STACKS, help="check what this stack reads instead (dev: every phase, in one stack)")


def _verb_status(verbs: Verbs) -> None:
    _add_verb(
        verbs,
        "status",
        "show whether each phase is up, its services' health, the cache",
        "show, per phase, whether it is up and which release brought it up; the health of GitLab, OpenBao, the Runners and the "
        "apps; the image cache and its mirrors",
    )


def _verb_verify(verbs: Verbs) -> None:
    verify = _add_verb(
        verbs,
        "verify",
        "check the running platform's promises, with each fix",
        "check, read-only unless --deep, the running platform's promises (the engine and stacks, the cluster, the image cache, "
        "the names, TLS, OpenBao, GitLab, the Runners, the pipelines, the apps, Headlamp; docs/guide/verify.md lists what is not "
        "checked yet): a verdict each, the fix for each failure, and a report to paste into a bug report (--json); exit 1 when any "
        "check fails",
    )
    chosen = verify.add_mutually_exclusive_group()
    _phase(chosen, "check the promises of this phase, and what they need (default: all)")
    chosen.add_argument("--stack", choices=("dev",), help="check the dev stack, which holds every phase, instead of the phase stacks")
    verify.add_argument(
        "--json", action="store_true", help="print the report as one JSON object (its shape: cli/verify/report.schema.json)"
    )
    verify.add_argument("--output", metavar="FILE", help="also write the JSON report to FILE (no secret is ever in it)")
    verify.add_argument(
        "--deep",
        action="store_true",
        help="also run the checks that change something and take minutes: OpenBao's pod restarted, timed until it is unsealed "
        "again; an empty commit as root on an app project's main (one blueprint made), whose pipeline runs and redeploys the app, "
        "timed until the app answers",
    )


def _verb_kubeconfig(verbs: Verbs) -> None:
    kubeconfig = _add_verb(
        verbs,
        "kubeconfig",
        "print or write the kind cluster's admin kubeconfig",
        (
            "Print the admin kubeconfig of the kind cluster a stack made, as `kind get kubeconfig` prints it, or write it to a "
            "file (0600), for kubectl and Headlamp. It is cluster-admin: "
            "whoever holds it can do anything in the cluster, Secrets included. Use it with "
            "`KUBECONFIG=<path> kubectl get nodes`."
        ),
    )
    kubeconfig.add_argument(
        "--stack", choices=("phase1", "dev"), default="phase1", help="whose cluster: phase1's (the default), or dev's own cluster"
    )
    kubeconfig.add_argument(
        "--output",
        metavar="PATH",
        help="write it to the file PATH (mode 0600) instead of printing it; refused: a folder, a link, a file that is not a "
        "kubeconfig, and a kubeconfig that holds another cluster, context or user (writing over it would lose them)",
    )


def _verb_secrets(verbs: Verbs) -> None:
    secrets = _add_verb(
        verbs,
        "secrets",
        "list the credentials the platform makes, or show one (--show)",
        (
            "List every credential the platform generates, or show one with --show NAME. Each has its name, what it is, and "
            "where it is kept: its OpenBao path (secret/...) or, for the three that open OpenBao itself, its host file. "
            "Nothing secret is printed, except by --show."
        ),
    )
    secrets.add_argument(
        "--stack",
        choices=("phase2", "dev"),
        default="phase2",
        help="whose platform: the phase stacks' (phase2 holds OpenBao; the default), or dev's",
    )
    secrets.add_argument(
        "--show",
        metavar="NAME",
        help="print that credential's value alone (for a pipe; a newline after it only on a terminal), read from OpenBao "
        "as user blueprint, or from its file for the three not in OpenBao",
    )


def _verb_cache(verbs: Verbs) -> None:
    cache = _add_verb(
        verbs,
        "cache",
        "prune the image cache: empty the registry mirrors' storage now",
        (
            "prune the image cache now: stop each running registry mirror of the stack, empty its storage, and start it again, so the disk "
            "holds only what later pulls fetch anew; a stopped mirror is left as it is. The mirrors delete on their own "
            "what they fetched 30 days before; `uv run blueprint destroy --wipe-cache` removes the whole cache folder "
            "once the platform is down."
        ),
    )
    cache.add_argument("action", choices=["prune"], help="prune: empty the mirrors' storage now")
    cache.add_argument("--stack", choices=("phase1", "dev"), default="phase1", help="whose mirrors: phase1's (the default), or dev's own")


def _verb_images(verbs: Verbs) -> None:
    images = _add_verb(
        verbs,
        "images",
        "list every image: its registry, and whether the cache serves it",
        (
            "List every image the phase stacks pull, read from their offline plans (no Docker or network needed): its registry, "
            "who pulls it (containerd: a kind node; buildkit: a Dockerfile's FROM in CI; docker: the host's Docker), whether "
            "the image cache's mirrors serve it that way, whether it is pinned by digest, and where the plans name it."
        ),
    )
    images.add_argument("--json", action="store_true", help="print the list as one JSON object")


def _verb_diagram(verbs: Verbs) -> None:
    diagram = _add_verb(
        verbs,
        "diagram",
        "draw the architecture and traffic diagrams from the plans",
        "write docs/design/architecture.md, the architecture drawn from the offline plans, and the README's traffic diagram",
    )
    diagram.add_argument(
        "--check", action="store_true", help="only check that the committed diagrams are up to date: exit 1 when either is stale"
    )


def _verb_docs(verbs: Verbs) -> None:
    docs = _add_verb(
        verbs,
        "docs",
        "write the reference pages of docs/reference/ (for maintainers)",
        "write the reference pages in docs/reference/, generated from the code (for maintainers)",
    )
    docs.add_argument("--check", action="store_true", help="only check that the committed pages are up to date")


def _verb_env(verbs: Verbs) -> None:
    _add_verb(
        verbs,
        "env",
        "print the exports plain `pulumi`, `kind` and `kubectl` need",
        "print the exports the plain `pulumi`, `kind` and `kubectl` commands need: blueprint's state passphrase, and the "
        "folders `doctor --fix` installs into, put first on your shell's own PATH (moved there if it holds them further on): "
        'eval "$(uv run blueprint env)"',
    )


def _plan(args: argparse.Namespace) -> int:
    import logging

    from cli.plan import Plan, ProgramFailed, plan

    # What the program logs (pulumi.log) goes to stderr, so stdout stays the plan alone.
    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(message)s", stream=sys.stderr)
    try:
        result = plan(args.stack, dict(args.config), preview=args.preview)
    except ProgramFailed as failed:
        return failed.say()
    if args.destroy:
        from cli.lifecycle import destroy_view

        result = destroy_view(result)
    if args.json:
        sys.stdout.write(result.to_json())
        return 0
    if args.config:
        from cli.plan import override_summary

        try:
            before: Plan | BaseException = plan(args.stack, {}, preview=args.preview)
        except ProgramFailed as failed:
            before = failed.cause
        if args.destroy and isinstance(before, Plan):
            from cli.lifecycle import destroy_view

            before = destroy_view(before)
        sys.stdout.write(override_summary(args.stack, dict(args.config), before, result))
    sys.stdout.write(result.to_tree())
    return 0


def _env(args: argparse.Namespace) -> int:
    import shlex

    try:
        sys.stdout.write(passphrase.exports(os.environ))
    except passphrase.PassphraseFileError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    # First on the shell's own PATH as the shell has it when it evals this, never this process's (`uv run`
    # put the checkout's .venv/bin first there): each folder taken out wherever it is (behind Homebrew's,
    # its kubectl would win), then put first, once, however often it is run. POSIX sh: the quoted folder
    # matches itself alone in a pattern; the rest of PATH, empty entries too, stays as it is.
    if folders := tools_path.tools_folders(tools_path.tools_home()):
        sys.stdout.write("PATH=:$PATH:\n")
        for folder in folders:
            quoted = shlex.quote(folder)
            sys.stdout.write(
                f"while case $PATH in *:{quoted}:*) ;; *) false ;; esac; do PATH=${{PATH%%:{quoted}:*}}:${{PATH#*:{quoted}:}}; done\n"
            )
        sys.stdout.write("PATH=${PATH#:}; PATH=${PATH%:}\n")
        first = ":".join(shlex.quote(folder) for folder in folders)
        sys.stdout.write(f"PATH={first}${{PATH:+:$PATH}}\nexport PATH\n")
    # The warning goes to stderr, which `eval "$(...)"` leaves on the terminal.
    if weak := passphrase.weak_choice(os.environ):
        print(weak, file=sys.stderr)
    return 0


def _pulumi(verb: str) -> Handler:
    """The handler of a verb that drives Pulumi: the `Verb` named `verb` in cli/commands.py, run by
    `commands.main_for` (the pre-flight, the real runner, the failure help).
    """

    def handler(args: argparse.Namespace) -> int:
        from cli import commands

        chosen: commands.Verb = getattr(commands, verb)
        return commands.main_for(chosen, args)

    return handler


def _doctor(args: argparse.Namespace) -> int:
    from cli import doctor

    return doctor.run((args.stack,) if args.stack else PHASE_STACKS[args.phase], fix=args.fix, yes=args.yes)


def _verify(args: argparse.Namespace) -> int:
    from cli import verify

    return verify.run(args)


def _secrets(args: argparse.Namespace) -> int:
    from cli import secrets

    return secrets.run(args)


def _images(args: argparse.Namespace) -> int:
    from cli import images

    return images.run(args.json)


def _diagram(args: argparse.Namespace) -> int:
    from cli import diagram

    return diagram.run(check=args.check)


def _docs(args: argparse.Namespace) -> int:
    from cli import docs

    return docs.run(check=args.check)


# Each handler imports what its verb needs only when it runs, so `--help` and usage errors stay fast.
VERBS: dict[str, Handler] = {
    "up": _pulumi("UP"),
    "preview": _pulumi("PREVIEW"),
    "destroy": _pulumi("DESTROY"),
    "plan": _plan,
    "doctor": _doctor,
    "status": _pulumi("STATUS"),
    "verify": _verify,
    "cache": _pulumi("CACHE"),
    "kubeconfig": _pulumi("KUBECONFIG"),
    "secrets": _secrets,
    "images": _images,
    "diagram": _diagram,
    "docs": _docs,
    "env": _env,
}
"""The one dispatch: each verb of `parser` and its handler."""


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if (problem := passphrase.home_problem(os.environ)) is not None:  # before anything is read or made under it
        print(f"error: {problem}", file=sys.stderr)
        return 1
    # At least 022, so nothing blueprint, Pulumi or the scripts it runs make is writable by others.
    os.umask(os.umask(0o022) | 0o022)
    tools_path.tools_on_path(os.environ, tools_path.tools_home())
    try:
        return VERBS[args.command](args)
    except run_error() as error:
        # A user error the program's own code raises (a config or manifest problem read by the CLI): its message says it all.
        print(f"error: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (`blueprint doctor | head -1`): nothing more to say to it. Python would
        # report the pipe again when it flushes stdout at exit, so stdout is pointed at nothing first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports a reader gone


def run_error() -> type[Exception]:
    from pulumi import RunError

    return RunError


if __name__ == "__main__":
    sys.exit(main())
