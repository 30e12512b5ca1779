quoted() {
  # $1 as Python's shlex.quote prints it (single-quoted unless it holds only safe characters): every
  # command a script prints for the user quotes its paths and names so.
  case "$1" in
    "" | *[!A-Za-z0-9@%+=:,./_-]*) printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\"'\"'/g")" ;;
    *) printf '%s' "$1" ;;
  esac
}
