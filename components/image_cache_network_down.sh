# Remove $NETWORK, the mirrors' network, when $OWNER made it (components/image_cache.py). Its mirrors are
# gone by now (they go first); the nodes of the cluster $CLUSTER may still run (a network replaced under
# them), so they leave it first: the join connects them to the new one. Docker gone: nothing to remove.
if ! labelled=$(docker network inspect -f "{{index .Labels \"$OWNER_LABEL\"}}" "$NETWORK" 2>/dev/null); then
  :  # no such network: nothing to remove
elif [ "$labelled" != "$OWNER" ]; then
  echo "blueprint: leaving the Docker network $NETWORK, which $OWNER did not make (it says: $labelled)" >&2
else
  # kind labels every node container with its cluster (kind pkg/cluster/internal/providers/docker/constants.go).
  for node in $(docker ps --all --filter "label=io.x-k8s.kind.cluster=$CLUSTER" --format '{{.Names}}'); do
    docker network disconnect -f "$NETWORK" "$node" >/dev/null 2>&1 || true  # not on it: nothing to do
  done
  docker network rm "$NETWORK" >/dev/null 2>&1 || true
  if docker network inspect "$NETWORK" >/dev/null 2>&1; then
    # Left in place, Pulumi would forget it, and a later subnet under that name would be refused for ever.
    echo "blueprint: could not remove the mirrors' Docker network $NETWORK: a container is still on it (docker" \
      "network inspect $(quoted "$NETWORK") names it); disconnect or remove it, then run the command again" >&2
    exit 1
  fi
fi
