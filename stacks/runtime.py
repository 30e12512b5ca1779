"""What the program takes from where it runs: the one seam through which the offline plan stands in.

A real run (`pulumi up`, `blueprint up`) runs with `REAL`: this checkout's own id, phase2's files
for the platform's secrets and a pre-flight of the platform, every config value as Pulumi gives
it. The offline plan (`cli/plan.py`, which the tests plan through) installs its own `Runtime`
before it runs the program, and the real one again after. The program reads it through `current()`
and never asks what it runs under.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from stacks.release_record import HOST, ReleaseRecords


@dataclass(frozen=True, kw_only=True)
class PlatformStandIn:
    """What phase3 takes from a running platform, for a run that has none: it reads no file of
    phase2's and checks nothing before it starts.
    """

    gitlab_token: str
    """GitLab's admin token, which a real run reads from phase2's file."""
    openbao_password: str
    """The password of OpenBao's `blueprint` user, which a real run reads from phase2's file."""


@dataclass(frozen=True, kw_only=True)
class Runtime:
    """What differs between a real run and the offline plan."""

    release_records: ReleaseRecords = HOST
    """Where the release record beside each stack's data is (stacks/release_record.py): the host
    folders of this machine, or, in the plan, what its caller gives."""
    checkout_id: str | None = None
    """The checkout id that the host folders' owner names; None: this checkout's own, read from
    (or made in) its file (`stacks.config.paths.checkout_id`)."""
    stand_in_keys: frozenset[str] = frozenset()
    """The full config keys whose value the program has only as a stand-in (the plan cannot
    decrypt a secret): checks across keys skip them."""
    platform: PlatformStandIn | None = None
    """None: phase3 reads the platform's secrets from phase2's files and checks the platform first."""


REAL = Runtime()
_current = REAL


def current() -> Runtime:
    """The runtime the program runs with."""
    return _current


@contextmanager
def installed(runtime: Runtime) -> Iterator[None]:
    """Run the program with `runtime` inside the block (on every thread), and the one before after it."""
    global _current
    before, _current = _current, runtime
    try:
        yield
    finally:
        _current = before
