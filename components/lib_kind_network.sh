kind_network() {
  # kind's Docker network: `kind` unless KIND_EXPERIMENTAL_DOCKER_NETWORK names another (kind v0.31
  # pkg/cluster/internal/providers/docker/provider.go). kind makes it on the first `kind create
  # cluster` and never deletes it (network.go), and reuses it if it exists.
  printf '%s\n' "${KIND_EXPERIMENTAL_DOCKER_NETWORK:-kind}"
}
