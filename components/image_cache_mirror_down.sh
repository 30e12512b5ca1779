# Remove $CONTAINER when $OWNER started it (its $OWNER_LABEL says so), never its storage (components/image_cache.py).
if ! labelled=$(docker inspect -f "{{index .Config.Labels \"$OWNER_LABEL\"}}" "$CONTAINER" 2>/dev/null); then
  :  # no such container (or Docker gone, and nothing of it runs): nothing to remove
elif [ "$labelled" != "$OWNER" ]; then
  echo "blueprint: leaving the container $CONTAINER, which $OWNER did not start (it says: $labelled)" >&2
elif ! docker rm --force "$CONTAINER" >/dev/null 2>&1; then
  echo "blueprint: could not remove the mirror container $CONTAINER; remove it with:" \
    "docker rm --force $(quoted "$CONTAINER")" >&2
fi
