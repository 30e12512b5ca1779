"""Secrets that live with the data folder: generated once, read back on every run."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from providers.host_secret import PROVIDER_VERSION, HostSecretProvider
from tests.providers.engine import as_engine_loads, outputs_of


@pytest.fixture
def provider() -> HostSecretProvider:
    return as_engine_loads(HostSecretProvider())


def props(path: Path, length: float = 40.0) -> dict[str, object]:
    return {"path": str(path), "length": length, "provider_version": PROVIDER_VERSION}


def test_a_new_secret_is_generated_into_a_0600_file(tmp_path: Path, provider: HostSecretProvider) -> None:
    path = tmp_path / "secrets" / "minio-root-password"
    value = outputs_of(provider.create(props(path)))["value"]
    assert len(value) == 40
    assert value.isalnum()
    assert path.read_text().strip() == value
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_an_existing_secret_is_read_back_not_regenerated(tmp_path: Path, provider: HostSecretProvider) -> None:
    path = tmp_path / "secrets" / "minio-root-password"
    first = outputs_of(provider.create(props(path)))["value"]
    # A destroy with preserveData=true and a new `up`: no state, the same file.
    again = outputs_of(as_engine_loads(HostSecretProvider()).create(props(path)))["value"]
    assert again == first


def test_two_files_hold_two_different_values(tmp_path: Path, provider: HostSecretProvider) -> None:
    assert outputs_of(provider.create(props(tmp_path / "a")))["value"] != outputs_of(provider.create(props(tmp_path / "b")))["value"]


def test_refresh_drops_a_secret_whose_file_was_wiped(tmp_path: Path, provider: HostSecretProvider) -> None:
    path = tmp_path / "secret"
    outs = outputs_of(provider.create(props(path)))
    path.unlink()
    assert provider.read(str(path), outs).id is None


def test_delete_leaves_the_file(tmp_path: Path, provider: HostSecretProvider) -> None:
    path = tmp_path / "secret"
    outs = outputs_of(provider.create(props(path)))
    provider.delete(str(path), outs)
    assert path.exists()


def test_check_refuses_a_short_or_relative_secret(provider: HostSecretProvider) -> None:
    failures = provider.check({}, {"path": "relative", "length": 8.0}).failures
    assert sorted(failure.property for failure in failures) == ["length", "path"]
