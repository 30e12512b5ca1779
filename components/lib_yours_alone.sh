yours_alone() {
  # Refuse the folder $1 unless it is the user's alone, with the mode $2 when given: another user who
  # owns it, or may write in it (others_may_write), could swap what it holds under the platform.
  if [ -z "$(find -H "$1" -maxdepth 0 -user "$(id -u)")" ]; then
    echo "blueprint: $1 belongs to another user, who could swap what it holds (the platform's data and" \
      "secrets); give $OWNER a folder of your own (blueprint:dataDir)" >&2
    exit 1
  fi
  [ -z "${2:-}" ] || chmod "$2" "$1"
  fix=$(others_may_write "$1")
  [ -n "$fix" ] || return 0
  case "$fix" in
    o-w) echo "blueprint: anyone may write in $1, and swap what it holds (the platform's data and secrets);" \
      "make it yours alone, then run the up again:" >&2 ;;
    *) echo "blueprint: the members of its group, which is not your own user's group, may write in $1, and swap" \
      "what it holds (the platform's data and secrets); make it yours alone, then run the up again:" >&2 ;;
  esac
  echo "  chmod $fix $(quoted "$1")" >&2
  exit 1
}
