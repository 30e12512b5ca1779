marker_of() {
  # What the marker $1 says: its first 512 bytes, read only from a regular file (a link to one too),
  # never from a FIFO, which would block the read, nor from a device, which may never end.
  if [ -f "$1" ]; then head -c 512 -- "$1" 2>/dev/null || true; fi
}
