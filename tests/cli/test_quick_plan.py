"""The offline plan's shortcuts through the Pulumi SDK (cli/quick_plan.py) change no answer the SDK
gives, and a plan leaves the SDK as it found it."""

from __future__ import annotations

import enum
import gc
from typing import Any

import pytest
from pulumi.output import UNKNOWN
from pulumi.runtime import resource as sdk_resource
from pulumi.runtime import rpc
from pulumi.runtime.rpc import contains_unknowns as sdk_walk  # bound at import, before any plan

import cli.plan
from cli.plan import ProgramFailed, plan
from cli.quick_plan import _contains_unknowns


class Colour(enum.StrEnum):
    RED = "red"


VALUES = {
    "a string": "text",
    "an empty string": "",
    "the wire's unknown string": rpc.UNKNOWN,
    "an int": 3,
    "a float": 2.5,
    "a bool": True,
    "None": None,
    "a str enum": Colour.RED,
    "bytes": b"bytes",
    "the unknown": UNKNOWN,
    "a list holding the unknown": [1, UNKNOWN],
    "a dict holding it deep": {"a": {"b": [UNKNOWN]}},
    "a dict of knowns": {"a": ["x"]},
    "an empty list": [],
    "a tuple holding the unknown": (UNKNOWN,),
}


@pytest.mark.parametrize("value", VALUES.values(), ids=VALUES.keys())
def test_the_check_for_unknowns_answers_as_the_sdks_walk_for_every_kind_of_value(value: Any) -> None:
    assert _contains_unknowns(value) is sdk_walk(value)


@pytest.mark.parametrize("fails", [False, True], ids=["a plan", "a plan whose program fails"])
def test_a_plan_leaves_the_sdk_and_the_garbage_collector_as_it_found_them(monkeypatch: pytest.MonkeyPatch, fails: bool) -> None:
    real = cli.plan._StandInMocks.new_resource

    def failing(self: cli.plan._StandInMocks, args: object) -> object:
        if fails and getattr(args, "name", "") == "kind-cluster":
            raise RuntimeError("kind-cluster: it failed")
        return real(self, args)  # type: ignore[arg-type]

    monkeypatch.setattr(cli.plan._StandInMocks, "new_resource", failing)
    found = (rpc.contains_unknowns, sdk_resource._get_stack_trace, gc.isenabled())
    if fails:
        with pytest.raises(ProgramFailed):
            plan("phase1")
    else:
        plan("phase1")
    assert (rpc.contains_unknowns, sdk_resource._get_stack_trace, gc.isenabled()) == found
