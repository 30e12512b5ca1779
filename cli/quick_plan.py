"""The offline plan's shortcuts through the Pulumi SDK: what it does that no plan records (cli/plan.py)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

from pulumi.runtime import resource as sdk_resource
from pulumi.runtime.proto import source_pb2


@contextlib.contextmanager
def quick_registrations() -> Iterator[None]:
    """What makes a plan cheap without changing it: no stack walk for each registration's source
    position (the SDK's `_get_stack_trace`: the plan records none) and no garbage collection while
    the program runs (the SDK's futures and callbacks make cycles by the thousand, and each
    collection walks the whole heap: a quarter of a plan's time). The cycles go at the next
    collection after the plan.
    """
    stack_trace = sdk_resource._get_stack_trace
    collecting = gc.isenabled()
    sdk_resource._get_stack_trace = source_pb2.StackTrace
    gc.disable()
    try:
        yield
    finally:
        sdk_resource._get_stack_trace = stack_trace
        if collecting:
            gc.enable()
