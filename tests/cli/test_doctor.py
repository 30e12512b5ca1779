"""`blueprint doctor`: each prerequisite of a real run fails with its own exact fix, and `--fix`
installs only what needs no root, and only a download that matches the SHA-256 its publisher puts
beside it (no installer script is ever run). The checks run against a FakeMachine, so this needs
neither Docker nor the tools it looks for, and never downloads anything: the fake serves files."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.metadata
import io
import re
import shlex
import socket
import stat
import tarfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

import pytest

import versions
from cli import doctor
from cli.doctor import (
    CPUS,
    MEMORY,
    NAMES,
    Check,
    Download,
    DownloadError,
    FixStep,
    RealMachine,
    checks,
    fix_plan,
    platform_names,
    resources_needed,
    run,
)
from cli.os_family import Command
from tests.cli.test_os_family import ARCH, BRING_UP, DEBIAN_13, FEDORA_42, OPENSUSE_TUMBLEWEED, UBUNTU_24_04, WSL2_KERNEL

GIB = 1024**3
MIB = 1024**2
HOME = Path("/home/dev")
PORTS = {"blueprint:httpPort": 80, "blueprint:httpsPort": 443, "blueprint:sshPort": 2222}
TOOLS = ("docker", "kind", "pulumi", "kubectl", "uv")
HEALTHY_OUTPUTS = {
    "docker": (0, "29.1.3\n"),
    "kind": (0, "kind v0.31.0 go1.25.5 linux/amd64\n"),
    "pulumi": (0, "v3.272.0\n"),
    "kubectl": (0, "Client Version: v1.35.0\nKustomize Version: v5.7.1\n"),
    "uv": (0, "uv 0.9.0\n"),
}
NEEDS = resources_needed(gitlab_nodes=3, runner_nodes=1, headlamp=False)
"""What the default node counts need: 10 GiB and 4 CPUs."""
INOTIFY_OK = {"/proc/sys/fs/inotify/max_user_watches": "524288\n", "/proc/sys/fs/inotify/max_user_instances": "512\n"}
ENGINE_UNDER_SYSTEMD = frozenset({doctor.SYSTEMD_RUNNING, "/usr/lib/systemd/system/docker.service", "/usr/bin/dockerd"})
"""A Linux booted with systemd, with Docker Engine installed (its unit, dockerd)."""


@dataclass(frozen=True, kw_only=True)
class FakeMachine:
    """A machine made of dictionaries. `outputs` is keyed by "argv[0] argv[1]" or by argv[0];
    `served` is what its downloads get, by URL; what `--fix` installs under `home_dir` is on it, so
    a re-check can see the result."""

    system: str = "linux"
    machine: str = "x86_64"
    tools: dict[str, str] = field(default_factory=lambda: {name: f"/usr/bin/{name}" for name in TOOLS})
    outputs: dict[str, tuple[int, str]] = field(default_factory=lambda: dict(HEALTHY_OUTPUTS))
    busy: set[int] = field(default_factory=set)
    memory: int | None = 16 * GIB
    cpus: int | None = 8
    files: dict[str, str] = field(default_factory=lambda: dict(INOTIFY_OK))
    calls: list[list[str]] = field(default_factory=list)
    addresses: dict[str, str | None] = field(default_factory=dict)
    home_dir: Path = HOME
    served: dict[str, bytes] = field(default_factory=dict)
    downloads: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    paths: set[str] = field(default_factory=lambda: set(ENGINE_UNDER_SYSTEMD))
    """What is there besides `files` (folders, binaries), for `exists`."""
    user_id: int | None = 1000
    user: str | None = "dev"
    free: int | None = 100 * GIB
    """Free bytes on every filesystem; None: not readable."""
    held: dict[str, int] = field(default_factory=dict)
    """Bytes on disk under each folder (the image cache's)."""
    read_only: set[str] = field(default_factory=set)
    refused: dict[str, str] = field(default_factory=dict)
    """Cache folders the mirrors would refuse, and why (`Machine.cache_refusal`)."""
    """Folders this user cannot write to."""

    def _installed(self, name: str) -> Path | None:
        for path in (self.home_dir / ".local/bin" / name, self.home_dir / ".pulumi/bin" / name):
            if path.is_file() and path.stat().st_mode & stat.S_IXUSR:
                return path
        return None

    def which(self, name: str) -> str | None:
        installed = self._installed(name)
        return self.tools.get(name) or (str(installed) if installed else None)

    def run(self, argv: Sequence[str], timeout: float) -> tuple[int, str]:
        self.calls.append(list(argv))
        found = self.outputs.get(" ".join(argv)) or self.outputs.get(" ".join(argv[:2])) or self.outputs.get(argv[0])
        if found is None and self._installed(argv[0]):
            found = HEALTHY_OUTPUTS[argv[0]]
        return found or (127, f"{argv[0]}: command not found")

    def download(self, url: str, dest: Path) -> None:
        self.downloads.append(url)
        if url not in self.served:
            raise DownloadError(f"cannot download {url}: HTTPError: 404 Not Found")
        dest.write_bytes(self.served[url])

    def port_free(self, port: int) -> bool:
        return port not in self.busy

    def memory_bytes(self) -> int | None:
        return self.memory

    def cpu_count(self) -> int | None:
        return self.cpus

    def read_text(self, path: str) -> str | None:
        return self.files.get(path)

    def home(self) -> Path:
        return self.home_dir

    def resolve(self, name: str) -> str | None:
        return self.addresses.get(name, "127.0.0.1")

    def environ(self) -> dict[str, str]:
        return self.env

    def exists(self, path: str) -> bool:
        return path in self.paths or path in self.files

    def uid(self) -> int | None:
        return self.user_id

    def free_bytes(self, path: str) -> int | None:
        return self.free

    def used_bytes(self, path: str) -> int:
        return self.held.get(path, 0)

    def writable(self, path: str) -> bool:
        return path not in self.read_only

    def cache_refusal(self, path: str) -> str | None:
        return self.refused.get(path)

    def user_name(self) -> str | None:
        return self.user


def pulumi_tarball(binary: bytes = b"#!/bin/sh\necho v3.272.0\n") -> bytes:
    """What Pulumi's release tarball holds: pulumi/<binaries>."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in (("pulumi/pulumi", binary), ("pulumi/pulumi-language-python", b"#!/bin/sh\n")):
            member = tarfile.TarInfo(name)
            member.size, member.mode = len(data), 0o755
            archive.addfile(member, io.BytesIO(data))
    return buffer.getvalue()


def serve_releases(machine: FakeMachine, tampered: str | None = None) -> FakeMachine:
    """Serve kind, kubectl and Pulumi for `machine` with their published checksum files, in each
    publisher's own format; `tampered` is served altered after its checksum was published."""
    arch = doctor._arch(machine)
    assert arch is not None
    for tool in (doctor.KIND, doctor.KUBECTL, doctor.PULUMI):
        release = doctor.downloads(machine, tool, arch)
        body = pulumi_tarball() if release.unpack else f"#!/bin/sh\n# {tool}\n".encode()
        digest = hashlib.sha256(body).hexdigest()
        # kubectl's .sha256 is the bare digest; kind's .sha256sum and Pulumi's checksums.txt are lists
        listed = f"{'0' * 64}  some-other-file.tar.gz\n{digest}  {release.listed_as}\n"
        sums = f"{digest}\n" if release.listed_as is None else listed
        machine.served[release.url] = body + (b"tampered" if tool == tampered else b"")
        machine.served[release.checksum_url] = sums.encode()
    return machine


def without(machine: FakeMachine, *tools: str) -> FakeMachine:
    for tool in tools:
        machine.tools.pop(tool)
        machine.outputs.pop(tool, None)
    return machine


def checked(machine: FakeMachine) -> dict[str, Check]:
    results = checks(machine, ports=PORTS, needs=NEEDS, pulumi_min_version=doctor.PULUMI_MIN_VERSION, cluster_name="blueprint")
    return {check.name: check for check in results}


def doctor_output(argv: list[str], machine: FakeMachine) -> tuple[int, str]:
    out = io.StringIO()
    code = run(argv, machine=machine, out=out)
    return code, out.getvalue()


def test_a_machine_without_docker_or_pulumi_fails_naming_both_with_their_fixes() -> None:
    code, output = doctor_output([], without(FakeMachine(), "docker", "pulumi"))
    assert code == 1
    assert "FAIL  Docker CLI" in output
    assert "fix: install Docker Engine (https://docs.docker.com/engine/install/)" in output
    assert "FAIL  Pulumi CLI" in output
    assert "fix: `blueprint doctor --fix` (downloads https://get.pulumi.com/releases/sdk/pulumi-v3.272.0-linux-x64.tar.gz" in output
    assert "checks failed: Docker CLI, Docker engine, Pulumi CLI" in output


def test_a_machine_with_everything_passes_and_run_returns_0() -> None:
    code, output = doctor_output([], FakeMachine())
    assert code == 0, output
    assert "FAIL" not in output
    assert "PASS  port 443 (blueprint:httpsPort)" in output
    assert "checks passed" in output.splitlines()[-1]


def _engine_down(m: FakeMachine) -> FakeMachine:
    m.outputs["docker"] = (1, "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?")
    return m


def _engine_forbidden(m: FakeMachine) -> FakeMachine:
    m.outputs["docker"] = (1, "permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock")
    return m


def _old_pulumi(m: FakeMachine) -> FakeMachine:
    m.outputs["pulumi"] = (0, "v3.120.0\n")
    return m


def _busy_https(m: FakeMachine) -> FakeMachine:
    m.busy.add(443)
    return m


def _low_watches(m: FakeMachine) -> FakeMachine:
    m.files["/proc/sys/fs/inotify/max_user_watches"] = "8192\n"
    return m


INOTIFY_FIX = "`sudo sysctl fs.inotify.max_user_watches=524288 fs.inotify.max_user_instances=512`"
KUBECTL_URL = "https://dl.k8s.io/release/v1.35.0/bin/linux/amd64/kubectl"
KIND_URL = "https://github.com/kubernetes-sigs/kind/releases/download/v0.31.0/kind-linux-amd64"


@pytest.mark.parametrize(
    ("break_it", "name", "found", "fix"),
    [
        pytest.param(_engine_down, "Docker engine", "not reachable: Cannot connect", "`sudo systemctl start docker`", id="engine-down"),
        pytest.param(
            lambda m: _engine_down(replace(m, system="darwin", files={})),
            "Docker engine",
            "not reachable",
            "start Docker Desktop (`open -a Docker`)",
            id="engine-down-darwin",
        ),
        pytest.param(_engine_forbidden, "Docker engine", "permission denied", "`sudo usermod -aG docker $USER`", id="engine-forbidden"),
        pytest.param(lambda m: without(m, "kind"), "kind", "no `kind` on PATH", f"{KIND_URL}.sha256sum", id="kind-missing"),
        pytest.param(
            _old_pulumi,
            "Pulumi CLI",
            f"v3.120.0, older than {doctor.PULUMI_MIN_VERSION}",
            "pulumi-v3.272.0-linux-x64.tar.gz",
            id="old-pulumi",
        ),
        pytest.param(lambda m: without(m, "kubectl"), "kubectl", "no `kubectl` on PATH", f"{KUBECTL_URL}.sha256", id="kubectl-missing"),
        pytest.param(
            _busy_https,
            "port 443 (blueprint:httpsPort)",
            "blueprint:httpsPort 443 is in use",
            "`pulumi config set -s phase1 blueprint:httpsPort <free port>`, or add the line `  blueprint:httpsPort: <free port>`",
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
        pytest.param(_low_watches, "inotify limits", "max_user_watches=8192", INOTIFY_FIX, id="low-inotify"),
    ],
)
def test_each_failing_check_gives_its_fix(break_it: Callable[[FakeMachine], FakeMachine], name: str, found: str, fix: str) -> None:
    results = checked(break_it(FakeMachine()))
    assert [check.name for check in results.values() if not check.ok] == [name]
    assert found in results[name].found
    assert fix in results[name].fix


def test_the_memory_needed_grows_with_each_node() -> None:
    for gitlab_nodes in range(1, 8):
        for runner_nodes in range(1, 8):
            needed = resources_needed(gitlab_nodes=gitlab_nodes, runner_nodes=runner_nodes, headlamp=False).memory_bytes
            more_gitlab = resources_needed(gitlab_nodes=gitlab_nodes + 1, runner_nodes=runner_nodes, headlamp=False).memory_bytes
            more_runners = resources_needed(gitlab_nodes=gitlab_nodes, runner_nodes=runner_nodes + 1, headlamp=False).memory_bytes
            assert more_gitlab - needed == more_runners - needed == doctor.NODE_MEMORY_BYTES > 0


def test_the_memory_and_cpus_needed_count_headlamp_only_when_it_is_on() -> None:
    on = resources_needed(gitlab_nodes=3, runner_nodes=1, headlamp=True)
    assert on.memory_bytes > NEEDS.memory_bytes
    assert on.millicpus > NEEDS.millicpus


def test_doctor_checks_memory_and_cpus_for_the_configured_node_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "Pulumi.phase1.yaml").write_text("config:\n  blueprint:gitlabNodes: 6\n  blueprint:runnerNodes: 2\n")
    monkeypatch.setattr("stacks.config.STACK_FILES_DIR", tmp_path)
    _, output = doctor_output([], FakeMachine(memory=4 * GIB, cpus=1))
    memory, cpus = (line for line in output.splitlines() if line.startswith(("FAIL  memory", "FAIL  CPUs")))
    needed = resources_needed(gitlab_nodes=6, runner_nodes=2, headlamp=False)
    assert memory.endswith(f"4.0 GiB total, needs {needed.gib} GiB: 9 nodes + platform requests")
    assert cpus.endswith(f"1, needs {needed.cpus}: 9 nodes + platform requests")


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
    [memory] = [c for c in checks(FakeMachine(memory=GIB), ports={}, needs=needs, pulumi_min_version="3.145.0") if c.name == MEMORY]
    assert memory.fix.endswith(
        f"or fewer nodes (blueprint:gitlabNodes, blueprint:runnerNodes): each needs {doctor.NODE_MEMORY_BYTES // MIB} MiB"
    )


def test_the_bring_up_guide_states_what_the_default_config_needs_and_what_each_node_adds() -> None:
    # The README's own statement is tests/test_readme.py's.
    guide = BRING_UP.read_text()
    needs = doctor.default_needs()
    stated = re.findall(r"at least (\d+) CPUs and (\d+) GiB", guide)
    assert len(stated) >= 2, "the prerequisites table and the sizing paragraph both state it"
    assert set(stated) == {(str(needs.cpus), str(needs.gib))}
    assert f"{needs.nodes} nodes" in guide
    assert f"{doctor.NODE_MEMORY_BYTES // MIB} MiB more for each further node" in guide


def _requests_in(value: object) -> list[tuple[str, str]]:
    """Every (cpu, memory) a pod's `resources.requests` sets, anywhere in a plan's inputs."""
    if isinstance(value, list):
        return [found for item in value for found in _requests_in(item)]
    if not isinstance(value, dict):
        return []
    requests = value.get("resources", {}).get("requests", {}) if isinstance(value.get("resources"), dict) else {}
    own = [(str(requests["cpu"]), str(requests["memory"]))] if "cpu" in requests else []
    return own + [found for key, item in value.items() if key != "resources" for found in _requests_in(item)]


def test_doctors_table_has_every_request_blueprint_sets_as_the_plans_show_it() -> None:
    from tests.plans import planned

    plans = (planned("phase2"), planned("phase1", headlamp="true"))
    in_plans = sorted(found for plan in plans for resource in plan.resources for found in _requests_in(resource["inputs"]))
    tables = (*doctor.CLUSTER_REQUESTS, *doctor.PLATFORM_REQUESTS, *doctor.HEADLAMP_REQUESTS, *doctor.NODE_OVERHEAD)
    assert sorted((request.cpu, request.memory) for request in tables if request.ours) == in_plans


def test_a_pulumi_cli_older_than_3_145_fails_because_it_runs_dynamic_providers_outside_the_uv_environment() -> None:
    machine = FakeMachine()
    machine.outputs["pulumi"] = (0, "v3.144.1\n")
    code, output = doctor_output([], machine)
    assert code == 1, output
    assert "FAIL  Pulumi CLI" in output
    assert "v3.144.1, older than 3.145.0" in output
    assert "dynamic providers" in output


def test_the_bring_up_guide_names_the_oldest_pulumi_cli_the_doctor_accepts() -> None:
    assert f"Pulumi CLI {doctor.PULUMI_MIN_VERSION} or later" in BRING_UP.read_text()


def test_inotify_fix_says_how_to_persist_it() -> None:
    machine = _low_watches(FakeMachine())
    assert "sudo tee /etc/sysctl.d/" in checked(machine)["inotify limits"].fix


def test_inotify_fix_never_lowers_a_limit_already_above_the_minimum() -> None:
    machine = _low_watches(FakeMachine())
    machine.files["/proc/sys/fs/inotify/max_user_instances"] = "8192\n"
    assert "fs.inotify.max_user_instances=8192" in checked(machine)["inotify limits"].fix


def test_inotify_is_not_checked_on_darwin() -> None:
    machine = FakeMachine(system="darwin", machine="arm64", files={})
    assert "inotify limits" not in checked(machine)


USERNS_RESTRICTION = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"


def _userns_restricted(m: FakeMachine) -> FakeMachine:
    m.files[USERNS_RESTRICTION] = "1\n"
    return m


def test_a_kernel_restricting_unprivileged_user_namespaces_warns_with_the_sysctl_and_how_to_persist_it() -> None:
    """A warning that stops nothing: only the apps' image builds may fail, and Ubuntu's rootlesskit profile may spare them."""
    results = checked(_userns_restricted(FakeMachine()))
    assert [check.name for check in results.values() if not check.ok] == []
    userns = results[doctor.USERNS]
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
    assert checked(machine)[doctor.USERNS].ok


def test_the_user_namespace_fix_persists_in_another_file_than_the_inotify_fix() -> None:
    results = checked(_userns_restricted(_low_watches(FakeMachine())))
    persisted = [re.findall(r"sudo tee (\S+?)`", results[name].fix or results[name].advice) for name in ("inotify limits", doctor.USERNS)]
    assert all(len(files) == 1 for files in persisted), persisted
    assert persisted[0] != persisted[1]


def test_user_namespaces_pass_under_docker_desktop_on_linux_whose_vm_has_no_apparmor() -> None:
    machine = _userns_restricted(FakeMachine())
    machine.outputs["docker info --format {{.OperatingSystem}}"] = (0, "Docker Desktop\n")
    assert checked(machine)[doctor.USERNS].ok


def test_user_namespaces_are_not_checked_on_darwin() -> None:
    machine = FakeMachine(system="darwin", machine="arm64", files={USERNS_RESTRICTION: "1\n"})
    assert doctor.USERNS not in checked(machine)


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


def _downloads(steps: list[FixStep]) -> list[Download]:
    return [step.download for step in steps if step.download is not None]


@pytest.mark.parametrize(
    ("system", "machine", "os_arch"),
    [("linux", "x86_64", ("linux", "amd64")), ("linux", "aarch64", ("linux", "arm64")), ("darwin", "arm64", ("darwin", "arm64"))],
)
def test_fix_plan_downloads_kind_and_kubectl_for_the_machines_os_and_arch_with_their_published_checksums(
    system: str, machine: str, os_arch: tuple[str, str]
) -> None:
    fake = without(FakeMachine(system=system, machine=machine), "kind", "kubectl")
    failed = [check for check in checked(fake).values() if not check.ok]
    os_, arch = os_arch
    kind = f"https://github.com/kubernetes-sigs/kind/releases/download/v0.31.0/kind-{os_}-{arch}"
    kubectl = f"https://dl.k8s.io/release/v1.35.0/bin/{os_}/{arch}/kubectl"
    assert [(d.url, d.checksum_url, d.listed_as, d.target) for d in _downloads(fix_plan(failed, fake))] == [
        (kind, f"{kind}.sha256sum", f"kind-{os_}-{arch}", HOME / ".local/bin/kind"),
        (kubectl, f"{kubectl}.sha256", None, HOME / ".local/bin/kubectl"),
    ]


def test_fix_plan_installs_the_pinned_pulumi_release_into_home_pulumi_checked_against_its_checksums() -> None:
    fake = without(FakeMachine(system="darwin", machine="arm64", files={}), "pulumi")
    [pulumi] = _downloads(fix_plan([checked(fake)["Pulumi CLI"]], fake))
    assert pulumi.url == "https://get.pulumi.com/releases/sdk/pulumi-v3.272.0-darwin-arm64.tar.gz"
    assert pulumi.checksum_url == "https://get.pulumi.com/releases/sdk/pulumi-3.272.0-checksums.txt"
    assert (pulumi.listed_as, pulumi.target, pulumi.unpack) == ("pulumi-v3.272.0-darwin-arm64.tar.gz", HOME / ".pulumi/bin", True)


def test_the_pulumi_cli_fix_installs_the_sdks_version() -> None:
    assert importlib.metadata.version("pulumi") == versions.PULUMI_VERSION


def test_fix_plan_only_prints_instructions_for_docker_ports_memory_and_inotify() -> None:
    fake = _low_watches(_engine_down(FakeMachine(busy={443}, memory=4 * GIB)))
    failed = [check for check in checked(fake).values() if not check.ok]
    assert [check.name for check in failed] == ["Docker engine", "port 443 (blueprint:httpsPort)", "memory", "inotify limits"]
    steps = fix_plan(failed, fake)
    assert _downloads(steps) == []
    assert [step.what for step in steps] == [f"{check.name}: {check.fix}" for check in failed]


def test_fix_plan_installs_nothing_for_a_machine_without_a_release() -> None:
    fake = without(FakeMachine(machine="riscv64"), "kind")
    steps = fix_plan([checked(fake)["kind"]], fake)
    assert _downloads(steps) == []
    assert "there is no download for linux/riscv64" in steps[0].what


def test_run_fix_installs_each_download_once_it_matches_its_published_sha256_and_checks_again(tmp_path: Path) -> None:
    fake = serve_releases(without(FakeMachine(home_dir=tmp_path), "kind", "pulumi"))
    code, output = doctor_output(["--fix"], fake)
    kind = tmp_path / ".local/bin/kind"
    assert kind.read_bytes() == fake.served[KIND_URL]
    assert stat.S_IMODE(kind.stat().st_mode) == 0o755
    assert (tmp_path / ".pulumi/bin/pulumi").read_bytes() == b"#!/bin/sh\necho v3.272.0\n"
    first, again = output.split("checking again:")
    assert "FAIL  kind" in first
    assert "PASS  kind" in again
    assert "PASS  Pulumi CLI" in again
    assert code == 0, output


def test_run_fix_runs_no_installer_script(tmp_path: Path) -> None:
    """Piping an installer into `sh` runs whatever the server sends, unchecked."""
    fake = serve_releases(without(FakeMachine(home_dir=tmp_path), "kind", "kubectl", "pulumi"))
    doctor_output(["--fix"], fake)
    assert [call for call in fake.calls if call[0] in ("sh", "bash", "curl", "chmod")] == []
    assert all(
        url.endswith((".tar.gz", "sha256sum", ".sha256", "checksums.txt")) or url.rsplit("/", 1)[1] in ("kind-linux-amd64", "kubectl")
        for url in fake.downloads
    )


def test_a_download_that_does_not_match_its_published_sha256_stops_the_fix_and_installs_nothing(tmp_path: Path) -> None:
    fake = serve_releases(without(FakeMachine(home_dir=tmp_path), "kind", "pulumi"), tampered=doctor.KIND)
    code, output = doctor_output(["--fix"], fake)
    assert code == 1
    assert f"stopped: {KIND_URL} does not match its published SHA-256 ({KIND_URL}.sha256sum)" in output
    assert "Nothing was installed" in output
    assert not (tmp_path / ".local").exists()
    assert not any("pulumi" in url for url in fake.downloads)  # stopped: the next install is not tried


def test_a_pulumi_tarball_that_does_not_match_leaves_the_installed_pulumi_alone(tmp_path: Path) -> None:
    installed = tmp_path / ".pulumi/bin/pulumi"
    installed.parent.mkdir(parents=True)
    installed.write_text("the old one")
    fake = serve_releases(FakeMachine(home_dir=tmp_path), tampered=doctor.PULUMI)
    fake.outputs["pulumi"] = (0, "v3.120.0\n")
    code, output = doctor_output(["--fix"], fake)
    assert code == 1
    assert "does not match its published SHA-256" in output
    assert installed.read_text() == "the old one"
    assert sorted(path.name for path in (tmp_path / ".pulumi").iterdir()) == ["bin"]


def test_a_checksum_file_that_does_not_list_the_download_installs_nothing(tmp_path: Path) -> None:
    fake = serve_releases(without(FakeMachine(home_dir=tmp_path), "kind"))
    fake.served[f"{KIND_URL}.sha256sum"] = b"0123  kind-linux-amd64\n"
    code, output = doctor_output(["--fix"], fake)
    assert code == 1
    assert f"failed: {KIND_URL}.sha256sum holds no SHA-256 for kind-linux-amd64; nothing was installed" in output
    assert not (tmp_path / ".local/bin/kind").exists()


@pytest.mark.parametrize(
    ("text", "listed_as", "digest"),
    [
        (f"{'a' * 64}\n", None, "a" * 64),
        (f"{'b' * 64}  kind-linux-amd64\n", "kind-linux-amd64", "b" * 64),
        (
            f"{'c' * 64}  pulumi-v3.272.0-linux-arm64.tar.gz\n{'d' * 64}  pulumi-v3.272.0-linux-x64.tar.gz\n",
            "pulumi-v3.272.0-linux-x64.tar.gz",
            "d" * 64,
        ),
        (f"{'e' * 64}  kind-linux-arm64\n", "kind-linux-amd64", None),
    ],
)
def test_the_published_digest_is_read_in_each_publishers_format(text: str, listed_as: str | None, digest: str | None) -> None:
    assert doctor.published_digest(text, listed_as) == digest


def test_run_fix_prints_instructions_and_still_fails_when_something_is_left() -> None:
    fake = FakeMachine(memory=4 * GIB)
    code, output = doctor_output(["--fix"], fake)
    assert "to do by hand: memory: close other applications" in output
    assert code == 1


def test_real_machine_run_of_a_missing_binary_gives_127() -> None:
    code, output = RealMachine().run(["blueprint-doctor-no-such-binary"], timeout=5)
    assert code == 127
    assert "not found" in output


def test_real_machine_sees_a_port_held_by_a_listener() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert not RealMachine().port_free(port)


def test_platform_names_that_do_not_resolve_to_loopback_fail_with_the_hosts_line() -> None:
    names = ("gitlab.local.example.net", "registry.local.example.net")
    machine = FakeMachine(addresses={"gitlab.local.example.net": None})
    [check] = [c for c in checks(machine, ports={}, needs=NEEDS, pulumi_min_version="3.142.0", names=names) if c.name == NAMES]
    assert not check.ok
    assert "gitlab.local.example.net does not resolve to 127.0.0.1" in check.found
    assert "127.0.0.1 gitlab.local.example.net registry.local.example.net" in check.fix


def test_the_names_to_resolve_include_every_apps_host() -> None:
    assert platform_names("local.example.net") == (
        "gitlab.local.example.net", "registry.local.example.net", "kas.local.example.net", "guestbook.local.example.net",
    )  # fmt: skip


@pytest.fixture
def python_3_11_2(monkeypatch: pytest.MonkeyPatch) -> None:
    """tarfile as Python before 3.11.4 has it (Debian 12 ships 3.11.2): no `data_filter`, and no
    `filter` argument to extract (PEP 706)."""
    monkeypatch.delattr(tarfile, "data_filter")
    for name in ("extractall", "extract"):
        original = getattr(tarfile.TarFile, name)

        def without_filter(self: tarfile.TarFile, *args: object, _original: Callable[..., None] = original, **kwargs: object) -> None:
            if "filter" in kwargs:
                raise TypeError(f"{_original.__name__}() got an unexpected keyword argument 'filter'")
            _original(self, *args, **kwargs)

        monkeypatch.setattr(tarfile.TarFile, name, without_filter)


@pytest.mark.usefixtures("python_3_11_2")
def test_fix_installs_pulumi_on_a_python_without_tarfiles_data_filter(tmp_path: Path) -> None:
    fake = serve_releases(without(FakeMachine(home_dir=tmp_path), "pulumi"))
    code, output = doctor_output(["--fix"], fake)
    installed = tmp_path / ".pulumi/bin/pulumi"
    assert installed.read_bytes() == b"#!/bin/sh\necho v3.272.0\n", output
    assert stat.S_IMODE(installed.stat().st_mode) == 0o755
    assert code == 0, output


def _archive(*members: tuple[tarfile.TarInfo, bytes]) -> tarfile.TarFile:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for member, data in members:
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data) if member.isreg() else None)
    buffer.seek(0)
    return tarfile.open(fileobj=buffer)


def _member(name: str, kind: bytes = tarfile.REGTYPE, linkname: str = "") -> tarfile.TarInfo:
    member = tarfile.TarInfo(name)
    member.type, member.linkname, member.mode = kind, linkname, 0o755
    return member


def _escapes(outside: Path) -> dict[str, tuple[tuple[tarfile.TarInfo, bytes], ...]]:
    """Archives whose members would write `outside/evil` (or into `outside/victim`) if unpacked naively."""
    return {
        "dot-dot": ((_member("pulumi/../../outside/evil"), b"x"),),
        "absolute": ((_member(f"{outside}/evil"), b"x"),),
        "through-a-symlink": ((_member("pulumi/link", tarfile.SYMTYPE, str(outside)), b""), (_member("pulumi/link/evil"), b"x")),
        "through-a-hard-link": ((_member("pulumi/hard", tarfile.LNKTYPE, str(outside / "victim")), b""), (_member("pulumi/hard"), b"x")),
    }


@pytest.mark.parametrize("kind", ["dot-dot", "absolute", "through-a-symlink", "through-a-hard-link"])
@pytest.mark.parametrize("python", ["with-data-filter", "3.11.2"])
def test_unpacking_a_download_writes_nothing_outside_its_folder(
    tmp_path: Path, request: pytest.FixtureRequest, kind: str, python: str
) -> None:
    if python == "3.11.2":
        request.getfixturevalue("python_3_11_2")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_text("mine")
    folder = tmp_path / "unpacked" / "here"
    with contextlib.suppress(tarfile.TarError):  # refused or not, what counts is that nothing got out
        doctor.unpack(_archive(*_escapes(outside)[kind]), folder)
    assert sorted(path.name for path in outside.iterdir()) == ["victim"]
    assert (outside / "victim").read_text() == "mine"
    assert not (tmp_path / "unpacked" / "outside").exists()


@pytest.mark.usefixtures("python_3_11_2")
@pytest.mark.parametrize(
    "member",
    [_member("pulumi/link", tarfile.SYMTYPE, "pulumi"), _member("pulumi/fifo", tarfile.FIFOTYPE), _member("pulumi/dev", tarfile.CHRTYPE)],
    ids=["symlink", "fifo", "device"],
)
def test_unpacking_without_the_data_filter_takes_plain_files_and_folders_only(tmp_path: Path, member: tarfile.TarInfo) -> None:
    with pytest.raises(tarfile.TarError, match="not a plain file or folder"):
        doctor.unpack(_archive((member, b"")), tmp_path / "unpacked")


@pytest.mark.usefixtures("python_3_11_2")
def test_unpacking_without_the_data_filter_keeps_no_setuid_bit(tmp_path: Path) -> None:
    member = _member("pulumi/pulumi")
    member.mode = 0o4777
    doctor.unpack(_archive((member, b"#!/bin/sh\n")), tmp_path / "unpacked")
    assert stat.S_IMODE((tmp_path / "unpacked" / "pulumi" / "pulumi").stat().st_mode) == 0o755


def test_a_bad_data_folder_setting_read_by_destroy_itself_is_one_message_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`destroy --wipe-data` with no stack left reads phase1's dataDir to find the kept data folder."""
    from cli import commands, teardown

    class NoStacks:
        """Every stack destroyed (Pulumi keeps them, empty) and nothing else to do."""

        def outputs(self, stack: str) -> None:
            return None

        def export_state(self, stack: str) -> dict[str, object]:
            return {"version": 3, "deployment": {"resources": []}}

        def __getattr__(self, name: str) -> object:
            pytest.fail(f"nothing to run, yet {name} was called")

    config = {**teardown._phase1_config(), "blueprint:dataDir": "~blueprint-test-no-such-user/x"}
    monkeypatch.setattr(teardown, "_phase1_config", lambda: config)
    args = argparse.Namespace(command="destroy", phase="all", preserve_data=False, wipe_data=True, cluster_gone=False, yes=True)
    assert commands.main_for(args, NoStacks(), io.StringIO()) == 1  # type: ignore[arg-type]
    said = capsys.readouterr().err
    assert "blueprint:dataDir = '~blueprint-test-no-such-user/x' is not valid: there is no user" in said
    assert "Traceback" not in said


def test_doctor_reports_a_data_folder_in_the_home_of_no_user_as_its_config_check(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("stacks.config.STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.phase1.yaml").write_text("config:\n  blueprint:dataDir: ~blueprint-test-no-such-user/x\n")
    code, output = doctor_output([], FakeMachine())
    assert code == 1
    assert "FAIL  stack config" in output
    assert "blueprint:dataDir = '~blueprint-test-no-such-user/x' is not valid: there is no user" in output


def test_doctor_of_the_dev_stack_checks_devs_own_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("stacks.config.STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.dev.yaml").write_text("config:\n  blueprint:pipelineTimeout: 5\n  blueprint:httpPort: 8080\n")
    code, output = doctor_output(["--stack", "dev"], FakeMachine())
    assert code == 1
    assert "stack dev:\n" in output
    assert "`pulumi config set -s dev blueprint:pipelineTimeout 600`" in output
    assert "port 8080 (blueprint:httpPort)" in output, "the ports checked are dev's own"


def test_doctor_of_one_phase_checks_that_phases_stack_alone(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("stacks.config.STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.phase3.yaml").write_text("config:\n  blueprint:pipelineTimeout: 5\n")
    assert doctor_output(["--phase", "1"], FakeMachine())[0] == 0
    code, output = doctor_output(["--phase", "3"], FakeMachine())
    assert code == 1
    assert "blueprint:pipelineTimeout = '5' is not valid" in output


def test_a_phase1_the_checked_phases_do_not_read_fails_no_check_of_theirs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`blueprint up --phase 3` runs `doctor --phase 3`: phase1's settings are not phase3's to refuse."""
    monkeypatch.setattr("stacks.config.STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.phase1.yaml").write_text("config:\n  blueprint:gitlabNodes: 12\n")
    code, output = doctor_output(["--phase", "3"], FakeMachine())
    assert code == 0, output
    assert "not checked: Pulumi.phase1.yaml is invalid (`uv run blueprint doctor --stack phase1` says why)" in output


def test_a_port_set_as_a_secret_is_said_not_checked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("stacks.config.STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.phase1.yaml").write_text("config:\n  blueprint:sshPort:\n    secure: v1:AAAA\n")
    code, output = doctor_output(["--phase", "1"], FakeMachine())
    assert "blueprint:sshPort: not checked (secret, so not known here)" in output
    assert "port 2222" not in output


def test_a_warning_is_printed_with_what_to_do_and_stops_nothing() -> None:
    code, output = doctor_output(["--phase", "1"], _userns_restricted(FakeMachine()))
    assert code == 0
    assert f"WARN  {doctor.USERNS}" in output
    assert "if it does: `sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0`" in output


@pytest.mark.parametrize(
    ("argv", "checks_names"),
    [
        (["--phase", "1"], False),
        (["--stack", "phase1"], False),
        (["--phase", "2"], True),
        (["--phase", "3"], True),
        (["--phase", "all"], True),
        (["--stack", "dev"], True),
    ],
)
def test_the_platform_names_are_checked_only_for_the_stacks_that_call_gitlab_from_the_laptop(argv: list[str], checks_names: bool) -> None:
    # phase1 only makes the cluster: `up --phase 1` must not demand the /etc/hosts line phase2 needs.
    code, output = doctor_output(argv, FakeMachine(addresses={"gitlab.local.example.net": None}))
    assert (NAMES in output) is checks_names
    assert code == (1 if checks_names else 0)


# --- the OS family's commands: shown, asked for once, run in order (cli/os_family.py) ---------------


@dataclass
class FakeShell:
    """What `--fix` runs, recorded; no command is really run. `fails` maps a shown command to its exit code."""

    fails: dict[str, int] = field(default_factory=dict)
    ran: list[Command] = field(default_factory=list)

    def __call__(self, command: Command, out: io.StringIO | TextIO) -> int:
        self.ran.append(command)
        code = self.fails.get(command.shown, 0)
        out.write(f"    output of {command.argv[1] if len(command.argv) > 1 else command.argv[0]}{' (error)' if code else ''}\n")
        return code

    @property
    def shown(self) -> list[str]:
        return [command.shown for command in self.ran]


def _never_asked(prompt: str) -> str:
    raise AssertionError(f"asked {prompt!r}")


def on(os_release: str, home_dir: Path = HOME) -> FakeMachine:
    """A Linux machine whose os-release is `os_release`, its user `dev`."""
    machine = FakeMachine(home_dir=home_dir)
    machine.files["/etc/os-release"] = os_release
    machine.env["USER"] = "dev"
    return machine


def fix(
    machine: FakeMachine, *, terminal: bool, answer: str | None = None, yes: bool = False, shell: FakeShell | None = None
) -> tuple[str, FakeShell, list[str]]:
    shell = shell or FakeShell()
    asked: list[str] = []

    def ask(prompt: str) -> str:
        asked.append(prompt)
        assert answer is not None, "asked without an answer"
        return answer

    out = io.StringIO()
    run(["--fix", *(["--yes"] if yes else []), "--phase", "1"], machine=machine, out=out, terminal=terminal, ask=ask, run_command=shell)
    return out.getvalue(), shell, asked


DEBIAN_DOCKER = [
    "sudo apt-get update",
    "sudo apt-get install -y docker.io",
    "sudo systemctl enable --now docker",
    "sudo usermod -aG docker dev",
]


def test_doctor_names_the_system_and_the_family_it_detected() -> None:
    _, output = doctor_output(["--phase", "1"], on(UBUNTU_24_04))
    assert output.splitlines()[0] == "system: Ubuntu 24.04.3 LTS (Debian/Ubuntu family)"


def test_a_missing_docker_is_fixed_with_the_familys_install_start_and_group_commands() -> None:
    docker = checked(without(on(DEBIAN_13), "docker"))[doctor.DOCKER_CLI]
    assert [command.shown for command in docker.commands] == DEBIAN_DOCKER
    assert all(f"`{shown}`" in docker.fix for shown in DEBIAN_DOCKER)
    assert "log out and in again" in docker.fix


def test_fix_shows_the_commands_asks_once_and_runs_them_in_order_on_yes() -> None:
    output, shell, asked = fix(without(on(DEBIAN_13), "docker"), terminal=True, answer="y")
    assert asked == ["Run these? [y/N] "]
    assert shell.shown == DEBIAN_DOCKER
    shown_before_asking = output[: output.index("$ sudo apt-get update")]
    assert all(f"  {command}\n" in shown_before_asking for command in DEBIAN_DOCKER)
    assert "checking again:" in output


@pytest.mark.parametrize("answer", ["", "n", "no", "maybe"])
def test_fix_runs_no_command_unless_the_answer_is_yes(answer: str) -> None:
    output, shell, asked = fix(without(on(DEBIAN_13), "docker"), terminal=True, answer=answer)
    assert len(asked) == 1
    assert shell.ran == []
    assert "not run." in output


def test_fix_without_a_terminal_and_without_yes_runs_nothing_and_says_to_pass_yes() -> None:
    shell = FakeShell()
    out = io.StringIO()
    code = run(
        ["--fix", "--phase", "1"], machine=without(on(DEBIAN_13), "docker"), out=out, terminal=False, ask=_never_asked, run_command=shell
    )
    assert code == 1
    assert shell.ran == []
    assert "not run: there is no terminal to ask on" in out.getvalue()
    assert "uv run blueprint doctor --fix --yes" in out.getvalue()
    assert "sudo apt-get install -y docker.io" in out.getvalue()  # still printed, to run by hand


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "script"])
def test_fix_yes_runs_the_commands_without_asking(terminal: bool) -> None:
    shell = FakeShell()
    run(
        ["--fix", "--yes", "--phase", "1"],
        machine=without(on(DEBIAN_13), "docker"),
        out=io.StringIO(),
        terminal=terminal,
        ask=_never_asked,
        run_command=shell,
    )
    assert shell.shown == DEBIAN_DOCKER


def test_fix_stops_at_the_first_command_that_fails_and_shows_its_output() -> None:
    shell = FakeShell(fails={"sudo apt-get install -y docker.io": 100})
    output, shell, _ = fix(without(on(DEBIAN_13), "docker"), terminal=True, answer="yes", shell=shell)
    assert shell.shown == DEBIAN_DOCKER[:2]
    assert "output of apt-get (error)" in output
    assert "stopped: `sudo apt-get install -y docker.io` failed (exit 100), its output above; 2 commands after it not run" in output
    assert "then `uv run blueprint doctor --fix` again" in output


def test_home_folder_installs_are_not_asked_for(tmp_path: Path) -> None:
    """They change nothing outside the home folder, and each is checked against its published SHA-256."""
    machine = serve_releases(without(on(DEBIAN_13, home_dir=tmp_path), "kind"))
    out = io.StringIO()
    code = run(["--fix", "--phase", "1"], machine=machine, out=out, terminal=True, ask=_never_asked, run_command=FakeShell())
    assert (tmp_path / ".local/bin/kind").is_file()
    assert code == 0, out.getvalue()


def test_under_sudo_the_tools_are_not_installed_into_roots_home(tmp_path: Path) -> None:
    """`sudo ... doctor --fix`: root's home is not the user's, whose PATH would never find them there."""
    machine = serve_releases(
        replace(without(on(DEBIAN_13, home_dir=tmp_path), "kind"), user_id=0, user="root", env={"USER": "root", "SUDO_USER": "dev"})
    )
    out = io.StringIO()
    run(["--fix", "--phase", "1"], machine=machine, out=out, terminal=True, ask=lambda _: "y", run_command=FakeShell())
    assert not (tmp_path / ".local/bin/kind").exists()
    assert "run `uv run blueprint doctor --fix` as dev, without sudo" in out.getvalue()


def test_the_docker_engine_line_is_not_repeated_as_a_to_do_when_the_docker_commands_install_it() -> None:
    output, _, _ = fix(without(on(DEBIAN_13), "docker"), terminal=False)
    assert "to do by hand: Docker engine" not in output


def test_wsl2_fix_installs_no_docker_and_says_docker_desktop_is_a_windows_install() -> None:
    machine = without(on(UBUNTU_24_04), "docker")
    machine.files["/proc/version"] = WSL2_KERNEL
    docker = checked(machine)[doctor.DOCKER_CLI]
    assert docker.commands == ()
    assert "Docker Desktop on Windows" in docker.fix
    assert "a Windows install, which `blueprint doctor --fix` does not do" in docker.fix
    output, shell, _ = fix(machine, terminal=True, answer="y")
    assert shell.ran == []
    assert "to do by hand: Docker CLI: install Docker Desktop on Windows" in output


def test_macos_docker_install_with_homebrew_says_it_opens_docker_desktops_window() -> None:
    machine = without(FakeMachine(system="darwin", machine="arm64", files={}), "docker")
    machine.tools["brew"] = "/opt/homebrew/bin/brew"
    docker = checked(machine)[doctor.DOCKER_CLI]
    assert [command.shown for command in docker.commands] == ["brew install --cask docker-desktop", "open -a Docker"]
    output, shell, _ = fix(machine, terminal=True, answer="y")
    shown_before_asking = output[: output.index("$ brew")]
    assert "(opens Docker Desktop's window: accept its terms there the first time" in shown_before_asking
    assert shell.shown == ["brew install --cask docker-desktop", "open -a Docker"]


def test_macos_without_homebrew_runs_nothing_and_names_the_download_page() -> None:
    docker = checked(without(FakeMachine(system="darwin", machine="arm64", files={}), "docker"))[doctor.DOCKER_CLI]
    assert docker.commands == ()
    assert "https://docs.docker.com/desktop/setup/install/mac-install/" in docker.fix


def test_an_unknown_family_gets_the_generic_docker_advice_and_no_commands() -> None:
    docker = checked(without(on(OPENSUSE_TUMBLEWEED), "docker"))[doctor.DOCKER_CLI]
    assert docker.commands == ()
    assert docker.fix.startswith("install Docker Engine (https://docs.docker.com/engine/install/)")


def test_a_docker_socket_that_refuses_the_user_is_fixed_with_the_docker_group_on_a_known_family() -> None:
    engine = checked(_engine_forbidden(on(FEDORA_42)))[doctor.DOCKER_ENGINE]
    assert [command.shown for command in engine.commands] == ["sudo usermod -aG docker dev"]
    assert "log out and in again" in engine.fix


def test_an_engine_that_is_down_is_started_now_and_at_boot_on_a_known_family() -> None:
    engine = checked(_engine_down(on(ARCH)))[doctor.DOCKER_ENGINE]
    assert [command.shown for command in engine.commands] == ["sudo systemctl enable --now docker"]


def test_the_inotify_fix_runs_sysctl_and_persists_it_through_tee_fed_on_stdin() -> None:
    output, shell, _ = fix(_low_watches(on(ARCH)), terminal=True, answer="y")
    now, persist = shell.ran
    assert now.argv == ("sudo", "sysctl", "fs.inotify.max_user_watches=524288", "fs.inotify.max_user_instances=512")
    assert persist.argv == ("sudo", "tee", "/etc/sysctl.d/99-kind.conf")
    assert persist.stdin == "fs.inotify.max_user_watches = 524288\nfs.inotify.max_user_instances = 512\n"


def test_a_fix_command_is_fed_its_stdin_and_its_output_is_shown_as_it_runs() -> None:
    out = io.StringIO()
    assert doctor.execute(Command(argv=("cat",), stdin="fs.inotify.max_user_watches = 524288\n"), out) == 0
    assert out.getvalue() == "    fs.inotify.max_user_watches = 524288\n"


def test_a_fix_command_that_is_not_installed_fails_with_127_and_says_so_without_a_traceback() -> None:
    out = io.StringIO()
    assert doctor.execute(Command(argv=("blueprint-doctor-no-such-binary", "x")), out) == 127
    assert "blueprint-doctor-no-such-binary: No such file or directory" in out.getvalue()


def _engine_missing(m: FakeMachine, paths: set[str]) -> FakeMachine:
    """Docker's CLI alone (its static client binary), its engine down; `paths`: what else is there."""
    return replace(_engine_down(m), paths=paths)


def test_a_docker_cli_without_dockerd_or_its_unit_gets_the_familys_install_commands_not_a_start() -> None:
    engine = checked(_engine_missing(on(DEBIAN_13), {doctor.SYSTEMD_RUNNING}))[doctor.DOCKER_ENGINE]
    assert [command.shown for command in engine.commands] == DEBIAN_DOCKER
    assert "Docker Engine (dockerd) is not installed" in engine.found


def test_debians_dockerd_in_usr_sbin_counts_as_installed() -> None:
    """Debian's docker.io puts dockerd in /usr/sbin, which a user's PATH lacks: it is not installed again."""
    machine = _engine_missing(on(DEBIAN_13), {"/usr/sbin/dockerd"})
    machine.files[doctor.DOCKER_INIT_SCRIPT] = "#!/bin/sh\n"
    engine = checked(machine)[doctor.DOCKER_ENGINE]
    assert "apt-get" not in engine.fix


def test_without_systemd_an_installed_engine_is_started_by_its_init_script_not_systemctl() -> None:
    machine = _engine_missing(on(DEBIAN_13), {"/usr/sbin/dockerd", "/lib/systemd/system/docker.service"})
    machine.files[doctor.DOCKER_INIT_SCRIPT] = "#!/bin/sh\n"
    engine = checked(machine)[doctor.DOCKER_ENGINE]
    assert [command.shown for command in engine.commands] == ["sudo service docker start"]
    assert "systemctl" not in engine.fix


def test_without_systemd_or_an_init_script_the_engine_fix_runs_nothing_and_names_the_gap() -> None:
    engine = checked(_engine_missing(on(ARCH), {"/usr/bin/dockerd", "/usr/lib/systemd/system/docker.service"}))[doctor.DOCKER_ENGINE]
    assert engine.commands == ()
    assert "systemctl" not in engine.fix
    assert "systemd does not run here" in engine.found
    assert "`sudo dockerd` in a terminal of its own" in engine.fix


def test_without_systemd_a_debian_install_starts_docker_through_the_init_script_docker_io_ships() -> None:
    docker = checked(replace(without(on(DEBIAN_13), "docker"), paths=set()))[doctor.DOCKER_CLI]
    assert [command.shown for command in docker.commands] == [*DEBIAN_DOCKER[:2], "sudo service docker start", DEBIAN_DOCKER[3]]


def test_without_systemd_an_install_of_a_family_without_an_init_script_says_to_run_dockerd_and_runs_no_systemctl() -> None:
    docker = checked(replace(without(on(FEDORA_42), "docker"), paths=set()))[doctor.DOCKER_CLI]
    assert [command.shown for command in docker.commands] == ["sudo dnf install -y moby-engine", "sudo usermod -aG docker dev"]
    assert "systemctl" not in docker.fix
    assert "`sudo dockerd` in a terminal of its own" in docker.fix


def test_as_root_the_fix_runs_its_commands_without_sudo_and_says_no_password_is_asked() -> None:
    machine = replace(_low_watches(without(on(DEBIAN_13), "docker")), user_id=0, user="root")
    output, shell, _ = fix(machine, terminal=True, answer="y")
    assert [command.argv[0] for command in shell.ran] == ["apt-get", "apt-get", "systemctl", "sysctl", "tee"]
    assert "sudo asks for your password" not in output
    assert "| tee /etc/sysctl.d/99-kind.conf" in output


def test_root_itself_is_not_added_to_the_docker_group() -> None:
    docker = checked(replace(without(on(DEBIAN_13), "docker"), user_id=0, user="root"))[doctor.DOCKER_CLI]
    assert not any("usermod" in command.argv for command in docker.commands)
    assert "docker group" not in docker.fix


def test_the_docker_group_is_for_the_user_who_ran_sudo_not_for_root() -> None:
    machine = replace(without(on(DEBIAN_13), "docker"), user_id=0, user="root", env={"USER": "root", "SUDO_USER": "dev"})
    docker = checked(machine)[doctor.DOCKER_CLI]
    assert docker.commands[-1].argv == ("usermod", "-aG", "docker", "dev")


def test_the_docker_group_is_for_the_password_databases_user_not_a_stale_user_variable() -> None:
    machine = replace(_engine_forbidden(on(FEDORA_42)), env={"USER": "someone-else"})
    engine = checked(machine)[doctor.DOCKER_ENGINE]
    assert [command.shown for command in engine.commands] == ["sudo usermod -aG docker dev"]


def test_a_fix_command_that_ends_before_reading_its_input_fails_without_a_traceback() -> None:
    """As `printf ... | sudo tee` does when sudo is refused: its input is more than a pipe holds, so the write breaks."""
    out = io.StringIO()
    assert doctor.execute(Command(argv=("sh", "-c", "exit 3"), stdin="x" * (1 << 20)), out) == 3
    assert "(sh ended before it read all its input)" in out.getvalue()


CACHE = Path("/home/dev/.cache/blueprint/images")


def cache_check(machine: FakeMachine, name: str, folder: Path | None = CACHE, stack: str = "phase1") -> Check:
    return next(check for check in doctor.image_cache_checks(machine, folder, stack) if check.name == name)


def test_too_little_room_for_the_image_cache_fails_naming_how_to_free_it_move_it_or_turn_it_off() -> None:
    machine = FakeMachine(free=5 * GIB, paths={"/home/dev", "/home/dev/.cache"})
    check = cache_check(machine, doctor.CACHE_SPACE)
    assert not check.ok
    assert "5.0 GiB free on the filesystem of /home/dev/.cache" in check.found
    assert "`docker image prune -a`" in check.fix
    assert "`pulumi config set -s phase1 blueprint:imageCacheDir <a folder on a disk with more room>`" in check.fix
    assert "`pulumi config set -s phase1 blueprint:imageCache false`" in check.fix


def test_a_cache_folder_the_mirrors_would_refuse_fails_the_doctor_too() -> None:
    machine = FakeMachine(paths={str(CACHE)}, refused={str(CACHE): "holds files blueprint did not write"})
    check = cache_check(machine, doctor.CACHE_FOLDER)
    assert not check.ok
    assert f"{CACHE} holds files blueprint did not write" in check.found
    assert "blueprint:imageCacheDir" in check.fix


def test_an_empty_image_cache_needs_room_for_the_whole_cache_and_a_margin() -> None:
    # The bring-up guide's "about 9 GiB": the platform's images and a margin for what else writes there.
    just_the_images = FakeMachine(free=doctor.CACHE_FULL_BYTES + GIB // 2, paths={str(CACHE)})
    with_the_margin = FakeMachine(free=doctor.CACHE_FULL_BYTES + doctor.CACHE_MARGIN_BYTES, paths={str(CACHE)})
    assert not cache_check(just_the_images, doctor.CACHE_SPACE).ok
    assert cache_check(with_the_margin, doctor.CACHE_SPACE).ok
    assert doctor.CACHE_FULL_BYTES + doctor.CACHE_MARGIN_BYTES == 9 * GIB


def test_what_the_image_cache_already_holds_is_not_needed_again() -> None:
    full = doctor.CACHE_FULL_BYTES
    room = 2 * GIB  # less than a whole cache, more than what is left to download with the margin
    filled = FakeMachine(free=room, paths={str(CACHE)}, held={str(CACHE): full - GIB // 2})
    empty = FakeMachine(free=room, paths={str(CACHE)})
    assert cache_check(filled, doctor.CACHE_SPACE).ok
    assert not cache_check(empty, doctor.CACHE_SPACE).ok


def test_an_image_cache_folder_that_cannot_be_made_fails_with_the_command_that_makes_it_the_users() -> None:
    machine = FakeMachine(paths={"/srv"}, read_only={"/srv"})
    check = cache_check(machine, doctor.CACHE_FOLDER, Path("/srv/blueprint cache"))
    assert not check.ok
    assert check.found == "/srv (where /srv/blueprint cache will be made) is not a folder you can write to"
    assert """`sudo mkdir -p '/srv/blueprint cache' && sudo chown "$(id -u):$(id -g)" '/srv/blueprint cache'`""" in check.fix
    assert "`pulumi config set -s phase1 blueprint:imageCacheDir <folder>`" in check.fix


def test_with_the_image_cache_off_no_room_is_asked_for_it() -> None:
    assert [(check.name, check.ok) for check in doctor.image_cache_checks(FakeMachine(free=0), None, "dev")] == [(doctor.CACHE_SPACE, True)]


@pytest.mark.parametrize(("argv", "checked"), [(["--phase", "1"], True), (["--stack", "dev"], True), (["--phase", "2"], False)])
def test_the_image_cache_is_checked_only_for_the_stack_that_runs_its_mirrors(argv: list[str], checked: bool) -> None:
    _, output = doctor_output(argv, FakeMachine(free=GIB))
    assert ("FAIL  image cache space" in output) == checked
