"""The guestbook: a small web app that writes its entries on a Valkey master and reads them from a replica.

It is the sample phase3's pipelines build and deploy, so it stays on the standard library plus the
`redis` client, and is configured by environment only (README.md lists the variables). Writes go to
the master and reads to the replica, which is the point of running the two Redis charts; a reader
may therefore see an entry a moment after it was written, because replication is asynchronous.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import signal
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType
from typing import Any, NoReturn
from urllib.parse import urlsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

MAX_TEXT = 500
"""Longest entry accepted, in characters, after surrounding whitespace is stripped."""

MAX_BODY = 16 * 1024
"""Largest request body read; a 500-character entry is far smaller even with every character escaped."""


class ConfigError(ValueError):
    """The environment does not describe a usable configuration; the message names the variable."""


@dataclass(frozen=True, kw_only=True)
class Config:
    """Everything the app needs; `from_env` reads it from the variables the chart sets."""

    master_host: str
    """Valkey master, which takes every write."""
    replica_host: str
    """Valkey replica, which serves every read."""
    master_port: int = 6379
    replica_port: int = 6379
    password: str | None = None
    """Shared by master and replica; None when the servers need no AUTH."""
    list_key: str = "guestbook"
    """The Redis list holding the entries, oldest first."""
    bind: str = "0.0.0.0"
    """All interfaces: in a pod the Service reaches the container on its pod IP."""
    port: int = 8080
    """0 picks a free port (tests read it from the server's address)."""
    socket_timeout: float = 2.0
    """Seconds a Redis connect or reply may take, so a dead or hung server fails a request instead of holding it."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Config:
        """Read the configuration from environment variables, raising ConfigError that names a bad one."""
        return cls(
            master_host=_required(environ, "REDIS_MASTER_HOST"),
            master_port=_port(environ, "REDIS_MASTER_PORT", 6379),
            replica_host=_required(environ, "REDIS_REPLICA_HOST"),
            replica_port=_port(environ, "REDIS_REPLICA_PORT", 6379),
            password=environ.get("REDIS_PASSWORD") or None,
            port=_port(environ, "PORT", 8080),
            list_key=environ.get("LIST_KEY") or "guestbook",
        )


def _required(environ: Mapping[str, str], name: str) -> str:
    value = environ.get(name, "").strip()
    if not value:
        raise ConfigError(f"{name} must be set to a host name or address")
    return value


def _port(environ: Mapping[str, str], name: str, default: int) -> int:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not 0 <= int(raw) <= 65535:
        raise ConfigError(f"{name} must be a port number from 0 to 65535, got {raw!r}")
    return int(raw)


def _client(host: str, port: int, config: Config) -> redis.Redis:
    # redis-py retries 10 times with backoff by default, which turns a dead server into a request
    # that hangs for many seconds; one immediate retry still covers a pooled socket the server closed.
    return redis.Redis(
        host=host,
        port=port,
        password=config.password,
        socket_timeout=config.socket_timeout,
        socket_connect_timeout=config.socket_timeout,
        retry=Retry(NoBackoff(), 1),
        decode_responses=True,
        encoding_errors="replace",
    )


def _texts(values: list[bytes | str]) -> list[str]:
    return [value if isinstance(value, str) else value.decode("utf-8", "replace") for value in values]


class GuestbookServer(ThreadingHTTPServer):
    """The HTTP server, holding the two Redis clients its handlers share (their pools are thread-safe)."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.master = _client(config.master_host, config.master_port, config)
        self.replica = _client(config.replica_host, config.replica_port, config)
        try:
            super().__init__((config.bind, config.port), GuestbookHandler)
        except BaseException:
            self._close_clients()
            raise

    @property
    def port(self) -> int:
        """The port actually bound, which differs from the configured one when that was 0."""
        return int(self.server_address[1])

    def server_close(self) -> None:
        super().server_close()
        self._close_clients()

    def _close_clients(self) -> None:
        self.master.close()
        self.replica.close()


def build_server(config: Config) -> GuestbookServer:
    """Bind the server without serving yet: the caller runs `serve_forever` (tests, in a thread) and `server_close`."""
    return GuestbookServer(config)


class GuestbookHandler(BaseHTTPRequestHandler):
    """Routes the four endpoints; every reply states its length, so clients need not wait for the close."""

    server: GuestbookServer
    server_version = "guestbook/1"

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        routes: dict[str, dict[str, Callable[[], None]]] = {
            "/": {"GET": self._page},
            "/api/entries": {"GET": self._list, "POST": self._append},
            "/healthz": {"GET": self._health},
        }
        path = urlsplit(self.path).path
        if path not in routes:
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no such path: {path}"})
        elif method not in routes[path]:
            self._json(HTTPStatus.METHOD_NOT_ALLOWED, {"error": f"{method} is not allowed on {path}"}, {"Allow": ", ".join(routes[path])})
        else:
            routes[path][method]()

    def _page(self) -> None:
        try:
            entries = _texts(self.server.replica.lrange(self.server.config.list_key, 0, -1))
        except redis.RedisError as error:
            self._send(HTTPStatus.SERVICE_UNAVAILABLE, "text/html", _page_html([], f"The entries cannot be read: {error}"))
            return
        self._send(HTTPStatus.OK, "text/html", _page_html(entries, ""))

    def _list(self) -> None:
        try:
            entries = _texts(self.server.replica.lrange(self.server.config.list_key, 0, -1))
        except redis.RedisError as error:
            self._json(HTTPStatus.SERVICE_UNAVAILABLE, {"error": f"replica unavailable: {error}"})
            return
        self._json(HTTPStatus.OK, {"entries": entries})

    def _append(self) -> None:
        text = self._entry_text()
        if text is None:
            return
        key = self.server.config.list_key
        try:
            # Push and read back in one transaction on the master: the writer sees its own entry,
            # which the replica may not have yet.
            with self.server.master.pipeline(transaction=True) as pipe:
                pipe.rpush(key, text)
                pipe.lrange(key, 0, -1)
                _, entries = pipe.execute()
        except redis.RedisError as error:
            self._json(HTTPStatus.SERVICE_UNAVAILABLE, {"error": f"master unavailable: {error}"})
            return
        self._json(HTTPStatus.CREATED, {"entries": _texts(entries)})

    def _entry_text(self) -> str | None:
        """The entry the request body carries, or None after answering 4xx to a body that carries none."""
        length_header = self.headers.get("Content-Length", "0")
        length = int(length_header) if length_header.isdigit() else -1
        if length < 0:
            self._json(HTTPStatus.BAD_REQUEST, {"error": f"bad Content-Length: {length_header!r}"})
            return None
        if length > MAX_BODY:
            self._json(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, {"error": f"body is {length} bytes; at most {MAX_BODY} allowed"})
            return None
        try:
            body: Any = json.loads(self.rfile.read(length))
        except ValueError:
            self._json(HTTPStatus.BAD_REQUEST, {"error": 'body must be JSON, such as {"text": "Hello"}'})
            return None
        raw = body.get("text") if isinstance(body, dict) else None
        if not isinstance(raw, str):
            self._json(HTTPStatus.BAD_REQUEST, {"error": 'body must be a JSON object with a string "text"'})
            return None
        text = raw.strip()
        if not text:
            self._json(HTTPStatus.BAD_REQUEST, {"error": "text is empty"})
            return None
        if len(text) > MAX_TEXT:
            self._json(HTTPStatus.BAD_REQUEST, {"error": f"text is {len(text)} characters; at most {MAX_TEXT} allowed"})
            return None
        return text

    def _health(self) -> None:
        servers = {"master": self.server.master, "replica": self.server.replica}
        report: dict[str, Any] = {}
        for name, client in servers.items():
            try:
                client.ping()
                report[name] = "ok"
            except redis.RedisError as error:
                report[name] = f"error: {error}"
        failed = [name for name in servers if report[name] != "ok"]
        if failed:
            report["failed"] = failed
        self._json(HTTPStatus.SERVICE_UNAVAILABLE if failed else HTTPStatus.OK, report)

    def _json(self, status: HTTPStatus, body: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> None:
        self._send(status, "application/json", json.dumps(body), headers)

    def _send(self, status: HTTPStatus, content_type: str, text: str, headers: Mapping[str, str] | None = None) -> None:
        payload = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", f"{content_type}; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)


def _page_html(entries: list[str], problem: str) -> str:
    # Entries are escaped here and set with textContent in the script: both paths treat them as text.
    items = "\n".join(f"      <li>{html.escape(entry)}</li>" for entry in entries)
    return _PAGE.format(items=items, problem=html.escape(problem), max_text=MAX_TEXT)


_PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Guestbook</title>
  <style>body {{ font-family: sans-serif; max-width: 40rem; margin: 2rem auto; }} #problem {{ color: #b00; }}</style>
</head>
<body>
  <h1>Guestbook</h1>
  <form id="entry-form">
    <input name="text" maxlength="{max_text}" required autofocus placeholder="Say hello">
    <button type="submit">Sign</button>
  </form>
  <p id="problem" role="alert">{problem}</p>
  <ul id="entries">
{items}
  </ul>
  <script>
    const form = document.getElementById("entry-form");
    form.addEventListener("submit", async (event) => {{
      event.preventDefault();
      const problem = document.getElementById("problem");
      const response = await fetch("api/entries", {{
        method: "POST",
        headers: {{"Content-Type": "application/json"}},
        body: JSON.stringify({{text: form.elements.text.value}}),
      }});
      const body = await response.json();
      if (!response.ok) {{ problem.textContent = body.error; return; }}
      problem.textContent = "";
      document.getElementById("entries").replaceChildren(...body.entries.map((entry) => {{
        const item = document.createElement("li");
        item.textContent = entry;
        return item;
      }}));
      form.reset();
    }});
  </script>
</body>
</html>
"""


def _stop(signum: int, frame: FrameType | None) -> NoReturn:
    raise SystemExit(0)


def main() -> int:
    """Serve until SIGTERM or SIGINT; exit 2 when the environment is unusable."""
    try:
        config = Config.from_env(os.environ)
    except ConfigError as error:
        print(f"guestbook: {error}", file=sys.stderr)
        return 2
    # As PID 1 in a container Python ignores SIGTERM unless it handles it, so a pod would wait out its grace period.
    signal.signal(signal.SIGTERM, _stop)
    server = build_server(config)
    print(
        f"guestbook: listening on {config.bind}:{server.port}, master {config.master_host}:{config.master_port}, "
        f"replica {config.replica_host}:{config.replica_port}, list {config.list_key!r}",
        file=sys.stderr,
        flush=True,
    )
    try:
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
