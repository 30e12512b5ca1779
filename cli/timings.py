"""How long a bring-up really took: `Recorder` takes the Automation API's engine events of one stack's
`up` (`on_event`) and keeps each resource's start and end, which `write` puts in a file in the
checkout (`.pulumi-state/blueprint-timings/<stack>.json`, there whichever backend holds the state:
`PULUMI_BACKEND_URL` moves the state, not this record); `measured` reads the last one of each phase
back for `blueprint verify`'s report: each phase's total, the slowest chain as it ran, and the ten
slowest steps. An `up` that made or changed nothing in a stack (a re-run after a stop) leaves that
stack's record as it was. Only a resource's URN, type, operations and times are kept: no input, no
output, so no secret.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

TIMINGS_DIR = "blueprint-timings"
SLOWEST = 10
_SKIPPED_OPS = frozenset({"same", "read", "refresh", "discard", "discard-replaced", "remove-pending-replace"})
"""Operations that make or change nothing (a `same` step only compares), not worth a line."""


def _acts(meta: Any) -> bool:
    """Whether a step does something itself: an operation that makes or changes, of a custom resource (a
    component, and the stack itself, only wait for their children: their end is their last child's).
    """
    state = meta.new or meta.old
    custom = getattr(state, "custom", True) if state is not None else True
    return str(getattr(meta.op, "value", meta.op)) not in _SKIPPED_OPS and bool(custom) and meta.type != "pulumi:pulumi:Stack"


class Recorder:
    """The `on_event` of one stack's `up`: each resource's start (its first ResourcePreEvent) and end
    (its last ResOutputsEvent, or ResOpFailedEvent), by URN, in the engine's own timestamps (Unix
    seconds), with its operations in order: a replacement is several steps of one URN
    (create-replacement, replace, delete-replaced), and its time is theirs together.
    """

    def __init__(self, stack: str) -> None:
        self.stack = stack
        self.steps: dict[str, dict[str, Any]] = {}
        self.first: int | None = None
        self.last: int | None = None
        self._lock = threading.Lock()  # the Automation API calls it from its event-reading thread

    def __call__(self, event: Any) -> None:
        when = int(getattr(event, "timestamp", 0) or 0)
        with self._lock:
            if when:
                self.first = when if self.first is None else min(self.first, when)
                self.last = when if self.last is None else max(self.last, when)
            pre, done, failed = event.resource_pre_event, event.res_outputs_event, event.res_op_failed_event
            if pre is not None and not pre.planning and _acts(pre.metadata):
                meta = pre.metadata
                op = str(getattr(meta.op, "value", meta.op))
                known = self.steps.get(meta.urn)
                if known is None:
                    self.steps[meta.urn] = {"urn": meta.urn, "type": meta.type, "op": op, "start": when, "end": None, "status": "running"}
                else:  # a later step of the same resource: its first start stays
                    ops = known["op"].split("+")
                    known |= {"op": "+".join(ops if op in ops else [*ops, op]), "status": "running"}
            for ended, status in ((done, "done"), (failed, "failed")):
                if ended is not None and ended.metadata.urn in self.steps:
                    self.steps[ended.metadata.urn] |= {"end": when, "status": status}

    def record(self) -> dict[str, Any]:
        with self._lock:
            steps = [dict(step) for step in self.steps.values()]
        total = (self.last - self.first) if self.first is not None and self.last is not None else 0
        return {"stack": self.stack, "started": self.first, "ended": self.last, "total_seconds": total, "steps": steps}


def folder(state_dir: Path) -> Path:
    return state_dir / TIMINGS_DIR


def write(state_dir: Path, recorder: Recorder) -> None:
    """The recorder's steps, as `<state_dir>/blueprint-timings/<stack>.json`: the last up of that stack
    that made or changed something (one that did nothing leaves the record of the one before). Written
    whole or not at all (a temporary file renamed over it), so a crash never leaves half a record.
    """
    record = recorder.record()
    if not record["steps"]:  # nothing made: no record, not even a first one (a locked stack, pulumi missing)
        return
    target = folder(state_dir)
    target.mkdir(parents=True, exist_ok=True)  # with the user's own backend, .pulumi-state may not exist yet
    written = target / f".{recorder.stack}.json.{os.getpid()}"
    try:
        written.write_text(json.dumps(record, indent=1) + "\n")
        os.replace(written, target / f"{recorder.stack}.json")
    finally:
        written.unlink(missing_ok=True)


def _name(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def _seconds(step: Mapping[str, Any]) -> int:
    return int(step["end"]) - int(step["start"]) if step.get("end") is not None else 0


def slowest_chain(steps: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The chain of steps as it ran: from the step that ended last, back through the step that ended
    last before each one started (what it waited for, as the engine starts a step once its
    dependencies are done), to one that started with nothing before it. Engine times are whole seconds,
    so many steps start and end in the same one: each step back must have started strictly earlier,
    or two such steps would lead to each other for ever.
    """
    ended = [step for step in steps if step.get("end") is not None]
    chain: list[dict[str, Any]] = []
    current = max(ended, key=lambda step: (step["end"], -step["start"]), default=None)
    while current is not None:
        chain.append({"name": _name(current["urn"]), "type": current["type"], "seconds": _seconds(current)})
        start = current["start"]
        before = [step for step in ended if step["end"] <= start and step["start"] < start]
        current = max(before, key=lambda step: step["end"], default=None)
    return chain[::-1]


def _step(step: Any) -> bool:
    return (
        isinstance(step, dict)
        and all(isinstance(step.get(key), str) for key in ("urn", "type", "op"))
        and type(step.get("start")) is int
        and (step.get("end") is None or type(step["end"]) is int)
    )


def _read(path: Path) -> dict[str, Any] | str:
    """One stack's record, or why it cannot be read: a file of another shape (edited by hand, from
    another release) is said, never a traceback.
    """
    try:
        record: Any = json.loads(path.read_text())
    except OSError as error:
        return f"{path}: unreadable ({error.strerror or error})"
    except ValueError:
        return f"{path}: unreadable (not JSON)"
    steps = record.get("steps") if isinstance(record, dict) else None
    if not (isinstance(steps, list) and all(map(_step, steps)) and type(record.get("total_seconds", 0)) is int):
        return f"{path}: unreadable (not a timings record: a dict with total_seconds and a list of steps)"
    return dict(record)


def measured(state_dir: Path, stacks: Sequence[str]) -> dict[str, Any] | None:
    """The last bring-up's durations, for the report: each stack's total, the slowest chain across
    them (in order), the ten slowest steps, `unreadable` naming each record that could not be
    read, and `image_cache`, whether its mirrors served the pulls (cli/cache_served.py, when the up
    ran one); None when no `up` has been recorded.
    """
    from cli import cache_served

    records, unreadable = [], []
    for stack in stacks:
        if not (path := folder(state_dir) / f"{stack}.json").exists():
            continue
        read = _read(path)
        if isinstance(read, str):
            unreadable.append(read)
        else:
            records.append({**read, "stack": stack})
    if not records and not unreadable:
        return None
    steps = [{**step, "stack": record["stack"]} for record in records for step in record["steps"]]
    slowest = sorted(steps, key=_seconds, reverse=True)[:SLOWEST]
    return (
        {
            "phases": {record["stack"]: record.get("total_seconds", 0) for record in records},
            "slowest_chain": [link for record in records for link in slowest_chain(record["steps"])],
            "slowest_steps": [
                {"stack": step["stack"], "name": _name(step["urn"]), "type": step["type"], "op": step["op"], "seconds": _seconds(step)}
                for step in slowest
            ],
        }
        | ({"unreadable": unreadable} if unreadable else {})
        | ({"image_cache": cache} if (cache := cache_served.recorded(state_dir)) else {})
    )
