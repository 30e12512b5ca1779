write_new() {
  # Write the line $2 into the file $1 (mode 0644) as a new file, renamed over it: a write cut short
  # leaves the old file or the new one, never part of one, and never writes through a link left at
  # its name (a rename replaces the link itself; mv would move the file into a folder a link names).
  # The draft is hidden beside it, where no `*` finds it.
  if [ -L "$1" ]; then rm -f -- "$1"; fi
  if [ -e "$1" ] && [ ! -f "$1" ]; then
    echo "blueprint: $1 is not a file; blueprint writes it only as one" >&2
    exit 1
  fi
  name=$(basename "$1")
  draft=$(mktemp "$(dirname "$1")/.${name#.}.XXXXXX")
  printf '%s\n' "$2" > "$draft"
  chmod 0644 "$draft"
  mv -f -- "$draft" "$1"
}
