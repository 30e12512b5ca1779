cluster_data_folder() {
  # The data folder whose subfolders the nodes of the kind cluster $1 mount at NODE_DATA_PATH, as
  # Docker says of its control plane's mounts; nothing when Docker cannot say.
  docker inspect --format '{{range .Mounts}}{{println .Destination .Source}}{{end}}' "$1-control-plane" 2>/dev/null |
    while read -r destination source; do
      case "$destination" in "$NODE_DATA_PATH"/*) dirname "$source"; break ;; esac
    done
}
