# Create the kind cluster $KIND_CLUSTER_NAME over $DATA_DIR from the kind config on stdin, or reuse it, and
# print its kubeconfig (components/kind_cluster.py); reads too KIND_VERSION and CLUSTER_MARKER.
set -eu
umask go-w
if ! command -v kind >/dev/null; then
  echo "blueprint: kind is not on PATH; install kind $KIND_VERSION:" \
    "https://kind.sigs.k8s.io/docs/user/quick-start/#installation" >&2
  exit 127
fi
case "$(kind version)" in
  "kind $KIND_VERSION "*) ;;
  *) echo "blueprint: warning: $(kind version) differs from kind $KIND_VERSION," \
       "which the pinned node image is built for" >&2 ;;
esac
marker="$DATA_DIR/$CLUSTER_MARKER"
if kind get clusters 2>/dev/null | grep -qxF -- "$KIND_CLUSTER_NAME"; then
  if [ "$(marker_of "$marker")" != "$KIND_CLUSTER_NAME" ]; then
    echo "blueprint: a kind cluster named $KIND_CLUSTER_NAME exists, but blueprint did not create it over" \
      "$DATA_DIR; set another blueprint:clusterName, or delete that cluster if it is nobody's:" >&2
    echo "  kind delete cluster --name $(quoted "$KIND_CLUSTER_NAME")" >&2
    exit 1
  fi
  echo "blueprint: kind cluster $KIND_CLUSTER_NAME already runs over $DATA_DIR; using it" >&2
else
  # The marker first: a create cut short (Ctrl-C stops this shell, kind goes on) leaves a cluster the
  # next up knows for its own, and adopts. A new file (noclobber: O_EXCL), never through a link left at its name.
  rm -f -- "$marker"
  (set -C; printf '%s\n' "$KIND_CLUSTER_NAME" > "$marker")
  # --wait: until the control plane is Ready (kind v0.31 waits for the control-plane nodes alone, and
  # past the time only warns: pkg/cluster/internal/create/actions/waitforready), not just started.
  kind create cluster --name "$KIND_CLUSTER_NAME" --config=- --wait 5m >&2
fi
kind get kubeconfig --name "$KIND_CLUSTER_NAME"
