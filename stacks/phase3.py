"""phase3: the apps on GitLab, which build and deploy themselves.

The group, the projects of `apps/apps_manifest.yaml`, their variables and sources, and one smoke
pipeline per deploying project, through GitLab's API (the admin token, our CA).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi

from components.gitlab_projects import GitLabProjects, GitLabProjectsArgs
from stacks import outputs
from stacks.apps_manifest import load_manifest
from stacks.config import load_phase3


def deploy(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Build phase3 from phase2's outputs (`inputs`)."""
    config = load_phase3()
    projects = tuple(load_manifest())  # a malformed manifest stops here, before any resource
    gitlab_url = str(inputs[outputs.GITLAB_URL])
    domain = gitlab_url.split("://", 1)[-1].split(".", 1)[1]
    apps = GitLabProjects(
        "apps",
        GitLabProjectsArgs(
            projects=projects,
            gitlab_url=gitlab_url,
            token=inputs[outputs.ADMIN_TOKEN],
            ca_file=inputs[outputs.CA_CERT_FILE],
            domain=domain,
            registry_host=str(inputs[outputs.REGISTRY_HOST]),
            deploy_kubeconfig=inputs[outputs.DEPLOY_KUBECONFIG],
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
