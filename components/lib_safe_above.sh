safe_above() {
  # Refuse the folder $1 unless every folder above it, from /, is root's or the user's, and none but
  # they may write in it (others_may_write) unless it is sticky (as /tmp: none may rename there what
  # another owns), as OpenSSH's StrictModes: whoever may rename a folder above could swap the whole
  # tree under it. Along the path as written, each folder where a link there leads (find -H), and
  # along the path the links lead to (pwd -P); the folders not made yet, the claim makes, the user's.
  made=$(dirname "$1")
  while [ ! -d "$made" ]; do made=$(dirname "$made"); done
  real=$(cd -P -- "$made" && pwd -P)
  for above in "$made" "$real"; do
    while :; do
      # One look at each folder; a closer one only at a folder it finds.
      if [ -n "$(find -H "$above" -maxdepth 0 \( ! -user 0 ! -user "$(id -u)" \) -o \
          ! -perm -1000 \( -perm -0002 -o -perm -0020 \))" ]; then
        if [ -z "$(find -H "$above" -maxdepth 0 \( -user 0 -o -user "$(id -u)" \))" ]; then
          echo "blueprint: $1 is inside $above, which another user owns, who could swap what it holds (the" \
            "platform's data and secrets); give $OWNER a folder in a place only you and root control (blueprint:dataDir)" >&2
          exit 1
        fi
        fix=$(others_may_write "$above")
        if [ -n "$fix" ]; then
          sudo=
          if [ -n "$(find -H "$above" -maxdepth 0 ! -user "$(id -u)")" ]; then sudo="sudo "; fi
          echo "blueprint: $1 is inside $above, which others than you may write in, who could swap what it holds" \
            "(the platform's data and secrets); give $OWNER a folder where only you and root may write" \
            "(blueprint:dataDir), or make this one yours alone (or root's), then run the up again:" >&2
          echo "  ${sudo}chmod $fix $(quoted "$above")" >&2
          exit 1
        fi
      fi
      [ "$above" != / ] || break
      above=$(dirname "$above")
    done
    [ "$real" != "$made" ] || break
  done
}
