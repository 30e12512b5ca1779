"""`blueprint up | preview`: the phases in order, and the failure help, against a fake runner.
Every destroy route is in test_teardown.py."""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from apps_manifest import load_manifest
from cli import phases
from cli.phases import Context
from cli.teardown import ClusterState
from stacks import outputs
from tests.cli.fake_runner import PHASE2, FakeRunner, context
from tests.cli.teardown_fakes import FakePulumi, all_stacks, world


def test_up_runs_every_phase_in_order() -> None:
    runner = FakeRunner()
    assert phases.up(context(runner)[0], "all") == 0
    assert runner.calls == [("up", "phase1"), ("up", "phase2"), ("up", "phase3")]


def test_up_of_one_phase_runs_only_that_stack() -> None:
    runner = FakeRunner({"phase1": {}})
    phases.up(context(runner)[0], "2")
    assert runner.calls == [("up", "phase2")]


@pytest.mark.parametrize("verb", [phases.up, phases.preview], ids=["up", "preview"])
def test_one_phase_whose_upstream_is_not_up_is_refused_before_pulumi_runs(verb: Callable[[Context, str], int]) -> None:
    """Its program would refuse too, but only after Pulumi made the stack (and its encryptionsalt, and the passphrase)."""
    runner = FakeRunner({"phase1": {}})
    ctx, out = context(runner)
    assert verb(ctx, "3") == 1
    assert runner.calls == []
    assert "blueprint: phase2 is not up, and phase3 reads its outputs" in out.getvalue()
    assert "(`uv run blueprint up --phase 2`)" in out.getvalue()


def test_up_stops_when_the_doctor_finds_a_missing_prerequisite() -> None:
    runner = FakeRunner()
    ctx, out = context(runner, doctor=lambda: 1)
    assert phases.up(ctx, "all") == 1
    assert runner.calls == []
    assert "blueprint doctor" in out.getvalue()


class NoPulumi(FakeRunner):
    """A fresh machine: reading a stack needs the Pulumi CLI, which is not there."""

    def outputs(self, stack: str) -> dict[str, Any] | None:
        raise FileNotFoundError(2, "No such file or directory", "pulumi")


def test_up_on_a_fresh_machine_gives_the_doctors_whole_report_before_it_reads_a_stack() -> None:
    """The release check reads every stack through Pulumi: before the doctor, a missing Pulumi CLI
    would be all `up` says, and the doctor has every other thing to fix too (it changes nothing)."""
    said: list[str] = []

    def doctor() -> int:
        said.append("the doctor's report")
        return 1

    ctx, out = context(NoPulumi(), doctor=doctor)
    assert phases.up(ctx, "all") == 1
    assert said == ["the doctor's report"]
    assert "blueprint doctor found what stops a real run (above)" in out.getvalue()


def test_up_of_one_phase_stopped_by_the_doctor_says_to_run_that_same_up_again() -> None:
    ctx, out = context(FakeRunner(), doctor=lambda: 1)
    assert phases.up(ctx, "3") == 1
    assert "fix it and run `uv run blueprint up --phase 3` again" in out.getvalue()


def test_a_failed_preview_of_one_phase_resumes_with_that_same_preview() -> None:
    ctx, out = context(FakeRunner({"phase1": {}}, failing="phase2"), explain=lambda phase, stack, output, resume: f"resume: {resume}")
    assert phases.preview(ctx, "2") == 1
    assert "resume: the same `uv run blueprint preview --phase 2` again" in out.getvalue()


def test_a_failed_phase_stops_the_next_and_is_explained() -> None:
    runner = FakeRunner(failing="phase2")
    ctx, out = context(runner, explain=lambda phase, stack, output, resume: f"EXPLAINED {phase} {stack}")
    assert phases.up(ctx, "all") == 1
    assert runner.calls == [("up", "phase1"), ("up", "phase2")]
    assert "EXPLAINED 2 phase2" in out.getvalue()


def test_preview_runs_in_order_and_changes_nothing() -> None:
    runner = FakeRunner()
    phases.preview(context(runner)[0], "all")
    assert runner.calls == [("preview", "phase1"), ("preview", "phase2"), ("preview", "phase3")]


def phase3_up() -> dict[str, Any]:
    """phase3's outputs: a green pipeline for every project of the real manifest, and the guestbook's URL."""
    names = [project.name for project in load_manifest()]
    return {
        outputs.APP_URLS: {"guestbook": "https://guestbook.local.example.net"},
        outputs.PIPELINES: {name: f"https://gitlab.local.example.net/blueprint-apps/{name}/-/pipelines/1" for name in names},
    }


def test_up_ends_with_the_tally_of_every_manifest_projects_smoke_pipeline() -> None:
    runner = FakeRunner(existing={"phase2": PHASE2, "phase3": phase3_up()})
    ctx, out = context(runner, probe=lambda url, ca, headers, **_: "ok")
    assert phases.up(ctx, "3") == 0
    assert out.getvalue().splitlines()[-1] == f"{len(load_manifest())}/{len(load_manifest())} smoke pipelines green"


def test_up_checks_each_app_url_from_the_laptop_through_the_gateway_with_our_ca() -> None:
    runner = FakeRunner(existing={"phase2": PHASE2, "phase3": phase3_up()})
    asked: list[tuple[str, str, dict[str, str]]] = []

    def probe(url: str, ca: str, headers: Mapping[str, str]) -> str:
        asked.append((url, ca, dict(headers)))
        return "HTTP 503"

    ctx, out = context(runner, probe=probe)
    assert phases.up(ctx, "3") == 0
    assert asked == [("https://guestbook.local.example.net/healthz", "/data/platform/ca.crt", {})]
    assert "  app guestbook: https://guestbook.local.example.net  (/healthz from this laptop: HTTP 503)" in out.getvalue().splitlines()


def test_an_up_over_a_cluster_deleted_by_hand_names_the_destroy_that_keeps_the_data_then_the_up() -> None:
    """No `up` would make it again (its command has no change): every phase after phase1 would fail on it."""
    pulumi = FakePulumi(all_stacks())
    out = io.StringIO()
    context = Context(runner=pulumi, out=out, world=world(pulumi, cluster=ClusterState("gone"))[0], confirm=lambda question: True)
    assert phases.up(context, "all") == 1
    assert pulumi.calls == []
    assert out.getvalue() == (
        "blueprint: phase1 is up, but kind lists no cluster blueprint: it was deleted outside blueprint, and an `up` does not "
        "make it again while phase1's state records it. Take the platform down keeping its data, then bring it back: "
        "`uv run blueprint destroy --preserve-data`, then `uv run blueprint up`.\n"
    )


def test_an_up_whose_config_replaces_a_cluster_deleted_by_hand_goes_on_to_make_the_new_one() -> None:
    pulumi = FakePulumi(all_stacks())
    replacing = world(pulumi, cluster=ClusterState("gone"), gitlabNodes="2")[0]
    context = Context(runner=pulumi, out=io.StringIO(), world=replacing, confirm=lambda question: True)
    assert phases.up(context, "all") == 0
    assert [call for call in pulumi.calls if call[0] == "up"] == [("up", "phase1"), ("up", "phase2"), ("up", "phase3")]


def test_up_ends_with_the_tally_of_the_fast_checks_of_the_phase_it_brought_up() -> None:
    runner = FakeRunner(existing={"phase2": PHASE2, "phase3": phase3_up()})
    asked: list[str] = []

    def checks(phase: str) -> str:
        asked.append(phase)
        return "checks: 9 pass, 0 warn, 0 fail"

    ctx, out = context(runner, probe=lambda url, ca, headers, **_: "ok", checks=checks)
    assert phases.up(ctx, "3") == 0
    assert asked == ["3"]
    assert out.getvalue().splitlines()[-1] == "checks: 9 pass, 0 warn, 0 fail"


def test_up_says_after_its_summary_whether_the_image_cache_served_the_pulls() -> None:
    runner = FakeRunner(existing={"phase1": {outputs.CLUSTER_NAME: "blueprint"}, "phase2": PHASE2, "phase3": phase3_up()})
    read: list[Mapping[str, Any]] = []

    def cache_served(phase1: Mapping[str, Any]) -> str:
        read.append(phase1)
        return "image cache: its mirrors hold 6 of the 7 repositories the pods pull through them"

    ctx, out = context(runner, probe=lambda url, ca, headers, **_: "ok", cache_served=cache_served, checks=lambda phase: "checks: 9 pass")
    assert phases.up(ctx, "3") == 0
    assert read == [{outputs.CLUSTER_NAME: "blueprint"}]
    assert out.getvalue().splitlines()[-2:] == [
        "image cache: its mirrors hold 6 of the 7 repositories the pods pull through them",
        "checks: 9 pass",
    ]
