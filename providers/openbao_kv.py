"""One secret in OpenBao's KV v2 engine, written idempotently.

A write that would store what is already there stores nothing (no new KV version); a changed value
updates the secret in place; a changed path or mount replaces it. `data` and `token` are secret
inputs, so the engine keeps the outputs of the same names secret. Deleting does nothing: the
secret lives in OpenBao's storage, which `preserveData` keeps or wipes with the rest of the data.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, ResourceProvider, UpdateResult

PROVIDER_VERSION = "1"
"""Bump when the provider's behaviour changes (it is pickled by reference)."""

INPUTS = ("address", "token", "mount", "path", "data", "provider_version")


def _client(address: str, token: str) -> Any:
    import hvac

    return hvac.Client(url=address, token=token, timeout=10)


def current(props: dict[str, Any]) -> dict[str, Any] | None:
    """The secret's latest data, or None when it does not exist."""
    import hvac.exceptions

    client = _client(str(props["address"]), str(props["token"]))
    try:
        response = client.secrets.kv.v2.read_secret_version(path=props["path"], mount_point=props["mount"], raise_on_deleted_version=False)
    except hvac.exceptions.InvalidPath:
        return None
    data = (response.get("data") or {}).get("data")
    return dict(data) if data is not None else None


def write(props: dict[str, Any]) -> dict[str, Any]:
    """Store `data` at `mount`/`path` unless it is there already; return the outputs."""
    data = {key: str(value) for key, value in dict(props["data"]).items()}
    if current(props) != data:
        import hvac.exceptions

        client = _client(str(props["address"]), str(props["token"]))
        deadline = time.monotonic() + 60
        while True:
            try:
                client.secrets.kv.v2.create_or_update_secret(path=props["path"], secret=data, mount_point=props["mount"])
                break
            except hvac.exceptions.InvalidRequest as error:
                # A KV v2 mount answers this for a moment after it is enabled.
                if "Upgrading from non-versioned to versioned data" not in str(error) or time.monotonic() > deadline:
                    raise
                time.sleep(1)
    return {key: props.get(key) for key in INPUTS}


class OpenBaoKvProvider(ResourceProvider):
    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [key for key in INPUTS if olds.get(key) != news.get(key)]
        replaces: list[str] = [key for key in ("mount", "path") if key in changed]
        return DiffResult(changes=bool(changed), replaces=replaces, delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=f"{props['mount']}/{props['path']}", outs=write(props))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=write(news))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """On refresh: report the data OpenBao holds, so drift shows as a change."""
        data = current(props)
        if data is None:
            return ReadResult(None, {})  # gone: refresh drops it, the next `up` writes it again
        return ReadResult(id_, {**props, "data": data})

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing to undo (see the module docstring)."""


@dataclass(frozen=True, kw_only=True)
class OpenBaoKvArgs:
    address: pulumi.Input[str]
    """OpenBao's API as the host reaches it."""
    token: pulumi.Input[str]
    """A token that may write the path (secret)."""
    path: str
    """Path under the mount, e.g. `postgres/gitlab`."""
    data: pulumi.Input[dict[str, pulumi.Input[str]]]
    """The key/value pairs (kept secret)."""
    mount: str = "secret"


class OpenBaoKv(pulumi.dynamic.Resource, module="openbao", name="KvSecret"):
    """One KV v2 secret at `<mount>/<path>`."""

    def __init__(self, name: str, args: OpenBaoKvArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        props = {
            "address": args.address,
            "token": pulumi.Output.secret(args.token),
            "mount": args.mount,
            "path": args.path,
            "data": pulumi.Output.secret(args.data),
            "provider_version": PROVIDER_VERSION,
        }
        super().__init__(OpenBaoKvProvider(), name, props, opts)
