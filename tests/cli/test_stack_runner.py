"""The real `StackRunner` against a fake `pulumi` on PATH: states exported and imported with their
secrets still encrypted, and a stack that holds no resource is not up."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from cli.stack_runner import AutomationRunner, StackFailed, is_up, pulumi_environment, pulumi_errors
from cli.tools_path import tools_on_path
from components.host_folder import DELETE_SCRIPT
from stacks.runtime import DESTROYING
from tests.plans import fake_command

FAKE_PULUMI = """\
echo "$*" >> "$PULUMI_CALLS"
case "$1 $2" in
  "stack export") if [ -n "$PULUMI_EXPORT" ]; then echo "$PULUMI_EXPORT"; else echo '{"version": 3, "deployment": {"resources": []}}'; fi ;;
  "stack import") echo "$4" > "$PULUMI_IMPORTED"; echo "error: the stack is locked" >&2; exit 255 ;;
  "version ") echo "v3.272.0" ;;
  "stack output") echo "$PULUMI_OUTPUTS" ;;
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
        # an `up` whose program refused its config: the stack's own resource alone
        '[{"name": "phase2", "current": false, "resourceCount": 1}]',
        "[]",
    ],
)
def test_a_stack_that_holds_no_resource_is_not_up(fake_pulumi: Path, monkeypatch: pytest.MonkeyPatch, listed: str) -> None:
    monkeypatch.setenv("PULUMI_STACKS", listed)
    assert AutomationRunner().outputs("phase2") is None


URN = "urn:pulumi:phase2::blueprint::"
REFUSED_PHASE2: dict[str, Any] = {
    "version": 3,
    "deployment": {
        "resources": [
            {"urn": URN + "pulumi:pulumi:Stack::blueprint-phase2", "type": "pulumi:pulumi:Stack", "custom": False},
            {"urn": URN + "pulumi:providers:pulumi::default", "type": "pulumi:providers:pulumi", "custom": True, "id": "x"},
            {
                "urn": URN + "pulumi:pulumi:StackReference::organization/blueprint/phase1",
                "type": "pulumi:pulumi:StackReference",
                "custom": True,
                "external": True,
                "id": "organization/blueprint/phase1",
            },
        ]
    },
}
"""phase2 after an `up --phase 2` whose program read phase1 through its StackReference and refused (phase1
not up): Pulumi keeps the read and the default provider it needed (pkg/backend/snapshot.go
`readSnapshotMutation`; pkg/resource/deploy/source_eval.go `ReadResource`), so `stack ls` counts 3."""


def test_a_stack_holding_only_what_a_refused_up_read_is_not_up(fake_pulumi: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PULUMI_STACKS", '[{"name": "phase2", "current": false, "resourceCount": 3}]')
    monkeypatch.setenv("PULUMI_EXPORT", json.dumps(REFUSED_PHASE2))
    assert AutomationRunner().outputs("phase2") is None


def test_a_state_with_a_resource_an_up_made_is_up() -> None:
    made = {"urn": URN + "command:local:Command::kind-cluster", "type": "command:local:Command", "custom": True, "id": "c"}
    assert is_up({"deployment": {"resources": [*REFUSED_PHASE2["deployment"]["resources"], made]}})


def test_a_stack_with_no_resource_is_not_up_without_an_export(fake_pulumi: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`blueprint status` asks every phase: an empty or missing stack costs no `pulumi stack export`."""
    monkeypatch.setenv("PULUMI_STACKS", '[{"name": "phase2", "current": false, "resourceCount": 0}]')
    assert AutomationRunner().outputs("phase2") is None
    assert "stack export" not in (fake_pulumi / "calls").read_text()


def test_the_outputs_of_a_stack_that_is_up_are_read_with_their_secrets_in_plain(fake_pulumi: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = {"urn": URN + "command:local:Command::kind-cluster", "type": "command:local:Command", "custom": True, "id": "c"}
    monkeypatch.setenv("PULUMI_STACKS", '[{"name": "organization/blueprint/phase2", "current": false, "resourceCount": 4}]')
    monkeypatch.setenv("PULUMI_EXPORT", json.dumps({"deployment": {"resources": [*REFUSED_PHASE2["deployment"]["resources"], made]}}))
    monkeypatch.setenv("PULUMI_OUTPUTS", '{"domain": "blueprint.test", "kubeconfig": "the-secret"}')
    assert AutomationRunner().outputs("phase2") == {"domain": "blueprint.test", "kubeconfig": "the-secret"}
    assert "stack output --json --show-secrets --stack phase2" in (fake_pulumi / "calls").read_text()


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


# What `pulumi up` prints (non-interactive, as the Automation API runs it) when a dynamic provider
# raises: the provider host sends the whole traceback as the error (`traceback.format_exc()` in
# pulumi/dynamic/__main__.py, `_abort_with_traceback`), and the display prints it under "error: ",
# each line indented by four (pkg/backend/display/progress.go, `printDiagnostics`). The traceback
# is the real host's, run over gRPC as the engine runs it (tests/providers' way), paths shortened.
DYNAMIC_PROVIDER_FAILURE = """\
Updating (phase2):
 +  pulumi-python:dynamic/openbao:Init openbao-init creating (12s) error: Traceback (most recent call last):
 +  pulumi-python:dynamic/openbao:Init openbao-init **creating failed** 1 error
 +  pulumi:pulumi:Stack blueprint-phase2 creating (13s) error: update failed
Diagnostics:
  pulumi-python:dynamic/openbao:Init (openbao-init):
    error: Traceback (most recent call last):
      File "/home/me/blueprint/.venv/lib/python3.11/site-packages/pulumi/dynamic/__main__.py", line 84, in wrapper
        return fn(self, request, context)
               ^^^^^^^^^^^^^^^^^^^^^^^^^^
      File "/home/me/blueprint/.venv/lib/python3.11/site-packages/pulumi/dynamic/__main__.py", line 170, in Create
        result = provider.create(props)
                 ^^^^^^^^^^^^^^^^^^^^^^
      File "/home/me/blueprint/providers/openbao_init.py", line 70, in create
        return CreateResult(id_=str(props["address"]), outs=_converged({**DEFAULTS, **props}))
                                                            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
      File "/home/me/blueprint/providers/openbao_api.py", line 86, in login
        raise no_userpass_error(self.props)
    providers.openbao_errors.OpenBaoInitError: {message}
      kubectl --context kind-blueprint -n openbao scale statefulset/openbao --replicas=0
      uv run blueprint up

  pulumi:pulumi:Stack (blueprint-phase2):
    error: update failed

Resources:
    14 unchanged
""".replace(
    "{message}",
    "OpenBao at http://127.0.0.1:8200 is initialised but has no userpass login: its first start was stopped between "
    "initialising its storage and configuring itself. Run:",
)


def test_a_dynamic_providers_traceback_is_said_as_its_final_error_with_its_fix() -> None:
    said = pulumi_errors(DYNAMIC_PROVIDER_FAILURE)
    assert said == [
        "error: OpenBao at http://127.0.0.1:8200 is initialised but has no userpass login: its first start was stopped "
        "between initialising its storage and configuring itself. Run:",
        "  kubectl --context kind-blueprint -n openbao scale statefulset/openbao --replicas=0",
        "  uv run blueprint up",
        "error: update failed",
    ]


def test_an_unexpected_exception_keeps_its_type() -> None:
    """Ours say what happened in words; `KeyError: 'address'` says nothing without its type."""
    output = DYNAMIC_PROVIDER_FAILURE.replace(
        "providers.openbao_errors.OpenBaoInitError: OpenBao at http://127.0.0.1:8200 is initialised", "KeyError: 'address' is initialised"
    )
    assert pulumi_errors(output)[0].startswith("error: KeyError: 'address' is initialised")


def test_of_chained_exceptions_the_last_is_said() -> None:
    chained = DYNAMIC_PROVIDER_FAILURE.replace(
        "    providers.openbao_errors.OpenBaoInitError:",
        "    ConnectionError: refused\n\n    During handling of the above exception, another exception occurred:\n\n"
        '    Traceback (most recent call last):\n      File "/home/me/blueprint/providers/openbao_api.py", line 90, in login\n'
        "        raise no_userpass_error(self.props) from None\n    providers.openbao_errors.OpenBaoInitError:",
    )
    said = pulumi_errors(chained)
    assert said[0].startswith("error: OpenBao at http://127.0.0.1:8200 is initialised")
    assert not [line for line in said if "ConnectionError" in line or "Traceback" in line]


def test_the_explanation_of_a_failed_phase_quotes_the_providers_message_not_its_traceback() -> None:
    from cli.explain import explain

    text = explain("2", "phase2", DYNAMIC_PROVIDER_FAILURE, None, None)
    assert "  error: OpenBao at http://127.0.0.1:8200 is initialised but has no userpass login" in text
    assert "Traceback" not in text


# Each diagnostic's message, every line of it, is printed under its resource's header indented by four
# (pulumi/pulumi pkg/backend/display/progress.go, `printDiagnostics`; blank lines at its end trimmed,
# `splitIntoDisplayableLines`). The layouts below are built from the upstream format strings.
def _diagnostics(header: str, message: str) -> str:
    lines = "\n".join(f"    {line}".rstrip() for line in f"error: {message}".rstrip("\n").split("\n"))
    stack = "  pulumi:pulumi:Stack (blueprint-phase2):\n    error: update failed\n"
    return f"Updating (phase2):\n\nDiagnostics:\n  {header}:\n{lines}\n\n{stack}\nResources:\n    3 unchanged\n"


def test_a_failed_commands_error_names_the_resource_not_its_script_and_keeps_blueprints_words() -> None:
    """pulumi-command's `"%w: running %q:\\n%s"` (provider/pkg/provider/local/commandOutputs.go): the
    whole script, quoted on one line, then what it printed; blueprint's refusals say why and the fix."""
    output = "checking the lease\nblueprint: the cluster is leased by another checkout (/home/me/other)\n  run its destroy first\n"
    script = DELETE_SCRIPT
    said = pulumi_errors(_diagnostics("command:local:Command (cluster-lease)", f"exit status 1: running {json.dumps(script)}:\n{output}"))
    assert said == [
        "error: exit status 1: running cluster-lease's script:",
        "  blueprint: the cluster is leased by another checkout (/home/me/other)",
        "    run its destroy first",
        "error: update failed",
    ]


def test_a_failed_commands_output_is_kept_when_blueprint_said_nothing() -> None:
    output = 'ERROR: failed to create cluster: node(s) already exist for a cluster with the name "blueprint"\n'
    said = pulumi_errors(_diagnostics("command:local:Command (kind-cluster)", f'exit status 1: running "kind create cluster":\n{output}'))
    assert said[:2] == [
        "error: exit status 1: running kind-cluster's script:",
        '  ERROR: failed to create cluster: node(s) already exist for a cluster with the name "blueprint"',
    ]


def test_a_multi_error_keeps_its_causes() -> None:
    """hashicorp/go-multierror's list (`"%d error occurred:\\n\\t* %s\\n\\n"`), as Helm releases fail."""
    cause = 'Helm release "gitlab/gitlab" was created, but failed to initialize completely: context deadline exceeded'
    said = pulumi_errors(_diagnostics("kubernetes:helm.sh/v3:Release (gitlab-chart)", f"1 error occurred:\n\t* {cause}\n\n"))
    assert said[:2] == ["error: 1 error occurred:", f"    * {cause}"]


def test_a_message_with_a_list_keeps_its_lines() -> None:
    message = "invalid configuration:\n  - context was not found for specified context: kind-blueprint\n  - no server found for cluster"
    said = pulumi_errors(_diagnostics("pulumi:providers:kubernetes (k8s)", message))
    assert said[:3] == [
        "error: invalid configuration:",
        "    - context was not found for specified context: kind-blueprint",
        "    - no server found for cluster",
    ]


def test_an_unhandled_exception_of_the_program_is_said_as_its_final_error() -> None:
    """pulumi-language-python-exec logs "Program failed with an unhandled exception:\\n" and the traceback."""
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "/home/me/blueprint/__main__.py", line 9, in <module>\n'
        "    stacks.run()\n"
        "ValueError: blueprint:dataDir must be an absolute path, got 'data'\n"
    )
    said = pulumi_errors(
        _diagnostics("pulumi:pulumi:Stack (blueprint-phase2)", f"Program failed with an unhandled exception:\n{traceback}")
    )
    assert said[0] == "error: ValueError: blueprint:dataDir must be an absolute path, got 'data'"
    assert not [line for line in said if "Traceback" in line or "File " in line]


def test_reading_the_stacks_makes_no_passphrase_file_and_writing_one_does(
    fake_pulumi: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`status`, `kubeconfig`, `secrets --show` and a refused destroy only read: blueprint's passphrase file is made
    by the first command that writes a stack, which goes on to use it."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE_FILE", raising=False)
    monkeypatch.setenv("PULUMI_STACKS", '[{"name": "phase2", "current": false, "resourceCount": 0}]')
    runner = AutomationRunner()
    runner.outputs("phase2")
    runner.export_state("phase2")
    assert not (tmp_path / "config").exists()
    with pytest.raises(StackFailed):
        runner.import_state("phase2", {"version": 3, "deployment": {"resources": []}})
    assert (tmp_path / "config" / "blueprint" / "pulumi-passphrase").is_file()


class _Selected:
    """What `AutomationRunner._stack` selects: a stack of a workspace with the CLI at `version`."""

    def __init__(self, version: str) -> None:
        self.workspace = type("Workspace", (), {"pulumi_version": version, "env_vars": pulumi_environment(create=False)})()
        self.destroyed_with: dict[str, Any] = {}

    def destroy(self, **options: Any) -> None:
        self.destroyed_with = options


@pytest.mark.parametrize(("version", "runs"), [("3.272.0", True), ("3.204.0", True), ("3.203.1", False)])
def test_a_destroy_that_asks_for_its_program_runs_it_only_on_a_cli_that_does_it_soundly(
    monkeypatch: pytest.MonkeyPatch, version: str, runs: bool
) -> None:
    """`--run-program` came in 3.160.0, and reads (a StackReference) and failed deletes were fixed by 3.204.0."""
    selected = _Selected(version)
    monkeypatch.setattr(AutomationRunner, "_stack", lambda self, name: selected)
    said: list[str] = []
    AutomationRunner().destroy("phase2", said.append, {}, run_program=True)
    assert selected.destroyed_with.get("run_program", False) is runs
    assert any("older than 3.204.0" in line for line in said) is not runs


def test_a_destroy_from_the_state_alone_passes_no_run_program_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    selected = _Selected("3.272.0")
    monkeypatch.setattr(AutomationRunner, "_stack", lambda self, name: selected)
    AutomationRunner().destroy("phase2", print, {})
    assert "run_program" not in selected.destroyed_with


def test_a_variable_of_the_users_shell_cannot_make_an_up_run_its_program_as_a_destroy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The program skips an `up`'s checks and migrations under it (stacks/runtime.py `Runtime.destroying`)."""
    monkeypatch.setenv(DESTROYING, "1")
    assert pulumi_environment(create=False)[DESTROYING] == ""


def test_a_destroy_gives_its_program_the_environment_it_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    selected = _Selected("3.272.0")
    monkeypatch.setattr(AutomationRunner, "_stack", lambda self, name: selected)
    AutomationRunner().destroy("phase2", print, {DESTROYING: "1"}, run_program=True)
    assert selected.workspace.env_vars[DESTROYING] == "1"
