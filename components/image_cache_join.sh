# Join each of $CONTAINERS, the image cache's mirrors, to kind's network (components/image_cache.py).
set -eu
kind_network=$(kind_network)
for container in $CONTAINERS; do
  if ! joined=$(docker inspect -f '{{range $name, $_ := .NetworkSettings.Networks}}{{$name}} {{end}}' "$container"); then
    echo "blueprint: warning: the image cache's mirror $container is gone (removed outside blueprint): the nodes pull" \
      "from that registry itself until it runs again; 'uv run blueprint status' gives the command that starts it anew" >&2
    continue
  fi
  case " $joined" in
    *" $kind_network "*) ;;
    *) docker network connect "$kind_network" "$container" ;;
  esac
  # Off Docker's default network, where every other container of the machine could reach it (unless
  # kind was told to use that one).
  case " $joined" in *" bridge "*) [ "$kind_network" = bridge ] || docker network disconnect bridge "$container" ;; esac
done
