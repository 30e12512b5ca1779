"""The offline plan's shortcuts through the Pulumi SDK: what it does that no plan records (cli/plan.py)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Iterator
from typing import Any

from pulumi.runtime import resource as sdk_resource
from pulumi.runtime.proto import source_pb2


class _Echoes:
    """The exception handler of a plan's event loop. A program that fails leaves its error in
    thousands of the SDK's futures and tasks (each output that waited on the failed resource): when
    the garbage collector frees them, later, asyncio logs each as "exception was never retrieved",
    its traceback formatted (seconds of a later plan's time, and noise). The plan raises that error
    as ProgramFailed: after a failure, these echoes go unsaid; a plan that succeeds has each said.
    """

    def __init__(self) -> None:
        self.held: list[dict[str, Any]] | None = []  # until the program ends: none once it did
        self.failed = False

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if self.held is not None:
            self.held.append(context)
        elif not self.failed:
            loop.default_exception_handler(context)

    def ended(self, loop: asyncio.AbstractEventLoop, *, failed: bool) -> None:
        held, self.held, self.failed = self.held or [], None, failed
        for context in [] if failed else held:
            loop.default_exception_handler(context)


@contextlib.contextmanager
def quick_registrations(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """What makes a plan cheap without changing it: no stack walk for each registration's source
    position (the SDK's `_get_stack_trace`: the plan records none) and no garbage collection while
    the program runs on `loop` (the SDK's futures and callbacks make cycles by the thousand, and each
    collection walks the whole heap: a quarter of a plan's time). The cycles go at the next
    collection after the plan, the echoes of a failed program's error with them unsaid (`_Echoes`).
    """
    stack_trace = sdk_resource._get_stack_trace
    collecting = gc.isenabled()
    echoes = _Echoes()
    loop.set_exception_handler(echoes)
    sdk_resource._get_stack_trace = source_pb2.StackTrace
    gc.disable()
    failed = True
    try:
        yield
        failed = False
    finally:
        echoes.ended(loop, failed=failed)
        sdk_resource._get_stack_trace = stack_trace
        if collecting:
            gc.enable()
