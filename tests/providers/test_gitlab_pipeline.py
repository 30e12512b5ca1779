"""The smoke pipeline: waits for the commit's pipeline, fails with the failed job's name and URL,
and starts a run only when the pipeline it finds on create had already finished (no evidence for
this cluster), or for a new cluster; never beside one still running, and never twice for a start
whose answer was lost (GitLab may have made it)."""

from __future__ import annotations

from typing import Any

import pytest

from providers.gitlab_api import GitLabApiError
from providers.gitlab_pipeline import PROVIDER_VERSION, PipelineFailed, SmokePipelineProvider, failure_message
from tests.providers.clock import FakeClock
from tests.providers.engine import as_engine_loads, outputs_of
from tests.providers.gitlab_stub import TOKEN, GitLabState, Repository

SHA = "0123456789abcdef0123456789abcdef01234567"


def props(gitlab: str, **extra: Any) -> dict[str, Any]:
    return {
        "gitlab_url": gitlab,
        "token": TOKEN,
        "ca_file": "/nonexistent/ca.crt",
        "project": "42",
        "sha": SHA,
        "target": "cluster-a",
        "timeout_seconds": 5.0,
        "provider_version": PROVIDER_VERSION,
        **extra,
    }


def pipeline(status: str, pipeline_id: int = 7, sha: str = SHA) -> dict[str, Any]:
    return {"id": pipeline_id, "sha": sha, "ref": "main", "status": status, "web_url": f"https://gitlab/p/-/pipelines/{pipeline_id}"}


pytestmark = pytest.mark.usefixtures("clock")  # every wait on a clock the test drives


@pytest.fixture
def provider() -> SmokePipelineProvider:
    return as_engine_loads(SmokePipelineProvider())


def finish_later(clock: FakeClock, repository: Repository, status: str) -> None:
    def finish() -> None:
        repository.pipelines[0]["status"] = status

    clock.at(2.0, finish)


def test_a_green_pipeline_is_recorded(gitlab: str, repository: Repository, provider: SmokePipelineProvider, clock: FakeClock) -> None:
    repository.pipelines.append(pipeline("running"))
    finish_later(clock, repository, "success")
    outs = outputs_of(provider.create(props(gitlab)))
    assert (outs["status"], outs["web_url"]) == ("success", "https://gitlab/p/-/pipelines/7")


def test_a_failed_pipeline_names_the_failed_job_and_its_url(
    gitlab: str, repository: Repository, provider: SmokePipelineProvider, clock: FakeClock
) -> None:
    repository.pipelines.append(pipeline("running"))
    repository.jobs[7] = [{"name": "build-image", "stage": "build", "web_url": "https://gitlab/p/-/jobs/99"}]
    finish_later(clock, repository, "failed")
    with pytest.raises(PipelineFailed) as failed:
        provider.create(props(gitlab))
    assert "job 'build-image' (stage build) failed: https://gitlab/p/-/jobs/99" in str(failed.value)
    assert "https://gitlab/p/-/pipelines/7" in str(failed.value)


def test_a_pipeline_that_never_finishes_fails_at_the_limit_with_its_url(
    gitlab: str, repository: Repository, provider: SmokePipelineProvider, clock: FakeClock
) -> None:
    repository.pipelines.append(pipeline("running"))
    with pytest.raises(PipelineFailed, match=r"did not finish within 1.0s \(running\): https://gitlab/p/-/pipelines/7"):
        provider.create(props(gitlab, timeout_seconds=1.0))
    assert clock.waited == pytest.approx(1.0)


@pytest.mark.usefixtures("clock")  # the wait on a clock the test drives
def test_a_pending_pipeline_at_the_limit_says_whether_the_runner_is_online(
    gitlab: str, state: GitLabState, provider: SmokePipelineProvider
) -> None:
    state.repository.pipelines.append(pipeline("pending"))
    runner = state.add_runner("blueprint/phase2: Kubernetes executor on the runner nodes", ["kubernetes", "blueprint"])
    with pytest.raises(PipelineFailed, match=rf"\(pending\).*runner {runner['id']} is offline: .*gitlab-runner pods"):
        provider.create(props(gitlab, timeout_seconds=1.0, runner=str(runner["id"])))


def test_another_runner_is_no_reason_to_run_the_apps_again(provider: SmokePipelineProvider) -> None:
    assert provider.diff("42@sha", props("http://x", runner="1"), props("http://x", runner="2")).changes is False


def test_the_same_commit_again_is_no_change_so_no_new_pipeline(provider: SmokePipelineProvider) -> None:
    olds = props("http://x")
    assert provider.diff("42@sha", olds, props("http://x")).changes is False
    assert provider.diff("42@sha", olds, props("http://x", sha="f" * 40)).changes is True


def test_the_failure_message_lists_every_failed_job() -> None:
    message = failure_message(
        "guestbook", pipeline("failed"), [{"name": "a", "stage": "s", "web_url": "u1"}, {"name": "b", "stage": "t", "web_url": "u2"}]
    )
    assert "job 'a' (stage s) failed: u1; job 'b' (stage t) failed: u2" in message


@pytest.mark.parametrize("status", ["success", "failed"])
def test_a_pipeline_found_finished_on_create_is_run_again(
    gitlab: str, repository: Repository, provider: SmokePipelineProvider, status: str
) -> None:
    """Green on the previous cluster (a new state over preserved data), or red in a failed `up`:
    either way it says nothing of this cluster."""
    repository.pipelines.append(pipeline(status))
    outs = outputs_of(provider.create(props(gitlab)))
    assert repository.posts == ["/api/v4/projects/42/pipeline"]
    assert (outs["status"], outs["pipeline_id"]) == ("success", 101)


def test_a_running_pipeline_found_on_create_is_waited_for_not_run_again(
    gitlab: str, repository: Repository, provider: SmokePipelineProvider, clock: FakeClock
) -> None:
    repository.pipelines.append(pipeline("running"))
    finish_later(clock, repository, "success")
    outputs_of(provider.create(props(gitlab)))
    assert repository.posts == []


def test_a_new_cluster_runs_the_apps_again_on_the_same_commit(gitlab: str, repository: Repository, provider: SmokePipelineProvider) -> None:
    repository.pipelines.append(pipeline("success"))
    olds = props(gitlab)
    assert provider.diff("42@sha", olds, props(gitlab, target="cluster-b")).changes is True
    provider.update("42@sha", olds, props(gitlab, target="cluster-b"))
    assert repository.posts == ["/api/v4/projects/42/pipeline"]


def test_a_pipeline_waiting_for_a_person_fails_at_once(
    gitlab: str, repository: Repository, provider: SmokePipelineProvider, clock: FakeClock
) -> None:
    repository.pipelines.append(pipeline("manual"))
    with pytest.raises(PipelineFailed, match="waits for a person"):
        provider.create(props(gitlab, timeout_seconds=60.0))
    assert clock.pauses == []


def test_a_new_commits_pipeline_found_failed_by_an_update_is_run_again(
    gitlab: str, repository: Repository, provider: SmokePipelineProvider
) -> None:
    """An earlier `up` failed on it and kept the old state: this `up` is the user trying again."""
    repository.pipelines.append(pipeline("failed", sha="f" * 40))
    outs = outputs_of(provider.update("42@sha", props(gitlab), props(gitlab, sha="f" * 40)))
    assert repository.posts == ["/api/v4/projects/42/pipeline"]
    assert outs["status"] == "success"


def test_a_new_commits_green_pipeline_found_by_an_update_is_not_run_again(
    gitlab: str, repository: Repository, provider: SmokePipelineProvider
) -> None:
    repository.pipelines.append(pipeline("success", sha="f" * 40))
    outputs_of(provider.update("42@sha", props(gitlab), props(gitlab, sha="f" * 40)))
    assert repository.posts == []


def test_a_start_whose_answer_was_lost_is_adopted_not_started_twice(
    gitlab: str, state: GitLabState, provider: SmokePipelineProvider
) -> None:
    """GitLab made the run, then the gateway lost its answer: the run it made is the one waited for."""
    state.repository.commits.append({"id": SHA, "message": "sync", "actions": []})
    state.repository.pipelines.append(pipeline("success"))
    state.lost_answers["POST /projects/42/pipeline"] = [502]
    outs = outputs_of(provider.create(props(gitlab)))
    assert state.repository.posts == ["/api/v4/projects/42/pipeline"]
    assert [p["id"] for p in state.repository.pipelines] == [7, outs["pipeline_id"]]


def test_a_start_that_gitlab_never_saw_is_asked_for_again(gitlab: str, state: GitLabState, provider: SmokePipelineProvider) -> None:
    state.repository.commits.append({"id": SHA, "message": "sync", "actions": []})
    state.repository.pipelines.append(pipeline("failed"))
    state.failures_for["POST /projects/42/pipeline"] = [504]
    outs = outputs_of(provider.create(props(gitlab)))
    assert state.repository.posts == ["/api/v4/projects/42/pipeline"]
    assert state.calls.count("POST /projects/42/pipeline") == 2
    assert outs["status"] == "success"


def test_a_refused_start_is_not_asked_for_again(gitlab: str, state: GitLabState, provider: SmokePipelineProvider) -> None:
    """A 400 is GitLab's own answer: it made nothing, and asking again would be refused again."""
    state.repository.pipelines.append(pipeline("failed"))
    state.failures_for["POST /projects/42/pipeline"] = [400]
    with pytest.raises(GitLabApiError, match=r"POST /api/v4/projects/42/pipeline failed \(HTTP 400\)"):
        provider.create(props(gitlab))
    assert state.calls.count("POST /projects/42/pipeline") == 1


def test_a_new_cluster_adopts_a_run_of_the_commit_still_running_instead_of_starting_another(
    gitlab: str, repository: Repository, provider: SmokePipelineProvider, clock: FakeClock
) -> None:
    """An earlier `up` started it and lost the answer: two runs would deploy the same apps at once."""
    repository.pipelines.append(pipeline("running"))
    finish_later(clock, repository, "success")
    outs = outputs_of(provider.update("42@sha", props(gitlab), props(gitlab, target="cluster-b")))
    assert repository.posts == []
    assert outs["pipeline_id"] == 7


def test_pipelines_of_another_ref_are_not_taken_for_the_commits(
    gitlab: str, repository: Repository, provider: SmokePipelineProvider
) -> None:
    repository.pipelines.append({**pipeline("running"), "ref": "feature"})
    outs = outputs_of(provider.update("42@sha", props(gitlab), props(gitlab, target="cluster-b")))
    assert repository.posts == ["/api/v4/projects/42/pipeline"]
    assert outs["pipeline_id"] != 7
