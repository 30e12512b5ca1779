# Point containerd at the mirrors: a hosts.toml per registry under $HOSTS_DIR (components/image_cache.py).
set -eu
umask go-w
# One per registry of $REGISTRIES, whose text is in $HOSTS_TOML_<registry> (with `_` for `.` and `-`).
for registry in $REGISTRIES; do
  toml=$(printenv "HOSTS_TOML_$(printf '%s' "$registry" | tr .- __)")
  mkdir -p "$HOSTS_DIR/$registry"
  printf '%s\n' "$toml" > "$HOSTS_DIR/$registry/hosts.toml"
done
