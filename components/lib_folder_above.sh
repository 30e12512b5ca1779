folder_above() {
  # The nearest folder above $1 that has an $OWNER_MARKER, a regular file that is no link (the rule
  # of marker_of), or nothing.
  above=$1
  while [ "$above" != / ]; do
    above=$(dirname "$above")
    if [ -f "$above/$OWNER_MARKER" ] && [ ! -L "$above/$OWNER_MARKER" ]; then printf '%s\n' "$above"; return 0; fi
  done
}
