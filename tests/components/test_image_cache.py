"""The image cache: pull-through mirrors before the cluster, containerd's hosts.toml pointing every
node at them, and a cache folder that every destroy keeps.

The mirrors' configuration is checked against the keys the registry reads (distribution v3.1.1,
configuration/configuration.go: its parser ignores unknown keys, so a misspelt one would silently
make a plain registry, not a cache), and the hosts.toml files against containerd's format
(containerd v2.2.0, core/remotes/docker/config/hosts.go). The mirror's scripts run for real, with a
fake `docker` on PATH that records what it is asked.
"""

from __future__ import annotations

import ipaddress
import os
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.lifecycle import destroy_view
from components import image_cache
from components.image_cache import (
    CACHE_LABEL,
    CACHE_MARKER,
    MIRRORED_REGISTRIES,
    OWNER_LABEL,
    hosts_toml,
    mirror_address,
    mirror_config,
    mirror_container,
    mirror_network,
    mirror_subnet,
    node_ip_range,
)
from components.kind_cluster import REGISTRY_HOSTS_SUBDIR, KindClusterArgs, cluster_id
from stacks import outputs
from stacks.config.phases import MAX_GITLAB_NODES, MAX_RUNNER_NODES
from tests.plans import COMMAND, fake_command, kind_config_of, planned, run_script, waits_for
from tests.stacks.test_cluster_replacement import with_input_dependencies

MIRROR_NAMES = [f"kind-image-cache-{registry.replace('.', '-')}" for registry in MIRRORED_REGISTRIES]

# The yaml keys of distribution v3.1.1's Configuration that a mirror sets, with the keys each takes
# (configuration/configuration.go: `Configuration`, `Log`, `HTTP`, `Proxy`; `Storage` is a map of one
# driver to its parameters plus "maintenance", "cache", "delete", "redirect" and "tag", each a map of
# parameters; the filesystem driver's parameters are "rootdirectory" and "maxthreads",
# registry/storage/driver/filesystem/driver.go; "delete" takes "enabled").
REGISTRY_KEYS: dict[str, Any] = {
    "version": None,
    "log": {"accesslog", "level", "formatter", "fields", "hooks", "reportcaller"},
    "storage": {"filesystem": {"rootdirectory", "maxthreads"}, "delete": {"enabled"}, "maintenance": None, "cache": None},
    "http": {"addr", "net", "host", "prefix", "secret", "relativeurls", "draintimeout", "tls", "headers", "debug", "http2", "h2c"},
    "proxy": {"remoteurl", "username", "password", "exec", "ttl", "cachewritetimeout"},
}
# containerd v2.2.0 hostFileConfig (core/remotes/docker/config/hosts.go): the top level takes `server`
# and the `host` table, and each host and the top level the same fields.
CONTAINERD_HOST_KEYS = {"capabilities", "ca", "client", "skip_verify", "header", "override_path", "dial_timeout"}
CONTAINERD_CAPABILITIES = {"pull", "resolve", "push"}
GO_DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")


def go_duration_seconds(text: str) -> float:
    """A Go `time.ParseDuration` string as seconds (the subset these files use)."""
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
    assert GO_DURATION.match(text), text
    return sum(float(number) * units[unit] for number, _, unit in re.findall(r"(\d+(\.\d+)?)(ns|us|µs|ms|s|m|h)", text))


def mirror(result: Any, registry: str) -> dict[str, Any]:
    return dict(result.one(COMMAND, f"kind-image-cache-{registry.replace('.', '-')}"))


def test_phase1_runs_one_mirror_per_registry_the_cache_covers() -> None:
    result = planned("phase1")
    assert sorted(r["name"] for r in result.resources if r["name"] in MIRROR_NAMES) == sorted(MIRROR_NAMES)
    containers = {mirror(result, registry)["inputs"]["environment"]["CONTAINER"] for registry in MIRRORED_REGISTRIES}
    assert len(containers) == len(MIRRORED_REGISTRIES)


def test_the_cluster_waits_for_every_mirror_and_the_hosts_files() -> None:
    result = planned("phase1")
    before_cluster = waits_for(result, result.one(COMMAND, "kind-cluster")["urn"])
    assert {result.one(COMMAND, name)["urn"] for name in [*MIRROR_NAMES, "kind-image-cache-hosts"]} <= before_cluster


def test_the_hosts_files_are_written_after_the_data_folder_is_claimed() -> None:
    result = planned("phase1")
    hosts = result.one(COMMAND, "kind-image-cache-hosts")
    assert result.one(COMMAND, "kind-data-folder")["urn"] in waits_for(result, hosts["urn"])
    assert hosts["inputs"]["environment"]["HOSTS_DIR"] == str(Path(result.outputs[outputs.DATA_DIR]["value"]) / REGISTRY_HOSTS_SUBDIR)


def test_the_nodes_join_the_mirrors_network_once_the_cluster_has_made_them() -> None:
    result = planned("phase1")
    network = result.one(COMMAND, "kind-image-cache-nodes-joined")
    assert result.one(COMMAND, "kind-cluster")["urn"] in network["dependsOn"]
    environment = network["inputs"]["environment"]
    assert (environment["CLUSTER"], environment["NETWORK"]) == ("blueprint", mirror_network("blueprint"))
    containers = environment["CONTAINERS"].split()
    assert sorted(containers) == sorted(mirror_container("blueprint", registry) for registry in MIRRORED_REGISTRIES)


def test_every_mirror_waits_for_its_network() -> None:
    result = planned("phase1")
    network = result.one(COMMAND, "kind-image-cache-mirrors-network")
    assert network["inputs"]["environment"]["SUBNET"] == str(mirror_subnet("blueprint"))
    for registry in MIRRORED_REGISTRIES:
        assert network["urn"] in mirror(result, registry)["dependsOn"]


@pytest.mark.parametrize("preview", [False, True])
def test_a_replaced_mirrors_network_takes_its_mirrors_and_the_join_down_before_it(monkeypatch: pytest.MonkeyPatch, preview: bool) -> None:
    """The network is replaced delete-first. Before deleting it the engine deletes only what its
    provider's Diff says to replace once every input depending on a replaced resource is unknown
    (pulumi/pulumi pkg/resource/deploy/step_generator.go `calculateDependentReplacements`); for a
    command that is a `triggers` depending on it (pulumi-command: `triggers` is replaceOnChanges),
    `depends_on` alone is not. Else `docker network rm` meets the mirrors, and the nodes, still on it."""
    result = with_input_dependencies(monkeypatch, "phase1", preview=preview)
    replaced = {result.one(COMMAND, "kind-image-cache-mirrors-network")["urn"]}
    for resource in result.resources:  # dependencies first
        if replaced & set(resource["inputDependencies"].get("triggers", [])):
            replaced.add(resource["urn"])
    for name in [*MIRROR_NAMES, "kind-image-cache-nodes-joined"]:
        assert result.one(COMMAND, name)["urn"] in replaced, f"{name} would stay on the network its replacement removes"


def test_the_nodes_address_range_holds_the_most_nodes_the_config_allows() -> None:
    result = planned("phase1", gitlabNodes=str(MAX_GITLAB_NODES), runnerNodes=str(MAX_RUNNER_NODES))
    environment = result.one(COMMAND, "kind-image-cache-mirrors-network")["inputs"]["environment"]
    subnet = ipaddress.IPv4Network(environment["SUBNET"])
    # Docker gives no node the subnet's own address, its broadcast (moby libnetwork ipam) or the gateway.
    reserved = {subnet.network_address, subnet.broadcast_address, ipaddress.IPv4Address(environment["GATEWAY"])}
    free = set(ipaddress.IPv4Network(environment["IP_RANGE"])) - reserved
    assert len(free) >= len(kind_config_of(result)["nodes"]) == 1 + MAX_GITLAB_NODES + MAX_RUNNER_NODES


def test_the_dev_stack_runs_the_mirrors_of_its_own_cluster() -> None:
    result = planned("dev")
    cluster = result.outputs[outputs.CLUSTER_NAME]["value"]
    assert mirror(result, "docker.io")["inputs"]["environment"]["CONTAINER"] == mirror_container(cluster, "docker.io")


@pytest.mark.parametrize("preserve", ["true", "false"])
def test_every_destroy_keeps_the_cache_folder_whatever_preserve_data_says(preserve: str) -> None:
    result = planned("phase1", preserveData=preserve)
    view = destroy_view(result)
    cache = result.outputs[outputs.IMAGE_CACHE_DIR]["value"]
    assert {"path": cache, "destroy": "keep"} in (view.folders or [])


def run_mirror_delete(tmp_path: Path, labelled_owner: str | None) -> tuple[Any, str, Path]:
    """The mirror's delete over a cache folder, with a container whose owner label is `labelled_owner`
    (None: no such container)."""
    command = mirror(planned("phase1"), "quay.io")
    cache = tmp_path / "cache"
    (cache / "quay.io" / "storage" / "docker").mkdir(parents=True)
    calls = tmp_path / "calls"
    answer = "exit 1" if labelled_owner is None else f"echo {labelled_owner!r}"
    fake_command(tmp_path / "bin", "docker", f'echo "$*" >> {calls}\ncase "$1" in inspect) {answer} ;; esac\n')
    done = run_script(command, "delete", path_prefix=tmp_path / "bin", env={"CACHE_DIR": str(cache)})
    return done, calls.read_text(), cache


def test_a_destroy_removes_the_mirror_containers_but_not_their_storage(tmp_path: Path) -> None:
    owner = mirror(planned("phase1"), "quay.io")["inputs"]["environment"]["OWNER"]
    done, calls, cache = run_mirror_delete(tmp_path, owner)
    assert done.returncode == 0, done.stderr
    assert f"rm --force {mirror_container('blueprint', 'quay.io')}" in calls
    assert (cache / "quay.io" / "storage" / "docker").is_dir()


def test_a_destroy_leaves_a_container_of_that_name_it_did_not_start(tmp_path: Path) -> None:
    done, calls, _ = run_mirror_delete(tmp_path, "<no value>")
    assert done.returncode == 0, done.stderr
    assert "rm " not in calls
    assert "did not start" in done.stderr


def test_image_cache_false_runs_no_mirror_and_writes_no_hosts_file() -> None:
    result = planned("phase1", imageCache="false")
    assert not [r for r in result.resources if "image-cache" in r["name"]]
    assert result.outputs[outputs.IMAGE_MIRRORS]["value"] == {}
    assert result.outputs[outputs.IMAGE_CACHE_DIR]["value"] == ""


def test_the_cache_folder_is_the_configured_one(tmp_path: Path) -> None:
    result = planned("phase1", imageCacheDir=str(tmp_path / "images"))
    assert mirror(result, "ghcr.io")["inputs"]["environment"]["CACHE_DIR"] == str(tmp_path / "images")


def test_turning_the_cache_on_or_moving_it_does_not_replace_the_cluster(tmp_path: Path) -> None:
    def args(cache: Path | None) -> KindClusterArgs:
        return KindClusterArgs(
            cluster_name="blueprint", gitlab_nodes=3, runner_nodes=1, data_dir=tmp_path / "data", preserve_data=False,
            http_port=80, https_port=443, ssh_port=2222, openbao_port=8200, api_server_port=6443, owner="o",
            data_layout="0.1.0", image_cache_dir=cache, stack_file="",
        )  # fmt: skip

    assert cluster_id(args(None)) == cluster_id(args(tmp_path / "a")) == cluster_id(args(tmp_path / "b"))


@pytest.mark.parametrize("registry", list(MIRRORED_REGISTRIES))
def test_every_key_of_a_mirrors_config_is_one_the_registry_reads(registry: str) -> None:
    def unknown(config: dict[str, Any], allowed: Any, path: str) -> list[str]:
        if allowed is None:
            return []
        if isinstance(allowed, set):
            return [f"{path}.{key}" for key in config if key not in allowed]
        found = []
        for key, value in config.items():
            if key not in allowed:
                found.append(f"{path}.{key}")
            elif isinstance(value, dict):
                found += unknown(value, allowed[key], f"{path}.{key}")
        return found

    config = yaml.safe_load(mirror_config(registry))
    assert unknown(config, REGISTRY_KEYS, "") == []
    assert config["version"] == "0.1"  # configuration.CurrentVersion


@pytest.mark.parametrize("registry", list(MIRRORED_REGISTRIES))
def test_a_mirror_proxies_its_registry_and_deletes_what_it_cached_after_thirty_days(registry: str) -> None:
    config = yaml.safe_load(mirror_config(registry))
    assert config["proxy"]["remoteurl"] == MIRRORED_REGISTRIES[registry]
    # A budget: 0 would keep everything for ever (registry/proxy/proxyregistry.go); unset is 7 days.
    assert go_duration_seconds(config["proxy"]["ttl"]) == 30 * 24 * 3600
    # The expiry deletes through the storage driver, which refuses unless deletes are enabled
    # (registry/proxy/proxyregistry.go OnBlobExpire -> linkedblobstore.go Delete: ErrUnsupported).
    assert config["storage"]["delete"] == {"enabled": True}


def test_docker_hubs_mirror_proxies_its_registry_api_host() -> None:
    assert yaml.safe_load(mirror_config("docker.io"))["proxy"]["remoteurl"] == "https://registry-1.docker.io"


@pytest.mark.parametrize("registry", list(MIRRORED_REGISTRIES))
def test_every_hosts_toml_key_is_one_containerd_reads(registry: str) -> None:
    document = tomllib.loads(hosts_toml("blueprint", registry))
    assert set(document) <= {"server", "host", *CONTAINERD_HOST_KEYS}
    for host in document["host"].values():
        assert set(host) <= CONTAINERD_HOST_KEYS
        assert set(host["capabilities"]) <= CONTAINERD_CAPABILITIES
        assert GO_DURATION.match(host["dial_timeout"])


@pytest.mark.parametrize("registry", list(MIRRORED_REGISTRIES))
def test_nodes_pull_through_the_mirror_first_and_from_the_registry_when_it_is_down(registry: str) -> None:
    document = tomllib.loads(hosts_toml("blueprint", registry))
    # containerd tries the hosts in order, then `server` (docs/hosts.md); resolve too, so a tag resolves offline.
    # By its fixed address: no resolver is asked, which could answer for a mirror that is down.
    assert list(document["host"]) == [f"http://{mirror_address('blueprint', registry)}:5000"]
    assert set(next(iter(document["host"].values()))["capabilities"]) == {"pull", "resolve"}
    assert document["server"] == MIRRORED_REGISTRIES[registry]


def test_the_hosts_script_writes_one_hosts_toml_per_registry_and_its_delete_removes_them(tmp_path: Path) -> None:
    command = planned("phase1").one(COMMAND, "kind-image-cache-hosts")
    hosts_dir = tmp_path / "certs.d"
    (hosts_dir / "registry.local.example.net").mkdir(parents=True)  # phase2's, not the cache's
    assert run_script(command, "create", env={"HOSTS_DIR": str(hosts_dir)}).returncode == 0
    for registry in MIRRORED_REGISTRIES:
        assert (hosts_dir / registry / "hosts.toml").read_text() == hosts_toml("blueprint", registry)
    assert run_script(command, "delete", env={"HOSTS_DIR": str(hosts_dir)}).returncode == 0
    assert sorted(path.name for path in hosts_dir.iterdir()) == ["registry.local.example.net"]


DOCKER_LOG = """\
echo "$*" >> "$CALLS"
case "$1 $2" in
  "info "*) [ -n "${DOCKER_DOWN:-}" ] && exit 1; echo "${SECURITY:-[name=seccomp]}"; exit 0 ;;
  "network inspect") [ -n "${NETWORK_FOUND:-}" ] || exit 1; echo "$NETWORK_FOUND"; exit 0 ;;
  "network create") [ -z "${NETWORK_REFUSED:-}" ] || { echo "$NETWORK_REFUSED" >&2; exit 1; } ;;
  "inspect -f")
    case "$3" in
      *Status*) echo "${STATUS:-running} ${RESTARTS_AFTER:-0}"; exit 0 ;;
      *RestartCount*) echo 0; exit 0 ;;
    esac
    [ -n "${EXISTING_LABELS:-}" ] || exit 1
    case "$3" in *owner*) echo "$EXISTING_OWNER" ;; *) echo "$EXISTING_SPEC" ;; esac ;;
  "logs "*) echo "configuration error: unknown storage driver" >&2 ;;
esac
exit 0
"""


@pytest.fixture
def docker(tmp_path: Path) -> Path:
    fake_command(tmp_path / "bin", "docker", DOCKER_LOG)
    fake_command(tmp_path / "bin", "sleep", "exit 0\n")  # the script waits 2 s for a registry that exits at once
    return tmp_path / "bin"


def run_mirror(tmp_path: Path, docker: Path, **env: str) -> tuple[Any, list[str]]:
    command = mirror(planned("phase1"), "docker.io")
    calls = tmp_path / "calls"
    calls.unlink(missing_ok=True)
    done = run_script(command, "create", path_prefix=docker, env={"CALLS": str(calls), "CACHE_DIR": str(tmp_path / "cache"), **env})
    return done, calls.read_text().splitlines() if calls.exists() else []


def test_a_mirror_starts_as_the_host_user_storing_in_the_cache_folder(tmp_path: Path, docker: Path) -> None:
    done, calls = run_mirror(tmp_path, docker)
    assert done.returncode == 0, done.stderr
    run = next(call for call in calls if call.startswith("run "))
    assert f"--user={os.getuid()}:{os.getgid()}" in run.split()
    assert f"--label {CACHE_LABEL}={tmp_path / 'cache'}" in run
    # --mount, not --volume: a missing source is an error, never a folder Docker makes as root.
    assert f"type=bind,source={tmp_path / 'cache' / 'docker.io' / 'storage'},target=/var/lib/registry" in run
    # registry:3 reads its config there (the image's CMD); elsewhere it would be a plain registry.
    assert f"type=bind,source={tmp_path / 'cache' / 'docker.io' / 'config.yml'},target=/etc/distribution/config.yml,readonly" in run
    assert (tmp_path / "cache" / CACHE_MARKER).is_file()
    assert yaml.safe_load((tmp_path / "cache" / "docker.io" / "config.yml").read_text()) == yaml.safe_load(mirror_config("docker.io"))


def test_a_mirror_publishes_no_host_port(tmp_path: Path, docker: Path) -> None:
    _, calls = run_mirror(tmp_path, docker)
    run = next(call for call in calls if call.startswith("run "))
    assert " -p " not in run
    assert "--publish" not in run


def test_a_mirror_runs_at_its_fixed_address_on_the_mirrors_network(tmp_path: Path, docker: Path) -> None:
    _, calls = run_mirror(tmp_path, docker)
    run = next(call for call in calls if call.startswith("run ")).split()
    assert f"--network={mirror_network('blueprint')}" in run
    assert f"--ip={mirror_address('blueprint', 'docker.io')}" in run


def run_network(tmp_path: Path, docker: Path, **env: str) -> tuple[Any, list[str]]:
    command = planned("phase1").one(COMMAND, "kind-image-cache-mirrors-network")
    calls = tmp_path / "calls"
    calls.unlink(missing_ok=True)
    done = run_script(command, "create", path_prefix=docker, env={"CALLS": str(calls), **env})
    return done, calls.read_text().splitlines() if calls.exists() else []


def test_the_mirrors_network_has_a_fixed_subnet_whose_upper_half_goes_to_the_nodes(tmp_path: Path, docker: Path) -> None:
    done, calls = run_network(tmp_path, docker)
    assert done.returncode == 0, done.stderr
    subnet = mirror_subnet("blueprint")
    create = next(call for call in calls if call.startswith("network create ")).split()
    assert f"--subnet={subnet}" in create
    assert f"--ip-range={node_ip_range('blueprint')}" in create
    assert f"--gateway={subnet[1]}" in create  # given: with --ip-range, the gateway is not left to Docker
    # Docker refuses a fixed address (--ip) on a network whose subnet it chose itself, such as kind's
    # IPv4 one (moby api/types/network/endpoint.go `validateEndpointIPAddress`): hence a subnet of ours.
    for registry in MIRRORED_REGISTRIES:
        address = ipaddress.ip_address(mirror_address("blueprint", registry))
        assert address in subnet
        assert address not in node_ip_range("blueprint")
        assert address not in (subnet[0], subnet[1])  # the network's own and its gateway


def test_a_network_of_that_name_made_otherwise_is_refused(tmp_path: Path, docker: Path) -> None:
    done, calls = run_network(tmp_path, docker, NETWORK_FOUND="10.0.0.0/24= |")
    assert done.returncode == 1
    assert "set another blueprint:clusterName" in done.stderr
    assert not [call for call in calls if call.startswith("network create")]


def test_a_subnet_docker_refuses_fails_the_up_with_why_and_the_way_out(tmp_path: Path, docker: Path) -> None:
    done, _ = run_network(tmp_path, docker, NETWORK_REFUSED="Pool overlaps with other one on this address space")
    assert done.returncode == 1
    assert "Pool overlaps" in done.stderr
    assert "blueprint:clusterName" in done.stderr


def test_a_rerun_keeps_the_mirrors_network_this_stack_made(tmp_path: Path, docker: Path) -> None:
    environment = planned("phase1").one(COMMAND, "kind-image-cache-mirrors-network")["inputs"]["environment"]
    found = f"{environment['SUBNET']}={environment['IP_RANGE']} |{environment['OWNER']}"
    done, calls = run_network(tmp_path, docker, NETWORK_FOUND=found)
    assert done.returncode == 0, done.stderr
    assert not [call for call in calls if call.startswith("network create")]


def test_rootless_docker_runs_the_mirror_as_its_own_root_which_is_the_host_user(tmp_path: Path, docker: Path) -> None:
    _, calls = run_mirror(tmp_path, docker, SECURITY="[name=seccomp name=rootless]")
    assert "--user=0:0" in next(call for call in calls if call.startswith("run "))


def test_a_rerun_keeps_the_mirror_that_runs_from_the_same_spec(tmp_path: Path, docker: Path) -> None:
    _, first = run_mirror(tmp_path, docker)
    spec = re.search(r"blueprint.mirror-spec=(\S+)", next(call for call in first if call.startswith("run ")))
    assert spec
    owner = mirror(planned("phase1"), "docker.io")["inputs"]["environment"]["OWNER"]
    done, again = run_mirror(tmp_path, docker, EXISTING_LABELS="yes", EXISTING_OWNER=owner, EXISTING_SPEC=spec.group(1))
    assert done.returncode == 0, done.stderr
    assert not [call for call in again if call.startswith(("run ", "rm "))]
    assert [call for call in again if call.startswith("start ")]


def test_a_mirror_another_stack_started_is_never_taken_over(tmp_path: Path, docker: Path) -> None:
    done, calls = run_mirror(tmp_path, docker, EXISTING_LABELS="yes", EXISTING_OWNER="blueprint/phase1@0123456789abcdef", EXISTING_SPEC="1")
    assert done.returncode == 1
    assert "set another blueprint:clusterName" in done.stderr
    assert not [call for call in calls if call.startswith(("run ", "rm "))]


def test_a_mirror_says_docker_must_run_when_it_does_not(tmp_path: Path, docker: Path) -> None:
    done, _ = run_mirror(tmp_path, docker, DOCKER_DOWN="yes")
    assert done.returncode == 1
    assert "Docker does not answer" in done.stderr
    assert "blueprint doctor" in done.stderr


def test_phase1_exports_each_registrys_mirror_for_the_later_phases() -> None:
    mirrors = planned("phase1").outputs[outputs.IMAGE_MIRRORS]["value"]
    assert mirrors == {registry: f"{mirror_address('blueprint', registry)}:5000" for registry in MIRRORED_REGISTRIES}
    assert mirrors == image_cache.mirrors("blueprint")


def test_the_owner_label_names_the_stack(tmp_path: Path, docker: Path) -> None:
    owner = mirror(planned("phase1"), "docker.io")["inputs"]["environment"]["OWNER"]
    assert owner.startswith("blueprint/phase1@")
    _, calls = run_mirror(tmp_path, docker)
    assert f"--label {OWNER_LABEL}={owner}" in next(call for call in calls if call.startswith("run "))


def test_the_network_join_runs_again_whenever_a_mirror_or_the_cluster_is_made_anew() -> None:
    result = planned("phase1")
    triggers = result.one(COMMAND, "kind-image-cache-nodes-joined")["inputs"]["triggers"]
    # The plan's stand-in id of a resource is `<name>-id` (cli/stand_ins.py `resource_id`).
    assert sorted(triggers) == sorted(f"{name}-id" for name in ["kind-cluster", *MIRROR_NAMES])


def test_the_kind_config_points_every_registry_the_nodes_pull_from_at_its_mirror(tmp_path: Path) -> None:
    from cli.images import CONTAINERD, images
    from tests.plans import kind_config_of

    plans = [planned("phase1"), planned("phase2"), planned("phase3")]
    pulled = {image.registry for image in images(plans) if image.puller == CONTAINERD}
    phase1 = plans[0]
    # containerd reads the hosts.toml files from the folder the kind config names, which the nodes mount
    # from the data folder's containerd/certs.d, where phase1 writes one per mirrored registry.
    patch = kind_config_of(phase1)["containerdConfigPatches"][0]
    assert f'config_path = "/var/lib/blueprint/{REGISTRY_HOSTS_SUBDIR}"' in patch
    assert run_script(phase1.one(COMMAND, "kind-image-cache-hosts"), "create", env={"HOSTS_DIR": str(tmp_path)}).returncode == 0
    for registry in pulled:
        written = (tmp_path / registry / "hosts.toml").read_text()
        assert f"http://{mirror_address('blueprint', registry)}:5000" in written, registry


def test_a_mirror_that_exits_at_once_fails_the_up_with_its_log_and_how_to_go_on_without_the_cache(tmp_path: Path, docker: Path) -> None:
    done, calls = run_mirror(tmp_path, docker, STATUS="exited")
    assert done.returncode == 1
    assert "configuration error: unknown storage driver" in done.stderr
    assert "in Pulumi.phase1.yaml, replace 'config: {}' with 'config:' and the line '  blueprint:imageCache: false'" in done.stderr
    assert calls[-1].startswith("rm --force ")  # the next `up` starts it anew, not the broken one again


def test_a_mirror_docker_refuses_to_run_fails_the_up(tmp_path: Path, docker: Path) -> None:
    fake_command(docker, "docker", DOCKER_LOG.replace("exit 0\n", 'case "$1" in run) exit 125 ;; esac\nexit 0\n'))
    done, _ = run_mirror(tmp_path, docker)
    assert done.returncode == 1
    assert "did not start" in done.stderr


def test_a_folder_holding_files_blueprint_did_not_write_is_never_made_the_cache(tmp_path: Path, docker: Path) -> None:
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "thesis.txt").write_text("mine")
    done, calls = run_mirror(tmp_path, docker)
    assert done.returncode == 1
    assert "holds files blueprint did not write" in done.stderr
    assert not (tmp_path / "cache" / CACHE_MARKER).exists()
    assert not [call for call in calls if call.startswith("run ")]


def test_a_cache_folder_that_is_a_link_is_refused(tmp_path: Path, docker: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "cache").symlink_to(tmp_path / "elsewhere")
    done, _ = run_mirror(tmp_path, docker)
    assert done.returncode == 1
    assert "is a link, or not yours" in done.stderr


def test_a_mirror_runs_read_only_without_capabilities(tmp_path: Path, docker: Path) -> None:
    _, calls = run_mirror(tmp_path, docker)
    run = next(call for call in calls if call.startswith("run "))
    for flag in ("--read-only", "--cap-drop=ALL", "--security-opt=no-new-privileges"):
        assert flag in run.split()


def test_docker_restarts_a_mirror_that_stops(tmp_path: Path, docker: Path) -> None:
    # Until its registry answers at start, and after a reboot.
    _, calls = run_mirror(tmp_path, docker)
    assert "--restart=unless-stopped" in next(call for call in calls if call.startswith("run ")).split()


def test_a_mirror_started_from_another_spec_is_made_anew(tmp_path: Path, docker: Path) -> None:
    owner = mirror(planned("phase1"), "docker.io")["inputs"]["environment"]["OWNER"]
    done, calls = run_mirror(tmp_path, docker, EXISTING_LABELS="yes", EXISTING_OWNER=owner, EXISTING_SPEC="an-older-config")
    assert done.returncode == 0, done.stderr
    removed = calls.index(next(call for call in calls if call.startswith("rm -f ")))
    assert any(call.startswith("run ") for call in calls[removed + 1 :])


def test_a_cache_folder_that_is_not_the_users_is_refused(tmp_path: Path, docker: Path) -> None:
    if os.getuid() == 0:
        theirs = tmp_path / "theirs"
        theirs.mkdir()
        os.chown(theirs, 65534, 65534)  # root owns nothing of nobody's: `[ -O ]` says so for root too
    else:
        theirs = Path("/usr/share")  # root's, and no user's own
    done, _ = run_mirror(tmp_path, docker, CACHE_DIR=str(theirs))
    assert done.returncode == 1
    assert "is a link, or not yours" in done.stderr


JOIN_DOCKER = """\
echo "$*" >> "$CALLS"
case "$1" in
  inspect) case "$4" in *missing*) exit 1 ;; *) echo "${NETWORKS:-kind }" ;; esac ;;
  ps) echo "${NODES:-blueprint-control-plane blueprint-worker}" ;;
esac
exit 0
"""


def run_join(tmp_path: Path, containers: str, **env: str) -> tuple[Any, list[str]]:
    command = planned("phase1").one(COMMAND, "kind-image-cache-nodes-joined")
    fake_command(tmp_path / "bin", "docker", JOIN_DOCKER)
    calls = tmp_path / "calls"
    done = run_script(command, "create", path_prefix=tmp_path / "bin", env={"CALLS": str(calls), "CONTAINERS": containers, **env})
    return done, calls.read_text().splitlines()


def test_the_join_connects_every_node_of_the_cluster_to_the_mirrors_network(tmp_path: Path) -> None:
    done, calls = run_join(tmp_path, "blueprint-mirror-docker-io")
    assert done.returncode == 0, done.stderr
    # kind labels each node container with its cluster's name.
    assert "ps --all --filter label=io.x-k8s.kind.cluster=blueprint --format {{.Names}}" in calls
    for node in ("blueprint-control-plane", "blueprint-worker"):
        assert f"network connect blueprint-mirrors {node}" in calls


def test_the_join_leaves_a_node_already_on_the_mirrors_network(tmp_path: Path) -> None:
    _, calls = run_join(tmp_path, "blueprint-mirror-docker-io", NETWORKS="kind blueprint-mirrors ")
    assert not [call for call in calls if call.startswith("network")]


def test_the_join_warns_of_a_mirror_removed_outside_blueprint_and_joins_the_nodes(tmp_path: Path) -> None:
    done, calls = run_join(tmp_path, "missing-mirror blueprint-mirror-quay-io")
    assert done.returncode == 0
    assert "missing-mirror is gone" in done.stderr
    assert "network connect blueprint-mirrors blueprint-worker" in calls


def test_the_mirrors_starting_at_once_over_a_new_folder_all_start(tmp_path: Path, docker: Path) -> None:
    import concurrent.futures

    result = planned("phase1")
    commands = [mirror(result, registry) for registry in MIRRORED_REGISTRIES]
    for attempt in range(10):  # the engine runs them in parallel; a race shows in a few rounds
        cache = tmp_path / f"cache-{attempt}"
        env = {"CALLS": str(tmp_path / "calls"), "CACHE_DIR": str(cache)}
        with concurrent.futures.ThreadPoolExecutor(len(commands)) as pool:
            done = list(pool.map(lambda command, env=env: run_script(command, "create", path_prefix=docker, env=env), commands))
        assert [run.returncode for run in done] == [0] * len(commands), [run.stderr for run in done if run.returncode]
        assert (cache / CACHE_MARKER).is_file()


def test_the_mirror_urn_the_status_gives_is_the_one_the_plan_records() -> None:
    from components.image_cache import mirror_urn

    for registry in MIRRORED_REGISTRIES:
        assert mirror(planned("phase1"), registry)["urn"] == mirror_urn("phase1", registry)


def test_turning_the_cache_off_or_moving_it_leaves_the_cluster_commands_inputs_as_they_are(tmp_path: Path) -> None:
    def cluster_inputs(**config: str) -> tuple[Any, Any, Any]:
        inputs = planned("phase1", **config).one(COMMAND, "kind-cluster")["inputs"]
        return inputs["stdin"], inputs["environment"], inputs["create"]

    assert cluster_inputs() == cluster_inputs(imageCache="false") == cluster_inputs(imageCacheDir=str(tmp_path / "elsewhere"))


def test_a_mirror_docker_keeps_restarting_fails_the_up(tmp_path: Path, docker: Path) -> None:
    # Docker reports a container it restarts as Running: the restart count tells it crashed meanwhile.
    done, calls = run_mirror(tmp_path, docker, STATUS="running", RESTARTS_AFTER="3")
    assert done.returncode == 1
    assert "did not start" in done.stderr
    assert calls[-1].startswith("rm --force ")


def test_the_refusal_of_a_folder_holding_other_files_names_them(tmp_path: Path, docker: Path) -> None:
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / ".DS_Store").write_bytes(b"Finder")
    done, _ = run_mirror(tmp_path, docker)
    assert "(.DS_Store ...)" in done.stderr


NETWORK_DOCKER = """\
echo "$*" >> "$CALLS"
case "$1 $2" in
  "network inspect") [ -e "$CALLS.removed" ] && exit 1; [ -n "$LABELLED" ] || exit 1; echo "$LABELLED" ;;
  "network rm") [ -n "${STAYS:-}" ] || touch "$CALLS.removed" ;;
  "ps --all") echo "blueprint-control-plane blueprint-worker" ;;
esac
exit 0
"""


def run_network_delete(tmp_path: Path, labelled_owner: str | None, **env: str) -> tuple[Any, list[str]]:
    command = planned("phase1").one(COMMAND, "kind-image-cache-mirrors-network")
    calls = tmp_path / "calls"
    fake_command(tmp_path / "bin", "docker", NETWORK_DOCKER)
    environment = {"CALLS": str(calls), "LABELLED": labelled_owner or "", **env}
    done = run_script(command, "delete", path_prefix=tmp_path / "bin", env=environment)
    return done, calls.read_text().splitlines()


def test_a_destroy_removes_the_mirrors_network_this_stack_made(tmp_path: Path) -> None:
    owner = planned("phase1").one(COMMAND, "kind-image-cache-mirrors-network")["inputs"]["environment"]["OWNER"]
    done, calls = run_network_delete(tmp_path, owner)
    assert done.returncode == 0, done.stderr
    assert f"network rm {mirror_network('blueprint')}" in calls


def test_a_network_delete_disconnects_the_clusters_nodes_before_it_removes_the_network(tmp_path: Path) -> None:
    owner = planned("phase1").one(COMMAND, "kind-image-cache-mirrors-network")["inputs"]["environment"]["OWNER"]
    done, calls = run_network_delete(tmp_path, owner)
    assert done.returncode == 0, done.stderr
    # kind labels every node container with its cluster's name.
    assert "ps --all --filter label=io.x-k8s.kind.cluster=blueprint --format {{.Names}}" in calls
    removed = calls.index(f"network rm {mirror_network('blueprint')}")
    for node in ("blueprint-control-plane", "blueprint-worker"):
        assert calls.index(f"network disconnect -f {mirror_network('blueprint')} {node}") < removed


def test_a_network_delete_fails_while_the_network_is_still_there_saying_why_and_what_to_do(tmp_path: Path) -> None:
    owner = planned("phase1").one(COMMAND, "kind-image-cache-mirrors-network")["inputs"]["environment"]["OWNER"]
    done, _ = run_network_delete(tmp_path, owner, STAYS="yes")
    assert done.returncode == 1
    assert f"docker network inspect {mirror_network('blueprint')}" in done.stderr


def test_a_destroy_leaves_a_network_of_that_name_it_did_not_make(tmp_path: Path) -> None:
    done, calls = run_network_delete(tmp_path, "someone/else@0123456789abcdef")
    assert done.returncode == 0
    assert not [call for call in calls if call.startswith("network rm")]


def test_ci_jobs_reach_only_the_docker_hub_mirror_by_its_address() -> None:
    from components.image_cache import job_mirror_endpoints

    exported = planned("phase1").outputs[outputs.IMAGE_MIRRORS]["value"]
    assert job_mirror_endpoints(exported) == [(mirror_address("blueprint", "docker.io"), 5000)]
    assert job_mirror_endpoints({}) == []  # the cache off: no mirror to allow


def test_registry_k8s_io_has_no_mirror_since_registry_3_1_cannot_proxy_it() -> None:
    from components.image_cache import NOT_MIRRORED

    assert "registry.k8s.io" not in MIRRORED_REGISTRIES
    assert "f215e513" in NOT_MIRRORED["registry.k8s.io"]
    assert not [resource for resource in planned("phase1").resources if resource["urn"].endswith("kind-image-cache-registry-k8s-io")]
