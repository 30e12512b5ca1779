"""The tests' own OpenBao server (tests/providers/engine.py): reached past the proxy a corporate
machine's environment names, and never left running by a start that gave up on it."""

from __future__ import annotations

import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.providers.engine import BaoServer, free_port, running_bao, writer_token


def test_a_proxy_the_environment_names_does_not_stand_between_the_tests_and_their_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`requests` sends even 127.0.0.1 through `http_proxy` unless `no_proxy` names it."""
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    with running_bao(tmp_path / "bao", persistent=False) as server:
        assert writer_token(server)


@dataclass
class Unanswered(BaoServer):
    """A server asked for where it does not listen: it runs, and never answers."""

    elsewhere: int = field(default_factory=free_port)

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.elsewhere}"


def test_a_start_that_gets_no_answer_kills_the_server_it_started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[subprocess.Popen[bytes]] = []
    popen = subprocess.Popen

    def recorded(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        started.append(popen(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(subprocess, "Popen", recorded)  # what engine.py starts the server with
    server = Unanswered(tmp_path / "bao", persistent=False)
    try:
        with pytest.raises(RuntimeError, match="bao server did not start"):
            server.start(within=2)
        [process] = started
        assert process.poll() is not None, "the server was left running"
    finally:
        for process in started:
            process.kill()
            process.wait(timeout=30)


@pytest.mark.parametrize("may_exit", [False, True], ids=["a start", "a start that may exit"])
def test_a_port_taken_between_its_probe_and_the_start_is_traded_for_another(tmp_path: Path, may_exit: bool) -> None:
    """The probe lets the port go (as a server does that exits before its restart): whoever takes
    it meanwhile costs the test nothing but the port."""
    with socket.create_server(("127.0.0.1", 0)) as taken:
        server = BaoServer(tmp_path / "bao", port=taken.getsockname()[1], persistent=False)
        try:
            server.start(may_exit=may_exit)
            assert server.process is not None
            assert server.process.poll() is None, server.log_since_start()
            assert server.port != taken.getsockname()[1]
            assert writer_token(server)
        finally:
            server.stop()
