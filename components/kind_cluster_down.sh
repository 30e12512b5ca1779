# Delete the kind cluster $KIND_CLUSTER_NAME over $DATA_DIR unless a stack holds a lease in
# $DATA_DIR/$LEASES_FOLDER (components/kind_cluster.py); reads too CLUSTER_MARKER and NODE_DATA_PATH.
set -eu
held=""
for lease in "$DATA_DIR/$LEASES_FOLDER"/*; do
  [ -f "$lease" ] && [ ! -L "$lease" ] || continue  # no lease (the pattern itself), or not one of ours
  stack=$(shown "$(marker_of "$lease")")
  held=yes
  echo "blueprint: $stack still has its platform on the kind cluster $KIND_CLUSTER_NAME, which this would delete" \
    "(a destroy, or a change of clusterName, dataDir, the node counts or the ports, which replaces the cluster)." >&2
  case "$stack" in
    */dev) echo "blueprint: dev cannot take its own platform down half-way, as 'uv run blueprint up' does for the" \
        "phase stacks. To replace dev's cluster and keep its data, first go back to what made this cluster (the config" \
        "value you changed, or, if a new blueprint version brings the change, the commit you ran before), and run" \
        "'eval \"\$(uv run blueprint env)\" && pulumi config set -s dev blueprint:preserveData true && pulumi up -s dev && pulumi destroy -s dev';" \
        "then apply the change again and run 'pulumi up -s dev'. The commit you ran before refuses dev's data if a newer" \
        "version's up migrated it (that up said 'migrated to blueprint X.Y.Z'): then follow that version's CHANGELOG" \
        "line on dev's data instead." >&2 ;;
    *) echo "blueprint: 'uv run blueprint up' applies a cluster change for you: it takes $stack down first," \
        "keeping its data, and brings it back on the new cluster; 'uv run blueprint destroy' destroys in order." \
        "By hand, in a shell that ran 'eval \"\$(uv run blueprint env)\"': 'pulumi destroy -s $(quoted "${stack##*/}")' first." >&2 ;;
  esac
  echo "blueprint: if that stack no longer exists, remove its lease:" >&2
  echo "  rm -- $(quoted "$lease")" >&2
done
[ -z "$held" ] || exit 1
# By its name alone, a cluster another checkout made over its own data folder (this one's went by
# hand) looks like this stack's: deleted only when its nodes mount this data folder.
clusters=$(kind get clusters)
if printf '%s\n' "$clusters" | grep -qxF -- "$KIND_CLUSTER_NAME"; then
  over=$(cluster_data_folder "$KIND_CLUSTER_NAME")
  if [ "$over" = "$DATA_DIR" ]; then
    kind delete cluster --name "$KIND_CLUSTER_NAME"
  elif [ -n "$over" ]; then
    echo "blueprint: the kind cluster $KIND_CLUSTER_NAME runs over $over, not over $DATA_DIR: it is not this stack's" \
      "(another checkout's, of the same name), so it is left alone" >&2
  else
    echo "blueprint: Docker does not say which data folder the kind cluster $KIND_CLUSTER_NAME runs over (its" \
      "container $KIND_CLUSTER_NAME-control-plane), so it is left alone; if it is this stack's, delete it, then run" \
      "the destroy again:" >&2
    echo "  kind delete cluster --name $(quoted "$KIND_CLUSTER_NAME")" >&2
    exit 1
  fi
fi
rm -f "$DATA_DIR/$CLUSTER_MARKER"
