"""The `blueprint` commands that drive Pulumi, as a user runs them: what they need and do not find
(no Pulumi CLI, one too old, a state they cannot decrypt, a locked stack) ends in one message with
its fix and a non-zero exit, never a traceback. A fake `pulumi` script stands in for the CLI, so the
real Automation API runs against it and nothing here needs Pulumi, a cluster or the network."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from pulumi import RunError

from cli import stack_runner
from cli.main import main
from cli.plan import ProgramFailed
from stacks.config import PROJECT_DIR

PULUMI_BIN = ".local/share/blueprint/pulumi/bin"
TOOLS_BIN = ".local/share/blueprint/bin"
"""Where `doctor --fix` installs Pulumi, and kind and kubectl, under the home folder."""
HOSTILE = 'it\'s; $(touch pwned) `touch pwned` & | * ? [a] \\ ~ "q" <x> #'
"""A folder name that is shell syntax in every way a quote can fail."""

FAKE_PULUMI = """#!/bin/sh
printf '%s\\n' "$*" >> "$FAKE_PULUMI_LOG"
case "$*" in
  version) echo "v$FAKE_PULUMI_VERSION"; exit 0;;
  *"$FAKE_PULUMI_FAIL"*) printf '%s\\n' "$FAKE_PULUMI_ERROR" >&2; exit 255;;
  *"stack output"*) echo '{}';;
  *"stack export"*) echo '{"version": 3, "deployment": {"resources": [{"urn": "u", "type": "command:local:Command"}]}}';;
  *"stack ls"*) echo "${FAKE_PULUMI_STACKS:-[]}";;
esac
"""
DECRYPT_ERROR = (
    "error: failed to decrypt: incorrect passphrase, please set PULUMI_CONFIG_PASSPHRASE to the correct passphrase "
    "or set PULUMI_CONFIG_PASSPHRASE_FILE to a file containing the passphrase"
)
LOCK_ERROR = (
    "error: the stack is currently locked by 1 lock(s). Either wait for the other process(es) to end or delete the lock file "
    "with `pulumi cancel`.\n  file:///x/.pulumi-state/.pulumi/locks/organization/blueprint/phase1/0b1c.json: "
    "created by dev@laptop (pid 4242) at 2026-01-01T10:00:00Z"
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config_home: Path) -> Path:
    """A checkout without state: the commands read and write Pulumi state here, not in this repository."""
    folder = tmp_path / "project"
    folder.mkdir()
    monkeypatch.setattr(stack_runner, "PROJECT_DIR", folder)
    return folder


def with_git(folder: Path) -> str:
    """`folder`, holding a link to git: the apps' files to push are what git says (apps_manifest.py)."""
    git = shutil.which("git")
    assert git is not None, "the tests need git, as blueprint does in a git checkout"
    (folder / "git").symlink_to(git)
    return str(folder)


@pytest.fixture
def fake_pulumi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """On PATH, only git and a `pulumi` that answers `version` with $FAKE_PULUMI_VERSION, fails any
    command containing $FAKE_PULUMI_FAIL with $FAKE_PULUMI_ERROR, and logs every call."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "pulumi"
    script.write_text(FAKE_PULUMI)
    script.chmod(0o755)
    log = tmp_path / "pulumi.log"
    log.touch()
    monkeypatch.setenv("PATH", with_git(bin_dir))
    monkeypatch.setenv("FAKE_PULUMI_LOG", str(log))
    monkeypatch.setenv("FAKE_PULUMI_VERSION", "3.272.0")
    monkeypatch.setenv("FAKE_PULUMI_FAIL", "no command has this in it")
    monkeypatch.setenv("FAKE_PULUMI_ERROR", "")
    return log


def without_pulumi_on_path() -> str:
    return os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep) if not (Path(d) / "pulumi").exists())


@pytest.mark.parametrize("command", ["preview", "status", "destroy"])
def test_a_command_that_needs_pulumi_names_the_missing_cli_and_its_fix(
    command: str, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", with_git(tmp_path))
    assert main([command]) != 0
    err = capsys.readouterr().err
    assert "no `pulumi` on PATH" in err
    assert "blueprint doctor --fix" in err
    assert "Traceback" not in err


MAIN_WITH_DEFAULTS = str(Path(__file__).parent / "programs" / "main_with_defaults.py")


@pytest.mark.parametrize("command", ["preview", "status"])
def test_blueprint_without_pulumi_on_path_exits_non_zero_without_a_traceback(command: str, config_home: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PATH": without_pulumi_on_path(), "HOME": str(tmp_path)}  # no Pulumi `--fix` installed for the tester
    done = subprocess.run(
        [sys.executable, MAIN_WITH_DEFAULTS, command], cwd=PROJECT_DIR, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode != 0
    assert "blueprint doctor --fix" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_a_pulumi_cli_older_than_the_minimum_stops_preview_before_pulumi_runs(
    project: Path, fake_pulumi: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FAKE_PULUMI_VERSION", "3.144.1")
    assert main(["preview"]) != 0
    err = capsys.readouterr().err
    assert "v3.144.1, older than 3.145.0" in err
    assert "blueprint doctor --fix" in err
    assert fake_pulumi.read_text().split() == ["version"]


def test_a_stack_pulumi_cannot_decrypt_is_one_message_with_the_fix(
    project: Path, fake_pulumi: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stack_runner.pulumi_environment()  # the passphrase exists already: this is not the first run
    monkeypatch.setenv("FAKE_PULUMI_FAIL", "stack output")
    monkeypatch.setenv("FAKE_PULUMI_ERROR", DECRYPT_ERROR)
    monkeypatch.setenv("FAKE_PULUMI_STACKS", '[{"name": "phase1", "current": false, "resourceCount": 4}]')
    assert main(["status"]) != 0
    captured = capsys.readouterr()
    assert "Pulumi cannot decrypt the state with blueprint's passphrase" in captured.err
    assert "Put back the passphrase file they were written with, or set PULUMI_CONFIG_PASSPHRASE to their passphrase" in captured.err
    assert "Traceback" not in captured.out + captured.err


def test_a_failed_state_export_while_status_asks_is_one_message(
    project: Path, fake_pulumi: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`status` exports a stack that counts more than its own resource (`stack_runner.is_up`): a failure there is said, not a traceback."""
    monkeypatch.setenv("FAKE_PULUMI_FAIL", "stack export")
    monkeypatch.setenv("FAKE_PULUMI_ERROR", LOCK_ERROR)
    monkeypatch.setenv("FAKE_PULUMI_STACKS", '[{"name": "phase1", "current": false, "resourceCount": 4}]')
    assert main(["status"]) != 0
    captured = capsys.readouterr()
    assert "pulumi cancel --yes -s phase1" in captured.err
    assert "Traceback" not in captured.out + captured.err


def test_a_locked_stack_is_one_message_naming_who_holds_it_and_pulumi_cancel(
    project: Path, fake_pulumi: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("cli.doctor.run", lambda stacks: 0)
    monkeypatch.setenv("FAKE_PULUMI_FAIL", " up ")
    monkeypatch.setenv("FAKE_PULUMI_ERROR", LOCK_ERROR)
    assert main(["up", "--phase", "1"]) != 0
    text = "".join(capsys.readouterr())
    assert "dev@laptop (pid 4242)" in text
    assert "pulumi cancel --yes -s phase1" in text


def test_blueprint_env_exports_the_passphrase_file_for_the_plain_pulumi_commands(config_home: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PULUMI_CONFIG_PASSPHRASE")}
    shell = 'eval "$("$0" -m cli.main env)" && printf %s "$PULUMI_CONFIG_PASSPHRASE_FILE"'
    done = subprocess.run(
        ["sh", "-c", shell, sys.executable], cwd=PROJECT_DIR, env=env, capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == str(config_home / "blueprint" / "pulumi-passphrase")
    assert (config_home / "blueprint" / "pulumi-passphrase").read_text().strip()


def home_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *installed: str) -> Path:
    """A home folder holding what `doctor --fix` installs, each tool in its folder, blueprint's home
    here; PATH holds git alone."""
    home = tmp_path / "home"
    for name in installed:
        tool = home / (PULUMI_BIN if name == "pulumi" else TOOLS_BIN) / name
        tool.parent.mkdir(parents=True, exist_ok=True)
        tool.write_text(FAKE_PULUMI if name == "pulumi" else f"#!/bin/sh\necho {name}\n")
        tool.chmod(0o755)
    bare = tmp_path / "bare"
    bare.mkdir()
    monkeypatch.setenv("PATH", with_git(bare))
    monkeypatch.setattr("cli.tools_path.tools_home", lambda: home)
    return home


def test_blueprint_runs_the_pulumi_doctor_fix_installed_though_its_folder_is_not_on_path(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """README's Quick start: `uv run blueprint doctor --fix`, then `uv run blueprint up`, no PATH step between."""
    home_with(tmp_path, monkeypatch, "pulumi")
    log = tmp_path / "pulumi.log"
    monkeypatch.setenv("FAKE_PULUMI_LOG", str(log))
    monkeypatch.setenv("FAKE_PULUMI_VERSION", "3.272.0")
    monkeypatch.setenv("FAKE_PULUMI_FAIL", "no command has this in it")
    assert main(["status"]) == 0, capsys.readouterr().err
    assert "version" in log.read_text().split()


def test_the_processes_blueprint_starts_find_the_tools_doctor_fix_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pulumi's engine, and the `kind` and `kubectl` local.Command runs, inherit blueprint's PATH."""
    home = home_with(tmp_path, monkeypatch, "kind", "kubectl", "pulumi")
    assert main(["env"]) == 0
    found = subprocess.run(
        ["/bin/sh", "-c", "for tool in kind kubectl pulumi; do command -v $tool; done"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert found.stdout.split() == [
        str(home / ".local/share/blueprint/bin/kind"),
        str(home / ".local/share/blueprint/bin/kubectl"),
        str(home / PULUMI_BIN / "pulumi"),
    ]


def test_blueprint_env_puts_the_tools_doctor_fix_installed_on_the_shells_path(config_home: Path, tmp_path: Path) -> None:
    """For the plain `pulumi` commands: `eval "$(uv run blueprint env)"`."""
    (tmp_path / ".local/share/blueprint/bin").mkdir(parents=True)
    (tmp_path / ".local/share/blueprint/bin/kind").write_text("#!/bin/sh\n")
    (tmp_path / ".local/share/blueprint/bin/kind").chmod(0o755)
    env = {**os.environ, "HOME": str(tmp_path), "PATH": without_pulumi_on_path()}
    shell = 'eval "$("$0" -m cli.main env)" && command -v kind'
    done = subprocess.run(
        ["sh", "-c", shell, sys.executable], cwd=PROJECT_DIR, env=env, capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == str(tmp_path / ".local/share/blueprint/bin/kind")


def blueprint_env_twice(home: Path, cwd: Path, path: str = "/usr/bin:/bin", shell: str = "sh") -> subprocess.CompletedProcess[str]:
    """`eval "$(uv run blueprint env)"` twice in one `shell`, then its PATH: `uv run` starts blueprint with
    the checkout's .venv/bin first on PATH, and the shell's own PATH is `path`."""
    env = {**os.environ, "HOME": str(home), "PATH": path, "PYTHONPATH": str(PROJECT_DIR)}
    once = 'eval "$(PATH="$1:$PATH" "$0" -m cli.main env)"'
    return subprocess.run(
        [shutil.which(shell) or shell, "-c", f'{once} && {once} && printf %s "$PATH"', sys.executable, str(Path(sys.executable).parent)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


def test_blueprint_env_puts_the_tools_first_on_the_shells_own_path_once(config_home: Path, tmp_path: Path) -> None:
    """Not the PATH blueprint runs with: the checkout's python, pytest and bao would come first in the
    user's shell; and an eval run again (a new terminal's rc file, a second checkout) adds nothing."""
    for folder in (PULUMI_BIN, TOOLS_BIN):
        (tmp_path / folder).mkdir(parents=True)
    done = blueprint_env_twice(tmp_path, PROJECT_DIR)
    assert done.stdout.split(":") == [str(tmp_path / PULUMI_BIN), str(tmp_path / TOOLS_BIN), "/usr/bin", "/bin"]


@pytest.mark.parametrize("shell", ["sh", "bash"])
def test_blueprint_env_moves_a_tools_folder_the_shells_path_holds_further_on_to_the_front_once(
    config_home: Path, tmp_path: Path, shell: str
) -> None:
    """Behind Homebrew's folder, Homebrew's kubectl would win over the pinned one the doctor's advice puts first;
    the rest of PATH, an empty entry too, stays as it was."""
    (tmp_path / TOOLS_BIN).mkdir(parents=True)
    tools = str(tmp_path / TOOLS_BIN)
    done = blueprint_env_twice(tmp_path, PROJECT_DIR, f"/opt/homebrew/bin:{tools}:/usr/bin::/bin:{tools}", shell)
    assert done.stdout.split(":") == [tools, "/opt/homebrew/bin", "/usr/bin", "", "/bin"]


@pytest.mark.parametrize(("umask", "runs_with"), [(0o000, 0o022), (0o002, 0o022), (0o077, 0o077)], ids=oct)
def test_blueprint_runs_with_a_umask_that_lets_no_other_user_write_what_it_makes(
    monkeypatch: pytest.MonkeyPatch, umask: int, runs_with: int
) -> None:
    """Pulumi, the scripts it runs (the data folder's) and the doctor inherit it: under a loose umask
    (a shared laptop's 000, a 002 with a shared group) what they make would be anyone's to swap."""
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "correct horse battery staple")
    os.umask(umask)
    assert main(["env"]) == 0
    assert os.umask(0o022) == runs_with


@pytest.mark.parametrize("shell", ["sh", "bash"])
def test_blueprint_env_gives_a_home_folder_with_shell_syntax_in_its_name_to_the_shell_as_it_is(
    config_home: Path, tmp_path: Path, shell: str
) -> None:
    home = tmp_path / HOSTILE
    (home / TOOLS_BIN).mkdir(parents=True)
    done = blueprint_env_twice(home, tmp_path, f"/usr/bin:{home / TOOLS_BIN}:/bin", shell)
    assert done.stdout.split(":") == [str(home / TOOLS_BIN), "/usr/bin", "/bin"]
    assert not (tmp_path / "pwned").exists()


def test_no_output_shows_the_passphrase(
    project: Path, fake_pulumi: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["env"])
    passphrase = Path(stack_runner.pulumi_environment()["PULUMI_CONFIG_PASSPHRASE_FILE"]).read_text().strip()
    monkeypatch.setenv("FAKE_PULUMI_FAIL", " preview ")
    monkeypatch.setenv("FAKE_PULUMI_ERROR", DECRYPT_ERROR)
    main(["preview"])
    text = "".join(capsys.readouterr())
    assert "cannot decrypt" in text
    assert passphrase not in text


def test_a_pulumi_failure_blueprint_does_not_know_is_said_without_a_traceback(
    project: Path, fake_pulumi: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FAKE_PULUMI_FAIL", "stack ls")
    monkeypatch.setenv("FAKE_PULUMI_ERROR", "error: something nobody expected")
    assert main(["status"]) != 0
    captured = capsys.readouterr()
    assert "something nobody expected" in captured.err
    assert "Traceback" not in captured.out + captured.err


def test_blueprint_env_says_why_it_refuses_a_link_without_a_traceback(config_home: Path, tmp_path: Path) -> None:
    (config_home / "blueprint").mkdir(parents=True)
    (config_home / "blueprint" / "pulumi-passphrase").symlink_to(tmp_path / "elsewhere")
    done = subprocess.run([sys.executable, "-m", "cli.main", "env"], cwd=PROJECT_DIR, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "not a plain file" in done.stderr
    assert "Traceback" not in done.stderr


def test_blueprint_env_answers_without_loading_pulumi(config_home: Path) -> None:
    """It runs in every new terminal (`eval "$(uv run blueprint env)"` in a shell's rc file): Pulumi's SDK takes half a second to load."""
    code = "import sys; from cli.main import main; code = main(['env']); assert 'pulumi' not in sys.modules, 'pulumi'; sys.exit(code)"
    done = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_DIR, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "export PULUMI_CONFIG_PASSPHRASE_FILE=" in done.stdout


def test_a_stack_file_that_is_not_yaml_is_one_message_without_a_traceback(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("stacks.config.schema.STACK_FILES_DIR", project)
    (project / "Pulumi.phase1.yaml").write_text("config:\n  blueprint:gitlabNodes: [3\n")
    assert main(["plan", "phase1"]) == 1
    err = capsys.readouterr().err
    assert f"{project / 'Pulumi.phase1.yaml'} is not valid YAML: " in err
    assert "(line 3, column 1)" in err
    assert "Traceback" not in err


def test_the_blueprint_command_tree_is_the_only_argument_parser_in_cli() -> None:
    """Each flag is declared once, in cli/main.py's tree: a module's own parser would drift from it (as
    the doctor's and the diagram's once did) and from docs/reference/cli.md, which is generated from it."""
    folder = PROJECT_DIR / "cli"
    parsers = {str(path.relative_to(folder)): path.read_text().count("ArgumentParser(") for path in sorted(folder.rglob("*.py"))}
    assert {path: count for path, count in parsers.items() if count} == {"main.py": 1}


PLANNING_COMMANDS = [["plan", "phase1"], ["images"], ["docs", "--check"], ["diagram", "--check"]]
"""The commands that plan the phases offline."""


def failing_plans(monkeypatch: pytest.MonkeyPatch, fail: Callable[[], object]) -> None:
    """Every plan stops as the program does when `fail` raises (the harness wraps what it raised)."""

    def failed(*args: object, **kwargs: object) -> None:
        try:
            fail()
        except Exception as error:
            raise ProgramFailed(error, []) from error

    monkeypatch.setattr("cli.plan._run", failed)


def refused() -> None:
    raise RunError("blueprint:gitlabNodes = 'many' is not valid")


@pytest.mark.parametrize("argv", PLANNING_COMMANDS, ids=" ".join)
def test_a_phase_that_fails_to_plan_on_a_config_problem_is_said_as_its_message_alone(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    failing_plans(monkeypatch, refused)
    assert main(argv) == 1
    [said] = capsys.readouterr().err.splitlines()
    assert said.startswith("error: ")
    assert said.endswith("blueprint:gitlabNodes = 'many' is not valid")


@pytest.mark.parametrize("argv", PLANNING_COMMANDS, ids=" ".join)
def test_a_bug_that_stops_a_plan_keeps_its_traceback(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    failing_plans(monkeypatch, lambda: dict[str, str]()["a bug of the program"])
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err
    assert "KeyError: 'a bug of the program'" in err
