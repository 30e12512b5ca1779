"""Pull-through registry mirrors beside the kind cluster: the image cache that outlives it.

Every `destroy` throws the nodes' image stores away, so phase1 runs, before the cluster:

- one mirror container per upstream registry (MIRRORED_REGISTRIES): the CNCF registry as a
  pull-through cache of one upstream (distribution docs/content/recipes/mirror.md), storing in
  `<cache>/<registry>/`, as the host user, with no host port;
- the mirrors' own Docker network, where each has a fixed address (`mirror_address`) and to which
  the nodes are connected once kind has made them. Nodes and BuildKit reach a mirror by address,
  never by name: Docker's DNS forwards a name it does not know (a mirror that is down) to the
  network's resolvers, which could answer over plain HTTP (decisions.md, entry 24);
- a `hosts.toml` per registry in containerd's `config_path` (the data folder's `containerd/certs.d`,
  which the nodes mount): the mirror first, then the registry itself (containerd docs/hosts.md).
  containerd reads them at every pull: no node restart, no change of the kind config.

Each mirror deletes what it cached `CACHE_TTL` after fetching it; `blueprint cache prune` empties it
at once. No destroy removes the cache, whatever `preserveData` says: `--wipe-cache` does.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pulumi
from pulumi_command import local

import versions
from components.engine import DOCKER, ENGINES, for_engine, podman_ip_range
from components.scripts import script
from shown import shown

MIRRORED_REGISTRIES = {
    "docker.io": "https://registry-1.docker.io",
    "quay.io": "https://quay.io",
    "ghcr.io": "https://ghcr.io",
    "registry.gitlab.com": "https://registry.gitlab.com",
}
"""Each registry the platform's images come from that a mirror can serve, and the address its mirror
proxies: Docker Hub's registry API is at registry-1.docker.io (distribution's mirror recipe;
containerd maps docker.io to it too, core/remotes/docker/config/hosts.go)."""

NOT_MIRRORED = {
    "registry.k8s.io": "registry:3.1 cannot proxy it: registry.k8s.io redirects every registry call but "
    "blobs to Artifact Registry (pkg.dev), whose token realm is not on k8s.io, and registry 3.1 drops "
    "such a challenge (distribution f215e513), so it never gets a token",
}
"""Registries the platform pulls from that no mirror serves, and why (`blueprint images` says it).
registry.k8s.io: archeio redirects `/v2/` and manifests to its Artifact Registry backend
(kubernetes/registry.k8s.io cmd/archeio/docs/request-handling.md); distribution v3.1.x keeps only a
bearer challenge whose realm shares the remote's registrable domain (registry/proxy/proxyauth.go
`realmAllowed`, applied by `remoteAuthChallenger.challengeManager`), so the mirror would fail every
pull and containerd would fall through to the registry each time."""

MIRROR_PORT = 5000
"""The registry's listener inside its container (the image's default `http.addr`)."""
CONTAINER_NAME_MAX = 63
"""A mirror's container name, kept one DNS label (RFC 1035) as Docker names go."""
SUBNET_POOL = ipaddress.IPv4Network("172.16.0.0/16")
"""Where the mirrors' network takes its subnet: outside Docker's default address pools (172.17-31/16
and 192.168/16, moby libnetwork/ipamutils), so no network Docker makes by itself collides with it."""
SUBNET_PREFIX = 26
"""Each cluster's mirrors' network: 64 addresses, the lower half for the mirrors (fixed), the upper
half (`--ip-range`) for the nodes Docker connects, so a node never takes a stopped mirror's address
(moby docs, network connect: a fixed address is reapplied when the container starts again). The
upper half holds 31 nodes (Docker never gives out the subnet's broadcast address): the most the
config allows is 19 (1 + MAX_GITLAB_NODES + MAX_RUNNER_NODES, stacks/config/phases.py)."""
CACHE_TTL = "720h"
"""How long a mirror keeps what it cached (distribution v3 configuration/configuration.go
`Proxy.TTL`): registry/proxy/proxymanifeststore.go and proxyblobstore.go schedule a manifest or blob
when they first fetch it from the registry, and registry/proxy/scheduler deletes it from storage
`ttl` later (only with `storage.delete` enabled, which `mirror_config` sets: without it the expiry's
delete fails and the file stays for good, distribution#4957); the next pull fetches it again. So the
disk holds at most what was pulled in the last 30 days, and a bring-up within them downloads nothing
again. `0s` would keep everything for ever."""
BUILDKIT_MIRRORED = ("docker.io",)
"""The only mirrors a CI job reaches, from BuildKit in the image-build job (the pipeline's
buildkitd.toml). Every other job pulls nothing itself: the node's containerd pulls the job's images,
from the node's network, not the pod's."""
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
stopped mirror's address is one nothing else holds (the nodes take theirs from the upper half)."""


def mirror_container(cluster_name: str, registry: str) -> str:
    """The container that mirrors `registry` for the cluster `cluster_name`: one set per cluster,
    each cluster's destroy removing its own.
    """
    return f"{cluster_name}-mirror-{registry.replace('.', '-')}"


def mirror_network(cluster_name: str) -> str:
    """The Docker network of the mirrors of the cluster `cluster_name`, which its nodes join."""
    return f"{cluster_name}-mirrors"


def mirror_subnet(cluster_name: str) -> ipaddress.IPv4Network:
    """The subnet of `mirror_network`: one of SUBNET_POOL's, chosen by the cluster's name, so two
    clusters on one machine take two (unless their names collide; Docker then refuses the second).
    """
    slots = 2 ** (SUBNET_PREFIX - SUBNET_POOL.prefixlen)
    slot = int.from_bytes(hashlib.sha256(cluster_name.encode()).digest()[:4], "big") % slots
    return ipaddress.IPv4Network((int(SUBNET_POOL.network_address) + slot * 2 ** (32 - SUBNET_PREFIX), SUBNET_PREFIX))


def node_ip_range(cluster_name: str) -> ipaddress.IPv4Network:
    """The upper half of `mirror_subnet`, where Docker gives the nodes their addresses."""
    return list(mirror_subnet(cluster_name).subnets(prefixlen_diff=1))[1]


def mirror_address(cluster_name: str, registry: str) -> str:
    """The fixed address of `registry`'s mirror: the subnet's third address on (the first is the
    network's, the second its gateway), in the order of MIRRORED_REGISTRIES.
    """
    return str(mirror_subnet(cluster_name)[2 + list(MIRRORED_REGISTRIES).index(registry)])


def mirror_endpoint(cluster_name: str, registry: str) -> str:
    """`<address>:<port>` of `registry`'s mirror, where nodes and BuildKit reach it: an address, so
    that no resolver is asked (see the module's docstring).
    """
    return f"{mirror_address(cluster_name, registry)}:{MIRROR_PORT}"


def job_mirror_endpoints(image_mirrors: Mapping[str, str]) -> list[tuple[str, int]]:
    """(address, port) of each mirror a CI job may reach (BUILDKIT_MIRRORED), from phase1's
    `imageMirrors` output (`mirrors`; empty without the cache): what the image-build runner's egress
    NetworkPolicy allows (`runner_egress.mirror_rules`), as `<address>/32` on TCP `<port>`. A mirror
    that is not an address is refused: a name would be resolved, and no policy can follow it.
    """
    endpoints = []
    for registry in (registry for registry in BUILDKIT_MIRRORED if image_mirrors.get(registry)):
        address, _, port = image_mirrors[registry].rpartition(":")
        try:
            endpoints.append((str(ipaddress.ip_address(address)), int(port)))
        except ValueError:
            raise ValueError(f"imageMirrors: the {registry} mirror {shown(image_mirrors[registry])} is not <address>:<port>") from None
    return endpoints


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
        "storage:\n"
        "  filesystem:\n"
        "    rootdirectory: /var/lib/registry\n"
        # The TTL's expiry deletes through the storage driver, which refuses without this
        # (registry/storage/linkedblobstore.go; docs/content/recipes/mirror.md). Clients still cannot
        # delete: a cache refuses their deletes and pushes (registry/handlers/manifests.go, proxyblobstore.go).
        "  delete:\n"
        "    enabled: true\n"
        "http:\n"
        f'  addr: ":{MIRROR_PORT}"\n'
        "proxy:\n"
        f'  remoteurl: "{MIRRORED_REGISTRIES[registry]}"\n'
        # A budget: what no pull asked for in CACHE_TTL leaves the disk (0s would keep all for ever).
        f"  ttl: {CACHE_TTL}\n"
    )


def hosts_toml(cluster_name: str, registry: str) -> str:
    """Containerd's hosts.toml for `registry`: its mirror first, then the registry itself."""
    return (
        f'server = "{MIRRORED_REGISTRIES[registry]}"\n\n'
        f'[host."http://{mirror_endpoint(cluster_name, registry)}"]\n'
        '  capabilities = ["pull", "resolve"]\n'
        f'  dial_timeout = "{DIAL_TIMEOUT}"\n'
    )


MIRROR_SCRIPT_ENVIRONMENT = {
    "CACHE_MARKER": CACHE_MARKER,
    "CACHE_LABEL": CACHE_LABEL,
    "OWNER_LABEL": OWNER_LABEL,
    "SPEC_LABEL": SPEC_LABEL,
    "CONFIG_PATH": CONFIG_PATH,
    "STORAGE": STORAGE,
}
"""The names the mirror's scripts read from their environment, the same for every mirror."""

MIRROR_UP_SCRIPT = script("image_cache_mirror_up.sh")
"""Start the mirror of $REGISTRY, or keep the one that runs when it was started from the same image,
configuration and folder (an `up` re-run after a crash half-way finds it so)."""

MIRROR_DOWN_SCRIPT = script("image_cache_mirror_down.sh")
"""Remove the mirror container, never its storage. Docker gone: nothing of it runs, nothing to do."""

NETWORK_SCRIPT = script("image_cache_network.sh")
"""Make the mirrors' network with its fixed subnet, or keep the one this stack made so."""

NETWORK_DOWN_SCRIPT = script("image_cache_network_down.sh")
"""Remove the mirrors' network after its mirrors left it, disconnecting the cluster's nodes first (a
replaced network goes while they run); fail while it is still there, so Pulumi never forgets it."""

JOIN_SCRIPT = script("image_cache_join.sh")
"""Connect the cluster's nodes to the mirrors' network once kind has made them (Docker keeps a
container's networks across its restarts)."""


HOSTS_SCRIPT = script("image_cache_hosts.sh")
"""Write containerd's hosts.toml for each of $REGISTRIES under $HOSTS_DIR (`hosts_environment`)."""

HOSTS_REMOVAL_SCRIPT = """\
for registry in $REGISTRIES; do rm -rf "${HOSTS_DIR:?}/${registry:?}"; done
echo "blueprint: the image cache stays in $CACHE_DIR; 'uv run blueprint destroy --wipe-cache' removes it" >&2
"""
"""Remove the hosts.toml folders HOSTS_SCRIPT wrote (the data folder may be gone: nothing to do), and
say, once for all mirrors, that their cache stays."""


def hosts_environment(cluster_name: str, registries: tuple[str, ...]) -> dict[str, str]:
    """HOSTS_SCRIPT's registries, and each one's hosts.toml in `HOSTS_TOML_<registry>` (`.` and `-`
    as `_`), which it reads with printenv (POSIX sh names a variable by a variable only through eval).
    """
    files = {f"HOSTS_TOML_{registry.replace('.', '_').replace('-', '_')}": hosts_toml(cluster_name, registry) for registry in registries}
    return {"REGISTRIES": " ".join(registries), **files}


MIRROR_UP_SCRIPTS = frozenset(for_engine(MIRROR_UP_SCRIPT, engine) for engine in ENGINES)
"""The mirror's start script on each engine: how a recorded mirror command is told from others."""


def network_ip_range(cluster_name: str, engine: str) -> str:
    """`node_ip_range` as `engine` takes it and says it back: Docker a CIDR block, Podman <start>-<end>
    (podman-network-create.1.md `--ip-range`; a block would be leased up to its broadcast address, which is
    the subnet's own here, so the range stops one short).
    """
    block = node_ip_range(cluster_name)
    return str(block) if engine == DOCKER else podman_ip_range(str(block[1]), str(block[-2]))


def mirror_cache_folder(command_inputs: dict[str, object]) -> str | None:
    """The image cache folder a mirror command (from a plan or a state) stores into, else None."""
    environment = command_inputs.get("environment")
    if command_inputs.get("create") not in MIRROR_UP_SCRIPTS or not isinstance(environment, dict):
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
    engine: str = DOCKER
    """The container engine the mirrors and their network are on (components/engine.py)."""

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
        self._cluster_name = args.cluster_name
        self._engine = args.engine
        network_environment = {"NETWORK": mirror_network(args.cluster_name), "OWNER": args.owner, "OWNER_LABEL": OWNER_LABEL}
        network = local.Command(
            f"{name}-mirrors-network",
            create=for_engine(NETWORK_SCRIPT, args.engine),
            delete=for_engine(NETWORK_DOWN_SCRIPT, args.engine),
            environment={
                **network_environment,
                "CLUSTER": args.cluster_name,
                "SUBNET": str(mirror_subnet(args.cluster_name)),
                "GATEWAY": str(mirror_subnet(args.cluster_name)[1]),
                "IP_RANGE": network_ip_range(args.cluster_name, args.engine),
            },
            logging=local.Logging.STDERR,
            # Another subnet is another network: the old one goes first (its name stays).
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(replace_on_changes=["*"], delete_before_replace=True)),
        )
        self.mirrors = [
            local.Command(
                f"{name}-{registry.replace('.', '-')}",
                create=for_engine(MIRROR_UP_SCRIPT, args.engine),
                delete=for_engine(MIRROR_DOWN_SCRIPT, args.engine),
                environment={
                    "CONTAINER": mirror_container(args.cluster_name, registry),
                    "REGISTRY": registry,
                    "CACHE_DIR": str(args.cache_dir),
                    "MIRROR_CONFIG": mirror_config(registry),
                    "IMAGE": args.image,
                    "OWNER": args.owner,
                    "NETWORK": mirror_network(args.cluster_name),
                    "ADDRESS": mirror_address(args.cluster_name, registry),
                    **MIRROR_SCRIPT_ENVIRONMENT,
                },
                logging=local.Logging.STDERR,
                # An input on the network, so that a replaced network takes its mirrors down before it:
                # the engine deletes first only dependents whose Diff, with such inputs unknown, says
                # replace (pulumi/pulumi step_generator.go `calculateDependentReplacements`), which
                # `triggers` does (pulumi-command: replaceOnChanges) and `depends_on` does not.
                triggers=[network.id],
                # Any change makes the container anew, and its name stays: the old one goes first.
                opts=pulumi.ResourceOptions.merge(
                    child, pulumi.ResourceOptions(replace_on_changes=["*"], delete_before_replace=True, depends_on=[network])
                ),
            )
            for registry in args.registries
        ]
        hosts = local.Command(
            f"{name}-hosts",
            create=HOSTS_SCRIPT,
            update=HOSTS_SCRIPT,
            delete=HOSTS_REMOVAL_SCRIPT,
            environment={
                "HOSTS_DIR": str(args.hosts_dir),
                "CACHE_DIR": str(args.cache_dir),
                **hosts_environment(args.cluster_name, args.registries),
            },
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[args.hosts_dir_claim])),
        )
        self.ready = [*self.mirrors, hosts]
        self.register_outputs({})

    def join(self, cluster: pulumi.CustomResource) -> local.Command:
        """Connect the nodes of `cluster` to the mirrors' network once kind has made them."""
        return local.Command(
            f"{self._name_prefix}-nodes-joined",
            create=for_engine(JOIN_SCRIPT, self._engine),
            update=for_engine(JOIN_SCRIPT, self._engine),
            delete="true",
            environment={
                "CLUSTER": self._cluster_name,
                "NETWORK": mirror_network(self._cluster_name),
                "CONTAINERS": " ".join(self._containers),
            },
            # Again whenever the cluster (its nodes) or a mirror (its network, made anew with it) is new.
            triggers=[cluster.id, *(mirror.id for mirror in self.mirrors)],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[cluster, *self.mirrors]),
        )
