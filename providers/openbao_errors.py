"""What `OpenBaoInit` says when waiting cannot make OpenBao usable: each refusal with its exact way out.

A server that answers but has no userpass login (its first start stopped between initialising its
storage and configuring itself, unless someone changed it by hand); one that exits with "self-initialization failed", after which
OpenBao refuses that storage for good (vault/self_init.go); a password file the vault was
not started with; a mount of another engine where blueprint needs its own; a server not ready
within the budget. Each message says what a reset of OpenBao's own storage (one table of its
database, `storage_reset`) would lose, and never carries a secret: OpenBao's error texts never
repeat a request's data.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from providers.cluster_access import CONTEXT_KEY

UNKNOWN_KEY_ID = r"unknown key id for data: `([^`]*)`"
"""What OpenBao logs when the static seal's `current_key_id` is not the one its storage was sealed under
(go-kms-wrapping wrappers/static/static.go `Decrypt`), whatever the key: the key file is not at fault."""
SELF_INIT_FAILED = "self-initialization failed"
"""What OpenBao logs when it refuses storage whose self-initialisation was interrupted (vault/self_init.go)."""


class OpenBaoInitError(Exception):
    """OpenBao cannot be made usable without the user's decision; the message says which and how."""


def bao_env(props: Mapping[str, Any]) -> str:
    """The `bao` CLI's variables for OpenBao at `props["address"]`: over TLS, the platform CA's file
    and the name OpenBao's certificate is for (it is reached at 127.0.0.1), so that the CLI, too,
    sends a password only to our OpenBao.
    """
    named = {"BAO_ADDR": props.get("address"), "BAO_CACERT": props.get("ca_file"), "BAO_TLS_SERVER_NAME": props.get("server_name")}
    return " ".join(f"{key}={shlex.quote(str(value))}" for key, value in named.items() if value)


def context_of(props: dict[str, Any]) -> str:
    """The kubectl context of the cluster: an existing cluster's own, or kind's `kind-<name>`."""
    return str(props.get(CONTEXT_KEY) or f"kind-{props['kind_cluster_name']}")


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


CONFIGURED_BEFORE = "configured_before"
"""Set (not an input) when `OpenBaoInit` updates: blueprint configured this vault before, userpass included."""


def no_userpass_error(props: dict[str, Any]) -> OpenBaoInitError:
    """Initialised, no userpass login. After blueprint configured this vault (an update), someone
    disabled userpass by hand, which deleted its users and revoked their tokens, the vault's data
    kept: the way out is to enable it again with a token made some other way, not a reset. On a first
    configuration, a first start stopped between initialising its storage and configuring itself
    (before OpenBao marks its self-initialisation as begun: vault/self_init.go `MarkSelfInitStarted`).
    """
    address, admin, admin_file = props["address"], str(props["admin_username"]), str(props["admin_password_file"])
    made = [request["data"] for request in props.get("requests") or [] if request.get("path") == f"auth/userpass/users/{admin}"]
    policies = ",".join(made[0].get("token_policies") or []) if made else "admin"
    enable = (
        f"  export {bao_env(props)} BAO_TOKEN=YOUR-TOKEN\n"
        f"  uv run bao auth enable userpass\n"
        f"  tr -d '\\n' < {shlex.quote(admin_file)} | uv run bao write auth/userpass/users/{shlex.quote(admin)} password=- "
        f"token_policies={shlex.quote(policies)}\n"
        f"  uv run blueprint up"
    )
    if props.get(CONFIGURED_BEFORE):
        return OpenBaoInitError(
            f"OpenBao at {address} has no userpass login any more, though blueprint configured it with one: someone disabled "
            f"it (`bao auth disable userpass`), which deleted users {props['username']} and {admin} and revoked their tokens; "
            f"what the vault holds is still there, so do not reset it. With a token that can still administer it (one made "
            f"without userpass: another auth method's, or an orphan token with sudo), enable userpass again and make user "
            f"{admin} with its password file; the `up` makes user {props['username']} again:\n{enable}\nWithout such a "
            f"token nobody can administer or read this vault any more (no root token or recovery key was ever handed out): "
            f"then reset its own storage ({_storage(props)}), which loses what you stored in it yourself; the `up` writes "
            f"the platform's credentials into it again:\n{storage_reset(props)}"
        )
    unless = (
        " If instead someone disabled userpass by hand, do not reset: the vault's data is still there. With a token made "
        "without userpass, enable it again (`uv run bao auth enable userpass`), make user admin again with its password "
        "file, and run `uv run blueprint up`."
    )
    return OpenBaoInitError(
        f"OpenBao at {address} is initialised but has no userpass login: its first start was stopped between "
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
        f"  export {bao_env(props)}\n"
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
            "Restore it from a backup of the data folder; or, logged in as admin (docs/guide/access.md, 'OpenBao'), "
            f"give the user that password: {set_it}"
        )
    return OpenBaoInitError(
        f"OpenBao at {props['address']} refuses user {user}'s password from {password_file}: that file is not the one this "
        f"vault was first started with. {fix}"
    )


def mount_conflict(props: dict[str, Any], path: str, existing: dict[str, Any], wanted: dict[str, Any]) -> OpenBaoInitError:
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
        f"OpenBao at {props['address']} has a {have} engine at {mount}/, where blueprint needs {need}. As admin (docs/guide/access.md, "
        f"'OpenBao'), {fix}; then run `uv run blueprint up` again."
    )


def timeout_error(props: dict[str, Any], why: str, server_log: str, seconds: float, stuck: str = "") -> OpenBaoInitError:
    """Not ready within `seconds`; `stuck` says why the rollout cannot go on by itself, when it cannot."""
    if SELF_INIT_FAILED in server_log:
        return self_init_failed_error(props)
    namespace = str(props["namespace"])
    hint = ""
    if why == "sealed" and (named := re.search(UNKNOWN_KEY_ID, server_log)) is not None:
        hint = (
            f" It stays sealed because its storage was sealed under the static seal's key id `{named[1]}`, and its config "
            f'names another (its log: "unknown key id for data: `{named[1]}`"): the key in {props["seal_key_file"]} is not '
            f'at fault, keep it. Give the seal its key id back, current_key_id = "{named[1]}" (SEAL_KEY_ID in '
            f"components/openbao.py, which the `up` deploys; in a config edited by hand: "
            f"{kubectl(props, namespace, 'edit', 'configmap', str(props['statefulset']) + '-config')}, then "
            f"{kubectl(props, namespace, 'delete', 'pod', str(props['pod']))}), then run `uv run blueprint up`."
        )
    elif why == "sealed":
        hint = (
            f" It unseals itself with the static key in {props['seal_key_file']}: if it stays sealed, that file is not the key "
            f"its storage was sealed with (restore it from a backup of the data folder)."
        )
    look = (
        f" Look at its pod ({kubectl(props, namespace, 'get', 'pods')}) and its log "
        f"({kubectl(props, namespace, 'logs', str(props['pod']))}), then run `uv run blueprint up` again."
    )
    return OpenBaoInitError(f"OpenBao at {props['address']} was not ready within {seconds:.0f}s ({why}).{hint}{stuck or look}")
