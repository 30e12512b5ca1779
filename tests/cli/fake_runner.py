"""A fake `StackRunner` (no Pulumi CLI here) and phase2's outputs, for the tests of the commands."""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from cli.phases import Context
from cli.stack_runner import StackFailed
from stacks import outputs

PHASE2 = {
    outputs.GITLAB_URL: "https://gitlab.local.example.net",
    outputs.REGISTRY_HOST: "registry.local.example.net",
    outputs.OPENBAO_ADDR: "https://127.0.0.1:8200",
    outputs.OPENBAO_SERVER_NAME: "openbao.local.example.net",
    outputs.CA_CERT_FILE: "/data/platform/ca.crt",
    outputs.ADMIN_TOKEN_FILE: "/data/platform/secrets/gitlab-admin-token",
    outputs.GLAB_TOKEN_FILE: "/data/platform/secrets/gitlab-glab-token",
    outputs.GITLAB_ROOT_PASSWORD_FILE: "/data/platform/secrets/gitlab-root-password",
    outputs.OPENBAO_ADMIN_PASSWORD_FILE: "/data/platform/secrets/openbao-admin-password",
    outputs.APPS_GROUP_ID: "7",
}
"""phase2's outputs: where root's token and password are kept, never what they are."""


def phase2_with_token(folder: Path, kept: str = "secret-value") -> dict[str, Any]:
    """PHASE2, its admin token file in `folder`, holding `kept` as phase2 writes it (no prefix)."""
    token_file = folder / "gitlab-admin-token"
    token_file.write_text(kept + "\n")
    return {**PHASE2, outputs.ADMIN_TOKEN_FILE: str(token_file)}


def phase2_with_glab_token(folder: Path, kept: str = "glpat-glab-value") -> dict[str, Any]:
    """phase2_with_token, and glab's own token file in `folder`, holding `kept` whole, as GitLab made it."""
    token_file = folder / "gitlab-glab-token"
    token_file.write_text(kept + "\n")
    return {**phase2_with_token(folder), outputs.GLAB_TOKEN_FILE: str(token_file)}


class FakeRunner:
    def __init__(self, existing: Mapping[str, dict[str, Any]] | None = None, failing: str | None = None) -> None:
        self.calls: list[tuple[str, str]] = []
        self.existing = dict(existing or {})
        self.failing = failing
        self.config: dict[tuple[str, str], str] = {}
        self.destroy_env: dict[str, str] = {}

    def _do(self, verb: str, stack: str) -> None:
        self.calls.append((verb, stack))
        if stack == self.failing:
            raise StackFailed(stack, f"  kubernetes:helm.sh/v3:Release ({stack}-chart):\n    error: timed out waiting for the condition")

    def up(self, stack: str, on_output: Callable[[str], None]) -> None:
        self._do("up", stack)
        self.existing.setdefault(stack, {})

    def preview(self, stack: str, on_output: Callable[[str], None]) -> None:
        self._do("preview", stack)

    def destroy(self, stack: str, on_output: Callable[[str], None], env: Mapping[str, str], *, run_program: bool = False) -> None:
        self._do("destroy", stack)
        self.destroy_env = dict(env)

    def set_config(self, stack: str, key: str, value: str) -> None:
        self.config[(stack, key)] = value

    def outputs(self, stack: str) -> dict[str, Any] | None:
        return self.existing.get(stack)

    def export_state(self, stack: str) -> dict[str, Any]:
        return {"version": 3, "deployment": {"resources": []}}

    def import_state(self, stack: str, state: dict[str, Any]) -> None:
        self.calls.append(("import", stack))


def context(runner: FakeRunner, **extra: Any) -> tuple[Context, io.StringIO]:
    out = io.StringIO()
    return Context(runner=runner, out=out, **extra), out
