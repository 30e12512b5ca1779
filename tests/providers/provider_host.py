"""Pulumi's own dynamic provider host, driven the way the engine drives it.

The engine starts `python -u -m pulumi.dynamic` (pulumi/dynamic/__main__.py) from the project
folder, reads the port from its first line of output, configures it once, and then sends each call
a resource's properties over gRPC: the inputs as the program registered them, `__provider` among
them (the provider as `pulumi.dynamic.Resource` pickles it), with secrets stripped (the host
answers Configure with acceptSecrets=False) and numbers as floats. A refresh, update or delete gets
the outputs the state recorded, and the host loads the provider from their `__provider`. The
engine records the outputs each call returns, secret where the registered input of the same name
was secret or `additional_secret_outputs` names it.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import struct_pb2
from pulumi.dynamic import ResourceProvider
from pulumi.dynamic.dynamic import serialize_provider
from pulumi.runtime import rpc
from pulumi.runtime._serialization import _serialize
from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc

from cli.plan import SECRET
from stacks.config import PROJECT_DIR
from tests.plans import planned


@dataclass(frozen=True)
class Registered:
    """A dynamic resource as the program registers it."""

    urn: str
    inputs: dict[str, Any]
    """As the engine sends them: plain, `__provider` among them."""
    secrets: frozenset[str]
    """What the engine keeps secret of its outputs: the inputs registered secret, and `additional_secret_outputs`."""

    def plain(self, outputs: dict[str, Any]) -> dict[str, Any]:
        """The outputs the engine records in plain."""
        return {key: value for key, value in outputs.items() if key not in self.secrets}


def registered(stack: str, type_: str, name: str, provider: ResourceProvider, **values: Any) -> Registered:
    """The resource `name` of `stack`'s plan, with `values` for what the plan redacts or points elsewhere."""
    record = planned(stack).one(type_, name)
    serialized, _ = _serialize(True, serialize_provider, provider)  # as pulumi.dynamic.Resource pickles it
    inputs = {**record["inputs"], **values, "__provider": serialized}
    assert SECRET not in inputs.values(), "give a value for every input the plan redacts"
    secret = {key for key, value in record["inputs"].items() if value == SECRET}
    return Registered(record["urn"], inputs, frozenset(secret | set(record["additionalSecretOutputs"])))


def _wire(values: dict[str, Any]) -> struct_pb2.Struct:
    return asyncio.run(rpc.serialize_properties(values, {}))


def _values(struct: struct_pb2.Struct) -> dict[str, Any]:
    return dict(rpc.deserialize_properties(struct))


@dataclass(frozen=True)
class Host:
    """The engine's side of one provider host: each call as the engine makes it, returning what it records."""

    stub: provider_pb2_grpc.ResourceProviderStub

    def check(self, resource: Registered, olds: dict[str, Any] | None = None) -> dict[str, Any]:
        """The inputs the state records (the provider's `check` of the registered ones); fails on a failure."""
        checked = self.stub.Check(provider_pb2.CheckRequest(urn=resource.urn, olds=_wire(olds or {}), news=_wire(resource.inputs)))
        assert list(checked.failures) == []
        return _values(checked.inputs)

    def create(self, resource: Registered) -> tuple[str, dict[str, Any], dict[str, Any]]:
        """Check, then create: the id, the recorded inputs and the recorded outputs."""
        inputs = self.check(resource)
        created = self.stub.Create(provider_pb2.CreateRequest(urn=resource.urn, properties=_wire(inputs)))
        return created.id, inputs, _values(created.properties)

    def read(self, resource: Registered, id_: str, inputs: dict[str, Any], outputs: dict[str, Any]) -> dict[str, Any]:
        """A refresh: the outputs it records."""
        request = provider_pb2.ReadRequest(id=id_, urn=resource.urn, properties=_wire(outputs), inputs=_wire(inputs))
        return _values(self.stub.Read(request).properties)

    def diff(self, resource: Registered, id_: str, inputs: dict[str, Any], outputs: dict[str, Any]) -> provider_pb2.DiffResponse:
        """The diff of `resource`'s (checked) inputs against the recorded ones."""
        news = self.check(resource, inputs)
        request = provider_pb2.DiffRequest(id=id_, urn=resource.urn, olds=_wire(outputs), news=_wire(news), old_inputs=_wire(inputs))
        diff: provider_pb2.DiffResponse = self.stub.Diff(request)
        return diff

    def update(self, resource: Registered, id_: str, inputs: dict[str, Any], outputs: dict[str, Any]) -> dict[str, Any]:
        """An update to `resource`'s (checked) inputs: the outputs it records."""
        news = self.check(resource, inputs)
        request = provider_pb2.UpdateRequest(id=id_, urn=resource.urn, olds=_wire(outputs), news=_wire(news), old_inputs=_wire(inputs))
        return _values(self.stub.Update(request).properties)

    def delete(self, resource: Registered, id_: str, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        self.stub.Delete(provider_pb2.DeleteRequest(id=id_, urn=resource.urn, properties=_wire(outputs), old_inputs=_wire(inputs)))


STARTUP_SECONDS = 120
"""How long the host may take to print its port (it prints it at once; this only ends a hang)."""


@contextmanager
def provider_host(log: Path) -> Iterator[Host]:
    """A `python -u -m pulumi.dynamic` started as the engine starts it, configured once; its stderr in `log`."""
    command = [sys.executable, "-u", "-m", "pulumi.dynamic"]
    with log.open("w") as errors, subprocess.Popen(command, cwd=PROJECT_DIR, stdout=subprocess.PIPE, stderr=errors, text=True) as process:
        try:
            assert process.stdout is not None
            hung = threading.Timer(STARTUP_SECONDS, process.kill)  # a host that never prints its port is killed
            hung.start()
            line = process.stdout.readline()  # the port, or nothing when the host died
            hung.cancel()
            assert line.strip().isdigit(), f"the provider host printed {line!r}: {log.read_text()[-2000:]}"
            # No proxy the environment names (`http_proxy`), which gRPC would take for 127.0.0.1 too: the
            # engine, in Go, never sends loopback through one.
            with grpc.insecure_channel(f"127.0.0.1:{int(line)}", options=[("grpc.enable_http_proxy", 0)]) as channel:
                stub = provider_pb2_grpc.ResourceProviderStub(channel)
                configured = stub.Configure(provider_pb2.ConfigureRequest(args=_wire({}), acceptSecrets=True, acceptResources=True))
                assert configured.acceptSecrets is False  # so the engine strips secrets from what it sends
                yield Host(stub)
        finally:
            process.kill()
