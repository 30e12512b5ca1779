"""`blueprint doctor`: each prerequisite of a real run fails with its own exact fix, and `--fix`
installs only what needs no root. The checks run against a FakeMachine, so this needs neither
Docker nor the tools it looks for, and never downloads anything."""

from __future__ import annotations

import importlib.metadata
import io
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from cli import doctor
from cli.doctor import NAMES, Check, FixStep, RealMachine, checks, fix_plan, platform_names, run

GIB = 1024**3
HOME = Path("/home/dev")
PORTS = {"blueprint:httpPort": 80, "blueprint:httpsPort": 443, "blueprint:sshPort": 2222}
TOOLS = ("docker", "kind", "pulumi", "kubectl", "uv", "curl")
HEALTHY_OUTPUTS = {
    "docker": (0, "29.1.3\n"),
    "kind": (0, "kind v0.31.0 go1.25.5 linux/amd64\n"),
    "pulumi": (0, "v3.272.0\n"),
    "kubectl": (0, "Client Version: v1.35.0\nKustomize Version: v5.7.1\n"),
    "uv": (0, "uv 0.9.0\n"),
}
INOTIFY_OK = {"/proc/sys/fs/inotify/max_user_watches": "524288\n", "/proc/sys/fs/inotify/max_user_instances": "512\n"}


@dataclass(frozen=True, kw_only=True)
class FakeMachine:
    """A machine made of dictionaries. `outputs` is keyed by "argv[0] argv[1]" or by argv[0]; what
    the fix commands install appears on it, so a re-check can see the result."""

    system: str = "linux"
    machine: str = "x86_64"
    tools: dict[str, str] = field(default_factory=lambda: {name: f"/usr/bin/{name}" for name in TOOLS})
    outputs: dict[str, tuple[int, str]] = field(default_factory=lambda: dict(HEALTHY_OUTPUTS))
    busy: set[int] = field(default_factory=set)
    memory: int | None = 16 * GIB
    files: dict[str, str] = field(default_factory=lambda: dict(INOTIFY_OK))
    calls: list[list[str]] = field(default_factory=list)
    addresses: dict[str, str | None] = field(default_factory=dict)

    def which(self, name: str) -> str | None:
        return self.tools.get(name)

    def run(self, argv: Sequence[str], timeout: float) -> tuple[int, str]:
        self.calls.append(list(argv))
        if argv[0] == "chmod":  # the last step of a download: the tool is now there
            tool = Path(argv[-1]).name
            self.tools[tool] = argv[-1]
            self.outputs[tool] = HEALTHY_OUTPUTS[tool]
        if argv[0] == "sh" and "get.pulumi.com" in argv[-1]:
            self.tools["pulumi"] = str(HOME / ".pulumi/bin/pulumi")
            self.outputs["pulumi"] = HEALTHY_OUTPUTS["pulumi"]
        if argv[0] in ("curl", "chmod", "sh"):
            return 0, ""
        found = self.outputs.get(" ".join(argv[:2])) or self.outputs.get(argv[0])
        return found or (127, f"{argv[0]}: command not found")

    def port_free(self, port: int) -> bool:
        return port not in self.busy

    def memory_bytes(self) -> int | None:
        return self.memory

    def read_text(self, path: str) -> str | None:
        return self.files.get(path)

    def home(self) -> Path:
        return HOME

    def resolve(self, name: str) -> str | None:
        return self.addresses.get(name, "127.0.0.1")


def without(machine: FakeMachine, *tools: str) -> FakeMachine:
    for tool in tools:
        machine.tools.pop(tool)
        machine.outputs.pop(tool, None)
    return machine


def checked(machine: FakeMachine) -> dict[str, Check]:
    results = checks(
        machine, ports=PORTS, memory_needed_bytes=12 * GIB, pulumi_min_version=doctor.PULUMI_MIN_VERSION, cluster_name="blueprint"
    )
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
    assert "fix: `curl -fsSL https://get.pulumi.com | sh -s -- --version 3.272.0 --no-edit-path`" in output
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
        pytest.param(lambda m: without(m, "kind"), "kind", "no `kind` on PATH", "/dl/v0.31.0/kind-linux-amd64", id="kind-missing"),
        pytest.param(_old_pulumi, "Pulumi CLI", f"v3.120.0, older than {doctor.PULUMI_MIN_VERSION}", "--version 3.272.0", id="old-pulumi"),
        pytest.param(lambda m: without(m, "kubectl"), "kubectl", "no `kubectl` on PATH", KUBECTL_URL, id="kubectl-missing"),
        pytest.param(
            _busy_https,
            "port 443 (blueprint:httpsPort)",
            "blueprint:httpsPort 443 is in use",
            "`pulumi config set blueprint:httpsPort <free port> -s phase1`",
            id="busy-port",
        ),
        pytest.param(lambda m: replace(m, memory=8 * GIB), "memory", "8.0 GiB total, needs 12 GiB", "at least 12 GiB", id="low-memory"),
        pytest.param(_low_watches, "inotify limits", "max_user_watches=8192", INOTIFY_FIX, id="low-inotify"),
    ],
)
def test_each_failing_check_gives_its_fix(break_it: Callable[[FakeMachine], FakeMachine], name: str, found: str, fix: str) -> None:
    results = checked(break_it(FakeMachine()))
    assert [check.name for check in results.values() if not check.ok] == [name]
    assert found in results[name].found
    assert fix in results[name].fix


def test_a_pulumi_cli_older_than_3_145_fails_because_it_runs_dynamic_providers_outside_the_uv_environment() -> None:
    machine = FakeMachine()
    machine.outputs["pulumi"] = (0, "v3.144.1\n")
    code, output = doctor_output([], machine)
    assert code == 1, output
    assert "FAIL  Pulumi CLI" in output
    assert "v3.144.1, older than 3.145.0" in output
    assert "dynamic providers" in output


def test_the_readme_names_the_oldest_pulumi_cli_the_doctor_accepts() -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    assert f"Pulumi CLI {doctor.PULUMI_MIN_VERSION} or later" in readme


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


def _commands(steps: list[FixStep]) -> list[list[str]]:
    return [list(step.argv) for step in steps if step.argv is not None]


@pytest.mark.parametrize(
    ("system", "machine", "os_arch"),
    [("linux", "x86_64", ("linux", "amd64")), ("linux", "aarch64", ("linux", "arm64")), ("darwin", "arm64", ("darwin", "arm64"))],
)
def test_fix_plan_downloads_kind_and_kubectl_for_the_machines_os_and_arch_into_local_bin(
    system: str, machine: str, os_arch: tuple[str, str]
) -> None:
    fake = without(FakeMachine(system=system, machine=machine), "kind", "kubectl")
    failed = [check for check in checked(fake).values() if not check.ok]
    os_, arch = os_arch
    bin_dir = HOME / ".local/bin"
    assert _commands(fix_plan(failed, fake)) == [
        ["curl", "-fsSL", "--create-dirs", "-o", f"{bin_dir}/kind", f"https://kind.sigs.k8s.io/dl/v0.31.0/kind-{os_}-{arch}"],
        ["chmod", "+x", f"{bin_dir}/kind"],
        ["curl", "-fsSL", "--create-dirs", "-o", f"{bin_dir}/kubectl", f"https://dl.k8s.io/release/v1.35.0/bin/{os_}/{arch}/kubectl"],
        ["chmod", "+x", f"{bin_dir}/kubectl"],
    ]


def test_fix_plan_installs_the_pinned_pulumi_into_home_pulumi_without_editing_profiles() -> None:
    fake = without(FakeMachine(), "pulumi")
    steps = fix_plan([checked(fake)["Pulumi CLI"]], fake)
    [command] = _commands(steps)
    assert command[:2] == ["sh", "-c"]
    assert "curl -fsSL https://get.pulumi.com" in command[2]
    assert "--version 3.272.0 --no-edit-path" in command[2]
    assert any(str(HOME / ".pulumi") in step.what for step in steps if step.argv is not None)


def test_the_pulumi_cli_fix_installs_the_sdks_version() -> None:
    assert importlib.metadata.version("pulumi") == doctor.PULUMI_VERSION


def test_fix_plan_only_prints_instructions_for_docker_ports_memory_and_inotify() -> None:
    fake = _low_watches(_engine_down(FakeMachine(busy={443}, memory=4 * GIB)))
    failed = [check for check in checked(fake).values() if not check.ok]
    assert [check.name for check in failed] == ["Docker engine", "port 443 (blueprint:httpsPort)", "memory", "inotify limits"]
    steps = fix_plan(failed, fake)
    assert _commands(steps) == []
    assert [step.what for step in steps] == [f"{check.name}: {check.fix}" for check in failed]


def test_fix_plan_installs_nothing_without_curl() -> None:
    fake = without(FakeMachine(), "kind", "curl")
    assert _commands(fix_plan([checked(fake)["kind"]], fake)) == []


def test_run_fix_runs_the_commands_through_the_machine_and_checks_again() -> None:
    fake = without(FakeMachine(), "kind", "pulumi")
    code, output = doctor_output(["--fix"], fake)
    assert ["chmod", "+x", f"{HOME}/.local/bin/kind"] in fake.calls
    assert any(call[:2] == ["sh", "-c"] for call in fake.calls)
    first, again = output.split("checking again:")
    assert "FAIL  kind" in first
    assert "PASS  kind" in again
    assert "PASS  Pulumi CLI" in again
    assert code == 0, output


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
    [check] = [c for c in checks(machine, ports={}, memory_needed_bytes=GIB, pulumi_min_version="3.142.0", names=names) if c.name == NAMES]
    assert not check.ok
    assert "gitlab.local.example.net does not resolve to 127.0.0.1" in check.found
    assert "127.0.0.1 gitlab.local.example.net registry.local.example.net" in check.fix


def test_the_names_to_resolve_include_every_apps_host() -> None:
    assert platform_names("local.example.net") == (
        "gitlab.local.example.net", "registry.local.example.net", "kas.local.example.net", "guestbook.local.example.net",
    )  # fmt: skip
