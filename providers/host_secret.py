"""A generated secret that lives with the data, not with the stack.

pulumi-random values exist only in Pulumi state, so a `destroy` + `up` generates new ones; that is
fine for a password the platform re-applies (CloudNativePG re-sets role passwords from their
Secrets), and wrong for one the preserved data depends on (MinIO's root credentials encrypt its IAM
data; GitLab's rails secrets encrypt database columns). `HostSecret` generates such a value once, in
a 0600 file under the data folder, and reads it back on every run. The folder's lifecycle
(`preserveData`) decides when the value is gone, never a stack's.
"""

from __future__ import annotations

import os
import secrets
import string
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, ResourceProvider, UpdateResult

PROVIDER_VERSION = "2"
"""Bump when the provider's behaviour changes (it is pickled by reference)."""

INPUTS = ("path", "kind", "length", "provider_version")
ALPHABET = string.ascii_letters + string.digits
"""Letters and digits: safe in URLs, YAML, INI files and shell words alike."""


def generate_password(length: int) -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(length))


def generate_gitlab_rails_secrets(_length: int) -> str:
    """GitLab's `secrets.yml`, every field its shared-secrets job would generate (chart 10.x
    templates/shared-secrets/_generate_secrets.sh.tpl): 128 hex digits per key base, an RSA-2048
    OpenID Connect signing key, and the Active Record encryption keys (lists) and salt.
    """
    import yaml
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    signing_key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )
    production = {
        "secret_key_base": secrets.token_hex(64),
        "otp_key_base": secrets.token_hex(64),
        "db_key_base": secrets.token_hex(64),
        "encrypted_settings_key_base": secrets.token_hex(64),
        "openid_connect_signing_key": signing_key.decode(),
        "active_record_encryption_primary_key": [generate_password(32)],
        "active_record_encryption_deterministic_key": [generate_password(32)],
        "active_record_encryption_key_derivation_salt": generate_password(32),
    }
    return yaml.safe_dump({"production": production}, sort_keys=False)


def generate_ssh_host_keys(_length: int) -> str:
    """SSH host keys for gitlab-shell, as JSON {file name: content}: the files the chart's
    `global.shell.hostKeys.secret` holds (ssh_host_<type>_key and .pub).
    """
    import json

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

    keys: dict[str, PrivateKeyTypes] = {
        "rsa": rsa.generate_private_key(public_exponent=65537, key_size=3072),
        "ecdsa": ec.generate_private_key(ec.SECP256R1()),
        "ed25519": ed25519.Ed25519PrivateKey.generate(),
    }
    files = {}
    for kind, key in keys.items():
        files[f"ssh_host_{kind}_key"] = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
        ).decode()
        public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        files[f"ssh_host_{kind}_key.pub"] = public.decode() + "\n"
    return json.dumps(files, sort_keys=True)


def generate_ca_key(_length: int) -> str:
    """An ECDSA P-256 private key, PEM (SEC1), for the platform CA."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    return (
        ec.generate_private_key(ec.SECP256R1())
        .private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption())
        .decode()
    )


GENERATORS = {
    "ca-key": generate_ca_key,
    "password": generate_password,
    "gitlab-rails-secrets": generate_gitlab_rails_secrets,
    "ssh-host-keys": generate_ssh_host_keys,
}


WIPING_MARKER = ".blueprint-wiping"
"""File a wipe of a host folder writes before it removes anything (components/host_folder.py), and
removes with the folder: a folder that still has it was wiped half-way (the host user's files, the
secrets among them, gone; the pods' files, the databases, still there)."""


class HostSecretError(Exception):
    """The secret cannot be made here; the message says why and what to do."""


def half_wiped(path: Path) -> Path | None:
    """The folder above `path` that a wipe left half-way, if any."""
    return next((folder for folder in path.parents if (folder / WIPING_MARKER).exists()), None)


def ensure(path: Path, kind: str, length: int) -> str:
    """The value in `path`, generated and written (0600, atomically) when the file is missing, and
    never beside data a half-finished wipe left: new secrets would lock it away for good.
    """
    if path.exists():
        return path.read_text().strip()
    if (folder := half_wiped(path)) is not None:
        raise HostSecretError(
            f"a destroy that removes {folder} stopped half-way: its secrets are gone while its databases may remain, and a "
            f"new {path.name} beside them would lock them away. Finish the wipe (run the destroy again, or sudo rm -rf "
            f"'{folder}'), then run again"
        )
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    value = GENERATORS[kind](length)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "w") as handle:
            handle.write(value + "\n")
        # link, not replace: if another run wrote the file meanwhile, keep its value.
        os.link(temporary, path)
    except FileExistsError:
        return path.read_text().strip()
    finally:
        Path(temporary).unlink(missing_ok=True)
    return value


class HostSecretProvider(ResourceProvider):
    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        failures = []
        if not Path(str(news.get("path"))).is_absolute():
            failures.append(CheckFailure("path", f"expected an absolute path, got {news.get('path')!r}"))
        length = news.get("length")
        if not isinstance(length, int | float) or int(length) < 16:
            failures.append(CheckFailure("length", f"expected an integer >= 16, got {length!r}"))
        if news.get("kind", "password") not in GENERATORS:
            failures.append(CheckFailure("kind", f"expected one of {sorted(GENERATORS)}, got {news.get('kind')!r}"))
        return CheckResult(news, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [key for key in INPUTS if olds.get(key) != news.get(key)]
        return DiffResult(changes=bool(changed), replaces=[], delete_before_replace=False)

    def _outs(self, props: dict[str, Any]) -> dict[str, Any]:
        value = ensure(Path(str(props["path"])), str(props.get("kind") or "password"), int(props["length"]))
        return {**{key: props.get(key) for key in INPUTS}, "value": value}

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=str(props["path"]), outs=self._outs(props))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=self._outs(news))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        path = Path(str(props.get("path")))
        if not path.exists():
            return ReadResult(None, {})  # the data was wiped: refresh drops it, `up` generates anew
        return ReadResult(id_, {**props, "value": path.read_text().strip()})

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing: the file goes with the data folder (see the module docstring)."""


@dataclass(frozen=True, kw_only=True)
class HostSecretArgs:
    path: pulumi.Input[str]
    """Absolute path of the 0600 file under the data folder."""
    kind: str = "password"
    """What to generate: "password" (letters and digits), "gitlab-rails-secrets" (secrets.yml),
    "ssh-host-keys" (JSON of key files), "ca-key" (an ECDSA P-256 key, PEM)."""
    length: int = 40
    """The password's length."""


class HostSecret(pulumi.dynamic.Resource, module="blueprint", name="HostSecret"):
    """A generated secret kept in a file under the data folder."""

    value: pulumi.Output[str]
    """The value (secret)."""

    def __init__(self, name: str, args: HostSecretArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        props = {"path": args.path, "kind": args.kind, "length": args.length, "provider_version": PROVIDER_VERSION, "value": None}
        secret = pulumi.ResourceOptions(additional_secret_outputs=["value"])
        super().__init__(HostSecretProvider(), name, props, pulumi.ResourceOptions.merge(opts, secret))
