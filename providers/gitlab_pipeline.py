"""The smoke pipeline: wait for the pipeline of a commit, and fail with the job that failed.

The sync's commit starts the pipeline, so a re-run with no new commit waits for nothing; a new
commit is an update, which waits again. A new run is started only where a new run alone can answer:
`create` finds the commit's pipeline finished (by a failed `up`, or on the cluster before this one);
`update` finds the new commit's pipeline failed or canceled already (the user trying again);
`target` changed with the same `sha` (a new cluster over preserved data). One still pending or
running for the same ref and commit is adopted; a start whose answer was lost looks for the
commit's pipelines (`GET /projects/:id/pipelines`, `ref` and `sha`) and adopts one newer than it
knew before asking again.

A failed pipeline fails the `up` with the failed job's name, stage and web URL; one that waits for
a person (`manual`, `scheduled`) or still runs at the limit fails it with its URL, and one still
pending says whether its runner (`runner`, when given) is online. Why: decisions.md, entry 33.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, ResourceProvider, UpdateResult

from providers import poll
from providers.gitlab_api import CONNECTION, Connection, GitLab, GitLabApiError, encode, wire

PROVIDER_VERSION = "1"
"""Bump when the provider's behaviour changes (it is pickled by reference)."""

INPUTS = (*CONNECTION, "project", "sha", "target", "timeout_seconds", "provider_version")
"""What `diff` compares. Not `runner`: another runner is no reason to run the apps again."""
DONE = {"success", "failed", "canceled", "skipped"}
WAITS_FOR_A_PERSON = {"manual", "scheduled"}
BRANCH = "main"
"""The ref every run is started on, and looked up by (the sync commits to it)."""
START_PAUSES = (2.0, 5.0, 10.0)
"""Seconds to wait, after a start whose answer was lost, before looking for what it made (the
gateway may give up while GitLab still creates it), then asking again: four starts at most."""


class PipelineFailed(Exception):
    """The smoke pipeline failed or did not finish; the message names the job and its URL."""


def failure_message(project: str, pipeline: dict[str, Any], failed_jobs: list[dict[str, Any]]) -> str:
    """What a user needs to act on a failed pipeline: which job, in which stage, where to look."""
    jobs = "; ".join(f"job {job['name']!r} (stage {job['stage']}) failed: {job['web_url']}" for job in failed_jobs)
    return f"the smoke pipeline of {project} ended {pipeline['status']}: {jobs or 'no job failed'} (pipeline {pipeline['web_url']})"


FAILED = {"failed", "canceled"}


LONGER = "raise blueprint:pipelineTimeout or look at it"
"""What a pipeline still running at the limit asks of the user: `up`'s limit is theirs to raise."""


def wait(
    props: dict[str, Any], *, rerun: frozenset[str] | set[str] = FAILED, new_run: bool = False, longer: str = LONGER
) -> dict[str, Any]:
    """Wait for the commit's pipeline to end. With `new_run`, start one on the branch first;
    otherwise start one when the commit's pipeline is found already ended in a `rerun` status.
    `longer`: what the message of a pipeline still running at the limit asks of the user.
    """
    api, project = GitLab.of(props), f"/projects/{encode(props['project'])}"
    timeout = float(props.get("timeout_seconds") or 600)
    budget = poll.within(timeout, every=min(5.0, max(0.2, timeout / 20)))  # from before a start: it counts too
    sha = str(props["sha"])
    pipeline: dict[str, Any] | None = start(api, project, sha, latest(api, project, sha)) if new_run else None

    def ended() -> dict[str, Any]:
        nonlocal pipeline, rerun
        if pipeline is None:
            pipeline = latest(api, project, sha)
            if pipeline is not None and pipeline["status"] in rerun:
                pipeline = start(api, project, sha, pipeline)  # a run for this up
            rerun = set()  # only what was there before this call: a run that fails now fails the up
        else:
            pipeline = api.get(f"{project}/pipelines/{pipeline['id']}")
        if pipeline is None or (pipeline["status"] not in DONE and pipeline["status"] not in WAITS_FOR_A_PERSON):
            raise poll.NotYet(pipeline["status"] if pipeline else "not started")
        return pipeline

    try:
        done = poll.retry(ended, budget)
    except poll.NotYet:
        raise PipelineFailed(timeout_message(api, props, pipeline, longer)) from None
    if done["status"] in WAITS_FOR_A_PERSON:
        raise PipelineFailed(
            f"the smoke pipeline of {props['project']} waits for a person ({done['status']}): {done['web_url']}; "
            f"the smoke pipeline must run on its own: make no job manual or delayed"
        )
    if done["status"] != "success":
        failed = api.get(f"{project}/pipelines/{done['id']}/jobs", **{"scope[]": "failed"})
        raise PipelineFailed(failure_message(str(props["project"]), done, failed))
    return {
        **{key: props.get(key) for key in (*INPUTS, "runner")},
        "pipeline_id": done["id"],
        "status": done["status"],
        "web_url": done["web_url"],
    }


def latest(api: GitLab, project: str, sha: str) -> dict[str, Any] | None:
    """The newest pipeline of `sha` on the branch, or None (GitLab lists the newest first by id)."""
    found = api.get(f"{project}/pipelines", ref=BRANCH, sha=sha, order_by="id", sort="desc")
    return found[0] if found else None


def start(api: GitLab, project: str, sha: str, newest: dict[str, Any] | None) -> dict[str, Any]:
    """A new run on the branch, started once. `newest` is the commit's newest pipeline as last
    seen: one still pending or running is adopted instead. When a start's answer is lost, GitLab may
    have made the run: a pipeline of the commit newer than `newest` is that run, and is adopted;
    only when there is none is the start asked for again.
    """
    if newest is not None and newest["status"] not in DONE and newest["status"] not in WAITS_FOR_A_PERSON:
        return newest
    known = int(newest["id"]) if newest is not None else 0
    asked = False

    def started() -> dict[str, Any]:
        nonlocal asked
        if asked and (found := latest(api, project, sha)) is not None and int(found["id"]) > known:
            return found  # what a lost answer made
        asked = True
        try:
            made: dict[str, Any] = api.post(f"{project}/pipeline", {"ref": BRANCH})
        except GitLabApiError as error:
            if not error.unanswered:
                raise
            raise poll.NotYet(str(error), outcome=error) from error
        return made

    try:
        return poll.retry(started, START_PAUSES)
    except poll.NotYet as gave_up:
        failed: GitLabApiError = gave_up.outcome
    raise failed  # the last start's failure fails the up


def timeout_message(api: GitLab, props: dict[str, Any], pipeline: dict[str, Any] | None, longer: str = LONGER) -> str:
    """Why the wait ended: the pipeline's state and URL; for a pending one, its runner's state."""
    status = pipeline["status"] if pipeline else "not started"
    where = pipeline["web_url"] if pipeline else f"no pipeline started for commit {props['sha']}"
    message = (
        f"the smoke pipeline of {props['project']} did not finish within {props.get('timeout_seconds')}s ({status}): {where}; {longer}"
    )
    if status == "pending" and props.get("runner"):
        message += f"; {runner_state(api, str(props['runner']))}"
    return message


def runner_state(api: GitLab, runner_id: str) -> str:
    """Whether the runner can take the pending jobs (`GET /runners/:id`, lib/api/ci/runners.rb)."""
    try:
        runner = api.find(f"/runners/{encode(runner_id)}")
    except GitLabApiError as error:
        return f"whether runner {runner_id} is online is unknown ({error})"
    if runner is None:
        return f"runner {runner_id} is gone from GitLab: `up` phase2 registers it again"
    if runner.get("online"):
        return f"runner {runner_id} is online: the jobs wait for a free slot or for tags it lacks"
    status = runner.get("status") or "offline"
    return f"runner {runner_id} is {status}: it has not asked GitLab for jobs lately; look at the gitlab-runner pods"


class SmokePipelineProvider(ResourceProvider):
    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [key for key in INPUTS if olds.get(key) != news.get(key)]
        return DiffResult(changes=bool(changed), replaces=[], delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=f"{props['project']}@{props['sha']}", outs=wait(props, rerun=DONE))

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        same_commit = olds.get("sha") == news.get("sha")
        return UpdateResult(outs=wait(news, new_run=same_commit and olds.get("target") != news.get("target")))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        return ReadResult(id_, props)

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing: a finished pipeline is history."""


@dataclass(frozen=True, kw_only=True)
class SmokePipelineArgs:
    connection: Connection
    project: pulumi.Input[str]
    sha: pulumi.Input[str]
    """The commit whose pipeline must go green (the sync's output)."""
    target: pulumi.Input[str]
    """What the pipeline deploys to (a digest, no secret): when it changes, the apps run again."""
    timeout_seconds: int = 600
    runner: pulumi.Input[str] | None = None
    """The instance runner's id, known once the runner is up: the pipeline waits for it, and a
    pipeline still pending at the limit says whether it is online."""


class SmokePipeline(pulumi.dynamic.Resource, module="gitlab", name="SmokePipeline"):
    """The pipeline of one commit, which must succeed."""

    web_url: pulumi.Output[str]

    def __init__(self, name: str, args: SmokePipelineArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        props = wire(args, PROVIDER_VERSION, "pipeline_id", "status", "web_url")
        super().__init__(SmokePipelineProvider(), name, props, opts)
