"""What `--fix` does about the failed checks: installs into the home folder, without asking (the user
asked for them, and each is checked against the SHA-256 versions.py pins: cli/doctor/install.py); the
commands of the OS family (Docker, the kernel limits), shown, asked for once, run in order and
stopped at the first that fails (`--yes` runs them without asking; without a terminal to ask on and
without `--yes` it only prints them); and, for the rest (ports, memory, names), what to do by hand.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TextIO

from cli.doctor.checks import Check
from cli.doctor.install import (
    INSTALLS_ON,
    KIND,
    KUBECTL,
    PULUMI,
    VERSIONS,
    ChecksumMismatch,
    Download,
    InstallError,
    downloads,
    install,
)
from cli.doctor.machine import Machine, release_arch, sudo_user
from cli.os_family import Command, OsFamily


@dataclass(frozen=True, kw_only=True)
class FixStep:
    """One thing `--fix` does: install `download`, or, when it is None, print `what` for the user to do."""

    what: str
    download: Download | None = None
    commands: tuple[Command, ...] = ()
    """Commands to show, and run once the user agrees (`--yes` agrees for scripts)."""


def fix_plan(failed: list[Check], machine: Machine) -> list[FixStep]:
    """What `--fix` does about `failed` (the failures, and the warnings it fixes: `Check.to_fix`):
    installs that need no root, in user folders, each checked against its pinned SHA-256 (a tool
    with none pinned: its check's fix, by hand); the commands of the OS family (Docker, the inotify
    limits), to run once the user agrees; everything else (ports, memory, names) as the check's own
    fix, to print.
    """
    arch = release_arch(machine)
    can_install = machine.system in INSTALLS_ON and arch is not None
    steps: list[FixStep] = []
    installed: list[str] = []
    run_by_commands = {check.fix for check in failed if check.commands}
    for check in failed:
        if not check.to_fix:
            continue
        if not check.commands and check.fix in run_by_commands:
            continue  # the Docker engine's line when Docker is missing: the Docker CLI's commands install both
        if check.commands:
            steps.append(FixStep(what=f"{check.name}: {check.fix}", commands=check.commands))
        elif can_install and arch is not None and check.name in (KIND, KUBECTL, PULUMI) and (invoker := sudo_user(machine)):
            # Under sudo the home is root's: the tools would land where the user's shell never looks.
            steps.append(
                FixStep(
                    what=f"{check.name}: not installed under sudo (it would go to root's home): run "
                    f"`uv run blueprint doctor --fix` as {invoker}, without sudo (it installs under your home)"
                )
            )
        elif (
            can_install
            and arch is not None
            and check.name in (KIND, KUBECTL, PULUMI)
            and (download := downloads(machine, check.name, arch)).sha256
        ):
            steps.append(FixStep(what=f"install {check.name} {VERSIONS[check.name]} as {download.target}", download=download))
            installed.append("pulumi" if check.name == PULUMI else check.name)
        else:
            steps.append(FixStep(what=f"{check.name}: {check.fix or check.advice}"))
    if installed:
        # blueprint puts the install folders on its own PATH (cli/tools_path.py `tools_on_path`): only the user's shell lacks them.
        tools = ", ".join(f"`{tool}`" for tool in dict.fromkeys(installed))
        steps.append(
            FixStep(what=f'for the plain {tools} commands in your shell (blueprint finds them itself): eval "$(uv run blueprint env)"')
        )
    if not can_install and any(check.name in (KIND, KUBECTL, PULUMI) for check in failed):
        why = f"there is no download for {machine.system}/{machine.machine}"
        steps.insert(0, FixStep(what=f"nothing can be installed automatically here ({why}): follow the instructions below"))
    return steps


CHECKSUM_PROVES = (
    "each file must have the SHA-256 this blueprint pins for it in versions.py, not the one its server says: "
    "a file damaged on the way, or swapped where it is published, is refused"
)
"""Said once by `--fix` before it installs: what the SHA-256 check shows."""


Execute = Callable[[Command, TextIO], int]
"""Runs one command of `--fix`, writing its output to the stream; its exit code."""


def execute(command: Command, out: TextIO) -> int:
    """Run `command`, its output streamed to `out` as it comes (a package manager takes a while);
    sudo asks for the password on the terminal itself.
    """
    try:
        process = subprocess.Popen(
            list(command.argv),
            stdin=subprocess.PIPE if command.stdin is not None else None,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
    except OSError as error:
        out.write(f"    {command.argv[0]}: {error.strerror or error}\n")
        return 127
    with process:  # closes its pipes
        unread = False
        if process.stdin is not None:
            # A command may end before it reads its input (sudo refused, `tee` could not open its file):
            # the pipe is then broken, as Popen.communicate's own _stdin_write allows for.
            try:
                process.stdin.write(command.stdin or "")
                process.stdin.close()
            except BrokenPipeError:
                unread = True
                with contextlib.suppress(BrokenPipeError):
                    process.stdin.close()
        assert process.stdout is not None
        for line in process.stdout:
            out.write(f"    {line}")
        code = process.wait()
    if unread:
        out.write(f"    ({command.argv[0]} ended before it read all its input)\n")
        return code or 1
    return code


def ask(prompt: str) -> str:
    try:
        return input(prompt)
    except (EOFError, KeyboardInterrupt):
        return ""


AGAIN = "uv run blueprint doctor --fix"


def run_commands(
    commands: Sequence[Command], family: OsFamily, out: TextIO, *, yes: bool, terminal: bool, ask: Callable[[str], str], run: Execute
) -> bool:
    """Show `commands`, ask once (unless `yes`), run them in order, and stop at the first that fails.
    Without a terminal to ask on and without `yes`, run nothing. True when all of them ran and passed.
    """
    sudo = "; sudo asks for your password" if any(command.argv[0] == "sudo" for command in commands) else ""
    out.write(f"\nthe commands for {family.distro}{sudo}:\n")
    for command in commands:
        out.write(f"  {command.shown}\n")
        if command.note:
            out.write(f"      ({command.note})\n")
    if not yes:
        if not terminal:
            out.write(
                f"not run: there is no terminal to ask on. Run them yourself, or let blueprint run them without asking: {AGAIN} --yes\n"
            )
            return False
        if ask("Run these? [y/N] ").strip().lower() not in ("y", "yes"):
            out.write(f"not run. Run them yourself, or `{AGAIN}` again\n")
            return False
    for done, command in enumerate(commands):
        out.write(f"$ {command.shown}\n")
        code = run(command, out)
        if code != 0:
            left = len(commands) - done - 1
            out.write(
                f"stopped: `{command.shown}` failed (exit {code}), its output above; {left} command{'' if left == 1 else 's'} after it "
                f"not run. Fix what it says (or run the commands yourself), then `{AGAIN}` again\n"
            )
            return False
    return True


def apply(
    failed: list[Check],
    machine: Machine,
    family: OsFamily,
    out: TextIO,
    *,
    yes: bool,
    terminal: bool | None,
    ask: Callable[[str], str],
    run: Execute,
) -> bool:
    """Do what `fix_plan` says about `failed`, saying each step to `out`; False when it stopped at a
    download that does not match its pinned SHA-256. `terminal` None: whether stdin is one.
    """
    out.write("\nfixing:\n")
    commands: list[Command] = []
    checked = False
    for step in fix_plan(failed, machine):
        if step.commands:
            commands += [command for command in step.commands if command not in commands]
            continue
        if step.download is None:
            out.write(f"  to do by hand: {step.what}\n")
            continue
        out.write(f"  {step.what}, from {step.download.url}, checked against SHA-256 {step.download.sha256}\n")
        if not checked:
            out.write(f"    ({CHECKSUM_PROVES})\n")
            checked = True
        try:
            install(machine, step.download)
        except ChecksumMismatch as error:
            out.write(f"    stopped: {error}\n")
            return False
        except (InstallError, OSError) as error:
            out.write(f"    failed: {error}\n")
    if commands:
        interactive = sys.stdin.isatty() if terminal is None else terminal
        run_commands(commands, family, out, yes=yes, terminal=interactive, ask=ask, run=run)
    return True
