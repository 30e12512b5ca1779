# Claim $FOLDER for $OWNER, record its data's layout $BLUEPRINT_LAYOUT in it and make its $SUBFOLDERS
# (components/host_folder.py, on up); reads too WIPE_IMAGE, OWNER_MARKER, WIPING_MARKER, LAYOUT_MARKER and
# PARENT_OWNER (empty but for a folder inside a data folder).
set -eu
marker="$FOLDER/$OWNER_MARKER"
# Every folder up from this one: the one being wiped may be any folder this one is inside.
wiped=$FOLDER
while :; do
  if [ -e "$wiped/$WIPING_MARKER" ]; then
    echo "blueprint: a destroy that removes $wiped stopped half-way, so its secrets may be gone while its" \
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
  holder=$(marker_of "$container/$OWNER_MARKER")
  if [ "$holder" != "$PARENT_OWNER" ]; then
    held=$(printf '%s' "$holder" | head -n 1 | cut -c 1-120 | tr -cd 'A-Za-z0-9._/@-')
    if [ -z "$PARENT_OWNER" ]; then
      echo "blueprint: $FOLDER is inside $container, which ${held:-another stack} claimed: a destroy of that one would" \
        "remove this one with it; give $OWNER a folder outside every folder blueprint claimed (blueprint:dataDir)" >&2
    else
      echo "blueprint: $FOLDER is inside $container, which ${held:-nobody blueprint knows} claimed, not $PARENT_OWNER," \
        "in whose data folder it belongs; give that data folder a place of its own (blueprint:dataDir)" >&2
    fi
    exit 1
  fi
elif [ -n "$PARENT_OWNER" ]; then
  echo "blueprint: $FOLDER belongs in the data folder $PARENT_OWNER claims, and no folder above it is claimed:" \
    "bring that stack up first (uv run blueprint up)" >&2
  exit 1
fi
first=no
if [ -f "$marker" ]; then
  claimed=$(marker_of "$marker")
  if [ "$claimed" != "$OWNER" ]; then
    # Shown only, with a stack name's characters: the folder may be one that the nodes mount.
    shown=$(printf '%s' "$claimed" | head -n 1 | cut -c 1-120 | tr -cd 'A-Za-z0-9._/@-')
    echo "blueprint: $FOLDER belongs to $shown; give $OWNER its own folder (blueprint:dataDir)" >&2
    case "$claimed" in
      "${OWNER%@*}@"*) echo "blueprint: (that is this stack in another checkout: each checkout has its own id, in" \
        ".pulumi-state/blueprint-checkout-id, and never takes over or removes another's data)" >&2 ;;
    esac
    exit 1
  fi
# Only blueprint's layout record (left by nothing blueprint does, yet no one else's file) counts as empty.
elif [ -d "$FOLDER" ] && [ -n "$(find "$FOLDER" -mindepth 1 -maxdepth 1 ! -name "$LAYOUT_MARKER" | head -n 1)" ]; then
  echo "blueprint: $FOLDER holds files blueprint did not write, which a destroy would remove;" \
    "use a new or empty folder (blueprint:dataDir)" >&2
  exit 1
else
  first=yes
fi
# The user's alone (a group may write in it: umask 002), with the mode $2 when given: another user who
# owns a folder, or anyone who may write in it, could swap what it holds under the platform.
yours_alone() {
  if [ -n "$(find "$1" -maxdepth 0 ! -user "$(id -u)")" ]; then
    echo "blueprint: $1 belongs to another user, who could swap what it holds (the platform's data and" \
      "secrets); give $OWNER a folder of your own (blueprint:dataDir)" >&2
    exit 1
  fi
  [ -z "${2:-}" ] || chmod "$2" "$1"
  if [ -n "$(find "$1" -maxdepth 0 -perm -0002)" ]; then
    echo "blueprint: anyone may write in $1, and swap what it holds (the platform's data and secrets); make it" \
      "yours alone, then run the up again:" >&2
    echo "  chmod o-w $(quoted "$1")" >&2
    exit 1
  fi
}
mkdir -p "$FOLDER"
yours_alone "$FOLDER"
if [ "$first" = yes ]; then
  # The first claim of a new or empty folder makes the marker only if none exists yet (noclobber opens
  # it with O_EXCL): of two claims at the same moment, one wins and the other refuses.
  if ! (set -C; printf '%s\n' "$OWNER" > "$marker") 2>/dev/null; then
    [ -f "$marker" ] || { echo "blueprint: cannot write $marker" >&2; exit 1; }
    winner=$(marker_of "$marker" | head -n 1 | cut -c 1-120 | tr -cd 'A-Za-z0-9._/@-')
    if [ "$winner" != "$OWNER" ]; then
      echo "blueprint: $FOLDER was claimed by ${winner:-another up} at the same moment;" \
        "give $OWNER its own folder (blueprint:dataDir)" >&2
      exit 1
    fi
  fi
elif [ -L "$marker" ]; then
  # Rewritten as a new file (noclobber: O_EXCL), never through a link left at its name.
  rm -f -- "$marker"
  (set -C; printf '%s\n' "$OWNER" > "$marker") 2>/dev/null || { echo "blueprint: cannot write $marker" >&2; exit 1; }
fi
# The folder is ours now: record the layout (the program migrated the data to it before anything ran).
# A draft renamed over the record, so a claim cut short leaves the old record or the new, never none;
# rename replaces a link left at its name, but mv would move the draft into a folder a link names.
layout="$FOLDER/$LAYOUT_MARKER"
if [ -L "$layout" ]; then rm -f -- "$layout"; fi
if [ -e "$layout" ] && [ ! -f "$layout" ]; then
  echo "blueprint: $layout is not a file; blueprint records the layout of the data only in one" >&2
  exit 1
fi
draft=$(mktemp "$FOLDER/$LAYOUT_MARKER.XXXXXX")
printf '%s\n' "$BLUEPRINT_LAYOUT" > "$draft"
chmod 0644 "$draft"
mv -f -- "$draft" "$layout"
# One line per subfolder: `<path> <mode> <uid>:<gid>`, or `-` for the host user.
while read -r sub mode ids; do
  [ -n "$sub" ] || continue
  mkdir -p "$FOLDER/$sub"
  if [ "$ids" = - ]; then
    # blueprint's own, as the folder is (what pods own has ids): the user's, with its mode.
    yours_alone "$FOLDER/$sub" "$mode"
  elif [ -z "$(find "$FOLDER/$sub" -maxdepth 0 -user "${ids%:*}" -group "${ids#*:}" -perm "$mode")" ]; then
    # The host user cannot give a folder away; root in a one-shot container of an image already on
    # the machine can. Recursive: whatever the folder already holds (kept data) follows it.
    echo "blueprint: giving $FOLDER/$sub to $ids (mode $mode) through a one-shot container" >&2
    if ! docker run --rm --network none --user 0 -v "$FOLDER/$sub:/blueprint-volume" --entrypoint sh "$WIPE_IMAGE" \
        -c 'chown -R "$0" /blueprint-volume && chmod "$1" /blueprint-volume' "$ids" "$mode"; then
      echo "blueprint: could not give $FOLDER/$sub to $ids: is Docker running? Start it and run the up again" >&2
      exit 1
    fi
  fi
done <<SUBFOLDERS
$SUBFOLDERS
SUBFOLDERS
