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

from dataclasses import dataclass
from pathlib import Path

import pulumi
from pulumi_command import local

import versions
from components.scripts import script

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

JOIN_SCRIPT = script("image_cache_join.sh")
"""Join the mirrors to kind's network, which the first cluster made after they started (as kind's own
local-registry script does: site/static/examples/kind-with-registry.sh); a mirror started when the
network existed is on it already."""


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
                    **MIRROR_SCRIPT_ENVIRONMENT,
                },
                logging=local.Logging.STDERR,
                # Any change makes the container anew, and its name stays: the old one goes first.
                opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(replace_on_changes=["*"], delete_before_replace=True)),
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
