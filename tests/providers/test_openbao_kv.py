"""KV v2 writes against a real OpenBao, through the provider as the engine loads it.

On `pulumi refresh` the engine reads every resource at once, so a KV read may find OpenBao sealed
(restarted), unsealed by `OpenBaoInit.read` meanwhile, or unsealed but not active yet; and right
after KV v2 is enabled the mount answers "upgrading" for a moment. None of these may fail a call
that can wait, nor make refresh drop or rewrite a secret it could not see.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import hvac
import pytest

from providers import openbao_kv
from providers.openbao_init import OpenBaoInitProvider, wait_until_active
from providers.openbao_kv import PROVIDER_VERSION, OpenBaoKvProvider
from tests.providers.engine import BaoServer, as_engine_loads, outputs_of, running_bao


@dataclass(frozen=True)
class Vault:
    server: BaoServer
    init: dict[str, Any]
    """OpenBaoInit's outputs: its `read` unseals the server from their keys file."""


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Vault]:
    """One initialised server for the module (each test writes its own path)."""
    folder = tmp_path_factory.mktemp("kv")
    for server in running_bao(folder / "bao"):
        props = {"address": server.address, "keys_file": str(folder / "keys.json"), "key_shares": 1.0, "key_threshold": 1.0}
        yield Vault(server, outputs_of(OpenBaoInitProvider().create({**props, "wait_seconds": 30.0})))


@pytest.fixture
def bao(vault: Vault) -> BaoServer:
    return vault.server


@pytest.fixture
def token(vault: Vault) -> str:
    return str(vault.init["root_token"])


@pytest.fixture
def restored_afterwards(vault: Vault) -> Iterator[None]:
    """For a test that seals or steps down the module's server: restarted and unsealed after it."""
    yield
    vault.server.restart()
    OpenBaoInitProvider().read("id", vault.init)
    wait_until_active(vault.server.address, 30.0)


@pytest.fixture
def path(request: pytest.FixtureRequest) -> str:
    return str(request.node.name)


@pytest.fixture
def provider() -> OpenBaoKvProvider:
    return as_engine_loads(OpenBaoKvProvider())


def kv(bao: BaoServer, token: str, path: str, **data: str) -> dict[str, Any]:
    return {
        "address": bao.address,
        "token": token,
        "mount": "secret",
        "path": path,
        "data": data,
        "provider_version": PROVIDER_VERSION,
    }


def versions(bao: BaoServer, token: str, path: str) -> int:
    metadata = hvac.Client(url=bao.address, token=token).secrets.kv.v2.read_secret_metadata(path=path, mount_point="secret")
    return len(metadata["data"]["versions"])


def stored(bao: BaoServer, token: str, path: str, mount: str = "secret") -> dict[str, str]:
    response = hvac.Client(url=bao.address, token=token).secrets.kv.v2.read_secret_version(
        path=path, mount_point=mount, raise_on_deleted_version=False
    )
    return dict(response["data"]["data"])


def test_create_writes_the_secret(bao: BaoServer, token: str, path: str, provider: OpenBaoKvProvider) -> None:
    result = provider.create(kv(bao, token, path, password="s3cret"))
    assert stored(bao, token, path) == {"password": "s3cret"}
    assert result.id == f"secret/{path}"


def test_writing_the_same_data_again_adds_no_version(bao: BaoServer, token: str, path: str, provider: OpenBaoKvProvider) -> None:
    outs = outputs_of(provider.create(kv(bao, token, path, password="s3cret")))
    provider.update(f"secret/{path}", outs, kv(bao, token, path, password="s3cret"))
    provider.create(kv(bao, token, path, password="s3cret"))  # a lost state: create finds it written
    assert versions(bao, token, path) == 1


def test_a_changed_value_updates_in_place(bao: BaoServer, token: str, path: str, provider: OpenBaoKvProvider) -> None:
    outs = outputs_of(provider.create(kv(bao, token, path, password="one")))
    diff = provider.diff(f"secret/{path}", outs, kv(bao, token, path, password="two"))
    assert (diff.changes, diff.replaces) == (True, [])
    provider.update(f"secret/{path}", outs, kv(bao, token, path, password="two"))
    assert stored(bao, token, path) == {"password": "two"}


def test_a_new_path_replaces(bao: BaoServer, token: str, path: str, provider: OpenBaoKvProvider) -> None:
    outs = outputs_of(provider.create(kv(bao, token, path, password="one")))
    assert provider.diff(f"secret/{path}", outs, {**outs, "path": "valkey"}).replaces == ["path"]


def test_unchanged_inputs_show_no_diff(bao: BaoServer, token: str, path: str, provider: OpenBaoKvProvider) -> None:
    outs = outputs_of(provider.create(kv(bao, token, path, password="one")))
    assert provider.diff(f"secret/{path}", outs, kv(bao, token, path, password="one")).changes is False


def test_refresh_reports_a_value_changed_behind_pulumi(bao: BaoServer, token: str, path: str, provider: OpenBaoKvProvider) -> None:
    outs = outputs_of(provider.create(kv(bao, token, path, password="one")))
    hvac.Client(url=bao.address, token=token).secrets.kv.v2.create_or_update_secret(path=path, secret={"password": "edited"})
    result = provider.read(f"secret/{path}", outs)
    assert result.outs is not None
    assert result.outs["data"] == {"password": "edited"}


def test_refresh_drops_a_secret_deleted_behind_pulumi(bao: BaoServer, token: str, path: str, provider: OpenBaoKvProvider) -> None:
    outs = outputs_of(provider.create(kv(bao, token, path, password="one")))
    hvac.Client(url=bao.address, token=token).secrets.kv.v2.delete_metadata_and_all_versions(path=path, mount_point="secret")
    assert provider.read(f"secret/{path}", outs).id is None


def test_the_read_before_a_write_waits_out_a_kv_v2_upgrade(bao: BaoServer, token: str, path: str, provider: OpenBaoKvProvider) -> None:
    """A new KV v2 mount answers "upgrading" for a few milliseconds, too short to hit every time; a
    v1 mount holding data, tuned to v2, answers the same for as long as it copies the data."""
    client = hvac.Client(url=bao.address, token=token)
    client.sys.enable_secrets_engine("kv", path=path, options={"version": "1"})
    for number in range(50):
        client.secrets.kv.v1.create_or_update_secret(path=f"old-{number}", secret={"n": str(number)}, mount_point=path)
    client.sys.tune_mount_configuration(path=path, options={"version": "2"})
    provider.create({**kv(bao, token, "new", password="s3cret"), "mount": path})
    assert stored(bao, token, "new", mount=path) == {"password": "s3cret"}


@pytest.mark.usefixtures("restored_afterwards")
def test_refresh_of_a_sealed_server_keeps_the_recorded_secret(
    bao: BaoServer, token: str, path: str, provider: OpenBaoKvProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    outs = outputs_of(provider.create(kv(bao, token, path, password="one")))
    bao.restart()
    monkeypatch.setattr(openbao_kv, "WAIT_SECONDS", 1.0)
    result = provider.read(f"secret/{path}", outs)
    assert (result.id, result.outs) == (f"secret/{path}", outs)


def test_refresh_of_an_unreachable_server_keeps_the_recorded_secret(
    bao: BaoServer, token: str, path: str, provider: OpenBaoKvProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded = {**kv(bao, token, path, password="one"), "address": "http://127.0.0.1:9"}  # nothing listens on port 9
    monkeypatch.setattr(openbao_kv, "WAIT_SECONDS", 0.5)
    result = provider.read(f"secret/{path}", recorded)
    assert (result.id, result.outs) == (f"secret/{path}", recorded)


@pytest.mark.usefixtures("restored_afterwards")
def test_refresh_racing_the_unseal_reads_the_secret_once_unsealed(
    vault: Vault, bao: BaoServer, token: str, path: str, provider: OpenBaoKvProvider
) -> None:
    outs = outputs_of(provider.create(kv(bao, token, path, password="one")))
    hvac.Client(url=bao.address, token=token).secrets.kv.v2.create_or_update_secret(path=path, secret={"password": "edited"})
    bao.restart()
    with ThreadPoolExecutor(2) as engine:
        kv_read = engine.submit(provider.read, f"secret/{path}", outs)
        time.sleep(0.5)  # the KV read finds the server sealed
        engine.submit(as_engine_loads(OpenBaoInitProvider()).read, "id", vault.init).result()
        result = kv_read.result(timeout=60)
    assert outputs_of(result)["data"] == {"password": "edited"}


@pytest.mark.usefixtures("restored_afterwards")
def test_refresh_of_a_node_not_active_yet_waits_for_it(bao: BaoServer, token: str, path: str, provider: OpenBaoKvProvider) -> None:
    """A step-down leaves the only node without an active one for a moment: "local node not active"."""
    outs = outputs_of(provider.create(kv(bao, token, path, password="one")))
    hvac.Client(url=bao.address, token=token).sys.step_down()
    assert outputs_of(provider.read(f"secret/{path}", outs))["data"] == {"password": "one"}
