"""A folder on the host that one stack owns: created on `up`, and on `destroy` kept or wiped.

Used for phase1's data folder (host only: the kind nodes mount two of its subfolders) and for
phase2's folders inside it: the platform's secrets, and the volumes the nodes see. The owner,
`<project>/<stack>@<checkout id>`, is written into the folder: a folder that holds anything else,
or that another stack owns (the same stack of another checkout too), is refused on `up`, and so is
a folder inside a folder anyone but the expected owner claimed (PARENT_OWNER: the data folder's
owner for phase2's folders, nobody for a data folder). `destroy` only ever removes a folder that
names the stack being destroyed, nothing on another filesystem mounted inside it, and nothing at all
while a folder inside is claimed by anyone but that stack and the stacks whose folders belong in it
(INNER_OWNERS). A folder that cannot be removed itself once emptied (a mount point, or in a folder
the user cannot write) is left in place, empty and unclaimed: the wipe is done.

What pods wrote belongs to their UIDs (Postgres 26, Gitaly 1000, ...), which the host user may not
be able to remove. Root in a one-shot container of an image already on the machine (the kind node
image) can, without --privileged; it empties the folder, and the host user removes the folder. The
same container gives a volume's folder to the user its pod runs as, on `up`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pulumi
from pulumi_command import local

from providers.host_secret import WIPING_MARKER

OWNER_MARKER = ".blueprint-owner"
"""File in an owned folder naming the owner, `<project>/<stack>@<checkout id>` (`stacks.config.paths.folder_owner`):
the same stack of another checkout is another owner."""

SHELL_QUOTE = r"""quoted() {
  case "$1" in
    "" | *[!A-Za-z0-9@%+=:,./_-]*) printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\"'\"'/g")" ;;
    *) printf '%s' "$1" ;;
  esac
}"""
"""A shell function that prints its argument as `shlex.quote` does (single-quoted unless it holds
only safe characters): every command a script prints for the user quotes its paths and names so."""

MOUNTS_INSIDE = r"""mounts_inside() {
  # Mount points strictly inside $1, from the mount table (Linux: field 5 of mountinfo, with a space
  # written as \040, which printf %b reads back; macOS: `mount`, "<device> on <path> (<type>, ...)").
  if [ -r /proc/self/mountinfo ]; then
    awk '{ print $5 }' /proc/self/mountinfo | while IFS= read -r point; do printf '%b\n' "$point"; done
  else
    mount | sed -n 's/^.* on \(.*\) (.*)$/\1/p'
  fi | while IFS= read -r point; do
    case "$point" in "$1"/*) printf '%s\n' "$point" ;; esac
  done
}"""
"""A shell function that lists the mount points inside a folder."""

FOLDER_ABOVE = f"""folder_above() {{
  # The nearest folder above $1 that has a {OWNER_MARKER}, or nothing.
  above=$1
  while [ "$above" != / ]; do
    above=$(dirname "$above")
    if [ -f "$above/{OWNER_MARKER}" ]; then printf '%s\\n' "$above"; return 0; fi
  done
}}"""
"""A shell function: the claimed folder a folder is inside."""

LEASES_FOLDER = ".blueprint-on-cluster"
"""Folder, in a data folder, where each stack that keeps resources on the kind cluster over it holds
a file naming itself while it does (`components/kind_cluster.py`, `cluster_lease`)."""

UP_SCRIPT = f"""\
set -eu
{SHELL_QUOTE}
{FOLDER_ABOVE}
marker="$FOLDER/{OWNER_MARKER}"
# Every folder up from this one: the one being wiped may be any folder this one is inside.
wiped=$FOLDER
while :; do
  if [ -e "$wiped/{WIPING_MARKER}" ]; then
    echo "blueprint: a destroy that removes $wiped stopped half-way, so its secrets may be gone while its" \\
      "databases remain; finish it: run the destroy again (uv run blueprint destroy --wipe-data), or sudo rm -rf $(quoted "$wiped")" >&2
    exit 1
  fi
  [ "$wiped" != / ] || break
  wiped=$(dirname "$wiped")
done
# The nearest claimed folder above this one is the one the owner expects there (PARENT_OWNER: the data
# folder's owner, for a folder a stack claims inside it), or there is none (a data folder): a folder
# claimed inside another owner's would go with that owner's wipe.
container=$(folder_above "$FOLDER")
if [ -n "$container" ]; then
  holder=$(cat "$container/{OWNER_MARKER}" 2>/dev/null || true)
  if [ "$holder" != "${{PARENT_OWNER:-}}" ]; then
    held=$(printf '%s' "$holder" | head -n 1 | cut -c 1-120 | tr -cd 'A-Za-z0-9._/@-')
    if [ -z "${{PARENT_OWNER:-}}" ]; then
      echo "blueprint: $FOLDER is inside $container, which ${{held:-another stack}} claimed: a destroy of that one would" \\
        "remove this one with it; give $OWNER a folder outside every folder blueprint claimed (blueprint:dataDir)" >&2
    else
      echo "blueprint: $FOLDER is inside $container, which ${{held:-nobody blueprint knows}} claimed, not $PARENT_OWNER," \\
        "in whose data folder it belongs; give that data folder a place of its own (blueprint:dataDir)" >&2
    fi
    exit 1
  fi
elif [ -n "${{PARENT_OWNER:-}}" ]; then
  echo "blueprint: $FOLDER belongs in the data folder $PARENT_OWNER claims, and no folder above it is claimed:" \\
    "bring that stack up first (uv run blueprint up)" >&2
  exit 1
fi
first=no
if [ -f "$marker" ]; then
  claimed=$(cat "$marker")
  if [ "$claimed" != "$OWNER" ]; then
    # Shown only, with a stack name's characters: the folder may be one that the nodes mount.
    shown=$(printf '%s' "$claimed" | head -n 1 | cut -c 1-120 | tr -cd 'A-Za-z0-9._/@-')
    echo "blueprint: $FOLDER belongs to $shown; give $OWNER its own folder (blueprint:dataDir)" >&2
    case "$claimed" in
      "${{OWNER%@*}}@"*) echo "blueprint: (that is this stack in another checkout: each checkout has its own id, in" \\
        ".pulumi-state/blueprint-checkout-id, and never takes over or removes another's data)" >&2 ;;
    esac
    exit 1
  fi
elif [ -d "$FOLDER" ] && [ -n "$(ls -A "$FOLDER")" ]; then
  echo "blueprint: $FOLDER holds files blueprint did not write, which a destroy would remove;" \\
    "use a new or empty folder (blueprint:dataDir)" >&2
  exit 1
else
  first=yes
fi
mkdir -p "$FOLDER"
if [ "$first" = yes ]; then
  # The first claim of a new or empty folder makes the marker only if none exists yet (noclobber opens
  # it with O_EXCL): of two claims at the same moment, one wins and the other refuses.
  if ! (set -C; printf '%s\\n' "$OWNER" > "$marker") 2>/dev/null; then
    [ -f "$marker" ] || {{ echo "blueprint: cannot write $marker" >&2; exit 1; }}
    winner=$(head -n 1 "$marker" | cut -c 1-120 | tr -cd 'A-Za-z0-9._/@-')
    if [ "$winner" != "$OWNER" ]; then
      echo "blueprint: $FOLDER was claimed by ${{winner:-another up}} at the same moment;" \\
        "give $OWNER its own folder (blueprint:dataDir)" >&2
      exit 1
    fi
  fi
elif [ -L "$marker" ]; then
  # Rewritten as a new file (noclobber: O_EXCL), never through a link left at its name.
  rm -f -- "$marker"
  (set -C; printf '%s\\n' "$OWNER" > "$marker") 2>/dev/null || {{ echo "blueprint: cannot write $marker" >&2; exit 1; }}
fi
# One line per subfolder: `<path> <mode> <uid>:<gid>`, or `-` for the host user.
while read -r sub mode owner; do
  [ -n "$sub" ] || continue
  mkdir -p "$FOLDER/$sub"
  if [ "$owner" = - ]; then
    # A pod may have taken the folder over (chown to its own user): then its mode is the pod's business.
    chmod "$mode" "$FOLDER/$sub" 2>/dev/null || [ ! -O "$FOLDER/$sub" ]
  elif [ -z "$(find "$FOLDER/$sub" -maxdepth 0 -user "${{owner%:*}}" -group "${{owner#*:}}" -perm "$mode")" ]; then
    # The host user cannot give a folder away; root in a one-shot container of an image already on
    # the machine can. Recursive: whatever the folder already holds (kept data) follows it.
    echo "blueprint: giving $FOLDER/$sub to $owner (mode $mode) through a one-shot container" >&2
    if ! docker run --rm --network none --user 0 -v "$FOLDER/$sub:/blueprint-volume" --entrypoint sh "$WIPE_IMAGE" \\
        -c 'chown -R "$0" /blueprint-volume && chmod "$1" /blueprint-volume' "$owner" "$mode"; then
      echo "blueprint: could not give $FOLDER/$sub to $owner: is Docker running? Start it and run the up again" >&2
      exit 1
    fi
  fi
done <<SUBFOLDERS
$SUBFOLDERS
SUBFOLDERS
"""
"""Create the folder and its subfolders and claim them; refuse a folder that holds anything else."""

KEEP_SCRIPT = 'echo "blueprint: preserveData=true, keeping $FOLDER" >&2'

WIPE_SCRIPT = f"""\
set -u
{SHELL_QUOTE}
{MOUNTS_INSIDE}
[ -e "$FOLDER" ] || exit 0
# Emptied by an earlier wipe that could not remove the folder itself (a mount point, or in a folder the
# user cannot write): its markers went last, so an empty folder with none is one that wipe finished.
if [ -d "$FOLDER" ] && [ ! -e "$FOLDER/{OWNER_MARKER}" ] && [ ! -L "$FOLDER/{OWNER_MARKER}" ] \\
    && listing=$(ls -A "$FOLDER" 2>/dev/null) && [ -z "$listing" ]; then
  echo "blueprint: $FOLDER is empty and claimed by no stack (an earlier wipe emptied it): nothing to remove" >&2
  exit 0
fi
if [ "$(cat "$FOLDER/{OWNER_MARKER}" 2>/dev/null)" != "$OWNER" ]; then
  echo "blueprint: not removing $FOLDER: its {OWNER_MARKER} does not name $OWNER" >&2
  exit 1
fi
# Another filesystem mounted inside (a bind mount of the same one too, which -xdev cannot tell) is
# not ours to empty: refused before anything is removed.
mounts=$(mounts_inside "$FOLDER")
if [ -n "$mounts" ]; then
  echo "blueprint: not removing $FOLDER: another filesystem is mounted inside it, and blueprint removes nothing" \\
    "from one; unmount it (or move what it holds out of $FOLDER), then run the destroy again:" >&2
  printf '%s\\n' "$mounts" | while IFS= read -r point; do echo "  sudo umount $(quoted "$point")" >&2; done
  exit 1
fi
# Folders claimed inside: those of this owner, and of the owners whose folders belong in this one
# (INNER_OWNERS, one per line: phase2's, in phase1's data folder), go with it. Any other claim (another
# checkout's folder, dev's data folder in phase1's) is refused, before anything is removed: that data is
# not this stack's to remove. A marker that cannot be read, or whose path cannot be, counts as another's.
may_remove() {{
  [ "$1" = "$OWNER" ] && return 0
  # One owner per word: an owner holds no space.
  for inner_owner in ${{INNER_OWNERS:-}}; do
    [ "$1" = "$inner_owner" ] && return 0
  done
  return 1
}}
others=$(find "$FOLDER" -mindepth 2 -xdev -name {OWNER_MARKER} 2>/dev/null | while IFS= read -r inner; do
  may_remove "$(cat "$inner" 2>/dev/null)" || printf '%s\\n' "$inner"
done)
if [ -n "$others" ]; then
  echo "blueprint: not removing $FOLDER, nor anything in it: folders in it are claimed by other stacks or checkouts," \\
    "whose data its wipe would remove with it. Move each out of $FOLDER, or first destroy what claims it (from its" \\
    "own checkout), then run the destroy again:" >&2
  printf '%s\\n' "$others" | while IFS= read -r inner; do
    by=$(head -n 1 "$inner" 2>/dev/null | cut -c 1-120 | tr -cd 'A-Za-z0-9._/@-')
    echo "blueprint: - $(dirname "$inner" | tr -d '[:cntrl:]'), claimed by ${{by:-an unreadable marker}}" >&2
  done
  exit 1
fi
# The markers go last, so a wipe that fails half-way can be run again, and no `up` takes the folder
# over in between. Every find stays on the folder's own filesystem (-xdev), should a mount appear
# meanwhile: it neither removes nor looks into anything mounted inside.
: > "$FOLDER/{WIPING_MARKER}"
left() {{ find "$FOLDER" -mindepth 1 -xdev ! -path "$FOLDER/{OWNER_MARKER}" ! -path "$FOLDER/{WIPING_MARKER}" "$@" 2>/dev/null; }}
left -delete
if [ -n "$(left | head -n 1)" ]; then
  echo "blueprint: removing files owned by pod users in $FOLDER through a one-shot container" >&2
  docker run --rm --network none --user 0 -v "$FOLDER:/blueprint-data" \\
    --entrypoint find "$WIPE_IMAGE" /blueprint-data -mindepth 1 -xdev ! -path /blueprint-data/{OWNER_MARKER} \\
    ! -path /blueprint-data/{WIPING_MARKER} -delete
fi
if [ -n "$(left | head -n 1)" ]; then
  # Both markers stay: the destroy can be run again.
  echo "blueprint: could not remove $FOLDER (is Docker running? files its pods own are removed through it); run the" \\
    "destroy again, or remove it by hand: sudo rm -rf $(quoted "$FOLDER")" >&2
  exit 1
fi
# The half-wipe marker before the claim: a wipe cut short between the two is run again as any other.
rm -f -- "$FOLDER/{WIPING_MARKER}"
rm -f -- "$FOLDER/{OWNER_MARKER}"
if ! why=$(rmdir -- "$FOLDER" 2>&1); then
  if listing=$(ls -A "$FOLDER" 2>/dev/null) && [ -z "$listing" ]; then
    # A mount point (EBUSY), or a folder in a folder the user cannot write (EACCES, as /srv for most users).
    echo "blueprint: emptied $FOLDER, and left it in place, empty, since it cannot be removed itself (${{why##*: }}:" \\
      "a mount point, or a folder in one you cannot write); the next up claims it again as it is" >&2
    exit 0
  fi
  echo "blueprint: could not remove $FOLDER: files appeared in it while it was removed, and it is no longer claimed;" \\
    "look into it, and remove it by hand if nobody needs them: sudo rm -rf $(quoted "$FOLDER")" >&2
  exit 1
fi
"""
"""Remove the folder this stack owns, including what pods wrote as their own users."""


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
    """Keep the folder on destroy (the stack's preserveData)."""
    wipe_image: str
    """An image already on the machine, whose root removes pod-owned files on a wipe and gives
    subfolders to their owners."""
    subfolders: tuple[Subfolder, ...] = ()
    """Folders to create inside."""
    parent_owner: str = ""
    """The owner of the folder this one belongs in (the data folder's, for a folder a stack claims
    inside it), or "" for a folder inside no claimed folder (a data folder): a claim refuses to be
    inside any other owner's folder, whose wipe would remove it."""
    inner_owners: tuple[str, ...] = ()
    """Owners, besides `owner`, whose folders belong inside this one (phase2's, in phase1's data
    folder): a wipe removes their claims with it, and refuses, removing nothing, when it holds anyone else's."""

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
            "SUBFOLDERS": "\n".join(sub.line for sub in args.subfolders),
            # Each only where there is one (none: the scripts' default): other folders' recorded inputs stay as they were.
            **({"PARENT_OWNER": args.parent_owner} if args.parent_owner else {}),
            **({"INNER_OWNERS": "\n".join(args.inner_owners)} if args.inner_owners else {}),
        },
        opts=opts,
    )
