"""Where Pulumi keeps the stacks' state: the user's backend when they choose one, by Pulumi's own
`PULUMI_BACKEND_URL` (S3, GCS, Azure Blob, Pulumi Cloud, or another `file://` folder), else this
checkout's `.pulumi-state/` (docs/design/decisions.md, entry 54). `pulumi login`'s
current backend (~/.pulumi/credentials.json) does not count: a login made for other projects would
move blueprint's stacks without a word, and a second operator must name the same backend anyway.
Every command of blueprint that reaches the stacks asks here.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stacks.config import PROJECT_DIR
from stacks.config.paths import LOCAL_STATE_DIR

if TYPE_CHECKING:
    from cli.stack_runner import StackRunner

VARIABLE = "PULUMI_BACKEND_URL"
WITH_CREDENTIALS = "<a URL with credentials, not repeated here>"
"""What a message says for a backend URL without a scheme that holds an `@`: no part of it is safe to show."""
LOCAL_FOLDER = LOCAL_STATE_DIR.name
"""The default backend's folder, in the checkout (ignored by git)."""


def default_url(project_dir: Path = PROJECT_DIR) -> str:
    return f"file://{project_dir / LOCAL_FOLDER}"


def url(environ: Mapping[str, str] = os.environ, project_dir: Path = PROJECT_DIR) -> str:
    """The backend every Pulumi command of blueprint runs with: the user's `PULUMI_BACKEND_URL` (an empty
    one is unset, as Pulumi reads it), else the checkout's own folder.
    """
    return environ.get(VARIABLE, "").strip() or default_url(project_dir)


def is_users(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the user chose a backend (`PULUMI_BACKEND_URL`), rather than the checkout's own."""
    return bool(environ.get(VARIABLE, "").strip())


def shown(backend: str) -> str:
    """`backend` as said to the user: no user name or password, no query (S3's endpoint options, an
    Azure SAS token), no fragment: a URL may carry credentials, and no message repeats them. Cut at the
    last `@` of all that follows the scheme, not at what urlsplit calls the host: a password pasted
    unencoded may hold a `/`, `?` or `#`, which would end the host early. Too coarse is fine here.
    """
    scheme, found, rest = backend.partition("://")
    if not found:
        return WITH_CREDENTIALS if "@" in backend else _cut_query(backend)
    if scheme != "file":  # a folder's path, never credentials
        rest = rest.rpartition("@")[2]
    return f"{scheme}://{_cut_query(rest)}"


def _cut_query(text: str) -> str:
    return re.sub(r"[?#].*", "", text, flags=re.DOTALL)


def local_folder(backend: str, project_dir: Path = PROJECT_DIR) -> Path | None:
    """The folder of a `file://` backend (`~` is the home folder, a relative path the checkout's, as
    the Pulumi CLI, which blueprint runs in the checkout, reads them), or None for any other backend.
    """
    if not backend.startswith("file://"):
        return None
    path = _cut_query(backend[len("file://") :])
    return project_dir / Path(path).expanduser()


# What the Pulumi CLI says when it cannot reach or use the backend, before any stack is read: Pulumi
# Cloud without a token (pkg/backend/httpstate/login.go) or with one it refuses; a bucket it cannot
# open (pkg/backend/diy/backend.go, "unable to open bucket"); a cloud SDK without credentials.
_UNREACHABLE = re.compile(
    r"PULUMI_ACCESS_TOKEN must be set|unable to open bucket|unable to check if bucket|getting user info from|"
    r"invalid access token|NoCredentialProviders|could not find default credentials|DefaultAzureCredential|"
    r"failed to get API credentials|failed to log in",
    re.IGNORECASE,
)


def unreachable(text: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """One message with its fix when Pulumi's `text` says the user's backend cannot be reached or used,
    else None. Never Pulumi's own words: they may quote the URL whole, credentials and all.
    """
    if not is_users(environ) or not _UNREACHABLE.search(text):
        return None
    named = shown(url(environ))
    return (
        f"Pulumi cannot reach or log in to the backend {VARIABLE} names ({named}). blueprint keeps every stack's state there, "
        f"so nothing was read or changed.\nfix: give Pulumi that backend's credentials as its docs say (Pulumi Cloud: "
        f"`export PULUMI_ACCESS_TOKEN=...`; S3: AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY; GCS: "
        f"GOOGLE_APPLICATION_CREDENTIALS; Azure Blob: AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY), check that "
        f"`pulumi stack ls` with the same {VARIABLE} answers, then run this again; or `unset {VARIABLE}` to use this "
        f"checkout's own state ({LOCAL_FOLDER}/)"
    )


def recorded_checkout_id(exported: Mapping[str, Any]) -> str | None:
    """The checkout id phase1's state (`pulumi stack export`) recorded: its data folder's owner,
    `<project>/phase1@<id>` (stacks/phase1.py, the host folder it claims; a plain input), or None.
    """
    from cli.lifecycle import claimed_folder

    for resource in (exported.get("deployment") or {}).get("resources") or []:
        environment = (resource.get("inputs") or {}).get("environment") if claimed_folder(resource) else None
        owner = environment.get("OWNER") if isinstance(environment, dict) else None
        stack, _, checkout = str(owner or "").partition("@")
        if stack.endswith("/phase1") and re.fullmatch(r"[0-9a-f]{16}", checkout):
            return checkout
    return None


def second_operator(runner: StackRunner, environ: Mapping[str, str] = os.environ, id_file: Path | None = None) -> str | None:
    """What a checkout needs of the platform whose stacks are on the user's backend before it runs a
    stack's program there, as one refusal with its fix, or None: the stacks' passphrase (never a new
    one made beside stacks it could not decrypt), and the checkout id phase1 recorded (`adopt_checkout_id`).
    Nothing with the checkout's own backend, or before phase1 is up.
    """
    if not is_users(environ) or runner.outputs("phase1") is None:
        return None  # the default backend keeps the id and the stacks beside each other; no phase1, no owner yet
    return _no_passphrase(environ) or adopt_checkout_id(runner.export_state("phase1"), environ, id_file)


def _no_passphrase(environ: Mapping[str, str]) -> str | None:
    """The refusal when this machine has no passphrase for stacks on the user's backend: blueprint would
    otherwise make a new one, which cannot decrypt them.
    """
    from cli import passphrase

    if "PULUMI_CONFIG_PASSPHRASE" in environ:
        return None
    file = passphrase.environment(environ, create=False).get("PULUMI_CONFIG_PASSPHRASE_FILE")
    if file is None or Path(file).exists():
        return None
    return (
        f"blueprint: the stacks on {shown(url(environ))} were written with a passphrase this machine does not have "
        f"(blueprint keeps its own in {file}, missing here), and a new one could not decrypt them; nothing was changed."
        f"\nfix: get the passphrase from whoever brought the platform up (their own blueprint passphrase file, or "
        f"where your team keeps it), then put it in a file only you can read and `export PULUMI_CONFIG_PASSPHRASE_FILE=<that "
        f"file>`, or write it to {file} (mode 0600)"
    )


def adopt_checkout_id(exported: Mapping[str, Any], environ: Mapping[str, str] = os.environ, id_file: Path | None = None) -> str | None:
    """Make this checkout's id the one phase1's state (`exported`) on the user's backend recorded, so a
    second operator's checkout, or a new laptop's, is the same owner of the platform's host folders and
    namespaces (`blueprint/owner`), while two platforms on two backends keep two ids. Writes it when the
    checkout has none yet; an id of its own that differs is refused (the message, with its fix), since
    this checkout's own folders name it. None when there is nothing to do, or nothing to say.
    """
    from stacks.config import paths

    path = id_file or paths.CHECKOUT_ID_FILE
    if (recorded := recorded_checkout_id(exported)) is None:
        return None
    here = paths.read_checkout_id(path)
    if here is None:
        paths.checkout_id(path, made=recorded)
        return None
    if here == recorded:
        return None
    write = f"printf '%s\\n' {recorded} > {shlex.quote(str(path))}"
    return (
        f"blueprint: this checkout's id ({here}, in {path}) is not the one the stacks on {shown(url(environ))} were brought up "
        f"with ({recorded}): this checkout drove other stacks, whose host folders name its own id, so it does not take "
        f"the platform's over, and nothing was changed.\nfix: drive the platform on that backend from a fresh clone; or, when "
        f"this checkout's own stacks are destroyed and their folders wiped, make it the platform's: `{write}`"
    )


_STACK_FILE = re.compile(r"\.(json|ya?ml)(\.gz)?$")
"""A stack's file as Pulumi's DIY backend lists them (pkg/backend/diy: sdk encoding.Marshalers' extensions, gzip accepted)."""


def legacy_layout(environ: Mapping[str, str] = os.environ, project_dir: Path = PROJECT_DIR) -> str | None:
    """The refusal, with its fix, when the user's `file://` backend is in Pulumi's legacy layout, else None.

    Pulumi keeps a DIY backend that has no `.pulumi/meta.yaml` but already holds stacks (files directly
    in `.pulumi/stacks/`) in that layout, and never writes the file for it (pulumi/pulumi
    pkg/backend/diy/meta.go `ensurePulumiMeta`; a meta.yaml of version 0 is the same). Stack names
    there have no project: the references `organization/blueprint/<stack>` that each phase makes are
    refused (`tokens.ParseStackName`), and `phase1` would be any other project's. A bucket cannot be
    asked offline: the guide says it must be in project mode.
    """
    folder = local_folder(url(environ, project_dir), project_dir) if is_users(environ) else None
    if folder is None:
        return None
    meta, stacks = folder / ".pulumi" / "meta.yaml", folder / ".pulumi" / "stacks"
    try:
        if meta.exists():
            import yaml

            legacy = (yaml.safe_load(meta.read_text()) or {}).get("version") == 0
        else:
            legacy = stacks.is_dir() and any(found.is_file() and _STACK_FILE.search(found.name) for found in stacks.iterdir())
    except (OSError, ValueError, AttributeError):  # unreadable, or not YAML: Pulumi says what is wrong with it
        return None
    if not legacy:
        return None
    return (
        f"blueprint: the backend {VARIABLE} names ({shown(url(environ, project_dir))}) is in Pulumi's legacy layout (stacks "
        f"directly in .pulumi/stacks/, no .pulumi/meta.yaml), where a stack has no project: blueprint's stacks refer to each "
        f"other as organization/blueprint/<stack>, which that layout refuses, and their names would be other projects'. "
        f"Nothing was changed.\nfix: upgrade it to Pulumi's project layout, with the same {VARIABLE} exported: `pulumi state "
        f"upgrade` (every stack there moves under its project, and older Pulumi CLIs cannot read it then); or point "
        f"{VARIABLE} at an empty folder of blueprint's own"
    )
