"""Helpers for tests that read offline plans (the same harness as `blueprint plan`)."""

from __future__ import annotations

import hashlib
import os
import pickle
import subprocess
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, cast

import yaml

from cli.plan import Plan, ProgramFailed, _chain, plan, routed_overrides
from stacks.config import schema

COMMAND = "command:local:Command"


Overrides = tuple[tuple[str, str], ...]


SHARED_PLANS: Path | None = None
"""Under xdist, a folder of this run that its workers share (tests/conftest.py): a plan one worker
made, the others read rather than make again."""


@cache
def _planned_once(stack: str, overrides: Overrides, preview: bool) -> Plan:
    """The plan of `stack`, made once a run (plans are pure); the program reads it, never a test."""
    return cast(Plan, pickle.loads(_pickled(stack, overrides, preview)))


def _shared_upstream(stack: str, overrides: Overrides) -> dict[str, Plan]:
    """The cached plans of `stack`'s upstream stacks, each as `stack`'s plan would make it (the
    same overrides reach it planned alone as under `stack`), or none to plan them under `stack`."""
    chain = _chain(stack)[1:]
    given = dict(overrides)
    if any(routed_overrides(name, given, planned=name) != routed_overrides(name, given, planned=stack) for name in chain):
        return {}
    try:
        return {name: _planned_once(name, overrides, False) for name in chain}
    except ProgramFailed:
        return {}  # planned under `stack`, the failure says whose it is


@cache
def _pickled(stack: str, overrides: Overrides, preview: bool) -> bytes:
    key = hashlib.sha256(repr((stack, overrides, preview)).encode()).hexdigest()
    shared = SHARED_PLANS / f"{key}.pickle" if SHARED_PLANS else None
    if shared and shared.exists():
        return shared.read_bytes()
    made = pickle.dumps(plan(stack, dict(overrides), preview=preview, planned_upstream=_shared_upstream(stack, overrides)))
    if shared:
        partial = shared.with_suffix(f".{os.getpid()}")
        partial.write_bytes(made)
        partial.replace(shared)  # whole or not at all, for a worker reading it now
    return made


def _cached_plan(stack: str, overrides: Overrides, preview: bool = False) -> Plan:
    """A copy of the cached plan of its own: what a test changes in it, no other test sees."""
    return cast(Plan, pickle.loads(_pickled(stack, overrides, preview)))


def plan_key(stack: str, **config: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """What `planned(stack, **config)` caches its plan under: the stack and its sorted overrides."""
    return stack, tuple(sorted((f"blueprint:{key}", value) for key, value in config.items()))


def planned(stack: str, **config: str) -> Plan:
    """The plan of `stack` with `blueprint:<key>=<value>` overrides (cached: plans are pure)."""
    return _cached_plan(*plan_key(stack, **config))


def kind_config_of(result: Plan) -> dict[str, Any]:
    """The kind config the cluster command feeds to `kind create cluster --config=-`."""
    return dict(yaml.safe_load(result.one(COMMAND, "kind-cluster")["inputs"]["stdin"]))


def run_script(
    command: Mapping[str, Any],
    script_key: str,
    *,
    path_prefix: Path | None = None,
    env: Mapping[str, str] = {},
    user: int | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run one of a recorded `local.Command`'s scripts as pulumi-command does: `/bin/sh -c`, with
    the recorded environment on top of ours, and the recorded stdin."""
    inputs = command["inputs"]
    environment = script_environment(inputs, env)
    if path_prefix is not None:
        environment["PATH"] = f"{path_prefix}:{environment['PATH']}"
    argv = ["/bin/sh", "-c", inputs[script_key]]
    if user is not None:
        argv = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *argv]
    return subprocess.run(argv, input=inputs.get("stdin", ""), env=environment, capture_output=True, text=True, timeout=30, check=False)


def script_environment(inputs: Mapping[str, Any], env: Mapping[str, str] = {}) -> dict[str, str]:
    """What pulumi-command runs a recorded command's script with: the recorded environment over ours,
    then the test's `env`. As the plans do, the scripts read the tests' stack files (none, unless a
    test gives its own), never the checkout's: a recorded STACK_FILE is looked up there."""
    environment = {**os.environ, **inputs.get("environment", {}), **env}
    if "STACK_FILE" in inputs.get("environment", {}) and "STACK_FILE" not in env and environment["STACK_FILE"]:
        environment["STACK_FILE"] = str(schema.STACK_FILES_DIR / Path(environment["STACK_FILE"]).name)
    return environment


def fake_command(folder: Path, name: str, body: str) -> None:
    """An executable `name` in `folder` running the shell `body`."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)


def waits_for(result: Plan, urn: str) -> set[str]:
    """Every resource `urn` waits for, directly or not: its dependencies and its provider, theirs, ..."""
    by_urn = {r["urn"]: r for r in result.resources}

    def direct(resource: Mapping[str, Any]) -> list[str]:
        provider = resource["provider"].rsplit("::", 1)[0] if resource["provider"] else None
        return [*resource["dependsOn"], *([provider] if provider else [])]

    seen: set[str] = set()
    todo = direct(by_urn[urn])
    while todo:
        current = todo.pop()
        if current not in seen and current in by_urn:
            seen.add(current)
            todo.extend(direct(by_urn[current]))
    return seen


def planned_as(mode: str, stack: str, **config: str) -> Plan:
    """The plan of `stack` as an `up` ("up") or as a preview ("preview") would register it."""
    overrides = tuple(sorted((f"blueprint:{key}", value) for key, value in config.items()))
    return _cached_plan(stack, overrides, mode == "preview")
