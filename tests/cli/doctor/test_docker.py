"""Docker's checks: the OS family's commands to install it, start it and give the user the docker group."""

from __future__ import annotations

from dataclasses import replace

from cli.doctor.docker import DOCKER_CLI, DOCKER_ENGINE, DOCKER_INIT_SCRIPT, SYSTEMD_RUNNING
from tests.cli.doctor.fakes import (
    DEBIAN_DOCKER,
    FakeMachine,
    checked,
    engine_down,
    engine_forbidden,
    engine_missing,
    fix,
    on,
    without,
)
from tests.cli.test_os_family import ARCH, DEBIAN_13, FEDORA_42, OPENSUSE_TUMBLEWEED, UBUNTU_24_04, WSL2_KERNEL


def test_a_missing_docker_is_fixed_with_the_familys_install_start_and_group_commands() -> None:
    docker = checked(without(on(DEBIAN_13), "docker"))[DOCKER_CLI]
    assert [command.shown for command in docker.commands] == DEBIAN_DOCKER
    assert all(f"`{shown}`" in docker.fix for shown in DEBIAN_DOCKER)
    assert "log out and in again" in docker.fix


def test_wsl2_fix_installs_no_docker_and_says_docker_desktop_is_a_windows_install() -> None:
    machine = without(on(UBUNTU_24_04), "docker")
    machine.files["/proc/version"] = WSL2_KERNEL
    docker = checked(machine)[DOCKER_CLI]
    assert docker.commands == ()
    assert "Docker Desktop on Windows" in docker.fix
    assert "a Windows install, which `uv run blueprint doctor --fix` does not do" in docker.fix
    output, shell, _ = fix(machine, terminal=True, answer="y")
    assert shell.ran == []
    assert "to do by hand: Docker CLI: install Docker Desktop on Windows" in output


def test_macos_docker_install_with_homebrew_says_it_opens_docker_desktops_window() -> None:
    machine = without(FakeMachine(system="darwin", machine="arm64", files={}), "docker")
    machine.tools["brew"] = "/opt/homebrew/bin/brew"
    docker = checked(machine)[DOCKER_CLI]
    assert [command.shown for command in docker.commands] == ["brew install --cask docker-desktop", "open -a Docker"]
    output, shell, _ = fix(machine, terminal=True, answer="y")
    shown_before_asking = output[: output.index("$ brew")]
    assert "(opens Docker Desktop's window: accept its terms there the first time" in shown_before_asking
    assert shell.shown == ["brew install --cask docker-desktop", "open -a Docker"]


def test_macos_without_homebrew_runs_nothing_and_names_the_download_page() -> None:
    docker = checked(without(FakeMachine(system="darwin", machine="arm64", files={}), "docker"))[DOCKER_CLI]
    assert docker.commands == ()
    assert "https://docs.docker.com/desktop/setup/install/mac-install/" in docker.fix


def test_an_unknown_family_gets_the_generic_docker_advice_and_no_commands() -> None:
    docker = checked(without(on(OPENSUSE_TUMBLEWEED), "docker"))[DOCKER_CLI]
    assert docker.commands == ()
    assert docker.fix.startswith("install Docker Engine (https://docs.docker.com/engine/install/)")


def test_a_docker_socket_that_refuses_the_user_is_fixed_with_the_docker_group_on_a_known_family() -> None:
    engine = checked(engine_forbidden(on(FEDORA_42)))[DOCKER_ENGINE]
    assert [command.shown for command in engine.commands] == ["sudo usermod -aG docker dev"]
    assert "log out and in again" in engine.fix


def test_an_engine_that_is_down_is_started_now_and_at_boot_on_a_known_family() -> None:
    engine = checked(engine_down(on(ARCH)))[DOCKER_ENGINE]
    assert [command.shown for command in engine.commands] == ["sudo systemctl enable --now docker"]


def test_a_docker_cli_without_dockerd_or_its_unit_gets_the_familys_install_commands_not_a_start() -> None:
    engine = checked(engine_missing(on(DEBIAN_13), {SYSTEMD_RUNNING}))[DOCKER_ENGINE]
    assert [command.shown for command in engine.commands] == DEBIAN_DOCKER
    assert "Docker Engine (dockerd) is not installed" in engine.found


def test_debians_dockerd_in_usr_sbin_counts_as_installed() -> None:
    """Debian's docker.io puts dockerd in /usr/sbin, which a user's PATH lacks: it is not installed again."""
    machine = engine_missing(on(DEBIAN_13), {"/usr/sbin/dockerd"})
    machine.files[DOCKER_INIT_SCRIPT] = "#!/bin/sh\n"
    engine = checked(machine)[DOCKER_ENGINE]
    assert "apt-get" not in engine.fix


def test_without_systemd_an_installed_engine_is_started_by_its_init_script_not_systemctl() -> None:
    machine = engine_missing(on(DEBIAN_13), {"/usr/sbin/dockerd", "/lib/systemd/system/docker.service"})
    machine.files[DOCKER_INIT_SCRIPT] = "#!/bin/sh\n"
    engine = checked(machine)[DOCKER_ENGINE]
    assert [command.shown for command in engine.commands] == ["sudo service docker start"]
    assert "systemctl" not in engine.fix


def test_without_systemd_or_an_init_script_the_engine_fix_runs_nothing_and_names_the_gap() -> None:
    engine = checked(engine_missing(on(ARCH), {"/usr/bin/dockerd", "/usr/lib/systemd/system/docker.service"}))[DOCKER_ENGINE]
    assert engine.commands == ()
    assert "systemctl" not in engine.fix
    assert "systemd does not run here" in engine.found
    assert "`sudo dockerd` in a terminal of its own" in engine.fix


def test_without_systemd_a_debian_install_starts_docker_through_the_init_script_docker_io_ships() -> None:
    docker = checked(replace(without(on(DEBIAN_13), "docker"), paths=set()))[DOCKER_CLI]
    assert [command.shown for command in docker.commands] == [*DEBIAN_DOCKER[:2], "sudo service docker start", DEBIAN_DOCKER[3]]


def test_without_systemd_an_install_of_a_family_without_an_init_script_says_to_run_dockerd_and_runs_no_systemctl() -> None:
    docker = checked(replace(without(on(FEDORA_42), "docker"), paths=set()))[DOCKER_CLI]
    assert [command.shown for command in docker.commands] == ["sudo dnf install -y moby-engine", "sudo usermod -aG docker dev"]
    assert "systemctl" not in docker.fix
    assert "`sudo dockerd` in a terminal of its own" in docker.fix


def test_root_itself_is_not_added_to_the_docker_group() -> None:
    docker = checked(replace(without(on(DEBIAN_13), "docker"), user_id=0, user="root"))[DOCKER_CLI]
    assert not any("usermod" in command.argv for command in docker.commands)
    assert "docker group" not in docker.fix


def test_the_docker_group_is_for_the_user_who_ran_sudo_not_for_root() -> None:
    machine = replace(without(on(DEBIAN_13), "docker"), user_id=0, user="root", env={"USER": "root", "SUDO_USER": "dev"})
    docker = checked(machine)[DOCKER_CLI]
    assert docker.commands[-1].argv == ("usermod", "-aG", "docker", "dev")


def test_the_docker_group_is_for_the_password_databases_user_not_a_stale_user_variable() -> None:
    machine = replace(engine_forbidden(on(FEDORA_42)), env={"USER": "someone-else"})
    engine = checked(machine)[DOCKER_ENGINE]
    assert [command.shown for command in engine.commands] == ["sudo usermod -aG docker dev"]
