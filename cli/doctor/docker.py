"""Docker's two checks, the CLI and the engine, with the fix of the machine's OS family: the commands
that install it, start it (systemd's unit where systemd runs, else the init script) and give the
user the docker group, which `--fix` shows and runs once the user agrees.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from cli import os_family
from cli.doctor.checks import Check
from cli.doctor.machine import Machine, first_line, machine_family
from cli.os_family import Command, OsFamily

DOCKER_CLI = "Docker CLI"
DOCKER_ENGINE = "Docker engine"


def _shown(commands: Sequence[Command]) -> str:
    return ", then ".join(f"`{command.shown}`" for command in commands)


_RELOGIN = "then log out and in again (the docker group counts from your next login; `newgrp docker` gives it to one shell now)"
_WSL_DOCKER = (
    "install Docker Desktop on Windows with the WSL2 backend (https://docs.docker.com/desktop/setup/install/windows-install/) "
    "and turn on Settings > Resources > WSL integration for this distro: a Windows install, which `uv run blueprint doctor --fix` "
    "does not do from WSL"
)


def _user(machine: Machine) -> str | None:
    """Whom the docker group is for: the user who ran `sudo blueprint doctor --fix` (sudo's SUDO_USER; its
    $USER is root), else the one this runs as, by the password database's name.
    """
    return machine.environ().get("SUDO_USER") or machine.user_name()


SYSTEMD_RUNNING = "/run/systemd/system"
"""sd_booted(3): systemd is the init system exactly when this folder exists. It does not in a container,
nor in WSL2 unless /etc/wsl.conf turns systemd on: `systemctl` cannot start anything there."""
DOCKER_UNITS = tuple(
    f"{folder}/docker.service"
    for folder in (
        "/etc/systemd/system",
        "/run/systemd/system",
        "/usr/local/lib/systemd/system",
        "/usr/lib/systemd/system",
        "/lib/systemd/system",
    )
)
"""Where systemd looks for docker.service (systemd.unit(5), "System Unit Search Path"); Debian 12's docker.io
puts it in /lib/systemd/system."""
DOCKERD_PATHS = ("/usr/bin/dockerd", "/usr/sbin/dockerd", "/usr/local/bin/dockerd")
"""Where the engine's packages put dockerd, besides PATH: Debian's docker.io in /usr/sbin, which a user's PATH lacks."""
DOCKER_INIT_SCRIPT = "/etc/init.d/docker"
_NO_SYSTEMD = f"systemd does not run here (no {SYSTEMD_RUNNING}: a container, or WSL2 without systemd)"
_FOREGROUND = "run `sudo dockerd` in a terminal of its own (it stays in the foreground)"


def _dockerd(machine: Machine) -> str | None:
    return machine.which("dockerd") or next((path for path in DOCKERD_PATHS if machine.exists(path)), None)


def _engine_install(machine: Machine, family: OsFamily, name: str, found: str) -> Check | None:
    """The failing check `name` of a machine without Docker Engine, with its family's commands: install,
    start (systemd's unit where systemd runs, else the init script Debian's docker.io ships), and the
    docker group for the user; None for a family blueprint has no packages for.
    """
    install = os_family.docker_install(family)
    if not install:
        return None
    if machine.exists(SYSTEMD_RUNNING):
        start: tuple[Command, ...] = (os_family.DOCKER_START,)
    else:
        start = (os_family.DOCKER_SERVICE_START,) if family.key == os_family.DEBIAN else ()
    user = _user(machine)
    group = (os_family.docker_group(user),) if user and user != "root" else ()  # root needs no group
    commands = (*install, *start, *group)
    after = [] if start else [f"then start it: {_NO_SYSTEMD}, so {_FOREGROUND}"]
    after += [_RELOGIN] if group else [] if user == "root" else ["then add yourself to the docker group"]
    fix = f"install Docker Engine from {family.name}'s packages: {_shown(commands)}" + "".join(f"; {line}" for line in after)
    return Check(name=name, ok=False, found=found, fix=fix, commands=commands)


def _docker_install(machine: Machine, family: OsFamily) -> Check:
    """The failing check of a machine without Docker, with its family's install commands."""
    if family.wsl:
        return Check(name=DOCKER_CLI, ok=False, found="no `docker` on PATH", fix=_WSL_DOCKER)
    if family.key == os_family.MACOS and machine.which("brew") is not None:
        commands: tuple[Command, ...] = (os_family.MACOS_DOCKER_INSTALL, os_family.MACOS_DOCKER_OPEN)
        fix = f"install Docker Desktop with Homebrew: {_shown(commands)} (it opens Docker Desktop's window: accept its terms there)"
        return Check(name=DOCKER_CLI, ok=False, found="no `docker` on PATH", fix=fix, commands=commands)
    check = _engine_install(machine, family, DOCKER_CLI, "no `docker` on PATH")
    if check is not None:
        return check
    fix = {
        "darwin": "install Docker Desktop: https://docs.docker.com/desktop/setup/install/mac-install/ "
        f"(or, with Homebrew: `brew install --cask {os_family.MACOS_DOCKER_CASK}`)",
        "windows": "install Docker Desktop with the WSL2 backend: https://docs.docker.com/desktop/setup/install/windows-install/",
    }.get(
        machine.system,
        "install Docker Engine (https://docs.docker.com/engine/install/), then `sudo usermod -aG docker $USER`, log in again",
    )
    return Check(name=DOCKER_CLI, ok=False, found="no `docker` on PATH", fix=fix)


def _docker_down(machine: Machine, family: OsFamily, output: str) -> Check:
    """The failing engine check of a machine whose `docker info` failed, with its family's fix."""
    found = f"not reachable: {first_line(output)}"
    if "permission denied" in output.lower():
        user = _user(machine)
        if family.known_linux and user:
            commands: tuple[Command, ...] = (os_family.docker_group(user),)
            return Check(name=DOCKER_ENGINE, ok=False, found=found, fix=f"{_shown(commands)}, {_RELOGIN}", commands=commands)
        fix = "`sudo usermod -aG docker $USER`, then log out and in again (or run `newgrp docker` in this shell)"
        return Check(name=DOCKER_ENGINE, ok=False, found=found, fix=fix)
    if family.wsl:
        fix = (
            "start Docker Desktop on Windows and wait until it says it is running; in its Settings > Resources > WSL integration, "
            f"turn this distro on (or, with Docker Engine installed in this distro and systemd on in WSL: `{os_family.DOCKER_START.shown}`)"
        )
        return Check(name=DOCKER_ENGINE, ok=False, found=found, fix=fix)
    if family.key == os_family.MACOS:
        commands = (os_family.MACOS_DOCKER_OPEN,)
        return Check(
            name=DOCKER_ENGINE,
            ok=False,
            found=found,
            fix=f"start Docker Desktop ({_shown(commands)}) and wait until it says it is running",
            commands=commands,
        )
    if machine.system == "windows":
        return Check(name=DOCKER_ENGINE, ok=False, found=found, fix="start Docker Desktop and wait until it says it is running")
    return _engine_down_on_linux(machine, family, found)


def _engine_down_on_linux(machine: Machine, family: OsFamily, found: str) -> Check:
    """Start the engine the way this Linux can: systemd's unit, else the init script; install it first
    where only the CLI is here (Docker's static client binaries, say), since no unit can start what is not.
    """
    dockerd = _dockerd(machine)
    unit = any(machine.exists(path) for path in DOCKER_UNITS)
    if dockerd is None and not unit:
        found = f"{found}; the Docker CLI is here, Docker Engine (dockerd) is not installed"
        check = _engine_install(machine, family, DOCKER_ENGINE, found)
        if check is not None:
            return check
        user = _user(machine)
        who = shlex.quote(user) if user else "$USER"
        fix = f"install Docker Engine (https://docs.docker.com/engine/install/), start it, then `sudo usermod -aG docker {who}`"
        return Check(name=DOCKER_ENGINE, ok=False, found=found, fix=fix)
    systemd = machine.exists(SYSTEMD_RUNNING)
    if systemd and unit:
        if family.known_linux:
            commands: tuple[Command, ...] = (os_family.DOCKER_START,)
            fix = f"{_shown(commands)} (starts it now and at every boot)"
            return Check(name=DOCKER_ENGINE, ok=False, found=found, fix=fix, commands=commands)
        fix = "`sudo systemctl start docker` (and `sudo systemctl enable docker` to start it at boot)"
        return Check(name=DOCKER_ENGINE, ok=False, found=found, fix=fix)
    if not systemd and machine.exists(DOCKER_INIT_SCRIPT):
        commands = (os_family.DOCKER_SERVICE_START,)
        fix = f"{_shown(commands)} ({_NO_SYSTEMD}: Docker's init script starts it; again after each restart)"
        return Check(name=DOCKER_ENGINE, ok=False, found=found, fix=fix, commands=commands)
    why = _NO_SYSTEMD + " and Docker has no init script" if not systemd else f"dockerd ({dockerd}) has no docker.service unit for systemd"
    return Check(name=DOCKER_ENGINE, ok=False, found=f"{found}; {why}", fix=f"start it the way it was installed: {_FOREGROUND}")


def docker_checks(machine: Machine, family: OsFamily | None = None) -> list[Check]:
    family = family or machine_family(machine)
    if machine.which("docker") is None:
        install = _docker_install(machine, family)
        # The engine's line says the same fix, and runs nothing of its own: the CLI's commands install both.
        return [install, Check(name=DOCKER_ENGINE, ok=False, found="not checked: no Docker CLI", fix=install.fix)]
    cli = Check(name=DOCKER_CLI, ok=True, found=str(machine.which("docker")))
    code, output = machine.run(["docker", "info", "--format", "{{.ServerVersion}}"], timeout=20)
    if code == 0:
        return [cli, Check(name=DOCKER_ENGINE, ok=True, found=f"server {first_line(output)}")]
    return [cli, _docker_down(machine, family, output)]
