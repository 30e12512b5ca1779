refuse_mounts() {
  # Refuse to remove anything of $FOLDER while another filesystem is mounted inside it (a bind mount
  # of the same one too, which -xdev cannot tell): not blueprint's to empty.
  mounts=$(mounts_inside "$FOLDER")
  [ -n "$mounts" ] || return 0
  echo "blueprint: not removing $FOLDER: another filesystem is mounted inside it, and blueprint removes nothing" \
    "from one; unmount it (or move what it holds out of $FOLDER), then run the destroy again:" >&2
  printf '%s\n' "$mounts" | while IFS= read -r point; do echo "  sudo umount $(quoted "$point")" >&2; done
  exit 1
}
