"""The verbs that drive Pulumi (`blueprint up | preview | destroy | status`, run by `main_for`), the one
dispatch of cli/main.py, and the arguments each verb is given, against a fake runner (no Pulumi CLI here)."""

from __future__ import annotations

import argparse
import io
from collections.abc import Sequence
from pathlib import Path

import pytest

from cli import commands
from cli.main import VERBS, main, parser
from tests.cli.fake_runner import PHASE2, FakeRunner


def test_destroy_wipe_cache_is_refused_when_phase1_stays_before_any_stack_is_read(capsys: pytest.CaptureFixture[str]) -> None:
    args = argparse.Namespace(
        command="destroy", phase="2", preserve_data=True, wipe_data=False, wipe_cache=True, cluster_gone=False, yes=True
    )
    runner = FakeRunner(existing={"phase1": {}, "phase2": PHASE2})
    assert commands.main_for(commands.DESTROY, args, runner, io.StringIO()) == 1
    assert "--wipe-cache removes the image cache" in capsys.readouterr().err
    assert runner.calls == []


@pytest.mark.parametrize("argv", [["up", "--phase", "4"], ["destroy", "--preserve-data", "--wipe-data"], ["frobnicate"]])
def test_bad_arguments_are_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2


def test_every_command_of_the_parser_has_its_handler_in_the_one_dispatch() -> None:
    [verbs] = [action for action in parser()._actions if isinstance(action, argparse._SubParsersAction)]
    assert list(VERBS) == list(verbs.choices)


@pytest.mark.parametrize("verb", ["up", "preview", "destroy", "status", "kubeconfig"])
def test_each_verb_that_drives_pulumi_runs_its_own_verb_through_main_for(verb: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[commands.Verb] = []

    def main_for(chosen: commands.Verb, args: argparse.Namespace) -> int:
        ran.append(chosen)
        return 0

    monkeypatch.setattr(commands, "main_for", main_for)
    assert main([verb]) == 0
    assert ran == [getattr(commands, verb.upper())]


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    for command in ("up", "preview", "destroy", "plan", "doctor", "status", "diagram"):
        assert f"    {command} " in text


def test_help_gives_every_command_a_description_of_one_line(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """`blueprint --help` on an 80-column terminal: each verb, and what it does on one line (its own
    --help says the rest)."""
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit):
        main(["--help"])
    lines = capsys.readouterr().out.splitlines()
    listed = lines[lines.index("  COMMAND") + 1 : lines.index("options:")]
    described: dict[str, list[str]] = {}
    for line in filter(str.strip, listed):
        if line.startswith("    ") and not line.startswith("     "):  # a verb, and its text when it fits beside it
            name, _, text = line.strip().partition(" ")
            described[name] = [text.strip()] if text.strip() else []
        else:
            described[name].append(line.strip())
    assert list(described) == list(VERBS)
    assert {verb: len(text) for verb, text in described.items() if len(text) != 1 or not text[0]} == {}


def _verb(name: str) -> argparse.ArgumentParser:
    [verbs] = [action for action in parser()._actions if isinstance(action, argparse._SubParsersAction)]
    chosen: argparse.ArgumentParser = verbs.choices[name]
    return chosen


def _help_of(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """What `blueprint <argv> --help` prints, its lines joined as one."""
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    return " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("verb", list(VERBS))
def test_every_commands_help_says_what_it_does(verb: str, capsys: pytest.CaptureFixture[str]) -> None:
    """As docs/reference/cli.md promises: --help gives the same text."""
    description = _verb(verb).description
    assert description
    assert " ".join(description.split()) in _help_of([verb], capsys)


@pytest.mark.parametrize("verb", list(VERBS))
def test_every_commands_own_help_begins_as_a_sentence(verb: str) -> None:
    """Each verb's --help (and docs/reference/cli.md) opens with a capital, whichever text it uses."""
    description = str(_verb(verb).description)
    assert description[0].isupper(), description


def _listed(verb: str) -> str:
    [verbs] = [action for action in parser()._actions if isinstance(action, argparse._SubParsersAction)]
    [line] = [choice.help for choice in verbs._choices_actions if choice.dest == verb]
    return str(line)


def test_images_line_says_what_it_lists_of_each_image() -> None:
    assert _listed("images").endswith(": its registry, and whether the cache serves it")


def test_plan_line_says_it_needs_no_pulumi_cli() -> None:
    """`plan` runs the real program under mocks: the Pulumi SDK, never the CLI."""
    assert "(no Pulumi CLI, no cluster)" in _listed("plan")


def test_status_line_begins_with_a_verb_as_every_other_does() -> None:
    assert _listed("status").split()[0] == "show"


def test_status_help_names_everything_status_shows(capsys: pytest.CaptureFixture[str]) -> None:
    """cli/status.py: each phase and the release that brought it up, GitLab, OpenBao, the Runners, the apps, the image cache."""
    text = _help_of(["status"], capsys)
    for part in ("release", "GitLab", "OpenBao", "Runners", "apps", "image cache"):
        assert part in text


def test_kubeconfig_output_help_says_a_kubeconfig_of_other_clusters_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """cli/kubeconfig.py `write_kubeconfig` refuses it: writing over it would lose their credentials."""
    assert "a kubeconfig that holds another cluster" in _help_of(["kubeconfig"], capsys)


def test_a_failed_up_through_the_cli_names_the_phase_the_resource_and_the_resume_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cli.doctor.run", lambda stacks: 0)
    runner = FakeRunner(failing="phase2")
    out = io.StringIO()
    args = argparse.Namespace(command="up", phase="all", glab_login=False)
    assert commands.main_for(commands.UP, args, runner, out) == 1
    text = out.getvalue()
    assert "phase2-chart" in text
    assert "  uv run blueprint up\n" in text, "after a whole up stopped, the whole up again: phase3 is still to do"


def test_a_failed_up_of_one_phase_resumes_that_phase(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cli.doctor.run", lambda stacks: 0)
    out = io.StringIO()
    args = argparse.Namespace(command="up", phase="2", glab_login=False)
    assert commands.main_for(commands.UP, args, FakeRunner({"phase1": {}}, failing="phase2"), out) == 1
    assert "uv run blueprint up --phase 2" in out.getvalue()


def test_status_through_the_cli_needs_no_doctor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cli.doctor.run", lambda stacks: pytest.fail("status must not run the doctor"))
    out = io.StringIO()
    assert commands.main_for(commands.STATUS, argparse.Namespace(command="status"), FakeRunner(), out) == 0
    assert "phase1: not up" in out.getvalue()


def test_up_checks_every_selected_phase_with_its_doctor_before_any_stack_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[Sequence[str]] = []

    def doctor(stacks: Sequence[str]) -> int:
        asked.append(stacks)
        return 1

    monkeypatch.setattr("cli.doctor.run", doctor)
    runner = FakeRunner()
    assert commands.main_for(commands.UP, argparse.Namespace(command="up", phase="all", glab_login=False), runner, io.StringIO()) == 1
    assert asked == [("phase1", "phase2", "phase3")]
    assert runner.calls == []


def test_a_bad_phase3_value_stops_the_preview_of_every_phase_before_phase1_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("stacks.config.schema.STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.phase3.yaml").write_text("config:\n  blueprint:pipelineTimeout: 5\n")
    runner = FakeRunner()
    assert commands.main_for(commands.PREVIEW, argparse.Namespace(command="preview", phase="all"), runner, io.StringIO()) == 1
    assert "blueprint:pipelineTimeout = '5' is not valid" in capsys.readouterr().err
    assert runner.calls == []


def test_up_logs_glab_in_by_default_and_no_glab_login_leaves_it_alone() -> None:
    assert parser().parse_args(["up"]).glab_login is True
    assert parser().parse_args(["up", "--no-glab-login"]).glab_login is False


def test_destroys_help_says_the_image_cache_is_kept_and_how_to_wipe_it(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["destroy", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "the image cache (the registry mirrors' images) is kept whatever preserveData says: --wipe-cache removes it" in text
    assert "--wipe-cache also remove the image cache folder (blueprint:imageCacheDir)" in text


def test_cache_prune_stack_dev_prunes_devs_own_mirrors(monkeypatch: pytest.MonkeyPatch) -> None:
    """dev runs its own mirrors; `cache prune --stack dev` reads dev's outputs, not phase1's."""
    seen: list[object] = []

    def prune(phase1: object, *_: object) -> tuple[int, list[str]]:
        seen.append(phase1)
        return 0, ["pruned"]

    monkeypatch.setattr("cli.image_cache.prune", prune)
    args = parser().parse_args(["cache", "prune", "--stack", "dev"])
    dev = {"imageMirrors": {"docker.io": "172.16.30.98:5000"}}
    assert commands.main_for(commands.CACHE, args, FakeRunner(existing={"dev": dev}), io.StringIO()) == 0
    assert seen == [dev]


def test_the_cache_help_gives_the_mirrors_own_expiry(capsys: pytest.CaptureFixture[str]) -> None:
    """The help's "30 days" is the mirrors' configured proxy TTL, not a number of its own."""
    from components.image_cache import CACHE_TTL

    assert f"{int(CACHE_TTL.removesuffix('h')) // 24} days" in _help_of(["cache"], capsys)
