"""Pull-through registry mirrors beside the kind cluster: the image cache that outlives it.

Every `destroy` throws the kind nodes and their image stores away, so without a cache each bring-up
downloads GitLab's gigabytes again. So phase1 runs, before the cluster:

- one mirror container per upstream registry the platform pulls from (MIRRORED_REGISTRIES): the
  CNCF registry (distribution) as a pull-through cache, which proxies one upstream only
  (distribution docs/content/recipes/mirror.md), storing what it pulled in `<cache>/<registry>/`.
  It runs as the host user, so the user can remove the cache without root, publishes no host port,
  and joins kind's Docker network, where every node reaches it by its container name;
- a `hosts.toml` per registry in containerd's `config_path` (the data folder's `containerd/certs.d`,
  which the nodes mount): pull and resolve through the mirror first, and from the registry itself
  when the mirror does not answer (containerd docs/hosts.md: hosts are tried in order, then
  `server`). containerd reads these files at every pull: no node restart, no change of the kind
  config (which would replace the cluster).

The cache holds public images only, so no destroy removes it, whatever `preserveData` says:
`blueprint destroy --wipe-cache` does. A destroy removes the mirror containers, not their storage.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

import pulumi
from pulumi_command import local

import versions
from components.host_folder import SHELL_QUOTE

MIRRORED_REGISTRIES = {
    "docker.io": "https://registry-1.docker.io",
    "quay.io": "https://quay.io",
    "ghcr.io": "https://ghcr.io",
    "registry.gitlab.com": "https://registry.gitlab.com",
    "registry.k8s.io": "https://registry.k8s.io",
}
"""Each registry the platform's images come from, and the address its mirror proxies: Docker Hub's
registry API is at registry-1.docker.io (distribution's mirror recipe; containerd maps docker.io to
it too, core/remotes/docker/config/hosts.go). registry.k8s.io serves what the node image preloads,
and anything a later Kubernetes add-on pulls."""

MIRROR_PORT = 5000
"""The registry's listener inside its container (the image's default `http.addr`)."""
KIND_NETWORK = 'kind_network="${KIND_EXPERIMENTAL_DOCKER_NETWORK:-kind}"'
"""Sets $kind_network to kind's Docker network: `kind` unless KIND_EXPERIMENTAL_DOCKER_NETWORK says
another (kind v0.31 pkg/cluster/internal/providers/docker/provider.go). kind makes it on the first
`kind create cluster` and never deletes it (network.go), and reuses it if it exists."""
CONTAINER_NAME_MAX = 63
"""A mirror's container name is the host name nodes and pods look it up by: one DNS label (RFC 1035)."""
CACHE_LABEL = "blueprint.image-cache"
"""Docker label on every mirror container: the cache folder it stores into. `--wipe-cache` refuses
while a container still names the folder (another cluster's mirrors using it)."""
OWNER_LABEL = "blueprint.owner"
"""Docker label naming the stack whose mirror this is (`<project>/<stack>@<checkout id>`): a mirror
of the same name that another stack started is never taken over, nor removed."""
SPEC_LABEL = "blueprint.mirror-spec"
"""Docker label holding a digest of what the container was started from: a mirror is restarted as it
is when that still holds, and made anew when it does not."""
CACHE_MARKER = ".blueprint-image-cache"
"""File in the cache folder saying what it is: `--wipe-cache` removes only a folder that has it."""
CONFIG_PATH = "/etc/distribution/config.yml"
"""Where the registry:3 image reads its configuration (distribution-library-image Dockerfile: `CMD
["/etc/distribution/config.yml"]`; registry:2 read /etc/docker/registry/config.yml). Anywhere else,
the mirror would run the image's example config: a plain registry, no cache."""
STORAGE = "storage"
"""Subfolder of `<cache>/<registry>/` the mirror stores into (its /var/lib/registry)."""
DIAL_TIMEOUT = "2s"
"""How long containerd tries to connect to a mirror before it goes to the registry itself
(containerd docs/hosts.md `dial_timeout`, in containerd 2.1 and later; kind v0.31 has 2.2). A
stopped mirror's name does not resolve at all, which fails at once."""


def mirror_container(cluster_name: str, registry: str) -> str:
    """The container that mirrors `registry` for the cluster `cluster_name`: one set per cluster,
    each cluster's destroy removing its own.
    """
    return f"{cluster_name}-mirror-{registry.replace('.', '-')}"


def mirror_endpoint(cluster_name: str, registry: str) -> str:
    """`<host>:<port>` of `registry`'s mirror on kind's network, where nodes and pods reach it. The
    host is rooted (a final dot), so a resolver tries no search domain: kind passes the laptop's own
    to the nodes, and a name looked up under one would go to the network's DNS, which could answer
    for it (Go's resolver: net/dnsclient_unix.go `nameList` tries a rooted name alone). Docker's DNS
    answers the same query, which is always rooted on the wire.
    """
    return f"{mirror_container(cluster_name, registry)}.:{MIRROR_PORT}"


def mirrors(cluster_name: str) -> dict[str, str]:
    """Each mirrored registry -> `mirror_endpoint` of its mirror for the cluster `cluster_name`."""
    return {registry: mirror_endpoint(cluster_name, registry) for registry in MIRRORED_REGISTRIES}


def mirror_urn(stack: str, registry: str) -> str:
    """The URN of the command that runs `registry`'s mirror in `stack` (phase1's KindCluster `kind`)."""
    types = "blueprint:index:KindCluster$blueprint:index:ImageCache$command:local:Command"
    return f"urn:pulumi:{stack}::blueprint::{types}::kind-image-cache-{registry.replace('.', '-')}"


def mirror_config(registry: str) -> str:
    """The registry's configuration file for the mirror of `registry` (distribution v3,
    configuration/configuration.go: the parser ignores unknown keys, so tests check these against it).
    Written out, not dumped: the same text every run, and no YAML emitter in the plan's path.
    """
    return (
        'version: "0.1"\n'
        "log:\n"
        "  level: info\n"
        # No `storage.delete`: nothing is ever deleted (the API refuses deletes and pushes to a
        # pull-through cache anyway: registry/proxy/proxyblobstore.go, proxymanifeststore.go).
        "storage:\n"
        "  filesystem:\n"
        "    rootdirectory: /var/lib/registry\n"
        "http:\n"
        f'  addr: ":{MIRROR_PORT}"\n'
        "proxy:\n"
        f'  remoteurl: "{MIRRORED_REGISTRIES[registry]}"\n'
        # ttl 0: keep what was pulled until --wipe-cache. Unset, the mirror deletes each image 7
        # days after it first cached it (registry/proxy/proxyregistry.go), and the next bring-up a
        # week later downloads again.
        "  ttl: 0s\n"
    )


def hosts_toml(cluster_name: str, registry: str) -> str:
    """Containerd's hosts.toml for `registry`: its mirror first, then the registry itself."""
    return (
        f'server = "{MIRRORED_REGISTRIES[registry]}"\n\n'
        f'[host."http://{mirror_endpoint(cluster_name, registry)}"]\n'
        '  capabilities = ["pull", "resolve"]\n'
        f'  dial_timeout = "{DIAL_TIMEOUT}"\n'
    )


MIRROR_UP_SCRIPT = f"""\
set -eu
{SHELL_QUOTE}
if ! docker info >/dev/null 2>&1; then
  echo "blueprint: Docker does not answer, so the image cache's mirror $CONTAINER cannot start; start Docker" \\
    "('uv run blueprint doctor' checks it)" >&2
  exit 1
fi
if [ -L "$CACHE_DIR" ] || {{ [ -e "$CACHE_DIR" ] && [ ! -O "$CACHE_DIR" ]; }}; then
  echo "blueprint: the image cache folder $(quoted "$CACHE_DIR") is a link, or not yours; blueprint stores only in a" \\
    "folder of your own: set another blueprint:imageCacheDir" >&2
  exit 1
fi
# The five mirrors start at once over a new folder: each writes the marker before anything else, and
# what a mirror lists before it looks for the marker holds nothing of another's without the marker.
listing=$(ls -A "$CACHE_DIR" 2>/dev/null || true)
if [ -n "$listing" ] && [ ! -f "$CACHE_DIR/{CACHE_MARKER}" ]; then
  echo "blueprint: the image cache folder $(quoted "$CACHE_DIR") holds files blueprint did not write ($(printf '%s\\n' \\
    "$listing" | head -n 3 | tr '\\n' ' ')...), which 'uv run blueprint destroy --wipe-cache' must never take for its" \\
    "own: set blueprint:imageCacheDir to a new or empty folder" >&2
  exit 1
fi
folder="$CACHE_DIR/$REGISTRY"
if ! mkdir -p "$CACHE_DIR"; then
  echo "blueprint: cannot make the image cache folder $(quoted "$CACHE_DIR"); make it writable, or set another" \\
    "blueprint:imageCacheDir" >&2
  exit 1
fi
# Never through a link someone left at the marker's name (noclobber); another mirror may have written it first.
[ -f "$CACHE_DIR/{CACHE_MARKER}" ] || (set -C; printf '%s\\n' "blueprint's image cache (registry mirrors' storage)." \\
  "It holds public images only; 'uv run blueprint destroy --wipe-cache' removes it." > "$CACHE_DIR/{CACHE_MARKER}") 2>/dev/null || true
mkdir -p "$folder/{STORAGE}"
draft=$(mktemp "$folder/.config.XXXXXX")
printf '%s' "$MIRROR_CONFIG" > "$draft"
chmod 0644 "$draft"
mv -f "$draft" "$folder/config.yml"
if owner=$(docker inspect -f '{{{{index .Config.Labels "{OWNER_LABEL}"}}}}' "$CONTAINER" 2>/dev/null) && [ "$owner" != "$OWNER" ]; then
  echo "blueprint: a container named $CONTAINER exists, and $OWNER did not start it (it says: $owner);" \\
    "set another blueprint:clusterName, or remove it if it is nobody's: docker rm --force $(quoted "$CONTAINER")" >&2
  exit 1
fi
spec=$(printf '%s\\n' "$IMAGE" "$MIRROR_CONFIG" "$CACHE_DIR" | cksum | cut -d ' ' -f 1)
if [ "$(docker inspect -f '{{{{index .Config.Labels "{SPEC_LABEL}"}}}}' "$CONTAINER" 2>/dev/null)" = "$spec" ]; then
  docker start "$CONTAINER" >/dev/null || failed=yes
else
  docker rm -f "$CONTAINER" >/dev/null 2>&1 || true
  # As the host user, so that the user can remove what it stores; rootless Docker maps its root to
  # that user already, and a --user there would be a sub-uid the host user cannot write as.
  user="--user=$(id -u):$(id -g)"
  case "$(docker info -f '{{{{.SecurityOptions}}}}' 2>/dev/null)" in *rootless*) user="--user=0:0" ;; esac
  network=bridge
  {KIND_NETWORK}
  if docker network inspect "$kind_network" >/dev/null 2>&1; then network=$kind_network; fi
  echo "blueprint: starting $CONTAINER, the image cache's mirror of $REGISTRY, over $(quoted "$folder")" >&2
  # It writes only its storage: nothing else of the container, no capability, no new privilege.
  docker run --detach --name "$CONTAINER" --restart=unless-stopped --network="$network" "$user" \\
    --read-only --tmpfs /tmp --cap-drop=ALL --security-opt=no-new-privileges \\
    --label "{CACHE_LABEL}=$CACHE_DIR" --label "{OWNER_LABEL}=$OWNER" --label "{SPEC_LABEL}=$spec" \\
    --mount "type=bind,source=$folder/{STORAGE},target=/var/lib/registry" \\
    --mount "type=bind,source=$folder/config.yml,target={CONFIG_PATH},readonly" \\
    "$IMAGE" >/dev/null || failed=yes
fi
# A registry that refuses its configuration or its folder exits at once: give it a moment, and show why.
# Docker says Running of a container it is restarting (moby container/state.go SetRestarting): a mirror runs
# when its status is "running" and Docker has not restarted it meanwhile.
[ -n "${{failed:-}}" ] || {{
  restarts=$(docker inspect -f '{{{{.RestartCount}}}}' "$CONTAINER" 2>/dev/null || echo unknown)
  sleep 2
  [ "$(docker inspect -f '{{{{.State.Status}}}} {{{{.RestartCount}}}}' "$CONTAINER" 2>/dev/null)" = "running $restarts" ]
}} || {{
  docker logs --tail 20 "$CONTAINER" >&2 2>&1 || true
  failed=yes
}}
if [ -n "${{failed:-}}" ]; then
  docker rm --force "$CONTAINER" >/dev/null 2>&1 || true  # so the next `up` starts it anew
  stack=${{OWNER#*/}}
  echo "blueprint: the image cache's mirror of $REGISTRY ($CONTAINER) did not start (Docker said why above). The" \\
    "platform comes up without the cache too: pulumi config set -s $(quoted "${{stack%@*}}") blueprint:imageCache false" >&2
  exit 1
fi
"""
"""Start the mirror of $REGISTRY, or keep the one that runs when it was started from the same image,
configuration and folder (an `up` re-run after a crash half-way finds it so)."""

MIRROR_DOWN_SCRIPT = f"""\
{SHELL_QUOTE}
if ! owner=$(docker inspect -f '{{{{index .Config.Labels "{OWNER_LABEL}"}}}}' "$CONTAINER" 2>/dev/null); then
  :  # no such container (or Docker gone, and nothing of it runs): nothing to remove
elif [ "$owner" != "$OWNER" ]; then
  echo "blueprint: leaving the container $CONTAINER, which $OWNER did not start (it says: $owner)" >&2
elif ! docker rm --force "$CONTAINER" >/dev/null 2>&1; then
  echo "blueprint: could not remove the mirror container $CONTAINER; remove it with:" \\
    "docker rm --force $(quoted "$CONTAINER")" >&2
fi
"""
"""Remove the mirror container, never its storage. Docker gone: nothing of it runs, nothing to do."""

JOIN_SCRIPT = f"""\
set -eu
{KIND_NETWORK}
for container in $CONTAINERS; do
  if ! joined=$(docker inspect -f '{{{{range $name, $_ := .NetworkSettings.Networks}}}}{{{{$name}}}} {{{{end}}}}' "$container"); then
    echo "blueprint: warning: the image cache's mirror $container is gone (removed outside blueprint): the nodes pull" \\
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
"""
"""Join the mirrors to kind's network, which the first cluster made after they started (as kind's own
local-registry script does: site/static/examples/kind-with-registry.sh); a mirror started when the
network existed is on it already."""


def hosts_script(cluster_name: str, registries: tuple[str, ...]) -> str:
    """Write containerd's hosts.toml for each of `registries` under $HOSTS_DIR."""
    lines = ["set -eu"]
    for registry in registries:
        folder = f'"$HOSTS_DIR"/{shlex.quote(registry)}'
        lines += [f"mkdir -p {folder}", f"printf '%s' {shlex.quote(hosts_toml(cluster_name, registry))} > {folder}/hosts.toml"]
    return "\n".join(lines) + "\n"


def hosts_removal_script(registries: tuple[str, ...]) -> str:
    """Remove the hosts.toml folders `hosts_script` wrote (the data folder may be gone: nothing to do),
    and say, once for all mirrors, that their cache stays.
    """
    return (
        "rm -rf " + " ".join(f'"$HOSTS_DIR"/{shlex.quote(registry)}' for registry in registries) + "\n"
        "echo \"blueprint: the image cache stays in $CACHE_DIR; 'uv run blueprint destroy --wipe-cache' removes it\" >&2\n"
    )


def mirror_cache_folder(command_inputs: dict[str, object]) -> str | None:
    """The image cache folder a mirror command (from a plan or a state) stores into, else None."""
    environment = command_inputs.get("environment")
    if command_inputs.get("create") != MIRROR_UP_SCRIPT or not isinstance(environment, dict):
        return None
    return str(environment.get("CACHE_DIR") or "") or None


@dataclass(frozen=True, kw_only=True)
class ImageCacheArgs:
    cluster_name: str
    """The kind cluster the mirrors serve: their container names start with it."""
    cache_dir: Path
    """Absolute host folder of the cache (`blueprint:imageCacheDir`)."""
    hosts_dir: Path
    """containerd's `config_path` folder as the host sees it (the data folder's containerd/certs.d)."""
    hosts_dir_claim: pulumi.Resource
    """The claim of the data folder `hosts_dir` is in: the hosts files wait for it."""
    owner: str
    """`<project>/<stack>@<checkout id>` of the stack that runs the mirrors (`stacks.config.paths.folder_owner`)."""
    registries: tuple[str, ...] = tuple(MIRRORED_REGISTRIES)
    image: str = versions.REGISTRY_MIRROR_IMAGE

    def __post_init__(self) -> None:
        if not self.cache_dir.is_absolute():
            raise ValueError(f"cache_dir must be absolute, got {self.cache_dir}")
        if unknown := set(self.registries) - set(MIRRORED_REGISTRIES):
            raise ValueError(f"no upstream known for {sorted(unknown)}")


class ImageCache(pulumi.ComponentResource):
    """One pull-through mirror per registry, and containerd's hosts.toml pointing the nodes at it."""

    ready: list[pulumi.Resource]
    """What the cluster waits for: the mirrors and the hosts files, so its first pull goes through them."""

    def __init__(self, name: str, args: ImageCacheArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("blueprint:index:ImageCache", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self._name_prefix = name
        self._containers = tuple(mirror_container(args.cluster_name, registry) for registry in args.registries)
        self.mirrors = [
            local.Command(
                f"{name}-{registry.replace('.', '-')}",
                create=MIRROR_UP_SCRIPT,
                delete=MIRROR_DOWN_SCRIPT,
                environment={
                    "CONTAINER": mirror_container(args.cluster_name, registry),
                    "REGISTRY": registry,
                    "CACHE_DIR": str(args.cache_dir),
                    "MIRROR_CONFIG": mirror_config(registry),
                    "IMAGE": args.image,
                    "OWNER": args.owner,
                },
                logging=local.Logging.STDERR,
                # Any change makes the container anew, and its name stays: the old one goes first.
                opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(replace_on_changes=["*"], delete_before_replace=True)),
            )
            for registry in args.registries
        ]
        write_hosts = hosts_script(args.cluster_name, args.registries)
        hosts = local.Command(
            f"{name}-hosts",
            create=write_hosts,
            update=write_hosts,
            delete=hosts_removal_script(args.registries),
            environment={"HOSTS_DIR": str(args.hosts_dir), "CACHE_DIR": str(args.cache_dir)},
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[args.hosts_dir_claim])),
        )
        self.ready = [*self.mirrors, hosts]
        self.register_outputs({})

    def join(self, cluster: pulumi.CustomResource) -> local.Command:
        """Join the mirrors to kind's network once `cluster` has made it."""
        return local.Command(
            f"{self._name_prefix}-network",
            create=JOIN_SCRIPT,
            update=JOIN_SCRIPT,
            delete="true",
            environment={"CONTAINERS": " ".join(self._containers)},
            # Again whenever a mirror or the cluster is made anew: a mirror made while kind's network
            # was missing is on Docker's default one.
            triggers=[cluster.id, *(mirror.id for mirror in self.mirrors)],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[cluster, *self.mirrors]),
        )
