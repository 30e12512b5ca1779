"""The kind cluster and its data folder: what `kind create` gets, what an update or replacement
does to a running cluster, and what destroy does to the data, for both `preserveData` values.

The recorded `local.Command` scripts are run for real here (with fake `kind` and `docker`
binaries on PATH), the way pulumi-command runs them: `/bin/sh -c` with the recorded environment
and stdin.
"""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

import versions
from components import kind_cluster
from components.kind_cluster import (
    GITLAB_NODE_LABEL,
    NODE_DATA_PATH,
    NODE_LABEL_KEY,
    NODE_PORTS,
    REGISTRY_HOSTS_SUBDIR,
    RUNNER_NODE_LABEL,
    VOLUMES_SUBDIR,
    KindClusterArgs,
    cluster_id,
)
from components.markers import CLUSTER_MARKER, LEASES_FOLDER
from stacks import outputs
from stacks.config import PROJECT_DIR
from tests import crash
from tests.plans import COMMAND, fake_command, kind_config_of, planned, planned_as, run_script, waits_for

# Field names kind v0.31.0 accepts (pkg/apis/config/v1alpha4/types.go, json tags); kind decodes
# its config strictly (pkg/internal/apis/config/encoding/load.go), so any other field fails `kind create`.
KIND_FIELDS = {
    "Cluster": {"kind", "apiVersion", "name", "nodes", "networking", "featureGates", "runtimeConfig",
                "kubeadmConfigPatches", "kubeadmConfigPatchesJSON6902", "containerdConfigPatches",
                "containerdConfigPatchesJSON6902"},
    "Node": {"role", "image", "labels", "extraMounts", "extraPortMappings", "kubeadmConfigPatches",
             "kubeadmConfigPatchesJSON6902"},
    "Networking": {"ipFamily", "apiServerPort", "apiServerAddress", "podSubnet", "serviceSubnet",
                   "disableDefaultCNI", "kubeProxyMode", "dnsSearch"},
    "Mount": {"containerPath", "hostPath", "readOnly", "selinuxRelabel", "propagation"},
    "PortMapping": {"containerPort", "hostPort", "listenAddress", "protocol"},
}  # fmt: skip


def test_kind_config_uses_only_fields_kind_accepts() -> None:
    config = kind_config_of(planned("phase1"))
    assert set(config) <= KIND_FIELDS["Cluster"]
    assert set(config["networking"]) <= KIND_FIELDS["Networking"]
    for node in config["nodes"]:
        assert set(node) <= KIND_FIELDS["Node"]
        for mount in node.get("extraMounts", []):
            assert set(mount) <= KIND_FIELDS["Mount"]
        for mapping in node.get("extraPortMappings", []):
            assert set(mapping) <= KIND_FIELDS["PortMapping"]


def test_default_cluster_has_one_control_plane_three_gitlab_and_one_runner_worker() -> None:
    nodes = kind_config_of(planned("phase1"))["nodes"]
    roles = [(node["role"], node.get("labels", {}).get(NODE_LABEL_KEY)) for node in nodes]
    assert roles == [("control-plane", None)] + [("worker", GITLAB_NODE_LABEL)] * 3 + [("worker", RUNNER_NODE_LABEL)]


def test_node_counts_follow_config() -> None:
    nodes = kind_config_of(planned("phase1", gitlabNodes="2", runnerNodes="2"))["nodes"]
    labels = [node.get("labels", {}).get(NODE_LABEL_KEY) for node in nodes]
    assert (labels.count(GITLAB_NODE_LABEL), labels.count(RUNNER_NODE_LABEL), len(nodes)) == (2, 2, 5)


def test_node_labels_are_our_own_never_under_kubernetes_io() -> None:
    keys = {key for node in kind_config_of(planned("phase1"))["nodes"] for key in node.get("labels", {})}
    assert keys == {NODE_LABEL_KEY}
    prefix = NODE_LABEL_KEY.split("/")[0]
    assert not prefix.endswith(("kubernetes.io", "k8s.io")), "kubelet refuses these label prefixes"


def test_every_node_mounts_only_the_containerd_and_volumes_folders_of_the_data_folder() -> None:
    """Never the data folder itself: phase2's secrets are in it (tests/stacks/test_trust_boundaries.py)."""
    result = planned("phase1")
    data_dir = result.outputs[outputs.DATA_DIR]["value"]
    assert Path(data_dir).is_absolute()
    allowed = [
        {"hostPath": f"{data_dir}/containerd", "containerPath": f"{NODE_DATA_PATH}/containerd"},
        {"hostPath": f"{data_dir}/volumes", "containerPath": f"{NODE_DATA_PATH}/volumes"},
    ]
    for node in kind_config_of(result)["nodes"]:
        mounts = [{key: mount[key] for key in ("hostPath", "containerPath")} for mount in node["extraMounts"]]
        assert mounts[0] == allowed[0], "every node pulls through the registry settings"
        assert mounts in (allowed, allowed[:1])


def node_role(node: dict[str, Any]) -> str:
    return str(node.get("labels", {}).get(NODE_LABEL_KEY) or node["role"])


def test_only_the_gitlab_nodes_mount_the_volumes_folder_never_a_runner_or_the_control_plane() -> None:
    """The databases' files are there: a CI job on a runner node, privileged for image builds, must
    not reach them, and the control plane runs no platform pod (kind keeps its taint with workers)."""
    volumes = f"{NODE_DATA_PATH}/{VOLUMES_SUBDIR}"
    nodes = kind_config_of(planned("phase1", runnerNodes="2"))["nodes"]
    mounting = {node_role(node) for node in nodes if volumes in {m["containerPath"] for m in node["extraMounts"]}}
    assert mounting == {GITLAB_NODE_LABEL}


def test_the_containerd_mount_is_read_only_on_every_node_and_the_volumes_mount_is_not() -> None:
    """The host writes registry settings and the CA there; a node that could write them could make
    every node pull from elsewhere or trust another CA. Volumes are what the databases write."""
    for node in kind_config_of(planned("phase1"))["nodes"]:
        read_only = {mount["containerPath"]: mount.get("readOnly", False) for mount in node["extraMounts"]}
        assert read_only[f"{NODE_DATA_PATH}/containerd"] is True
        assert read_only.get(f"{NODE_DATA_PATH}/volumes", False) is False


def test_the_data_folder_claim_makes_both_mounted_folders_before_the_cluster() -> None:
    """Docker would create a missing mount source itself, as root."""
    result = planned("phase1")
    folder = result.one(COMMAND, "kind-data-folder")
    made = {line.split()[0] for line in folder["inputs"]["environment"]["SUBFOLDERS"].splitlines()}
    assert made == {REGISTRY_HOSTS_SUBDIR, VOLUMES_SUBDIR}
    assert folder["urn"] in result.one(COMMAND, "kind-cluster")["dependsOn"]


def test_relative_data_folder_is_relative_to_the_project_not_the_cwd(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    result = planned("phase1", dataDir="infra/data/somewhere")
    assert result.outputs[outputs.DATA_DIR]["value"] == str(PROJECT_DIR / "infra" / "data" / "somewhere")


def test_host_ports_are_bound_to_loopback_and_map_the_fixed_node_ports() -> None:
    mappings = kind_config_of(planned("phase1", httpPort="8080", sshPort="2022"))["nodes"][0]["extraPortMappings"]
    published = {(m["hostPort"], m["containerPort"]) for m in mappings}
    assert published == {
        (8080, NODE_PORTS.gateway_http),
        (443, NODE_PORTS.gateway_https),
        (2022, NODE_PORTS.gateway_ssh),
        (8200, NODE_PORTS.openbao),
    }
    assert {m["listenAddress"] for m in mappings} == {"127.0.0.1"}


def test_node_ports_are_inside_the_default_node_port_range() -> None:
    for port in (NODE_PORTS.gateway_http, NODE_PORTS.gateway_https, NODE_PORTS.gateway_ssh, NODE_PORTS.openbao):
        assert 30000 <= port <= 32767


def test_api_server_port_is_pinned_on_loopback() -> None:
    networking = kind_config_of(planned("phase1", apiServerPort="7443"))["networking"]
    assert networking == {"apiServerAddress": "127.0.0.1", "apiServerPort": 7443}


def test_every_node_runs_the_image_pinned_by_version_and_digest() -> None:
    images = {node["image"] for node in kind_config_of(planned("phase1"))["nodes"]}
    assert images == {versions.KIND_NODE_IMAGE}
    # GitLab 19 is tested on Kubernetes 1.33-1.35.
    assert re.fullmatch(r"kindest/node:v1\.3[3-5]\.\d+@sha256:[0-9a-f]{64}", versions.KIND_NODE_IMAGE)


def test_containerd_reads_registry_hosts_from_the_shared_data_folder() -> None:
    result = planned("phase1")
    [patch] = kind_config_of(result)["containerdConfigPatches"]
    registry = tomllib.loads(patch)["plugins"]["io.containerd.grpc.v1.cri"]["registry"]
    assert registry["config_path"] == f"{NODE_DATA_PATH}/{REGISTRY_HOSTS_SUBDIR}"
    host_side = Path(result.outputs[outputs.DATA_DIR]["value"]) / REGISTRY_HOSTS_SUBDIR
    assert result.outputs[outputs.REGISTRY_HOSTS_DIR]["value"] == str(host_side)


def test_cluster_is_created_from_the_kind_config_on_stdin() -> None:
    command = planned("phase1").one(COMMAND, "kind-cluster")["inputs"]
    assert 'kind create cluster --name "$KIND_CLUSTER_NAME" --config=-' in command["create"]
    assert command["environment"]["KIND_CLUSTER_NAME"] == "blueprint"


def test_cluster_delete_is_kind_delete_cluster() -> None:
    command = planned("phase1", clusterName="lab").one(COMMAND, "kind-cluster")["inputs"]
    assert 'kind delete cluster --name "$KIND_CLUSTER_NAME"\n' in command["delete"]
    assert command["environment"]["KIND_CLUSTER_NAME"] == "lab"


def cluster_identity(**config: str) -> str:
    return str(planned("phase1", **config).outputs[outputs.CLUSTER_ID]["value"])


@pytest.mark.parametrize("config", [{"gitlabNodes": "2"}, {"httpPort": "8080"}, {"clusterName": "lab"}, {"dataDir": "/tmp/elsewhere"}])
def test_the_cluster_identity_changes_with_what_replaces_the_cluster(config: dict[str, str]) -> None:
    assert cluster_identity(**config) != cluster_identity()


@pytest.mark.parametrize("config", [{"preserveData": "true"}, {"headlamp": "true"}, {"domain": "other.example.net"}])
def test_the_cluster_identity_stays_through_what_updates_the_cluster_in_place(config: dict[str, str]) -> None:
    assert cluster_identity(**config) == cluster_identity()


def replacing(**config: str) -> tuple[str, list[str]]:
    """What replaces the planned cluster command when it changes: its `stdin` (replace_on_changes)
    and its `triggers` (pulumi-command v1.2.1 marks them replaceOnChanges, common/inputs.go)."""
    inputs = planned("phase1", **config).one(COMMAND, "kind-cluster")["inputs"]
    return inputs["stdin"], inputs["triggers"]


@pytest.mark.parametrize(
    "config",
    [
        {"gitlabNodes": "2"},
        {"clusterName": "lab"},
        {"dataDir": "/tmp/elsewhere"},
        {"preserveData": "true"},
        {"domain": "other.example.net"},
    ],
)
def test_the_cluster_identity_changes_exactly_when_the_cluster_command_is_replaced(config: dict[str, str]) -> None:
    assert (cluster_identity(**config) != cluster_identity()) == (replacing(**config) != replacing())


def test_a_kind_config_written_in_another_order_is_another_identity(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The command compares `stdin` as text: the same config written otherwise replaces the cluster."""
    args = KindClusterArgs(
        cluster_name="blueprint", gitlab_nodes=1, runner_nodes=1, data_dir=tmp_path, preserve_data=False,
        http_port=80, https_port=443, ssh_port=2222, openbao_port=8200, api_server_port=6443, owner="o",
        data_layout="0.1.0", stack_file="",
    )  # fmt: skip
    written, config = cluster_id(args), kind_cluster.kind_config(args)
    monkeypatch.setattr(kind_cluster, "kind_config", lambda args: dict(reversed(config.items())))
    assert yaml.safe_load(kind_cluster.replacing_inputs(args)["stdin"]) == config
    assert cluster_id(args) != written


@pytest.mark.parametrize("mode", ["up", "preview"])
@pytest.mark.parametrize(("stack", "provider"), [("phase2", "kubernetes"), ("dev", "kubernetes"), ("phase1", "kind-kubernetes")])
def test_kubernetes_providers_are_keyed_on_the_cluster_identity_which_a_preview_knows(stack: str, provider: str, mode: str) -> None:
    """A provider whose kubeconfig a preview does not know would otherwise show as replaced, and
    every resource on the cluster with it; keyed on the identity, only a new cluster replaces it."""
    result = planned_as(mode, stack, headlamp="true")
    identity = result.one("pulumi:providers:kubernetes", provider)["inputs"]["clusterIdentifier"]
    assert identity == planned(stack if stack != "phase2" else "phase1").outputs[outputs.CLUSTER_ID]["value"]


def test_only_a_new_kind_config_or_name_replaces_the_cluster_deleting_first() -> None:
    cluster = planned("phase1", clusterName="lab").one(COMMAND, "kind-cluster")
    assert "stdin" in cluster["replaceOnChanges"]
    # A change of a trigger replaces the command (pulumi-command): the name and the data folder.
    assert cluster["inputs"]["triggers"] == ["lab", cluster["inputs"]["environment"]["DATA_DIR"]]
    # Not the scripts, nor the rest of their environment (the kind version they check): an update in place.
    assert not {"create", "update", "delete", "environment"} & set(cluster["replaceOnChanges"])
    assert cluster["deleteBeforeReplace"] is True


def test_the_kubeconfig_the_cluster_command_prints_is_secret_and_kept_out_of_logs() -> None:
    cluster = planned("phase1").one(COMMAND, "kind-cluster")
    assert cluster["additionalSecretOutputs"] == ["stdout"]
    assert cluster["inputs"]["logging"] == "stderr"
    assert cluster["inputs"]["addPreviousOutputInEnv"] is False, "updates and deletes must not get the kubeconfig"


FAKE_KIND = """\
echo "$*" >> "$KIND_CALLS"
case "$1 $2" in
  "version ") echo "kind {version} go1.25 linux/amd64" ;;
  "get clusters") [ -f "$KIND_RUNNING" ] && cat "$KIND_RUNNING"; true ;;
  "create cluster") cat > "$KIND_STDIN"; echo "$4" > "$KIND_RUNNING"; echo "Creating cluster" >&2 ;;
  "get kubeconfig") echo "apiVersion: v1 # kubeconfig of $4" ;;
esac
"""


@pytest.fixture
def fake_kind(tmp_path: Path) -> dict[str, str]:
    """A fake `kind` on PATH recording its calls, over a data folder of this test."""
    fake_command(tmp_path / "bin", "kind", FAKE_KIND.format(version=versions.KIND_VERSION))
    (tmp_path / "data").mkdir()
    return {
        "KIND_CALLS": str(tmp_path / "calls"),
        "KIND_RUNNING": str(tmp_path / "running"),
        "KIND_STDIN": str(tmp_path / "stdin"),
        "BIN": str(tmp_path / "bin"),
        "DATA_DIR": str(tmp_path / "data"),
    }


def run_cluster(script: str, fake_kind: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_script(planned("phase1").one(COMMAND, "kind-cluster"), script, path_prefix=Path(fake_kind["BIN"]), env=fake_kind)


def test_create_feeds_the_config_to_kind_and_prints_only_the_kubeconfig(fake_kind: dict[str, str]) -> None:
    done = run_cluster("create", fake_kind)
    assert done.returncode == 0, done.stderr
    assert Path(fake_kind["KIND_STDIN"]).read_text() == planned("phase1").one(COMMAND, "kind-cluster")["inputs"]["stdin"]
    assert done.stdout == "apiVersion: v1 # kubeconfig of blueprint\n"


def test_create_returns_once_the_cluster_is_ready_not_as_soon_as_its_nodes_start(fake_kind: dict[str, str]) -> None:
    """Without `--wait`, kind returns before the control plane is Ready, and what comes next (the
    image cache joining kind's network, phase2's first object) meets a cluster that is not there yet."""
    assert run_cluster("create", fake_kind).returncode == 0
    [create] = [line.split() for line in Path(fake_kind["KIND_CALLS"]).read_text().splitlines() if line.startswith("create cluster")]
    wait = create[create.index("--wait") + 1]
    # kind's own flag, a Go duration with its unit (pkg/cmd/kind/create/cluster/createcluster.go).
    assert re.fullmatch(r"[1-9][0-9]*m", wait), wait


def test_update_reuses_the_cluster_this_stack_created(fake_kind: dict[str, str]) -> None:
    assert run_cluster("create", fake_kind).returncode == 0
    done = run_cluster("update", fake_kind)
    assert done.returncode == 0, done.stderr
    assert Path(fake_kind["KIND_CALLS"]).read_text().count("create cluster") == 1
    assert done.stdout.startswith("apiVersion: v1")


def test_a_cluster_of_that_name_blueprint_did_not_create_is_refused(fake_kind: dict[str, str]) -> None:
    Path(fake_kind["KIND_RUNNING"]).write_text("blueprint\n")
    done = run_cluster("create", fake_kind)
    assert done.returncode == 1
    assert "blueprint did not create it" in done.stderr
    assert "create cluster" not in Path(fake_kind["KIND_CALLS"]).read_text()


def test_a_create_cut_short_anywhere_leaves_a_cluster_the_next_up_adopts(fake_kind: dict[str, str], tmp_path: Path) -> None:
    """A Ctrl-C stops the up's shell while kind goes on making the cluster: the next up must know it for its own."""
    counter = tmp_path / "counter"
    tools = crash.wrap_tools(tmp_path / "tools", counter, {"kind": Path(fake_kind["BIN"]) / "kind"})
    command = planned("phase1").one(COMMAND, "kind-cluster")
    assert crash.run(command, "create", tools, counter, None, fake_kind).returncode == 0
    failures = []
    for cut in range(1, crash.calls(counter) + 1):
        Path(fake_kind["KIND_RUNNING"]).unlink(missing_ok=True)
        (Path(fake_kind["DATA_DIR"]) / CLUSTER_MARKER).unlink(missing_ok=True)
        crash.run(command, "create", tools, counter, cut, fake_kind)
        again = crash.run(command, "create", tools, counter, None, fake_kind)
        if again.returncode != 0:
            failures.append((cut, again.stderr))
    assert failures == []


def test_the_cluster_marker_is_never_written_through_a_link(fake_kind: dict[str, str], tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("mine\n")
    (Path(fake_kind["DATA_DIR"]) / CLUSTER_MARKER).symlink_to(victim)
    done = run_cluster("create", fake_kind)
    assert done.returncode == 0, done.stderr
    assert victim.read_text() == "mine\n"
    assert not (Path(fake_kind["DATA_DIR"]) / CLUSTER_MARKER).is_symlink()
    assert (Path(fake_kind["DATA_DIR"]) / CLUSTER_MARKER).read_text() == "blueprint\n"


def test_a_cluster_marker_that_is_a_fifo_never_hangs_the_up(fake_kind: dict[str, str]) -> None:
    """A cluster of that name runs, and its marker cannot be read: not blueprint's, said at once."""
    Path(fake_kind["KIND_RUNNING"]).write_text("blueprint\n")
    os.mkfifo(Path(fake_kind["DATA_DIR"]) / CLUSTER_MARKER)
    try:
        done = run_cluster("create", fake_kind)
    except subprocess.TimeoutExpired:
        pytest.fail("the up hangs reading a FIFO at the cluster marker's name")
    assert done.returncode == 1
    assert "blueprint did not create it" in done.stderr


def test_deleting_the_cluster_forgets_it(fake_kind: dict[str, str]) -> None:
    assert run_cluster("create", fake_kind).returncode == 0
    assert run_cluster("delete", fake_kind).returncode == 0
    assert "delete cluster --name blueprint" in Path(fake_kind["KIND_CALLS"]).read_text()
    assert not (Path(fake_kind["DATA_DIR"]) / CLUSTER_MARKER).exists()


def test_a_destroy_after_the_cluster_went_by_hand_forgets_it_without_deleting_anything(fake_kind: dict[str, str]) -> None:
    assert run_cluster("create", fake_kind).returncode == 0
    Path(fake_kind["KIND_RUNNING"]).unlink()  # `kind delete cluster` by hand
    assert run_cluster("delete", fake_kind).returncode == 0
    assert "delete cluster" not in Path(fake_kind["KIND_CALLS"]).read_text()
    assert not (Path(fake_kind["DATA_DIR"]) / CLUSTER_MARKER).exists()


def lease(stack: str) -> dict[str, Any]:
    return planned(stack).one(COMMAND, "cluster-lease")


@pytest.mark.parametrize("user", ["phase2", "dev"])
def test_the_cluster_is_not_deleted_while_a_stack_has_its_platform_on_it(fake_kind: dict[str, str], user: str) -> None:
    assert run_cluster("create", fake_kind).returncode == 0
    assert run_script(lease(user), "create", env={"DATA_DIR": fake_kind["DATA_DIR"]}).returncode == 0
    done = run_cluster("delete", fake_kind)
    assert done.returncode == 1
    assert f"blueprint/{user} still has its platform on the kind cluster blueprint" in done.stderr
    assert "delete cluster" not in Path(fake_kind["KIND_CALLS"]).read_text()


def test_the_refusal_gives_the_commands_that_apply_a_cluster_change(fake_kind: dict[str, str]) -> None:
    assert run_script(lease("phase2"), "create", env={"DATA_DIR": fake_kind["DATA_DIR"]}).returncode == 0
    done = run_cluster("delete", fake_kind)
    assert "'uv run blueprint up' applies a cluster change for you" in done.stderr
    assert "'pulumi destroy -s phase2' first" in done.stderr


def test_the_refusal_in_dev_gives_the_commands_that_keep_its_data(fake_kind: dict[str, str]) -> None:
    assert run_script(lease("dev"), "create", env={"DATA_DIR": fake_kind["DATA_DIR"]}).returncode == 0
    done = run_cluster("delete", fake_kind)
    assert "pulumi config set -s dev blueprint:preserveData true && pulumi up -s dev && pulumi destroy -s dev" in done.stderr


def test_the_refusal_in_dev_does_not_assume_a_config_value_changed(fake_kind: dict[str, str]) -> None:
    """A new blueprint version replaces the cluster too (new node mounts, a new node image), with
    no value of the config to put back: the message names both."""
    assert run_script(lease("dev"), "create", env={"DATA_DIR": fake_kind["DATA_DIR"]}).returncode == 0
    done = run_cluster("delete", fake_kind)
    assert "put the old value back" not in done.stderr
    assert "the config value you changed, or, if a new blueprint version brings the change, the commit you ran before" in done.stderr


def test_the_refusal_in_dev_says_going_back_is_refused_over_data_a_newer_version_migrated(fake_kind: dict[str, str]) -> None:
    """The commit that ran before refuses data a newer version's `up` migrated (tests/stacks/test_versioning.py)."""
    assert run_script(lease("dev"), "create", env={"DATA_DIR": fake_kind["DATA_DIR"]}).returncode == 0
    done = run_cluster("delete", fake_kind)
    assert "The commit you ran before refuses dev's data if a newer version's up migrated it" in done.stderr
    assert "follow that version's CHANGELOG line on dev's data instead" in done.stderr


def test_the_cluster_is_deleted_once_the_lease_is_released(fake_kind: dict[str, str]) -> None:
    assert run_cluster("create", fake_kind).returncode == 0
    for script in ("create", "delete"):
        assert run_script(lease("phase2"), script, env={"DATA_DIR": fake_kind["DATA_DIR"]}).returncode == 0
    assert run_cluster("delete", fake_kind).returncode == 0
    assert not (Path(fake_kind["DATA_DIR"]) / LEASES_FOLDER).exists()


@pytest.mark.parametrize("stack", ["phase2", "dev"])
def test_everything_on_the_cluster_comes_after_the_lease(stack: str) -> None:
    result = planned(stack)
    claim = lease(stack)["urn"]
    for resource in result.resources:
        if resource["custom"] and resource["type"].startswith("kubernetes:") and resource["name"] != "kind-kubernetes":
            assert claim in waits_for(result, resource["urn"]), resource["urn"]


def test_in_dev_the_lease_goes_before_the_cluster_on_destroy() -> None:
    result = planned("dev")
    assert result.one(COMMAND, "kind-cluster")["urn"] in lease("dev")["dependsOn"]


def test_create_without_kind_names_the_missing_tool(tmp_path: Path) -> None:
    cluster = planned("phase1").one(COMMAND, "kind-cluster")
    done = run_script(cluster, "create", env={"PATH": "/nonexistent"})
    assert done.returncode == 127
    assert f"install kind {versions.KIND_VERSION}" in done.stderr


def test_a_different_kind_version_is_warned_about(fake_kind: dict[str, str]) -> None:
    fake_command(Path(fake_kind["BIN"]), "kind", FAKE_KIND.format(version="v0.99.0"))
    done = run_script(planned("phase1").one(COMMAND, "kind-cluster"), "create", path_prefix=Path(fake_kind["BIN"]), env=fake_kind)
    assert done.returncode == 0
    assert "warning: kind v0.99.0" in done.stderr


def test_data_folder_exists_before_the_cluster_mounts_it() -> None:
    result = planned("phase1")
    data_folder = result.one(COMMAND, "kind-data-folder")
    assert data_folder["urn"] in result.one(COMMAND, "kind-cluster")["dependsOn"]


def test_a_file_that_is_no_lease_does_not_block_deleting_the_cluster(fake_kind: dict[str, str]) -> None:
    """macOS Finder leaves a .DS_Store in a folder it showed."""
    assert run_cluster("create", fake_kind).returncode == 0
    (Path(fake_kind["DATA_DIR"]) / LEASES_FOLDER).mkdir()
    (Path(fake_kind["DATA_DIR"]) / LEASES_FOLDER / ".DS_Store").write_text("x")
    assert run_cluster("delete", fake_kind).returncode == 0


def test_the_refusal_names_the_lease_of_a_stack_removed_by_hand(fake_kind: dict[str, str]) -> None:
    assert run_script(lease("phase2"), "create", env={"DATA_DIR": fake_kind["DATA_DIR"]}).returncode == 0
    done = run_cluster("delete", fake_kind)
    assert f"  rm -- {fake_kind['DATA_DIR']}/{LEASES_FOLDER}/blueprint_phase2\n" in done.stderr


def test_a_lease_is_never_written_through_a_link(fake_kind: dict[str, str], tmp_path: Path) -> None:
    """The data folder is mounted into every node: a pod could leave a link at the lease's name."""
    victim = tmp_path / "victim"
    victim.write_text("mine\n")
    (Path(fake_kind["DATA_DIR"]) / LEASES_FOLDER).mkdir()
    (Path(fake_kind["DATA_DIR"]) / LEASES_FOLDER / "blueprint_phase2").symlink_to(victim)
    assert run_script(lease("phase2"), "create", env={"DATA_DIR": fake_kind["DATA_DIR"]}).returncode == 0
    assert victim.read_text() == "mine\n"


def test_a_lease_names_only_what_a_stack_name_can_hold(fake_kind: dict[str, str]) -> None:
    """A lease is in a folder pods can write: what the refusal prints is a stack name, or less."""
    (Path(fake_kind["DATA_DIR"]) / LEASES_FOLDER).mkdir()
    (Path(fake_kind["DATA_DIR"]) / LEASES_FOLDER / "x").write_text("blueprint/phase2$(id)`id`\n")
    done = run_cluster("delete", fake_kind)
    assert "$(id)" not in done.stderr
    assert "`id`" not in done.stderr
    assert "blueprint/phase2id" in done.stderr


def test_a_lease_is_never_moved_into_a_linked_folder(fake_kind: dict[str, str], tmp_path: Path) -> None:
    """`mv` onto a link to a folder moves the lease into that folder: then no lease is where the
    cluster's delete looks, and the cluster would be deleted from under phase2."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (Path(fake_kind["DATA_DIR"]) / LEASES_FOLDER).mkdir()
    (Path(fake_kind["DATA_DIR"]) / LEASES_FOLDER / "blueprint_phase2").symlink_to(elsewhere)
    assert run_script(lease("phase2"), "create", env={"DATA_DIR": fake_kind["DATA_DIR"]}).returncode == 0
    assert list(elsewhere.iterdir()) == []
    assert (Path(fake_kind["DATA_DIR"]) / LEASES_FOLDER / "blueprint_phase2").is_file()
    assert run_cluster("delete", fake_kind).returncode == 1


def test_a_destroy_when_kind_cannot_list_clusters_fails_and_keeps_the_cluster_recorded(fake_kind: dict[str, str]) -> None:
    """Docker stopped must not look like a cluster gone by hand: Pulumi would forget one that still runs."""
    assert run_cluster("create", fake_kind).returncode == 0
    fake_command(Path(fake_kind["BIN"]), "kind", 'echo "ERROR: failed to list clusters" >&2; exit 1\n')
    done = run_cluster("delete", fake_kind)
    assert done.returncode != 0
    assert (Path(fake_kind["DATA_DIR"]) / CLUSTER_MARKER).exists()


def test_a_destroy_without_kind_on_path_fails_naming_the_way_to_run_it(fake_kind: dict[str, str]) -> None:
    assert run_cluster("create", fake_kind).returncode == 0
    (Path(fake_kind["BIN"]) / "kind").unlink()
    done = run_cluster("delete", fake_kind)
    assert done.returncode == 1
    assert "kind is not on PATH" in done.stderr
    assert (Path(fake_kind["DATA_DIR"]) / CLUSTER_MARKER).exists()
