marker_of() {
  # What the marker $1 says, by the one rule every reader of a marker keeps, the program's too: its
  # first 512 bytes, read only from a regular file that is no link. Never through a link, which may
  # name any file the user can read (a secret) for a message to show; never from a FIFO, which would
  # block the read, nor from a device, which may never end. A read that does not end within 5
  # seconds (a FIFO swapped in after the test) is given up: the marker says nothing.
  if [ -f "$1" ] && [ ! -L "$1" ]; then
    head -c 512 -- "$1" 2>/dev/null &
    reader=$!
    (sleep 5; kill "$reader") >/dev/null 2>&1 &
    watchdog=$!
    wait "$reader" || true
    kill "$watchdog" 2>/dev/null || true
  fi
}
