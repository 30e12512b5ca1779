mounts_inside() {
  # Mount points strictly inside $1, from the mount table (Linux: field 5 of mountinfo, with a space
  # written as \040, which printf %b reads back; macOS: `mount`, "<device> on <path> (<type>, ...)").
  if [ -r /proc/self/mountinfo ]; then
    awk '{ print $5 }' /proc/self/mountinfo | while IFS= read -r point; do printf '%b\n' "$point"; done
  else
    mount | sed -n 's/^.* on \(.*\) (.*)$/\1/p'
  fi | while IFS= read -r point; do
    case "$point" in "$1"/*) printf '%s\n' "$point" ;; esac
  done
}
