"""The one session factory (providers/http.py): every session blueprint builds sends its credential
to the service named and nowhere else: no redirect followed, nothing taken from the environment."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from providers.http import session
from tests.providers.engine import free_port


class Recorder(http.server.BaseHTTPRequestHandler):
    """Answers `/moved` with a redirect to `elsewhere`, anything else with 200; records each request's headers."""

    seen: list[dict[str, str]] = []
    elsewhere = ""

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        self.seen.append(dict(self.headers))
        self.send_response(301 if self.path == "/moved" else 200)
        if self.path == "/moved":
            self.send_header("Location", f"{self.elsewhere}/landed")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_: Any) -> None:
        return


def serve() -> tuple[str, type[Recorder], http.server.ThreadingHTTPServer]:
    handler: type[Recorder] = type("Handler", (Recorder,), {"seen": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", handler, server


@pytest.fixture
def here() -> Iterator[tuple[str, type[Recorder]]]:
    url, handler, server = serve()
    yield url, handler
    server.shutdown()
    server.server_close()


def test_a_redirect_is_never_followed_so_the_credential_goes_nowhere_else(here: tuple[str, type[Recorder]]) -> None:
    url, handler = here
    elsewhere, other, server = serve()
    handler.elsewhere = elsewhere
    try:
        response = session(headers={"PRIVATE-TOKEN": "glpat-secret"}).get(f"{url}/moved")  # `get` would follow by default
    finally:
        server.shutdown()
        server.server_close()
    assert response.status_code == 301
    assert other.seen == []
    assert handler.seen[0]["PRIVATE-TOKEN"] == "glpat-secret"


def test_a_proxy_from_the_environment_is_not_used(here: tuple[str, type[Recorder]], monkeypatch: pytest.MonkeyPatch) -> None:
    """The services are on this machine, and a proxy would see the credential."""
    url, handler = here
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{free_port()}")
    assert session().get(url, timeout=10).status_code == 200
    assert len(handler.seen) == 1


def test_credentials_in_netrc_are_not_sent(here: tuple[str, type[Recorder]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    url, handler = here
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password theirs\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    session().get(url, timeout=10)
    assert "Authorization" not in handler.seen[0]


def test_the_ca_file_named_is_the_only_trust() -> None:
    assert session(ca_file="/our/ca.crt").verify == "/our/ca.crt"
