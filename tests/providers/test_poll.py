"""The one retry loop (providers/poll.py): it tries again only after `NotYet`, sleeps the pauses it
is given on the clock tests drive, and gives the last `NotYet` back once they run out."""

from __future__ import annotations

import pytest

from providers import poll
from tests.providers.clock import FakeClock


def attempt_that_succeeds_after(times: int, calls: list[float], clock: FakeClock, takes: float = 0.0) -> str:
    """Raises NotYet the first `times` calls (each taking `takes` seconds), recording when each began."""
    calls.append(clock.now())
    clock.advance(takes)
    if len(calls) <= times:
        raise poll.NotYet(f"not yet ({len(calls)})")
    return "done"


def test_an_attempt_is_tried_again_after_each_pause_until_it_returns(clock: FakeClock) -> None:
    calls: list[float] = []
    assert poll.retry(lambda: attempt_that_succeeds_after(2, calls, clock), (1.0, 2.0, 4.0)) == "done"
    assert clock.pauses == [1.0, 2.0]


def test_the_last_not_yet_is_given_back_when_the_pauses_run_out(clock: FakeClock) -> None:
    calls: list[float] = []
    with pytest.raises(poll.NotYet, match=r"not yet \(3\)"):
        poll.retry(lambda: attempt_that_succeeds_after(5, calls, clock), (1.0, 1.0))
    assert len(calls) == 3


def test_any_other_exception_is_not_tried_again(clock: FakeClock) -> None:
    def refused() -> None:
        raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        poll.retry(refused, (1.0, 1.0))
    assert clock.pauses == []


def test_a_pause_the_answer_names_replaces_the_next_one(clock: FakeClock) -> None:
    answers = iter([poll.NotYet("throttled", pause=30.0)])

    def attempt() -> str:
        if (answer := next(answers, None)) is not None:
            raise answer
        return "done"

    assert poll.retry(attempt, (1.0,)) == "done"
    assert clock.pauses == [30.0]


def test_a_budget_counts_from_its_start_and_its_last_pause_is_cut_to_what_is_left(clock: FakeClock) -> None:
    """Time the attempts take counts too: a budget of 9 s, attempts of 3 s, pauses of 2 s."""
    calls: list[float] = []
    start = clock.now()
    with pytest.raises(poll.NotYet):
        poll.retry(lambda: attempt_that_succeeds_after(100, calls, clock, takes=3.0), poll.within(9.0, every=2.0))
    assert [round(call - start, 6) for call in calls] == [0.0, 5.0, 9.0]
    assert clock.pauses == [2.0, 1.0]


def test_a_budget_of_nothing_tries_once(clock: FakeClock) -> None:
    calls: list[float] = []
    with pytest.raises(poll.NotYet):
        poll.retry(lambda: attempt_that_succeeds_after(1, calls, clock), poll.within(0.0, every=1.0))
    assert (len(calls), clock.pauses) == (1, [])
