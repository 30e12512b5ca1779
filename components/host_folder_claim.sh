# Claim $FOLDER for $OWNER, record its data's layout $BLUEPRINT_LAYOUT in it and make its $SUBFOLDERS
# (components/host_folder.py, on up; the program refused any folder a wipe left half-way before this
# runs, providers/host_secret.py); reads too WIPE_IMAGE, OWNER_MARKER, LAYOUT_MARKER and PARENT_OWNER.
set -eu
marker="$FOLDER/$OWNER_MARKER"
# A umask of at least 022, whatever the user's: nothing it makes is another user's to write in.
umask go-w
safe_above "$FOLDER"
# The folder the user's alone before its marker is read: a marker another user left must not be.
if [ -d "$FOLDER" ]; then yours_alone "$FOLDER"; fi
claim=$(claimable)
mkdir -p "$FOLDER"
yours_alone "$FOLDER"
if [ "$claim" = first ]; then
  # The first claim of a new or empty folder makes the marker only if none exists yet (noclobber opens
  # it with O_EXCL): of two claims at the same moment, one wins and the other refuses.
  if ! (set -C; printf '%s\n' "$OWNER" > "$marker") 2>/dev/null; then
    [ -f "$marker" ] || { echo "blueprint: cannot write $marker" >&2; exit 1; }
    winner=$(shown "$(marker_of "$marker")")
    if [ "$winner" != "$OWNER" ]; then
      echo "blueprint: $FOLDER was claimed by ${winner:-another up} at the same moment;" \
        "give $OWNER its own folder (blueprint:dataDir)" >&2
      exit 1
    fi
  fi
fi
# The folder is ours now: record the layout (the program migrated the data to it before anything ran).
write_new "$FOLDER/$LAYOUT_MARKER" "$BLUEPRINT_LAYOUT"
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
