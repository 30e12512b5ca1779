refuse_inner_claims() {
  # Refuse to remove anything of $FOLDER while a folder in it is claimed by another than $OWNER and the
  # owners whose folders belong in it (INNER_OWNERS, one a line: phase2's, in phase1's data folder):
  # that data (another checkout's folder, dev's data folder in phase1's) is not this stack's to remove.
  # A claim is a regular file (marker_of's rule): a folder or a link of that name (an object a pod
  # stored under that key) claims nothing. A marker that cannot be read counts as another's; what it
  # says is shown only from a folder of the user's own (never what a pod's folder holds).
  others=$(find "$FOLDER" -mindepth 2 -xdev -type f -name "$OWNER_MARKER" 2>/dev/null | while IFS= read -r inner; do
    claimed=$(marker_of "$inner")
    mine=no
    # One owner per word: an owner holds no space.
    for inner_owner in "$OWNER" $INNER_OWNERS; do [ "$claimed" != "$inner_owner" ] || mine=yes; done
    [ "$mine" = yes ] || printf '%s\n' "$inner"
  done)
  [ -n "$others" ] || return 0
  echo "blueprint: not removing $FOLDER, nor anything in it: folders in it are claimed by other stacks or checkouts," \
    "whose data its wipe would remove with it. Move each out of $FOLDER, or first destroy what claims it (from its" \
    "own checkout), then run the destroy again:" >&2
  printf '%s\n' "$others" | while IFS= read -r inner; do
    holder=$(dirname "$inner")
    by="a marker in a folder another user owns"
    if [ -n "$(find "$holder" -maxdepth 0 -user "$(id -u)")" ]; then by=$(shown "$(marker_of "$inner")"); fi
    echo "blueprint: - $(printf '%s' "$holder" | tr -d '[:cntrl:]'), claimed by ${by:-an unreadable marker}" >&2
  done
  exit 1
}
