"""`blueprint verify`'s report: the JSON a user pastes into a bug report (its shape is
cli/verify/report.schema.json), and the table a person reads, ending with the tally. Every value
a check read to do its work (a token, a password) is registered in `Secrets`, and masked wherever
it would appear: a report names a credential, never shows it.
"""

from __future__ import annotations

import datetime
import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from cli.doctor.machine import Machine, first_line, machine_family
from cli.verify.model import FAIL, SKIP, WARN, Result, tally

SCHEMA = Path(__file__).with_name("report.schema.json")
MASK = "[secret]"


class Secrets:
    """The secret values the checks read, to be masked in the report (thread-safe: checks run in parallel)."""

    def __init__(self) -> None:
        self._values: set[str] = set()
        self._lock = threading.Lock()

    def add(self, value: str) -> str:
        """Register `value` (a secret a check read) and give it back."""
        if len(value.strip()) >= 4:  # a 1-3 character "secret" would mask ordinary words
            with self._lock:
                self._values.add(value.strip())
        return value

    def masked(self, text: str) -> str:
        with self._lock:
            values = sorted(self._values, key=len, reverse=True)
        for value in values:
            text = text.replace(value, MASK)
        return text


def _version_of(machine: Machine, argv: Sequence[str]) -> str | None:
    code, said = machine.run(argv, timeout=10)
    return first_line(said) if code == 0 and said.strip() else None


NO_ENGINE = "none"
"""The report's container engine on an existing cluster, which no engine of this machine runs."""


def gathering(machine: Machine, engine: str) -> Callable[[float], dict[str, Any]]:
    """Start asking the machine, as a bug report needs it (OS and family, the engine (NO_ENGINE: none)
    and the tools, CPUs, memory), beside the checks: one daemon thread per program asked (a hung
    `docker info` costs its 20 s beside the checks, not after them). The function returned gives
    the facts, waiting for those still asked until providers/poll.py's CLOCK says `until` (the run's
    deadline): one not in by then is null, so the report is never later than the checks.
    """
    from providers import poll

    family = machine_family(machine)  # files read: at once
    asks: dict[str, Callable[[], Any]] = {
        "container_engine_version": lambda: None if engine == NO_ENGINE else _version_of(machine, [engine, "--version"]),
        "kind_version": lambda: _version_of(machine, ["kind", "version"]),
        "pulumi_version": lambda: _version_of(machine, ["pulumi", "version"]),
        "kubectl_version": lambda: _version_of(machine, ["kubectl", "version", "--client"]),
        "memory_bytes": machine.memory_bytes,
    }
    said: dict[str, Any] = {}
    threads = [
        threading.Thread(target=lambda key=key, ask=ask: said.__setitem__(key, ask()), daemon=True, name=f"verify fact {key}")
        for key, ask in asks.items()
    ]
    for thread in threads:
        thread.start()

    def facts(until: float) -> dict[str, Any]:
        for thread in threads:
            while thread.is_alive() and poll.CLOCK.now() < until:
                thread.join(0.05)
        return {
            "os": machine.system,
            "arch": machine.machine,
            "family": family.name,
            "distro": family.distro,
            "container_engine": engine,
            **{key: said.get(key) for key in asks},
            "cpus": machine.cpu_count(),
        }

    return facts


def report(results: Sequence[Result], platform_facts: Mapping[str, Any], secrets: Secrets, *, when: datetime.datetime) -> dict[str, Any]:
    from versions import BLUEPRINT

    document = {
        "blueprint_version": BLUEPRINT,
        "platform": dict(platform_facts),
        "when": when.astimezone(datetime.UTC).isoformat(timespec="seconds"),
        "summary": tally(results),
        "checks": [asdict(result) for result in results],
    }
    masked: dict[str, Any] = _masked(document, secrets)
    return masked


def _masked(value: Any, secrets: Secrets) -> Any:
    """`value` with every secret masked in each string it holds, on the strings themselves: the JSON
    text escapes a quote, a backslash or a newline, where a secret would no longer match.
    """
    if isinstance(value, str):
        return secrets.masked(value)
    if isinstance(value, Mapping):
        return {key: _masked(item, secrets) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_masked(item, secrets) for item in value]
    return value


def to_json(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=2) + "\n"


_LABELS = {FAIL: "FAIL", WARN: "WARN", SKIP: "SKIP"}


def to_table(document: Mapping[str, Any]) -> str:
    """The checks as a table, each fix under its line, then the tally."""
    checks = document["checks"]
    width = max((len(check["name"]) for check in checks), default=0)
    lines = [f"blueprint {document['blueprint_version']} on {document['platform'].get('distro')}, {document['when']}"]
    for check in checks:
        lines.append(f"{_LABELS.get(check['status'], 'PASS')}  {check['name']:<{width}}  {_one_line(check['saw'])}")
        if check["fix"]:
            lines.append(f"      fix: {check['fix']}")
    if measured := document.get("bring_up"):
        phases = ", ".join(f"{stack} {seconds} s" for stack, seconds in measured["phases"].items())
        slowest = ", ".join(f"{step['name']} {step['seconds']} s" for step in measured["slowest_steps"][:3])
        if phases:
            lines.append(f"last bring-up: {phases}; slowest steps: {slowest} (--json has the chain and the ten slowest)")
        lines.extend(
            f"last bring-up: {line}; the next `uv run blueprint up` that changes something rewrites it"
            for line in measured.get("unreadable", [])
        )
        if cache := measured.get("image_cache"):
            from cli.cache_served import line

            lines.append(f"last bring-up: {line(cache)}")
    lines.append(document["summary"])
    return "\n".join(lines) + "\n"


def _one_line(text: str) -> str:
    return re.sub(r"\s*\n\s*", "; ", text.strip())
