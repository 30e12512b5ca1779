# Keep $FOLDER (PRESERVE_DATA=true), or remove it, which $OWNER claimed, and what pods wrote in it
# (PRESERVE_DATA=false) (components/host_folder.py, on destroy); reads too WIPE_IMAGE, OWNER_MARKER,
# WIPING_MARKER, LAYOUT_MARKER and INNER_OWNERS (empty but for a data folder).
set -u
case "$PRESERVE_DATA" in
  true)
    # Kept whole, or not said kept: a wipe cut short already removed the secrets beside the databases.
    if [ -e "$FOLDER/$WIPING_MARKER" ]; then
      echo "blueprint: not keeping $FOLDER: a wipe of it stopped half-way, so its data is partly gone; finish the" \
        "wipe: run the destroy again with the data wiped (uv run blueprint destroy --wipe-data)" >&2
      exit 1
    fi
    echo "blueprint: preserveData=true, keeping $FOLDER" >&2
    exit 0 ;;
  false) ;;
  *) echo "blueprint: not removing $FOLDER: PRESERVE_DATA is neither true nor false" >&2; exit 1 ;;
esac
[ -e "$FOLDER" ] || exit 0
# Emptied by an earlier wipe that could not remove the folder itself (a mount point, or in a folder the
# user cannot write), or was cut short right before: its markers went last, so an empty folder with
# none is one that wipe finished.
if [ -d "$FOLDER" ] && [ ! -e "$FOLDER/$OWNER_MARKER" ] && [ ! -L "$FOLDER/$OWNER_MARKER" ] \
    && listing=$(ls -A "$FOLDER" 2>/dev/null) && [ -z "$listing" ]; then
  rmdir -- "$FOLDER" 2>/dev/null && exit 0
  echo "blueprint: $FOLDER is empty and claimed by no stack (an earlier wipe emptied it): nothing to remove" >&2
  exit 0
fi
if [ "$(marker_of "$FOLDER/$OWNER_MARKER")" != "$OWNER" ]; then
  echo "blueprint: not removing $FOLDER: its $OWNER_MARKER does not name $OWNER" >&2
  exit 1
fi
# Another filesystem mounted inside (a bind mount of the same one too, which -xdev cannot tell) is
# not ours to empty: refused before anything is removed.
refuse_mounts() {
  mounts=$(mounts_inside "$FOLDER")
  [ -n "$mounts" ] || return 0
  echo "blueprint: not removing $FOLDER: another filesystem is mounted inside it, and blueprint removes nothing" \
    "from one; unmount it (or move what it holds out of $FOLDER), then run the destroy again:" >&2
  printf '%s\n' "$mounts" | while IFS= read -r point; do echo "  sudo umount $(quoted "$point")" >&2; done
  exit 1
}
refuse_mounts
# Folders claimed inside: those of this owner, and of the owners whose folders belong in this one
# (INNER_OWNERS, one per line: phase2's, in phase1's data folder), go with it. Any other claim (another
# checkout's folder, dev's data folder in phase1's) is refused, before anything is removed: that data is
# not this stack's to remove. A marker that cannot be read, or whose path cannot be, counts as another's.
may_remove() {
  [ "$1" = "$OWNER" ] && return 0
  # One owner per word: an owner holds no space.
  for inner_owner in $INNER_OWNERS; do
    [ "$1" = "$inner_owner" ] && return 0
  done
  return 1
}
others=$(find "$FOLDER" -mindepth 2 -xdev -name "$OWNER_MARKER" 2>/dev/null | while IFS= read -r inner; do
  may_remove "$(marker_of "$inner")" || printf '%s\n' "$inner"
done)
if [ -n "$others" ]; then
  echo "blueprint: not removing $FOLDER, nor anything in it: folders in it are claimed by other stacks or checkouts," \
    "whose data its wipe would remove with it. Move each out of $FOLDER, or first destroy what claims it (from its" \
    "own checkout), then run the destroy again:" >&2
  printf '%s\n' "$others" | while IFS= read -r inner; do
    by=$(marker_of "$inner" | head -n 1 | cut -c 1-120 | tr -cd 'A-Za-z0-9._/@-')
    echo "blueprint: - $(dirname "$inner" | tr -d '[:cntrl:]'), claimed by ${by:-an unreadable marker}" >&2
  done
  exit 1
fi
# The markers go last, so a wipe that fails half-way can be run again, and no `up` takes the folder
# over in between. Every find stays on the folder's own filesystem (-xdev), should a mount appear
# meanwhile: it neither removes nor looks into anything mounted inside.
: > "$FOLDER/$WIPING_MARKER"
left() {
  find "$FOLDER" -mindepth 1 -xdev ! -path "$FOLDER/$OWNER_MARKER" ! -path "$FOLDER/$WIPING_MARKER" ! -path "$FOLDER/$LAYOUT_MARKER" \
    "$@" 2>/dev/null
}
left -delete
if [ -n "$(left | head -n 1)" ]; then
  echo "blueprint: removing files owned by pod users in $FOLDER through a one-shot container" >&2
  docker run --rm --network none --user 0 -v "$FOLDER:/blueprint-data" \
    --entrypoint find "$WIPE_IMAGE" /blueprint-data -mindepth 1 -xdev ! -path "/blueprint-data/$OWNER_MARKER" \
    ! -path "/blueprint-data/$WIPING_MARKER" ! -path "/blueprint-data/$LAYOUT_MARKER" -delete
fi
if [ -n "$(left | head -n 1)" ]; then
  # The markers stay: the destroy can be run again. A mount that appeared meanwhile is said as one:
  # `rm -rf` would remove what it holds.
  refuse_mounts
  echo "blueprint: could not remove $FOLDER (is Docker running? files its pods own are removed through it); run the" \
    "destroy again, or remove it by hand:" >&2
  echo "  sudo rm -rf $(quoted "$FOLDER")" >&2
  exit 1
fi
# The half-wipe marker, then the layout record, then the claim: a wipe cut short between them is run
# again as any other.
rm -f -- "$FOLDER/$WIPING_MARKER"
rm -f -- "$FOLDER/$LAYOUT_MARKER"
rm -f -- "$FOLDER/$OWNER_MARKER"
if ! why=$(rmdir -- "$FOLDER" 2>&1); then
  if listing=$(ls -A "$FOLDER" 2>/dev/null) && [ -z "$listing" ]; then
    # A mount point (EBUSY), or a folder in a folder the user cannot write (EACCES, as /srv for most users).
    echo "blueprint: emptied $FOLDER, and left it in place, empty, since it cannot be removed itself (${why##*: }:" \
      "a mount point, or a folder in one you cannot write); the next up claims it again as it is" >&2
    exit 0
  fi
  refuse_mounts
  echo "blueprint: could not remove $FOLDER: files appeared in it while it was removed, and it is no longer claimed;" \
    "look into it, and remove it by hand if nobody needs them:" >&2
  echo "  sudo rm -rf $(quoted "$FOLDER")" >&2
  exit 1
fi
