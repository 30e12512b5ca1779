"""The stacks driven through Pulumi's Automation API: every command that talks to Pulumi goes through a
`StackRunner`, so the command logic (phase order, the preserveData recording, the summary) is tested
without a Pulumi CLI; `AutomationRunner` is the real one.

Each phase is a stack of this project on the local `file://` backend (`.pulumi-state/`), with the
user's private passphrase (cli/passphrase.py). Pulumi's own progress is streamed as it comes.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from stacks.config import PROJECT_DIR


class StackFailed(Exception):
    """A stack's `up`, `preview` or `destroy` failed; `output` is what Pulumi printed."""

    def __init__(self, stack: str, output: str) -> None:
        super().__init__(f"stack {stack} failed")
        self.stack = stack
        self.output = output


class StackRunner(Protocol):
    def up(self, stack: str, on_output: Callable[[str], None]) -> None: ...
    def preview(self, stack: str, on_output: Callable[[str], None]) -> None: ...
    def destroy(self, stack: str, on_output: Callable[[str], None], env: Mapping[str, str]) -> None: ...
    def set_config(self, stack: str, key: str, value: str) -> None: ...
    def outputs(self, stack: str) -> dict[str, Any] | None:
        """The stack's outputs, secrets included, or None when the stack does not exist."""
        ...

    def export_state(self, stack: str) -> dict[str, Any]:
        """The stack's state, as `pulumi stack export` writes it (secrets stay encrypted)."""
        ...

    def import_state(self, stack: str, state: dict[str, Any]) -> None: ...


def pulumi_environment() -> dict[str, str]:
    """What every Pulumi command of blueprint runs with: the project's own backend, and the user's
    passphrase for every stack (a stack reads its upstream's secret outputs with it). Only ever the
    passphrase's file: LocalWorkspace shows its env_vars in its repr.
    """
    from cli import passphrase

    return {
        "PULUMI_BACKEND_URL": f"file://{PROJECT_DIR / '.pulumi-state'}",
        # Every command would otherwise ask the network for a newer CLI first.
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        **passphrase.environment(os.environ),
    }


class AutomationRunner:
    """The real thing: Pulumi's Automation API over this project's folder (a local program, as
    dynamic providers need).
    """

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
        self._run(stack, lambda: self._stack(stack).up(on_output=on_output, color="auto"))

    def preview(self, stack: str, on_output: Callable[[str], None]) -> None:
        self._run(stack, lambda: self._stack(stack).preview(on_output=on_output, color="auto"))

    def destroy(self, stack: str, on_output: Callable[[str], None], env: Mapping[str, str]) -> None:
        previous = {key: os.environ.get(key) for key in env}
        os.environ.update(env)  # the Automation API passes the process environment to the CLI
        try:
            self._run(stack, lambda: self._stack(stack).destroy(on_output=on_output, color="auto"))
        finally:
            for key, value in previous.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    def set_config(self, stack: str, key: str, value: str) -> None:
        """Set `key` on `stack` if the stack exists; never create a stack just for that."""
        from pulumi import automation as auto

        try:
            selected = auto.select_stack(stack_name=stack, work_dir=str(PROJECT_DIR), opts=self._options())
        except auto.StackNotFoundError:
            return
        selected.set_config(key, auto.ConfigValue(value=value))

    # Not the Automation API's export_stack/import_stack: they always export with --show-secrets and
    # leave that plaintext in a temporary file when an import fails. Without it, secrets stay the
    # stack's own ciphertext, which `pulumi stack import` takes back as it is.
    def export_state(self, stack: str) -> dict[str, Any]:
        exported: dict[str, Any] = json.loads(self._pulumi(stack, "stack", "export", "--stack", stack))
        return exported

    def import_state(self, stack: str, state: dict[str, Any]) -> None:
        with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="blueprint-state-") as file:
            json.dump(state, file)
            file.flush()
            self._pulumi(stack, "stack", "import", "--file", file.name, "--stack", stack)

    def _pulumi(self, stack: str, *argv: str) -> str:
        done = subprocess.run(
            ["pulumi", *argv, "--non-interactive"],
            cwd=PROJECT_DIR,
            env={**os.environ, **pulumi_environment()},
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        if done.returncode != 0:
            raise StackFailed(stack, f"`pulumi {shlex.join(argv)}` failed: {done.stderr.strip() or done.stdout.strip()}")
        return done.stdout

    def outputs(self, stack: str) -> dict[str, Any] | None:
        """None when the stack does not exist or holds no resource: a `pulumi destroy` leaves the
        stack in place, empty, and an empty stack is not up.
        """
        from pulumi import automation as auto

        workspace = auto.LocalWorkspace(work_dir=str(PROJECT_DIR), env_vars=pulumi_environment())
        # Named `<stack>`, or `organization/blueprint/<stack>` with PULUMI_FULLY_QUALIFY_STACK_NAMES.
        summary = next((found for found in workspace.list_stacks() if found.name.rsplit("/", 1)[-1] == stack), None)
        if summary is None or not summary.resource_count:
            return None  # not there, destroyed (0), or never updated (no count at all)
        selected = auto.select_stack(stack_name=stack, work_dir=str(PROJECT_DIR), opts=self._options())
        return {key: value.value for key, value in selected.outputs().items()}

    def _options(self) -> Any:
        from pulumi import automation as auto

        return auto.LocalWorkspaceOptions(work_dir=str(PROJECT_DIR), env_vars=pulumi_environment())
