"""`blueprint up | preview | status`: phase order, failure help and the summary, against a fake
runner (no Pulumi CLI here). Every destroy route is in test_teardown.py."""

from __future__ import annotations

import argparse
import io
import subprocess
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from cli import commands
from cli.commands import Context, StackFailed
from cli.main import main
from stacks import outputs

PHASE2 = {
    outputs.GITLAB_URL: "https://gitlab.local.example.net",
    outputs.REGISTRY_HOST: "registry.local.example.net",
    outputs.OPENBAO_ADDR: "http://127.0.0.1:8200",
    outputs.CA_CERT_FILE: "/data/platform/ca.crt",
    outputs.ADMIN_TOKEN: "glpat-secret-value",
    outputs.GITLAB_ROOT_PASSWORD: "root-secret-value",
}


class FakeRunner:
    def __init__(self, existing: Mapping[str, dict[str, Any]] | None = None, failing: str | None = None) -> None:
        self.calls: list[tuple[str, str]] = []
        self.existing = dict(existing or {})
        self.failing = failing
        self.config: dict[tuple[str, str], str] = {}
        self.destroy_env: dict[str, str] = {}

    def _do(self, verb: str, stack: str) -> None:
        self.calls.append((verb, stack))
        if stack == self.failing:
            raise StackFailed(stack, f"  kubernetes:helm.sh/v3:Release ({stack}-chart):\n    error: timed out waiting for the condition")

    def up(self, stack: str, on_output: Callable[[str], None]) -> None:
        self._do("up", stack)
        self.existing.setdefault(stack, {})

    def preview(self, stack: str, on_output: Callable[[str], None]) -> None:
        self._do("preview", stack)

    def destroy(self, stack: str, on_output: Callable[[str], None], env: Mapping[str, str]) -> None:
        self._do("destroy", stack)
        self.destroy_env = dict(env)

    def set_config(self, stack: str, key: str, value: str) -> None:
        self.config[(stack, key)] = value

    def outputs(self, stack: str) -> dict[str, Any] | None:
        return self.existing.get(stack)

    def export_state(self, stack: str) -> dict[str, Any]:
        return {"version": 3, "deployment": {"resources": []}}

    def import_state(self, stack: str, state: dict[str, Any]) -> None:
        self.calls.append(("import", stack))


def context(runner: FakeRunner, **extra: Any) -> tuple[Context, io.StringIO]:
    out = io.StringIO()
    return Context(runner=runner, out=out, **extra), out


def test_up_runs_every_phase_in_order() -> None:
    runner = FakeRunner()
    assert commands.up(context(runner)[0], "all") == 0
    assert runner.calls == [("up", "phase1"), ("up", "phase2"), ("up", "phase3")]


def test_up_of_one_phase_runs_only_that_stack() -> None:
    runner = FakeRunner()
    commands.up(context(runner)[0], "2")
    assert runner.calls == [("up", "phase2")]


def test_up_stops_when_the_doctor_finds_a_missing_prerequisite() -> None:
    runner = FakeRunner()
    ctx, out = context(runner, doctor=lambda: 1)
    assert commands.up(ctx, "all") == 1
    assert runner.calls == []
    assert "blueprint doctor" in out.getvalue()


def test_a_failed_phase_stops_the_next_and_is_explained() -> None:
    runner = FakeRunner(failing="phase2")
    ctx, out = context(runner, explain=lambda phase, stack, output, resume: f"EXPLAINED {phase} {stack}")
    assert commands.up(ctx, "all") == 1
    assert runner.calls == [("up", "phase1"), ("up", "phase2")]
    assert "EXPLAINED 2 phase2" in out.getvalue()


def test_preview_runs_in_order_and_changes_nothing() -> None:
    runner = FakeRunner()
    commands.preview(context(runner)[0], "all")
    assert runner.calls == [("preview", "phase1"), ("preview", "phase2"), ("preview", "phase3")]


def test_the_summary_says_where_things_and_credentials_are_never_the_credentials() -> None:
    text = commands.summary(
        {"phase1": {}, "phase2": PHASE2, "phase3": {outputs.APP_URLS: {"guestbook": "https://guestbook.local.example.net"}}}
    )
    assert "https://gitlab.local.example.net" in text
    assert "pulumi stack output -s phase2 adminToken --show-secrets" in text
    assert "secret/gitlab/bootstrap/admin_token" in text
    assert "127.0.0.1 gitlab.local.example.net registry.local.example.net kas.local.example.net guestbook.local.example.net" in text
    assert "/data/platform/ca.crt" in text
    assert "glpat-secret-value" not in text
    assert "root-secret-value" not in text


def test_status_reports_each_phase_and_each_health() -> None:
    runner = FakeRunner(existing={"phase1": {}, "phase2": PHASE2, "phase3": {outputs.APP_URLS: {"guestbook": "https://guestbook.x"}}})
    probed: list[str] = []

    def probe(url: str, ca: str, headers: Mapping[str, str]) -> str:
        probed.append(url)
        return "ok"

    text = commands.status(runner, probe)
    assert "phase1: up" in text
    assert "phase3: up" in text
    assert [url.split("/", 3)[-1] for url in probed] == [
        "api/v4/version",
        "v1/sys/seal-status",
        "api/v4/runners/all?type=instance_type&status=online",
        "healthz",
    ]


def test_status_of_nothing_says_not_up() -> None:
    assert commands.status(FakeRunner(), lambda *_: "ok").splitlines() == ["phase1: not up", "phase2: not up", "phase3: not up"]


@pytest.mark.parametrize("argv", [["up", "--phase", "4"], ["destroy", "--preserve-data", "--wipe-data"], ["frobnicate"]])
def test_bad_arguments_are_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    for command in ("up", "preview", "destroy", "plan", "doctor", "status", "diagram"):
        assert f"    {command} " in text


def test_a_failed_up_through_the_cli_names_the_phase_the_resource_and_the_resume_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cli.doctor.run", lambda argv: 0)
    runner = FakeRunner(failing="phase2")
    out = io.StringIO()
    args = argparse.Namespace(command="up", phase="all", glab_login=False)
    assert commands.main_for(args, runner, out) == 1
    text = out.getvalue()
    assert "phase2-chart" in text
    assert "  uv run blueprint up\n" in text, "after a whole up stopped, the whole up again: phase3 is still to do"


def test_a_failed_up_of_one_phase_resumes_that_phase(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cli.doctor.run", lambda argv: 0)
    out = io.StringIO()
    assert commands.main_for(argparse.Namespace(command="up", phase="2", glab_login=False), FakeRunner(failing="phase2"), out) == 1
    assert "uv run blueprint up --phase 2" in out.getvalue()


def test_status_through_the_cli_needs_no_doctor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cli.doctor.run", lambda argv: pytest.fail("status must not run the doctor"))
    out = io.StringIO()
    assert commands.main_for(argparse.Namespace(command="status"), FakeRunner(), out) == 0
    assert "phase1: not up" in out.getvalue()


def test_glab_login_passes_the_token_on_stdin_and_trusts_our_ca(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    calls: list[tuple[list[str], str | None]] = []

    def run(argv: list[str], **kwargs: Any) -> Any:
        calls.append((argv, kwargs.get("input")))
        return None

    assert commands.glab_login(PHASE2, run) == "glab is logged in to gitlab.local.example.net as root"
    assert calls[0][0] == ["glab", "config", "set", "ca_cert", "/data/platform/ca.crt", "--host", "gitlab.local.example.net"]
    assert calls[1] == (["glab", "auth", "login", "--hostname", "gitlab.local.example.net", "--stdin"], "glpat-secret-value")


def test_glab_login_without_glab_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda name: None)
    assert "glab is not installed" in commands.glab_login(PHASE2)


def test_a_glab_that_fails_is_said_and_the_up_still_stands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")

    def run(argv: list[str], **kwargs: Any) -> Any:
        raise subprocess.CalledProcessError(1, argv, stderr="error: could not authenticate")

    said = commands.glab_login(PHASE2, run)
    assert "could not authenticate" in said
    assert "glpat-secret-value" not in said
