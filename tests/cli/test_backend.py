"""The user's Pulumi backend (`PULUMI_BACKEND_URL`): every command on it, the checkout's `.pulumi-state/`
without it; an unreachable one said in one line that never repeats its credentials; and a second
checkout on the same backend (a second `file://` folder stands in for a shared bucket) owning the
same platform: the checkout id phase1 recorded there."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from cli import backend, commands, passphrase
from cli.commands import Verb, main_for
from cli.stack_runner import AutomationRunner, StackFailed, pulumi_environment
from stacks.config import PROJECT_DIR
from tests.cli.fake_runner import FakeRunner
from tests.cli.test_stack_runner import FAKE_PULUMI
from tests.plans import fake_command

ALICE = "0123456789abcdef"
"""The checkout id of the operator who brought the platform up."""


class FolderRunner(FakeRunner):
    """The StackRunner seam over a `file://` backend: each stack's state a file in the folder the
    resolved backend URL names, as `pulumi stack export` writes it; what an `up` of phase1 records,
    its data folder's owner, put there by `bring_up`."""

    def _file(self, stack: str) -> Path:
        folder = backend.local_folder(backend.url())
        assert folder is not None
        return folder / f"{stack}.json"

    def outputs(self, stack: str) -> dict[str, Any] | None:
        self.calls.append(("outputs", stack))
        return {} if self._file(stack).exists() else None

    def export_state(self, stack: str) -> dict[str, Any]:
        self.calls.append(("export", stack))
        exported: dict[str, Any] = json.loads(self._file(stack).read_text())
        return exported


def bring_up(shared: Path, checkout: str) -> None:
    """phase1's state on `shared` as an `up` from the checkout `checkout` records it."""
    owner = f"blueprint/phase1@{checkout}"
    folder = {"type": "command:local:Command", "inputs": {"environment": {"FOLDER": "/home/alice/data", "OWNER": owner}}}
    shared.mkdir(parents=True, exist_ok=True)
    (shared / "phase1.json").write_text(json.dumps({"version": 3, "deployment": {"resources": [folder]}}))


def run(runner: FakeRunner, ran: list[str]) -> tuple[int, str]:
    """A verb that runs a stack's program, through `main_for` as the CLI runs it; what it printed to stderr."""
    err = io.StringIO()

    def program(_args: Any, _runner: Any, _out: Any) -> int:
        ran.append("ran")
        return 0

    verb = Verb(program, owns=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.stderr", err)
        code = main_for(verb, type("Args", (), {"command": "preview"})(), runner, io.StringIO())
    return code, err.getvalue()


@pytest.fixture
def id_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This checkout's id file, none yet: a fresh clone, on a machine given the stacks' passphrase."""
    path = tmp_path / "bob" / ".pulumi-state" / "blueprint-checkout-id"
    monkeypatch.setattr("stacks.config.paths.CHECKOUT_ID_FILE", path)
    given = tmp_path / "team-passphrase"
    given.write_text("the team's passphrase, from its secret store\n")
    given.chmod(0o600)
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE_FILE", str(given))
    return path


def test_without_a_chosen_backend_the_state_stays_in_the_checkout() -> None:
    assert pulumi_environment(create=False)[backend.VARIABLE] == f"file://{PROJECT_DIR / '.pulumi-state'}"


def test_every_pulumi_command_runs_on_the_backend_the_user_chose(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pulumi's own variable, as the plain `pulumi` CLI reads it: the Automation API's and the `pulumi` blueprint runs itself."""
    fake_command(tmp_path / "bin", "pulumi", 'echo "$PULUMI_BACKEND_URL" >> "$PULUMI_SEEN"\n' + FAKE_PULUMI)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    monkeypatch.setenv("PULUMI_CALLS", str(tmp_path / "calls"))
    monkeypatch.setenv("PULUMI_SEEN", str(tmp_path / "seen"))
    monkeypatch.setenv("PULUMI_STACKS", json.dumps([{"name": "phase1", "current": False, "resourceCount": 5}]))
    monkeypatch.setenv(backend.VARIABLE, f"file://{tmp_path / 'shared'}")
    AutomationRunner().outputs("phase1")  # `pulumi stack ls` through the Automation API, then `pulumi stack export`
    assert set((tmp_path / "seen").read_text().split()) == {f"file://{tmp_path / 'shared'}"}


def test_the_users_backend_url_never_sits_in_the_automation_apis_env_vars(monkeypatch: pytest.MonkeyPatch) -> None:
    """LocalWorkspace shows its env_vars in its repr; the URL may hold a token. The CLI inherits it from the environment."""
    monkeypatch.setenv(backend.VARIABLE, "https://bob:t0k3n@api.pulumi.example.com")
    assert "t0k3n" not in repr(pulumi_environment(create=False))


def test_an_unreachable_backend_is_one_message_naming_it_without_its_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(backend.VARIABLE, "https://bob:s3cr3t@api.pulumi.example.com/?token=t0k3n")

    class Unreachable(FakeRunner):
        def outputs(self, stack: str) -> dict[str, Any] | None:
            raise StackFailed(stack, "error: PULUMI_ACCESS_TOKEN must be set for login during non-interactive CLI sessions")

    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    assert main_for(commands.STATUS, type("Args", (), {"command": "status"})(), Unreachable(), io.StringIO()) == 1
    said = err.getvalue()
    assert "Pulumi cannot reach or log in to the backend PULUMI_BACKEND_URL names (https://api.pulumi.example.com/)" in said
    assert "\nfix: " in said
    assert [word for word in ("Traceback", "s3cr3t", "t0k3n", "bob") if word in said] == []


@pytest.mark.parametrize(
    ("chosen", "said"),
    [
        ("s3://state-bucket/blueprint?region=eu-west-1&endpoint=minio.example:9000", "s3://state-bucket/blueprint"),
        ("azblob://state?storage_account=acct&sas=sv%3D2020", "azblob://state"),
        ("https://user:token@pulumi.example.com", "https://pulumi.example.com"),
        ("file:///srv/state?no_checksum=true", "file:///srv/state"),
        # A password pasted unencoded: urlsplit ends the host at its `/`, `#` or `?`.
        ("https://alice:pa/ss@api.pulumi.com", "https://api.pulumi.com"),
        ("https://alice:pa#ss@api.pulumi.com", "https://api.pulumi.com"),
        ("https://alice:p?w=1@api.pulumi.com/org", "https://api.pulumi.com/org"),
        ("alice:secretpw@host/path", backend.WITH_CREDENTIALS),
    ],
)
def test_a_backend_is_named_without_credentials(chosen: str, said: str) -> None:
    assert backend.shown(chosen) == said


def test_the_passphrase_advice_looks_at_the_stacks_on_the_chosen_backend(tmp_path: Path) -> None:
    """Stacks written on the shared folder need their passphrase: unsetting the variable is never advised then."""
    shared = tmp_path / "shared"
    (shared / ".pulumi" / "stacks" / "blueprint").mkdir(parents=True)
    (shared / ".pulumi" / "stacks" / "blueprint" / "phase1.json").write_text("{}")
    environ = {"PULUMI_CONFIG_PASSPHRASE_FILE": str(tmp_path / "gone"), "HOME": str(tmp_path), backend.VARIABLE: f"file://{shared}"}
    with pytest.raises(passphrase.PassphraseFileError) as refused:
        passphrase.environment(environ, work_dir=tmp_path / "checkout")
    assert "blueprint then makes and keeps its own" not in str(refused.value)
    assert f"the stacks in {str(shared)!r} need the passphrase they were written with" in str(refused.value)


def test_a_second_checkout_on_the_shared_backend_is_the_platforms_owner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, id_file: Path
) -> None:
    """Its id is the one phase1 recorded there: the namespaces' `blueprint/owner` and the folders' owner agree."""
    bring_up(tmp_path / "shared", ALICE)
    monkeypatch.setenv(backend.VARIABLE, f"file://{tmp_path / 'shared'}")
    ran: list[str] = []
    assert run(FolderRunner(), ran) == (0, "")
    assert (ran, id_file.read_text().strip()) == (["ran"], ALICE)


def test_a_machine_without_the_stacks_passphrase_is_refused_and_makes_no_new_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, private_config_home: Path
) -> None:
    """blueprint's own passphrase file would be made, and could not decrypt the stacks the first operator wrote."""
    bring_up(tmp_path / "shared", ALICE)
    monkeypatch.setenv(backend.VARIABLE, f"file://{tmp_path / 'shared'}")
    ran: list[str] = []
    code, said = run(FolderRunner(), ran)
    assert (code, ran) == (1, [])
    assert said.startswith(
        f"blueprint: the stacks on file://{tmp_path / 'shared'} were written with a passphrase this machine does not have"
    )
    assert "export PULUMI_CONFIG_PASSPHRASE_FILE=" in said
    assert list(private_config_home.rglob("*")) == []


def test_a_new_platform_on_a_chosen_backend_gets_an_id_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, id_file: Path) -> None:
    """Nothing recorded there yet: nothing taken, and the program makes a new id (two platforms, two ids)."""
    monkeypatch.setenv(backend.VARIABLE, f"file://{tmp_path / 'another'}")
    assert run(FolderRunner(), []) == (0, "")
    assert not id_file.exists()


def test_a_checkout_with_an_id_of_its_own_does_not_take_another_platforms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, id_file: Path
) -> None:
    bring_up(tmp_path / "shared", ALICE)
    monkeypatch.setenv(backend.VARIABLE, f"file://{tmp_path / 'shared'}?no_checksum=true")
    id_file.parent.mkdir(parents=True)
    id_file.write_text("fedcba9876543210\n")
    ran: list[str] = []
    code, said = run(FolderRunner(), ran)
    assert (code, ran, id_file.read_text().strip()) == (1, [], "fedcba9876543210")
    assert f"this checkout's id (fedcba9876543210, in {id_file}) is not the one the stacks on file://{tmp_path / 'shared'} " in said
    assert f"printf '%s\\n' {ALICE} > {id_file}" in said


def test_the_checkouts_own_backend_reads_no_state_for_the_id(tmp_path: Path, id_file: Path) -> None:
    """The id sits beside the default backend's state: nothing to take, no Pulumi call for it."""
    runner = FolderRunner()
    assert run(runner, []) == (0, "")
    assert runner.calls == []


@pytest.mark.parametrize("verb", [commands.UP, commands.PREVIEW, commands.DESTROY])
def test_every_verb_that_runs_a_program_takes_the_recorded_id_first(verb: Verb) -> None:
    assert verb.owns


def test_no_verb_that_only_reads_outputs_asks_for_the_id() -> None:
    assert not any(verb.owns for verb in (commands.STATUS, commands.CACHE, commands.KUBECONFIG))


def legacy_folder(root: Path, meta: str | None = None, stack: str = "phase1.json") -> Path:
    """A `file://` backend folder holding another project's stack `stack` under `.pulumi/stacks/`, with
    `meta` as its `.pulumi/meta.yaml` (None: no such file)."""
    stacks = root / ".pulumi" / "stacks"
    (stacks / Path(stack)).parent.mkdir(parents=True, exist_ok=True)
    (stacks / stack).write_text("{}")
    if meta is not None:
        (root / ".pulumi" / "meta.yaml").write_text(meta)
    return root


def test_a_file_backend_in_pulumis_legacy_layout_is_refused_before_pulumi_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, id_file: Path
) -> None:
    monkeypatch.setenv(backend.VARIABLE, f"file://{legacy_folder(tmp_path / 'shared')}")
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    ran: list[str] = []

    def program(*_: Any) -> int:
        ran.append("ran")
        return 0

    code = main_for(Verb(program), type("Args", (), {"command": "up"})())
    said = err.getvalue()
    assert (code, ran) == (1, [])
    assert f"the backend PULUMI_BACKEND_URL names (file://{tmp_path / 'shared'}) is in Pulumi's legacy layout" in said
    assert "`pulumi state upgrade`" in said
    assert "an empty folder of blueprint's own" in said


@pytest.mark.parametrize(("meta", "stack"), [(None, "phase1.json.gz"), ("version: 0\n", "dev.yaml")])
def test_a_legacy_layout_is_told_by_its_stack_files_or_a_meta_of_version_0(tmp_path: Path, meta: str | None, stack: str) -> None:
    assert backend.legacy_layout({backend.VARIABLE: f"file://{legacy_folder(tmp_path, meta, stack)}"}) is not None


@pytest.mark.parametrize(
    ("meta", "stack"), [("version: 1\n", "blueprint/phase1.json"), (None, "blueprint/phase1.json"), (None, "phase1.json.bak")]
)
def test_a_file_backend_in_project_layout_or_empty_is_taken(tmp_path: Path, meta: str | None, stack: str) -> None:
    assert backend.legacy_layout({backend.VARIABLE: f"file://{legacy_folder(tmp_path, meta, stack)}"}) is None
    assert backend.legacy_layout({backend.VARIABLE: f"file://{tmp_path / 'new'}"}) is None
    assert backend.legacy_layout({backend.VARIABLE: "s3://team-state/blueprint"}) is None
