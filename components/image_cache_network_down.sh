# Remove $NETWORK, the mirrors' network, when $OWNER made it (components/image_cache.py). Its mirrors and
# the cluster's nodes are gone by now; Docker gone: nothing of it is left to remove.
if ! labelled=$(docker network inspect -f "{{index .Labels \"$OWNER_LABEL\"}}" "$NETWORK" 2>/dev/null); then
  :  # no such network: nothing to remove
elif [ "$labelled" != "$OWNER" ]; then
  echo "blueprint: leaving the Docker network $NETWORK, which $OWNER did not make (it says: $labelled)" >&2
elif ! docker network rm "$NETWORK" >/dev/null 2>&1; then
  echo "blueprint: could not remove the mirrors' Docker network $NETWORK (a container still on it?); remove it" \
    "with: docker network rm $(quoted "$NETWORK")" >&2
fi
