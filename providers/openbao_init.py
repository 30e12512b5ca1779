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
  old pod would otherwise answer for the new one. That wait has a budget of its own,
  `rollout_seconds` (the first pull of OpenBao's image can take minutes on a laptop); the
  `wait_seconds` of the steps after it start when it ends. A rollout that times out behind a pod of
  the earlier revision that is not Ready is named, with the `kubectl delete pod` that lets it go on:
  under the chart's `podManagementPolicy: OrderedReady` the StatefulSet controller replaces no pod
  that is not Ready (kubernetes/kubernetes#67250; pkg/controller/statefulset/stateful_set_control.go
  `processReplica` returns early for it when `monotonic`). The provider never deletes it itself.
- **The same requests as self-initialisation.** `requests` is the list the server's `initialize`
  stanzas are made from. `converge` applies it as user `admin` on every create and update, so a
  vault initialised before a request changed gets the change too: mounts are enabled when missing
  (a mount of another type or version there is refused), policies and users written. A password is
  written only when its user is new: the vault keeps the one it has, and a user that exists but
  does not log in with its file's password is refused before anything is written, so no account
  gets blueprint's policies under a password blueprint does not hold. These runs are what applies
  the requests; a change made by hand later is not undone unless one of them runs (`diff`).

What waiting cannot fix is refused at once, with the exact way out:

- a server that answers but has no userpass login: its first start was stopped between
  initialising its storage and configuring itself, or userpass was disabled by hand (a vault
  without recovery keys, as self-initialisation makes none); or, with recovery keys, storage
  initialised some other way, which may hold data. The message tells these apart, and says what a
  reset of OpenBao's own storage would lose;
- a server that exits with "self-initialization failed": interrupted after OpenBao marked its
  self-initialisation started, after which it refuses that storage for good
  (internal/vault/self_init.go). The server exits before anyone can ask it, so this shows only in
  its log, which a timed-out run reads (`kind get kubeconfig`, `kubectl logs`);
- a server that refuses a password in a file: the file is not the one the vault started with. For
  `admin`'s file lost for good, the message says what is still readable (KV v2, as `blueprint`)
  before the reset of OpenBao's own storage, and what that reset loses;
- a seal key file the static seal cannot take (wrong length or encoding): the server cannot start.

The passwords are secret inputs (the engine keeps the outputs of the same names secret too). The
provider keeps nothing on `self` and imports `requests` lazily: the engine's provider host imports
this module by reference (Pulumi's dynamic providers: the resource pickles its provider with dill).
No error carries a secret: OpenBao's error texts never repeat a request's data.
"""

from __future__ import annotations

import base64
import contextlib
import json
import shlex
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, ResourceProvider, UpdateResult

from providers.kind_access import KindAccessError, admin_kubeconfig

PROVIDER_VERSION = "4"
"""Bump when the provider's behaviour changes: the provider is pickled by reference, so only an
input change makes the engine call `update` with the new code."""

INPUTS = (
    "address", "username", "password", "password_file", "admin_username", "admin_password_file", "requests", "request_secrets",
    "release_digest", "mount", "seal_key_file", "kind_cluster_name", "namespace", "pod", "statefulset",
    "postgres_namespace", "postgres_pod", "database", "table", "rollout_seconds", "wait_seconds", "http_timeout",
    "provider_version",
)  # fmt: skip
SECRET_OUTPUTS = ["password", "request_secrets"]
SELF_INIT_FAILED = "self-initialization failed"
"""What OpenBao logs when it refuses storage whose self-initialisation was interrupted (internal/vault/self_init.go)."""
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
    a self-initialisation makes none, so storage that has some was initialised another way and may hold data.
    """
    said = f"OpenBao at {props['address']} is initialised but has no userpass login."
    if recovery_shares:
        return OpenBaoInitError(
            f"{said} It has recovery keys, which a vault that configured itself never has: its storage was initialised some "
            f"other way, and it may hold data. Read out what you want to keep with a token of that vault, if you hold one; "
            f"then start OpenBao over: resetting its own storage ({_storage(props)}) loses what the vault holds (the "
            f"credentials blueprint keeps there are written again by the next `up`). Run:\n{storage_reset(props)}"
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


def _admin_password_lost(props: dict[str, Any]) -> str:
    """The way out when the admin's password is lost for good: read out KV v2 as the writer, then reset."""
    writer, writer_file, mount = str(props["username"]), str(props["password_file"]), str(props["mount"])
    login = ["uv", "run", "bao", "login", "-token-only", "-no-store", "-method=userpass", f"username={writer}", "password=-"]
    secrets = Path(str(props["seal_key_file"])).parent
    return (
        f"If no backup has it (nor Pulumi's state, which puts a missing file back), nobody can administer this vault any "
        f"more: no root token exists for it, nobody holds a recovery key, and only user {props['admin_username']} could make either. What "
        f"can still be read is the KV v2 engine at {mount}/, as user {writer} (password in {writer_file}; if that file is not "
        f"this vault's either, nothing can be read), one path at a time: its policy reads {mount}/data/* but cannot list. Read "
        f"out what you stored there yourself, PATH for each path (the platform's own credentials are written again by the "
        f"next `up`):\n"
        f"  export BAO_ADDR={shlex.quote(str(props['address']))}\n"
        f"  export BAO_TOKEN=\"$(tr -d '\\n' < {shlex.quote(writer_file)} | {shlex.join(login)})\"\n"
        f"  uv run bao kv get {shlex.quote(mount)}/PATH\n"
        f"Then start OpenBao over. Resetting its own storage ({_storage(props)}) loses everything the vault holds: what you "
        f"did not read out of {mount}/ and every earlier version there, and every other engine, policy, user and token made "
        f"in it. Its seal key and the passwords in {secrets} stay: the next start configures the vault from scratch with them, "
        f"and the `up` writes the platform's credentials into it again. Run:\n{storage_reset(props)}"
    )


def wrong_password_error(props: dict[str, Any], user: str, password_file: str) -> OpenBaoInitError:
    if user == str(props["admin_username"]):
        fix = f"Restore it from a backup of the data folder, then run `uv run blueprint up` again. {_admin_password_lost(props)}"
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


def timeout_error(props: dict[str, Any], why: str, server_log: str, seconds: float, stuck: str = "") -> OpenBaoInitError:
    """Not ready within `seconds`; `stuck` says why the rollout cannot go on by itself, when it cannot."""
    if SELF_INIT_FAILED in server_log:
        return self_init_failed_error(props)
    namespace = str(props["namespace"])
    hint = (
        f" It unseals itself with the static key in {props['seal_key_file']}: if it stays sealed, that file is not the key its "
        f"storage was sealed with (restore it from a backup of the data folder)."
        if why == "sealed"
        else ""
    )
    look = (
        f" Look at its pod ({kubectl(props, namespace, 'get', 'pods')}) and its log "
        f"({kubectl(props, namespace, 'logs', str(props['pod']))}), then run `uv run blueprint up` again."
    )
    return OpenBaoInitError(f"OpenBao at {props['address']} was not ready within {seconds:.0f}s ({why}).{hint}{stuck or look}")


def stuck_pod(props: dict[str, Any]) -> str:
    """Why the rollout cannot go on by itself, with the command that lets it, or "" (nothing known).

    It cannot when the pod runs an earlier revision of the StatefulSet than its `updateRevision`, is
    not Ready, and the StatefulSet's pod management policy is OrderedReady (the chart's default):
    the controller then waits for that pod to become Ready before it replaces it, which a pod that
    crashes never does (kubernetes/kubernetes#67250; pkg/controller/statefulset/stateful_set_control.go
    `processReplica`, `!isRunningAndReady(...) && monotonic`). Deleting the pod is safe here: the
    StatefulSet makes it again, from the new revision, over the same storage.
    """
    namespace, pod, statefulset = str(props["namespace"]), str(props["pod"]), str(props["statefulset"])
    try:
        with admin_kubeconfig(str(props["kind_cluster_name"])) as kubeconfig:
            objects = []
            for name in (f"statefulset/{statefulset}", f"pod/{pod}"):
                command = ["kubectl", "--kubeconfig", kubeconfig, "-n", namespace, "get", name, "-o", "json"]
                done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
                objects.append(json.loads(done.stdout) if done.returncode == 0 else {})
    except (KindAccessError, OSError, subprocess.SubprocessError, ValueError):
        return ""
    sts, running = objects
    if not isinstance(sts, dict) or not isinstance(running, dict):
        return ""
    update = (sts.get("status") or {}).get("updateRevision")
    revision = ((running.get("metadata") or {}).get("labels") or {}).get("controller-revision-hash")
    policy = (sts.get("spec") or {}).get("podManagementPolicy") or "OrderedReady"  # the API's default
    conditions = (running.get("status") or {}).get("conditions") or []
    ready = any(isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    if not update or not revision or revision == update or ready or policy != "OrderedReady":
        return ""
    return (
        f" Its pod {pod} still runs the StatefulSet's earlier revision ({revision}, not {update}) and is not Ready: with the "
        f"pod management policy OrderedReady the StatefulSet replaces no pod until it is Ready, so the new revision never "
        f"starts (kubernetes/kubernetes#67250). Delete that pod; the StatefulSet makes it again from the new revision, over "
        f"the same storage (its log, should the new one not start either: {kubectl(props, namespace, 'logs', pod)}):\n"
        f"  {kubectl(props, namespace, 'delete', 'pod', pod)}\n  uv run blueprint up"
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


def wait_for_rollout(props: dict[str, Any]) -> None:
    """Until the StatefulSet runs its current pod template, Ready (which, by the chart's probe here,
    means "answers"); then the pod that answers is the one the release describes. Within
    `rollout_seconds`, a budget of its own: the first pull of the image may take most of it.
    """
    cluster, namespace, statefulset = str(props["kind_cluster_name"]), str(props["namespace"]), str(props["statefulset"])
    seconds = max(1, int(float(props["rollout_seconds"])))
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
        raise timeout_error(props, "its StatefulSet did not roll out", server_log(props), seconds, stuck_pod(props)) from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip()[-300:]
        raise timeout_error(props, f"its StatefulSet did not roll out: {said}", server_log(props), seconds, stuck_pod(props))


def _request(props: dict[str, Any], method: str, path: str, token: str | None = None, body: dict[str, Any] | None = None) -> Any:
    """One request; an unreachable server or a lost answer is `_NotYet`."""
    import requests

    headers = {"X-Vault-Token": token} if token else {}
    try:
        with requests.Session() as session:
            session.trust_env = False  # no proxy from the environment: it would see the passwords and tokens sent here
            return session.request(
                method,
                f"{props['address']}/v1/{path}",
                headers=headers,
                json=body,
                timeout=float(props["http_timeout"]),
                allow_redirects=False,
            )
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


def _password_file(props: dict[str, Any], user: str) -> str:
    """The file of user `user`'s password."""
    files = {str(props["admin_username"]): props["admin_password_file"], str(props["username"]): props["password_file"]}
    return str(files.get(user, "its password file"))


def _logs_in(props: dict[str, Any], user: str) -> bool:
    """Whether user `user` logs in with the password the requests give it (the token is revoked at
    once). A 5xx or 429 is `_NotYet`.
    """
    response = _request(props, "POST", f"auth/userpass/login/{user}", body={"password": _user_password(props, user)})
    if response.status_code == 200:
        _revoke(props, str(response.json()["auth"]["client_token"]))
        return True
    if response.status_code >= 500 or response.status_code == 429:
        raise _NotYet(f"a login as {user} answered HTTP {response.status_code}")
    return False


def _refusing_user(props: dict[str, Any], token: str) -> str | None:
    """The first user the requests make that exists already and does not log in with its file's
    password: blueprint must not give it its policies.
    """
    for request in props["requests"]:
        path = str(request["path"])
        # A user that does not exist, or a userpass not mounted, reads as 404 (verified against bao 2.7.2).
        if path.startswith("auth/userpass/users/") and _is_env(request["data"].get("password")) and _exists(props, path, token):
            user = path.rsplit("/", 1)[1]
            if not _logs_in(props, user):
                return user
    return None


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
        f"OpenBao), {fix}; then run `uv run blueprint up` again."
    )


def _exists(props: dict[str, Any], path: str, token: str) -> bool:
    response = _get(props, path, token)
    if response.status_code == 404:
        return False
    _done(props, response, f"reading {path}")
    return True


def configure(props: dict[str, Any], token: str) -> None:
    """Apply `requests` with `token`, idempotently: what self-initialisation did on a vault's first start.
    A user that exists and refuses its file's password is refused before anything is written: its
    policies stay as they are.
    """
    if (user := _refusing_user(props, token)) is not None:
        raise wrong_password_error(props, user, _password_file(props, user))
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
    _ready(props, _seal_status(props))
    check_writer(props)


def converge_once(props: dict[str, Any]) -> None:
    """One pass over every step; `_NotYet` when the server cannot answer yet."""
    _ready(props, _seal_status(props))
    admin, admin_file = str(props["admin_username"]), str(props["admin_password_file"])
    token = _login(props, admin, _user_password(props, admin), admin_file)
    try:
        configure(props, token)
    finally:
        _revoke(props, token)
    check_writer(props)


def converge(props: dict[str, Any]) -> dict[str, Any]:
    """Wait until OpenBao is usable as configured, or fail saying why; return the outputs."""
    check_seal_key_file(props)
    wait_for_rollout(props)
    deadline = time.monotonic() + float(props["wait_seconds"])  # from the end of the rollout: its own budget
    while True:
        try:
            converge_once(props)
            return {key: props.get(key) for key in INPUTS}
        except _NotYet as not_yet:
            if time.monotonic() >= deadline:
                raise timeout_error(props, str(not_yet), server_log(props), float(props["wait_seconds"])) from None
        time.sleep(0.2)


def usable(props: dict[str, Any]) -> bool | None:
    """Whether OpenBao passes the checks right now; None when it does not answer (nothing to report)."""
    try:
        check_once({**props, "http_timeout": min(float(props["http_timeout"]), 5.0)})
    except _NotYet as not_yet:
        return None if str(not_yet).startswith("unreachable") else False
    except OpenBaoInitError:
        return False
    return True


DEFAULTS = {"rollout_seconds": 600.0, "wait_seconds": 300.0, "http_timeout": 10.0}


class OpenBaoInitProvider(ResourceProvider):
    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        news = {**DEFAULTS, **{key: value for key, value in news.items() if value is not None}}
        failures = []
        for key in ("seal_key_file", "password_file", "admin_password_file"):
            if not Path(str(news.get(key))).is_absolute():
                failures.append(CheckFailure(key, f"expected an absolute path, got {news.get(key)!r}"))
        for key in ("rollout_seconds", "wait_seconds", "http_timeout"):
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
        """On refresh: nothing to read back, the vault's state lives in the vault (`diff` checks it)."""
        return ReadResult(id_, props)

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
    to a vault that exists already too."""
    request_secrets: pulumi.Input[dict[str, pulumi.Input[str]]]
    """The values of the `env` references in `requests` (secret)."""
    release_digest: str
    """Changes whenever the release may roll the pod: then this is an update, which waits for the rollout."""
    mount: str
    """Where KV v2 must be."""
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
    rollout_seconds: float = 600
    """How long the StatefulSet may take to roll out: the first pull of OpenBao's image can take minutes on a laptop."""
    wait_seconds: float = 300
    """How long every step after the rollout is tried again."""
    http_timeout: float = 10
    """How long one request waits for its answer."""


class OpenBaoInit(pulumi.dynamic.Resource, module="openbao", name="Init"):
    """OpenBao rolled out, unsealed, active, configured as blueprint's requests say; user `blueprint`
    logs in; KV v2 at `secret/`.
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
            "seal_key_file": args.seal_key_file,
            "kind_cluster_name": args.kind_cluster_name,
            "namespace": args.namespace,
            "pod": args.pod,
            "statefulset": args.statefulset,
            "postgres_namespace": args.postgres_namespace,
            "postgres_pod": args.postgres_pod,
            "database": args.database,
            "table": args.table,
            "rollout_seconds": args.rollout_seconds,
            "wait_seconds": args.wait_seconds,
            "http_timeout": args.http_timeout,
            "provider_version": PROVIDER_VERSION,
        }
        secret = pulumi.ResourceOptions(additional_secret_outputs=SECRET_OUTPUTS)
        super().__init__(OpenBaoInitProvider(), name, props, pulumi.ResourceOptions.merge(opts, secret))
