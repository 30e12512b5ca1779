"""The lifecycle of a verify run: what ends it, what it waits for, and what it leaves behind (review
S32 `life`): the deadline bounds the command, not only the checks; a given-up check holds no exit;
skips and cycles are named the same way whatever the timing; the deep checks end inside their own
timeouts and leave GitLab as a user can fix it."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from cli.verify import gitlab as gitlab_checks
from cli.verify import restart
from cli.verify.model import DEADLINE, FAIL, PASS, SKIP, WARN, Spec, Verdict, failed, passed, run_all
from providers import poll
from stacks.config import PROJECT_DIR
from tests.cli.doctor.fakes import FakeMachine
from tests.cli.verify import test_verify_gitlab as gitlab_tests
from tests.cli.verify.platforms import Answers
from tests.cli.verify.test_verify_core import SetClock
from tests.cli.verify.test_verify_gitlab import HEALTHZ, PIPELINE_URL, _pipeline_of_the_next_commit, _platform
from tests.cli.verify.test_verify_openbao import Restarted, _restarted
from tests.providers.clock import FakeClock
from tests.providers.gitlab_stub import GitLabState

EXIT_SCRIPT = """
import time
from cli.verify.model import Spec, at_once, passed, run_all
def check():
    at_once(lambda _: time.sleep(120), [1])
    return passed("late")
[result] = run_all([Spec(name="TLS certificates", run=check, timeout=0.2)], tick=0.05)
print(result.status, flush=True)
"""


def test_a_check_given_up_while_it_asks_hosts_at_once_holds_no_exit() -> None:
    """A check cut at its timeout while an `at_once` worker still waits (a port-forward that never
    starts): the process ends with the run, not when the worker is done (120 s; this waits 60 at most)."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(EXIT_SCRIPT)], cwd=PROJECT_DIR, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "fail", done.stderr


def test_a_need_that_fails_as_the_deadline_passes_is_named_by_its_dependant(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = SetClock()
    monkeypatch.setattr(poll, "CLOCK", clock.clock())

    def slow_failure() -> Verdict:
        clock.time = 51
        return failed("no", "fix")

    results = run_all(
        [Spec(name="stack phase2", run=slow_failure), Spec(name="OpenBao", run=lambda: passed("ok"), needs=("stack phase2",))], tick=0.01
    )
    assert [result.status for result in results] == [FAIL, SKIP]
    assert results[1].skipped_because == "stack phase2"
    assert results[1].saw == "not checked: it needs stack phase2, which failed"


def test_checks_that_wait_for_each_other_are_refused_before_any_runs_whatever_the_timing(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = SetClock()
    monkeypatch.setattr(poll, "CLOCK", clock.clock())
    ran: list[str] = []

    def slow() -> Verdict:
        ran.append("slow")
        clock.time = 60
        return passed("late")

    cycle = [Spec(name="a", run=lambda: passed("a"), after=("b",)), Spec(name="b", run=lambda: passed("b"), needs=("a",))]
    with pytest.raises(ValueError, match=r"checks that need each other: \['a', 'b'\]"):
        run_all([Spec(name="slow", run=slow, timeout=1000), *cycle], tick=0.01)
    assert ran == []


@pytest.mark.parametrize(
    "refusal",
    [
        "Error from server: This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
        "Error from server (TooManyRequests): Cannot evict pod as it would violate the pod's disruption budget.",
    ],
)
def test_an_eviction_a_budget_refuses_is_skipped_however_the_server_words_it(refusal: str) -> None:
    verdict = restart.openbao_restart_check(_restarted(Restarted([("uid-new", True)], evicted=(1, refusal)), {}))
    assert verdict.status == SKIP
    assert verdict.saw.startswith("not restarted: a PodDisruptionBudget forbids evicting openbao-0")


def test_an_eviction_the_server_throttles_says_to_try_again_later_not_forbidden() -> None:
    refusal = "Error from server (TooManyRequests): the server has received too many requests and has asked us to try again later"
    verdict = restart.openbao_restart_check(_restarted(Restarted([("uid-new", True)], evicted=(1, refusal)), {}))
    assert verdict.status == FAIL
    assert "asked to try again later" in verdict.saw
    assert verdict.fix == "run `uv run blueprint verify --deep` again in a minute"


def test_only_a_forbidden_eviction_is_said_to_need_rbac() -> None:
    forbidden = 'Error from server (Forbidden): pods "openbao-0" is forbidden: User "dev" cannot create resource "pods/eviction"'
    said = restart.openbao_restart_check(_restarted(Restarted([("uid-new", True)], evicted=(1, forbidden)), {}))
    assert said.fix.startswith("a Forbidden: your kubeconfig's user needs `create` on `pods/eviction`")
    other = restart.openbao_restart_check(_restarted(Restarted([("uid-new", True)], evicted=(1, "Unable to connect to the server")), {}))
    assert other.status == FAIL
    assert "Forbidden" not in other.fix


class SlowRestart(Restarted):
    """A cluster whose API server answers each kubectl call only at its timeout (on the test's clock)."""

    def __init__(self, clock: SetClock) -> None:
        super().__init__([("uid-new", True)])
        self.clock = clock

    def run(self, argv: Any, timeout: float) -> tuple[int, str]:
        self.clock.time += timeout
        return super().run(argv, timeout)


def test_the_restart_says_its_own_why_before_its_timeout_when_every_answer_is_slow(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every kubectl call takes its timeout, and OpenBao, through a port-forward that starts anew, takes
    the forward's start and the HTTP timeout before it fails: the check's worst case, which must end
    inside the check's own timeout, or the report shows the runner's "no answer" instead of its why."""
    from providers.openbao_api import OpenBao

    clock = SetClock()
    monkeypatch.setattr(poll, "CLOCK", clock.clock())

    def never(_: Any) -> dict[str, Any]:
        clock.time += restart.BACK_SECONDS - restart.KUBECTL_SECONDS
        raise OSError("no answer")

    monkeypatch.setattr(OpenBao, "seal_status", never)
    verdict = restart.openbao_restart_check(_restarted(SlowRestart(clock), {}))
    assert verdict.status == FAIL
    assert verdict.saw.startswith("openbao-0 did not come back unsealed within 180 s of its eviction: OpenBao does not answer")
    assert clock.time <= restart.TIMEOUT


stub, state, deep = gitlab_tests.stub, gitlab_tests.state, gitlab_tests.deep  # the GitLab stub's fixtures, shared


class HungDocker(FakeMachine):
    """Docker's CLI answers `-v` slowly (10 s of the test's clock), its daemon never: `docker info`
    answers at its timeout, which it waits for (until `release`, real time) before moving the clock."""

    def __init__(self, clock: FakeClock, release: threading.Event) -> None:
        super().__init__(tools={}, outputs={})
        self.clock, self.release = clock, release

    def run(self, argv: Sequence[str], timeout: float) -> tuple[int, str]:
        if list(argv[:2]) == ["docker", "-v"]:
            self.clock.advance(10)
            return 0, "Docker version 27.0.0"
        return super().run(argv, timeout)

    def memory_bytes(self) -> int | None:
        self.release.wait(10)
        self.clock.advance(20)
        return None


def test_the_command_ends_within_its_deadline_however_long_docker_takes_to_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The deadline is the command's: the engine's detection before the checks counts in it, and the
    report's machine facts (`docker info`, the memory) are gathered beside the checks: what has not
    answered when the checks end is null, not waited for."""
    import cli.verify as verify_module
    from cli.main import parser

    clock = FakeClock()
    monkeypatch.setattr(poll, "CLOCK", poll.Clock(clock.now, clock.sleep))
    release = threading.Event()

    def chain() -> Verdict:
        clock.advance(41)  # a chain of checks that runs to the deadline (the detection took the first 10 s)
        release.wait(30)
        return passed("late")

    monkeypatch.setattr(verify_module, "specs", lambda platform, dev=False: [("phase1", Spec(name="chain", run=chain, timeout=1000))])
    began, out = clock.now(), io.StringIO()
    try:
        code = verify_module.run(parser().parse_args(["verify", "--json"]), out, machine=HungDocker(clock, release))
    finally:
        release.set()
    assert code == 1
    assert clock.now() - began <= DEADLINE + 1
    assert json.loads(out.getvalue())["platform"]["memory_bytes"] is None


def test_phase_1_with_deep_keeps_the_fast_deadline_since_it_runs_no_deep_check() -> None:
    from cli.verify import deadline
    from tests.cli.verify.platforms import platform_on

    with_deep = platform_on()
    with_deep.deep = True
    assert deadline(with_deep, "1") == DEADLINE
    assert deadline(with_deep, "2") == DEADLINE + restart.TIMEOUT


def test_a_failed_deep_pipeline_names_retry_on_it_or_deep_again_not_up(
    stub: Any, state: GitLabState, tmp_path: Path, deep: FakeClock
) -> None:
    """`up --phase 3` would run nothing: the sync's files and the smoke pipeline's commit did not change."""
    _pipeline_of_the_next_commit(deep, state, starts=20, ends=60, status="failed")
    platform = _platform(stub, state, tmp_path, ask=Answers(dict(HEALTHZ)))
    verdict = gitlab_checks.deep_pipeline_check(platform)
    assert verdict.status == FAIL
    assert (
        verdict.fix == f"blueprint-apps/guestbook: press Retry on {PIPELINE_URL} in GitLab, or run `uv run blueprint verify --deep` again"
    )
    later = gitlab_checks.pipelines_check(platform)  # the next `verify`: main's newest pipeline is that one
    assert later.status == FAIL
    assert f"press Retry on {PIPELINE_URL} in GitLab" in later.fix
    assert "blueprint up" not in verdict.fix + later.fix


def test_deep_again_after_a_failed_pipeline_clears_pipelines(stub: Any, state: GitLabState, tmp_path: Path, deep: FakeClock) -> None:
    _pipeline_of_the_next_commit(deep, state, starts=20, ends=60, status="failed")
    platform = _platform(stub, state, tmp_path, ask=Answers(dict(HEALTHZ)))
    assert gitlab_checks.deep_pipeline_check(platform).status == FAIL
    again = {"id": 901, "ref": "main", "status": "pending", "web_url": f"{PIPELINE_URL}1"}
    deep.at(20, lambda: state.repository.pipelines.append({**again, "sha": state.repository.head()}))
    deep.at(60, lambda: state.repository.pipelines[-1].update(status="success"))
    assert gitlab_checks.deep_pipeline_check(platform).status != FAIL
    assert gitlab_checks.pipelines_check(platform).status == PASS


def test_a_pipeline_still_running_is_a_warning_naming_it_not_a_failure(stub: Any, state: GitLabState, tmp_path: Path) -> None:
    state.repository.pipelines.append({"id": 2, "ref": "main", "status": "running", "web_url": PIPELINE_URL})
    verdict = gitlab_checks.pipelines_check(_platform(stub, state, tmp_path))
    assert verdict.status == WARN
    assert verdict.saw.endswith("(still running)")
    assert f"{PIPELINE_URL} is still running; `uv run blueprint verify` again once it ends" in verdict.fix


def test_deep_commits_nothing_while_mains_pipeline_still_runs(stub: Any, state: GitLabState, tmp_path: Path, deep: FakeClock) -> None:
    """Another empty commit would stack on it, and GitLab's auto-cancel may cancel the pending one."""
    state.repository.pipelines.append(
        {"id": 899, "ref": "main", "sha": state.repository.head(), "status": "pending", "web_url": PIPELINE_URL}
    )
    commits = len(state.repository.commits)
    verdict = gitlab_checks.deep_pipeline_check(_platform(stub, state, tmp_path, ask=Answers(dict(HEALTHZ))))
    assert verdict.status == SKIP
    assert f"pipeline {PIPELINE_URL} on main is still pending" in verdict.saw
    assert len(state.repository.commits) == commits


def test_deep_commits_nothing_while_the_pipeline_of_mains_head_is_not_created_yet(
    stub: Any, state: GitLabState, tmp_path: Path, deep: FakeClock
) -> None:
    """GitLab creates a push's pipeline a moment after the push (CreatePipelineWorker): until then main's
    newest pipeline is the previous commit's, done, and an empty commit would let auto-cancel cancel the new one."""
    state.repository.commits.append({"id": "b" * 40, "message": "someone's push", "actions": []})
    commits = len(state.repository.commits)
    verdict = gitlab_checks.deep_pipeline_check(_platform(stub, state, tmp_path, ask=Answers(dict(HEALTHZ))))
    assert verdict.status == SKIP
    assert f"main's head {'b' * 8} has no pipeline yet" in verdict.saw
    assert len(state.repository.commits) == commits
