"""The `blueprint` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _config_override(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or ":" not in key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE with a full key such as blueprint:gitlabNodes=2, got {text!r}")
    return key, value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="blueprint", description="A self-hosted developer platform on one laptop.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    plan = commands.add_parser(
        "plan",
        help="show offline what `pulumi up` would register for a stack (no Pulumi CLI, cluster or network)",
        description="Evaluate the real program under Pulumi mocks and print every resource it would register.",
    )
    plan.add_argument("stack", help="phase1, phase2, phase3 or dev")
    plan.add_argument("--json", action="store_true", help="print the plan as one JSON object (DESIGN.md section 7)")
    plan.add_argument(
        "--config",
        metavar="KEY=VALUE",
        type=_config_override,
        nargs="+",
        action="extend",
        default=[],
        help="override a config value for this plan, e.g. blueprint:gitlabNodes=2 (repeatable)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # Imported after parsing, so `--help` and usage errors stay fast.
    import logging
    import traceback

    import pulumi

    from cli.plan import ProgramFailed, plan

    # What the program logs (pulumi.log) goes to stderr, so stdout stays the plan alone.
    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(message)s", stream=sys.stderr)

    try:
        result = plan(args.stack, dict(args.config))
    except ProgramFailed as failed:
        if isinstance(failed.cause, pulumi.RunError):
            print(f"error: {failed.cause}", file=sys.stderr)  # a user error: the message says it all
        else:
            traceback.print_exception(failed.cause)
        return 1
    sys.stdout.write(result.to_json() if args.json else result.to_tree())
    return 0


if __name__ == "__main__":
    sys.exit(main())
