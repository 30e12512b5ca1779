"""Trying again: the one loop behind every wait and retry of the providers and phase3's pre-flight.

`retry(attempt, pauses)` calls `attempt` until it returns, sleeping the next pause each time it
raises `NotYet`; when the pauses run out, the last `NotYet` goes to the caller, which says what it
waited for and how long. The pauses are a schedule (a gateway error tried again after 1, 2, 4 and
8 s) or a budget, `within(seconds, every)`.

Time is read and slept on `CLOCK`, looked up at each use: tests put a clock they drive there
(tests/providers/clock.py), so no test waits for real time to pass or depends on how fast the
machine is.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Clock:
    now: Callable[[], float]
    """Seconds, monotonic."""
    sleep: Callable[[float], None]


CLOCK = Clock(time.monotonic, time.sleep)
"""The clock every wait reads and sleeps on."""


class NotYet(Exception):
    """What an attempt raises when trying again may succeed; the message says why it did not yet.

    `outcome` is what the attempt got (a gateway's answer, say), for the caller once the tries run
    out; `pause` is the pause the answer asked for (`Retry-After`), taken instead of the next one.
    """

    def __init__(self, why: str, *, outcome: Any = None, pause: float | None = None) -> None:
        super().__init__(why)
        self.outcome = outcome
        self.pause = pause


def within(seconds: float, every: float) -> Iterator[float]:
    """Pauses of `every` seconds until `seconds` have passed from this call (the last one cut to
    what is left): a budget, which an attempt that ends after it does not stretch.
    """
    deadline = CLOCK.now() + seconds

    def pauses() -> Iterator[float]:
        while (left := deadline - CLOCK.now()) > 0:
            yield min(every, left)

    return pauses()


def retry(attempt: Callable[[], T], pauses: Iterable[float]) -> T:
    """What `attempt` returns, tried again after each of `pauses` while it raises `NotYet`; the
    last `NotYet` propagates once they run out. Any other exception propagates at once.
    """
    left = iter(pauses)
    while True:
        try:
            return attempt()
        except NotYet as not_yet:
            pause = next(left, None)
            if pause is None:
                raise
            CLOCK.sleep(pause if not_yet.pause is None else not_yet.pause)
