"""Initialise and unseal OpenBao, once, without ever losing its keys.

`OpenBaoInit` converges a server to "initialised, unsealed, KV v2 at `secret/`":

- an uninitialised server is initialised (`key_shares`/`key_threshold`, 1 and 1 by default), and
  its unseal keys and root token are written to `keys_file` (0600, under the data folder) *before*
  anything else happens, so they survive a failed `up`, lost state and a `preserveData` destroy;
- an initialised server whose keys are in `keys_file` is adopted: unsealed, its outputs restored
  (a new cluster over preserved data, or a lost Pulumi state);
- an initialised server whose keys are missing is refused, with what to do: initialising again is
  impossible, and going on would leave a sealed vault;
- a sealed server is unsealed on every `up` (`diff` reports it, `update` unseals) and `refresh`.

The keys and the root token leave the provider only as secret outputs (`additional_secret_outputs`).
The provider keeps nothing on `self` and imports hvac lazily: the engine's provider host imports this
module by reference (`pulumi-mechanics.md` section 1).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pulumi
from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, ResourceProvider, UpdateResult

if TYPE_CHECKING:
    import hvac

PROVIDER_VERSION = "1"
"""Bump when the provider's behaviour changes: the provider is pickled by reference, so only an
input change makes the engine call `update` with the new code."""

INPUTS = ("address", "key_shares", "key_threshold", "keys_file", "wait_seconds", "provider_version")
SECRET_OUTPUTS = ["root_token", "unseal_keys"]


class OpenBaoInitError(Exception):
    """OpenBao cannot be brought to a usable state without the user's decision."""


def _client(address: str, token: str | None = None) -> hvac.Client:
    import hvac

    return hvac.Client(url=address, token=token, timeout=10)


def wait_until_reachable(address: str, wait_seconds: float) -> None:
    """Poll `sys/seal-status` (answered sealed or not, initialised or not) until it answers."""
    import requests

    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            requests.get(f"{address}/v1/sys/seal-status", timeout=5).raise_for_status()
            return
        except requests.RequestException as error:
            if time.monotonic() >= deadline:
                raise OpenBaoInitError(
                    f"OpenBao at {address} did not answer within {wait_seconds:.0f}s ({error}); "
                    f"check the openbao pod (kubectl -n openbao get pods) and re-run `pulumi up`"
                ) from error
            time.sleep(1)


def wait_until_active(address: str, wait_seconds: float) -> None:
    """After an unseal, poll `sys/health` until this node serves requests (200: active)."""
    import requests

    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            if requests.get(f"{address}/v1/sys/health", timeout=5).status_code == 200:
                return
        except requests.RequestException:
            pass
        if time.monotonic() >= deadline:
            raise OpenBaoInitError(f"OpenBao at {address} is unsealed but did not become active within {wait_seconds:.0f}s")
        time.sleep(0.2)


def read_keys(keys_file: Path) -> dict[str, Any]:
    data = json.loads(keys_file.read_text())
    return {"unseal_keys": list(data["unseal_keys"]), "root_token": str(data["root_token"])}


def write_keys(keys_file: Path, unseal_keys: list[str], root_token: str) -> None:
    """Write atomically, 0600 from the first byte: a crash leaves the old file or the new one."""
    keys_file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    descriptor, temporary = tempfile.mkstemp(dir=keys_file.parent, prefix=f".{keys_file.name}.")
    try:
        with os.fdopen(descriptor, "w") as handle:
            json.dump({"unseal_keys": unseal_keys, "root_token": root_token}, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, keys_file)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def unseal(client: hvac.Client, unseal_keys: list[str]) -> None:
    for key in unseal_keys:
        if not client.sys.is_sealed():
            return
        client.sys.submit_unseal_key(key)
    if client.sys.is_sealed():
        raise OpenBaoInitError("OpenBao stayed sealed after every unseal key in the keys file: the file belongs to another vault")


def converge(props: dict[str, Any]) -> dict[str, Any]:
    """Bring the server to initialised + unsealed + KV v2 at secret/; return the outputs."""
    address = str(props["address"])
    keys_file = Path(str(props["keys_file"]))
    wait_until_reachable(address, float(props.get("wait_seconds") or 300))
    client = _client(address)
    if not client.sys.is_initialized():
        if keys_file.exists():
            # Keys of a vault whose storage is gone open nothing; keep them aside, never overwrite.
            keys_file.rename(keys_file.with_name(f"{keys_file.name}.stale-{int(time.time())}"))
        result = client.sys.initialize(int(props["key_shares"]), int(props["key_threshold"]))
        write_keys(keys_file, list(result["keys_base64"]), result["root_token"])
    elif not keys_file.exists():
        raise OpenBaoInitError(
            f"OpenBao at {address} is already initialised, but its unseal keys are not in {keys_file}. "
            f"It cannot be initialised again. Restore that file from a backup. Otherwise the only way is to start over: "
            f"OpenBao's storage is in the platform's Postgres, so that wipes the whole platform's data, GitLab's too "
            f"(`uv run blueprint destroy --wipe-data`, then `uv run blueprint up`)."
        )
    keys = read_keys(keys_file)
    unseal(client, keys["unseal_keys"])
    wait_until_active(address, float(props.get("wait_seconds") or 300))
    client.token = keys["root_token"]
    if "secret/" not in client.sys.list_mounted_secrets_engines()["data"]:
        client.sys.enable_secrets_engine("kv", path="secret", options={"version": "2"})
    return {**{key: props.get(key) for key in INPUTS}, **keys}


def is_sealed(address: str) -> bool | None:
    """True or False, or None when the server does not answer (then there is nothing to report)."""
    import requests

    try:
        response = requests.get(f"{address}/v1/sys/seal-status", timeout=5)
        response.raise_for_status()
        return bool(response.json()["sealed"])
    except (requests.RequestException, ValueError, KeyError):
        return None


class OpenBaoInitProvider(ResourceProvider):
    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        failures = []
        shares, threshold = news.get("key_shares"), news.get("key_threshold")
        if not isinstance(shares, int | float) or int(shares) < 1:
            failures.append(CheckFailure("key_shares", f"expected an integer >= 1, got {shares!r}"))
        elif not isinstance(threshold, int | float) or not 1 <= int(threshold) <= int(shares):
            valid = f"expected an integer from 1 to key_shares ({int(shares)}), got {threshold!r}"
            failures.append(CheckFailure("key_threshold", valid))
        if not Path(str(news.get("keys_file"))).is_absolute():
            failures.append(CheckFailure("keys_file", f"expected an absolute path, got {news.get('keys_file')!r}"))
        return CheckResult(news, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [key for key in INPUTS if olds.get(key) != news.get(key)]
        if not changed and isinstance(news.get("address"), str) and is_sealed(news["address"]):
            changed = ["sealed"]  # not an input: the server restarted and must be unsealed again
        return DiffResult(changes=bool(changed), replaces=[], delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=str(props["address"]), outs=converge(props))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=converge(news))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """On refresh: unseal a sealed server with the keys in the file; report what the file holds."""
        keys_file = Path(str(props.get("keys_file")))
        address = str(props.get("address"))
        if keys_file.exists():
            keys = read_keys(keys_file)
            if is_sealed(address):
                unseal(_client(address), keys["unseal_keys"])
            return ReadResult(id_, {**props, **keys})
        return ReadResult(id_, props)

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing to undo: the vault's storage and its keys file live with the platform's data,
        which `preserveData` keeps or wipes.
        """


@dataclass(frozen=True, kw_only=True)
class OpenBaoInitArgs:
    address: pulumi.Input[str]
    """OpenBao's API as the host reaches it, e.g. http://127.0.0.1:8200."""
    keys_file: pulumi.Input[str]
    """Absolute path of the 0600 file that keeps the unseal keys and the root token."""
    key_shares: int = 1
    key_threshold: int = 1
    wait_seconds: int = 300
    """How long to wait for the API to answer."""


class OpenBaoInit(pulumi.dynamic.Resource, module="openbao", name="Init"):
    """An initialised, unsealed OpenBao with KV v2 at `secret/`."""

    root_token: pulumi.Output[str]
    """The root token (secret)."""
    unseal_keys: pulumi.Output[list[str]]
    """The unseal keys, base64 (secret)."""

    def __init__(self, name: str, args: OpenBaoInitArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        props = {
            "address": args.address,
            "keys_file": args.keys_file,
            "key_shares": args.key_shares,
            "key_threshold": args.key_threshold,
            "wait_seconds": args.wait_seconds,
            "provider_version": PROVIDER_VERSION,
            "root_token": None,
            "unseal_keys": None,
        }
        secret = pulumi.ResourceOptions(additional_secret_outputs=SECRET_OUTPUTS)
        super().__init__(OpenBaoInitProvider(), name, props, pulumi.ResourceOptions.merge(opts, secret))
