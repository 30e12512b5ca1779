"""`blueprint doctor`: every check of what the chosen phases or stack read, printed with its fix, and the
config of those stacks checked in the same pass."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from cli.doctor import checks, platform_names
from cli.doctor.checks import NAMES
from cli.doctor.needs import resources_needed
from tests.cli.doctor.fakes import (
    GIB,
    FakeMachine,
    doctor_output,
    userns_restricted,
    without,
)


def test_a_machine_without_docker_or_pulumi_fails_naming_both_with_their_fixes() -> None:
    code, output = doctor_output([], without(FakeMachine(), "docker", "pulumi"))
    assert code == 1
    assert "FAIL  Docker CLI" in output
    assert "fix: install Docker Engine (https://docs.docker.com/engine/install/)" in output
    assert "FAIL  Pulumi CLI" in output
    assert "fix: `uv run blueprint doctor --fix` (downloads https://get.pulumi.com/releases/sdk/pulumi-v3.272.0-linux-x64.tar.gz" in output
    assert "checks failed: Docker CLI, Docker engine, Pulumi CLI" in output


def test_a_machine_with_everything_passes_and_run_returns_0() -> None:
    code, output = doctor_output([], FakeMachine())
    assert code == 0, output
    assert "FAIL" not in output
    assert "PASS  port 443 (blueprint:httpsPort)" in output
    assert "checks passed" in output.splitlines()[-1]


def test_doctor_checks_memory_and_cpus_for_the_configured_node_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "Pulumi.phase1.yaml").write_text("config:\n  blueprint:gitlabNodes: 6\n  blueprint:runnerNodes: 2\n")
    monkeypatch.setattr("stacks.config.schema.STACK_FILES_DIR", tmp_path)
    _, output = doctor_output([], FakeMachine(memory=4 * GIB, cpus=1))
    memory, cpus = (line for line in output.splitlines() if line.startswith(("FAIL  memory", "FAIL  CPUs")))
    needed = resources_needed(gitlab_nodes=6, runner_nodes=2, headlamp=False)
    assert memory.endswith(f"4.0 GiB total, needs {needed.gib} GiB: 9 nodes + platform requests")
    assert cpus.endswith(f"1, needs {needed.cpus}: 9 nodes + platform requests")


def test_a_pulumi_cli_older_than_3_145_fails_because_it_runs_dynamic_providers_outside_the_uv_environment() -> None:
    machine = FakeMachine()
    machine.outputs["pulumi"] = (0, "v3.144.1\n")
    code, output = doctor_output([], machine)
    assert code == 1, output
    assert "FAIL  Pulumi CLI" in output
    assert "v3.144.1, older than 3.145.0" in output
    assert "dynamic providers" in output


def test_the_names_to_resolve_include_every_apps_host() -> None:
    assert platform_names("local.example.net") == (
        "gitlab.local.example.net", "registry.local.example.net", "kas.local.example.net", "guestbook.local.example.net",
    )  # fmt: skip


def test_a_bad_data_folder_setting_read_by_destroy_itself_is_one_message_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`destroy --wipe-data` with no stack left reads phase1's dataDir to find the kept data folder."""
    from cli import commands, teardown
    from cli.main import parser

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
    args = parser().parse_args(["destroy", "--wipe-data", "--yes"])
    assert commands.main_for(commands.DESTROY, args, NoStacks(), io.StringIO()) == 1  # type: ignore[arg-type]
    said = capsys.readouterr().err
    assert "blueprint:dataDir = '~blueprint-test-no-such-user/x' is not valid: there is no user" in said
    assert "Traceback" not in said


def test_doctor_reports_a_data_folder_in_the_home_of_no_user_as_its_config_check(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("stacks.config.schema.STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.phase1.yaml").write_text("config:\n  blueprint:dataDir: ~blueprint-test-no-such-user/x\n")
    code, output = doctor_output([], FakeMachine())
    assert code == 1
    assert "FAIL  stack config" in output
    assert "blueprint:dataDir = '~blueprint-test-no-such-user/x' is not valid: there is no user" in output


def test_doctor_of_the_dev_stack_checks_devs_own_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("stacks.config.schema.STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.dev.yaml").write_text("config:\n  blueprint:pipelineTimeout: 5\n  blueprint:httpPort: 8080\n")
    code, output = doctor_output(["--stack", "dev"], FakeMachine())
    assert code == 1
    assert "stack dev:\n" in output
    assert "`pulumi config set -s dev blueprint:pipelineTimeout 600`" in output
    assert "port 8080 (blueprint:httpPort)" in output, "the ports checked are dev's own"


def test_doctor_of_one_phase_checks_that_phases_stack_alone(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("stacks.config.schema.STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.phase3.yaml").write_text("config:\n  blueprint:pipelineTimeout: 5\n")
    assert doctor_output(["--phase", "1"], FakeMachine())[0] == 0
    code, output = doctor_output(["--phase", "3"], FakeMachine())
    assert code == 1
    assert "blueprint:pipelineTimeout = '5' is not valid" in output


def test_a_phase1_the_checked_phases_do_not_read_fails_no_check_of_theirs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`blueprint up --phase 3` runs `doctor --phase 3`: phase1's settings are not phase3's to refuse."""
    monkeypatch.setattr("stacks.config.schema.STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.phase1.yaml").write_text("config:\n  blueprint:gitlabNodes: 12\n")
    code, output = doctor_output(["--phase", "3"], FakeMachine())
    assert code == 0, output
    assert "not checked: Pulumi.phase1.yaml is invalid (`uv run blueprint doctor --stack phase1` says why)" in output


def test_a_port_set_as_a_secret_is_said_not_checked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("stacks.config.schema.STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.phase1.yaml").write_text("config:\n  blueprint:sshPort:\n    secure: v1:AAAA\n")
    code, output = doctor_output(["--phase", "1"], FakeMachine())
    assert "blueprint:sshPort: not checked (secret, so not known here)" in output
    assert "port 2222" not in output


def test_a_warning_is_printed_with_what_to_do_and_stops_nothing() -> None:
    code, output = doctor_output(["--phase", "1"], userns_restricted(FakeMachine()))
    assert code == 0
    assert f"WARN  {checks.USERNS}" in output
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


@pytest.mark.parametrize(("argv", "checked"), [(["--phase", "1"], True), (["--stack", "dev"], True), (["--phase", "2"], False)])
def test_the_image_cache_is_checked_only_for_the_stack_that_runs_its_mirrors(argv: list[str], checked: bool) -> None:
    _, output = doctor_output(argv, FakeMachine(free=GIB))
    assert ("FAIL  image cache space" in output) == checked


def test_yes_without_fix_is_refused_naming_yes_and_the_fix_before_anything_is_checked(capsys: pytest.CaptureFixture[str]) -> None:
    """`--yes` answers `--fix`'s question: alone, a script that meant `--fix --yes` would pass with nothing fixed."""
    machine = FakeMachine()
    code, output = doctor_output(["--yes"], machine)
    error = capsys.readouterr().err
    assert (code, output, machine.calls) == (2, "", [])
    assert error.startswith("error: --yes is for --fix (it runs the fix's commands without asking), and was given without it")
    assert "run `uv run blueprint doctor --fix --yes`, or leave --yes out to only check" in error


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["--stack", "dev", "--yes"], "uv run blueprint doctor --stack dev --fix --yes"),
        (["--phase", "2", "--yes"], "uv run blueprint doctor --phase 2 --fix --yes"),
        (["--yes"], "uv run blueprint doctor --fix --yes"),
    ],
)
def test_yes_without_fix_suggests_the_command_with_the_stacks_given(
    argv: list[str], command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--yes` alone drops nothing else the user chose: the command to run checks the same stacks."""
    doctor_output(argv, FakeMachine())
    assert f"run `{command}`, or leave --yes out to only check" in capsys.readouterr().err
