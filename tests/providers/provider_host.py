"""Pulumi's own dynamic provider host, driven the way the engine drives it.

The engine starts `python -u -m pulumi.dynamic` (pulumi/dynamic/__main__.py) from the project
folder, reads the port from its first line of output, configures it once, and then sends each call
a resource's properties over gRPC: the inputs as the program registered them, `__provider` among
them (the provider as `pulumi.dynamic.Resource` pickles it), with secrets stripped (the host
answers Configure with acceptSecrets=False) and numbers as floats. A refresh, update or delete gets
the outputs the state recorded, and the host loads the provider from their `__provider`. The
engine records the outputs each call returns, secret where the registered input of the same name
was secret or `additional_secret_outputs` names it (docs: /work/shared/docs/reference/pulumi-mechanics.md,
pulumi/pulumi#13260).

`journey` runs one resource through every call once, as an `up`, a `refresh`, a second `up`, an
`up` with a changed input and a `destroy` would: the first on one host, the rest on another that
never saw the provider before, as a later command's host, which loads it from the recorded state.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
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

PROVIDER = "__provider"


def leaves(value: Any) -> Iterator[Any]:
    """Every leaf of a plan or wire value (a map's values, a list's items, at any depth)."""
    if isinstance(value, dict):
        for item in value.values():
            yield from leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from leaves(item)
    else:
        yield value


def _secret_in_plan(key: str, value: Any) -> bool:
    """Whether the plan shows input `key` secret: "[secret]", or a map or list of them (cli/plan.py
    keeps a secret map's shape). A value only partly secret is not modelled here."""
    shown = [leaf == SECRET for leaf in leaves(value)]
    assert all(shown) or not any(shown), f"input {key} is partly secret: the engine recurses into it, which this harness does not model"
    return bool(shown) and all(shown)


@dataclass(frozen=True)
class Registered:
    """A dynamic resource as the program registers it."""

    stack: str
    type: str
    name: str
    urn: str
    inputs: dict[str, Any]
    """As the engine sends them: plain, `__provider` among them."""
    secrets: frozenset[str]
    """What the engine keeps secret of its outputs: the inputs registered secret, and `additional_secret_outputs`."""

    def plain(self, outputs: dict[str, Any]) -> dict[str, Any]:
        """The outputs the engine records in plain."""
        return {key: value for key, value in outputs.items() if key not in self.secrets}

    def secret_values(self, outputs: dict[str, Any]) -> set[str]:
        """Every string the engine keeps secret, of the inputs and of `outputs` (the provider, public code, aside)."""
        held = [value for key, value in (*self.inputs.items(), *outputs.items()) if key in self.secrets and key != PROVIDER]
        return {leaf for value in held for leaf in leaves(value) if isinstance(leaf, str) and leaf}

    def but(self, **values: Any) -> Registered:
        """The same resource registered again with `values` changed."""
        return Registered(self.stack, self.type, self.name, self.urn, {**self.inputs, **values}, self.secrets)


def registered(stack: str, type_: str, name: str, provider: ResourceProvider, **values: Any) -> Registered:
    """The resource `name` of `stack`'s plan, with `values` for what the plan redacts or points elsewhere."""
    record = planned(stack).one(type_, name)
    serialized, _ = _serialize(True, serialize_provider, provider)  # as pulumi.dynamic.Resource pickles it
    inputs = {**record["inputs"], **values, PROVIDER: serialized}
    assert SECRET not in leaves(inputs), "give a value for every input the plan redacts"
    secret = {key for key, value in record["inputs"].items() if _secret_in_plan(key, value)}
    return Registered(stack, type_, name, record["urn"], inputs, frozenset(secret | set(record["additionalSecretOutputs"])))


def _wire(values: dict[str, Any]) -> struct_pb2.Struct:
    return asyncio.run(rpc.serialize_properties(values, {}))


def _values(struct: struct_pb2.Struct, *, keep_unknowns: bool = False) -> dict[str, Any]:
    return dict(rpc.deserialize_properties(struct, keep_unknowns))


@dataclass(frozen=True)
class Host:
    """The engine's side of one provider host: each call as the engine makes it, returning what it records."""

    stub: provider_pb2_grpc.ResourceProviderStub

    def check(self, resource: Registered, olds: dict[str, Any] | None = None, *, preview: bool = False) -> dict[str, Any]:
        """The inputs the state records (the provider's `check` of the registered ones); fails on a failure.
        In a `preview`, what is not known yet stays unknown (`pulumi.output.Unknown`)."""
        return _values(self._checked(resource, olds), keep_unknowns=preview)

    def _checked(self, resource: Registered, olds: dict[str, Any] | None = None) -> struct_pb2.Struct:
        """The check's answer as the engine keeps it (unknowns and all), for the calls after it."""
        checked = self.stub.Check(provider_pb2.CheckRequest(urn=resource.urn, olds=_wire(olds or {}), news=_wire(resource.inputs)))
        assert [(failure.property, failure.reason) for failure in checked.failures] == []
        inputs: struct_pb2.Struct = checked.inputs
        return inputs

    def create(self, resource: Registered) -> tuple[str, dict[str, Any], dict[str, Any]]:
        """Check, then create: the id, the recorded inputs and the recorded outputs."""
        inputs = self._checked(resource)
        created = self.stub.Create(provider_pb2.CreateRequest(urn=resource.urn, properties=inputs))
        return created.id, _values(inputs), _values(created.properties)

    def read(self, resource: Registered, id_: str, inputs: dict[str, Any], outputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """A refresh: the id it records ("" drops the resource from the state) and the outputs."""
        request = provider_pb2.ReadRequest(id=id_, urn=resource.urn, properties=_wire(outputs), inputs=_wire(inputs))
        read = self.stub.Read(request)
        return read.id, _values(read.properties)

    def diff(self, resource: Registered, id_: str, inputs: dict[str, Any], outputs: dict[str, Any]) -> provider_pb2.DiffResponse:
        """The diff of `resource`'s (checked) inputs against the recorded ones."""
        news = self._checked(resource, inputs)
        request = provider_pb2.DiffRequest(id=id_, urn=resource.urn, olds=_wire(outputs), news=news, old_inputs=_wire(inputs))
        diff: provider_pb2.DiffResponse = self.stub.Diff(request)
        return diff

    def update(self, resource: Registered, id_: str, inputs: dict[str, Any], outputs: dict[str, Any]) -> dict[str, Any]:
        """An update to `resource`'s (checked) inputs: the outputs it records."""
        news = self._checked(resource, inputs)
        request = provider_pb2.UpdateRequest(id=id_, urn=resource.urn, olds=_wire(outputs), news=news, old_inputs=_wire(inputs))
        return _values(self.stub.Update(request).properties)

    def delete(self, resource: Registered, id_: str, inputs: dict[str, Any], outputs: dict[str, Any]) -> None:
        self.stub.Delete(provider_pb2.DeleteRequest(id=id_, urn=resource.urn, properties=_wire(outputs), old_inputs=_wire(inputs)))


@dataclass
class Journey:
    """One resource through each call once, and what the engine recorded at each."""

    resource: Registered
    changed: Registered
    """`resource` registered again with one input changed: an update in place."""
    id: str = ""
    inputs: dict[str, Any] = field(default_factory=dict)
    """What the first `up` recorded as inputs (the host's check)."""
    created: dict[str, Any] = field(default_factory=dict)
    refreshed_id: str = ""
    refreshed: dict[str, Any] = field(default_factory=dict)
    same: provider_pb2.DiffResponse | None = None
    """The diff of a second `up` with nothing changed, after the refresh."""
    diff: provider_pb2.DiffResponse | None = None
    """The diff of `changed` against the refreshed state."""
    changed_inputs: dict[str, Any] = field(default_factory=dict)
    updated: dict[str, Any] = field(default_factory=dict)
    seen: dict[str, Any] = field(default_factory=dict)
    """What the test's `look` saw in the world after "create", "update" and "delete"."""

    def outputs(self) -> list[dict[str, Any]]:
        """Every set of outputs the engine recorded."""
        return [self.created, self.refreshed, self.updated]


def journey(up: Host, later: Host, resource: Registered, changed: Registered, look: Callable[[], Any] = lambda: None) -> Journey:
    """`resource` created by `up`'s host; refreshed, diffed, updated to `changed` and deleted by `later`'s."""
    trip = Journey(resource, changed)
    trip.id, trip.inputs, trip.created = up.create(resource)
    trip.seen["create"] = look()
    trip.refreshed_id, trip.refreshed = later.read(resource, trip.id, trip.inputs, trip.created)
    trip.same = later.diff(resource, trip.id, trip.inputs, trip.refreshed)
    trip.diff = later.diff(changed, trip.id, trip.inputs, trip.refreshed)
    trip.changed_inputs = later.check(changed, trip.inputs)
    trip.updated = later.update(changed, trip.id, trip.inputs, trip.refreshed)
    trip.seen["update"] = look()
    later.delete(changed, trip.id, trip.changed_inputs, trip.updated)
    trip.seen["delete"] = look()
    return trip


STARTUP_SECONDS = 120
"""How long the host may take to print its port (it prints it at once; this only ends a hang)."""


@contextmanager
def started(logs: list[Path], path: Path | None = None) -> Iterator[list[subprocess.Popen[str]]]:
    """Host processes, one a log (its stderr), started as the engine starts them, `path` first on their
    PATH (the stand-ins of the commands the providers run), but not yet waited for: `configured` waits
    for each, so what a test starts meanwhile overlaps their start. Killed on the way out."""
    command = [sys.executable, "-u", "-m", "pulumi.dynamic"]
    environment = {**os.environ, **({"PATH": f"{path}:{os.environ['PATH']}"} if path else {})}
    with ExitStack() as stack:
        processes = []
        for log in logs:
            errors = stack.enter_context(log.open("w"))
            process = stack.enter_context(
                subprocess.Popen(command, cwd=PROJECT_DIR, env=environment, stdout=subprocess.PIPE, stderr=errors, text=True)
            )
            stack.callback(process.kill)
            processes.append(process)
        yield processes


@contextmanager
def configured(process: subprocess.Popen[str], log: Path) -> Iterator[Host]:
    """The started host `process`, once it printed its port, configured as the engine configures it."""
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
