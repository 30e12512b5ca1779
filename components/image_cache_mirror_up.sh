# Start $CONTAINER, the mirror of $REGISTRY storing in $CACHE_DIR, at $ADDRESS on $NETWORK
# (components/image_cache.py); reads too MIRROR_CONFIG, IMAGE, OWNER and the names in MIRROR_SCRIPT_ENVIRONMENT.
set -eu
umask go-w
if ! docker info >/dev/null 2>&1; then
  echo "blueprint: Docker does not answer, so the image cache's mirror $CONTAINER cannot start; start Docker" \
    "('uv run blueprint doctor' checks it)" >&2
  exit 1
fi
# shellcheck disable=SC3067 # test -O (owned by the user): dash, bash and busybox sh all have it
if [ -L "$CACHE_DIR" ] || { [ -e "$CACHE_DIR" ] && [ ! -O "$CACHE_DIR" ]; }; then
  echo "blueprint: the image cache folder $(quoted "$CACHE_DIR") is a link, or not yours; blueprint stores only in a" \
    "folder of your own: set another blueprint:imageCacheDir" >&2
  exit 1
fi
# The mirrors start at once over a new folder: each writes the marker before anything else, and
# what a mirror lists before it looks for the marker holds nothing of another's without the marker.
listing=$(ls -A "$CACHE_DIR" 2>/dev/null || true)
if [ -n "$listing" ] && [ ! -f "$CACHE_DIR/$CACHE_MARKER" ]; then
  echo "blueprint: the image cache folder $(quoted "$CACHE_DIR") holds files blueprint did not write ($(printf '%s\n' \
    "$listing" | head -n 3 | tr '\n' ' ')...), which 'uv run blueprint destroy --wipe-cache' must never take for its" \
    "own: set blueprint:imageCacheDir to a new or empty folder" >&2
  exit 1
fi
folder="$CACHE_DIR/$REGISTRY"
if ! mkdir -p "$CACHE_DIR"; then
  echo "blueprint: cannot make the image cache folder $(quoted "$CACHE_DIR"); make it writable, or set another" \
    "blueprint:imageCacheDir" >&2
  exit 1
fi
# Never through a link someone left at the marker's name (noclobber); another mirror may have written it first.
[ -f "$CACHE_DIR/$CACHE_MARKER" ] || (set -C; printf '%s\n' "blueprint's image cache (registry mirrors' storage)." \
  "It holds public images only; 'uv run blueprint destroy --wipe-cache' removes it." > "$CACHE_DIR/$CACHE_MARKER") 2>/dev/null || true
mkdir -p "$folder/$STORAGE"
draft=$(mktemp "$folder/.config.XXXXXX")
printf '%s' "$MIRROR_CONFIG" > "$draft"
chmod 0644 "$draft"
mv -f "$draft" "$folder/config.yml"
if labelled=$(docker inspect -f "{{index .Config.Labels \"$OWNER_LABEL\"}}" "$CONTAINER" 2>/dev/null) && [ "$labelled" != "$OWNER" ]; then
  echo "blueprint: a container named $CONTAINER exists, and $OWNER did not start it (it says: $labelled);" \
    "set another blueprint:clusterName, or remove it if it is nobody's: docker rm --force $(quoted "$CONTAINER")" >&2
  exit 1
fi
spec=$(printf '%s\n' "$IMAGE" "$MIRROR_CONFIG" "$CACHE_DIR" "$NETWORK" "$ADDRESS" | cksum | cut -d ' ' -f 1)
if [ "$(docker inspect -f "{{index .Config.Labels \"$SPEC_LABEL\"}}" "$CONTAINER" 2>/dev/null)" = "$spec" ]; then
  docker start "$CONTAINER" >/dev/null || failed=yes
else
  docker rm -f "$CONTAINER" >/dev/null 2>&1 || true
  # As the host user, so that the user can remove what it stores; rootless Docker maps its root to
  # that user already, and a --user there would be a sub-uid the host user cannot write as.
  user="--user=$(id -u):$(id -g)"
  case "$(docker info -f '{{.SecurityOptions}}' 2>/dev/null)" in *rootless*) user="--user=0:0" ;; esac
  echo "blueprint: starting $CONTAINER, the image cache's mirror of $REGISTRY, over $(quoted "$folder")" >&2
  # It writes only its storage: nothing else of the container, no capability, no new privilege. Its
  # address is fixed: Docker gives it back at every restart (moby docs, network connect --ip).
  docker run --detach --name "$CONTAINER" --restart=unless-stopped --network="$NETWORK" --ip="$ADDRESS" "$user" \
    --read-only --tmpfs /tmp --cap-drop=ALL --security-opt=no-new-privileges \
    --label "$CACHE_LABEL=$CACHE_DIR" --label "$OWNER_LABEL=$OWNER" --label "$SPEC_LABEL=$spec" \
    --mount "type=bind,source=$folder/$STORAGE,target=/var/lib/registry" \
    --mount "type=bind,source=$folder/config.yml,target=$CONFIG_PATH,readonly" \
    "$IMAGE" >/dev/null || failed=yes
fi
# A registry that refuses its configuration or its folder exits at once: give it a moment, and show why.
# Docker says Running of a container it is restarting (moby container/state.go SetRestarting): a mirror runs
# when its status is "running" and Docker has not restarted it meanwhile.
[ -n "${failed:-}" ] || {
  restarts=$(docker inspect -f '{{.RestartCount}}' "$CONTAINER" 2>/dev/null || echo unknown)
  sleep 2
  [ "$(docker inspect -f '{{.State.Status}} {{.RestartCount}}' "$CONTAINER" 2>/dev/null)" = "running $restarts" ]
} || {
  docker logs --tail 20 "$CONTAINER" >&2 2>&1 || true
  failed=yes
}
if [ -n "${failed:-}" ]; then
  docker rm --force "$CONTAINER" >/dev/null 2>&1 || true  # so the next `up` starts it anew
  stack=${OWNER#*/}
  echo "blueprint: the image cache's mirror of $REGISTRY ($CONTAINER) did not start (Docker said why above). The" \
    "platform comes up without the cache too: in Pulumi.${stack%@*}.yaml, replace 'config: {}' with 'config:' and the" \
    "line '  blueprint:imageCache: false' (under a 'config:' that holds lines already, add that line)" >&2
  exit 1
fi
