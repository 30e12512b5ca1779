"""A generated secret that lives with the data, not with the stack (docs/design/decisions.md, entry 11).

`HostSecret` generates a value once, in a 0600 file under the data folder, and reads it back on
every run: the folder's lifecycle (`preserveData`) decides when the value is gone, never a stack's.

**A kept file is never trusted blindly, nor written carelessly.** An empty file (what a crash can
leave of a file written but not flushed) or one that is not a value of its kind is refused, never
handed on as a secret nor replaced: the message names the file and says whether a new value is
safe (SSH host keys, the CA's key, the admin token: re-trusted or re-seeded) or not while the data
is kept (GitLab's rails secrets, MinIO's root credentials, GitLab's root password, OpenBao's seal key).
Such a must-keep file that holds another valid value than the state recorded is refused too, never
taken: the data opens with the recorded value only (`changed`; the state holds it, secret, so
nothing else need be recorded to tell). A new file is
written to a temporary file, flushed (`fsync`), linked into place, and its folder flushed too, so
after a crash the name holds the whole value or nothing.
"""

from __future__ import annotations

import os
import secrets
import shlex
import string
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, ResourceProvider, UpdateResult

PROVIDER_VERSION = "1"
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


def generate_static_seal_key(_length: int) -> str:
    """OpenBao's static seal key: 32 letters and digits, which the seal takes as the 32-byte AES key itself."""
    return generate_password(32)


GENERATORS = {
    "ca-key": generate_ca_key,
    "static-seal-key": generate_static_seal_key,
    "password": generate_password,
    "gitlab-rails-secrets": generate_gitlab_rails_secrets,
    "ssh-host-keys": generate_ssh_host_keys,
}


WIPING_MARKER = ".blueprint-wiping"
"""File a wipe of a host folder writes before it removes anything (components/host_folder.py), naming
the owner whose destroy wipes it, and removes with the folder: a folder that still has it was wiped
half-way (the host user's files, the secrets among them, gone; the pods' files, the databases, still
there)."""

FINISHING_DESTROY = {
    "phase1": "uv run blueprint destroy --wipe-data",
    "phase2": "uv run blueprint destroy --phase 2 --wipe-data",
    "dev": 'eval "$(uv run blueprint env)" && pulumi destroy -s dev',
}
"""The command that runs again the destroy a wipe of a stack's folder belongs to, and so finishes it,
by stack; the scripts read it as FINISHING_DESTROYS (components/host_folder.py)."""


class HostSecretError(Exception):
    """The secret cannot be made or read here; the message says why and what to do."""


PASSWORD_MIN_LENGTH = 16
RAILS_KEY_BASES = ("secret_key_base", "otp_key_base", "db_key_base")
"""What GitLab cannot start without in `secrets.yml` (the others it derives or lists)."""

KEEP_IT = "keep it while the platform's data is kept"
IF_NEW = {
    "gitlab-rails-secrets.yml": (
        KEEP_IT,
        "GitLab encrypts database columns with it (CI/CD variables, runner and access tokens, two-factor secrets): with a new "
        "one they are unreadable for good",
    ),
    "minio-root-user": (KEEP_IT, "MinIO signs its users' credentials with its root credentials: with new ones its users may stop working"),
    "minio-root-password": (
        KEEP_IT,
        "MinIO signs its users' credentials with its root credentials: with new ones its users may stop working",
    ),
    "openbao-seal-key": (KEEP_IT, "OpenBao's storage opens with this key only: with a new one the vault stays sealed for good"),
    "gitlab-root-password": (KEEP_IT, "GitLab keeps the root password it was first seeded with: a new one would not log in"),
    "openbao-admin-password": (KEEP_IT, "OpenBao keeps the password its user was made with: a new one would not log in"),
    "openbao-blueprint-password": (KEEP_IT, "OpenBao keeps the password its user was made with: a new one would not log in"),
    "minio-user-gitlab": ("safe", "the next `up` sets MinIO's user gitlab to the new value, and GitLab's connection with it"),
    "minio-user-runner-cache": ("safe", "the next `up` sets MinIO's user runner-cache to the new value, and the runners' cache with it"),
    "gitlab-admin-token": ("safe", "the next `up` seeds the new token into GitLab; what used the old one needs the new one"),
    "gitlab-glab-token": ("safe", "the next `up` revokes glab's token, has GitLab make a new one, and logs glab in with it"),
    "gitlab-ssh-host-keys.json": ("safe", "SSH clients that knew the old keys will warn once: drop the old line from ~/.ssh/known_hosts"),
    "platform-ca-name-constrained.key": ("safe", "a new CA is issued: trust the new ca.crt again (and drop the old one)"),
}
"""Whether a new value in place of a kept file is safe, and what it costs, by file name (the names
stacks/phase2.py and the components give them). A file not named here is treated as one the data
depends on."""
IF_NEW_BY_KIND = {
    "ssh-host-keys": IF_NEW["gitlab-ssh-host-keys.json"],
    "ca-key": IF_NEW["platform-ca-name-constrained.key"],
    "gitlab-rails-secrets": IF_NEW["gitlab-rails-secrets.yml"],
    "static-seal-key": IF_NEW["openbao-seal-key"],
}


def if_new(path: Path, kind: str) -> tuple[str, str]:
    """Whether a new value in place of the kept file `path` is safe, and what it costs (IF_NEW): a file
    the table does not name is one the data depends on.
    """
    return IF_NEW.get(path.name) or IF_NEW_BY_KIND.get(kind) or (KEEP_IT, "the data kept beside it may depend on it")


def must_keep(path: Path, kind: str) -> bool:
    """Whether the data kept beside `path` is sealed, encrypted or seeded with its value (IF_NEW says
    KEEP_IT): then a file changed since the state recorded it is refused, never taken (`changed`).
    A password the platform sets again from its file on every `up` (IF_NEW says "safe") is taken: that is
    how it is rotated; a file IF_NEW does not name is kept, as `refusal` says.
    """
    return if_new(path, kind)[0] == KEEP_IT


def invalid(kind: str, value: str) -> str | None:
    """Why `value` (a kept file's text, stripped) is no secret of `kind`, or None when it is one."""
    if not value:
        return "it is empty"
    if kind == "password":
        if len(value) < PASSWORD_MIN_LENGTH or any(char not in ALPHABET for char in value):
            return f"it is not {PASSWORD_MIN_LENGTH} or more letters and digits, as blueprint generates"
        return None
    if kind == "gitlab-rails-secrets":
        import yaml

        try:
            production = (yaml.safe_load(value) or {}).get("production")
        except (yaml.YAMLError, AttributeError):
            production = None
        missing = [key for key in RAILS_KEY_BASES if not isinstance(production, dict) or not production.get(key)]
        return f"it is not GitLab's secrets.yml: production.{', production.'.join(missing)} missing" if missing else None
    if kind == "ssh-host-keys":
        import json

        try:
            files = json.loads(value)
        except ValueError:
            files = None
        if not isinstance(files, dict) or not any(
            name.startswith("ssh_host_") and name.endswith("_key") and "PRIVATE KEY" in str(text) for name, text in files.items()
        ):
            return "it is not the JSON of SSH host key files blueprint writes"
        return None
    if kind == "static-seal-key":
        from providers.openbao_seal_key import static_key_problem

        return static_key_problem(value)
    if kind == "ca-key":
        from cryptography.hazmat.primitives.serialization import load_pem_private_key

        try:
            load_pem_private_key(value.encode(), password=None)
        except (ValueError, TypeError):
            return "it is not an unencrypted PEM private key"
    return None


def refusal(path: Path, kind: str, why: str) -> HostSecretError:
    """The error for a kept file that holds no valid secret: what to do, and whether a new value is safe."""
    safety, cost = if_new(path, kind)
    remove = f"rm {shlex.quote(str(path))}"
    back = f"remove it ({remove}) and run again: the next `up` writes back the value Pulumi's state recorded for it"
    if safety == "safe":
        fix = f"restore it from a backup, or {back}, or, with none recorded, generates a new one: {cost}"
    else:
        fix = (
            f"restore it from a backup of the data folder, or {back}. With none recorded it generates a new one, and "
            f"{cost}: let it do that only when the platform's data is being started over too (uv run blueprint destroy --wipe-data)"
        )
    return HostSecretError(f"the kept secret {path} is not usable: {why}. {fix[0].upper()}{fix[1:]}")


def changed(path: Path, kind: str) -> HostSecretError:
    """The refusal of a must-keep file that holds another valid value than the state recorded: a
    swapped seal key would be handed to OpenBao, which then stays sealed at its next start.
    """
    cost = if_new(path, kind)[1]
    return HostSecretError(
        f"the kept secret {path} holds another value than the one this stack's platform was set up with, and {cost}; it "
        f"is not taken, and nothing was changed. Put the recorded value back: remove the file "
        f"(rm {shlex.quote(str(path))}) and run again: the next `up` writes back the value Pulumi's state recorded for "
        f"it. Only if the data folder came back from a backup together with this file does the data open with this "
        f"value alone: then take the folder over as it is (destroy with preserveData=true, then up)"
    )


def kept(path: Path, kind: str) -> str:
    """The valid secret `path` holds, or a `HostSecretError` that names the file and the fix."""
    try:
        value = path.read_text().strip()
    except (OSError, UnicodeDecodeError) as error:
        raise refusal(path, kind, f"it cannot be read ({type(error).__name__})") from None
    if (why := invalid(kind, value)) is not None:
        raise refusal(path, kind, why)
    return value


def file_differs(path: Path, kind: str, recorded: object) -> bool:
    """Whether `path` no longer holds the value the state `recorded`: gone, changed, or unusable."""
    if not path.exists():
        return True
    try:
        return kept(path, kind) != recorded
    except HostSecretError:
        return True  # the update says what is wrong with it


def flush_folder(folder: Path) -> None:
    """Make a new name in `folder` durable (fsync of the folder itself: the file's own fsync does not cover its link)."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def finishing_destroy(owner: str) -> str:
    """The command that finishes the wipe `owner` (`<project>/<stack>@<checkout id>`, as a wiping
    marker names it) began; for an owner no stack of blueprint's is, each stack's.
    """
    stack = owner.partition("/")[2].partition("@")[0]
    if stack in FINISHING_DESTROY:
        return f"`{FINISHING_DESTROY[stack]}`"
    return f"`{FINISHING_DESTROY['phase1']}` (the phase stacks'), or `{FINISHING_DESTROY['dev']}` (dev's)"


def unfinished_wipe(folder: Path) -> str | None:
    """Why no `up` may take `folder` over: it, or a folder above it, holds WIPING_MARKER (any file of
    that name: even a link says a wipe began), naming the destroy that finishes that wipe; or None.
    What the program checks for every folder a stack claims before it registers anything
    (through stacks/layout_record.py's `unfinished_wipe`), and `ensure` before it writes a secret.
    """
    for wiped in (folder, *folder.parents):
        marker = wiped / WIPING_MARKER
        if os.path.lexists(marker):
            from components.markers import read_marker

            owner = (read_marker(marker) or "").strip()
            return (
                f"a destroy that removes {wiped} stopped half-way: its secrets may be gone while its databases remain, and "
                f"new secrets beside them would lock them away for good, so no `up` takes it over; nothing was changed. "
                f"Finish that wipe, then run this again: {finishing_destroy(owner)}"
            )
    return None


def ensure(path: Path, kind: str, length: int, recorded: str | None = None) -> str:
    """The value in `path`; when the file is missing, the value the stack's state `recorded` for it
    (a file removed by hand or lost while the data it opens is kept: only that value opens it), or
    else a new one, written (0600, atomically, flushed to disk). Never a new value beside data a
    half-finished wipe left: it would lock that data away for good. A file there that holds no valid
    value is refused (`kept`), never replaced.
    """
    if path.exists() or path.is_symlink():
        return kept(path, kind)
    restoring = recorded is not None and invalid(kind, recorded) is None
    if not restoring and (why := unfinished_wipe(path.parent)) is not None:
        raise HostSecretError(why)
    new_folder = not path.parent.exists()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if new_folder:
        flush_folder(path.parent.parent)
    # Stripped, as `kept` reads it back: the state holds what a refresh would read, no diff between them.
    value = (recorded if restoring and recorded is not None else GENERATORS[kind](length)).strip()
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "w") as handle:
            handle.write(value + "\n")
            handle.flush()
            os.fsync(handle.fileno())  # the whole value on disk before the name points at it
        # link, not replace: if another run wrote the file meanwhile, keep its value.
        os.link(temporary, path)
    except FileExistsError:
        return kept(path, kind)
    finally:
        Path(temporary).unlink(missing_ok=True)
    flush_folder(path.parent)
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
        if not changed and file_differs(Path(str(news.get("path"))), str(news.get("kind") or "password"), olds.get("value")):
            changed = ["value"]  # not an input: the file is gone (the update writes it back) or holds another value (taken)
        return DiffResult(changes=bool(changed), replaces=[], delete_before_replace=False)

    def _outs(self, props: dict[str, Any], recorded: str | None = None) -> dict[str, Any]:
        value = ensure(Path(str(props["path"])), str(props.get("kind") or "password"), int(props["length"]), recorded)
        return {**{key: props.get(key) for key in INPUTS}, "value": value}

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=str(props["path"]), outs=self._outs(props))

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        """A missing file gets the value the state recorded for that same secret back, never a new one: the
        data kept beside it (a database the old value encrypts, a vault it unseals) opens with that value
        only. For the same reason a must-keep file that holds another value is refused (`changed`); any
        other file that is there wins over the state (restored from a backup, or changed on purpose).
        The same secret is the same kind in a file of the same name: a data folder at another path (a
        second operator's checkout, a new laptop: the state is the source, the file its local copy)
        keeps it; a file of a new name is a new secret (a new CA is never the old one's key).
        """
        same_secret = (
            olds.get("kind") == news.get("kind")
            and Path(str(olds.get("path"))).name == Path(str(news.get("path"))).name
            and isinstance(olds.get("value"), str)
        )
        path, kind = Path(str(news["path"])), str(news.get("kind") or "password")
        if same_secret and must_keep(path, kind) and (path.exists() or path.is_symlink()) and kept(path, kind) != olds["value"]:
            raise changed(path, kind)
        return UpdateResult(outs=self._outs(news, recorded=olds["value"] if same_secret else None))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """On refresh: the file's value; a missing file keeps what the state recorded, for the next
        `up` to write back (the state may hold the only copy left), and so does a must-keep file
        changed since (the next `up` refuses it: a refresh must not adopt it behind that refusal).
        """
        path, kind = Path(str(props.get("path"))), str(props.get("kind") or "password")
        if not path.exists():
            return ReadResult(id_, props)
        value = kept(path, kind)
        if must_keep(path, kind) and isinstance(props.get("value"), str) and value != props["value"]:
            return ReadResult(id_, props)
        return ReadResult(id_, {**props, "value": value})

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
