# Write the lease of $USER_STACK in $DATA_DIR/$LEASES_FOLDER: it has resources on the cluster (components/kind_cluster.py).
set -eu
umask go-w
users="$DATA_DIR/$LEASES_FOLDER"
if [ -L "$users" ]; then
  echo "blueprint: $users is a symbolic link; blueprint writes no lease through one" >&2
  exit 1
fi
mkdir -p "$users"
write_new "$users/$(printf '%s' "$USER_STACK" | tr -c 'A-Za-z0-9._-' '_')" "$USER_STACK"
