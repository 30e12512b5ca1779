"""The stacks driven through Pulumi's Automation API: every command that talks to Pulumi goes through a
`StackRunner`, so the command logic (phase order, the preserveData recording, the summary) is tested
without a Pulumi CLI; `AutomationRunner` is the real one. Before it runs, `preflight` says what
Pulumi needs here; `pulumi_failure` turns a Pulumi failure for an expected condition (no CLI, a state
it cannot decrypt, a locked stack) into one message with its fix.

Each phase is a stack of this project on the backend `cli/backend.py` names (the user's
`PULUMI_BACKEND_URL`, else the checkout's `.pulumi-state/`), with the user's private passphrase
(cli/passphrase.py). Pulumi's own progress is streamed as it comes.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from cli.doctor.checks import PULUMI_MIN_VERSION, pulumi_check
from cli.doctor.install import PULUMI
from cli.doctor.machine import Machine, RealMachine
from components.engine import KIND_PROVIDER
from stacks.config import PROJECT_DIR
from stacks.config.paths import LOCAL_STATE_DIR
from stacks.config.schema import ENV_STEP
from stacks.runtime import DESTROYING
from versions import PULUMI_VERSION


class StackFailed(Exception):
    """A stack's `up`, `preview` or `destroy` failed; `output` is what Pulumi printed."""

    def __init__(self, stack: str, output: str) -> None:
        super().__init__(f"stack {stack} failed")
        self.stack = stack
        self.output = output


class PulumiTimedOut(StackFailed):
    """A `pulumi` blueprint runs itself gave no answer within its time, and was killed with every process
    it started: it waits on a backend that does not answer, or a prompt. (Reads take no lock: pulumi/pulumi
    pkg/backend/diy/backend.go locks for an import, never for `ExportDeployment`.)
    """

    def __init__(self, stack: str, command: str, seconds: float) -> None:
        super().__init__(stack, f"`{command}` did not answer within {seconds:g} s")
        self.command = command
        self.seconds = seconds


class StackRunner(Protocol):
    def up(self, stack: str, on_output: Callable[[str], None]) -> None: ...
    def preview(self, stack: str, on_output: Callable[[str], None]) -> None: ...
    def destroy(self, stack: str, on_output: Callable[[str], None], env: Mapping[str, str], *, run_program: bool = False) -> None:
        """`run_program`: run the stack's program first, so that its providers get the inputs it computes now
        (a fresh kubeconfig), not those of the last `up` (`RUN_PROGRAM_MIN_VERSION`).
        """
        ...

    def set_config(self, stack: str, key: str, value: str) -> None: ...
    def outputs(self, stack: str) -> dict[str, Any] | None:
        """The stack's outputs, secrets included, or None when the stack does not exist."""
        ...

    def export_state(self, stack: str) -> dict[str, Any]:
        """The stack's state, as `pulumi stack export` writes it (secrets stay encrypted)."""
        ...

    def import_state(self, stack: str, state: dict[str, Any]) -> None: ...


RUN_PROGRAM_MIN_VERSION = "3.204.0"
"""The oldest Pulumi CLI whose `destroy --run-program` blueprint uses: 3.160.0 added it, 3.185.0 fixed it for
programs that read resources (a StackReference) and 3.204.0 for a dependency that fails to delete
(pulumi/pulumi CHANGELOG.md)."""


def runs_program_on_destroy(version: str) -> bool:
    """Whether the Pulumi CLI of `version` (3.272.0, v3.272.0) is RUN_PROGRAM_MIN_VERSION or later."""
    found = [int(part) for part in re.findall(r"\d+", version)[:3]]
    return len(found) == 3 and tuple(found) >= tuple(int(part) for part in RUN_PROGRAM_MIN_VERSION.split("."))


def pulumi_environment(*, create: bool = True) -> dict[str, str]:
    """What every Pulumi command of blueprint runs with, on top of this process's environment: the
    backend (cli/backend.py), and the user's passphrase for every stack (a stack reads its upstream's
    secret outputs with it). Only ever the passphrase's file: LocalWorkspace shows its env_vars in its
    repr. So the checkout's own backend is named here, but never the user's `PULUMI_BACKEND_URL`, which
    may hold a token: the Pulumi CLI inherits it (pulumi/automation/_cmd.py runs it with os.environ).
    `create`: make blueprint's passphrase file if it is missing; only what writes a stack does, so a
    command that refuses, or only reads, leaves nothing behind (cli/passphrase.py `environment`).
    """
    from cli import backend, passphrase

    return {
        **({} if backend.is_users(os.environ) else {backend.VARIABLE: backend.url(os.environ)}),
        # Every command would otherwise ask the network for a newer CLI first.
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        # The program tells kind its engine when it is not Docker (components/engine.py `kind_environment`);
        # a user's exported one would send Docker's kind to Podman. These only add to the process's
        # environment, so it is emptied: kind reads "" as unset (kind v0.31.0 runtime.go `GetDefault`).
        KIND_PROVIDER: "",
        # Only a destroy's program skips an `up`'s checks (stacks/runtime.py): never from the user's shell.
        DESTROYING: "",
        **passphrase.environment(os.environ, create=create),
    }


def is_up(exported: Mapping[str, Any]) -> bool:
    """Whether a stack's state (`pulumi stack export`) holds a resource that an `up` made: not only the
    stack's own (`pulumi:pulumi:Stack`), providers (`pulumi:providers:*`, the default ones included) and
    what the program read (`external: true`: its StackReferences), which Pulumi keeps in the state even
    when the program then refused (pulumi/pulumi pkg/backend/snapshot.go, `readSnapshotMutation`).
    """
    resources = (exported.get("deployment") or {}).get("resources") or []
    return any(
        resource.get("type") != "pulumi:pulumi:Stack"
        and not str(resource.get("type", "")).startswith("pulumi:providers:")
        and not resource.get("external")
        for resource in resources
    )


READ_SECONDS = 60.0
"""How long one `pulumi` that reads a stack (its outputs, its state) may take before blueprint stops it."""


class AutomationRunner:
    """The real thing: Pulumi's Automation API over this project's folder (a local program, as
    dynamic providers need) for what runs a stack's program; a plain `pulumi` for what only reads or
    writes a stack's state, under a timeout in a process group of its own (`_pulumi`).
    """

    def __init__(self, *, read_seconds: float = READ_SECONDS) -> None:
        self.read_seconds = read_seconds
        """How long each `pulumi` that reads a stack may take (verify gives less than its check's own timeout)."""

    def _stack(self, name: str) -> Any:
        from pulumi import automation as auto

        options = auto.LocalWorkspaceOptions(work_dir=str(PROJECT_DIR), env_vars=pulumi_environment(), secrets_provider="passphrase")
        return auto.create_or_select_stack(stack_name=name, work_dir=str(PROJECT_DIR), opts=options)

    def _run(self, stack: str, action: Callable[[], Any]) -> None:
        from pulumi import automation as auto

        try:
            action()
        except auto.CommandError as error:
            raise StackFailed(stack, str(error)) from error

    def up(self, stack: str, on_output: Callable[[str], None]) -> None:
        import contextlib

        from cli import timings

        # Each resource's start and end, from the engine's events, in the checkout (`blueprint verify` reports them).
        recorder = timings.Recorder(stack)
        try:
            self._run(stack, lambda: self._stack(stack).up(on_output=on_output, color="auto", on_event=recorder))
        finally:
            with contextlib.suppress(OSError):  # a record that cannot be written changes nothing of the up
                timings.write(LOCAL_STATE_DIR, recorder)

    def preview(self, stack: str, on_output: Callable[[str], None]) -> None:
        self._run(stack, lambda: self._stack(stack).preview(on_output=on_output, color="auto"))

    def destroy(self, stack: str, on_output: Callable[[str], None], env: Mapping[str, str], *, run_program: bool = False) -> None:
        previous = {key: os.environ.get(key) for key in env}
        os.environ.update(env)  # the Automation API passes the process environment to the CLI
        try:
            self._run(stack, lambda: self._destroy(stack, on_output, env, run_program))
        finally:
            for key, value in previous.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    def _destroy(self, stack: str, on_output: Callable[[str], None], env: Mapping[str, str], run_program: bool) -> None:
        selected = self._stack(stack)
        selected.workspace.env_vars = {**selected.workspace.env_vars, **env}  # over pulumi_environment's
        version = str(selected.workspace.pulumi_version)
        if run_program and not runs_program_on_destroy(version):
            on_output(
                f"(Pulumi {version} is older than {RUN_PROGRAM_MIN_VERSION}: this destroy uses the credential recorded at "
                "the last `up`; `uv run blueprint doctor --fix` installs a newer CLI)"
            )
        # The flag only when it applies: a destroy from the state alone keeps the CLI's own default.
        extra = {"run_program": True} if run_program and runs_program_on_destroy(version) else {}
        selected.destroy(on_output=on_output, color="auto", **extra)

    def set_config(self, stack: str, key: str, value: str) -> None:
        """Set `key` on `stack` if the stack exists; never create a stack just for that."""
        from pulumi import automation as auto

        try:
            # A plain value: Pulumi needs no passphrase for it, and nothing is made for it.
            selected = auto.select_stack(stack_name=stack, work_dir=str(PROJECT_DIR), opts=self._options(create=False))
        except auto.StackNotFoundError:
            return
        selected.set_config(key, auto.ConfigValue(value=value))

    # Not the Automation API's export_stack/import_stack: they always export with --show-secrets and
    # leave that plaintext in a temporary file when an import fails. Without it, secrets stay the
    # stack's own ciphertext, which `pulumi stack import` takes back as it is.
    def export_state(self, stack: str) -> dict[str, Any]:
        exported: dict[str, Any] = json.loads(self._pulumi(stack, "stack", "export", "--stack", stack, writes=False))
        return exported

    def import_state(self, stack: str, state: dict[str, Any]) -> None:
        with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="blueprint-state-") as file:
            json.dump(state, file)
            file.flush()
            self._pulumi(stack, "stack", "import", "--file", file.name, "--stack", stack)

    def _pulumi(self, stack: str, *argv: str, writes: bool = True) -> str:
        """What `pulumi <argv>` printed. Not through the Automation API, whose `pulumi` has no timeout nor a
        process group of its own: one that hangs (a backend that does not answer, a lock) would outlive the
        command. A read may take `read_seconds`, a write (an import) 300 s; then it is killed, with its plugins.
        """
        from cli.doctor.machine import in_own_group

        timeout = 300 if writes else self.read_seconds
        command = ["pulumi", *argv, "--non-interactive"]
        environment = {**os.environ, **pulumi_environment(create=writes)}
        # No stdin: a prompt reads its end at once rather than wait for an answer no one gives.
        done = in_own_group(command, timeout, env=environment, cwd=PROJECT_DIR, stdin=subprocess.DEVNULL)
        if done is None:
            raise PulumiTimedOut(stack, shlex.join(command), timeout)
        if done.returncode != 0:
            raise StackFailed(stack, f"`pulumi {shlex.join(argv)}` failed: {done.stderr.strip() or done.stdout.strip()}")
        return done.stdout

    def outputs(self, stack: str) -> dict[str, Any] | None:
        """None when the stack does not exist or is not up (`is_up`): a `pulumi destroy` leaves the
        stack in place, empty, and an `up` the program refused leaves what it read.
        """
        listed = json.loads(self._pulumi(stack, "stack", "ls", "--json", writes=False))
        # Named `<stack>`, or `organization/blueprint/<stack>` with PULUMI_FULLY_QUALIFY_STACK_NAMES.
        summary = next((found for found in listed if str(found.get("name", "")).rsplit("/", 1)[-1] == stack), None)
        # The count is every resource of the state (pulumi/pulumi pkg/backend/diy/stack.go: len(Resources)):
        # not there, destroyed (0), never updated (no count) or the stack's own resource alone is not up
        # without a look; any more may be what a refused `up` read, which only the state itself tells.
        if summary is None or (summary.get("resourceCount") or 0) <= 1 or not is_up(self.export_state(stack)):
            return None
        # As the Automation API's `stack_outputs` reads them, secrets in plain (its masked second read is not needed).
        said = self._pulumi(stack, "stack", "output", "--json", "--show-secrets", "--stack", stack, writes=False)
        values: dict[str, Any] = json.loads(said)
        return values

    def _options(self, *, create: bool = True) -> Any:
        from pulumi import automation as auto

        return auto.LocalWorkspaceOptions(work_dir=str(PROJECT_DIR), env_vars=pulumi_environment(create=create))


# The commands that drive Pulumi check first what they need, and end Pulumi's failures for expected
# conditions with one message and its fix, never a traceback.


def preflight(command: str, *, machine: Machine | None = None) -> str | None:
    """What stops `blueprint <command>` before it starts Pulumi, as one message with its fix, or None:
    `up` runs the whole doctor itself; the others need a recent enough Pulumi CLI.
    """
    if command != "up":
        check = pulumi_check(machine or RealMachine(), PULUMI_MIN_VERSION)
        if not check.ok:
            return f"blueprint {command} needs the {PULUMI} {PULUMI_MIN_VERSION} or later: {check.found}.\nfix: {check.fix}"
    return None


_DECRYPT = re.compile(r"incorrect passphrase|passphrase must be set|unable to read PULUMI_CONFIG_PASSPHRASE_FILE")
# The local backend's lock error names each lock file, .pulumi/locks/<org>/<project>/<stack>/<id>.json, and
# who created it (pulumi/pulumi pkg/backend/diy/lock.go, `checkForLock`).
_LOCK = re.compile(r"locks/(?:[^/\s]+/)*(?P<stack>[^/\s]+)/[^/\s]+\.json: created by (?P<holder>.+?)\s*$", re.MULTILINE)


def pulumi_failure(failure: BaseException | str, *, project_dir: Path, environ: Mapping[str, str]) -> str | None:
    """One message with its fix for a Pulumi failure that is an expected condition, or None for any
    other. `failure` is what the Automation API raised, or the output of a failed stack operation
    (or a config error the CLI met reading a stack's config itself).
    """
    from pulumi import automation as auto

    from cli import backend, passphrase
    from stacks.config import ConfigError

    # A config value the CLI reads itself (destroy reads phase1's dataDir), or the passphrase file the
    # runner makes or checks as it first runs Pulumi: the message names the fix.
    if isinstance(failure, (ConfigError, passphrase.PassphraseFileError)):
        return str(failure)
    reinstall = (
        f"fix: install the Pulumi CLI {PULUMI_VERSION}: `uv run blueprint doctor` gives its download and its fix "
        "(`--fix` installs it only where versions.py pins its SHA-256)"
    )
    # The Automation API runs `pulumi version` before anything else: a missing or broken CLI fails there.
    if isinstance(failure, FileNotFoundError) and Path(str(failure.filename)).name == "pulumi":
        return f"{PULUMI}: no `pulumi` on PATH.\n{reinstall}"
    if isinstance(failure, subprocess.CalledProcessError) and Path(str(failure.cmd[0])).name == "pulumi":
        return f"{PULUMI}: `pulumi version` failed (exit {failure.returncode}).\n{reinstall}"
    if isinstance(failure, auto.InvalidVersionError):
        return f"{PULUMI}: {failure}\n{reinstall}"
    if isinstance(failure, PulumiTimedOut):
        return timed_out(failure, project_dir=project_dir, environ=environ)
    text = failure if isinstance(failure, str) else str(failure) if isinstance(failure, auto.CommandError) else ""
    if isinstance(failure, StackFailed):  # a `pulumi` blueprint runs itself (`stack export`, `stack import`)
        text = failure.output
    if (unreachable := backend.unreachable(text, environ)) is not None:
        return unreachable
    if _DECRYPT.search(text):
        return passphrase.cannot_decrypt(environ, work_dir=project_dir)
    if "the stack is currently locked" in text:
        lock = _LOCK.search(text)
        stack, holder = (lock["stack"], f" ({lock['holder']})") if lock else ("<stack>", "")
        return (
            f"Another Pulumi command holds the lock of stack {stack}{holder}. Wait for it to end; if none is running "
            f"(an interrupted run leaves its lock behind), release the lock from {project_dir}: "
            f"{ENV_STEP} && pulumi cancel --yes -s {shlex.quote(stack)}"
        )
    return None


def timed_out(failure: PulumiTimedOut, *, project_dir: Path, environ: Mapping[str, str]) -> str:
    """Which `pulumi` hung, and how the user sees where it waits: the same command run by hand, which
    shows a prompt and prints no secret (without the flags blueprint adds for itself).
    """
    from cli import backend

    own = {"--non-interactive", "--show-secrets"}
    by_hand = shlex.join(word for word in shlex.split(failure.command) if word not in own)
    return (
        f"{failure.output}, and was stopped with every process it started: it waits on the Pulumi backend "
        f"({backend.shown(backend.url(environ))}), or on something else it needs (a prompt, a secrets provider).\n"
        f"fix: run it by hand to see where it waits: `cd {shlex.quote(str(project_dir))} && {ENV_STEP} && {by_hand}`; "
        f"for a backend that does not answer, check the network to it, or `{backend.VARIABLE}`"
    )


# Pulumi's own error lines, as `blueprint` quotes them after a failure.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_TRACEBACK = "Traceback (most recent call last):"
_BETWEEN_CHAINED = ("During handling of the above exception", "The above exception was the direct cause")
_EXCEPTION = re.compile(r"(?P<type>[A-Za-z_][\w.]*)(?::\s?(?P<message>.*))?$")


def pulumi_errors(output: str, most: int = 8) -> list[str]:
    """Pulumi's own errors (`error: ...` lines, each with the lines its message continues on), the
    last `most` of them, each once: what failed, in Pulumi's words. Pulumi prints every line of a
    diagnostic's message indented as its first (pulumi/pulumi pkg/backend/display/progress.go,
    `printDiagnostics`). A dynamic provider's error is the host's whole traceback
    (pulumi/dynamic/__main__.py, `_abort_with_traceback`), and so is the program's, after "Program
    failed with an unhandled exception:" (pulumi-language-python-exec): of it, only the exception
    Python ends it with, and its message's further lines (the commands of a fix); the type is
    dropped from blueprint's own (`providers.`), whose message says what happened in words. A failed
    command's script is named, not quoted (`_command_failure`).
    """
    lines = [line.rstrip() for line in _ANSI.sub("", output).splitlines()]
    said: list[str] = []
    index, resource = 0, None
    while index < len(lines):
        text = lines[index].strip()
        if header := _HEADER.fullmatch(text):
            resource = header["name"]
        if not text.lower().startswith("error:"):
            index += 1
            continue
        base = len(lines[index]) - len(lines[index].lstrip())
        message = text[len("error:") :].strip()
        if message == _TRACEBACK:
            entry, index = _final_exception(lines, index + 1, base)
        elif message == _UNHANDLED and index + 1 < len(lines) and lines[index + 1].strip() == _TRACEBACK:
            entry, index = _final_exception(lines, index + 2, base)
        else:
            further, index = _continuation(lines, index + 1, base)
            entry = _command_failure(message, further, resource) or "\n".join([text, *further])
        said.append(entry)
    return [line for entry in list(dict.fromkeys(said))[-most:] for line in entry.splitlines()]


_UNHANDLED = "Program failed with an unhandled exception:"
_SEVERITIES = ("error:", "warning:", "info:", "debug:")
"""How Pulumi begins a diagnostic (lower case: `ERROR:` is a line of some output)."""
_HEADER = re.compile(r"[\w.-]+:[\w./:$-]+ \((?P<name>[^()]+)\):")
"""The header over a resource's diagnostics: `command:local:Command (kind-cluster):`."""
_COMMAND_FAILED = re.compile(r'(?P<cause>[^"]*?): running "(?:[^"\\]|\\.)*":')
"""pulumi-command's `"%w: running %q:\n%s"` (provider/pkg/provider/local/commandOutputs.go): the
whole script quoted on one line, what it printed on the next."""
_OUTPUT_TAIL = 10


def _continues(line: str, base: int) -> bool:
    """Whether `line` continues the message of a diagnostic printed at indent `base`: indented more,
    or as much within Pulumi's Diagnostics (never at the left margin) and no diagnostic of its own.
    """
    indent = len(line) - len(line.lstrip())
    return indent > base or (indent == base > 0 and not line.strip().startswith(_SEVERITIES))


def _continuation(lines: list[str], start: int, base: int) -> tuple[list[str], int]:
    """The further lines of the message whose first is at `start - 1`, as said (two further in than
    it); and the index after them. A blank line is within it when the message goes on after it.
    """
    further, index = [], start
    while index < len(lines):
        line = lines[index]
        if not line.strip():
            if not _continues(next((later for later in lines[index + 1 :] if later.strip()), ""), base):
                break
        elif not _continues(line, base):
            break
        else:
            further.append("  " + line[base:].replace("\t", "  "))
        index += 1
    return further, index


def _command_failure(message: str, output: list[str], resource: str | None) -> str | None:
    """A failed command's error with its resource's name for its script (kilobytes, escaped on one
    line) and of what it printed, blueprint's own lines (a refusal: why, and the fix) or the last ones.
    """
    match = _COMMAND_FAILED.fullmatch(message)
    if not match:
        return None
    kept: list[str] = []
    within: int | None = None
    for line in output:
        indent = len(line) - len(line.lstrip())
        if line.strip().startswith("blueprint:"):
            kept.append(line)
            within = indent
        elif within is not None and indent > within:
            kept.append(line)
        else:
            within = None
    script = f"{resource}'s script" if resource else "its script"
    return "\n".join([f"error: {match['cause']}: running {script}:", *(kept or output[-_OUTPUT_TAIL:])])


def _final_exception(lines: list[str], start: int, base: int) -> tuple[str, int]:
    """The last exception of the traceback whose frames begin at `start` (its `error:` line indented
    by `base`), with its message's further lines; and the index after it.
    """
    found, index = "error: (a traceback without its exception)", start
    while index < len(lines):
        line = lines[index]
        indent = len(line) - len(line.lstrip())
        if not line.strip():
            # A blank line ends the diagnostic, unless a chained traceback follows it.
            following = next((later.strip() for later in lines[index + 1 :] if later.strip()), "")
            if not following.startswith((*_BETWEEN_CHAINED, _TRACEBACK)):
                break
        elif indent < base:
            break
        elif indent == base and not line.strip().startswith((*_BETWEEN_CHAINED, _TRACEBACK)):
            found = f"error: {_as_said(line.strip())}"
            while index + 1 < len(lines) and lines[index + 1].strip() and len(lines[index + 1]) - len(lines[index + 1].lstrip()) > base:
                index += 1
                found += "\n" + lines[index][base:]
        index += 1
    return found, index


def _as_said(exception: str) -> str:
    """`module.Type: message` as blueprint says it: blueprint's own without their type."""
    match = _EXCEPTION.match(exception)
    if match and match["type"].startswith("providers.") and match["message"] is not None:
        return match["message"]
    return exception
