"""A clock the test drives, for every wait and retry of providers/poll.py.

A sleep passes no real time: it records the pause, moves the clock on, and runs what `at` scheduled
by then (a server that starts, a pipeline that finishes). So a test of a wait asserts what the wait
did (how long, how often) and never depends on how fast the machine is.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from providers import poll


class FakeClock:
    def __init__(self) -> None:
        self.time = 1000.0
        self.pauses: list[float] = []
        self._due: list[tuple[float, Callable[[], object]]] = []

    def now(self) -> float:
        return self.time

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        """Let `seconds` pass (a slow step the test stands in for), running what falls due."""
        self.time += seconds
        due = [action for when, action in self._due if when <= self.time]
        self._due = [(when, action) for when, action in self._due if when > self.time]
        for action in due:
            action()

    def at(self, seconds: float, action: Callable[[], object]) -> None:
        """Run `action` once `seconds` have passed from now."""
        self._due.append((self.time + seconds, action))

    @property
    def waited(self) -> float:
        """Seconds slept in all."""
        return sum(self.pauses)


def install(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """A fake clock in `poll.CLOCK`, for the rest of the test."""
    clock = FakeClock()
    monkeypatch.setattr(poll, "CLOCK", poll.Clock(clock.now, clock.sleep))
    return clock
