"""Bring OpenBao to what blueprint's config says, and say exactly what to do when that cannot be done.

OpenBao initialises itself (components/openbao.py): its static seal key and its users' passwords
exist, in files under the data folder, before the server first starts. So `OpenBaoInit` never calls
`sys/init`, and its outputs hold no token and no key. It converges to "the StatefulSet has rolled
out; OpenBao answers, unsealed, active; configured as `requests` say; user `blueprint` logs in; KV
v2 at `secret/`", trying every step again (an unreachable server, a sealed or standby one, an
answer slower than `http_timeout`, a 5xx) until `wait_seconds` have passed. Killing it at any
moment, or losing any answer, loses nothing: the next run starts over from the same files.

- **Rolled out first.** The release does not wait for its pod (components/openbao.py says why), so
  `converge` waits for the StatefulSet (`kubectl rollout status`, with the kubeconfig `kind` gives)
  before it asks OpenBao anything: after a change of the release (its `release_digest` input) the
  old pod would otherwise answer for the new one.
- **The same requests as self-initialisation.** `requests` is the list the server's `initialize`
  stanzas are made from. `converge` applies it as user `admin` on every create and update, so a
  vault initialised before a request changed gets the change too: mounts are enabled when missing
  (a mount of another type or version there is refused), policies and users written. A password is
  written only when its user is new: the vault keeps the one it has, and a wrong file is refused.
- **A vault of the earlier design is upgraded in place.** An earlier blueprint initialised OpenBao
  with Shamir keys and kept them, with its root token, in `openbao-init.json`. Under this version's
  config that storage waits in seal-migration mode. While that file is there, each run resumes:
  1. storage still Shamir-sealed: `sys/unseal` with `migrate`, the file's keys one by one, until
     unsealed. OpenBao then seals its root key with the static key, and turns the Shamir key into
     the vault's recovery key (internal/vault/core.go `migrateSeal`);
  2. the file's root token still valid here (so this is the file's vault): the requests above,
     with that token (the vault has none of blueprint's configuration yet: self-initialisation
     never runs on initialised storage); then its recovery key is rotated to a new one nobody is
     shown (`sys/rotate/recovery`), so the file's keys open nothing any more and, as in a
     self-initialised vault, nobody holds a recovery key;
  3. the file is renamed `openbao-init.json.migrated`, never deleted (its keys still open a backup
     of the storage taken before the upgrade), and its folder flushed;
  4. the root token in it is revoked. Every later run revokes the root token of a `.migrated` file
     again (a dead token is just refused): a revoked token leaves no trace in the vault, so a crash
     between a revocation and the rename would leave a vault nothing tells from another one, which
     is why the rename comes first.
  A keys file beside a vault whose root token it does not hold is refused (never renamed, never a
  reason to replace the vault): it is not that file's vault.

What waiting cannot fix is refused at once, with the exact way out:

- a keys file beside another vault (above); Shamir-sealed storage without its keys file, or with a
  keys file that does not open it;
- a server that answers but has no userpass login: its first start was stopped between
  initialising its storage and configuring itself (a vault without recovery keys, as only
  self-initialisation makes them here), or userpass was disabled by hand, or, with recovery keys,
  a vault the earlier blueprint made whose keys file went missing half-way through its upgrade;
  the message tells these apart, and says what a reset of OpenBao's own storage would lose;
- a server that exits with "self-initialization failed": interrupted after OpenBao marked its
  self-initialisation started, after which it refuses that storage for good
  (internal/vault/self_init.go). The server exits before anyone can ask it, so this shows only in
  its log, which a timed-out run reads (`kind get kubeconfig`, `kubectl logs`);
- a server that refuses a password in a file: the file is not the one the vault started with;
- a seal key file the static seal cannot take (wrong length or encoding): the server cannot start.

The passwords are secret inputs (the engine keeps the outputs of the same names secret too). The
provider keeps nothing on `self` and imports `requests` lazily: the engine's provider host imports
this module by reference (`pulumi-mechanics.md` section 1). No error carries a secret: OpenBao's
error texts never repeat a request's data, and a recovery key it returns is never read.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shlex
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, ResourceProvider, UpdateResult

from providers.kind_access import KindAccessError, admin_kubeconfig

PROVIDER_VERSION = "3"
"""Bump when the provider's behaviour changes: the provider is pickled by reference, so only an
input change makes the engine call `update` with the new code."""

INPUTS = (
    "address", "username", "password", "password_file", "admin_username", "admin_password_file", "requests", "request_secrets",
    "release_digest", "mount", "legacy_keys_file", "seal_key_file", "kind_cluster_name", "namespace", "pod", "statefulset",
    "postgres_namespace", "postgres_pod", "database", "table", "wait_seconds", "http_timeout", "provider_version",
)  # fmt: skip
SECRET_OUTPUTS = ["password", "request_secrets"]
EARLIER_SECRET_OUTPUTS = ("root_token", "unseal_keys")
"""What the earlier, Shamir-sealed design recorded as outputs: never kept."""
SELF_INIT_FAILED = "self-initialization failed"
"""What OpenBao logs when it refuses storage whose self-initialisation was interrupted (internal/vault/self_init.go)."""
MIGRATED = ".migrated"
"""The suffix the upgrade gives the earlier design's keys file once the vault no longer needs it."""
STATIC_KEY_BYTES = 32


class OpenBaoInitError(Exception):
    """OpenBao cannot be made usable without the user's decision; the message says which and how."""


class _NotYet(Exception):
    """OpenBao cannot answer yet (the message says why); the step is tried again."""


def context_of(props: dict[str, Any]) -> str:
    return f"kind-{props['kind_cluster_name']}"


def kubectl(props: dict[str, Any], namespace: str, *words: str) -> str:
    """A kubectl command for the user, quoted for a POSIX shell."""
    return shlex.join(["kubectl", "--context", context_of(props), "-n", namespace, *words])


def storage_reset(props: dict[str, Any], *then: str) -> str:
    """The commands that reset OpenBao's own storage, and nothing else: stop the server, empty its one
    table in its own database (as the database superuser, in the Postgres pod), start it again; then
    `then`, then the `up` that goes on.
    """
    statefulset, namespace = str(props["statefulset"]), str(props["namespace"])
    psql = ["psql", "-v", "ON_ERROR_STOP=1", "-d", str(props["database"]), "-c", f"TRUNCATE {props['table']}"]
    commands = [
        kubectl(props, namespace, "scale", f"statefulset/{statefulset}", "--replicas=0"),
        # A pod already gone counts as deleted (kubernetes/kubernetes#96702, kubectl 1.21).
        kubectl(props, namespace, "wait", "--for=delete", f"pod/{props['pod']}", "--timeout=120s"),
        kubectl(props, str(props["postgres_namespace"]), "exec", str(props["postgres_pod"]), "-c", "postgres", "--", *psql),
        kubectl(props, namespace, "scale", f"statefulset/{statefulset}", "--replicas=1"),
        *then,
        "uv run blueprint up",
    ]
    return "\n".join(f"  {command}" for command in commands)


def _storage(props: dict[str, Any]) -> str:
    return f"the table {props['table']} of the {props['database']} database; GitLab's data and everything else stay"


def _move_aside(props: dict[str, Any]) -> str:
    keys = str(props["legacy_keys_file"])
    return shlex.join(["mv", "-n", keys, f"{keys}.shamir"])


def _put_back(props: dict[str, Any]) -> str:
    """How to put the keys file back from a copy beside it, when there is one."""
    keys = Path(str(props["legacy_keys_file"]))
    copies = sorted(path for path in keys.parent.glob(f"{keys.name}.*") if path.is_file())
    return f" ({shlex.join(['mv', '-n', str(copies[0]), str(keys)])})" if copies else ""


def _reset_loses_nothing(props: dict[str, Any], unless: str = "") -> str:
    secrets = Path(str(props["seal_key_file"])).parent
    return (
        f"Resetting OpenBao's own storage ({_storage(props)}) loses nothing: nobody ever had a token for this vault (the "
        f"root token of a self-initialisation is never handed out, and the users were never made), so nothing was stored in "
        f"it; its seal key and passwords stay in {secrets}, the next start configures it from scratch with them, and the "
        f"`up` writes the platform's credentials into it again.{unless} Run:\n{storage_reset(props)}"
    )


def no_userpass_error(props: dict[str, Any], recovery_shares: int) -> OpenBaoInitError:
    """Initialised, no userpass login. Which vault this is shows in its recovery keys (sys/seal-status `n`):
    a self-initialisation makes none; the upgrade of an earlier blueprint's vault turns its Shamir keys into them.
    """
    said = f"OpenBao at {props['address']} is initialised but has no userpass login."
    if recovery_shares:
        keys = props["legacy_keys_file"]
        return OpenBaoInitError(
            f"{said} It has recovery keys, which a vault that configured itself never has: it is a vault an earlier "
            f"blueprint made with Shamir keys (OpenBao turned them into recovery keys when `up` moved the vault to the static "
            f"seal), and its keys file {keys} was taken away before `up` had configured it. It may hold data. Put that file "
            f"back{_put_back(props)} and run `uv run blueprint up`: it finishes the upgrade with the file's root token. Only "
            f"if that file is lost for good, start OpenBao over: resetting its own storage ({_storage(props)}) loses what the "
            f"vault holds (the credentials blueprint keeps there are written again by the next `up`; anything you stored "
            f"there yourself is gone). Run:\n{storage_reset(props)}"
        )
    unless = (
        " The one other way to a vault like this is userpass disabled by hand: every token it gave died with it, so then "
        "only a token made some other way and kept could still read what the vault holds; if you hold one, read out with "
        "it what you want to keep before the reset."
    )
    return OpenBaoInitError(
        f"{said} It has no recovery keys, as a vault that configured itself: its first start was stopped between "
        f"initialising its storage and configuring itself. {_reset_loses_nothing(props, unless)}"
    )


def self_init_failed_error(props: dict[str, Any]) -> OpenBaoInitError:
    return OpenBaoInitError(
        f'OpenBao refuses to start: its log says "{SELF_INIT_FAILED}" '
        f"({kubectl(props, str(props['namespace']), 'logs', str(props['pod']))}). Its first start was interrupted while it "
        f"configured itself, and OpenBao then refuses that storage for good; it never answered a request. "
        f"{_reset_loses_nothing(props)}"
    )


def legacy_keys_error(props: dict[str, Any]) -> OpenBaoInitError:
    """A keys file of the earlier design beside a vault that is not the file's."""
    keys = props["legacy_keys_file"]
    return OpenBaoInitError(
        f"{keys} holds the unseal keys and root token of an OpenBao that an earlier blueprint initialised with Shamir keys, "
        f"but the OpenBao at {props['address']} is not that vault: the root token is not valid there (this vault was "
        f"sealed with the static key in {props['seal_key_file']} from its start, or was upgraded already and the old root "
        f"token revoked). Those keys open nothing here, and `up` neither uses that file nor replaces this vault on its own. "
        f"If the old vault is what you want, restore its storage (the {props['database']} database) from a backup and run "
        f"`uv run blueprint up` again: it upgrades that vault. Otherwise move the file aside, then run again:\n"
        f"  {_move_aside(props)}\n  uv run blueprint up"
    )


def shamir_storage_error(props: dict[str, Any], why: str | None = None) -> OpenBaoInitError:
    """Shamir-sealed storage of an earlier blueprint, and no keys file that opens it (`why` says what the file did)."""
    keys = props["legacy_keys_file"]
    if why is None:
        what = f"and its keys file {keys} is not there. Put that file back{_put_back(props)}"
        then = ""
    else:
        what = f"and the unseal keys in {keys} do not open it ({why}): that file is another vault's. Put back the one of this vault"
        then = _move_aside(props)
    return OpenBaoInitError(
        f"OpenBao's storage is a vault an earlier blueprint initialised with Shamir keys (OpenBao waits in seal-migration "
        f"mode), {what} and run `uv run blueprint up`: it moves the vault to the static seal, its data kept. Only if that "
        f"file is lost for good, start OpenBao over: resetting its own storage ({_storage(props)}) loses what the vault "
        f"holds (the credentials blueprint keeps there are written again by the next `up`; anything you stored there "
        f"yourself is gone). Run:\n{storage_reset(props, *([then] if then else []))}"
    )


def wrong_password_error(props: dict[str, Any], user: str, password_file: str) -> OpenBaoInitError:
    if user == str(props["admin_username"]):
        fix = "Restore it from a backup of the data folder."
    else:
        set_it = (
            f"tr -d '\\n' < {shlex.quote(password_file)} | uv run bao write auth/userpass/users/{shlex.quote(user)}/password password=-"
        )
        fix = (
            f"Restore it from a backup of the data folder; or, logged in as admin (README: OpenBao), give the user that password: {set_it}"
        )
    return OpenBaoInitError(
        f"OpenBao at {props['address']} refuses user {user}'s password from {password_file}: that file is not the one this "
        f"vault was first started with. {fix}"
    )


def static_key_problem(value: str) -> str | None:
    """Why OpenBao's static seal cannot take `value` as its key, or None. It reads 64 bytes as hex, 44
    as base64, 43 as unpadded URL-safe base64 and 32 as the raw key, refuses any other length, and
    needs 32 bytes in the end for AES-256 (go-kms-wrapping wrappers/static/static.go `SetConfig`).
    """
    raw = value.encode()
    forms = {64: "64 hex digits", 44: "44 characters of base64", 43: "43 characters of unpadded URL-safe base64"}
    try:
        if len(raw) == 64:
            key = bytes.fromhex(value)
        elif len(raw) == 44:
            key = base64.b64decode(raw, validate=True)
        elif len(raw) == 43:
            if b"+" in raw or b"/" in raw:  # Python maps the alternative alphabet onto the standard one, Go does not
                raise ValueError("not URL-safe")
            key = base64.b64decode(raw + b"=", altchars=b"-_", validate=True)
        elif len(raw) == STATIC_KEY_BYTES:
            return None
        else:
            return (
                f"it is {len(raw)} bytes long; the static seal takes 32 bytes as the key itself, 64 hex digits, or 44 (43 "
                f"unpadded) characters of base64"
            )
    except ValueError:
        return f"it is {len(raw)} bytes long, so OpenBao reads it as {forms[len(raw)]}, and it is not that"
    if len(key) != STATIC_KEY_BYTES:
        return f"it is {forms[len(raw)]} of a {len(key)}-byte key, and the static seal needs a 32-byte one"
    return None


def check_seal_key_file(props: dict[str, Any]) -> None:
    """Refuse a seal key file the static seal cannot take: OpenBao would only exit, and `up` wait for it in vain."""
    path = Path(str(props["seal_key_file"]))
    try:
        value = path.read_text().strip()
    except FileNotFoundError:
        return  # nothing to tell: HostSecret writes it back before the server gets it
    except (OSError, UnicodeDecodeError) as error:
        raise OpenBaoInitError(f"OpenBao's seal key {path} cannot be read ({type(error).__name__})") from None
    if (why := static_key_problem(value)) is not None:
        raise OpenBaoInitError(
            f"OpenBao's seal key {path} is no key its static seal can take: {why}. OpenBao cannot start with it. Restore the "
            f"file from a backup of the data folder (the key OpenBao's storage is sealed with), then run `uv run blueprint up` again."
        )


def timeout_error(props: dict[str, Any], why: str, server_log: str) -> OpenBaoInitError:
    if SELF_INIT_FAILED in server_log:
        return self_init_failed_error(props)
    namespace = str(props["namespace"])
    hint = (
        f" It unseals itself with the static key in {props['seal_key_file']}: if it stays sealed, that file is not the key its "
        f"storage was sealed with (restore it from a backup of the data folder)."
        if why == "sealed"
        else ""
    )
    return OpenBaoInitError(
        f"OpenBao at {props['address']} was not ready within {float(props['wait_seconds']):.0f}s ({why}).{hint} Look at its pod "
        f"({kubectl(props, namespace, 'get', 'pods')}) and its log ({kubectl(props, namespace, 'logs', str(props['pod']))}), "
        f"then run `uv run blueprint up` again."
    )


def server_log(props: dict[str, Any]) -> str:
    """The OpenBao pod's recent log (this and the previous container), or "" when it cannot be had.
    The kubeconfig comes from `kind get kubeconfig` at the moment of use, like providers/gitlab_token.py.
    """
    try:
        with admin_kubeconfig(str(props["kind_cluster_name"])) as kubeconfig:
            logs = []
            for previous in ("--previous=true", "--previous=false"):
                command = ["kubectl", "--kubeconfig", kubeconfig, "-n", str(props["namespace"]), "logs", str(props["pod"])]
                done = subprocess.run([*command, previous, "--tail=200"], capture_output=True, text=True, timeout=60, check=False)
                logs.append(done.stdout if done.returncode == 0 else "")
            return "\n".join(logs)
    except (KindAccessError, OSError, subprocess.SubprocessError):
        return ""


def wait_for_rollout(props: dict[str, Any], deadline: float) -> None:
    """Until the StatefulSet runs its current pod template, Ready (which, by the chart's probe here,
    means "answers"); then the pod that answers is the one the release describes.
    """
    cluster, namespace, statefulset = str(props["kind_cluster_name"]), str(props["namespace"]), str(props["statefulset"])
    seconds = max(1, int(deadline - time.monotonic()))
    try:
        with admin_kubeconfig(cluster) as kubeconfig:
            command = ["kubectl", "--kubeconfig", kubeconfig, "-n", namespace, "rollout", "status", f"statefulset/{statefulset}"]
            done = subprocess.run([*command, f"--timeout={seconds}s"], capture_output=True, text=True, timeout=seconds + 60, check=False)
    except KindAccessError as error:
        raise OpenBaoInitError(f"cannot wait for OpenBao's pod: {error}. Is Docker running? (`uv run blueprint doctor`)") from None
    except FileNotFoundError as error:
        raise OpenBaoInitError(
            f"cannot wait for OpenBao's pod: {error.filename} is not on PATH (`uv run blueprint doctor --fix` installs it)"
        ) from None
    except subprocess.TimeoutExpired:
        raise timeout_error(props, "its StatefulSet did not roll out", server_log(props)) from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip()[-300:]
        raise timeout_error(props, f"its StatefulSet did not roll out: {said}", server_log(props))


def _request(props: dict[str, Any], method: str, path: str, token: str | None = None, body: dict[str, Any] | None = None) -> Any:
    """One request; an unreachable server or a lost answer is `_NotYet`."""
    import requests

    headers = {"X-Vault-Token": token} if token else {}
    try:
        return requests.request(method, f"{props['address']}/v1/{path}", headers=headers, json=body, timeout=float(props["http_timeout"]))
    except requests.RequestException as error:
        raise _NotYet(f"unreachable: {type(error).__name__}") from None


def _get(props: dict[str, Any], path: str, token: str | None = None) -> Any:
    return _request(props, "GET", path, token)


def _said(response: Any) -> str:
    """What OpenBao said (its `errors`), never the request's data."""
    try:
        errors = response.json().get("errors") or []
    except ValueError:
        errors = []
    return "; ".join(str(error) for error in errors)[:300] or f"HTTP {response.status_code}"


def _done(props: dict[str, Any], response: Any, what: str) -> dict[str, Any]:
    """The answer's JSON (or {}) when `what` succeeded; `_NotYet` for a 5xx or 429, an error for any other refusal."""
    if response.status_code in (200, 204):
        return dict(response.json()) if response.status_code == 200 and response.content else {}
    if response.status_code >= 500 or response.status_code == 429:
        raise _NotYet(f"{what} answered HTTP {response.status_code}")
    raise OpenBaoInitError(f"OpenBao at {props['address']} refused {what} (HTTP {response.status_code}: {_said(response)})")


def _login(props: dict[str, Any], user: str, password: str, password_file: str) -> str:
    """A token of `user`, or the error that says why there will be none."""
    response = _request(props, "POST", f"auth/userpass/login/{user}", body={"password": password})
    if response.status_code == 200:
        return str(response.json()["auth"]["client_token"])
    # An auth path nobody mounted is answered like any unknown path: 403 (verified against bao 2.7.2).
    if response.status_code == 403:
        raise no_userpass_error(props, int(_seal_status(props).get("n") or 0))
    if response.status_code == 400 and "invalid username or password" in response.text:
        raise wrong_password_error(props, user, password_file)
    raise _NotYet(f"the login answered HTTP {response.status_code}")


def _revoke(props: dict[str, Any], token: str) -> None:
    """Revoke a token (best effort: one the provider logged in for expires within its user's token_max_ttl anyway)."""
    import requests

    with contextlib.suppress(requests.RequestException):
        requests.post(
            f"{props['address']}/v1/auth/token/revoke-self", headers={"X-Vault-Token": token}, timeout=float(props["http_timeout"])
        )


def _seal_status(props: dict[str, Any]) -> dict[str, Any]:
    status = _get(props, "sys/seal-status")
    if status.status_code != 200:
        raise _NotYet(f"sys/seal-status answered HTTP {status.status_code}")
    return dict(status.json())


def _ready(props: dict[str, Any], seal: dict[str, Any]) -> None:
    """Initialised, unsealed and the active node, or `_NotYet`."""
    if not seal.get("initialized"):
        raise _NotYet("not initialised")
    if seal.get("sealed"):
        raise _NotYet("sealed")
    health = _get(props, "sys/health")
    if health.status_code != 200:
        raise _NotYet("unsealed, not active yet" if health.status_code in (429, 473) else f"sys/health answered {health.status_code}")


def _is_env(value: Any) -> bool:
    return isinstance(value, dict) and value.get("eval_source") == "env"


def _secret(props: dict[str, Any], reference: dict[str, Any]) -> str:
    """The value an `env` reference of the requests names (from the secret input `request_secrets`)."""
    secrets = props.get("request_secrets") or {}
    name = str(reference.get("env_var"))
    if not isinstance(secrets.get(name), str) or not secrets[name]:
        raise OpenBaoInitError(f"request_secrets has no value for {name}, which OpenBao's requests name")
    return str(secrets[name])


def _user_password(props: dict[str, Any], user: str) -> str:
    """User `user`'s password, as the requests give it."""
    for request in props["requests"]:
        if request["path"] == f"auth/userpass/users/{user}" and _is_env(request["data"].get("password")):
            return _secret(props, request["data"]["password"])
    raise OpenBaoInitError(f"OpenBao's requests make no userpass user {user} with a password")


def _mount_conflict(props: dict[str, Any], path: str, existing: dict[str, Any], wanted: dict[str, Any]) -> OpenBaoInitError:
    table, mount = path.split("/", 2)[1:]
    version = (existing.get("options") or {}).get("version") or ("1" if existing.get("type") == "kv" else None)  # KV's default
    have = f"{existing.get('type')}{f' version {version}' if version else ''}"
    need = f"{wanted.get('type')}{' version ' + str(wanted['options']['version']) if (wanted.get('options') or {}).get('version') else ''}"
    if existing.get("type") == wanted.get("type") == "kv":
        fix = f"upgrade it in place, its data kept: uv run bao kv enable-versioning {shlex.quote(mount + '/')}"
    else:
        move = ["uv", "run", "bao", "auth" if table == "auth" else "secrets", "move", f"{mount}/", f"{mount}-moved/"]
        fix = f"move it to another path first: {shlex.join(move)}"
    return OpenBaoInitError(
        f"OpenBao at {props['address']} has a {have} engine at {mount}/, where blueprint needs {need}. As admin (README: "
        f"OpenBao), or with the root token in {props['legacy_keys_file']} while that file is there, {fix}; then run "
        f"`uv run blueprint up` again."
    )


def _exists(props: dict[str, Any], path: str, token: str) -> bool:
    response = _get(props, path, token)
    if response.status_code == 404:
        return False
    _done(props, response, f"reading {path}")
    return True


def configure(props: dict[str, Any], token: str) -> None:
    """Apply `requests` with `token`, idempotently: what self-initialisation did on a vault's first start."""
    for request in props["requests"]:
        path, data = str(request["path"]), dict(request["data"])
        if path.startswith(("sys/mounts/", "sys/auth/")):
            table, mount = path.split("/", 2)[1:]
            listing = _done(props, _get(props, f"sys/{table}", token), f"reading sys/{table}")
            existing = (listing.get("data") or {}).get(f"{mount}/")
            if existing is None:
                _done(props, _request(props, "POST", path, token, data), f"enabling {path}")
            elif existing.get("type") != data.get("type") or any(
                (existing.get("options") or {}).get(key) != value for key, value in (data.get("options") or {}).items()
            ):
                raise _mount_conflict(props, path, existing, data)
            continue
        secret_fields = [key for key, value in data.items() if _is_env(value)]
        if secret_fields and _exists(props, path, token):
            data = {key: value for key, value in data.items() if key not in secret_fields}  # the vault keeps its own
        body = {key: _secret(props, value) if _is_env(value) else value for key, value in data.items()}
        _done(props, _request(props, "POST", path, token, body), f"writing {path}")


def legacy_keys(props: dict[str, Any]) -> dict[str, Any] | None:
    """The earlier design's keys file (unseal keys, root token), or None when it is not there."""
    path = Path(str(props["legacy_keys_file"]))
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
        keys, root_token = [str(key) for key in data["unseal_keys"]], str(data["root_token"])
    except (OSError, ValueError, KeyError, TypeError):
        keys, root_token = [], ""
    if not keys or not root_token:
        raise OpenBaoInitError(
            f"{path} is not the keys file an earlier blueprint wrote (JSON with unseal_keys and root_token): restore it from "
            f"a backup of the data folder; or, if it belongs to no vault, move it aside and run again:\n"
            f"  {_move_aside(props)}\n  uv run blueprint up"
        )
    return {"unseal_keys": keys, "root_token": root_token}


def _migrate(props: dict[str, Any], unseal_keys: list[str]) -> None:
    """Unseal Shamir-sealed storage with `migrate`: OpenBao moves it to the static seal, its data kept."""
    _done(props, _request(props, "PUT", "sys/unseal", body={"reset": True}), "forgetting a half-given set of unseal keys")
    for key in unseal_keys:
        response = _request(props, "PUT", "sys/unseal", body={"key": key, "migrate": True})
        if response.status_code == 400:
            raise shamir_storage_error(props, _said(response))
        if not _done(props, response, "an unseal key with migrate").get("sealed", True):
            return
    raise shamir_storage_error(props, f"all {len(unseal_keys)} of them given, it stays sealed")


def _token_valid(props: dict[str, Any], token: str) -> bool:
    response = _get(props, "auth/token/lookup-self", token)
    if response.status_code == 403:
        return False
    _done(props, response, "looking up the keys file's root token")
    return True


def _retire_recovery_keys(props: dict[str, Any], token: str, unseal_keys: list[str]) -> None:
    """Rotate the vault's recovery key (the old Shamir key since the move) to one nobody is shown;
    done already when the old keys are refused.
    """
    path = "sys/rotate/recovery"
    _done(props, _request(props, "DELETE", f"{path}/init", token), "cancelling a recovery key rotation a killed run left")
    started = _done(props, _request(props, "PUT", f"{path}/init", token, {"secret_shares": 1, "secret_threshold": 1}), "a rotation")
    nonce = str((started.get("data") or {}).get("nonce"))
    try:
        for key in unseal_keys:
            response = _request(props, "PUT", f"{path}/update", token, {"key": key, "nonce": nonce})
            if response.status_code == 400 and "recovery key verification failed" in response.text:
                return  # the file's keys are no longer the recovery key: rotated before
            # The answer holds the new recovery key once complete: it is not read, nor kept.
            if (_done(props, response, "a recovery key for the rotation").get("data") or {}).get("complete"):
                return
    finally:
        with contextlib.suppress(_NotYet):
            _request(props, "DELETE", f"{path}/init", token)
    raise OpenBaoInitError(
        f"OpenBao at {props['address']} asks for more recovery keys than the {len(unseal_keys)} in {props['legacy_keys_file']}"
    )


def _set_aside(props: dict[str, Any]) -> None:
    """Rename the keys file (never over another file), durably: the revocation that follows relies on it."""
    keys = Path(str(props["legacy_keys_file"]))
    target, number = keys.with_name(keys.name + MIGRATED), 1
    while target.exists():
        number += 1
        target = keys.with_name(f"{keys.name}{MIGRATED}.{number}")
    os.rename(keys, target)
    descriptor = os.open(keys.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _revoke_set_aside_root_tokens(props: dict[str, Any]) -> None:
    """Revoke the root token of every renamed keys file (a token revoked before is just refused)."""
    keys = Path(str(props["legacy_keys_file"]))
    for migrated in sorted(keys.parent.glob(f"{keys.name}{MIGRATED}*")):
        try:
            root_token = str(json.loads(migrated.read_text())["root_token"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        response = _request(props, "POST", "auth/token/revoke-self", root_token)
        if response.status_code != 403:
            _done(props, response, f"revoking the root token of {migrated}")


def _upgrade(props: dict[str, Any], seal: dict[str, Any], legacy: dict[str, Any]) -> None:
    """Steps 1-3 of the upgrade (module docstring), from wherever the last run stopped."""
    if seal.get("migration"):
        _migrate(props, legacy["unseal_keys"])
        raise _NotYet("moved to the static seal, not active yet")
    _ready(props, seal)
    root_token = legacy["root_token"]
    if not _token_valid(props, root_token):
        raise legacy_keys_error(props)
    configure(props, root_token)
    _retire_recovery_keys(props, root_token, legacy["unseal_keys"])
    _set_aside(props)


def check_writer(props: dict[str, Any]) -> None:
    """User `username` logs in and may use KV v2 at `mount`."""
    token = _login(props, str(props["username"]), str(props["password"]), str(props["password_file"]))
    try:
        mount = _get(props, f"sys/internal/ui/mounts/{props['mount']}", token)
        if mount.status_code >= 500:
            raise _NotYet(f"the mount check answered HTTP {mount.status_code}")
        data = (mount.json().get("data") or {}) if mount.status_code == 200 else {}
        if data.get("type") != "kv" or (data.get("options") or {}).get("version") != "2":
            raise OpenBaoInitError(
                f"OpenBao at {props['address']} has no KV v2 engine at {props['mount']}/ that user {props['username']} may use "
                f"(HTTP {mount.status_code}): it was changed after OpenBao configured itself. As admin (README: OpenBao), "
                f"enable it again: uv run bao secrets enable -path={shlex.quote(str(props['mount']))} kv-v2"
            )
    finally:
        _revoke(props, token)


def check_once(props: dict[str, Any]) -> None:
    """The checks alone, changing nothing; `_NotYet` when the server cannot answer yet."""
    seal = _seal_status(props)
    if seal.get("migration"):
        raise shamir_storage_error(props)
    _ready(props, seal)
    check_writer(props)


def converge_once(props: dict[str, Any]) -> None:
    """One pass over every step; `_NotYet` when the server cannot answer yet."""
    seal = _seal_status(props)
    legacy = legacy_keys(props)
    if legacy is not None:
        _upgrade(props, seal, legacy)
    elif seal.get("migration"):
        raise shamir_storage_error(props)
    else:
        _ready(props, seal)
    _revoke_set_aside_root_tokens(props)
    admin, admin_file = str(props["admin_username"]), str(props["admin_password_file"])
    token = _login(props, admin, _user_password(props, admin), admin_file)
    try:
        configure(props, token)
    finally:
        _revoke(props, token)
    check_writer(props)


def converge(props: dict[str, Any]) -> dict[str, Any]:
    """Wait until OpenBao is usable as configured, or fail saying why; return the outputs."""
    deadline = time.monotonic() + float(props["wait_seconds"])
    check_seal_key_file(props)
    wait_for_rollout(props, deadline)
    while True:
        try:
            converge_once(props)
            return {key: props.get(key) for key in INPUTS}
        except _NotYet as not_yet:
            if time.monotonic() >= deadline:
                raise timeout_error(props, str(not_yet), server_log(props)) from None
        time.sleep(0.2)


def usable(props: dict[str, Any]) -> bool | None:
    """Whether OpenBao passes the checks right now; None when it does not answer (nothing to report)."""
    if Path(str(props["legacy_keys_file"])).exists():
        return False  # an upgrade to finish, or a file to refuse: `update` does either
    try:
        check_once({**props, "http_timeout": min(float(props["http_timeout"]), 5.0)})
    except _NotYet as not_yet:
        return None if str(not_yet).startswith("unreachable") else False
    except OpenBaoInitError:
        return False
    return True


DEFAULTS = {"wait_seconds": 300.0, "http_timeout": 10.0}


class OpenBaoInitProvider(ResourceProvider):
    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        news = {**DEFAULTS, **{key: value for key, value in news.items() if value is not None}}
        failures = []
        for key in ("legacy_keys_file", "seal_key_file", "password_file", "admin_password_file"):
            if not Path(str(news.get(key))).is_absolute():
                failures.append(CheckFailure(key, f"expected an absolute path, got {news.get(key)!r}"))
        for key in ("wait_seconds", "http_timeout"):
            if not isinstance(news.get(key), int | float) or float(news[key]) <= 0:
                failures.append(CheckFailure(key, f"expected a number of seconds above 0, got {news.get(key)!r}"))
        requests = news.get("requests")
        if not isinstance(requests, list) or not all(
            isinstance(request, dict) and isinstance(request.get("path"), str) and isinstance(request.get("data"), dict)
            for request in requests
        ):
            failures.append(CheckFailure("requests", "expected a list of {path, data} requests (components/openbao.py init_requests)"))
        return CheckResult(news, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [key for key in INPUTS if olds.get(key) != news.get(key)]
        if not changed and isinstance(news.get("address"), str) and usable({**DEFAULTS, **news}) is False:
            changed = ["usable"]  # not an input: the server answers but is not as configured; `update` says why
        return DiffResult(changes=bool(changed), replaces=[], delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=str(props["address"]), outs=converge({**DEFAULTS, **props}))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=converge({**DEFAULTS, **news}))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """On refresh: nothing to read back, the vault's state lives in the vault (`diff` checks it);
        but the root token and unseal keys an earlier version recorded leave the state.
        """
        return ReadResult(id_, {key: value for key, value in props.items() if key not in EARLIER_SECRET_OUTPUTS})

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing to undo: the vault's storage, its seal key and passwords live with the platform's
        data, which `preserveData` keeps or wipes.
        """


@dataclass(frozen=True, kw_only=True)
class OpenBaoInitArgs:
    address: pulumi.Input[str]
    """OpenBao's API as the host reaches it, e.g. http://127.0.0.1:8200."""
    username: str
    """The userpass user that writes the platform's credentials."""
    password: pulumi.Input[str]
    """Its password (secret)."""
    password_file: str
    """Host path of that password, for the messages."""
    admin_username: str
    """The userpass user with the `admin` policy, as whom `requests` are applied."""
    admin_password_file: str
    """Host path of its password, for the messages."""
    requests: list[dict[str, Any]]
    """What self-initialisation does, in order ({path, data}; passwords as `env` references): applied
    to a vault that exists already, and to one the earlier design made."""
    request_secrets: pulumi.Input[dict[str, pulumi.Input[str]]]
    """The values of the `env` references in `requests` (secret)."""
    release_digest: str
    """Changes whenever the release may roll the pod: then this is an update, which waits for the rollout."""
    mount: str
    """Where KV v2 must be."""
    legacy_keys_file: str
    """Host path where the earlier design kept Shamir keys and a root token: upgraded from, then renamed."""
    seal_key_file: str
    """Host path of the static seal key, checked before the wait and named in the messages."""
    kind_cluster_name: pulumi.Input[str]
    namespace: str
    pod: str
    statefulset: str
    """Where the server runs: the rollout to wait for, the log a timed-out run reads, and the reset commands."""
    postgres_namespace: str
    postgres_pod: str
    database: str
    table: str
    """Where OpenBao's storage is: its one table, the only thing a reset empties."""
    wait_seconds: float = 300
    """How long every step is tried again."""
    http_timeout: float = 10
    """How long one request waits for its answer."""


class OpenBaoInit(pulumi.dynamic.Resource, module="openbao", name="Init"):
    """OpenBao rolled out, unsealed, active, configured as blueprint's requests say (an earlier
    Shamir-sealed vault upgraded first); user `blueprint` logs in; KV v2 at `secret/`.
    """

    def __init__(self, name: str, args: OpenBaoInitArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        props: dict[str, Any] = {
            "address": args.address,
            "username": args.username,
            "password": pulumi.Output.secret(args.password),
            "password_file": args.password_file,
            "admin_username": args.admin_username,
            "admin_password_file": args.admin_password_file,
            "requests": args.requests,
            "request_secrets": pulumi.Output.secret(args.request_secrets),
            "release_digest": args.release_digest,
            "mount": args.mount,
            "legacy_keys_file": args.legacy_keys_file,
            "seal_key_file": args.seal_key_file,
            "kind_cluster_name": args.kind_cluster_name,
            "namespace": args.namespace,
            "pod": args.pod,
            "statefulset": args.statefulset,
            "postgres_namespace": args.postgres_namespace,
            "postgres_pod": args.postgres_pod,
            "database": args.database,
            "table": args.table,
            "wait_seconds": args.wait_seconds,
            "http_timeout": args.http_timeout,
            "provider_version": PROVIDER_VERSION,
        }
        secret = pulumi.ResourceOptions(additional_secret_outputs=SECRET_OUTPUTS)
        super().__init__(OpenBaoInitProvider(), name, props, pulumi.ResourceOptions.merge(opts, secret))
