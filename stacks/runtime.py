"""What the program takes from where it runs: the seam through which the offline plan stands in.

A real run (`pulumi up`, `blueprint up`) runs with `REAL`: this checkout's own id, the platform
phase2 brought up on this machine (its files, and a pre-flight), every config value as Pulumi
gives it. The offline plan (`cli/plan.py`, which the tests plan through) installs its own `Runtime`
before it runs the program, and the real one again after. The program reads it through `current()`
and never asks what it runs under. Which stack files the config comes from is another switch
(stacks/config/schema.py `STACK_FILES_DIR`, which the tests and the generated pages point at none):
it chooses the config, real run or plan alike, and stands in for nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import pulumi

from components.engine import EngineFacts, HostEngine
from stacks import outputs
from stacks.layout_record import HOST, LayoutRecords


class Platform(Protocol):
    """What a phase3 stack takes from the platform phase2 brought up (`inputs`: phase2's outputs)."""

    def admin_token(self, inputs: Mapping[str, Any]) -> pulumi.Input[str]:
        """Root's GitLab token (secret)."""

    def writer_password(self, inputs: Mapping[str, Any]) -> pulumi.Input[str]:
        """The password of OpenBao's `blueprint` user (secret)."""

    def preflight(self, inputs: Mapping[str, Any]) -> None:
        """Check that the platform answers before phase3 touches it."""


class Phase2OnThisMachine:
    """The platform as a real run finds it: its secrets in phase2's files (no stack output holds
    them; a missing file is a RunError naming it and the fix), checked by the pre-flight first.
    """

    def admin_token(self, inputs: Mapping[str, Any]) -> pulumi.Input[str]:
        try:
            return pulumi.Output.secret(outputs.read_admin_token(str(inputs[outputs.ADMIN_TOKEN_FILE])))
        except outputs.SecretFileUnavailable as error:
            raise pulumi.RunError(str(error)) from None

    def writer_password(self, inputs: Mapping[str, Any]) -> pulumi.Input[str]:
        path = str(inputs[outputs.OPENBAO_WRITER_PASSWORD_FILE])
        try:
            password = outputs.read_secret_file(path, "OpenBao's blueprint password")
        except outputs.SecretFileUnavailable as error:
            raise pulumi.RunError(str(error)) from None
        if not password:
            raise pulumi.RunError(
                f"phase2 is not up, or its data folder is not on this machine: {path} is missing or empty; run `uv run blueprint up` first"
            )
        return pulumi.Output.secret(password)

    def preflight(self, inputs: Mapping[str, Any]) -> None:
        """OpenBao, GitLab's API and registry, both runners (stacks/preflight.py); a preview warns instead."""
        # Imported here: it loads the runners' component, pulumi_kubernetes with it, which only phase3 needs.
        from stacks import preflight

        preflight.run(inputs, preview=pulumi.runtime.is_dry_run())


@dataclass(frozen=True, kw_only=True)
class Runtime:
    """What differs between a real run and the offline plan."""

    layout_records: LayoutRecords = HOST
    """Where the layout record beside each stack's data is (stacks/layout_record.py): the host
    folders of this machine, or, in the plan, what its caller gives."""
    checkout_id: str | None = None
    """The checkout id that the host folders' owner names; None: this checkout's own, read from
    (or made in) its file (`stacks.config.paths.checkout_id`)."""
    stand_in_keys: frozenset[str] = frozenset()
    """The full config keys whose value the program has only as a stand-in (the plan cannot
    decrypt a secret): checks across keys skip them."""
    platform: Platform = Phase2OnThisMachine()
    """What a phase3 stack calls GitLab and OpenBao with, and how it checks them first."""
    engine: EngineFacts = HostEngine()
    """Which container engine phase1 runs kind on, when its config leaves it to detection, and
    whether that engine can (components/engine.py): asked of this machine, or, in the plan, a stand-in."""
    destroying: bool = False
    """The run is a `pulumi destroy --run-program` (`blueprint destroy`, DESTROYING): the program registers
    what an `up` does, so each resource's options match the state, and skips what only an `up` needs
    before its resources (stacks/program.py `_deploy`)."""


DESTROYING = "BLUEPRINT_DESTROYING"
"""Set to "1" in the environment of the program `blueprint destroy` runs (cli/destroy_program.py)."""

REAL = Runtime(destroying=os.environ.get(DESTROYING) == "1")
_current = REAL


def current() -> Runtime:
    """The runtime the program runs with."""
    return _current


@contextmanager
def installed(runtime: Runtime) -> Iterator[None]:
    """Run the program with `runtime` inside the block (on every thread), and the one before after it."""
    global _current
    before, _current = _current, runtime
    try:
        yield
    finally:
        _current = before
