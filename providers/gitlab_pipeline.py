"""The smoke pipeline: wait for the pipeline of a commit, and fail with the job that failed.

The sync's commit starts the pipeline, so a re-run with no new commit (same `sha`, no diff) waits
for nothing and starts nothing. A new commit is a new `sha`: an update, which waits again. Two
cases start a new run, because only a new run can answer them:

- `create` finds the commit's pipeline finished. A create means no state has seen it pass on
  this cluster: a failed `up` left no state, or a new state runs over a preserved GitLab (the
  sync found the files there, made no commit, and the pipeline it finds ran on the previous
  cluster). A finished pipeline is no evidence for this cluster, so a new one runs on the branch;
  a pending or running one is waited for;
- `update` finds the new commit's pipeline failed or canceled already: an earlier `up` failed on
  it and kept the old state, and this `up` is the user trying again, so it runs again;
- `target` changed with the same `sha` (a new cluster over preserved data: the apps must be
  deployed there).

A run is never started beside one that is still pending or running for the same ref and commit:
that one is adopted and waited for. And a start whose answer was lost (a gateway error or a
timeout after GitLab may have acted: `gitlab_api` never sends such a POST again itself) looks for
the commit's pipelines again and adopts one newer than it knew before asking, and only asks again
when there is none (`GET /projects/:id/pipelines` with `ref` and `sha`, lib/api/ci/pipelines.rb).
So one `up` starts at most one pipeline per commit.

A failed pipeline fails the `up` with the failed job's name, stage and web URL; a pipeline that
waits for a person (`manual`, `scheduled`) or still runs at the limit fails it with its URL, and
one still pending says whether its runner (`runner`, when given) is online.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, ResourceProvider, UpdateResult

from providers.gitlab_api import CONNECTION, Connection, GitLab, GitLabApiError, encode, wire

PROVIDER_VERSION = "4"
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


def wait(props: dict[str, Any], *, rerun: frozenset[str] | set[str] = FAILED, new_run: bool = False) -> dict[str, Any]:
    """Wait for the commit's pipeline to end. With `new_run`, start one on the branch first;
    otherwise start one when the commit's pipeline is found already ended in a `rerun` status.
    """
    api, project = GitLab.of(props), f"/projects/{encode(props['project'])}"
    timeout = float(props.get("timeout_seconds") or 600)
    started = time.monotonic()
    poll_seconds = min(5.0, max(0.2, timeout / 20))
    sha = str(props["sha"])
    pipeline: dict[str, Any] | None = start(api, project, sha, latest(api, project, sha)) if new_run else None
    while True:
        if pipeline is None:
            pipeline = latest(api, project, sha)
            if pipeline is not None and pipeline["status"] in rerun:
                pipeline = start(api, project, sha, pipeline)  # a run for this up
            rerun = set()  # only what was there before this call: a run that fails now fails the up
        else:
            pipeline = api.get(f"{project}/pipelines/{pipeline['id']}")
        if pipeline is not None and (pipeline["status"] in DONE or pipeline["status"] in WAITS_FOR_A_PERSON):
            break
        if time.monotonic() - started >= timeout:
            raise PipelineFailed(timeout_message(api, props, pipeline))
        time.sleep(poll_seconds)
    if pipeline["status"] in WAITS_FOR_A_PERSON:
        raise PipelineFailed(
            f"the smoke pipeline of {props['project']} waits for a person ({pipeline['status']}): {pipeline['web_url']}; "
            f"the smoke pipeline must run on its own: make no job manual or delayed"
        )
    if pipeline["status"] != "success":
        failed = api.get(f"{project}/pipelines/{pipeline['id']}/jobs", **{"scope[]": "failed"})
        raise PipelineFailed(failure_message(str(props["project"]), pipeline, failed))
    return {
        **{key: props.get(key) for key in (*INPUTS, "runner")},
        "pipeline_id": pipeline["id"],
        "status": pipeline["status"],
        "web_url": pipeline["web_url"],
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
    for pause in START_PAUSES:
        try:
            made: dict[str, Any] = api.post(f"{project}/pipeline", {"ref": BRANCH})
        except GitLabApiError as error:
            if not error.unanswered:
                raise
        else:
            return made
        time.sleep(pause)
        found = latest(api, project, sha)
        if found is not None and int(found["id"]) > known:
            return found  # what the lost answer made
    last: dict[str, Any] = api.post(f"{project}/pipeline", {"ref": BRANCH})  # its failure fails the up
    return last


def timeout_message(api: GitLab, props: dict[str, Any], pipeline: dict[str, Any] | None) -> str:
    """Why the wait ended: the pipeline's state and URL; for a pending one, its runner's state."""
    status = pipeline["status"] if pipeline else "not started"
    where = pipeline["web_url"] if pipeline else f"no pipeline started for commit {props['sha']}"
    message = (
        f"the smoke pipeline of {props['project']} did not finish within {props.get('timeout_seconds')}s "
        f"({status}): {where}; raise blueprint:pipelineTimeout or look at it"
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
