"""phase3: the apps on GitLab, which build and deploy themselves.

The projects of `apps/apps_manifest.yaml` in the platform's group (phase2's), their variables and
sources, and one smoke pipeline per project, through GitLab's API (the admin token, our CA).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi

from apps_manifest import load_manifest
from components.gitlab_projects import GROUP, GitLabProjects, GitLabProjectsArgs
from stacks import outputs
from stacks.config import load_phase3

OFFLINE_PLAN_TOKEN = "glpat-offline-plan"
"""What the offline plan (Pulumi's mocks) calls GitLab with: it reads no file and calls nothing."""


def offline_plan() -> bool:
    """Whether the program runs under Pulumi's mocks (`blueprint plan`, the tests), as
    `stacks.config.folder_owner` tells it.
    """
    from pulumi.runtime.mocks import MockMonitor
    from pulumi.runtime.settings import get_monitor

    return isinstance(get_monitor(), MockMonitor)


def admin_token(inputs: Mapping[str, Any]) -> pulumi.Input[str]:
    """Root's GitLab token (secret): in `dev`, the seeded one phase2 hands on in the graph, so that every
    call waits for the seeding; in a phase3 stack, read from phase2's file (no stack output holds
    it), or a RunError naming the file and the fix when phase2's data folder has none.
    """
    if outputs.SEEDED_ADMIN_TOKEN in inputs:
        seeded: pulumi.Input[str] = inputs[outputs.SEEDED_ADMIN_TOKEN]
        return seeded
    if offline_plan():
        return pulumi.Output.secret(OFFLINE_PLAN_TOKEN)
    try:
        return pulumi.Output.secret(outputs.read_admin_token(str(inputs[outputs.ADMIN_TOKEN_FILE])))
    except outputs.AdminTokenUnavailable as error:
        raise pulumi.RunError(str(error)) from None


def deploy(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Build phase3 from phase2's outputs (`inputs`)."""
    config = load_phase3()
    projects = tuple(load_manifest())  # a malformed manifest stops here, before any resource
    gitlab_url = str(inputs[outputs.GITLAB_URL])
    domain = gitlab_url.split("://", 1)[-1].split(".", 1)[1]
    if (group_path := str(inputs[outputs.APPS_GROUP_PATH])) != GROUP:
        raise pulumi.RunError(
            f"phase2's group is {group_path!r}, and these apps go into {GROUP!r}: phase2 was brought up from another "
            f"version of blueprint. Bring it up from this one (`pulumi up -s phase2`, or `uv run blueprint up --phase 2`)"
        )
    token = admin_token(inputs)  # a missing token file stops here, before any resource
    apps = GitLabProjects(
        "apps",
        GitLabProjectsArgs(
            projects=projects,
            gitlab_url=gitlab_url,
            token=token,
            ca_file=inputs[outputs.CA_CERT_FILE],
            domain=domain,
            registry_host=str(inputs[outputs.REGISTRY_HOST]),
            deploy_kubeconfig=inputs[outputs.DEPLOY_KUBECONFIG],
            group_id=inputs[outputs.APPS_GROUP_ID],
            group_owner=str(inputs[outputs.APPS_GROUP_OWNER]),
            preserve_data=bool(inputs[outputs.PRESERVE_DATA]),
            owner=f"{pulumi.get_project()}/{pulumi.get_stack()}",
            pipeline_timeout=config.pipeline_timeout,
            runner_id=inputs.get(outputs.RUNNER_ID),
        ),
    )
    return {
        outputs.APP_URLS: {project.name: f"https://{project.host}.{domain}" for project in projects if project.host},
        outputs.PIPELINES: apps.pipelines,
    }
