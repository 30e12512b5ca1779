"""phase3: the apps on GitLab, which build and deploy themselves.

The projects of `apps/apps_manifest.yaml` in the platform's group (phase2's), their variables and
sources, and one smoke pipeline per project, through GitLab's API (the admin token, our CA).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi

import credentials
from apps_manifest import load_manifest
from components.gitlab_projects import GROUP, GitLabProjects, GitLabProjectsArgs
from components.openbao import WRITER_USER
from providers.cluster_access import target_of
from stacks import outputs, runtime
from stacks.config.phases import load_phase3
from stacks.mirror import mirror


def admin_token(inputs: Mapping[str, Any]) -> pulumi.Input[str]:
    """Root's GitLab token (secret): in `dev`, the seeded one phase2 hands on in the graph, so that every
    call waits for the seeding; in a phase3 stack, the platform's (stacks/runtime.py).
    """
    if outputs.SEEDED_ADMIN_TOKEN in inputs:
        seeded: pulumi.Input[str] = inputs[outputs.SEEDED_ADMIN_TOKEN]
        return seeded
    return runtime.current().platform.admin_token(inputs)


def writer_password(inputs: Mapping[str, Any]) -> pulumi.Input[str]:
    """The password of OpenBao's `blueprint` user (secret), which phase3's credentials are written
    with: in `dev`, phase2's in the graph; in a phase3 stack, the platform's, as the token.
    """
    if outputs.OPENBAO_WRITER_PASSWORD in inputs:
        in_graph: pulumi.Input[str] = inputs[outputs.OPENBAO_WRITER_PASSWORD]
        return in_graph
    return runtime.current().platform.writer_password(inputs)


def preflight_applies(inputs: Mapping[str, Any]) -> bool:
    """Whether phase3 checks the platform before it starts: in a phase3 stack, whose platform phase2
    brought up earlier; not in `dev`, where GitLab comes up in the same run (phase2 hands on the
    seeded token there).
    """
    return outputs.SEEDED_ADMIN_TOKEN not in inputs


def deploy(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Build phase3 from phase2's outputs (`inputs`)."""
    config = load_phase3()
    projects = tuple(load_manifest())  # a malformed manifest stops here, before any resource
    gitlab_url = str(inputs[outputs.GITLAB_URL])
    domain = gitlab_url.split("://", 1)[-1].split(".", 1)[1]
    if (group_path := str(inputs[outputs.APPS_GROUP_PATH])) != GROUP:
        raise pulumi.RunError(
            f"phase2's group is {group_path!r}, and these apps go into {GROUP!r}: phase2 was brought up from another "
            f"version of blueprint. Bring it up from this one (`uv run blueprint up --phase 2`)"
        )
    if preflight_applies(inputs):
        # What does not answer stops here, before any resource, named with its fix.
        runtime.current().platform.preflight(inputs)
    token = admin_token(inputs)  # a missing token file stops here, before any resource
    openbao_password = writer_password(inputs)  # so does a missing OpenBao password file
    apps = GitLabProjects(
        "apps",
        GitLabProjectsArgs(
            projects=projects,
            gitlab_url=gitlab_url,
            token=token,
            ca_file=outputs.gateway_ca_file(inputs),
            domain=domain,
            registry_host=str(inputs[outputs.REGISTRY_HOST]),
            deploy_kubeconfig=inputs[outputs.DEPLOY_KUBECONFIG],
            group_id=inputs[outputs.APPS_GROUP_ID],
            group_owner=str(inputs[outputs.APPS_GROUP_OWNER]),
            preserve_data=bool(inputs[outputs.PRESERVE_DATA]),
            owner=f"{pulumi.get_project()}/{pulumi.get_stack()}",
            pipeline_timeout=config.pipeline_timeout,
            runner_id=inputs.get(outputs.RUNNER_ID),
            gitlab_forward=target_of(inputs, outputs.GITLAB_FORWARD),
        ),
    )
    # The deploy tokens phase3 makes, mirrored into OpenBao from the catalogue (credentials.py);
    # in `dev` each write waits for OpenBao's initialisation too.
    mirror(
        credentials.in_stack("phase3", [project.name for project in projects if project.build]),
        {credentials.deploy_token(project).name: token.deploy_token for project, token in apps.deploy_tokens.items()},
        context={
            str(credentials.deploy_token(project).path): {"username": token.username} for project, token in apps.deploy_tokens.items()
        },
        address=inputs[outputs.OPENBAO_ADDR],
        ca_file=inputs[outputs.CA_CERT_FILE],
        server_name=inputs[outputs.OPENBAO_SERVER_NAME],
        username=WRITER_USER,
        password=openbao_password,
        depends_on=[inputs[outputs.OPENBAO_INIT]] if outputs.OPENBAO_INIT in inputs else [],
        # The tokens go with the projects under preserveData=false: their entries too (OpenBao's data
        # outlives phase3's destroy); kept, both stay.
        delete_on_destroy=not bool(inputs[outputs.PRESERVE_DATA]),
        forward=target_of(inputs, outputs.OPENBAO_FORWARD),
    )
    return {
        outputs.APP_URLS: {project.name: f"https://{project.host}.{domain}" for project in projects if project.host},
        outputs.PIPELINES: apps.pipelines,
    }
