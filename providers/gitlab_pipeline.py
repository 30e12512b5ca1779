"""The smoke pipeline: wait for the pipeline GitLab started for a commit, and fail with the job
that failed.

It starts nothing: the sync's commit starts the pipeline, so a re-run with no new commit (same
`sha`, no diff) waits for nothing and starts nothing. A new commit is a new `sha`: an update, which
waits again. A failed pipeline fails the `up` with the failed job's name, stage and web URL; a
pipeline still running at the limit fails it with the pipeline's URL.
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

INPUTS = ("gitlab_url", "token", "ca_file", "project", "sha", "timeout_seconds", "provider_version")
DONE = {"success", "failed", "canceled", "skipped"}


class PipelineFailed(Exception):
    """The smoke pipeline failed or did not finish; the message names the job and its URL."""


def _get(props: dict[str, Any], path: str, **params: Any) -> Any:
    import requests

    response = requests.get(
        f"{str(props['gitlab_url']).rstrip('/')}/api/v4/projects/{quote(str(props['project']), safe='')}{path}",
        params=params,
        headers={"PRIVATE-TOKEN": str(props["token"])},
        verify=str(props["ca_file"]),
        timeout=30,
    )
    response.raise_for_status()
    return response.json()


def failure_message(project: str, pipeline: dict[str, Any], failed_jobs: list[dict[str, Any]]) -> str:
    """What a user needs to act on a failed pipeline: which job, in which stage, where to look."""
    jobs = "; ".join(f"job {job['name']!r} (stage {job['stage']}) failed: {job['web_url']}" for job in failed_jobs)
    return f"the smoke pipeline of {project} ended {pipeline['status']}: {jobs or 'no job failed'} (pipeline {pipeline['web_url']})"


def wait(props: dict[str, Any]) -> dict[str, Any]:
    timeout = float(props.get("timeout_seconds") or 600)
    deadline = time.monotonic() + timeout
    poll_seconds = min(5.0, max(0.2, timeout / 20))
    pipeline: dict[str, Any] | None = None
    while True:
        if pipeline is None:
            found = _get(props, "/pipelines", sha=props["sha"], order_by="id", sort="desc")
            pipeline = found[0] if found else None
        else:
            pipeline = _get(props, f"/pipelines/{pipeline['id']}")
        if pipeline is not None and pipeline["status"] in DONE:
            break
        if time.monotonic() >= deadline:
            where = pipeline["web_url"] if pipeline else f"no pipeline started for commit {props['sha']}"
            raise PipelineFailed(
                f"the smoke pipeline of {props['project']} did not finish within {props.get('timeout_seconds')}s "
                f"({pipeline['status'] if pipeline else 'not started'}): {where}; raise blueprint:pipelineTimeout or look at it"
            )
        time.sleep(poll_seconds)
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
        outs = wait(props)
        return CreateResult(id_=f"{props['project']}@{props['sha']}", outs=outs)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=wait(news))

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
            "timeout_seconds": args.timeout_seconds,
            "provider_version": PROVIDER_VERSION,
            "pipeline_id": None,
            "status": None,
            "web_url": None,
        }
        super().__init__(SmokePipelineProvider(), name, props, opts)
