"""A folder on the host that one stack owns: created on `up`, and on `destroy` kept or wiped.

Used for phase1's data folder (host only: the kind nodes mount two of its subfolders) and for
phase2's folders inside it: the platform's secrets, and the volumes the nodes see. The owner,
`<project>/<stack>@<checkout id>`, is written into the folder: a folder that holds anything else,
that another stack owns (the same stack of another checkout too), or that is not the user's alone
(another user's, or one anyone may write in), is refused on `up`, and so is a folder inside a folder
anyone but the expected owner claimed (PARENT_OWNER: the data folder's owner for phase2's folders,
nobody for a data folder). `destroy` only ever removes a folder that names the stack being
destroyed, nothing on another filesystem mounted inside it, and nothing at all while a folder inside
is claimed by anyone but that stack and the stacks whose folders belong in it (INNER_OWNERS). Both
are always passed, empty when there is none: never read from the user's shell. One delete script
keeps or wipes, as the recorded PRESERVE_DATA says, unless the stack file now says to keep
(STACK_FILE: a `pulumi config set` with no `up` since). A folder that cannot be removed itself once
emptied (a mount point, or in a folder the user cannot write) is left in place, empty and unclaimed.

What pods wrote belongs to their UIDs (Postgres 26, Gitaly 1000, ...), which the host user may not
be able to remove. Root in a one-shot container of an image already on the machine (the kind node
image) can, without --privileged; it empties the folder, and the host user removes the folder. The
same container gives a volume's folder to the user its pod runs as, on `up`.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pulumi
from pulumi_command import local

from components.engine import DOCKER, for_engine
from components.markers import LAYOUT_MARKER, OWNER_MARKER
from components.scripts import script
from providers.host_secret import FINISHING_DESTROY, WIPING_MARKER

SCRIPT_ENVIRONMENT = {
    "OWNER_MARKER": OWNER_MARKER,
    "WIPING_MARKER": WIPING_MARKER,
    "LAYOUT_MARKER": LAYOUT_MARKER,
    "FINISHING_DESTROYS": "\n".join(f"{stack} {command}" for stack, command in FINISHING_DESTROY.items()),
}
"""The names of the markers, and the command that finishes a wipe by stack, as the scripts read them
from their environment: every command, and a wipe `cli/teardown.py` runs itself, passes them."""

PRESERVE_DATA = "PRESERVE_DATA"
"""The environment variable, recorded with each command, that its delete script reads: "true"
keeps the folder, "false" wipes it (`cli/lifecycle.py`, `record_preserve_data`, flips it)."""

# The prefix resolved (a checkout reached through a link registers the same path), `bin/python` not:
# it links to the base interpreter, outside the virtualenv and its PyYAML.
_VENV_PYTHON = Path(sys.prefix).resolve() / "bin" / "python"
CONFIG_PYTHON = str(_VENV_PYTHON) if _VENV_PYTHON.exists() else sys.executable
"""The Python the delete reads the stack file with: the one running the program, the checkout's
virtualenv, which has PyYAML (a virtualenv's `bin/python`, the same path for every run)."""

UP_SCRIPT = script("host_folder_claim.sh")
"""Create the folder and its subfolders, claim them and record the data's layout (`layout`) in
LAYOUT_MARKER; refuse a folder that holds anything but blueprint's markers, and one that is not the
user's alone (another user's, or one anyone may write in)."""

DELETE_SCRIPT = script("host_folder_delete.sh")
"""Keep the folder (PRESERVE_DATA=true; refused once a wipe of it stopped half-way), or remove it, with
what pods wrote as their own users (PRESERVE_DATA=false): one text whatever the choice, so a destroy
flips only the recorded value."""


@dataclass(frozen=True, kw_only=True)
class Subfolder:
    """A folder an `up` makes inside the owned folder, with its mode and owner."""

    path: str
    """Relative to the owned folder; no spaces."""
    mode: str = "0755"
    """Octal mode, e.g. 0700."""
    owner: tuple[int, int] | None = None
    """(uid, gid) the folder is given to, through a one-shot root container, whenever it is not
    theirs with `mode` already (what a pod writes as its own user); None: the host user's."""

    def __post_init__(self) -> None:
        if not self.path or " " in self.path or "\n" in self.path or self.path.startswith("/") or ".." in self.path.split("/"):
            raise ValueError(f"a subfolder must be a relative path without spaces or '..', got {self.path!r}")
        if not re.fullmatch(r"0[0-7]{3}", self.mode):
            raise ValueError(f"a subfolder's mode must be four octal digits such as 0700, got {self.mode!r}")
        if self.owner is not None and min(self.owner) < 0:
            raise ValueError(f"a subfolder's owner must be a (uid, gid) of numbers >= 0, got {self.owner}")

    @property
    def line(self) -> str:
        """How UP_SCRIPT reads it from SUBFOLDERS."""
        return f"{self.path} {self.mode} {'-' if self.owner is None else f'{self.owner[0]}:{self.owner[1]}'}"


@dataclass(frozen=True, kw_only=True)
class HostFolderArgs:
    path: str
    """Absolute host path."""
    owner: str
    """`<project>/<stack>@<checkout id>` of the owning stack (`stacks.config.paths.folder_owner`)."""
    preserve: pulumi.Input[bool]
    """Keep the folder on destroy (the stack's preserveData), recorded as PRESERVE_DATA."""
    wipe_image: str
    """An image already on the machine, whose root removes pod-owned files on a wipe and gives
    subfolders to their owners."""
    layout: str
    """The layout this checkout leaves the owning stack's data in (stacks/migrations.py `layout`),
    recorded in LAYOUT_MARKER as BLUEPRINT_LAYOUT."""
    subfolders: tuple[Subfolder, ...] = ()
    """Folders to create inside."""
    parent_owner: str = ""
    """The owner of the folder this one belongs in (the data folder's, for a folder a stack claims
    inside it), or "" for a folder inside no claimed folder (a data folder): a claim refuses to be
    inside any other owner's folder, whose wipe would remove it."""
    inner_owners: tuple[str, ...] = ()
    """Owners, besides `owner`, whose folders belong inside this one (phase2's, in phase1's data
    folder): a wipe removes their claims with it, and refuses, removing nothing, when it holds anyone else's."""
    engine: str = DOCKER
    """The container engine whose container removes pod-owned files and gives subfolders to their
    owners (components/engine.py)."""
    stack_file: str
    """The stack file (Pulumi.<stack>.yaml) whose `blueprint:preserveData` decides this folder's fate,
    which the delete reads again, as it is then: a plain `pulumi destroy` runs the delete the last `up`
    recorded, and a `pulumi config set` since must still keep the data (STACK_FILE)."""

    def __post_init__(self) -> None:
        if not self.path.startswith("/"):
            raise ValueError(f"path must be absolute, got {self.path!r}")
        for other in (self.parent_owner, *self.inner_owners):
            if any(char.isspace() for char in other):
                raise ValueError(f"an owner holds no whitespace (the scripts split owners on it), got {other!r}")


def claimed_folder(command_inputs: dict[str, object]) -> str | None:
    """The folder a recorded `host_folder` command claims (from its inputs or state), or None.
    Told by its environment's keys, which every version of the command has had, never by its
    scripts' text, which changes between versions while old states keep the old text.
    """
    environment = command_inputs.get("environment")
    if isinstance(environment, dict) and {"FOLDER", "OWNER"} <= set(environment):
        return str(environment["FOLDER"])
    return None


def keeps_data(command_inputs: dict[str, object]) -> bool:
    """Whether a recorded `host_folder` command's delete keeps its folder (PRESERVE_DATA=true)."""
    environment = command_inputs.get("environment")
    return isinstance(environment, dict) and environment.get(PRESERVE_DATA) == "true"


def host_folder(name: str, args: HostFolderArgs, opts: pulumi.ResourceOptions | None = None) -> local.Command:
    """The command resource that owns the folder. A change of `preserve` is an in-place update that
    records the new PRESERVE_DATA, which the delete script reads (`destroy` acts on recorded state).
    Every name the scripts read is passed, empty when there is none: pulumi-command runs them with
    the user's environment below this one, and a stray `export INNER_OWNERS=...` must change nothing.
    """
    return local.Command(
        name,
        create=for_engine(UP_SCRIPT, args.engine),
        update=for_engine(UP_SCRIPT, args.engine),
        delete=for_engine(DELETE_SCRIPT, args.engine),
        environment={
            "FOLDER": args.path,
            "OWNER": args.owner,
            "WIPE_IMAGE": args.wipe_image,
            "SUBFOLDERS": "\n".join(sub.line for sub in args.subfolders),
            "PARENT_OWNER": args.parent_owner,
            "INNER_OWNERS": "\n".join(args.inner_owners),
            PRESERVE_DATA: pulumi.Output.from_input(args.preserve).apply(lambda keep: "true" if keep else "false"),
            "BLUEPRINT_LAYOUT": args.layout,
            "STACK_FILE": args.stack_file,
            "CONFIG_PYTHON": CONFIG_PYTHON,
            **SCRIPT_ENVIRONMENT,
        },
        opts=opts,
    )
