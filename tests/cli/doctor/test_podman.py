"""The doctor on Podman (cli/doctor/podman.py): rootful passes, rootless fails with the reason and the
fix, each OS family gets its commands, and the machine's checks ask Podman, not Docker."""

from __future__ import annotations

from pathlib import Path

from cli.doctor import checks, machine_checks
from cli.doctor.checks import CPUS, MEMORY, Check
from cli.doctor.podman import PODMAN_CLI, PODMAN_ENGINE, PODMAN_MODE, shared_folders_check
from components.engine import PODMAN, ROOTLESS_REASON
from tests.cli.doctor.fakes import (
    GIB,
    NEEDS,
    PORTS,
    FakeMachine,
    doctor_output,
    on,
    on_podman,
)
from tests.cli.test_os_family import DEBIAN_13, FEDORA_42


def podman_checked(machine: FakeMachine) -> dict[str, Check]:
    results = machine_checks(
        machine, ports=PORTS, needs=NEEDS, pulumi_min_version=checks.PULUMI_MIN_VERSION, cluster_name="blueprint", engine=PODMAN
    )
    return {check.name: check for check in results}


def macos() -> FakeMachine:
    machine = FakeMachine(system="darwin", machine="arm64", files={}, home_dir=Path("/Users/dev"))
    machine.tools["brew"] = "/opt/homebrew/bin/brew"
    return machine


def test_rootful_podman_passes_its_three_checks() -> None:
    found = podman_checked(on_podman(on(DEBIAN_13)))
    assert all(found[name].ok for name in (PODMAN_CLI, PODMAN_ENGINE, PODMAN_MODE))
    assert found[PODMAN_MODE].found == "rootful"


def test_rootless_podman_fails_with_the_reason_and_the_linux_fix() -> None:
    mode = podman_checked(on_podman(on(FEDORA_42), rootless=True))[PODMAN_MODE]
    assert not mode.ok
    assert mode.found == "rootless"
    assert ROOTLESS_REASON in mode.fix
    assert "CONTAINER_HOST=unix:///run/podman/podman.sock" in mode.fix


def test_a_rootless_podman_machine_is_made_rootful_with_podmans_own_commands() -> None:
    mode = podman_checked(on_podman(macos(), rootless=True))[PODMAN_MODE]
    assert [command.shown for command in mode.commands] == ["podman machine stop", "podman machine set --rootful", "podman machine start"]


def test_a_missing_podman_is_installed_from_the_familys_packages_with_its_rootful_socket() -> None:
    machine = on(DEBIAN_13)
    podman = podman_checked(machine)[PODMAN_CLI]
    assert [command.shown for command in podman.commands] == [
        "sudo apt-get update",
        "sudo apt-get install -y podman",
        "sudo systemctl enable --now podman.socket",
    ]


def test_a_missing_podman_on_macos_is_installed_with_a_rootful_machine() -> None:
    podman = podman_checked(macos())[PODMAN_CLI]
    assert [command.shown for command in podman.commands] == [
        "brew install podman",
        "podman machine init --rootful",
        "podman machine start",
    ]


def test_a_stopped_podman_machine_is_started() -> None:
    machine = on_podman(macos())
    machine.outputs["podman info --format {{.Version.Version}}"] = (125, "Error: unable to connect to Podman socket")
    machine.outputs["podman machine list --format {{.Name}}"] = (0, "podman-machine-default\n")
    engine = podman_checked(machine)[PODMAN_ENGINE]
    assert not engine.ok
    assert [command.shown for command in engine.commands] == ["podman machine start"]


def test_memory_and_cpus_are_podmans_own_figures() -> None:
    machine = on_podman(macos())
    machine.outputs["podman info --format {{.Host.MemTotal}}"] = (0, f"{2 * GIB}\n")
    machine.outputs["podman info --format {{.Host.CPUs}}"] = (0, "2\n")
    found = podman_checked(machine)
    assert not found[MEMORY].ok
    assert found[MEMORY].found.startswith("2.0 GiB total")
    assert not found[CPUS].ok
    assert "podman machine init --rootful --cpus 4" in found[CPUS].fix
    assert not [call for call in machine.calls if call[0] == "docker"]


def test_a_port_the_clusters_own_podman_node_publishes_counts_as_free() -> None:
    """Podman's ps has no `publish` filter: the doctor reads the Ports column."""
    machine = on_podman(on(DEBIAN_13))
    machine.busy.add(443)
    machine.outputs["podman ps --format {{.Names}} {{.Ports}}"] = (
        0,
        "blueprint-control-plane 127.0.0.1:80->30080/tcp, 127.0.0.1:443->30443/tcp\nother 0.0.0.0:8443->8443/tcp\n",
    )
    port = podman_checked(machine)["port 443 (blueprint:httpsPort)"]
    assert port.ok
    assert "published by blueprint-control-plane" in port.found


def test_a_port_another_podman_container_publishes_names_it_and_podman_stop() -> None:
    machine = on_podman(on(DEBIAN_13))
    machine.busy.add(443)
    machine.outputs["podman ps --format {{.Names}} {{.Ports}}"] = (0, "web 0.0.0.0:443->443/tcp\n")
    port = podman_checked(machine)["port 443 (blueprint:httpsPort)"]
    assert not port.ok
    assert "`podman stop web`" in port.fix


def test_the_doctor_checks_podman_where_it_is_the_only_engine() -> None:
    """An empty blueprint:containerEngine is the engine kind finds first: here Podman."""
    code, output = doctor_output(["--phase", "1"], on_podman(on(DEBIAN_13), rootless=True))
    assert code == 1
    assert "FAIL  Podman rootful" in output
    assert "Docker CLI" not in output


def test_on_macos_a_folder_outside_the_home_is_flagged_for_the_podman_machine() -> None:
    check = shared_folders_check(macos(), ["/Users/dev/blueprint/data", "/Volumes/big/images"])
    assert not check.ok
    assert "/Volumes/big/images outside" in check.found
    assert "/Users/dev/blueprint/data" not in check.found


def test_a_kind_provider_in_the_shell_other_than_blueprints_engine_is_a_warning_naming_both() -> None:
    """blueprint tells kind its engine itself; the variable still sends the user's own `kind` commands elsewhere."""
    machine = on(DEBIAN_13)
    machine.env["KIND_EXPERIMENTAL_PROVIDER"] = PODMAN
    kind = {c.name: c for c in machine_checks(machine, ports=PORTS, needs=NEEDS, pulumi_min_version=checks.PULUMI_MIN_VERSION)}["kind"]
    assert kind.ok
    assert "KIND_EXPERIMENTAL_PROVIDER=podman" in kind.advice
    assert "Docker" in kind.advice
    assert "unset KIND_EXPERIMENTAL_PROVIDER" in kind.advice


def test_a_kind_provider_in_the_shell_that_names_blueprints_engine_says_nothing() -> None:
    machine = on_podman(on(DEBIAN_13))
    machine.env["KIND_EXPERIMENTAL_PROVIDER"] = PODMAN
    found = machine_checks(machine, ports=PORTS, needs=NEEDS, pulumi_min_version=checks.PULUMI_MIN_VERSION, engine=PODMAN)
    assert {c.name: c for c in found}["kind"].advice == ""
