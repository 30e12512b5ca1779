# Before the Postgres cluster's delete, on an existing cluster: when PRESERVE_DATA is true, release the
# claim $RELEASED_CLAIM in $NAMESPACE of the cluster of context $KUBE_CONTEXT (components/postgres.py) from
# the Cluster that owns it, so that the garbage collector leaves it and the next Cluster adopts it.
set -eu
if [ "$PRESERVE_DATA" != true ]; then
  echo "blueprint: preserveData=false: claim $RELEASED_CLAIM goes with the Postgres cluster, and its data with it" >&2
  exit 0
fi
# A merge patch with null removes the field, and changes nothing when it is already gone.
if out=$(kubectl --context "$KUBE_CONTEXT" --namespace "$NAMESPACE" patch persistentvolumeclaim "$RELEASED_CLAIM" \
    --type=merge --patch '{"metadata":{"ownerReferences":null}}' 2>&1); then
  echo "blueprint: claim $RELEASED_CLAIM released from the Postgres cluster: it stays, with its data" >&2
elif printf '%s' "$out" | grep -q NotFound; then
  echo "blueprint: no claim $RELEASED_CLAIM in namespace $NAMESPACE: no PostgreSQL data to keep" >&2
else
  echo "blueprint: cannot release claim $RELEASED_CLAIM from the Postgres cluster, whose delete would then delete" \
    "the data: $out; make context $KUBE_CONTEXT reach the cluster and run the destroy again" >&2
  exit 1
fi
