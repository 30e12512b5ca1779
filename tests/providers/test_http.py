"""The one session factory and sender (providers/http.py): every session blueprint builds sends its
credential to the service named and nowhere else (no redirect followed, nothing taken from the
environment), and a request that gets no answer says why."""

from __future__ import annotations

import contextlib
import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from providers.http import NoAnswer, send, session
from tests.providers.clock import FakeClock
from tests.providers.engine import free_port


class Recorder(http.server.BaseHTTPRequestHandler):
    """Answers `/moved` with a redirect (`moved`) to `elsewhere`, anything else with 200; records each request's headers."""

    seen: list[dict[str, str]] = []
    elsewhere = ""
    moved = 301

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        self.seen.append(dict(self.headers))
        self.send_response(self.moved if self.path == "/moved" else 200)
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


@pytest.mark.parametrize("moved", [301, 302, 303, 307, 308])
def test_a_redirect_is_never_followed_so_the_credential_goes_nowhere_else(here: tuple[str, type[Recorder]], moved: int) -> None:
    url, handler = here
    elsewhere, other, server = serve()
    handler.elsewhere, handler.moved = elsewhere, moved
    try:
        response = session(headers={"PRIVATE-TOKEN": "glpat-secret"}).get(f"{url}/moved")  # `get` would follow by default
    finally:
        server.shutdown()
        server.server_close()
    assert response.status_code == moved
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


def test_the_ca_file_named_is_the_only_trust(tmp_path: Path) -> None:
    ca_file = tmp_path / "ca.crt"
    ca_file.write_text("-----BEGIN CERTIFICATE-----\n")
    assert session(ca_file=str(ca_file)).verify == str(ca_file)


def test_a_missing_ca_file_is_refused_saying_how_to_write_it_again(tmp_path: Path) -> None:
    """`requests` would raise a bare OSError at the first https request, and the user would see a traceback."""
    with pytest.raises(NoAnswer) as refused:
        session(ca_file=str(tmp_path / "gone.crt"))
    assert f"pulumi stack output -s phase2 caCertPem > {tmp_path / 'gone.crt'}" in str(refused.value)


def test_a_handshake_that_is_dropped_is_tried_again_not_called_a_certificate_problem(clock: FakeClock) -> None:
    """A gateway that accepts connections before it has its certificate drops the handshake: that passes."""
    listening = socket.create_server(("127.0.0.1", 0))
    accepted: list[object] = []

    def drop() -> None:
        while len(accepted) < 2:
            connection, _ = listening.accept()
            accepted.append(connection)
            connection.close()

    threading.Thread(target=drop, daemon=True).start()
    url = f"https://127.0.0.1:{listening.getsockname()[1]}/"
    try:
        with pytest.raises(NoAnswer) as failed:
            send(session(), "GET", url, timeout=10, pauses=[1.0])
    finally:
        listening.close()
    assert len(accepted) == 2
    assert "certificate" not in str(failed.value)
    assert str(failed.value).startswith("nothing answers at 127.0.0.1:")


@contextlib.contextmanager
def answering_twice(raw: bytes) -> Iterator[tuple[str, list[object]]]:
    """A server at (`host:port`, what it served) that answers two requests with the bytes `raw`, then hangs up."""
    listening = socket.create_server(("127.0.0.1", 0))
    served: list[object] = []

    def answer() -> None:
        while len(served) < 2:
            connection, _ = listening.accept()
            served.append(connection)
            connection.recv(65536)
            connection.sendall(raw)
            connection.close()

    threading.Thread(target=answer, daemon=True).start()
    try:
        yield f"127.0.0.1:{listening.getsockname()[1]}", served
    finally:
        listening.close()


def test_an_answer_that_breaks_off_is_asked_for_again(clock: FakeClock) -> None:
    """A pod that restarts mid-answer: what was cut off is no answer, and a GET may be sent again."""
    cut_off = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nonly part"
    with answering_twice(cut_off) as (where, served), pytest.raises(NoAnswer) as failed:
        send(session(), "GET", f"http://{where}/", timeout=10, pauses=[1.0])
    assert len(served) == 2
    assert str(failed.value) == f"the answer from {where} broke off"


@pytest.mark.parametrize("header", [b"\xb2", b"\xb9\xb2\xb3"])  # latin-1 for superscript two; one, two, three
def test_a_retry_after_in_digits_other_than_ascii_is_the_usual_pause_not_a_crash(clock: FakeClock, header: bytes) -> None:
    """str.isdigit() takes '²' for a digit, float() does not: the throttled request is asked again."""
    throttled = b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: " + header + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    with answering_twice(throttled) as (where, served):
        answer = send(session(), "GET", f"http://{where}/", timeout=10, pauses=[1.0])
    assert answer.status_code == 429
    assert len(served) == 2


def test_through_a_forward_tls_asks_for_and_checks_the_urls_own_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ssl

    import providers.http
    from providers.cluster_access import Target
    from tests.providers.bao_tls import issue

    pki = issue(tmp_path, name="app.blueprint.test")
    handler: type[Recorder] = type("Handler", (Recorder,), {"seen": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki.cert_file, pki.key_file)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()

    class Forward:  # the local end of a port-forward: the TLS server itself
        def __init__(self, _target: Target) -> None: ...
        def port(self) -> int:
            return int(server.server_address[1])

        def close(self) -> None: ...

    monkeypatch.setattr(providers.http, "Forwards", Forward)
    target = Target(context="ctx", namespace="gitlab", service="envoy", port=443)
    try:
        with session(ca_file=str(pki.ca_file), forward=target) as asking:
            assert asking.get("https://app.blueprint.test/healthz", timeout=10).status_code == 200
    finally:
        server.shutdown()
        server.server_close()
