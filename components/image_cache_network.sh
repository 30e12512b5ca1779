# Make $NETWORK, the mirrors' own Docker network: the subnet $SUBNET, its gateway $GATEWAY, and its upper
# half $IP_RANGE, where Docker gives the nodes their addresses (components/image_cache.py); keep it when
# $OWNER made it with that subnet.
set -eu
if found=$(docker network inspect -f "{{range .IPAM.Config}}{{.Subnet}}={{.IPRange}} {{end}}|{{index .Labels \"$OWNER_LABEL\"}}" \
  "$NETWORK" 2>/dev/null); then
  if [ "$found" = "$SUBNET=$IP_RANGE |$OWNER" ]; then exit 0; fi
  echo "blueprint: a Docker network named $NETWORK exists, and it is not the mirrors' network $OWNER makes (subnet" \
    "and ip-range $SUBNET $IP_RANGE; it says: $found); set another blueprint:clusterName, or remove it if it is" \
    "nobody's: docker network rm $(quoted "$NETWORK")" >&2
  exit 1
fi
if ! refused=$(docker network create --driver=bridge --subnet="$SUBNET" --gateway="$GATEWAY" --ip-range="$IP_RANGE" \
  --label "$OWNER_LABEL=$OWNER" "$NETWORK" 2>&1 >/dev/null); then
  echo "blueprint: Docker did not make the mirrors' network $NETWORK on $SUBNET: $refused. Another network, or a" \
    "network of this machine, takes that subnet, which blueprint derives from blueprint:clusterName: set another" \
    "blueprint:clusterName, or go without the cache (blueprint:imageCache: false)" >&2
  exit 1
fi
