"""The apps on GitLab: one project per manifest entry in the platform's `blueprint-apps` group,
their CI/CD variables, their sources (one commit per change) and, for each project, a smoke
pipeline that must go green (a deploying project's deploys its app; shared-code's checks the templates).

The group is phase2's, which exports its id and its mark; what this component puts in the group is
checked against that mark (`group_owner`). Every project's `.gitlab-ci.yml` is rendered here from
the manifest (`render_ci`): it includes `shared-code`'s `templates/pipeline.yml`, so a change to
the templates reaches every project, and the file a project holds is visible in the plan. CI
deploys with the kubeconfig of an account limited to the apps namespace: a protected file variable
of the group, which GitLab hands only to jobs of protected refs; each project's default branch is
protected (`providers/gitlab_project.py`), and the pipeline deploys from it alone.

Everything here that lives in GitLab's database (projects, variables, deploy tokens) is got or
created (`providers/gitlab_get_or_create.py`): a new state over a preserved GitLab adopts what is ours and refuses what is not. With
`preserve_data` a destroy leaves all of it in GitLab (`retain_on_delete`); without, it deletes it.
Why: docs/design/decisions.md, entries 1, 29, 30, 31 and 33.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from pathlib import Path

import pulumi
import yaml

from apps_manifest import APPS_DIR, PIPELINE_TEMPLATE, SHARED_CODE, SHARED_CODE_PIPELINE, AppProject, folder_files
from providers.cluster_access import Target
from providers.gitlab_api import Connection
from providers.gitlab_deploy_token import DeployToken, DeployTokenArgs
from providers.gitlab_pipeline import SmokePipeline, SmokePipelineArgs
from providers.gitlab_project import Project, ProjectArgs
from providers.gitlab_sync import FileContent, GitLabSync, GitLabSyncArgs
from providers.gitlab_variable import GroupVariable, ProjectVariable, VariableArgs

GROUP = "blueprint-apps"
"""The platform's group (phase2 makes it), where the apps' projects go."""


@dataclass(frozen=True, kw_only=True)
class GitLabProjectsArgs:
    projects: tuple[AppProject, ...]
    gitlab_url: str
    token: pulumi.Input[str]
    """The admin token (secret): everything here calls GitLab's API with it."""
    ca_file: pulumi.Input[str]
    domain: str
    registry_host: str
    deploy_kubeconfig: pulumi.Input[str]
    """A kubeconfig for the apps namespace only (secret)."""
    group_id: pulumi.Input[str]
    """The id of the platform's group (GROUP), which phase2 made."""
    group_owner: str
    """The mark on that group (`<pulumi project>/<stack>` of the stack that made it)."""
    preserve_data: bool
    """Keep the projects and all in them in GitLab when the stack is destroyed: they live in
    GitLab's database, which preserveData keeps."""
    owner: str
    """`<pulumi project>/<stack>`: the mark on the projects that makes them ours."""
    pipeline_timeout: int = 600
    runner_id: pulumi.Input[str] | None = None
    """The default runner's id, once the runners are up: the smoke pipelines wait for it."""
    gitlab_forward: Target | None = None
    """On an existing cluster, Envoy's Service, which GitLab is reached through (providers/cluster_access.py)."""


def templates_digest() -> str:
    """A digest of shared-code's templates. Each project's CI file carries it, so a template change
    is a change of every project: one commit each, so every pipeline runs the new templates.
    Only the templates pushed count (`folder_files`): an editor's swap file that .gitignore keeps
    home changes no pipeline, and the caps bound what is read.
    """
    templates = APPS_DIR / SHARED_CODE / "templates"
    digest = hashlib.sha256()
    for path in folder_files(APPS_DIR / SHARED_CODE, f"apps/{SHARED_CODE}").paths:
        if templates in path.parents and (data := _read(path)) is not None:
            digest.update(path.relative_to(templates).as_posix().encode() + b"\0" + data + b"\0")
    return digest.hexdigest()[:16]


def _read(path: Path) -> bytes | None:
    """The bytes of `path`, a file to push; None when it is gone since it was listed (it is not pushed)."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise pulumi.RunError(f"{path} cannot be read ({error.strerror or error}); make it readable, or remove it") from None


def render_ci(project: AppProject) -> str:
    """The project's `.gitlab-ci.yml`."""
    header = (
        "# Rendered by blueprint from apps/apps_manifest.yaml: change apps/shared-code/templates/, not this file.\n"
        f"# templates: {templates_digest()}\n"
    )
    if project.name == SHARED_CODE:
        document = {"include": [{"local": SHARED_CODE_PIPELINE}]}
    else:
        document = {"include": [{"project": f"{GROUP}/{SHARED_CODE}", "ref": "main", "file": PIPELINE_TEMPLATE}]}
    return header + yaml.safe_dump(document, sort_keys=False)


def as_text(data: bytes) -> str | None:
    """`data` as text, or None when it is binary: not UTF-8, or holding a NUL byte."""
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def project_files(project: AppProject) -> dict[str, FileContent]:
    """Everything the project's branch holds: its files (`apps_manifest.folder_files`) and its .gitlab-ci.yml.
    A file that decodes as UTF-8 and holds no NUL byte is text (git's own test for binary is a NUL),
    its content the string itself (byte for byte: no newline translation); any other is binary,
    `{"base64": ...}` of its bytes, which the sync sends as a base64 action (GitLab refuses a request
    with a NUL in any of its strings: its Gitlab::Middleware::HandleMalformedStrings). A dict is never
    text, so the two cannot be confused, and the plan shows every text file as it is.
    """
    files: dict[str, FileContent] = {}
    found = folder_files(project.folder, f"apps/{project.name}")
    if found.problems:  # the manifest check refused them before anything was registered; so this is a race
        raise pulumi.RunError("; ".join(found.problems))
    for path in found.paths:
        if (data := _read(path)) is None:
            continue
        text = as_text(data)
        files[path.relative_to(project.folder).as_posix()] = (
            text if text is not None else {"base64": base64.b64encode(data).decode("ascii")}
        )
    files[".gitlab-ci.yml"] = render_ci(project)
    return files


def _push_order(projects: tuple[AppProject, ...]) -> list[str]:
    """Manifest order, except that a project comes after what it needs (shared-code first)."""
    order: list[str] = []
    by_name = {project.name: project for project in projects}

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in order:
            return
        if name in path:
            raise pulumi.RunError(f"apps/apps_manifest.yaml: `needs` goes round in a circle: {' -> '.join((*path, name))}")
        for need in by_name[name].needs:
            visit(need, (*path, name))
        order.append(name)

    for project in projects:
        visit(project.name, ())
    return order


GROUP_VARIABLES = (("DEPLOY_KUBECONFIG", True, "file", True), ("BLUEPRINT_DOMAIN", False, "env_var", False))
"""The group's variables: (key, secret, variable_type, protected); `blueprint verify` checks them as designed here."""


def variables(project: AppProject, *, registry_host: str, domain: str) -> dict[str, str]:
    """The project's CI/CD variables (plain: nothing here is a secret)."""
    values = {}
    if project.build:
        values["CI_REGISTRY_IMAGE"] = f"{registry_host}/{GROUP}/{project.name}"
    if project.chart:
        values["CI_HELM_CHART_DIR"] = project.chart
    if project.host:
        values["APP_HOST"] = f"{project.host}.{domain}"
    return values


_Made = tuple[AppProject, Project, list[pulumi.Resource]]
"""A project, its repository, and the settings its first sync waits for: the group's and its variables, its deploy token."""


class GitLabProjects(pulumi.ComponentResource):
    """The apps' projects in the platform's group, and what makes each build and deploy itself."""

    pipelines: dict[str, pulumi.Output[str]]
    """Web URL of each project's last green smoke pipeline."""
    deploy_tokens: dict[str, DeployToken]
    """Each building project's deploy token, by project name: phase3 mirrors them into OpenBao."""

    def __init__(self, name: str, args: GitLabProjectsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("blueprint:index:GitLabProjects", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # What lives in GitLab's database leaves Pulumi's state on a preserveData destroy, not GitLab.
        kept = pulumi.ResourceOptions(parent=self, retain_on_delete=args.preserve_data)
        connection = Connection(args.gitlab_url, args.token, args.ca_file, args.gitlab_forward)
        group_variables = self._group_variables(name, args, connection, kept)
        self.deploy_tokens = {}
        made: dict[str, _Made] = {}
        previous: Project | None = None
        for project in args.projects:
            repository, project_variables, token = self._project(f"{name}-{project.name}", project, args, connection, kept, previous)
            if token is not None:
                self.deploy_tokens[project.name] = token
            made[project.name] = (project, repository, [*group_variables, *project_variables, *([token] if token else [])])
            previous = repository
        self.pipelines = self._pipelines(name, args, connection, child, made)
        self.register_outputs({"pipelines": self.pipelines})

    def _group_variables(
        self, name: str, args: GitLabProjectsArgs, connection: Connection, kept: pulumi.ResourceOptions
    ) -> list[GroupVariable]:
        """The group's variables. They live in phase2's group: they are checked against its mark.
        The deploy credential is protected: GitLab hands it to jobs of protected refs alone.
        """
        return [
            GroupVariable(
                f"{name}-{key.lower().replace('_', '-')}",
                VariableArgs(
                    connection=connection,
                    parent=args.group_id,
                    key=key,
                    value=value,
                    secret=secret,
                    variable_type=variable_type,
                    protected=protected,
                    parent_owner=args.group_owner,
                ),
                opts=kept,
            )
            for key, secret, variable_type, protected in GROUP_VARIABLES
            for value in [{"DEPLOY_KUBECONFIG": args.deploy_kubeconfig, "BLUEPRINT_DOMAIN": args.domain}[key]]
        ]

    def _project(
        self,
        prefix: str,
        project: AppProject,
        args: GitLabProjectsArgs,
        connection: Connection,
        kept: pulumi.ResourceOptions,
        previous: Project | None,
    ) -> tuple[Project, list[ProjectVariable], DeployToken | None]:
        """One project, its variables and, when it builds an image, its deploy token."""
        repository = Project(
            prefix,
            ProjectArgs(
                connection=connection,
                namespace=GROUP,
                namespace_id=args.group_id,
                path=project.name,
                name=project.name,
                owner=args.owner,
                group_owner=args.group_owner,
            ),
            # Projects are made in manifest order: shared-code, whose templates the others include, first.
            opts=pulumi.ResourceOptions.merge(kept, pulumi.ResourceOptions(depends_on=[previous] if previous else [])),
        )
        project_variables = [
            ProjectVariable(
                f"{prefix}-{key.lower().replace('_', '-')}",
                VariableArgs(connection=connection, parent=repository.id, key=key, value=value),
                opts=kept,
            )
            for key, value in variables(project, registry_host=args.registry_host, domain=args.domain).items()
        ]
        if not project.build:
            return repository, project_variables, None
        # GitLab hands a deploy token of this name to jobs as CI_DEPLOY_USER/PASSWORD: the
        # cluster pulls the image with it, after the job's own token has expired.
        token = DeployToken(
            f"{prefix}-deploy-token",
            DeployTokenArgs(connection=connection, project=repository.id, name="gitlab-deploy-token", scopes=("read_registry",)),
            opts=kept,
        )
        return repository, project_variables, token

    def _pipelines(
        self, name: str, args: GitLabProjectsArgs, connection: Connection, child: pulumi.ResourceOptions, made: dict[str, _Made]
    ) -> dict[str, pulumi.Output[str]]:
        """Each project's sources and smoke pipeline, in dependency order: the templates first, then
        each project once what it needs is green. Returns each pipeline's web URL.
        """
        # The cluster the apps deploy to, as a digest (the kubeconfig is secret; its digest is not):
        # a new cluster (a restore over preserved data) runs every smoke pipeline again.
        deploy_target = pulumi.Output.unsecret(
            pulumi.Output.secret(args.deploy_kubeconfig).apply(lambda text: hashlib.sha256(text.encode()).hexdigest()[:16])
        )
        shared_code: pulumi.Resource | None = None
        smoke: dict[str, SmokePipeline] = {}
        for project_name in _push_order(args.projects):
            project, repository, settings = made[project_name]
            prefix = f"{name}-{project.name}"
            waits = [*settings, *([shared_code] if shared_code else []), *(smoke[need] for need in project.needs)]
            sync = GitLabSync(
                f"{prefix}-sync",
                GitLabSyncArgs(connection=connection, project=repository.id, files=project_files(project)),
                # The first pipeline must see the variables, the templates, and what it needs running.
                opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=waits)),
            )
            if project.name == SHARED_CODE:
                shared_code = sync
            # Every project's pipeline must go green: a deploying one's deploys and checks its app,
            # shared-code's checks the templates every other project includes (templates/shared-code.yml:
            # one job, no rules, so each push to its default branch runs it).
            smoke[project.name] = SmokePipeline(
                f"{prefix}-pipeline",
                SmokePipelineArgs(
                    connection=connection,
                    project=repository.id,
                    sha=sync.commit,
                    # A new deploy token (made again when its value was unknown) deploys again too:
                    # the app's pull Secret holds the token the last deploy had.
                    target=(
                        pulumi.Output.concat(deploy_target, "+deploy-token-", self.deploy_tokens[project.name].id)
                        if project.name in self.deploy_tokens
                        else deploy_target
                    ),
                    timeout_seconds=args.pipeline_timeout,
                    runner=args.runner_id,
                ),
                opts=child,
            )
        return {project_name: pipeline.web_url for project_name, pipeline in smoke.items()}
