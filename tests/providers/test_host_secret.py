"""Secrets that live with the data folder: generated once, read back on every run."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest
import yaml

from providers.host_secret import PROVIDER_VERSION, WIPING_MARKER, HostSecretError, HostSecretProvider
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


def test_refresh_keeps_the_recorded_value_of_a_file_that_is_gone(tmp_path: Path, provider: HostSecretProvider) -> None:
    """The state may hold the only copy left: a refresh never drops it."""
    path = tmp_path / "secret"
    outs = outputs_of(provider.create(props(path)))
    path.unlink()
    read = provider.read(str(path), outs)
    assert (read.id, (read.outs or {}).get("value")) == (str(path), outs["value"])


def test_a_file_that_is_gone_is_a_change_the_next_up_makes(tmp_path: Path, provider: HostSecretProvider) -> None:
    path = tmp_path / "secret"
    outs = outputs_of(provider.create(props(path)))
    assert provider.diff(str(path), outs, props(path)).changes is False
    path.unlink()
    assert provider.diff(str(path), outs, props(path)).changes is True


@pytest.mark.parametrize("kind", ["password", "gitlab-rails-secrets", "ca-key"])
def test_a_file_that_is_gone_gets_the_recorded_value_back_not_a_new_one(tmp_path: Path, provider: HostSecretProvider, kind: str) -> None:
    """A new seal key would leave OpenBao sealed for good, new rails secrets GitLab's columns unreadable."""
    path = tmp_path / "secrets" / "kept"
    outs = outputs_of(provider.create(props(path, kind=kind)))
    path.unlink()
    again = outputs_of(as_engine_loads(HostSecretProvider()).update(str(path), outs, props(path, kind=kind)))
    assert again["value"] == outs["value"]
    assert path.read_text().strip() == outs["value"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_the_recorded_value_is_written_back_even_beside_a_wipe_that_stopped_half_way(tmp_path: Path, provider: HostSecretProvider) -> None:
    """It is the value the databases left there need; only a new one would lock them away."""
    path = tmp_path / "platform" / "secrets" / "kept"
    outs = outputs_of(provider.create(props(path)))
    path.unlink()
    (tmp_path / "platform" / WIPING_MARKER).touch()
    assert outputs_of(provider.update(str(path), outs, props(path)))["value"] == outs["value"]


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


@pytest.mark.parametrize(
    ("owner", "finish"),
    [
        ("blueprint/phase1@0123456789abcdef", "`uv run blueprint destroy --wipe-data`"),
        ("blueprint/phase2@0123456789abcdef", "`uv run blueprint destroy --phase 2 --wipe-data`"),
        ("blueprint/dev@0123456789abcdef", '`eval "$(uv run blueprint env)" && pulumi destroy -s dev`'),
    ],
)
def test_the_refusal_beside_a_half_finished_wipe_gives_the_destroy_of_the_owner_that_began_it(
    tmp_path: Path, provider: HostSecretProvider, owner: str, finish: str
) -> None:
    """`blueprint destroy` finishes nothing of dev's, and destroys phase1 with phase2 unless told `--phase 2`."""
    (tmp_path / "platform" / "secrets").mkdir(parents=True)
    (tmp_path / "platform" / WIPING_MARKER).write_text(f"{owner}\n")
    with pytest.raises(HostSecretError) as refused:
        provider.create(props(tmp_path / "platform" / "secrets" / "minio-root-password"))
    assert str(refused.value).endswith(f"Finish that wipe, then run this again: {finish}")


def test_the_refusal_beside_a_half_finished_wipe_never_says_rm(tmp_path: Path, provider: HostSecretProvider) -> None:
    """`rm -rf` of a data folder crosses what is mounted inside, and takes what others claimed in it."""
    (tmp_path / "platform" / "secrets").mkdir(parents=True)
    (tmp_path / WIPING_MARKER).write_text("blueprint/phase1@0123456789abcdef\n")
    with pytest.raises(HostSecretError) as refused:
        provider.create(props(tmp_path / "platform" / "secrets" / "minio-root-password"))
    assert "rm " not in str(refused.value)


def test_a_wiping_marker_that_is_a_link_is_a_half_finished_wipe_whose_target_is_never_read(
    tmp_path: Path, provider: HostSecretProvider
) -> None:
    secret = tmp_path / "elsewhere"
    secret.write_text("blueprint/dev@not-what-the-marker-says\n")
    (tmp_path / "platform" / "secrets").mkdir(parents=True)
    (tmp_path / "platform" / WIPING_MARKER).symlink_to(secret)
    with pytest.raises(HostSecretError) as refused:
        provider.create(props(tmp_path / "platform" / "secrets" / "minio-root-password"))
    assert "stopped half-way" in str(refused.value)
    assert "not-what-the-marker-says" not in str(refused.value)
    assert "pulumi destroy -s dev`" in str(refused.value)  # an owner it cannot read: each stack's destroy


@pytest.mark.parametrize("kind", ["password", "gitlab-rails-secrets", "ssh-host-keys", "ca-key"])
def test_an_empty_kept_file_is_refused_not_taken_as_the_secret(tmp_path: Path, provider: HostSecretProvider, kind: str) -> None:
    """What a crash can leave of a file written but not flushed: an empty secret would reach GitLab,
    MinIO or the CA as their key."""
    path = tmp_path / "secret"
    path.write_text("\n")
    with pytest.raises(HostSecretError, match=rf"the kept secret {re.escape(str(path))} is not usable: it is empty"):
        provider.create(props(path, kind=kind))
    assert path.read_text() == "\n"


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        ("password", "short"),
        ("password", "forty characters but with spaces in it !!"),
        ("gitlab-rails-secrets", "production:\n  secret_key_base: abc\n"),
        ("gitlab-rails-secrets", "[not, a, mapping]"),
        ("ssh-host-keys", "{not json"),
        ("ca-key", "-----BEGIN EC PRIVATE KEY-----\ntruncated"),
    ],
)
def test_a_kept_file_that_holds_no_valid_secret_is_refused(tmp_path: Path, provider: HostSecretProvider, kind: str, text: str) -> None:
    path = tmp_path / "secret"
    path.write_text(text)
    with pytest.raises(HostSecretError, match="is not usable: it is not"):
        provider.create(props(path, kind=kind))
    assert path.read_text() == text


def test_the_refusal_never_shows_the_files_content(tmp_path: Path, provider: HostSecretProvider) -> None:
    path = tmp_path / "secret"
    path.write_text("pa ss-word-that-is-wrong")
    with pytest.raises(HostSecretError) as refused:
        provider.create(props(path))
    assert "pa ss-word-that-is-wrong" not in str(refused.value)


def test_refresh_refuses_a_kept_file_emptied_since(tmp_path: Path, provider: HostSecretProvider) -> None:
    path = tmp_path / "secret"
    outs = outputs_of(provider.create(props(path)))
    path.write_text("")
    with pytest.raises(HostSecretError, match="it is empty"):
        provider.read(str(path), outs)


@pytest.mark.parametrize("name", ["gitlab-rails-secrets.yml", "minio-root-password", "minio-root-user", "gitlab-root-password"])
def test_a_secret_the_kept_data_depends_on_is_to_be_restored_not_regenerated(
    tmp_path: Path, provider: HostSecretProvider, name: str
) -> None:
    """A new rails secret leaves GitLab's encrypted columns unreadable; new MinIO root credentials
    break its users; GitLab keeps the root password it was seeded with."""
    path = tmp_path / "my data" / name
    path.parent.mkdir()
    path.write_text("")
    kind = "gitlab-rails-secrets" if name.endswith(".yml") else "password"
    with pytest.raises(HostSecretError) as refused:
        provider.create(props(path, kind=kind))
    message = str(refused.value)
    assert "Restore it from a backup of the data folder" in message
    assert f"rm '{path}') and run again: the next `up` writes back the value Pulumi's state recorded for it" in message
    assert "let it do that only when the platform's data is being started over too" in message


@pytest.mark.parametrize(
    ("name", "kind"),
    [("gitlab-ssh-host-keys.json", "ssh-host-keys"), ("platform-ca-name-constrained.key", "ca-key"), ("gitlab-admin-token", "password")],
)
def test_a_secret_safe_to_regenerate_says_removing_it_brings_the_recorded_value_back_or_a_new_one(
    tmp_path: Path, provider: HostSecretProvider, name: str, kind: str
) -> None:
    path = tmp_path / name
    path.write_text("")
    back = rf"or remove it \(rm {re.escape(str(path))}\) and run again: the next `up` writes back the value Pulumi's state recorded"
    with pytest.raises(HostSecretError, match=rf"{back} for it, or, with none recorded, generates a new one: "):
        provider.create(props(path, kind=kind))


def test_a_new_secret_and_its_folder_are_flushed_to_disk(
    tmp_path: Path, provider: HostSecretProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Linked into place unflushed, a crash can leave the name pointing at an empty file."""
    import os

    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(descriptor: int) -> None:
        synced.append(os.fstat(descriptor).st_ino)
        real_fsync(descriptor)

    monkeypatch.setattr("providers.host_secret.os.fsync", fsync)
    path = tmp_path / "secrets" / "minio-root-password"
    provider.create(props(path))
    assert path.stat().st_ino in synced
    assert synced.index(path.parent.stat().st_ino) > synced.index(path.stat().st_ino)
    assert tmp_path.stat().st_ino in synced  # the new secrets folder's own name


def test_a_new_static_seal_key_is_one_openbaos_seal_takes(tmp_path: Path, provider: HostSecretProvider) -> None:
    from providers.openbao_seal_key import static_key_problem

    value = outputs_of(provider.create(props(tmp_path / "openbao-seal-key", kind="static-seal-key")))["value"]
    assert static_key_problem(value) is None


def test_a_kept_static_seal_key_openbaos_seal_cannot_take_is_refused(tmp_path: Path, provider: HostSecretProvider) -> None:
    """A restored file of the wrong length would only make OpenBao fail to start, far from the cause."""
    path = tmp_path / "openbao-seal-key"
    path.write_text("a" * 31 + "\n")
    with pytest.raises(HostSecretError, match="openbao-seal-key is not usable: it is 31 bytes long"):
        provider.create(props(path, kind="static-seal-key"))


def test_a_file_changed_since_the_last_up_is_a_change_whose_value_is_the_files(tmp_path: Path, provider: HostSecretProvider) -> None:
    """A file of a password the platform sets again on every `up`, restored from a backup or changed on
    purpose, wins over what the state recorded: that is how it is rotated."""
    path = tmp_path / "minio-user-gitlab"
    outs = outputs_of(provider.create(props(path)))
    path.write_text("RestoredFromABackup0123456789\n")
    assert provider.diff(str(path), outs, props(path)).changes is True
    assert outputs_of(provider.update(str(path), outs, props(path)))["value"] == "RestoredFromABackup0123456789"


def test_a_secret_given_a_new_file_name_is_not_copied_from_the_old_one(tmp_path: Path, provider: HostSecretProvider) -> None:
    """A secret given a new file name is a new secret: what the state recorded for the old file never follows it."""
    old, new = tmp_path / "ca.key", tmp_path / "moved" / "ca-name-constrained.key"
    outs = outputs_of(provider.create(props(old, kind="ca-key")))
    moved = outputs_of(provider.update(str(old), outs, props(new, kind="ca-key")))
    assert moved["value"] != outs["value"]
    assert new.read_text().strip() == moved["value"]


@pytest.mark.parametrize("kind", ["static-seal-key", "gitlab-rails-secrets", "ca-key", "password"])
def test_a_data_folder_at_another_path_gets_the_recorded_value_back(tmp_path: Path, provider: HostSecretProvider, kind: str) -> None:
    """Another checkout or machine on the same backend: the state is the source, the file its local copy."""
    first, here = tmp_path / "alice" / "secrets" / "kept", tmp_path / "bob" / "secrets" / "kept"
    outs = outputs_of(provider.create(props(first, kind=kind)))
    again = outputs_of(as_engine_loads(HostSecretProvider()).update(str(first), outs, props(here, kind=kind)))
    assert again["value"] == here.read_text().strip() == outs["value"]


MUST_KEEP = [
    ("openbao-seal-key", "static-seal-key"),
    ("gitlab-rails-secrets.yml", "gitlab-rails-secrets"),
    ("minio-root-user", "password"),
    ("minio-root-password", "password"),
    ("gitlab-root-password", "password"),
    ("openbao-admin-password", "password"),
    ("openbao-blueprint-password", "password"),
    ("a-file-no-table-names", "password"),
]


def another_valid_value(kind: str) -> str:
    from providers.host_secret import GENERATORS

    return GENERATORS[kind](32).strip()


@pytest.mark.parametrize(("name", "kind"), MUST_KEEP)
def test_a_must_keep_file_swapped_for_another_valid_value_is_refused_never_adopted(
    tmp_path: Path, provider: HostSecretProvider, name: str, kind: str
) -> None:
    """A swapped seal key, taken, would reach OpenBao's Secret: the next restart leaves the vault sealed."""
    path = tmp_path / "secrets" / name
    outs = outputs_of(provider.create(props(path, length=32, kind=kind)))
    swapped = another_valid_value(kind)
    path.write_text(swapped + "\n")
    assert provider.diff(str(path), outs, props(path, length=32, kind=kind)).changes is True
    with pytest.raises(HostSecretError) as refused:
        as_engine_loads(HostSecretProvider()).update(str(path), outs, props(path, length=32, kind=kind))
    message = str(refused.value)
    assert f"the kept secret {path} holds another value than the one this stack's platform was set up with" in message
    assert f"(rm {path}) and run again: the next `up` writes back the value Pulumi's state recorded for it" in message
    assert swapped not in message
    assert outs["value"] not in message
    assert path.read_text().strip() == swapped  # nothing changed


@pytest.mark.parametrize(("name", "kind"), MUST_KEEP[:2])
def test_a_refresh_does_not_adopt_a_swapped_must_keep_file(tmp_path: Path, provider: HostSecretProvider, name: str, kind: str) -> None:
    path = tmp_path / name
    outs = outputs_of(provider.create(props(path, length=32, kind=kind)))
    path.write_text(another_valid_value(kind) + "\n")
    assert (provider.read(str(path), outs).outs or {}).get("value") == outs["value"]


def test_removing_a_swapped_seal_key_as_the_refusal_says_brings_the_recorded_one_back(tmp_path: Path, provider: HostSecretProvider) -> None:
    path = tmp_path / "openbao-seal-key"
    outs = outputs_of(provider.create(props(path, length=32, kind="static-seal-key")))
    path.write_text(another_valid_value("static-seal-key") + "\n")
    path.unlink()
    again = outputs_of(provider.update(str(path), outs, props(path, length=32, kind="static-seal-key")))
    assert again["value"] == outs["value"] == path.read_text().strip()
