"""Each prerequisite of a real run fails with its own exact fix; a check that may still bite warns."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from cli.doctor import checks, machine_checks
from cli.doctor.checks import CPUS, MEMORY, NAMES, Check
from cli.doctor.needs import NODE_MEMORY_BYTES, resources_needed
from tests.cli.doctor.fakes import (
    GIB,
    INOTIFY_FIX,
    INOTIFY_OK,
    KIND_URL,
    KUBECTL_URL,
    MIB,
    NEEDS,
    USERNS_RESTRICTION,
    FakeMachine,
    busy_https,
    checked,
    engine_down,
    engine_forbidden,
    low_watches,
    old_pulumi,
    userns_restricted,
    without,
)
from tests.cli.test_os_family import BRING_UP


@pytest.mark.parametrize(
    ("break_it", "name", "found", "fix"),
    [
        pytest.param(engine_down, "Docker engine", "not reachable: Cannot connect", "`sudo systemctl start docker`", id="engine-down"),
        pytest.param(
            lambda m: engine_down(replace(m, system="darwin", files={})),
            "Docker engine",
            "not reachable",
            "start Docker Desktop (`open -a Docker`)",
            id="engine-down-darwin",
        ),
        pytest.param(engine_forbidden, "Docker engine", "permission denied", "`sudo usermod -aG docker $USER`", id="engine-forbidden"),
        pytest.param(
            lambda m: without(m, "kind"),
            "kind",
            "no `kind` on PATH",
            f"downloads {KIND_URL}, installs it only if its SHA-256",
            id="kind-missing",
        ),
        pytest.param(
            old_pulumi,
            "Pulumi CLI",
            f"v3.120.0, older than {checks.PULUMI_MIN_VERSION}",
            "pulumi-v3.272.0-linux-x64.tar.gz",
            id="old-pulumi",
        ),
        pytest.param(
            lambda m: without(m, "kubectl"),
            "kubectl",
            "no `kubectl` on PATH",
            f"downloads {KUBECTL_URL}, installs it only if",
            id="kubectl-missing",
        ),
        pytest.param(
            busy_https,
            "port 443 (blueprint:httpsPort)",
            "blueprint:httpsPort 443 is in use",
            "in Pulumi.phase1.yaml, replace `config: {}` with `config:` and the line `  blueprint:httpsPort: <free port>`",
            id="busy-port",
        ),
        pytest.param(
            lambda m: replace(m, memory=8 * GIB),
            "memory",
            "8.0 GiB total, needs 10 GiB: 5 nodes + platform requests",
            "at least 10 GiB",
            id="low-memory",
        ),
        pytest.param(lambda m: replace(m, cpus=2), "CPUs", "2, needs 4: 5 nodes + platform requests", "at least 4 CPUs", id="few-cpus"),
        pytest.param(low_watches, "inotify limits", "max_user_watches=8192", INOTIFY_FIX, id="low-inotify"),
    ],
)
def test_each_failing_check_gives_its_fix(break_it: Callable[[FakeMachine], FakeMachine], name: str, found: str, fix: str) -> None:
    results = checked(break_it(FakeMachine()))
    assert [check.name for check in results.values() if not check.ok] == [name]
    assert found in results[name].found
    assert fix in results[name].fix


def test_the_cpu_check_counts_the_cpus_docker_gives_the_cluster_not_the_machines() -> None:
    machine = FakeMachine(cpus=16)  # Docker Desktop's VM has fewer than the laptop
    machine.outputs["docker info --format {{.NCPU}}"] = (0, "2\n")
    assert checked(machine)[CPUS].found.startswith("2, needs 4")


@pytest.mark.parametrize(
    ("system", "fix"),
    [
        ("darwin", "Docker Desktop > Settings > Resources: give Docker at least 4 CPUs (and 10 GiB), then Apply & restart"),
        ("windows", "in %UserProfile%\\.wslconfig set `processors=4` under [wsl2], then `wsl --shutdown` and restart Docker Desktop"),
        ("linux", "use a machine with at least 4 CPUs"),
    ],
)
def test_too_few_cpus_fail_naming_what_gives_docker_more(system: str, fix: str) -> None:
    check = checked(FakeMachine(system=system, cpus=2))[CPUS]
    assert not check.ok
    assert check.fix.startswith(fix)


def test_too_little_memory_for_more_than_the_fewest_nodes_names_fewer_nodes_as_a_fix() -> None:
    needs = resources_needed(gitlab_nodes=2, runner_nodes=1, headlamp=False)
    [memory] = [c for c in machine_checks(FakeMachine(memory=GIB), ports={}, needs=needs, pulumi_min_version="3.145.0") if c.name == MEMORY]
    assert memory.fix.endswith(f"or fewer nodes (blueprint:gitlabNodes, blueprint:runnerNodes): each needs {NODE_MEMORY_BYTES // MIB} MiB")


def test_the_bring_up_guide_names_the_oldest_pulumi_cli_the_doctor_accepts() -> None:
    assert f"Pulumi CLI {checks.PULUMI_MIN_VERSION} or later" in BRING_UP.read_text()


def test_inotify_fix_says_how_to_persist_it() -> None:
    machine = low_watches(FakeMachine())
    assert "sudo tee /etc/sysctl.d/" in checked(machine)["inotify limits"].fix


def test_inotify_fix_never_lowers_a_limit_already_above_the_minimum() -> None:
    machine = low_watches(FakeMachine())
    machine.files["/proc/sys/fs/inotify/max_user_instances"] = "8192\n"
    assert "fs.inotify.max_user_instances=8192" in checked(machine)["inotify limits"].fix


def test_inotify_is_not_checked_on_darwin() -> None:
    machine = FakeMachine(system="darwin", machine="arm64", files={})
    assert "inotify limits" not in checked(machine)


def test_a_kernel_restricting_unprivileged_user_namespaces_warns_with_the_sysctl_and_how_to_persist_it() -> None:
    """A warning that stops nothing: only the apps' image builds may fail, and Ubuntu's rootlesskit profile may spare them."""
    results = checked(userns_restricted(FakeMachine()))
    assert [check.name for check in results.values() if not check.ok] == []
    userns = results[checks.USERNS]
    assert "kernel.apparmor_restrict_unprivileged_userns=1" in userns.found
    assert "rootless BuildKit" in userns.found
    assert "`sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0`" in userns.advice
    persist = userns.advice[userns.advice.index("`printf") + 1 : userns.advice.rindex("`")]
    assert shlex.split(persist) == [
        "printf",
        "%s\\n",
        "kernel.apparmor_restrict_unprivileged_userns = 0",
        "|",
        "sudo",
        "tee",
        "/etc/sysctl.d/99-rootless-buildkit.conf",
    ]


@pytest.mark.parametrize("files", [{USERNS_RESTRICTION: "0\n"}, {}], ids=["off", "no-apparmor"])
def test_user_namespaces_pass_when_apparmor_does_not_restrict_them(files: dict[str, str]) -> None:
    machine = FakeMachine(files={**INOTIFY_OK, **files})
    assert checked(machine)[checks.USERNS].ok


def test_the_user_namespace_fix_persists_in_another_file_than_the_inotify_fix() -> None:
    results = checked(userns_restricted(low_watches(FakeMachine())))
    persisted = [re.findall(r"sudo tee (\S+?)`", results[name].fix or results[name].advice) for name in ("inotify limits", checks.USERNS)]
    assert all(len(files) == 1 for files in persisted), persisted
    assert persisted[0] != persisted[1]


def test_user_namespaces_pass_under_docker_desktop_on_linux_whose_vm_has_no_apparmor() -> None:
    machine = userns_restricted(FakeMachine())
    machine.outputs["docker info --format {{.OperatingSystem}}"] = (0, "Docker Desktop\n")
    assert checked(machine)[checks.USERNS].ok


def test_user_namespaces_are_not_checked_on_darwin() -> None:
    machine = FakeMachine(system="darwin", machine="arm64", files={USERNS_RESTRICTION: "1\n"})
    assert checks.USERNS not in checked(machine)


def test_the_bring_up_guide_gives_the_user_namespace_fix() -> None:
    assert "`sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0`" in BRING_UP.read_text()


def test_another_kind_version_passes_with_a_note() -> None:
    machine = FakeMachine()
    machine.outputs["kind"] = (0, "kind v0.30.0 go1.24.6 linux/amd64")
    kind = checked(machine)["kind"]
    assert kind.ok
    assert "v0.30.0" in kind.found
    assert "v0.31.0" in kind.found


def test_a_port_published_by_the_clusters_own_node_passes() -> None:
    machine = FakeMachine(busy={443})
    machine.outputs["docker ps"] = (0, "blueprint-control-plane\n")
    port = checked(machine)["port 443 (blueprint:httpsPort)"]
    assert port.ok, port


def test_a_port_published_by_another_container_names_it() -> None:
    machine = FakeMachine(busy={443})
    machine.outputs["docker ps"] = (0, "some-nginx\n")
    port = checked(machine)["port 443 (blueprint:httpsPort)"]
    assert not port.ok
    assert "`docker stop some-nginx`" in port.fix


def test_windows_failures_point_to_wsl2() -> None:
    machine = without(FakeMachine(system="windows", machine="amd64", files={}), "docker")
    assert "WSL2" in checked(machine)["Docker CLI"].found


def test_a_check_has_a_fix_exactly_when_it_fails() -> None:
    with pytest.raises(ValueError, match="fix is required"):
        Check(name="x", ok=False, found="broken")
    with pytest.raises(ValueError, match="fix is required"):
        Check(name="x", ok=True, found="fine", fix="do something")


def test_platform_names_that_do_not_resolve_to_loopback_fail_with_the_hosts_line() -> None:
    names = ("gitlab.local.example.net", "registry.local.example.net")
    machine = FakeMachine(addresses={"gitlab.local.example.net": None})
    [check] = [c for c in machine_checks(machine, ports={}, needs=NEEDS, pulumi_min_version="3.142.0", names=names) if c.name == NAMES]
    assert not check.ok
    assert "gitlab.local.example.net does not resolve to 127.0.0.1" in check.found
    assert "127.0.0.1 gitlab.local.example.net registry.local.example.net" in check.fix


CACHE = Path("/home/dev/.cache/blueprint/images")


def cache_check(machine: FakeMachine, name: str, folder: Path | None = CACHE, stack: str = "phase1") -> Check:
    return next(check for check in checks.image_cache_checks(machine, folder, stack) if check.name == name)


def test_too_little_room_for_the_image_cache_fails_naming_how_to_free_it_move_it_or_turn_it_off() -> None:
    machine = FakeMachine(free=5 * GIB, paths={"/home/dev", "/home/dev/.cache"})
    check = cache_check(machine, checks.CACHE_SPACE)
    assert not check.ok
    assert "5.0 GiB free on the filesystem of /home/dev/.cache" in check.found
    assert "`docker image prune -a`" in check.fix
    assert "`pulumi config set -s phase1 blueprint:imageCacheDir <a folder on a disk with more room>`" in check.fix
    assert "`pulumi config set -s phase1 blueprint:imageCache false`" in check.fix


def test_a_cache_folder_the_mirrors_would_refuse_fails_the_doctor_too() -> None:
    machine = FakeMachine(paths={str(CACHE)}, refused={str(CACHE): "holds files blueprint did not write"})
    check = cache_check(machine, checks.CACHE_FOLDER)
    assert not check.ok
    assert f"{CACHE} holds files blueprint did not write" in check.found
    assert "blueprint:imageCacheDir" in check.fix


def test_an_empty_image_cache_needs_room_for_the_whole_cache_and_a_margin() -> None:
    # The bring-up guide's "about 9 GiB": the platform's images and a margin for what else writes there.
    just_the_images = FakeMachine(free=checks.CACHE_FULL_BYTES + GIB // 2, paths={str(CACHE)})
    with_the_margin = FakeMachine(free=checks.CACHE_FULL_BYTES + checks.CACHE_MARGIN_BYTES, paths={str(CACHE)})
    assert not cache_check(just_the_images, checks.CACHE_SPACE).ok
    assert cache_check(with_the_margin, checks.CACHE_SPACE).ok
    assert checks.CACHE_FULL_BYTES + checks.CACHE_MARGIN_BYTES == 9 * GIB


def test_what_the_image_cache_already_holds_is_not_needed_again() -> None:
    full = checks.CACHE_FULL_BYTES
    room = 2 * GIB  # less than a whole cache, more than what is left to download with the margin
    filled = FakeMachine(free=room, paths={str(CACHE)}, held={str(CACHE): full - GIB // 2})
    empty = FakeMachine(free=room, paths={str(CACHE)})
    assert cache_check(filled, checks.CACHE_SPACE).ok
    assert not cache_check(empty, checks.CACHE_SPACE).ok


def test_an_image_cache_folder_that_cannot_be_made_fails_with_the_command_that_makes_it_the_users() -> None:
    machine = FakeMachine(paths={"/srv"}, read_only={"/srv"})
    check = cache_check(machine, checks.CACHE_FOLDER, Path("/srv/blueprint cache"))
    assert not check.ok
    assert check.found == "/srv (where /srv/blueprint cache will be made) is not a folder you can write to"
    assert """`sudo mkdir -p '/srv/blueprint cache' && sudo chown "$(id -u):$(id -g)" '/srv/blueprint cache'`""" in check.fix
    assert "`pulumi config set -s phase1 blueprint:imageCacheDir <folder>`" in check.fix


def test_with_the_image_cache_off_no_room_is_asked_for_it() -> None:
    assert [(check.name, check.ok) for check in checks.image_cache_checks(FakeMachine(free=0), None, "dev")] == [(checks.CACHE_SPACE, True)]
