# Delete the kind cluster $KIND_CLUSTER_NAME unless a stack holds a lease in
# $DATA_DIR/$LEASES_FOLDER (components/kind_cluster.py); reads too CLUSTER_MARKER.
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
if ! command -v kind >/dev/null; then
  echo "blueprint: kind is not on PATH, so the kind cluster $KIND_CLUSTER_NAME cannot be deleted: run the destroy" \
    "again with uv run blueprint, or in a shell that ran 'eval \"\$(uv run blueprint env)\"'" >&2
  exit 1
fi
# A kind that cannot list (Docker stopped) fails the delete (set -e): the cluster stays recorded. One
# gone by hand is forgotten; one of its name is deleted by name (a second checkout on this machine
# gives its platform its own blueprint:clusterName).
clusters=$(kind get clusters)
if printf '%s\n' "$clusters" | grep -qxF -- "$KIND_CLUSTER_NAME"; then
  kind delete cluster --name "$KIND_CLUSTER_NAME"
fi
rm -f "$DATA_DIR/$CLUSTER_MARKER"
