"""KV v2 writes against a real OpenBao, through the provider as the engine loads it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import hvac
import pytest

from providers.openbao_init import OpenBaoInitProvider
from providers.openbao_kv import PROVIDER_VERSION, OpenBaoKvProvider
from tests.providers.engine import BaoServer, as_engine_loads, outputs_of, running_bao


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BaoServer, str]]:
    """One initialised server for the module (each test writes its own path) and its root token."""
    folder = tmp_path_factory.mktemp("kv")
    for server in running_bao(folder / "bao"):
        props = {"address": server.address, "keys_file": str(folder / "keys.json"), "key_shares": 1.0, "key_threshold": 1.0}
        yield server, str(outputs_of(OpenBaoInitProvider().create({**props, "wait_seconds": 30.0}))["root_token"])


@pytest.fixture
def bao(vault: tuple[BaoServer, str]) -> BaoServer:
    return vault[0]


@pytest.fixture
def token(vault: tuple[BaoServer, str]) -> str:
    return vault[1]


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


def stored(bao: BaoServer, token: str, path: str) -> dict[str, str]:
    response = hvac.Client(url=bao.address, token=token).secrets.kv.v2.read_secret_version(
        path=path, mount_point="secret", raise_on_deleted_version=False
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
