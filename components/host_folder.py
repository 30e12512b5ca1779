"""A folder on the host that one stack owns: created on `up`, and on `destroy` kept or wiped.

Used for the data folder every kind node mounts (phase1) and for the platform's own folder inside
it (phase2). The owner, `<project>/<stack>`, is written into the folder: a folder that holds
anything else, or that another stack owns, is refused on `up`, and `destroy` only ever removes a
folder that names the stack being destroyed.

What pods wrote belongs to their UIDs (Postgres 26, Gitaly 1000, ...), which the host user may not
be able to remove. Root in a one-shot container of an image already on the machine (the kind node
image) can, without --privileged; it empties the folder, and the host user removes the folder.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
from pulumi_command import local

from providers.host_secret import WIPING_MARKER

OWNER_MARKER = ".blueprint-owner"
"""File in an owned folder naming the `<project>/<stack>` that owns it."""

UP_SCRIPT = f"""\
set -eu
marker="$FOLDER/{OWNER_MARKER}"
for wiped in "$FOLDER" "$(dirname "$FOLDER")"; do
  if [ -e "$wiped/{WIPING_MARKER}" ]; then
    echo "blueprint: a destroy that removes $wiped stopped half-way, so its secrets may be gone while its" \\
      "databases remain; finish it: run the destroy again (uv run blueprint destroy --wipe-data), or sudo rm -rf '$wiped'" >&2
    exit 1
  fi
done
if [ -f "$marker" ]; then
  owner=$(cat "$marker")
  if [ "$owner" != "$OWNER" ]; then
    echo "blueprint: $FOLDER belongs to $owner; give $OWNER its own folder (blueprint:dataDir)" >&2
    exit 1
  fi
elif [ -d "$FOLDER" ] && [ -n "$(ls -A "$FOLDER")" ]; then
  echo "blueprint: $FOLDER holds files blueprint did not write, which a destroy would remove;" \\
    "use a new or empty folder (blueprint:dataDir)" >&2
  exit 1
fi
mkdir -p "$FOLDER"
printf '%s\\n' "$OWNER" > "$marker"
for sub in $SUBFOLDERS; do
  mkdir -p "$FOLDER/$sub"
  # A pod may have taken the folder over (chown to its own user): then its mode is the pod's business.
  chmod "$SUBFOLDER_MODE" "$FOLDER/$sub" 2>/dev/null || [ ! -O "$FOLDER/$sub" ]
done
"""
"""Create the folder and its subfolders and claim them; refuse a folder that holds anything else."""

KEEP_SCRIPT = 'echo "blueprint: preserveData=true, keeping $FOLDER" >&2'

WIPE_SCRIPT = f"""\
set -u
[ -e "$FOLDER" ] || exit 0
if [ "$(cat "$FOLDER/{OWNER_MARKER}" 2>/dev/null)" != "$OWNER" ]; then
  echo "blueprint: not removing $FOLDER: its {OWNER_MARKER} does not name $OWNER" >&2
  exit 1
fi
# The markers go last, so a wipe that fails half-way can be run again, and no `up` takes the folder
# over in between.
: > "$FOLDER/{WIPING_MARKER}"
find "$FOLDER" -mindepth 1 ! -path "$FOLDER/{OWNER_MARKER}" ! -path "$FOLDER/{WIPING_MARKER}" -delete 2>/dev/null
if [ -n "$(find "$FOLDER" -mindepth 1 ! -path "$FOLDER/{OWNER_MARKER}" ! -path "$FOLDER/{WIPING_MARKER}" 2>/dev/null | head -n 1)" ]; then
  echo "blueprint: removing files owned by pod users in $FOLDER through a one-shot container" >&2
  docker run --rm --network none --user 0 -v "$FOLDER:/blueprint-data" \\
    --entrypoint find "$WIPE_IMAGE" /blueprint-data -mindepth 1 ! -path /blueprint-data/{OWNER_MARKER} \\
    ! -path /blueprint-data/{WIPING_MARKER} -delete
fi
if [ -z "$(find "$FOLDER" -mindepth 1 ! -path "$FOLDER/{OWNER_MARKER}" ! -path "$FOLDER/{WIPING_MARKER}" 2>/dev/null | head -n 1)" ]; then
  rm -f -- "$FOLDER/{WIPING_MARKER}" "$FOLDER/{OWNER_MARKER}"
  rmdir -- "$FOLDER"
fi
if [ -e "$FOLDER" ]; then
  echo "blueprint: could not remove $FOLDER; remove it by hand: sudo rm -rf '$FOLDER'" >&2
  exit 1
fi
"""
"""Remove the folder this stack owns, including what pods wrote as their own users."""


@dataclass(frozen=True, kw_only=True)
class HostFolderArgs:
    path: str
    """Absolute host path."""
    owner: str
    """`<project>/<stack>` of the owning stack."""
    preserve: pulumi.Input[bool]
    """Keep the folder on destroy (the stack's preserveData)."""
    wipe_image: str
    """An image already on the machine, whose root removes pod-owned files on a wipe."""
    subfolders: tuple[str, ...] = ()
    """Folders to create inside (relative; no spaces)."""
    subfolder_mode: str = "0755"
    """Mode of the subfolders: 0777 where pods running as other users write."""

    def __post_init__(self) -> None:
        if not self.path.startswith("/"):
            raise ValueError(f"path must be absolute, got {self.path!r}")
        if any(" " in sub or sub.startswith("/") for sub in self.subfolders):
            raise ValueError(f"subfolders must be relative and without spaces, got {self.subfolders}")


def claimed_folder(command_inputs: dict[str, object]) -> str | None:
    """The folder a recorded `host_folder` command claims (from its inputs or state), or None.
    Told by its environment's keys, which every version of the command has had, never by its
    scripts' text, which changes between versions while old states keep the old text.
    """
    environment = command_inputs.get("environment")
    if isinstance(environment, dict) and {"FOLDER", "OWNER"} <= set(environment):
        return str(environment["FOLDER"])
    return None


def host_folder(name: str, args: HostFolderArgs, opts: pulumi.ResourceOptions | None = None) -> local.Command:
    """The command resource that owns the folder. A change of `preserve` is an in-place update that
    records the new delete script, which is what `destroy` runs (it acts on recorded state).
    """
    return local.Command(
        name,
        create=UP_SCRIPT,
        update=UP_SCRIPT,
        delete=pulumi.Output.from_input(args.preserve).apply(lambda keep: KEEP_SCRIPT if keep else WIPE_SCRIPT),
        environment={
            "FOLDER": args.path,
            "OWNER": args.owner,
            "WIPE_IMAGE": args.wipe_image,
            "SUBFOLDERS": " ".join(args.subfolders),
            "SUBFOLDER_MODE": args.subfolder_mode,
        },
        opts=opts,
    )
