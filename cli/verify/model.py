"""What `blueprint verify` checks are made of, and the runner that runs them.

A `Spec` names a check, what it needs (other checks by name) and its timeout; its `run` returns a
`Verdict`. `run_all` runs every spec whose needs passed, in parallel (one daemon thread each, so a
check that never answers keeps no one waiting past its timeout, nor the process from exiting), never
stops at a failure, and gives each a `Result`: a spec whose need failed or was skipped is skipped,
naming the check that failed at the root of it. The whole run has a deadline too: when it passes,
every check still running fails and every one not started is skipped, naming the check it waited
for, and the processes the unfinished checks started are killed (cli/doctor/machine.py `end_runs`).
"""

from __future__ import annotations

import contextlib
import graphlib
import queue
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

Item = TypeVar("Item")
Said = TypeVar("Said")

PASS, WARN, FAIL, SKIP = "pass", "warn", "fail", "skip"
STATUSES = (PASS, WARN, FAIL, SKIP)
DEADLINE = 50.0
"""Seconds the whole command may take (cli/verify `verify`, `run_all` its checks): a healthy platform
answers in well under it, and a check chain of several 30 s timeouts, the engine's detection before
it and the machine's facts gathered beside it still end the command within a minute."""


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """What one check found: its status, what it saw, and (fail or warn) the fix: a command or a doc section."""

    status: str
    saw: str
    fix: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status {self.status!r} is not one of {', '.join(STATUSES)}")
        if self.status in (FAIL, WARN) and not self.fix:
            raise ValueError(f"a {self.status} needs its fix: {self.saw!r}")


def passed(saw: str) -> Verdict:
    return Verdict(status=PASS, saw=saw)


def failed(saw: str, fix: str) -> Verdict:
    return Verdict(status=FAIL, saw=saw, fix=fix)


def warned(saw: str, fix: str) -> Verdict:
    return Verdict(status=WARN, saw=saw, fix=fix)


def skipped(saw: str) -> Verdict:
    """Not checked, and not for a failure upstream: it does not apply here (an existing cluster has no image cache)."""
    return Verdict(status=SKIP, saw=saw)


@dataclass(frozen=True, kw_only=True)
class Result:
    """One line of the report."""

    name: str
    status: str
    saw: str
    fix: str = ""
    skipped_because: str = ""
    """The check whose failure (or skip) makes this one meaningless: skipped for it; the first one up
    the chain of needs, not a skip in between."""


@dataclass(frozen=True, kw_only=True)
class Spec:
    name: str
    run: Callable[[], Verdict]
    needs: tuple[str, ...] = ()
    """Checks that must pass (or warn) first: when one fails or is skipped, this one is skipped, naming it."""
    after: tuple[str, ...] = ()
    """Checks that must be done first, whatever their verdict (those not in the run are not waited for):
    a check that disturbs what they ask (a restart) runs after them."""
    timeout: float = 30.0
    """Seconds it may take, from its start, before it is a failure."""
    fix_on_timeout: str = "run `uv run blueprint verify` again; if it keeps timing out, `uv run blueprint status` shows what answers"


def _result(spec: Spec, verdict: Verdict) -> Result:
    return Result(name=spec.name, status=verdict.status, saw=verdict.saw, fix=verdict.fix)


def _guarded(spec: Spec) -> Verdict:
    """The spec's verdict; a check that raises is a failure naming what went wrong (never a traceback)."""
    try:
        return spec.run()
    except Exception as error:  # a check's own bug or an unexpected answer: said, and the others go on
        return failed(f"the check could not finish: {type(error).__name__}", "report it with this report attached")


def _blocker(spec: Spec, done: dict[str, Result], run: Collection[str]) -> str | None:
    """The first need of `spec` that did not pass, once all its needs (and the checks of the `run` it
    comes `after`) are done; "" while one is not.
    """
    if any(need not in done for need in spec.needs) or any(first in run and first not in done for first in spec.after):
        return ""
    return next((need for need in spec.needs if done[need].status in (FAIL, SKIP)), None)


def _past_deadline(specs: Sequence[Spec], done: dict[str, Result], started: dict[str, float], deadline: float) -> None:
    """Every unfinished check's result once the run's `deadline` passed: one still running fails; one not
    started is skipped, naming the running check it waited for, through any other not started.
    """
    cut = [spec.name for spec in specs if spec.name in started and spec.name not in done]
    waiting = {spec.name: spec for spec in specs if spec.name not in done and spec.name not in started}
    for name in cut:
        spec = next(spec for spec in specs if spec.name == name)
        done[name] = _result(spec, failed(f"still running when the run's {deadline:g} s ran out", spec.fix_on_timeout))

    def root(name: str) -> str:
        waited = next((first for first in (*waiting[name].needs, *waiting[name].after) if first in cut or first in waiting), "")
        return root(waited) if waited in waiting else waited

    for name, spec in waiting.items():
        waited = next((first for first in (*spec.needs, *spec.after) if first in cut or first in waiting), "")
        at_root = root(name)
        through = f" (through {waited})" if waited != at_root else ""
        done[name] = Result(
            name=name,
            status=SKIP,
            saw=f"not checked: the run's {deadline:g} s ran out while it waited for {at_root or 'its turn'}{through}",
            skipped_because=at_root,
        )


def _answered(answers: queue.Queue[tuple[str, Verdict]], tick: float) -> list[tuple[str, Verdict]]:
    """The answers come in, waiting up to `tick` for the first: every one, so that none given before the deadline is lost."""
    got: list[tuple[str, Verdict]] = []
    with contextlib.suppress(queue.Empty):
        got.append(answers.get(timeout=tick))
        while True:
            got.append(answers.get_nowait())
    return got


def _in_order(specs: Sequence[Spec]) -> None:
    """Refuse checks that wait for each other (by `needs` or `after`), before any starts: a cycle is a
    programming error, said the same way whenever it would be met (graphlib finds it).
    """
    names = [spec.name for spec in specs]
    if len(set(names)) != len(names) or any(need not in names for spec in specs for need in spec.needs):
        raise ValueError(f"checks must have distinct names and need only checks of the run: {names}")
    waits = {spec.name: {first for first in (*spec.needs, *spec.after) if first in names} for spec in specs}
    try:
        graphlib.TopologicalSorter(waits).prepare()
    except graphlib.CycleError as cycle:
        raise ValueError(f"checks that need each other: {sorted(set(cycle.args[1]))}") from None


def _skip_blocked(specs: Sequence[Spec], done: dict[str, Result], started: Collection[str], run: Collection[str]) -> list[Spec]:
    """Skip every spec whose need failed or was skipped (named for the check that failed, however many
    skips lie between), until none is left to skip; the specs now free to start.
    """
    while True:
        free, skipped_now = [], False
        for spec in specs:
            if spec.name in done or spec.name in started:
                continue
            blocker = _blocker(spec, done, run)
            if blocker:
                root = done[blocker].skipped_because or blocker
                why = "failed" if done[root].status == FAIL else "was skipped"
                through = f" (through {blocker})" if root != blocker else ""
                done[spec.name] = Result(
                    name=spec.name, status=SKIP, saw=f"not checked: it needs {root}, which {why}{through}", skipped_because=root
                )
                skipped_now = True
            elif blocker is None:
                free.append(spec)
        if not skipped_now:
            return free


def run_all(specs: Sequence[Spec], *, tick: float = 0.25, deadline: float = DEADLINE) -> list[Result]:
    """Every spec's result, in the specs' order. Each check's timeout runs from its start, and the run's
    `deadline` (seconds) from the run's, on providers/poll.py's CLOCK (which the tests drive); `tick` is
    how often (real seconds) the runner looks at that clock while it waits. A check it gave up on
    (its timeout, or the deadline) has the processes it started killed before this returns.
    """
    from cli.doctor.machine import end_runs
    from providers import poll

    _in_order(specs)
    done: dict[str, Result] = {}
    started: dict[str, float] = {}
    answers: queue.Queue[tuple[str, Verdict]] = queue.Queue()
    by_name = {spec.name: spec for spec in specs}
    began, abandoned = poll.CLOCK.now(), False
    while len(done) < len(specs):
        for spec in _skip_blocked(specs, done, started, by_name):
            started[spec.name] = poll.CLOCK.now()
            threading.Thread(target=lambda s=spec: answers.put((s.name, _guarded(s))), daemon=True, name=f"verify {spec.name}").start()
        if not (running := [name for name in started if name not in done]):
            continue  # every check left waits on one just skipped or done (no cycle: `_in_order`)
        for name, verdict in _answered(answers, tick):
            if name not in done:
                done[name] = _result(by_name[name], verdict)
        now = poll.CLOCK.now()
        for name in running:
            spec = by_name[name]
            if name not in done and now - started[name] > spec.timeout:
                done[name], abandoned = _result(spec, failed(f"no answer within {spec.timeout:g} s", spec.fix_on_timeout)), True
        if len(done) < len(specs) and now - began > deadline:
            _skip_blocked(specs, done, started, by_name)  # a need that failed in this very tick is named by its dependants
            _past_deadline(specs, done, started, deadline)
            abandoned = True
    if abandoned:
        end_runs()
    return [done[spec.name] for spec in specs]


def at_once(call: Callable[[Item], Said], items: Sequence[Item]) -> list[Said]:
    """`call` of each item, all at the same time, in `items`' order: hosts asked in parallel, each under
    its own timeout, so one that never answers costs its own timeout once, not the check's, and the
    others' answers still name it. One daemon thread each (not concurrent.futures', which the
    interpreter joins at exit): a check given up while one still waits holds no one's exit.
    """
    said: list[Any] = [None] * len(items)
    raised: list[BaseException | None] = [None] * len(items)

    def one(index: int, item: Item) -> None:
        try:
            said[index] = call(item)
        except BaseException as error:  # given to the caller, as pool.map would
            raised[index] = error

    threads = [threading.Thread(target=one, args=(index, item), daemon=True, name="verify host") for index, item in enumerate(items)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if error := next((error for error in raised if error is not None), None):
        raise error
    return said


def tally(results: Sequence[Result]) -> str:
    """The one line at the end: "27 pass, 1 warn, 0 fail" (and the skipped, when any)."""
    counts = {status: sum(1 for result in results if result.status == status) for status in STATUSES}
    line = f"{counts[PASS]} pass, {counts[WARN]} warn, {counts[FAIL]} fail"
    return line + (f", {counts[SKIP]} skipped" if counts[SKIP] else "")
