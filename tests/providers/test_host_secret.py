"""Secrets that live with the data folder: generated once, read back on every run."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest
import yaml

from providers.host_secret import PROVIDER_VERSION, HostSecretError, HostSecretProvider
from tests.providers.engine import as_engine_loads, outputs_of


@pytest.fixture
def provider() -> HostSecretProvider:
    return as_engine_loads(HostSecretProvider())


def props(path: Path, length: float = 40.0, kind: str = "password") -> dict[str, object]:
    return {"path": str(path), "kind": kind, "length": length, "provider_version": PROVIDER_VERSION}


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


def test_gitlab_rails_secrets_have_every_field_in_gitlabs_format(tmp_path: Path, provider: HostSecretProvider) -> None:
    text = outputs_of(provider.create(props(tmp_path / "rails", kind="gitlab-rails-secrets")))["value"]
    production = yaml.safe_load(text)["production"]
    for key in ("secret_key_base", "otp_key_base", "db_key_base", "encrypted_settings_key_base"):
        assert re.fullmatch(r"[0-9a-f]{128}", production[key]), key
    assert production["openid_connect_signing_key"].startswith("-----BEGIN RSA PRIVATE KEY-----")
    for key in ("active_record_encryption_primary_key", "active_record_encryption_deterministic_key"):
        [value] = production[key]
        assert re.fullmatch(r"[A-Za-z0-9]{32}", value), key
    assert re.fullmatch(r"[A-Za-z0-9]{32}", production["active_record_encryption_key_derivation_salt"])


def test_ssh_host_keys_are_openssh_key_pairs(tmp_path: Path, provider: HostSecretProvider) -> None:
    files = json.loads(outputs_of(provider.create(props(tmp_path / "keys", kind="ssh-host-keys")))["value"])
    assert set(files) == {f"ssh_host_{kind}_key{suffix}" for kind in ("rsa", "ecdsa", "ed25519") for suffix in ("", ".pub")}
    assert files["ssh_host_ed25519_key"].startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    assert files["ssh_host_ed25519_key.pub"].startswith("ssh-ed25519 ")


def test_check_refuses_an_unknown_kind(provider: HostSecretProvider) -> None:
    failures = provider.check({}, {"path": "/secret", "length": 40.0, "kind": "rot13"}).failures
    assert [failure.property for failure in failures] == ["kind"]


def test_the_ca_key_is_an_ecdsa_p256_pem(tmp_path: Path, provider: HostSecretProvider) -> None:
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    pem = outputs_of(provider.create(props(tmp_path / "ca.key", kind="ca-key")))["value"]
    key = load_pem_private_key(pem.encode(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    assert key.curve.name == "secp256r1"


def test_no_secret_is_made_beside_data_a_half_finished_wipe_left(tmp_path: Path, provider: HostSecretProvider) -> None:
    """The wipe removed the host user's files (the secrets) and left the pods' (the databases): a
    new secret beside them would lock GitLab, MinIO or the CA's users out of them for good."""
    (tmp_path / "platform" / "secrets").mkdir(parents=True)
    (tmp_path / ".blueprint-wiping").touch()
    with pytest.raises(HostSecretError, match="stopped half-way"):
        provider.create(props(tmp_path / "platform" / "secrets" / "gitlab-rails-secrets.yml"))
    assert not (tmp_path / "platform" / "secrets" / "gitlab-rails-secrets.yml").exists()
