"""What the stacks export: no root credential, only where each one is kept; and what needs root's
GitLab token (phase3, in a phase stack) reads it from phase2's file, or stops with one clear error."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest

import cli.plan
import cli.stand_ins
import stacks.preflight
import stacks.runtime
from cli.plan import Plan, ProgramFailed, plan
from stacks import outputs
from tests.plans import planned, planned_as

HOST_SECRET = "pulumi-python:dynamic/blueprint:HostSecret"
SYNC = "pulumi-python:dynamic/gitlab:ProjectSync"
HEADLAMP_ROUTE = "blueprint:index:HeadlampRoute"

ALLOWED_SECRET_OUTPUTS = {
    "phase1": set(),
    "phase2": {outputs.DEPLOY_KUBECONFIG},
    "phase3": set(),
    "dev": {outputs.DEPLOY_KUBECONFIG},
}
"""Every secret output, by stack: `deployKubeconfig` alone, CI's account, limited to the apps'
namespace. kind's admin kubeconfig of the cluster is root on it: no stack exports it (a phase2
stack asks kind for it, `dev` hands it on in its graph)."""

FILE_OUTPUTS = {
    outputs.ADMIN_TOKEN_FILE: "gitlab-admin-token-value",
    outputs.GITLAB_ROOT_PASSWORD_FILE: "gitlab-root-password",
    outputs.OPENBAO_ADMIN_PASSWORD_FILE: "openbao-admin-password",
}
"""The outputs that say where a root credential is kept, and the HostSecret that keeps it."""


@pytest.mark.parametrize("mode", ["up", "preview"])
@pytest.mark.parametrize("stack", sorted(ALLOWED_SECRET_OUTPUTS))
def test_no_stack_output_is_a_root_credential(stack: str, mode: str) -> None:
    result = planned_as(mode, stack)
    assert {key for key, output in result.outputs.items() if output["secret"]} == ALLOWED_SECRET_OUTPUTS[stack]


@pytest.mark.parametrize("stack", ["phase2", "dev"])
def test_each_root_credential_is_exported_as_the_path_of_the_file_that_keeps_it(stack: str) -> None:
    result = planned(stack)
    secrets_folder = f"{result.outputs[outputs.CA_CERT_FILE]['value'].rsplit('/', 1)[0]}/secrets/"
    for key, host_secret in FILE_OUTPUTS.items():
        path = result.one(HOST_SECRET, host_secret)["inputs"]["path"]
        assert path.startswith(secrets_folder)
        assert result.outputs[key] == {"secret": False, "value": path}, key


def test_the_admin_token_is_read_from_its_file_with_gitlabs_prefix(tmp_path: Path) -> None:
    kept = tmp_path / "gitlab-admin-token"
    kept.write_text("Abc123\n")
    assert outputs.read_admin_token(str(kept)) == "glpat-Abc123"


@pytest.mark.parametrize("content", [None, "", "\n"])
def test_a_missing_or_empty_admin_token_file_is_one_error_naming_the_file_and_the_fix(tmp_path: Path, content: str | None) -> None:
    kept = tmp_path / "gitlab-admin-token"
    if content is not None:
        kept.write_text(content)
    with pytest.raises(outputs.SecretFileUnavailable) as error:
        outputs.read_admin_token(str(kept))
    assert str(error.value) == (f"phase2 is not up, or its data folder is not on this machine: {kept}; run `uv run blueprint up` first")


@pytest.fixture(scope="module")
def module_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("phase3-data")


@pytest.fixture
def folder(module_folder: Path) -> Iterator[Path]:
    """The folder of phase3's data folder, empty for each test: the same path in each, so phase3's
    upstream plans over it (pure, and the data folder's files no input of theirs) are made once."""
    for child in module_folder.iterdir():
        shutil.rmtree(child)
    yield module_folder
    for child in module_folder.iterdir():
        shutil.rmtree(child)


def plan_phase3(folder: Path) -> Plan:
    """phase3's plan over the data folder in `folder`, after its upstream stacks' plans over it."""
    data = str(folder / "data")
    return plan(
        "phase3", {"blueprint:dataDir": data}, planned_upstream={name: planned(name, dataDir=data) for name in ("phase1", "phase2")}
    )


def _plan_phase3_as_a_real_run(folder: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[dict[str, Any]]]:
    """phase3 planned over a data folder in `folder`, as a real run reads its token (not the
    plan's stand-in); returns the token file and the inputs each ProjectSync is registered with
    (secrets in their wire wrapper)."""
    monkeypatch.setattr(cli.stand_ins, "PLATFORM", stacks.runtime.Phase2OnThisMachine())
    # No platform answers here: the pre-flight has its own tests (tests/stacks/test_preflight.py).
    monkeypatch.setattr(stacks.preflight, "run", lambda _inputs, *, preview: None)
    registered: list[dict[str, Any]] = []
    real = cli.plan._StandInMocks.new_resource

    def recording(self: cli.plan._StandInMocks, args: Any) -> Any:
        if args.typ == SYNC:
            registered.append(dict(args.inputs))
        return real(self, args)

    monkeypatch.setattr(cli.plan._StandInMocks, "new_resource", recording)
    data = folder / "data"
    token_file = data / "platform" / "secrets" / "gitlab-admin-token"
    return token_file, registered


def test_phase3_calls_gitlab_with_the_token_of_phase2s_file(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token_file, registered = _plan_phase3_as_a_real_run(folder, monkeypatch)
    token_file.parent.mkdir(parents=True)
    token_file.write_text("FromTheFile42\n")
    (token_file.parent / "openbao-blueprint-password").write_text("Writer1\n")
    result = plan_phase3(folder)
    assert registered
    assert {cli.plan._plain(inputs["token"]) for inputs in registered} == {("glpat-FromTheFile42", True)}
    assert len(result.find(SYNC)) == len(registered)


def test_phase3_without_phase2s_token_file_stops_before_any_resource(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token_file, _ = _plan_phase3_as_a_real_run(folder, monkeypatch)
    with pytest.raises(ProgramFailed) as failed:
        plan_phase3(folder)
    assert isinstance(failed.value.cause, pulumi.RunError)
    assert str(failed.value.cause) == (
        f"phase2 is not up, or its data folder is not on this machine: {token_file}; run `uv run blueprint up` first"
    )
    assert {r["type"] for r in failed.value.registered} <= {"pulumi:pulumi:Stack", "pulumi:pulumi:StackReference"}


def test_phase3_writes_its_credentials_to_openbao_with_the_password_of_phase2s_file(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token_file, _ = _plan_phase3_as_a_real_run(folder, monkeypatch)
    token_file.parent.mkdir(parents=True)
    token_file.write_text("FromTheFile42\n")
    (token_file.parent / "openbao-blueprint-password").write_text("Writer1\n")
    registered: list[dict[str, Any]] = []
    real = cli.plan._StandInMocks.new_resource

    def recording(self: cli.plan._StandInMocks, args: Any) -> Any:
        # phase3's own (the plan's stand-in for phase2 runs phase2's program too, with its stand-in password).
        if args.typ == "pulumi-python:dynamic/openbao:KvSecret" and args.name.startswith("openbao-kv-gitlab-deploy-tokens"):
            registered.append(dict(args.inputs))
        return real(self, args)

    monkeypatch.setattr(cli.plan._StandInMocks, "new_resource", recording)
    plan_phase3(folder)
    assert registered
    assert {cli.plan._plain(inputs["password"]) for inputs in registered} == {("Writer1", True)}


def test_phase3_without_phase2s_openbao_password_file_stops_before_any_resource(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token_file, _ = _plan_phase3_as_a_real_run(folder, monkeypatch)
    token_file.parent.mkdir(parents=True)
    token_file.write_text("FromTheFile42\n")
    with pytest.raises(ProgramFailed) as failed:
        plan_phase3(folder)
    assert isinstance(failed.value.cause, pulumi.RunError)
    assert str(failed.value.cause) == (
        f"phase2 is not up, or its data folder is not on this machine: {token_file.parent / 'openbao-blueprint-password'} is "
        "missing or empty; run `uv run blueprint up` first"
    )
    assert {r["type"] for r in failed.value.registered} <= {"pulumi:pulumi:Stack", "pulumi:pulumi:StackReference"}


def test_the_offline_plan_reads_no_token_file(folder: Path) -> None:
    """Over a data folder with no platform in it, phase3 plans with a stand-in token all the same."""
    result = plan_phase3(folder)
    assert {sync["inputs"]["token"] for sync in result.find(SYNC)} == {"[secret]"}


def test_a_phase_reads_its_upstream_in_its_own_organization(monkeypatch: pytest.MonkeyPatch) -> None:
    """On Pulumi Cloud the stacks live in the user's organization, not a DIY backend's literal `organization`."""
    assert outputs.upstream_stack_name("blueprint", "phase2") == "organization/blueprint/phase1"
    monkeypatch.setattr(pulumi, "get_organization", lambda: "platform-team")
    assert outputs.upstream_stack_name("blueprint", "phase3") == "platform-team/blueprint/phase2"
