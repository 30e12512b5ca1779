"""The OpenBao servers a test process shares between modules: one over plain HTTP, one over TLS with
phase2's kind of certificate (from `our_pki`), each self-initialised, in memory, started when a test
first asks for it and stopped at the end of the session.

Why: a start costs the server about 0.4 CPU-s (its self-initialisation hashes two passwords, and
`running_bao` logs both users in once), and under xdist a module's own server is started again in
every worker that runs any of its tests. Only tests that read the server, converge it (which changes
nothing in a converged vault) or write a KV path no other test reads may use these: a test that
seals, restarts or reconfigures a server keeps one of its own. Two things last the whole session
here, whichever module made them: failed logins (OpenBao locks a user out after 5 in a row with no
good one between: a test that means to fail a login fails one, and every converge logs in well) and
tokens (a writer's lives 15 minutes: a test compares the tokens it made, never all there are).

Each module asks through a session-scoped fixture of its own (`shared_server`); pytest makes one
fixture per module that defines it, so the sharing is here, in this process, not in pytest's cache.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from tests.providers.bao_tls import Pki, issue
from tests.providers.engine import BaoServer, running_bao

_running = ExitStack()
_servers: dict[bool, BaoServer] = {}
_pki: list[Pki] = []


def our_pki(factory: pytest.TempPathFactory) -> Pki:
    """The platform's CA and OpenBao's certificate from it, as the shared TLS server serves it (files no test changes)."""
    if not _pki:
        _pki.append(issue(factory.mktemp("ours")))
    return _pki[0]


def shared_server(factory: pytest.TempPathFactory, *, tls: bool) -> Iterator[BaoServer]:
    """The body of a module's session-scoped fixture: this process's server over TLS (`our_pki`) or
    plain HTTP, started at the first ask; all of them stopped when the session ends (at the first of
    these fixtures torn down: the session is over, no module asks again)."""
    if tls not in _servers:
        folder = factory.mktemp("shared-tls" if tls else "shared") / "bao"
        _servers[tls] = _running.enter_context(running_bao(folder, persistent=False, pki=our_pki(factory) if tls else None))
        _servers[tls].wait_until_active()
    yield _servers[tls]
    _running.close()
    _servers.clear()
