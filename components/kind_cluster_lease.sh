# Write the lease of $USER_STACK in $DATA_DIR/$LEASES_FOLDER: it has resources on the cluster (components/kind_cluster.py).
set -eu
users="$DATA_DIR/$LEASES_FOLDER"
if [ -L "$users" ]; then
  echo "blueprint: $users is a symbolic link; blueprint writes no lease through one" >&2
  exit 1
fi
mkdir -p "$users"
# A new file renamed into place: never written through a link someone left at the lease's name.
lease="$users/$(printf '%s' "$USER_STACK" | tr -c 'A-Za-z0-9._-' '_')"
if [ -L "$lease" ]; then rm -f -- "$lease"; fi  # mv would move the lease into a linked folder
if [ -e "$lease" ] && [ ! -f "$lease" ]; then
  echo "blueprint: $lease is not a file; blueprint writes its lease only as one" >&2
  exit 1
fi
draft=$(mktemp "$users/.lease.XXXXXX")
printf '%s\n' "$USER_STACK" > "$draft"
mv -f "$draft" "$lease"
