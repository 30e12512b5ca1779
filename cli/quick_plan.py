"""The offline plan's shortcuts through the Pulumi SDK: what it does that no plan records (cli/plan.py)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from pulumi.runtime import known_types, rpc
from pulumi.runtime import resource as sdk_resource
from pulumi.runtime.proto import source_pb2

_SCALARS = (str, int, float, bool, type(None))
_SDK_CONTAINS_UNKNOWNS = rpc.contains_unknowns


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


class _Inline(ThreadPoolExecutor):
    """The plan loop's executor, which runs each call at once on the loop's thread. The SDK sends every
    monitor call (RegisterResource, Invoke, ...) through `run_in_executor`: to the recording monitor,
    which answers at once, a thread hop each is pure cost (a tenth of a plan, waiting on threads).
    The call runs as on a thread of its own: the plan's loop hidden (the mock monitor pumps a loop of
    the thread's own to serialise its answer), its error set on the future the SDK awaits.
    (A ThreadPoolExecutor that starts no thread: `set_default_executor` takes no other kind.) Every
    `run_in_executor(None, ...)` of the plan's loop runs so: a call that waited on the loop from there
    would wait forever, and the program makes none (tests/test_call_sites.py).
    """

    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.side = asyncio.new_event_loop()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        done: Future[Any] = Future()
        running = asyncio.events._get_running_loop()
        current = asyncio.get_event_loop_policy().get_event_loop() if running is None else running
        asyncio.events._set_running_loop(None)
        asyncio.set_event_loop(self.side)
        try:
            done.set_result(fn(*args, **kwargs))
        except BaseException as error:  # as a worker thread would: the awaiting task raises it
            done.set_exception(error)
        finally:
            asyncio.set_event_loop(current)
            asyncio.events._set_running_loop(running)
        return done

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.side.close()
        super().shutdown(wait, cancel_futures=cancel_futures)


def _contains_unknowns(val: Any) -> bool:
    """The SDK's `contains_unknowns`, answered at once for a scalar (whether it is the unknown value
    itself: no scalar holds another value); any other value goes to the SDK's own walk. That walk is
    a recursive closure made anew at each call, a cycle only the garbage collector frees: more than
    half of what a plan leaves it, as four calls in five are on a string or None.
    """
    return known_types.is_unknown(val) if type(val) in _SCALARS else _SDK_CONTAINS_UNKNOWNS(val)


@contextlib.contextmanager
def quick_registrations(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """What makes a plan cheap without changing it: no stack walk for each registration's source
    position (the SDK's `_get_stack_trace`: the plan records none) and no garbage collection while
    the program runs on `loop` (the SDK's futures and callbacks make cycles by the thousand, and each
    collection walks the whole heap: a quarter of a plan's time). The cycles go at the next
    collection after the plan, the echoes of a failed program's error with them unsaid (`_Echoes`);
    no thread hop for each monitor call (`_Inline`); and no closure for each check of a scalar for
    unknowns (`_contains_unknowns`).
    """
    stack_trace, contains_unknowns = sdk_resource._get_stack_trace, rpc.contains_unknowns
    collecting = gc.isenabled()
    echoes = _Echoes()
    loop.set_exception_handler(echoes)
    inline = _Inline()
    loop.set_default_executor(inline)
    sdk_resource._get_stack_trace = source_pb2.StackTrace
    rpc.contains_unknowns = _contains_unknowns
    gc.disable()
    failed = True
    try:
        yield
        failed = False
    finally:
        echoes.ended(loop, failed=failed)
        inline.shutdown()
        sdk_resource._get_stack_trace = stack_trace
        rpc.contains_unknowns = contains_unknowns
        if collecting:
            gc.enable()
