# Connect each node of the kind cluster $CLUSTER to $NETWORK, its mirrors' network, once kind has made the
# nodes (components/image_cache.py); warn of a mirror of $CONTAINERS removed outside blueprint.
set -eu
for container in $CONTAINERS; do
  docker inspect -f '{{.Name}}' "$container" >/dev/null 2>&1 || echo "blueprint: warning: the image cache's mirror" \
    "$container is gone (removed outside blueprint): the nodes pull from that registry itself until it runs" \
    "again; 'uv run blueprint status' gives the command that starts it anew" >&2
done
# kind labels every node container with its cluster (kind pkg/cluster/internal/providers/docker/constants.go).
nodes=$(docker ps --all --filter "label=io.x-k8s.kind.cluster=$CLUSTER" --format '{{.Names}}')
for node in $nodes; do
  joined=$(docker inspect -f '{{range $name, $_ := .NetworkSettings.Networks}}{{$name}} {{end}}' "$node")
  case " $joined" in
    *" $NETWORK "*) ;;
    *) docker network connect "$NETWORK" "$node" ;;
  esac
done
