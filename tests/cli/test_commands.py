"""`blueprint up | preview | status`: phase order, failure help and the summary, against a fake
runner (no Pulumi CLI here). Every destroy route is in test_teardown.py."""

from __future__ import annotations

import argparse
import io
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from apps_manifest import load_manifest
from cli import commands
from cli.commands import Context, StackFailed
from cli.main import main
from stacks import outputs

PHASE2 = {
    outputs.GITLAB_URL: "https://gitlab.local.example.net",
    outputs.REGISTRY_HOST: "registry.local.example.net",
    outputs.OPENBAO_ADDR: "http://127.0.0.1:8200",
    outputs.CA_CERT_FILE: "/data/platform/ca.crt",
    outputs.ADMIN_TOKEN_FILE: "/data/platform/secrets/gitlab-admin-token",
    outputs.GITLAB_ROOT_PASSWORD_FILE: "/data/platform/secrets/gitlab-root-password",
    outputs.OPENBAO_ADMIN_PASSWORD_FILE: "/data/platform/secrets/openbao-admin-password",
    outputs.APPS_GROUP_ID: "7",
}
"""phase2's outputs: where root's token and password are kept, never what they are."""


def phase2_with_token(folder: Path, kept: str = "secret-value") -> dict[str, Any]:
    """PHASE2, its admin token file in `folder`, holding `kept` as phase2 writes it (no prefix)."""
    token_file = folder / "gitlab-admin-token"
    token_file.write_text(kept + "\n")
    return {**PHASE2, outputs.ADMIN_TOKEN_FILE: str(token_file)}


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
    assert "cat /data/platform/secrets/gitlab-root-password" in text
    assert 'echo "glpat-$(cat /data/platform/secrets/gitlab-admin-token)"' in text
    assert "--show-secrets" not in text
    assert "secret/gitlab/bootstrap/admin_token" in text
    assert "127.0.0.1 gitlab.local.example.net registry.local.example.net kas.local.example.net guestbook.local.example.net" in text
    assert "/data/platform/ca.crt" in text
    assert "glpat-secret-value" not in text
    assert "root-secret-value" not in text


def test_the_summary_names_headlamp_and_puts_it_on_the_hosts_line_only_when_phase1_installed_it() -> None:
    hosts_line = "127.0.0.1 gitlab.local.example.net registry.local.example.net kas.local.example.net"
    without = commands.summary({"phase1": {outputs.HEADLAMP: False}, "phase2": PHASE2})
    assert f"{hosts_line}\n" in without
    assert "headlamp" not in without.lower()
    with_headlamp = commands.summary({"phase1": {outputs.HEADLAMP: True}, "phase2": PHASE2})
    assert f"{hosts_line} headlamp.local.example.net\n" in with_headlamp
    assert "Headlamp:  https://headlamp.local.example.net" in with_headlamp


def test_the_smoke_tally_counts_the_manifests_projects_that_have_a_green_pipeline() -> None:
    projects = ["shared-code", "guestbook", "redis", "redis-slave"]
    green = {name: f"https://gitlab.x/blueprint-apps/{name}/-/pipelines/1" for name in projects}
    assert commands.smoke_tally(projects, green) == "4/4 smoke pipelines green"
    del green["shared-code"]
    assert commands.smoke_tally(projects, green) == (
        "3/4 smoke pipelines green (none recorded for shared-code: `uv run blueprint up --phase 3` runs them)"
    )


def phase3_up() -> dict[str, Any]:
    """phase3's outputs: a green pipeline for every project of the real manifest, and the guestbook's URL."""
    names = [project.name for project in load_manifest()]
    return {
        outputs.APP_URLS: {"guestbook": "https://guestbook.local.example.net"},
        outputs.PIPELINES: {name: f"https://gitlab.local.example.net/blueprint-apps/{name}/-/pipelines/1" for name in names},
    }


def test_up_ends_with_the_tally_of_every_manifest_projects_smoke_pipeline() -> None:
    runner = FakeRunner(existing={"phase2": PHASE2, "phase3": phase3_up()})
    ctx, out = context(runner, probe=lambda url, ca, headers: "ok")
    assert commands.up(ctx, "3") == 0
    assert out.getvalue().splitlines()[-1] == f"{len(load_manifest())}/{len(load_manifest())} smoke pipelines green"


def test_up_checks_each_app_url_from_the_laptop_through_the_gateway_with_our_ca() -> None:
    runner = FakeRunner(existing={"phase2": PHASE2, "phase3": phase3_up()})
    asked: list[tuple[str, str, dict[str, str]]] = []

    def probe(url: str, ca: str, headers: Mapping[str, str]) -> str:
        asked.append((url, ca, dict(headers)))
        return "HTTP 503"

    ctx, out = context(runner, probe=probe)
    assert commands.up(ctx, "3") == 0
    assert asked == [("https://guestbook.local.example.net/healthz", "/data/platform/ca.crt", {})]
    assert "  app guestbook: https://guestbook.local.example.net  (/healthz from this laptop: HTTP 503)" in out.getvalue().splitlines()


def test_status_reports_each_phase_and_each_health(tmp_path: Path) -> None:
    phase2 = phase2_with_token(tmp_path)
    runner = FakeRunner(existing={"phase1": {}, "phase2": phase2, "phase3": {outputs.APP_URLS: {"guestbook": "https://guestbook.x"}}})
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
        "api/v4/groups/7/runners?type=group_type&status=online",
        "healthz",
    ]


def test_the_cli_calls_gitlab_with_the_admin_token_of_phase2s_file(tmp_path: Path) -> None:
    runner = FakeRunner(existing={"phase2": phase2_with_token(tmp_path, "FromTheFile42")})
    sent: dict[str, str] = {}

    def probe(url: str, ca: str, headers: Mapping[str, str]) -> str:
        sent[url.split("/", 3)[-1]] = dict(headers).get("PRIVATE-TOKEN", "")
        return "ok"

    commands.status(runner, probe)
    assert sent["api/v4/version"] == sent["api/v4/groups/7/runners?type=group_type&status=online"] == "glpat-FromTheFile42"
    assert sent["v1/sys/seal-status"] == ""


def test_status_without_the_admin_token_file_says_which_file_and_what_to_run(tmp_path: Path) -> None:
    missing = tmp_path / "gitlab-admin-token"
    runner = FakeRunner(existing={"phase2": {**PHASE2, outputs.ADMIN_TOKEN_FILE: str(missing)}})
    probed: list[str] = []

    def probe(url: str, ca: str, headers: Mapping[str, str]) -> str:
        probed.append(url)
        return "ok"

    text = commands.status(runner, probe)
    assert (
        f"  GitLab:  unknown: phase2 is not up, or its data folder is not on this machine: {missing}; "
        "run `uv run blueprint up` / `pulumi up -s phase2` first"
    ) in text.splitlines()
    assert "  Runners: unknown: no admin token (above)" in text.splitlines()
    assert [url.split("/", 3)[-1] for url in probed] == ["v1/sys/seal-status"]


def test_the_summary_prints_commands_that_show_the_root_password_and_token_from_their_files(tmp_path: Path) -> None:
    folder = tmp_path / "it's $(touch pwned) `id`"
    folder.mkdir()
    (folder / "gitlab-root-password").write_text("RootPassword1\n")
    phase2 = {**phase2_with_token(folder, "Token2"), outputs.GITLAB_ROOT_PASSWORD_FILE: str(folder / "gitlab-root-password")}
    text = commands.summary({"phase1": {}, "phase2": phase2, "phase3": {}})
    shown = {}
    for command in (commands.root_password_command(phase2), commands.admin_token_command(phase2)):
        assert command in text
        shown[command] = subprocess.run(["/bin/sh", "-c", command], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert sorted(shown.values()) == ["RootPassword1\n", "glpat-Token2\n"]
    assert not (tmp_path / "pwned").exists()


def test_status_says_which_blueprint_release_brought_each_stack_up() -> None:
    runner = FakeRunner(existing={"phase1": {outputs.BLUEPRINT_VERSION: "0.1.0"}})
    text = commands.status(runner, lambda *_: "ok", lambda phase1: [])
    assert text.splitlines() == ["phase1: up, by blueprint 0.1.0", "phase2: not up", "phase3: not up"]


def test_status_of_nothing_says_not_up() -> None:
    text = commands.status(FakeRunner(), lambda *_: "ok", lambda phase1: [])
    assert text.splitlines() == ["phase1: not up", "phase2: not up", "phase3: not up"]


def test_status_ends_with_the_image_cache_read_from_phase1s_outputs_or_none_when_it_is_not_up() -> None:
    seen: list[Any] = []

    def cache(phase1: Mapping[str, Any] | None) -> list[str]:
        seen.append(phase1)
        return ["image cache: /cache, 1.0 GiB on disk"]

    up = {outputs.IMAGE_CACHE_DIR: "/cache"}
    text = commands.status(FakeRunner(existing={"phase1": up}), lambda *_: "ok", cache)
    assert text.splitlines()[-1] == "image cache: /cache, 1.0 GiB on disk"
    commands.status(FakeRunner(), lambda *_: "ok", cache)
    assert seen == [up, None]


def test_destroy_wipe_cache_reaches_the_destroy_which_refuses_it_when_phase1_stays() -> None:
    out = io.StringIO()
    args = argparse.Namespace(
        command="destroy", phase="2", preserve_data=True, wipe_data=False, wipe_cache=True, cluster_gone=False, yes=True
    )
    runner = FakeRunner(existing={"phase1": {}, "phase2": PHASE2})
    assert commands.main_for(args, runner, out) == 1
    assert "--wipe-cache removes the image cache" in out.getvalue()
    assert ("destroy", "phase2") not in runner.calls


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
    monkeypatch.setattr("cli.doctor.run", lambda stacks: 0)
    runner = FakeRunner(failing="phase2")
    out = io.StringIO()
    args = argparse.Namespace(command="up", phase="all", glab_login=False)
    assert commands.main_for(args, runner, out) == 1
    text = out.getvalue()
    assert "phase2-chart" in text
    assert "  uv run blueprint up\n" in text, "after a whole up stopped, the whole up again: phase3 is still to do"


def test_a_failed_up_of_one_phase_resumes_that_phase(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cli.doctor.run", lambda stacks: 0)
    out = io.StringIO()
    assert commands.main_for(argparse.Namespace(command="up", phase="2", glab_login=False), FakeRunner(failing="phase2"), out) == 1
    assert "uv run blueprint up --phase 2" in out.getvalue()


def test_status_through_the_cli_needs_no_doctor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cli.doctor.run", lambda stacks: pytest.fail("status must not run the doctor"))
    out = io.StringIO()
    assert commands.main_for(argparse.Namespace(command="status"), FakeRunner(), out) == 0
    assert "phase1: not up" in out.getvalue()


def test_glab_login_passes_the_token_on_stdin_and_trusts_our_ca(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    calls: list[tuple[list[str], str | None]] = []

    def run(argv: list[str], **kwargs: Any) -> Any:
        calls.append((argv, kwargs.get("input")))
        return None

    assert commands.glab_login(phase2_with_token(tmp_path), run) == "glab is logged in to gitlab.local.example.net as root"
    assert calls[0][0] == ["glab", "config", "set", "ca_cert", "/data/platform/ca.crt", "--host", "gitlab.local.example.net"]
    assert calls[1] == (["glab", "auth", "login", "--hostname", "gitlab.local.example.net", "--stdin"], "glpat-secret-value")


def test_glab_login_without_glab_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda name: None)
    assert "glab is not installed" in commands.glab_login(PHASE2)


def test_a_glab_that_fails_is_said_and_the_up_still_stands(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")

    def run(argv: list[str], **kwargs: Any) -> Any:
        raise subprocess.CalledProcessError(1, argv, stderr="error: could not authenticate")

    said = commands.glab_login(phase2_with_token(tmp_path), run)
    assert "could not authenticate" in said
    assert "secret-value" not in said


def test_glab_login_without_the_admin_token_file_says_which_file_and_what_to_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    calls: list[list[str]] = []

    def run(argv: list[str], **kwargs: Any) -> Any:
        calls.append(argv)

    said = commands.glab_login(PHASE2, run)
    assert said == (
        "glab could not be logged in to gitlab.local.example.net: phase2 is not up, or its data folder is not on this machine: "
        "/data/platform/secrets/gitlab-admin-token; run `uv run blueprint up` / `pulumi up -s phase2` first; the platform is up regardless"
    )
    assert calls == []


def test_up_checks_every_selected_phase_with_its_doctor_before_any_stack_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[Sequence[str]] = []

    def doctor(stacks: Sequence[str]) -> int:
        asked.append(stacks)
        return 1

    monkeypatch.setattr("cli.doctor.run", doctor)
    runner = FakeRunner()
    assert commands.main_for(argparse.Namespace(command="up", phase="all", glab_login=False), runner, io.StringIO()) == 1
    assert asked == [("phase1", "phase2", "phase3")]
    assert runner.calls == []


def test_a_bad_phase3_value_stops_the_preview_of_every_phase_before_phase1_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("stacks.config.STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.phase3.yaml").write_text("config:\n  blueprint:pipelineTimeout: 5\n")
    runner = FakeRunner()
    assert commands.main_for(argparse.Namespace(command="preview", phase="all"), runner, io.StringIO()) == 1
    assert "blueprint:pipelineTimeout = '5' is not valid" in capsys.readouterr().err
    assert runner.calls == []


def test_up_logs_glab_in_by_default_and_no_glab_login_leaves_it_alone() -> None:
    from cli.main import parser

    assert parser().parse_args(["up"]).glab_login is True
    assert parser().parse_args(["up", "--no-glab-login"]).glab_login is False


def test_glab_login_touches_the_platform_host_alone(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    (tmp_path / "token").write_text("abc\n")
    ran: list[list[str]] = []

    def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        ran.append(argv)
        return subprocess.CompletedProcess(argv, 0, "", "")

    phase2 = {
        outputs.GITLAB_URL: "https://gitlab.local.example.net",
        outputs.CA_CERT_FILE: "/ca.crt",
        outputs.ADMIN_TOKEN_FILE: str(tmp_path / "token"),
    }
    commands.glab_login(phase2, run=run)
    hosts = [argv[argv.index("--host" if "--host" in argv else "--hostname") + 1] for argv in ran]
    assert len(hosts) == 2
    assert set(hosts) == {"gitlab.local.example.net"}


def test_the_summary_of_a_cluster_alone_gives_the_kubeconfig_command_that_parses() -> None:
    from cli.main import parser

    text = commands.summary({"phase1": {outputs.CLUSTER_NAME: "blueprint"}})
    command = text.split("(for kubectl: uv run ", 1)[1].split(")", 1)[0]
    assert parser().parse_args(command.split()[1:]).command == "kubeconfig"


def test_destroys_help_says_the_image_cache_is_kept_and_how_to_wipe_it(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["destroy", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "the image cache (the registry mirrors' images) is kept whatever preserveData says: --wipe-cache removes it" in text
    assert "--wipe-cache also remove the image cache folder (blueprint:imageCacheDir)" in text
