# Rooted (one final dot): looked up as it is, under no search domain of the node's resolv.conf, which
# kind copies from the laptop's network, whose DNS could then answer for it.
# shellcheck disable=SC2153 # TARGET is the container's env (components/node_registry.py)
target="${TARGET%.}."
while true; do
  ip=$(nslookup -type=A "$target" 2>/dev/null | awk '/^Address: / { print $2 }' | tail -n 1)
  if [ -n "$ip" ]; then
    line="$ip $NAMES # blueprint"
    if ! grep -qxF "$line" /host/hosts; then
      grep -v ' # blueprint$' /host/hosts > /tmp/hosts || true
      echo "$line" >> /tmp/hosts
      cat /tmp/hosts > /host/hosts  # in place: the file is a bind mount
    fi
  fi
  sleep 30
done
