# Keep $FOLDER (PRESERVE_DATA=true, or the stack file STACK_FILE says so now), or remove it, which $OWNER
# claimed, and what pods wrote in it (components/host_folder.py, on destroy); reads too WIPE_IMAGE,
# OWNER_MARKER, WIPING_MARKER, LAYOUT_MARKER, FINISHING_DESTROYS, CONFIG_PYTHON and INNER_OWNERS.
set -u
umask go-w
# The destroy that removes this folder, run again, finishes a wipe of it that stopped half-way.
finish="  $(finishing_destroy "$OWNER")"
keep() {
  # Kept whole, or not said kept: a wipe cut short already removed the secrets beside the databases.
  if [ -e "$FOLDER/$WIPING_MARKER" ] || [ -L "$FOLDER/$WIPING_MARKER" ]; then
    echo "blueprint: not keeping $FOLDER: a wipe of it stopped half-way, so its data is partly gone; finish the wipe:" >&2
    echo "$finish" >&2
    exit 1
  fi
  echo "blueprint: $1, keeping $FOLDER" >&2
  exit 0
}
case "$PRESERVE_DATA" in
  true)
    [ -e "$FOLDER" ] || { echo "blueprint: preserveData=true, but $FOLDER is not there (removed by hand?): nothing to keep" >&2; exit 0; }
    keep "preserveData=true" ;;
  false) ;;
  *) echo "blueprint: not removing $FOLDER: PRESERVE_DATA is neither true nor false" >&2; exit 1 ;;
esac
[ -e "$FOLDER" ] || exit 0
# Nothing through a link the folder became: Docker would mount, and empty as root, where it leads.
if [ -L "$FOLDER" ]; then
  echo "blueprint: not removing $FOLDER: it is a symbolic link now (to $(readlink -- "$FOLDER" | tr -d '[:cntrl:]')), and blueprint" \
    "removes nothing through a link; put the folder back in its place, then run the destroy again" >&2
  exit 1
fi
# A plain `pulumi destroy` runs this as the last `up` recorded it: a `pulumi config set` since may say keep;
# wiped on a plain false or nothing said, as anything else (a warning beside the answer too) is no answer.
if ! now=$(stack_preserve_data); then
  echo "blueprint: not removing $FOLDER: cannot tell what $STACK_FILE says of blueprint:preserveData ($now)," \
    "and it may say to keep the data; fix that, then run the destroy again" >&2
  exit 1
fi
case $now in
  true) keep "$(basename "$STACK_FILE") says blueprint:preserveData true (set since the last up, which recorded false)" ;;
  false | "") ;;
  *) echo "blueprint: not removing $FOLDER: $STACK_FILE gave no plain true or false ($(printf %s "$now" | tr -d '[:cntrl:]' | cut -c 1-300)); fix that, then run the destroy again" >&2; exit 1 ;;
esac
# Emptied by an earlier wipe that could not remove the folder itself (a mount point, a folder the user cannot
# write), or cut short right before: its markers went last, so an empty folder with none is one that wipe finished.
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
refuse_mounts  # both refused before anything is removed
refuse_inner_claims
# The markers go last, so a wipe that fails half-way can be run again, and no `up` takes the folder
# over in between (the program refuses it: providers/host_secret.py). Every find stays on the
# folder's own filesystem (-xdev), should a mount appear meanwhile: it neither removes nor looks
# into anything mounted inside.
write_new "$FOLDER/$WIPING_MARKER" "$OWNER" || exit 1
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
  # The markers stay: the destroy can be run again. A mount that appeared meanwhile is said as one.
  refuse_mounts
  echo "blueprint: could not remove $FOLDER: the files its pods own are removed through Docker (is it running?);" \
    "start Docker, then finish the wipe:" >&2
  echo "$finish" >&2
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
  echo "blueprint: could not remove $FOLDER: files appeared in it while it was removed, and it is no longer claimed," \
    "so what it holds is not blueprint's to remove; look into it, and remove what nobody needs:" >&2
  echo "  ls -lA -- $(quoted "$FOLDER")" >&2
  exit 1
fi
