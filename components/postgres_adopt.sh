# Apply the claim on stdin before the Postgres cluster $CLUSTER when $PGDATA_DIR holds data and no Cluster
# exists yet in $NAMESPACE of the kind cluster $KIND_CLUSTER_NAME (components/postgres.py); reads too PROBE_IMAGE.
set -eu
umask go-w
volume=$(dirname "$PGDATA_DIR")
if [ -x "$volume" ] || [ ! -e "$volume" ]; then
  [ -d "$PGDATA_DIR" ] && found=yes || found=no
elif docker run --rm --network none --user 0 -v "$volume:/blueprint-volume:ro" --entrypoint test "$PROBE_IMAGE" \
    -d /blueprint-volume/pgdata; then
  found=yes  # the volume's folder is Postgres' own (0700): root in a one-shot container looked
else
  status=$?
  if [ "$status" != 1 ]; then
    echo "blueprint: cannot tell whether $PGDATA_DIR holds PostgreSQL data (docker run exited $status);" \
      "start Docker and run the up again" >&2
    exit 1
  fi
  found=no
fi
if [ "$found" = no ]; then
  echo "blueprint: no PostgreSQL data at $PGDATA_DIR: CloudNativePG initialises a new cluster" >&2
  exit 0
fi
kubeconfig=$(mktemp)
trap 'rm -f "$kubeconfig"' EXIT
kind get kubeconfig --name "$KIND_CLUSTER_NAME" > "$kubeconfig"
if found=$(kubectl --kubeconfig "$kubeconfig" -n "$NAMESPACE" get clusters.postgresql.cnpg.io "$CLUSTER" -o name 2>&1); then
  exit 0
elif ! printf '%s' "$found" | grep -q NotFound; then
  echo "blueprint: cannot tell whether the Postgres cluster exists: $found" >&2
  exit 1
fi
echo "blueprint: adopting the PostgreSQL data at $PGDATA_DIR (claim $CLUSTER-1 made before the Cluster)" >&2
kubectl --kubeconfig "$kubeconfig" apply --server-side --field-manager=blueprint -f -
