"""The real `StackRunner` against a fake `pulumi` on PATH: states exported and imported with their
secrets still encrypted, and a stack that holds no resource is not up."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cli.stack_runner import AutomationRunner, StackFailed
from cli.tools_path import tools_on_path
from tests.plans import fake_command

FAKE_PULUMI = """\
echo "$*" >> "$PULUMI_CALLS"
case "$1 $2" in
  "stack export") echo '{"version": 3, "deployment": {"resources": []}}' ;;
  "stack import") echo "$4" > "$PULUMI_IMPORTED"; echo "error: the stack is locked" >&2; exit 255 ;;
  "version ") echo "v3.272.0" ;;
  *) case "$*" in *"stack ls --json"*) echo "$PULUMI_STACKS" ;; esac ;;
esac
"""


@pytest.fixture
def fake_pulumi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    fake_command(tmp_path / "bin", "pulumi", FAKE_PULUMI)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    monkeypatch.setenv("PULUMI_CALLS", str(tmp_path / "calls"))
    monkeypatch.setenv("PULUMI_IMPORTED", str(tmp_path / "imported"))
    return tmp_path


def test_state_is_exported_with_its_secrets_still_encrypted(fake_pulumi: Path) -> None:
    assert AutomationRunner().export_state("phase2") == {"version": 3, "deployment": {"resources": []}}
    assert (fake_pulumi / "calls").read_text().startswith("stack export --stack phase2")
    assert "--show-secrets" not in (fake_pulumi / "calls").read_text()


def test_a_failed_import_is_a_stack_failure_and_leaves_no_state_file_behind(fake_pulumi: Path) -> None:
    with pytest.raises(StackFailed) as failed:
        AutomationRunner().import_state("phase2", {"version": 3, "deployment": {"resources": []}})
    assert "the stack is locked" in failed.value.output
    assert not Path((fake_pulumi / "imported").read_text().strip()).exists()


@pytest.mark.parametrize(
    "listed",
    [
        '[{"name": "phase2", "current": false}]',  # made by `stack init` (or a preview), never updated: no count
        '[{"name": "phase2", "current": false, "resourceCount": 0}]',  # destroyed: Pulumi keeps it, empty
        "[]",
    ],
)
def test_a_stack_that_holds_no_resource_is_not_up(fake_pulumi: Path, monkeypatch: pytest.MonkeyPatch, listed: str) -> None:
    monkeypatch.setenv("PULUMI_STACKS", listed)
    assert AutomationRunner().outputs("phase2") is None


def test_the_automation_api_runs_the_pulumi_doctor_fix_installed_before_any_other(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Automation API runs the `pulumi` first on the process's PATH, where `main` put blueprint's own
    folder (cli/tools_path.py `tools_on_path`): not the user's, nor an old one in Pulumi's ~/.pulumi/bin."""
    home = tmp_path / "home"
    fake_command(home / ".local/share/blueprint/pulumi/bin", "pulumi", FAKE_PULUMI)
    for elsewhere in (tmp_path / "opt", home / ".pulumi/bin"):
        fake_command(elsewhere, "pulumi", 'echo "error: not the pulumi blueprint installed" >&2; exit 1\n')
    monkeypatch.setenv("PATH", f"{tmp_path / 'opt'}:{home / '.pulumi/bin'}:/usr/bin:/bin")
    monkeypatch.setenv("PULUMI_CALLS", str(tmp_path / "calls"))
    monkeypatch.setenv("PULUMI_STACKS", "[]")
    tools_on_path(os.environ, home)
    assert AutomationRunner().outputs("phase2") is None
    assert "stack ls --json" in (tmp_path / "calls").read_text()
