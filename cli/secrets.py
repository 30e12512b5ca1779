"""`blueprint secrets`: every credential the platform generates, and, with `--show NAME`, one's value
(`run`, the whole verb).

The list is the catalogue (credentials.py) and needs nothing running: each credential's name, what
it is, and where it is (its OpenBao path and key, or, for the three that open OpenBao itself, its
host file). It never prints a value.

`--show NAME` prints that value alone, for pipes (a trailing newline only on a terminal). It reads
from OpenBao at the address the stack's outputs give, logged in as `blueprint` with the password
from its file, through the KV provider's own client (providers/openbao_kv.py); the three not in
OpenBao are read from their files. Each expected failure (unknown name, stack not up, a file that
cannot be read, OpenBao unreachable or refusing, a value not written yet) is one message with its
fix, and a non-zero exit.
"""

from __future__ import annotations

import difflib
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import credentials
from credentials import Credential
from stacks import outputs
from stacks.config.schema import ENV_STEP

if TYPE_CHECKING:
    from cli.stack_runner import StackRunner

SHOW_WAIT_SECONDS = 5.0
"""How long `--show` waits for OpenBao to be able to answer (a pod restarting unseals itself in that time)."""


class SecretsError(Exception):
    """An expected condition that stops `blueprint secrets`; the message names it and its fix."""


def catalogue() -> tuple[tuple[Credential, ...], str | None]:
    """The catalogue for the apps manifest as it is now, and what keeps the manifest from being read
    (then only the platform's credentials, without the apps' deploy tokens).
    """
    from apps_manifest import ManifestError, load_manifest

    try:
        building = [project.name for project in load_manifest(files=False) if project.build]
    except ManifestError as error:
        return credentials.PLATFORM, f"the apps' deploy tokens are not listed: {error}"
    return credentials.catalogue(building), None


def listing(stack: str) -> str:
    """Every credential: name, where it is, what it is. No value."""
    entries, manifest_problem = catalogue()
    width = max(len(entry.name) for entry in entries)
    where = max(len(entry.location) for entry in entries)
    lines = [f"{'NAME':<{width}}  {'WHERE':<{where}}  WHAT"]
    for entry in entries:
        made = f" (made by {entry.stack})" if stack != "dev" else ""
        lines.append(f"{entry.name:<{width}}  {entry.location:<{where}}  {entry.what}{made}")
    from stacks.config.schema import stack_config

    owner = "dev" if stack == "dev" else "phase1"  # the phase stacks' files are in phase1's data folder
    folder = stack_config(owner)[0]["blueprint:dataDir"]
    lines += [
        "",
        f"secret/... is OpenBao's KV v2 engine; {credentials.SECRETS_SUBDIR}/... is under the data folder "
        f"({owner}'s blueprint:dataDir, {folder}), files only you can read.",
        *(f"not in OpenBao: {entry.name}, because {entry.not_in_openbao}" for entry in entries if entry.not_in_openbao),
        *([manifest_problem] if manifest_problem else []),
        f"Show one: uv run blueprint secrets{'' if stack == 'phase2' else ' --stack ' + shlex.quote(stack)} --show NAME",
    ]
    return "\n".join(lines) + "\n"


def _entry(name: str) -> Credential:
    by_name = {entry.name: entry for entry in catalogue()[0]}
    entry = by_name.get(name)
    if entry is None:
        near = difflib.get_close_matches(name, by_name, n=1)
        hint = f" (did you mean {near[0]}?)" if near else ""
        raise SecretsError(f"there is no credential named {name!r}{hint}: `uv run blueprint secrets` lists them all")
    return entry


def not_shown(name: str) -> str | None:
    """Why `--show name` shows nothing, whatever the stacks hold (no such credential; kind's own), or None."""
    try:
        _kinds_or_entry(name)
    except SecretsError as error:
        return str(error)
    return None


def _kinds_or_entry(name: str) -> Credential:
    entry = _entry(name)
    if entry.path is None and entry.file is None:
        raise SecretsError(f"{entry.name} is kind's, not blueprint's: `{credentials.KIND_KUBECONFIG_COMMAND}` prints it")
    return entry


def _bring_up(stack: str) -> str:
    return f"{ENV_STEP} && pulumi up -s dev" if stack == "dev" else "uv run blueprint up"


def _read_file(path: Path, what: str, stack: str) -> str:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise SecretsError(
            f"{what} is not there: {path}; the stack {stack} is not up on this machine, or its data folder was wiped: "
            f"bring it up with `{_bring_up(stack)}`"
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        why = error.strerror if isinstance(error, OSError) and error.strerror else type(error).__name__
        raise SecretsError(f"cannot read {what} in {path} ({why}): run this as the user who brought the platform up") from None
    value = text.strip()
    if not value:
        raise SecretsError(
            f"{what} in {path} is empty: restore it from a backup, as docs/guide/security.md ('Where each secret lives') says"
        )
    return value


def _from_openbao(entry: Credential, platform: dict[str, object], folder: Path, stack: str) -> str:
    import hvac.exceptions

    from components.openbao import WRITER_USER
    from providers.openbao_kv import IMPOSTOR, NO_CA_FILE, OpenBaoUnavailable, current

    assert entry.path is not None
    address = str(platform[outputs.OPENBAO_ADDR])
    password_file = Path(str(platform[outputs.OPENBAO_WRITER_PASSWORD_FILE]))
    password = _read_file(password_file, "OpenBao's blueprint password", stack)
    props = {
        "address": address,
        "ca_file": platform.get(outputs.CA_CERT_FILE),
        "server_name": platform.get(outputs.OPENBAO_SERVER_NAME),
        "username": WRITER_USER,
        "password": password,
        "mount": credentials.KV_MOUNT,
        "path": entry.path,
        # On an existing cluster, through the port-forward phase2 names (providers/cluster_access.py).
        **({"forward": platform[outputs.OPENBAO_FORWARD]} if platform.get(outputs.OPENBAO_FORWARD) else {}),
    }
    where = f"{credentials.KV_MOUNT}/{entry.path}"
    try:
        data = current(props, wait_seconds=SHOW_WAIT_SECONDS)
    except OpenBaoUnavailable as error:
        if error.why in (IMPOSTOR, NO_CA_FILE):  # waiting changes nothing: the message says what does
            raise SecretsError(str(error)) from None
        fallback = (
            f"; meanwhile its host file holds it: {shlex.quote(str(folder / entry.file))}"
            if entry.file
            else "; it has no host file: only OpenBao holds it"
        )
        raise SecretsError(
            f"OpenBao at {address} does not answer ({error.why}): is the cluster up? `uv run blueprint status` says{fallback}"
        ) from None
    except hvac.exceptions.InvalidRequest:
        raise SecretsError(
            f"OpenBao at {address} refused user {WRITER_USER}'s password from {password_file}: that file is not the one this "
            f"vault was made with (restore it from a backup), or another OpenBao answers at that address"
        ) from None
    except (hvac.exceptions.Forbidden, hvac.exceptions.InvalidPath):
        raise SecretsError(
            f"OpenBao at {address} does not let user {WRITER_USER} log in or read {where}: its userpass login or its "
            f"policy is not blueprint's (changed by hand, or a first start cut short: docs/guide/troubleshooting.md); "
            f"`uv run blueprint up --phase 2` applies both again"
        ) from None
    except hvac.exceptions.VaultError as error:
        raise SecretsError(
            f"OpenBao at {address} could not answer for {where} ({type(error).__name__}): its storage, PostgreSQL, may be down "
            f"(`kubectl -n openbao logs openbao-0`), or what answers at that address is not blueprint's OpenBao"
        ) from None
    if data is None or entry.key not in data:
        maker = _bring_up(stack) if stack == "dev" or entry.stack == "phase2" else "uv run blueprint up --phase 3"
        raise SecretsError(
            f"OpenBao holds no {entry.key!r} at {where} yet: the stack that writes it ({entry.stack}) is not up, or its last "
            f"up stopped before writing it; run `{maker}`"
        )
    return str(data[entry.key])


def value(name: str, stack: str, platform: dict[str, object] | None) -> str:
    """The value of the credential `name`, from OpenBao or, for the three not in it, its host file.
    `platform`: the outputs of the stack that made OpenBao (phase2's, or dev's); None when it is not up.
    """
    entry = _kinds_or_entry(name)
    platform_stack = "dev" if stack == "dev" else "phase2"
    if not platform or not platform.get(outputs.OPENBAO_ADMIN_PASSWORD_FILE):
        raise SecretsError(f"stack {platform_stack} is not up, so no credential exists yet: bring it up with `{_bring_up(stack)}`")
    # Every host file of the catalogue is in one folder, the one the admin password's is in.
    folder = Path(str(platform[outputs.OPENBAO_ADMIN_PASSWORD_FILE])).parent
    if entry.path is None:
        assert entry.file is not None
        return _read_file(folder / entry.file, f"the file of {entry.name}", platform_stack)
    return _from_openbao(entry, platform, folder, platform_stack)


def show(name: str, stack: str, platform: dict[str, object] | None, out: TextIO, err: TextIO) -> int:
    """`--show NAME`: the value alone on `out` (a newline after it only when `out` is a terminal)."""
    try:
        found = value(name, stack, platform)
    except SecretsError as error:
        print(f"error: {error}", file=err)
        return 1
    out.write(found + ("\n" if out.isatty() else ""))
    out.flush()
    return 0


def run(args: Any, runner: StackRunner | None = None, out: TextIO | None = None) -> int:
    """`blueprint secrets [--stack STACK] [--show NAME]`: the list, which needs no Pulumi; or one value,
    read from the stack's outputs through a `StackRunner` (the real one without `runner`).
    """
    if args.show is None:
        (out or sys.stdout).write(listing(args.stack))
        return 0
    if problem := not_shown(args.show):
        print(f"error: {problem}", file=sys.stderr)  # before the stack is read: no Pulumi needed to be told
        return 1
    from cli import commands

    return commands.main_for(commands.Verb(_show), args, runner, out)


def _show(args: Any, runner: StackRunner, out: TextIO) -> int:
    return show(args.show, args.stack, runner.outputs(args.stack), out, sys.stderr)
