"""Nodes pull from GitLab's registry: containerd's hosts.toml in the shared folder, and the
gateway's name in every node's /etc/hosts."""

from __future__ import annotations

import tomllib
from pathlib import Path

from components.kind_cluster import NODE_DATA_PATH, REGISTRY_HOSTS_SUBDIR
from tests.plans import COMMAND, planned, run_script


def test_hosts_toml_sends_pulls_to_the_registry_with_our_ca(tmp_path: Path) -> None:
    command = planned("phase2").one(COMMAND, "node-registry-hosts-toml")
    assert run_script(command, "create", env={"HOSTS_DIR": str(tmp_path)}).returncode == 0
    folder = tmp_path / "registry.local.example.net"
    config = tomllib.loads((folder / "hosts.toml").read_text())
    assert config["server"] == "https://registry.local.example.net"
    host = config["host"]["https://registry.local.example.net"]
    assert host["capabilities"] == ["pull", "resolve"]
    assert host["ca"] == f"{NODE_DATA_PATH}/{REGISTRY_HOSTS_SUBDIR}/registry.local.example.net/ca.crt"
    assert (folder / "ca.crt").read_text().startswith("-----BEGIN CERTIFICATE-----")


def test_hosts_toml_goes_to_the_folder_phase1_gave_containerd() -> None:
    environment = planned("phase2").one(COMMAND, "node-registry-hosts-toml")["inputs"]["environment"]
    assert environment["HOSTS_DIR"] == planned("phase1").outputs["registryHostsDir"]["value"]


def test_every_node_keeps_the_gateways_names_in_etc_hosts() -> None:
    spec = planned("phase2").one("kubernetes:apps/v1:DaemonSet", "node-registry-node-hosts")["inputs"]["spec"]["template"]["spec"]
    assert spec["tolerations"] == [{"operator": "Exists"}]
    assert spec["volumes"] == [{"name": "hosts", "hostPath": {"path": "/etc/hosts", "type": "File"}}]
    env = {variable["name"]: variable["value"] for variable in spec["containers"][0]["env"]}
    assert env["TARGET"] == "gitlab-envoy.gitlab.svc.cluster.local"
    assert set(env["NAMES"].split()) == {"gitlab.local.example.net", "registry.local.example.net", "kas.local.example.net"}


def test_the_node_hosts_keeper_looks_the_gateway_up_by_its_rooted_name(tmp_path: Path) -> None:
    # A rooted name (final dot) is looked up as it is: no search domain of the node's resolv.conf,
    # which kind copies from the laptop's network, whose DNS could then answer for the gateway.
    import os
    import subprocess

    from tests.plans import fake_command

    spec = planned("phase2").one("kubernetes:apps/v1:DaemonSet", "node-registry-node-hosts")["inputs"]["spec"]["template"]["spec"]
    container = spec["containers"][0]
    env = {variable["name"]: variable["value"] for variable in container["env"]}
    asked = tmp_path / "asked"
    fake_command(tmp_path / "bin", "nslookup", f'echo "$*" >> {asked}\n')
    fake_command(tmp_path / "bin", "sleep", 'kill -TERM "$PPID"\n')  # one round of the keeper's loop
    path = f"{tmp_path / 'bin'}:{os.environ['PATH']}"
    subprocess.run(container["command"], env={**env, "PATH": path}, capture_output=True, timeout=30, check=False)
    assert asked.read_text().split() == ["-type=A", "gitlab-envoy.gitlab.svc.cluster.local."]
