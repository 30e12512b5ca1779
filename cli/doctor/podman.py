"""Podman's three checks, the CLI, the engine and its mode, with the fix of the machine's OS family,
for a config whose engine is Podman (`blueprint:containerEngine`, components/engine.py).

Rootful alone passes: on Linux the root service, which the user's podman reaches through CONTAINER_HOST;
on macOS a rootful Podman machine. A rootless one fails with the reason (components/engine.py
`ROOTLESS_REASON`), as phase1 refuses it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cli import os_family
from cli.doctor.checks import Check
from cli.doctor.machine import Machine, first_line, machine_family
from cli.os_family import Command, OsFamily
from components.engine import PODMAN, ROOTLESS_FORMAT, ROOTLESS_REASON

PODMAN_CLI = "Podman CLI"
PODMAN_ENGINE = "Podman engine"
PODMAN_MODE = "Podman rootful"

VERSION_FORMAT = "{{.Version.Version}}"
"""`podman info`'s own version (podman v5.8.2 docs/source/markdown/podman-info.1.md: `{{.Version.`)."""

_LINUX_ROOTFUL = (
    "make your podman talk to the rootful service: `export CONTAINER_HOST=" + os_family.PODMAN_ROOT_SOCKET + "` in your shell's "
    "profile, with the socket given to a group of yours (a `SocketGroup=` drop-in for podman.socket: docs/guide/podman.md)"
)


def _shown(commands: Sequence[Command]) -> str:
    return ", then ".join(f"`{command.shown}`" for command in commands)


def _missing(machine: Machine, family: OsFamily) -> Check:
    found = "no `podman` on PATH"
    if family.key == os_family.MACOS and machine.which("brew") is not None:
        commands: tuple[Command, ...] = (os_family.MACOS_PODMAN_INSTALL, os_family.MACOS_PODMAN_INIT, os_family.MACOS_PODMAN_START)
        return Check(name=PODMAN_CLI, ok=False, found=found, fix=f"install Podman with Homebrew: {_shown(commands)}", commands=commands)
    install = os_family.podman_install(family)
    if install and not family.wsl:
        commands = (*install, os_family.PODMAN_SOCKET_START)
        return Check(name=PODMAN_CLI, ok=False, found=found, fix=f"{_shown(commands)}; then {_LINUX_ROOTFUL}", commands=commands)
    fix = "install Podman (https://podman.io/docs/installation), run it rootful, or set blueprint:containerEngine to docker"
    return Check(name=PODMAN_CLI, ok=False, found=found, fix=fix)


def _down(machine: Machine, family: OsFamily, output: str) -> Check:
    found = f"not reachable: {first_line(output)}"
    if family.key == os_family.MACOS:
        code, machines = machine.run([PODMAN, "machine", "list", "--format", "{{.Name}}"], timeout=20)
        commands: tuple[Command, ...] = (
            (os_family.MACOS_PODMAN_START,)
            if code == 0 and machines.strip()
            else (os_family.MACOS_PODMAN_INIT, os_family.MACOS_PODMAN_START)
        )
        return Check(name=PODMAN_ENGINE, ok=False, found=found, fix=f"{_shown(commands)}", commands=commands)
    if family.known_linux and not family.wsl:
        commands = (os_family.PODMAN_SOCKET_START,)
        return Check(name=PODMAN_ENGINE, ok=False, found=found, fix=f"{_shown(commands)}; then {_LINUX_ROOTFUL}", commands=commands)
    return Check(name=PODMAN_ENGINE, ok=False, found=found, fix=f"start Podman's rootful service; then {_LINUX_ROOTFUL}")


def _mode(machine: Machine, family: OsFamily) -> Check:
    code, output = machine.run([PODMAN, "info", "--format", ROOTLESS_FORMAT], timeout=20)
    if code == 0 and output.strip() == "false":
        return Check(name=PODMAN_MODE, ok=True, found="rootful")
    found = "rootless" if code == 0 and output.strip() == "true" else f"unknown ({first_line(output)})"
    if family.key == os_family.MACOS:
        commands: tuple[Command, ...] = (os_family.MACOS_PODMAN_STOP, os_family.MACOS_PODMAN_ROOTFUL, os_family.MACOS_PODMAN_START)
        return Check(name=PODMAN_MODE, ok=False, found=found, fix=f"{ROOTLESS_REASON}: {_shown(commands)}", commands=commands)
    return Check(name=PODMAN_MODE, ok=False, found=found, fix=f"{ROOTLESS_REASON}: {_LINUX_ROOTFUL}")


def podman_checks(machine: Machine, family: OsFamily | None = None) -> list[Check]:
    """The CLI, the engine (`podman info`), and its mode: rootful, or a failure saying why not."""
    family = family or machine_family(machine)
    if machine.which(PODMAN) is None:
        install = _missing(machine, family)
        unchecked = "not checked: no Podman CLI"
        return [
            install,
            Check(name=PODMAN_ENGINE, ok=False, found=unchecked, fix=install.fix),
            Check(name=PODMAN_MODE, ok=False, found=unchecked, fix=install.fix),
        ]
    cli = Check(name=PODMAN_CLI, ok=True, found=str(machine.which(PODMAN)))
    code, output = machine.run([PODMAN, "info", "--format", VERSION_FORMAT], timeout=20)
    if code != 0:
        down = _down(machine, family, output)
        return [cli, down, Check(name=PODMAN_MODE, ok=False, found="not checked: the engine does not answer", fix=down.fix)]
    return [cli, Check(name=PODMAN_ENGINE, ok=True, found=f"server {first_line(output)}"), _mode(machine, family)]


PODMAN_SHARES = "folders the Podman machine sees"


def shared_folders_check(machine: Machine, folders: Sequence[str]) -> Check:
    """On macOS, whether each host folder the nodes or the mirrors mount is under the home folder: a Podman
    machine mounts only `$HOME` by default (podman-machine-init(1) `--volume`, default `$HOME:$HOME`).
    """
    home = machine.home()
    outside = [folder for folder in folders if not Path(folder).is_relative_to(home)]
    if not outside:
        return Check(name=PODMAN_SHARES, ok=True, found=f"all under {home}, which the Podman machine mounts")
    return Check(
        name=PODMAN_SHARES,
        ok=False,
        found=f"{', '.join(outside)} outside {home}, which alone the Podman machine mounts",
        fix=f"set blueprint:dataDir (and blueprint:imageCacheDir) to folders under {home}, or make the machine anew with "
        "`podman machine init --rootful --volume <folder>:<folder>` for each",
    )
