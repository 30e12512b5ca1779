finishing_destroy() {
  # The command that finishes a wipe the destroy of the owner $1 (`<project>/<stack>@<checkout id>`)
  # began: its stack's line of FINISHING_DESTROYS (`<stack> <command>`, providers/host_secret.py).
  stack=${1#*/}
  printf '%s\n' "$FINISHING_DESTROYS" | while read -r name command; do
    if [ "$name" = "${stack%%@*}" ]; then printf '%s\n' "$command"; fi
  done
}
