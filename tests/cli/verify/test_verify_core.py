"""`blueprint verify`'s core: the runner (parallel, a timeout each, never stopping at a failure,
skipping what a failure makes meaningless), the report (its schema, its tally, no secret), and the
command on a machine where nothing runs."""

from __future__ import annotations

import datetime
import io
import json
import threading
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from cli.main import parser
from cli.verify import run as verify_command
from cli.verify.model import FAIL, PASS, SKIP, Result, Spec, Verdict, failed, passed, run_all, tally, warned
from cli.verify.report import SCHEMA, Secrets, report, to_table
from providers import poll
from tests.cli.doctor.fakes import FakeMachine

WHEN = datetime.datetime(2026, 12, 2, 4, 0, tzinfo=datetime.UTC)
PLATFORM = {
    "os": "linux", "arch": "x86_64", "family": "Debian/Ubuntu", "distro": "Debian 12", "container_engine": "docker",
    "container_engine_version": "Docker version 29.1.3", "kind_version": None, "pulumi_version": None,
    "kubectl_version": None, "cpus": 8, "memory_bytes": 16 * 1024**3,
}  # fmt: skip


class JumpingClock:
    """A clock 100 s further on at each reading: any check still running at the runner's next look is past its timeout."""

    def __init__(self) -> None:
        self.time = 0.0

    def now(self) -> float:
        self.time += 100
        return self.time

    def sleep(self, seconds: float) -> None:
        self.time += seconds


@pytest.fixture
def jumping(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(poll, "CLOCK", poll.Clock(JumpingClock().now, JumpingClock().sleep))


def test_independent_checks_run_at_once() -> None:
    both = threading.Barrier(2, timeout=30)  # only passes when the two checks run side by side

    def meet() -> Verdict:
        both.wait()
        return passed("met")

    results = run_all([Spec(name="a", run=meet), Spec(name="b", run=meet)], tick=0.01)
    assert [result.status for result in results] == [PASS, PASS]


def test_a_failure_stops_no_other_check() -> None:
    results = run_all([Spec(name="first", run=lambda: failed("broken", "fix it")), Spec(name="second", run=lambda: passed("fine"))])
    assert [(result.name, result.status) for result in results] == [("first", FAIL), ("second", PASS)]
    assert results[0].fix == "fix it"


def test_a_check_whose_need_failed_is_skipped_naming_it() -> None:
    results = run_all(
        [
            Spec(name="engine", run=lambda: failed("down", "start it")),
            Spec(name="nodes", run=lambda: passed("never asked"), needs=("engine",)),
            Spec(name="apps", run=lambda: passed("never asked"), needs=("nodes",)),
        ]
    )
    assert [(result.status, result.skipped_because) for result in results[1:]] == [(SKIP, "engine"), (SKIP, "engine")]
    assert "engine, which failed" in results[1].saw


def test_a_skip_names_the_check_that_failed_not_the_skip_between() -> None:
    results = run_all(
        [
            Spec(name="engine", run=lambda: failed("down", "start it")),
            Spec(name="nodes", run=lambda: passed("never asked"), needs=("engine",)),
            Spec(name="apps", run=lambda: passed("never asked"), needs=("nodes",)),
        ]
    )
    assert results[2].skipped_because == "engine"
    assert results[2].saw == "not checked: it needs engine, which failed (through nodes)"


def _needs(name: str) -> set[str]:
    from cli.verify import specs
    from tests.cli.verify.platforms import platform_on

    by_name = {spec.name: spec for _, spec in specs(platform_on())}
    found, todo = set(), [name]
    while todo:
        for need in by_name[todo.pop()].needs:
            if need not in found:
                found.add(need)
                todo.append(need)
    return found


@pytest.mark.parametrize(
    "name", ["PostgreSQL (CloudNativePG)", "Valkey AUTH", "MinIO buckets", "MinIO users", "GitLab SSH", "Headlamp", "CI variables"]
)
def test_a_check_that_reads_phase1s_outputs_needs_phase1s_stack(name: str) -> None:
    from cli.verify import data, services

    assert name in {
        data.POSTGRES,
        data.VALKEY,
        data.MINIO_BUCKETS,
        data.MINIO_USERS,
        services.SSH,
        services.HEADLAMP,
        services.CI_VARIABLES,
    }
    assert "stack phase1" in _needs(name)


@pytest.mark.parametrize("name", ["apps", "CA in the system store"])
def test_one_hosts_tls_failure_skips_neither_the_apps_nor_the_system_stores_trust(name: str) -> None:
    assert "TLS certificates" not in _needs(name)


def test_a_check_past_its_timeout_fails_with_a_fix(jumping: None) -> None:
    release = threading.Event()
    try:
        results = run_all(
            [Spec(name="stuck", run=lambda: (release.wait(), passed("late"))[1], timeout=30), Spec(name="quick", run=lambda: passed("ok"))],
            tick=0.01,
        )
    finally:
        release.set()
    assert results[0].status == FAIL
    assert "no answer within 30 s" in results[0].saw
    assert results[0].fix


def test_a_check_that_raises_is_a_failure_not_a_traceback() -> None:
    def broken() -> object:
        raise KeyError("gitlabUrl")

    [result] = run_all([Spec(name="broken", run=broken)])  # type: ignore[arg-type]
    assert result.status == FAIL
    assert "KeyError" in result.saw
    assert result.fix


def test_the_tally_counts_each_status() -> None:
    results = run_all([Spec(name=f"ok{i}", run=lambda: passed("ok")) for i in range(27)] + [Spec(name="w", run=lambda: warned("hm", "do"))])
    assert tally(results) == "27 pass, 1 warn, 0 fail"


def test_the_report_holds_to_its_schema() -> None:
    results = run_all([Spec(name="a", run=lambda: failed("x", "y")), Spec(name="b", run=lambda: passed("z"), needs=("a",))])
    document = report(results, PLATFORM, Secrets(), when=WHEN)
    jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).validate(document)
    assert document["when"] == "2026-12-02T04:00:00+00:00"
    assert document["summary"] == "0 pass, 0 warn, 1 fail, 1 skipped"


def test_the_table_ends_with_the_tally_and_shows_each_fix() -> None:
    results = run_all([Spec(name="engine", run=lambda: failed("down", "`sudo service docker start`"))])
    table = to_table(report(results, PLATFORM, Secrets(), when=WHEN))
    assert "FAIL  engine  down\n      fix: `sudo service docker start`\n0 pass, 0 warn, 1 fail\n" in table


def test_a_secret_a_check_read_is_masked_wherever_it_shows() -> None:
    secrets = Secrets()
    secret = secrets.add("hunter2-0123456789")
    results = run_all([Spec(name="leaky", run=lambda: failed(f"answered {secret}", f"use {secret}"))])
    shown = json.dumps(report(results, PLATFORM, secrets, when=WHEN))
    assert secret not in shown
    assert "[secret]" in shown


@pytest.fixture(scope="module")
def on_nothing() -> tuple[int, dict[str, Any]]:
    """`blueprint verify --json` on a machine with none of the tools: no engine, no Pulumi, no cluster."""
    out = io.StringIO()
    code = verify_command(parser().parse_args(["verify", "--json"]), out, machine=FakeMachine(tools={}, outputs={}))
    return code, json.loads(out.getvalue())


def test_verify_on_a_machine_where_nothing_runs_fails_with_each_fix(on_nothing: tuple[int, dict[str, Any]]) -> None:
    code, document = on_nothing
    checks = document["checks"]
    assert code == 1
    assert isinstance(checks, list)
    assert len(checks) >= 15
    assert all(check["fix"] for check in checks if check["status"] == FAIL)
    assert {check["name"] for check in checks if check["status"] == FAIL} >= {"container engine", "Pulumi CLI"}


def test_verify_reports_the_blueprint_version_platform_and_time(on_nothing: tuple[int, dict[str, Any]]) -> None:
    _, document = on_nothing
    jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).validate(document)
    assert {"blueprint_version", "platform", "when"} <= set(document)


def test_verify_is_listed_in_blueprint_help() -> None:
    assert "verify" in parser().format_help()


def test_a_phase_gets_its_own_checks_and_those_they_need() -> None:
    from cli.verify import chosen, specs
    from tests.cli.verify.platforms import platform_on

    names = [spec.name for spec in chosen(specs(platform_on()), "1")]
    assert names == [
        "container engine",
        "Pulumi CLI",
        "stack phase1",
        "cluster nodes",
        "cluster identity",
        "image cache",
        "nodes use the image cache",
    ]


def test_the_fast_checks_leave_the_slow_ones_to_verify_and_name_each_failure() -> None:
    from cli.verify import fast_tally
    from tests.cli.verify.platforms import platform_on

    line = fast_tally(platform_on(FakeMachine(tools={}, outputs={})), "all")
    assert line.startswith("checks: 0 pass, 0 warn, 2 fail, 26 skipped; failed: container engine, Pulumi CLI")
    assert line.endswith("(`uv run blueprint verify` shows each, with its fix)")


def test_the_dev_stack_is_one_stack_check_that_every_phases_checks_need() -> None:
    from cli.verify import chosen, specs
    from tests.cli.verify.platforms import platform_on

    checked = chosen(specs(platform_on(), dev=True), "all")
    assert [spec.name for spec in checked if spec.name.startswith("stack ")] == ["stack dev"]
    assert {need for spec in checked for need in spec.needs if need.startswith("stack ")} == {"stack dev"}


def test_output_writes_the_json_report_to_the_file(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    args = parser().parse_args(["verify", "--output", str(target)])
    assert verify_command(args, io.StringIO(), machine=FakeMachine(tools={}, outputs={})) == 1
    assert len(json.loads(target.read_text())["checks"]) >= 15


def test_the_report_names_no_container_engine_on_an_existing_cluster() -> None:
    from cli.verify import verify
    from stacks import outputs
    from tests.cli.fake_runner import FakeRunner
    from tests.cli.verify.platforms import EXISTING, platform_on
    from versions import BLUEPRINT

    runner = FakeRunner({"phase1": {**EXISTING, outputs.BLUEPRINT_VERSION: BLUEPRINT}})
    _, document = verify(platform_on(runner=runner), phase="1")
    assert (document["platform"]["container_engine"], document["platform"]["container_engine_version"]) == ("none", None)


def test_the_guide_has_a_row_for_each_check_and_claims_no_more_than_they_check() -> None:
    """docs/guide/verify.md is what a user reads of verify: each check a row, and, while promises are
    unchecked, no claim of every promise there, in the README or in `--help`."""
    from cli.verify import specs
    from stacks.config import PROJECT_DIR
    from tests.cli.verify.platforms import platform_on

    guide = (PROJECT_DIR / "docs/guide/verify.md").read_text()
    rows = {line.split("|")[1].strip() for line in guide.splitlines() if line.startswith("| ")}
    deep = platform_on()
    deep.deep = True
    names = {spec.name for _, spec in specs(deep)} - {"stack phase1", "stack phase2", "stack phase3"}
    assert names - rows == set()
    assert "## Not checked yet" in guide
    said = guide + (PROJECT_DIR / "README.md").read_text() + parser().format_help()
    assert "every promise" not in said


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"when": "yesterday"}, "when"),
        ({"summary": "1 pass, 0 warn, 0 fail and more"}, "summary"),
        ({"checks": []}, "checks"),
        ({"checks": [{"name": "a", "status": "pass", "saw": "ok", "fix": "", "skipped_because": "b"}]}, "a pass skipped for a check"),
        ({"checks": [{"name": "a", "status": "skip", "saw": "not checked", "fix": "do", "skipped_because": "b"}]}, "a skip with a fix"),
    ],
)
def test_the_schema_refuses_a_report_it_does_not_describe(change: dict[str, Any], where: str) -> None:
    document = report([Result(name="a", status=PASS, saw="ok")], PLATFORM, Secrets(), when=WHEN) | change
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).validate(document)


class SetClock:
    """A clock that says what the test (or a check) set it to; a sleep moves it on."""

    def __init__(self) -> None:
        self.time = 0.0

    def clock(self) -> poll.Clock:
        return poll.Clock(self.now, self.sleep)

    def now(self) -> float:
        return self.time

    def sleep(self, seconds: float) -> None:
        self.time += seconds


def test_the_run_ends_at_its_deadline_failing_what_runs_and_skipping_what_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """`stuck` starts once `quick` is in, and moves the clock past the run's 50 s: it is cut, and those
    waiting for it are skipped, each naming it."""
    clock, release = SetClock(), threading.Event()
    monkeypatch.setattr(poll, "CLOCK", clock.clock())

    def stuck() -> Verdict:
        clock.time = 60
        release.wait()
        return passed("late")

    try:
        results = run_all(
            [
                Spec(name="quick", run=lambda: passed("ok")),
                Spec(name="stuck", run=stuck, needs=("quick",), timeout=1000),
                Spec(name="waiting", run=lambda: passed("never asked"), needs=("stuck",)),
                Spec(name="further", run=lambda: passed("never asked"), needs=("waiting",)),
            ],
            tick=0.01,
            deadline=50,
        )
    finally:
        release.set()
    assert [(result.status, result.skipped_because) for result in results] == [(PASS, ""), (FAIL, ""), (SKIP, "stuck"), (SKIP, "stuck")]
    assert results[1].saw == "still running when the run's 50 s ran out"
    assert results[1].fix
    assert results[3].saw == "not checked: the run's 50 s ran out while it waited for stuck (through waiting)"


def test_a_check_cut_at_the_deadline_has_its_process_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A real process, which would run ten minutes: the run's end kills it (its group), not its own timeout."""
    from cli.doctor import machine
    from cli.doctor.machine import RealMachine

    # Past the deadline once the check's process runs, never before.
    monkeypatch.setattr(poll, "CLOCK", poll.Clock(lambda: 1000.0 if machine._RUNNING else 0.0, lambda _: None))
    said: list[tuple[int, str]] = []
    returned = threading.Event()

    def sleeper() -> Verdict:
        said.append(RealMachine().run(["sleep", "600"], timeout=600))
        returned.set()
        return passed("slept")

    [result] = run_all([Spec(name="sleeper", run=sleeper, timeout=5000)], tick=0.01, deadline=50)
    assert result.status == FAIL
    assert returned.wait(timeout=60)
    assert said[0][0] == -9
    assert not machine._RUNNING


def test_nothing_starts_once_blueprint_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    """At exit `end_runs(for_good=True)` kills what runs, and a check's thread still going starts nothing more."""
    from cli.doctor import machine

    monkeypatch.setattr(machine, "_ENDED", [True])
    code, said = machine.run_argv(["true"], 10, merged=True)
    assert code == 126
    assert "blueprint is ending" in said


def test_a_check_that_comes_after_others_waits_for_them_whatever_their_verdict() -> None:
    order: list[str] = []

    def note(name: str, verdict: Verdict) -> Verdict:
        order.append(name)
        return verdict

    results = run_all(
        [
            Spec(name="last", run=lambda: note("last", passed("ok")), after=("broken", "fine", "not in the run")),
            Spec(name="broken", run=lambda: note("broken", failed("no", "fix"))),
            Spec(name="fine", run=lambda: note("fine", passed("ok"))),
        ],
        tick=0.01,
    )
    assert order[-1] == "last"
    assert results[0].status == PASS


def _deep() -> Any:
    from tests.cli.verify.platforms import platform_on

    platform = platform_on()
    platform.deep = True
    return platform


def test_the_restart_is_a_check_of_deep_runs_alone() -> None:
    from cli.verify import restart, specs
    from tests.cli.verify.platforms import platform_on

    assert restart.OPENBAO_RESTART in {spec.name for _, spec in specs(_deep())}
    assert restart.OPENBAO_RESTART not in {spec.name for _, spec in specs(platform_on())}


def test_the_restart_comes_after_every_other_check_but_the_timed_commit_so_it_spoils_none() -> None:
    from cli.verify import gitlab, restart, specs

    every = [spec for _, spec in specs(_deep())]
    [restarted] = [spec for spec in every if spec.name == restart.OPENBAO_RESTART]
    assert set(restarted.after) == {spec.name for spec in every} - {restart.OPENBAO_RESTART, gitlab.EDIT_TO_DEPLOYED}
    assert not [spec.name for spec in every if restart.OPENBAO_RESTART in (*spec.needs, *spec.after)]


def test_ups_fast_tally_never_runs_a_deep_check() -> None:
    from cli.verify import fast_tally
    from tests.cli.verify.platforms import platform_on

    platform = platform_on(FakeMachine(tools={}, outputs={}))
    platform.deep = True
    assert fast_tally(platform, "all").startswith("checks: 0 pass, 0 warn, 2 fail, 26 skipped;")


class LookedAt(SetClock):
    """A SetClock that also tells when the runner (the thread that made it: the test's) has read it at `watch` or later."""

    def __init__(self) -> None:
        super().__init__()
        self.runner, self.seen_at, self.watch = threading.current_thread(), threading.Event(), float("inf")

    def now(self) -> float:
        if threading.current_thread() is self.runner and self.time >= self.watch:
            self.seen_at.set()
        return self.time


def _verify_slowly(monkeypatch: pytest.MonkeyPatch, *, deep: bool, slow: tuple[Any, str], at: float) -> dict[str, Any]:
    """verify()'s checks by name, on a platform whose stacks are up and whose OpenBao answers after 25 s,
    where `slow` (a check's module and function) is still running `at` seconds into the run when the
    runner next looks, and answers after that."""
    from cli.verify import services, verify
    from stacks import outputs
    from tests.cli.fake_runner import FakeRunner
    from tests.cli.verify.platforms import PHASE1, platform_on
    from versions import BLUEPRINT

    clock = LookedAt()
    monkeypatch.setattr(poll, "CLOCK", clock.clock())

    def took_25_s(_: Any) -> Verdict:
        clock.time = 25
        return passed("unsealed")

    def running_past(_: Any) -> Verdict:
        clock.watch = clock.time = at
        assert clock.seen_at.wait(timeout=30)  # real seconds: only a runner that never looks waits them
        return passed("answered")

    monkeypatch.setattr(services, "openbao_check", took_25_s)
    monkeypatch.setattr(*slow, running_past)
    stamp = {outputs.BLUEPRINT_VERSION: BLUEPRINT}
    runner = FakeRunner({"phase1": {**PHASE1, **stamp}, "phase2": stamp, "phase3": stamp})
    platform = platform_on(FakeMachine(), runner=runner)
    platform.deep = deep
    _, document = verify(platform, phase="2")
    return {check["name"]: check for check in document["checks"]}


def test_deep_gives_the_openbao_restart_its_minutes_past_the_runs_50_s(monkeypatch: pytest.MonkeyPatch) -> None:
    """A restart still running 200 s in (inside its own 220 s) gets its verdict: `--deep` lengthens the run."""
    from cli.verify import restart

    checks = _verify_slowly(monkeypatch, deep=True, slow=(restart, "openbao_restart_check"), at=200)
    assert (checks[restart.OPENBAO_RESTART]["status"], checks[restart.OPENBAO_RESTART]["saw"]) == (PASS, "answered")


def test_a_run_without_deep_ends_at_50_s(monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenBao's logins, started 25 s in and still running 52 s in (inside their own 30 s), are cut by the run's 50 s."""
    from cli.verify import services

    checks = _verify_slowly(monkeypatch, deep=False, slow=(services, "openbao_logins_check"), at=52)
    assert (checks[services.OPENBAO_LOGINS]["status"], checks[services.OPENBAO_LOGINS]["saw"]) == (
        FAIL,
        "still running when the run's 50 s ran out",
    )


def test_each_check_that_hangs_from_the_runs_start_is_cut_by_its_own_timeout_not_the_runs_50_s(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every check of a run without `--deep`, its needs met at once, that never answers: its line says
    its own timeout ("no answer within N s"), which therefore applies, before the run's deadline."""
    import dataclasses
    import functools

    from cli.verify import deadline, specs
    from tests.cli.verify.platforms import platform_on

    platform, release, lock = platform_on(), threading.Event(), threading.Lock()
    every = [spec for _, spec in specs(platform)]
    started: list[str] = []
    runner, clock = threading.current_thread(), SetClock()

    def hang(name: str) -> Verdict:
        with lock:
            started.append(name)
        release.wait(timeout=60)
        return passed("late")

    def now() -> float:  # once every check runs, each look of the runner is a second later
        if threading.current_thread() is runner and len(started) == len(every):
            clock.time += 1
        return clock.time

    monkeypatch.setattr(poll, "CLOCK", poll.Clock(now, clock.sleep))
    try:
        hung = [dataclasses.replace(spec, needs=(), run=functools.partial(hang, spec.name)) for spec in every]
        results = run_all(hung, tick=0.001, deadline=deadline(platform))
    finally:
        release.set()
    assert [(result.name, result.saw) for result in results if not result.saw.startswith("no answer within")] == []


def test_deep_is_the_commands_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    import cli.verify as verify_module

    seen: list[bool] = []

    def verify(platform: Any, **_: Any) -> tuple[int, dict[str, Any]]:
        seen.append(platform.deep)
        return 0, {"checks": [], "summary": ""}

    monkeypatch.setattr(verify_module, "verify", verify)
    monkeypatch.setattr(verify_module, "to_json", lambda document: "{}")
    for argv in (["verify", "--json"], ["verify", "--json", "--deep"]):
        verify_command(parser().parse_args(argv), io.StringIO(), machine=FakeMachine(tools={}, outputs={}))
    assert seen == [False, True]


def test_deeps_help_names_everything_it_changes() -> None:
    """`--help` is the consent text of `--deep`: the commit on an app's main, its pipeline, the redeploy."""
    import argparse

    verbs = next(action for action in parser()._actions if isinstance(action, argparse._SubParsersAction))
    deep = next(action for action in verbs.choices["verify"]._actions if "--deep" in action.option_strings)
    said = " ".join(str(deep.help).split())
    for change in ("OpenBao's pod", "empty commit as root", "app project's main", "pipeline", "redeploys the app"):
        assert change in said, said
