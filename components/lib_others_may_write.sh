others_may_write() {
  # The chmod that leaves the folder $1 (where a link there leads) writable by no one but its owner,
  # and its group when that is the user's own: "g-w,o-w", or "o-w" when only anyone may write; nothing
  # when none but they may. Its group may write only when it is the user's primary group (`id -g`)
  # named as the user (`id -gn` = `id -un`): a user-private group (Debian, Fedora: umask 002), never a
  # shared one (macOS's staff, SUSE's users), whose every member could swap what the folder holds.
  # The CLI's rule for its own folders is the same (cli/tools_path.py, `others_may_write`).
  if [ "$(id -gn 2>/dev/null)" = "$(id -un)" ]; then
    group=$(find -H "$1" -maxdepth 0 -perm -0020 ! -group "$(id -g)")
  else
    group=$(find -H "$1" -maxdepth 0 -perm -0020)
  fi
  if [ -n "$group" ]; then
    echo g-w,o-w
  elif [ -n "$(find -H "$1" -maxdepth 0 -perm -0002)" ]; then
    echo o-w
  fi
}
