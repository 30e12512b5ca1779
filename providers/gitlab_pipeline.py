"""The smoke pipeline: wait for the pipeline GitLab started for a commit, and fail with the job
that failed.

The sync's commit starts the pipeline, so a re-run with no new commit (same `sha`, no diff) waits
for nothing and starts nothing. A new commit is a new `sha`: an update, which waits again. Two
cases start one, because only a new run can answer them:

- `create` finds the commit's pipeline already failed (a failed `up` leaves no state, so the next
  `up` creates again): it retries that pipeline once, instead of failing at once on the old result;
- `target` changed with the same `sha` (a new cluster over preserved data: the apps must be
  deployed there): it runs a new pipeline on the branch.

A failed pipeline fails the `up` with the failed job's name, stage and web URL; a pipeline that
waits for a person (`manual`, `scheduled`) or still runs at the limit fails it with its URL.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, ResourceProvider, UpdateResult

PROVIDER_VERSION = "1"
"""Bump when the provider's behaviour changes (it is pickled by reference)."""

INPUTS = ("gitlab_url", "token", "ca_file", "project", "sha", "target", "timeout_seconds", "provider_version")
DONE = {"success", "failed", "canceled", "skipped"}
WAITS_FOR_A_PERSON = {"manual", "scheduled"}


class PipelineFailed(Exception):
    """The smoke pipeline failed or did not finish; the message names the job and its URL."""


def _request(props: dict[str, Any], method: str, path: str, **params: Any) -> Any:
    """One API call, retried a few times on a transient failure (GitLab restarting, a 502)."""
    import requests

    url = f"{str(props['gitlab_url']).rstrip('/')}/api/v4/projects/{quote(str(props['project']), safe='')}{path}"
    for attempt in range(5):
        try:
            response = requests.request(
                method, url, params=params, headers={"PRIVATE-TOKEN": str(props["token"])}, verify=str(props["ca_file"]), timeout=30
            )
            if response.status_code < 500:
                response.raise_for_status()
                return response.json()
        except requests.ConnectionError:
            if attempt == 4:
                raise
        time.sleep(2)
    response.raise_for_status()
    return response.json()


def _get(props: dict[str, Any], path: str, **params: Any) -> Any:
    return _request(props, "GET", path, **params)


def failure_message(project: str, pipeline: dict[str, Any], failed_jobs: list[dict[str, Any]]) -> str:
    """What a user needs to act on a failed pipeline: which job, in which stage, where to look."""
    jobs = "; ".join(f"job {job['name']!r} (stage {job['stage']}) failed: {job['web_url']}" for job in failed_jobs)
    return f"the smoke pipeline of {project} ended {pipeline['status']}: {jobs or 'no job failed'} (pipeline {pipeline['web_url']})"


def wait(props: dict[str, Any], *, retry_failed: bool = False, new_run: bool = False) -> dict[str, Any]:
    """Wait for the commit's pipeline (or, with `new_run`, a new pipeline on the branch) to end."""
    timeout = float(props.get("timeout_seconds") or 600)
    deadline = time.monotonic() + timeout
    poll_seconds = min(5.0, max(0.2, timeout / 20))
    pipeline: dict[str, Any] | None = _request(props, "POST", "/pipeline", ref="main") if new_run else None
    while True:
        if pipeline is None:
            found = _get(props, "/pipelines", sha=props["sha"], order_by="id", sort="desc")
            pipeline = found[0] if found else None
            if pipeline is not None and retry_failed and pipeline["status"] in ("failed", "canceled"):
                pipeline = _request(props, "POST", f"/pipelines/{pipeline['id']}/retry")  # a new run of the same commit
        else:
            pipeline = _get(props, f"/pipelines/{pipeline['id']}")
        if pipeline is not None and (pipeline["status"] in DONE or pipeline["status"] in WAITS_FOR_A_PERSON):
            break
        if time.monotonic() >= deadline:
            where = pipeline["web_url"] if pipeline else f"no pipeline started for commit {props['sha']}"
            raise PipelineFailed(
                f"the smoke pipeline of {props['project']} did not finish within {props.get('timeout_seconds')}s "
                f"({pipeline['status'] if pipeline else 'not started'}): {where}; raise blueprint:pipelineTimeout or look at it"
            )
        time.sleep(poll_seconds)
    if pipeline["status"] in WAITS_FOR_A_PERSON:
        raise PipelineFailed(
            f"the smoke pipeline of {props['project']} waits for a person ({pipeline['status']}): {pipeline['web_url']}; "
            f"the smoke pipeline must run on its own: make no job manual or delayed"
        )
    if pipeline["status"] != "success":
        failed = _get(props, f"/pipelines/{pipeline['id']}/jobs", **{"scope[]": "failed"})
        raise PipelineFailed(failure_message(str(props["project"]), pipeline, failed))
    return {
        **{key: props.get(key) for key in INPUTS},
        "pipeline_id": pipeline["id"],
        "status": pipeline["status"],
        "web_url": pipeline["web_url"],
    }


class SmokePipelineProvider(ResourceProvider):
    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [key for key in INPUTS if olds.get(key) != news.get(key)]
        return DiffResult(changes=bool(changed), replaces=[], delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        outs = wait(props, retry_failed=True)
        return CreateResult(id_=f"{props['project']}@{props['sha']}", outs=outs)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        same_commit = olds.get("sha") == news.get("sha")
        return UpdateResult(outs=wait(news, new_run=same_commit and olds.get("target") != news.get("target")))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        return ReadResult(id_, props)

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing: a finished pipeline is history."""


@dataclass(frozen=True, kw_only=True)
class SmokePipelineArgs:
    gitlab_url: str
    token: pulumi.Input[str]
    ca_file: pulumi.Input[str]
    project: pulumi.Input[str]
    sha: pulumi.Input[str]
    """The commit whose pipeline must go green (the sync's output)."""
    target: pulumi.Input[str]
    """What the pipeline deploys to (a digest, no secret): when it changes, the apps run again."""
    timeout_seconds: int = 600


class SmokePipeline(pulumi.dynamic.Resource, module="gitlab", name="SmokePipeline"):
    """The pipeline of one commit, which must succeed."""

    web_url: pulumi.Output[str]

    def __init__(self, name: str, args: SmokePipelineArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        props = {
            "gitlab_url": args.gitlab_url,
            "token": pulumi.Output.secret(args.token),
            "ca_file": args.ca_file,
            "project": args.project,
            "sha": args.sha,
            "target": args.target,
            "timeout_seconds": args.timeout_seconds,
            "provider_version": PROVIDER_VERSION,
            "pipeline_id": None,
            "status": None,
            "web_url": None,
        }
        super().__init__(SmokePipelineProvider(), name, props, opts)
