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

A folder that an older layout kept elsewhere (phase2's volumes, inside its platform folder before
the nodes stopped mounting the whole data folder) is moved into place by the `up` that claims it,
once Docker shows that no container can still be writing there (MOVE_LEGACY), and only by a rename
on one filesystem. A marker of that layout, naming the stack alone, is not claimed for this checkout
while that layout's cluster still mounts the whole data folder (EARLIER_CLUSTER).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pulumi
from pulumi_command import local

from providers.host_secret import WIPING_MARKER

OWNER_MARKER = ".blueprint-owner"
"""File in an owned folder naming the owner, `<project>/<stack>@<checkout id>` (`stacks.config.folder_owner`):
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

OWNER_ABOVE = f"""folder_above() {{
  # The nearest folder above $1 that has a {OWNER_MARKER}, or nothing.
  above=$1
  while [ "$above" != / ]; do
    above=$(dirname "$above")
    if [ -f "$above/{OWNER_MARKER}" ]; then printf '%s\\n' "$above"; return 0; fi
  done
}}
owner_above() {{
  # What the {OWNER_MARKER} of the nearest folder above $1 that has one holds, or nothing.
  above=$(folder_above "$1")
  [ -z "$above" ] || cat "$above/{OWNER_MARKER}"
}}
of_this_checkout() {{
  # Whether $1 is `<this project>/<a stack>@<this checkout's id>` exactly: no other checkout writes that id.
  case "$1" in "${{OWNER%%/*}}"/?*@?*) [ "${{1#*@}}" = "${{OWNER#*@}}" ] ;; *) return 1 ;; esac
}}"""
"""Shell functions: the owner of the folder a folder is inside, and whether that is this checkout."""

CONTAINERS_OVER = r"""containers_over() {
  # The containers, running or stopped (a stopped one may be started again), with a mount
  # whose source is $1, a folder $1 is in, or (unless $2 is `above`) a folder in $1, one name per
  # line; fails when Docker does not answer. $1 as written and as the filesystem resolves it:
  # Docker may show either.
  physical=$(cd "$1" 2>/dev/null && pwd -P) || physical=$1
  ids=$(docker ps -aq) || return 1
  tab=$(printf '\t')
  # One container at a time: one that goes away meanwhile (any `docker run --rm`) is skipped, where
  # a single `docker inspect` of them all would fail. Each line: the container's name, a tab, one
  # mount's source. Not in a pipeline, so that `return 1` returns.
  all=""
  for id in $ids; do
    if ! mounts=$(docker inspect --type container \
        --format '{{range .Mounts}}{{$.Name}}{{"\t"}}{{.Source}}{{"\n"}}{{end}}' "$id" 2>&1); then
      # Gone since `docker ps`: the daemon's "No such container: <id>" (moby daemon/errors.go), or the
      # CLI's "no such object" without --type (docker/cli cli/command/system/inspect.go). Anything else
      # (the daemon stopped answering) proves nothing.
      case "$(printf '%s' "$mounts" | tr '[:upper:]' '[:lower:]')" in
        *"no such container"* | *"no such object"*) continue ;;
        *) return 1 ;;
      esac
    fi
    all="$all$mounts
"
  done
  printf '%s' "$all" | while IFS="$tab" read -r name source; do
    [ -n "$source" ] || continue  # a tmpfs has no source (nor has a line that is no mount's)
    source=${source%/}  # `/` itself becomes "", under which every path is
    for path in "$1" "$physical"; do
      case "$path/" in "$source"/*) printf '%s\n' "$name"; break ;; esac
      [ "${2:-}" = above ] && continue
      case "$source/" in "$path"/*) printf '%s\n' "$name"; break ;; esac
    done
  done | tr -cd 'A-Za-z0-9._/\n-' | sed 's|^/||' | sort -u
}"""
"""A shell function that lists the containers whose mounts reach a folder: what may still write there."""

MOVE_LEGACY = f"""\
# An older layout kept this folder's content at LEGACY_PATH. It is moved here whole (a rename, which
# keeps every file's owner), only once nothing can be writing there: LEGACY_PATH is in a folder this
# owner has claimed, this folder does not exist yet (a move onto it would nest one in the other),
# and Docker shows no container, running or stopped, whose mounts reach it.
if [ -n "${{LEGACY_PATH:-}}" ] && {{ [ -e "$LEGACY_PATH" ] || [ -L "$LEGACY_PATH" ]; }}; then
  kept="$LEGACY_PATH holds what an older blueprint kept there, which now belongs in $FOLDER"
  if [ -L "$LEGACY_PATH" ] || [ ! -d "$LEGACY_PATH" ]; then
    echo "blueprint: $kept, but it is not a folder; move it aside and run the up again:" >&2
    echo "  mv -- $(quoted "$LEGACY_PATH") $(quoted "$LEGACY_PATH.old")" >&2
    exit 1
  fi
  if [ "$(head -n 1 "$(dirname "$LEGACY_PATH")/{OWNER_MARKER}" 2>/dev/null)" != "$OWNER" ]; then
    echo "blueprint: $kept; it is moved once $(dirname "$LEGACY_PATH") is claimed by $OWNER, which it is not:" \\
      "run the whole up again (uv run blueprint up)" >&2
    exit 1
  fi
  if [ -e "$FOLDER" ] || [ -L "$FOLDER" ]; then
    echo "blueprint: $kept, and $FOLDER exists too: blueprint moves nothing onto it (one would end up inside the" \\
      "other). Look into both. If $LEGACY_PATH holds the data you keep, remove $FOLDER and run the up again, which" \\
      "moves it there:" >&2
    echo "  sudo rm -rf -- $(quoted "$FOLDER")" >&2
    echo "blueprint: if $FOLDER holds it, move the other aside (a destroy with preserveData=false removes it" \\
      "with $(dirname "$LEGACY_PATH")):" >&2
    echo "  mv -- $(quoted "$LEGACY_PATH") $(quoted "$LEGACY_PATH.old")" >&2
    exit 1
  fi
  if [ ! -d "$(dirname "$FOLDER")" ]; then
    echo "blueprint: $kept, and $(dirname "$FOLDER") does not exist yet: the data folder's claim (phase1) makes it." \\
      "Run the whole up (uv run blueprint up), which brings phase1 up first" >&2
    exit 1
  fi
  if ! users=$(containers_over "$LEGACY_PATH"); then
    echo "blueprint: $kept; blueprint moves it once Docker shows that no container mounts it, and Docker did not" \\
      "answer (docker ps -a): start Docker, then run the up again" >&2
    exit 1
  fi
  if [ -n "$users" ]; then
    # $users unquoted below: one name per word (a name is only A-Za-z0-9._/-).
    echo "blueprint: $kept; blueprint moves it once no container mounts it, and these still do, so their pods may" \\
      "still write there: $(printf '%s ' $users)(the nodes of a kind cluster an older blueprint made" \\
      "over the whole data folder). Take that cluster down, keeping its data (README: \\"Upgrading from an earlier" \\
      "blueprint\\"), then run the up again" >&2
    exit 1
  fi
  # The marker first: a move cut short leaves the folder where it was, claimed as before. Written as a
  # new file (noclobber: O_EXCL), never through a link a pod of the older layout, whose nodes mounted
  # this folder, may have left at its name.
  rm -f -- "$LEGACY_PATH/{OWNER_MARKER}"
  if ! (set -C; printf '%s\\n' "$OWNER" > "$LEGACY_PATH/{OWNER_MARKER}") 2>/dev/null; then
    echo "blueprint: $kept, and blueprint cannot write $LEGACY_PATH/{OWNER_MARKER}, which claims it for the move" >&2
    exit 1
  fi
  # A rename only: across filesystems (`$(dirname "$FOLDER")` a link to another disk) `mv` copies, file
  # by file, which the host user cannot do for folders the pods own (0700), and which, cut short,
  # leaves a copy in part on each side.
  from=$(device_of "$(dirname "$LEGACY_PATH")")
  to=$(device_of "$(dirname "$FOLDER")")
  if [ -z "$from" ] || [ "$from" != "$to" ]; then
    echo "blueprint: $kept, and $(dirname "$FOLDER") is on another filesystem (a link to another disk?), where" \\
      "a move is a copy of every file, which needs root for the files the pods own. Move it as root (every file keeps" \\
      "its owner, and its claim goes with it), then run the up again:" >&2
    echo "  sudo mv -- $(quoted "$LEGACY_PATH") $(quoted "$FOLDER")" >&2
    exit 1
  fi
  echo "blueprint: moving $LEGACY_PATH, where an older blueprint kept it, to $FOLDER (no container mounts it)" >&2
  mv -- "$LEGACY_PATH" "$FOLDER"
fi"""
"""Part of UP_SCRIPT: move an older layout's folder here, or refuse, saying why and what to do."""

DEVICE_OF = r"""device_of() {
  # The device number of the filesystem folder $1 is on (through a link: `$1/.`), or nothing.
  # GNU and BusyBox `stat -c`, else BSD and macOS `stat -f` (where -f is the format, not the filesystem).
  stat -c %d "$1/." 2>/dev/null || stat -f %d "$1/." 2>/dev/null
}"""
"""A shell function that prints which filesystem a folder is on: a rename works within one only."""

LEASES_FOLDER = ".blueprint-on-cluster"
"""Folder, in a data folder, where each stack that keeps resources on the kind cluster over it holds
a file naming itself while it does (`components/kind_cluster.py`, `cluster_lease`)."""

EARLIER_CLUSTER = f"""earlier_cluster_runs() {{
  # For a marker naming the stack alone in the data folder $1 or in a folder inside it: whether a kind
  # cluster of the earlier layout still runs over that folder, a container mounting $1 itself or a folder
  # above it (this layout's nodes mount two folders inside it). Then the marker is not rewritten, nor is
  # the user told to rewrite it: this blueprint does not delete a cluster a platform is on (its lease),
  # and the earlier blueprint, which takes it down, refuses a rewritten marker. $2 = yes: this claim's own
  # state proves the marker its own; with no lease left (`blueprint up` took phase2 down first), this same
  # `up` replaces that cluster next, and Docker is not asked. Says why, and returns 0, when so.
  leases=""
  for lease in "$1/{LEASES_FOLDER}"/*; do
    [ -f "$lease" ] && [ ! -L "$lease" ] || continue
    leases="$leases $(head -n 1 "$lease" | cut -c 1-120 | tr -cd 'A-Za-z0-9._/-')"
  done
  [ "$2" != yes ] || [ -n "$leases" ] || return 1
  if ! nodes=$(containers_over "$1" above); then
    echo "blueprint: $FOLDER was claimed by $shown before blueprint told checkouts apart; blueprint claims it for this" \\
      "checkout once Docker shows that no kind cluster of that earlier blueprint still runs over $1, and Docker did not" \\
      "answer (docker ps -a): start Docker, then run the up again" >&2
    return 0
  fi
  [ -n "$nodes" ] || return 1
  on_it=""
  [ -z "$leases" ] || on_it=", with a platform on it (${{leases# }})"
  # $nodes unquoted below: one name per word (a name is only A-Za-z0-9._/-).
  echo "blueprint: $FOLDER was claimed by $shown before blueprint told checkouts apart, and a kind cluster of that" \\
    "earlier blueprint still mounts the whole data folder $1: $(printf '%s ' $nodes)(its nodes)$on_it." \\
    "Its marker is not to be rewritten, by blueprint or by hand, while that cluster runs: this" \\
    "blueprint does not delete a cluster a platform is on, and the earlier blueprint, which takes it down, refuses a" \\
    "rewritten marker. Take that platform and its cluster down first, keeping the data: dev with the blueprint you ran" \\
    "before (README: \\"Upgrading from an earlier blueprint\\"), the phase stacks with 'uv run blueprint up', which does" \\
    "it for you. Then run the up again" >&2
  return 0
}}"""
"""A shell function that refuses to claim a folder of the earlier layout for this checkout while that
layout's cluster still runs over it."""

UP_SCRIPT = f"""\
set -eu
claim=new
{SHELL_QUOTE}
{OWNER_ABOVE}
{CONTAINERS_OVER}
{DEVICE_OF}
{EARLIER_CLUSTER}
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
    if [ -n "${{PARENT_OWNER:-}}" ] && [ "$holder" = "${{PARENT_OWNER%@*}}" ]; then
      echo "blueprint: $FOLDER is inside $container, which $held claimed as an earlier blueprint did, before" \\
        "blueprint told checkouts apart: that stack's own up claims it for this checkout first; run the whole up" \\
        "(uv run blueprint up)" >&2
    elif [ -z "${{PARENT_OWNER:-}}" ]; then
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
{MOVE_LEGACY}
first=no
if [ -f "$marker" ]; then
  claimed=$(cat "$marker")
  # Shown only, with a stack name's characters: the folder is one that the nodes mount.
  shown=$(printf '%s' "$claimed" | head -n 1 | cut -c 1-120 | tr -cd 'A-Za-z0-9._/@-')
  # The folder this state claimed, as its last `up` printed it (none from versions that printed none).
  previous=$(printf '%s\\n' "${{PULUMI_COMMAND_STDOUT:-}}" | head -n 1)
  proven=no
  if [ "$claim" = recorded ] && [ -n "$previous" ] && [ "$previous" = "$FOLDER" ]; then proven=yes; fi
  if [ "$claimed" = "${{OWNER%@*}}" ] && earlier_cluster_runs "${{container:-$FOLDER}}" "$proven"; then
    exit 1
  elif [ "$claimed" = "${{OWNER%@*}}" ] && [ "$proven" = yes ]; then
    : # claimed by this stack's state, of this very folder, before owners named their checkout: from now on, the marker does
  elif [ "$claimed" = "${{OWNER%@*}}" ] && of_this_checkout "$(owner_above "$FOLDER")"; then
    : # the same, inside a data folder this checkout owns (an upgrade's `up` takes phase2 down for the
    # cluster change, so its state no longer holds the claim): another checkout could not have claimed a folder in there
  elif [ "$claimed" = "${{OWNER%@*}}" ]; then
    echo "blueprint: $FOLDER was claimed by $shown before blueprint told checkouts apart, so it may be another" \\
      "checkout's, whose data a destroy of this one would remove; give this stack its own folder (blueprint:dataDir)." \\
      "If it is this checkout's own (kept by a destroy with preserveData), claim it for this checkout and run again:" >&2
    echo "  echo $(quoted "$OWNER") > $(quoted "$marker")" >&2
    if [ "$claim" = recorded ] && [ -z "$previous" ]; then
      echo "blueprint: (this stack's state, written by an earlier blueprint, does not say which folder it claimed;" \\
        "uv run blueprint up reads that from the state, and takes the folder over itself when it is this one)" >&2
    fi
    exit 1
  elif [ "$claimed" != "$OWNER" ]; then
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
elif [ -L "$marker" ] || [ "$claimed" != "$OWNER" ]; then
  # Rewritten as a new file (noclobber: O_EXCL), never through a link left at its name.
  rm -f -- "$marker"
  (set -C; printf '%s\\n' "$OWNER" > "$marker") 2>/dev/null || {{ echo "blueprint: cannot write $marker" >&2; exit 1; }}
fi
printf '%s\\n' "$FOLDER"  # stdout, recorded in the state: the claim an `update` finds (PULUMI_COMMAND_STDOUT)
# One line per subfolder: `<path> <mode> <uid>:<gid>`, or `-` for the host user.
while read -r sub mode owner; do
  [ -n "$sub" ] || continue
  mkdir -p "$FOLDER/$sub"
  if [ "$owner" = - ]; then
    # A pod may have taken the folder over (chown to its own user): then its mode is the pod's business.
    chmod "$mode" "$FOLDER/$sub" 2>/dev/null || [ ! -O "$FOLDER/$sub" ]
  elif [ -z "$(find "$FOLDER/$sub" -maxdepth 0 -user "${{owner%:*}}" -group "${{owner#*:}}" -perm "$mode")" ]; then
    # The host user cannot give a folder away; root in a one-shot container of an image already on
    # the machine can. Recursive: data an older version wrote as another user follows its folder.
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

RECLAIM_SCRIPT = UP_SCRIPT.replace("\nclaim=new\n", "\nclaim=recorded\n", 1)
"""UP_SCRIPT as `update` runs it, for a claim the stack's state records: a marker that names the
stack alone, as markers did before they named the checkout, is this stack's own when the state
claimed this very folder (pulumi-command passes the last run's stdout, which names it, as
PULUMI_COMMAND_STDOUT: provider/pkg/provider/local/commandOutputs.go, `AddPreviousOutputInEnv`), and
is rewritten. pulumi-command gives `update` the new inputs and the old outputs only, never the old
inputs (commandController.go, `Update`), and an earlier blueprint's script printed nothing: for such
a state `blueprint up` records, as its stdout, the folder its recorded inputs name
(`cli.lifecycle.record_claims`); with no stdout at all, this proof is missing. Any claim rewrites such
a marker too when the folder is inside a data folder whose marker names this checkout's id
(phase2's folders, after an upgrade took phase2 down and phase1 upgraded its own marker). Any other
claim, a claim moved to another folder among them, refuses such a folder: it may be another
checkout's."""

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
# checkout's folder, dev's data folder in phase1's, claimed before claims looked above them) is refused,
# before anything is removed: that data is not this stack's to remove. A marker that cannot be read, or
# whose path cannot be, counts as another's.
may_remove() {{
  [ "$1" = "$OWNER" ] && return 0
  # One owner per word: an owner holds no space. Also as the earlier blueprint wrote it, the stack alone
  # (phase2's folders not claimed again since the upgrade); only a data folder's claim, never one of
  # those, could have made another checkout's folders nest in here, and that one is refused.
  for inner_owner in ${{INNER_OWNERS:-}}; do
    {{ [ "$1" = "$inner_owner" ] || [ "$1" = "${{inner_owner%@*}}" ]; }} && return 0
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
    """`<project>/<stack>@<checkout id>` of the owning stack (`stacks.config.folder_owner`)."""
    preserve: pulumi.Input[bool]
    """Keep the folder on destroy (the stack's preserveData)."""
    wipe_image: str
    """An image already on the machine, whose root removes pod-owned files on a wipe and gives
    subfolders to their owners."""
    subfolders: tuple[Subfolder, ...] = ()
    """Folders to create inside."""
    legacy_path: str | None = None
    """Absolute path where an older layout kept what now belongs in this folder: an `up` that finds it
    moves it here (MOVE_LEGACY says when), or stops and says why, so no data is silently left behind."""
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
        if self.legacy_path is not None and not self.legacy_path.startswith("/"):
            raise ValueError(f"legacy_path must be absolute, got {self.legacy_path!r}")
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
        update=RECLAIM_SCRIPT,
        delete=pulumi.Output.from_input(args.preserve).apply(lambda keep: KEEP_SCRIPT if keep else WIPE_SCRIPT),
        environment={
            "FOLDER": args.path,
            "OWNER": args.owner,
            "WIPE_IMAGE": args.wipe_image,
            "SUBFOLDERS": "\n".join(sub.line for sub in args.subfolders),
            # Each only where there is one (none: the scripts' default): other folders' recorded inputs stay as they were.
            **({"LEGACY_PATH": args.legacy_path} if args.legacy_path else {}),
            **({"PARENT_OWNER": args.parent_owner} if args.parent_owner else {}),
            **({"INNER_OWNERS": "\n".join(args.inner_owners)} if args.inner_owners else {}),
        },
        opts=opts,
    )
