"""`--fix`: the home-folder installs without asking; the OS family's commands shown, asked for once, run in
order and stopped at the first that fails; the rest printed, to do by hand."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import pytest

from cli.doctor import fixes
from cli.doctor.fixes import FixStep, fix_plan
from cli.doctor.install import Download
from cli.os_family import Command
from tests.cli.doctor.fakes import (
    DEBIAN_DOCKER,
    FAKE_PINS,
    GIB,
    HOME,
    FakeMachine,
    FakeShell,
    checked,
    doctor_output,
    engine_down,
    fix,
    low_watches,
    never_asked,
    old_pulumi,
    on,
    run_doctor,
    serve_releases,
    without,
)
from tests.cli.test_os_family import ARCH, DEBIAN_13


def _downloads(steps: list[FixStep]) -> list[Download]:
    return [step.download for step in steps if step.download is not None]


@pytest.mark.parametrize(
    ("system", "machine", "os_arch"),
    [("linux", "x86_64", ("linux", "amd64")), ("linux", "aarch64", ("linux", "arm64")), ("darwin", "arm64", ("darwin", "arm64"))],
)
def test_fix_plan_downloads_kind_and_kubectl_for_the_machines_os_and_arch_with_their_pinned_sha256(
    system: str, machine: str, os_arch: tuple[str, str]
) -> None:
    fake = without(FakeMachine(system=system, machine=machine), "kind", "kubectl")
    failed = [check for check in checked(fake).values() if not check.ok]
    os_, arch = os_arch
    kind = f"https://github.com/kubernetes-sigs/kind/releases/download/v0.31.0/kind-{os_}-{arch}"
    kubectl = f"https://dl.k8s.io/release/v1.35.0/bin/{os_}/{arch}/kubectl"
    pins = (FAKE_PINS["kind"][f"v0.31.0 {os_}/{arch}"], FAKE_PINS["kubectl"][f"v1.35.0 {os_}/{arch}"])
    assert [(d.url, d.sha256, d.target) for d in _downloads(fix_plan(failed, fake))] == [
        (kind, pins[0], HOME / ".local/share/blueprint/bin/kind"),
        (kubectl, pins[1], HOME / ".local/share/blueprint/bin/kubectl"),
    ]


def test_fix_plan_installs_the_pinned_pulumi_release_into_home_pulumi_checked_against_its_pin() -> None:
    fake = without(FakeMachine(system="darwin", machine="arm64", files={}), "pulumi")
    [pulumi] = _downloads(fix_plan([checked(fake)["Pulumi CLI"]], fake))
    assert pulumi.url == "https://get.pulumi.com/releases/sdk/pulumi-v3.272.0-darwin-arm64.tar.gz"
    assert (pulumi.sha256, pulumi.target, pulumi.unpack) == (
        FAKE_PINS["Pulumi CLI"]["3.272.0 darwin/arm64"],
        HOME / ".local/share/blueprint/pulumi/bin",
        True,
    )


def test_fix_plan_only_prints_instructions_for_docker_ports_memory_and_inotify() -> None:
    fake = low_watches(engine_down(FakeMachine(busy={443}, memory=4 * GIB)))
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


def test_run_fix_prints_instructions_and_still_fails_when_something_is_left() -> None:
    fake = FakeMachine(memory=4 * GIB)
    code, output = doctor_output(["--fix"], fake)
    assert "to do by hand: memory: close other applications" in output
    assert code == 1


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
    code = run_doctor(
        ["--fix", "--phase", "1"], machine=without(on(DEBIAN_13), "docker"), out=out, terminal=False, ask=never_asked, run_command=shell
    )
    assert code == 1
    assert shell.ran == []
    assert "not run: there is no terminal to ask on" in out.getvalue()
    assert "uv run blueprint doctor --fix --yes" in out.getvalue()
    assert "sudo apt-get install -y docker.io" in out.getvalue()  # still printed, to run by hand


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "script"])
def test_fix_yes_runs_the_commands_without_asking(terminal: bool) -> None:
    shell = FakeShell()
    run_doctor(
        ["--fix", "--yes", "--phase", "1"],
        machine=without(on(DEBIAN_13), "docker"),
        out=io.StringIO(),
        terminal=terminal,
        ask=never_asked,
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
    """They change nothing outside the home folder, and each is checked against its pinned SHA-256."""
    machine = serve_releases(without(on(DEBIAN_13, home_dir=tmp_path), "kind"))
    out = io.StringIO()
    code = run_doctor(["--fix", "--phase", "1"], machine=machine, out=out, terminal=True, ask=never_asked, run_command=FakeShell())
    assert (tmp_path / ".local/share/blueprint/bin/kind").is_file()
    assert code == 0, out.getvalue()


def test_after_fix_the_doctor_asks_for_no_path_change_and_names_blueprint_env_for_the_plain_commands(tmp_path: Path) -> None:
    """blueprint finds the tools it installed itself: a PATH line for ~/.bashrc would be a step nobody needs."""
    output, _, _ = fix(serve_releases(without(on(DEBIAN_13, home_dir=tmp_path), "kind", "pulumi")), terminal=False)
    assert "PATH" not in output.split("fixing:")[1]
    assert (
        'to do by hand: for the plain `kind`, `pulumi` commands in your shell (blueprint finds them itself): eval "$(uv run blueprint env)"'
        in output
    )


def test_after_fix_the_pulumi_it_installed_is_checked_again_not_an_older_one_on_path(tmp_path: Path) -> None:
    """The install folders go first on PATH: the older `pulumi` elsewhere on it does not win, which
    would send the user round to `--fix` again."""
    machine = serve_releases(old_pulumi(on(DEBIAN_13, home_dir=tmp_path)))
    output, _, _ = fix(machine, terminal=False)
    first, again = output.split("checking again:")
    assert "FAIL  Pulumi CLI" in first
    assert "PASS  Pulumi CLI" in again


def test_under_sudo_the_tools_are_not_installed_into_roots_home(tmp_path: Path) -> None:
    """`sudo ... doctor --fix`: root's home is not the user's, whose PATH would never find them there."""
    machine = serve_releases(
        replace(without(on(DEBIAN_13, home_dir=tmp_path), "kind"), user_id=0, user="root", env={"USER": "root", "SUDO_USER": "dev"})
    )
    out = io.StringIO()
    run_doctor(["--fix", "--phase", "1"], machine=machine, out=out, terminal=True, ask=lambda _: "y", run_command=FakeShell())
    assert not (tmp_path / ".local/share/blueprint/bin/kind").exists()
    assert "run `uv run blueprint doctor --fix` as dev, without sudo" in out.getvalue()


def test_the_docker_engine_line_is_not_repeated_as_a_to_do_when_the_docker_commands_install_it() -> None:
    output, _, _ = fix(without(on(DEBIAN_13), "docker"), terminal=False)
    assert "to do by hand: Docker engine" not in output


def test_the_inotify_fix_runs_sysctl_and_persists_it_through_tee_fed_on_stdin() -> None:
    output, shell, _ = fix(low_watches(on(ARCH)), terminal=True, answer="y")
    now, persist = shell.ran
    assert now.argv == ("sudo", "sysctl", "fs.inotify.max_user_watches=524288", "fs.inotify.max_user_instances=512")
    assert persist.argv == ("sudo", "tee", "/etc/sysctl.d/99-kind.conf")
    assert persist.stdin == "fs.inotify.max_user_watches = 524288\nfs.inotify.max_user_instances = 512\n"


def test_a_fix_command_is_fed_its_stdin_and_its_output_is_shown_as_it_runs() -> None:
    out = io.StringIO()
    assert fixes.execute(Command(argv=("cat",), stdin="fs.inotify.max_user_watches = 524288\n"), out) == 0
    assert out.getvalue() == "    fs.inotify.max_user_watches = 524288\n"


def test_a_fix_command_that_is_not_installed_fails_with_127_and_says_so_without_a_traceback() -> None:
    out = io.StringIO()
    assert fixes.execute(Command(argv=("blueprint-doctor-no-such-binary", "x")), out) == 127
    assert "blueprint-doctor-no-such-binary: No such file or directory" in out.getvalue()


def test_as_root_the_fix_runs_its_commands_without_sudo_and_says_no_password_is_asked() -> None:
    machine = replace(low_watches(without(on(DEBIAN_13), "docker")), user_id=0, user="root")
    output, shell, _ = fix(machine, terminal=True, answer="y")
    assert [command.argv[0] for command in shell.ran] == ["apt-get", "apt-get", "systemctl", "sysctl", "tee"]
    assert "sudo asks for your password" not in output
    assert "| tee /etc/sysctl.d/99-kind.conf" in output


def test_a_fix_command_that_ends_before_reading_its_input_fails_without_a_traceback() -> None:
    """As `printf ... | sudo tee` does when sudo is refused: its input is more than a pipe holds, so the write breaks."""
    out = io.StringIO()
    assert fixes.execute(Command(argv=("sh", "-c", "exit 3"), stdin="x" * (1 << 20)), out) == 3
    assert "(sh ended before it read all its input)" in out.getvalue()
