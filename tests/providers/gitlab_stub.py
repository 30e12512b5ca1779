"""A local stand-in for the part of GitLab's REST API (v4, GitLab 18-19) the GitLab providers use.

It answers as GitLab does, status codes, field names and messages included (sources in brackets):

- groups and projects with delayed deletion: a first DELETE schedules and renames to
  `<path>-deletion_scheduled-<id>` (400 "... has been already marked for deletion" when it is);
  a second with `permanently_remove` and the new `full_path` deletes, for projects and subgroups
  only; restore renames back [lib/api/groups.rb, lib/api/projects.rb `delete_project`,
  Namespaces::MarkForDeletionBaseService, Groups:: and Projects::MarkForDeletionService]. The
  400 that `immediate_deletion=False` answers is the stub's own text: the sources consulted do not
  show it (the check came with gitlab-org/gitlab!205572), and the providers decide by state;
- scheduling a project that holds container repositories is refused, 400 "Cannot rename project
  because it contains container registry tags!" (Projects::UpdateService
  #validate_renaming_project_with_tags, without the registry's metadata database; some versions
  say "Cannot rename or delete project ..."); a group that holds some is scheduled unrenamed;
- a GET of a renamed project's old path answers 301 with an absolute `Location` to its id, built
  from the request's host [lib/api/helpers.rb `find_project!`, `url_with_project_id`]; a renamed
  group's old path is 404 (`find_group` follows no redirects);
- custom attributes [lib/api/custom_attributes_endpoints.rb], also inline in a group's or
  project's answer with `with_custom_attributes=true`, for an admin only
  [lib/api/helpers/custom_attributes.rb `with_custom_attributes`];
- who made what: a group made through the API has its maker as its one member, an Owner whose
  membership names no `created_by` (Groups::CreateService `add_owner(current_user)`); a member
  added later names who added it [Members::Creator#member_attributes, API::Entities::Member]; a
  project carries its `creator_id` [API::Entities::Project]; `GET /user` is the token's user.
  What a test adds directly is made by `USER`, someone other than the admin, unless it says;
- group and project variables, per environment scope: GET, PUT and DELETE of a key held in
  several scopes answer 409 unless `filter[environment_scope]` picks one
  [doc/api/*_level_variables.md, lib/api/helpers/variables_helpers.rb `find_variable`];
- project deploy tokens [lib/api/deploy_tokens.rb]; container registry repositories, deleted in
  the background: a deleted one is still listed, `delete_scheduled`, for `registry_lag` listings
  [lib/api/project_container_repositories.rb, doc/api/container_registry.md];
- runners [lib/api/ci/runners.rb: `tag_list` lists runners carrying every tag named; a group's
  runners are its own, its ancestors' and, without a `type`, the instance's
  (Ci::Runner.group_or_instance_wide); a runner's details name its groups, for an admin every one
  (Entities::Ci::RunnerDetails)]; runners made through `POST /user/runners` [lib/api/user_runners.rb:
  a group runner needs `group_id`, and one of a group that is not there is refused, 400 "Missing/invalid
  group" (Ci::Runners::RunnerCreationStrategies::GroupRunnerStrategy)];
- protected branches, by name, whether the repository holds that branch or not; protecting one
  that is already answers 409 "Protected branch '<name>' already exists" [lib/api/protected_branches.rb];
- Admin Mode: with `admin_mode` on, a token without the `admin_mode` scope is no admin, and the
  admin-only calls (custom attributes, `/runners/all`, an instance runner) answer 403
  [doc/security/tokens/access_token_scopes.md];
- a throttled request (`failures` holding 429) answers with `Retry-After` [lib/api/helpers.rb
  `too_many_requests!`, Rack::Attack]; a request named in `lost_answers` is acted on, and then
  answered with a gateway error (the answer lost on the way back);
- a project's repository tree, branches, commits, pipelines and jobs; a commit with no action is
  refused, 400, unless it asks for `allow_empty` (gitlab-org/gitlab!211520: "Provide at least one
  action, or set allow_empty to true"), and then leaves every file as it was;
- Git over HTTP's first request, `GET /<project>.git/info/refs?service=git-upload-pack`, with Basic
  auth: root's password while `password_authentication_enabled_for_git` is on and root has no
  two-factor authentication, or a token, else 401 [lib/gitlab/auth.rb `find_for_git_client`,
  `user_with_password_for_git`; Repositories::GitHttpClientController `authenticate_user`];
- the application settings, `GET /application/settings`, for an admin [lib/api/settings.rb];
- the instance's metadata, `GET /metadata` [lib/api/metadata.rb].

Lists are paginated with `X-Next-Page`, `page_size` items a page. Any project's repository is the
one `Repository`.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import re
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from providers.gitlab_sync import blob_id
from providers.gitlab_token import ADMIN_TOKEN_SCOPES
from tests.providers.engine import free_port

TOKEN = "glpat-stub-token-value-0123456789"
ROOT_PASSWORD = "stub-root-password-0123456789"
"""root's password, which Git over HTTP takes with Basic auth."""
ADMIN = 1
"""The user `TOKEN` belongs to: `root`, an administrator."""
USER = 2
"""Someone else, without admin rights."""
OWNER_ACCESS = 50
SCHEDULED = "-deletion_scheduled-"


@dataclass
class Repository:
    files: dict[str, str | bytes] = field(default_factory=dict)
    """{path: content}: a text action's string, a base64 action's decoded bytes."""
    commits: list[dict[str, Any]] = field(default_factory=list)
    pipelines: list[dict[str, Any]] = field(default_factory=list)
    jobs: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    next_status: str = "success"
    """How a pipeline started through the API ends."""
    posts: list[str] = field(default_factory=list)
    """Paths of the pipeline runs asked for."""

    def head(self) -> str:
        return self.commits[-1]["id"] if self.commits else ""


@dataclass
class GitLabState:
    """What the stub GitLab holds; tests arrange it and read it."""

    repository: Repository = field(default_factory=Repository)
    groups: dict[int, dict[str, Any]] = field(default_factory=dict)
    projects: dict[int, dict[str, Any]] = field(default_factory=dict)
    attributes: dict[str, dict[str, str]] = field(default_factory=dict)
    """`groups/<id>` or `projects/<id>` -> {key: value}."""
    variables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """`groups/<id>` or `projects/<id>` -> its variables (a key once per environment scope)."""
    deploy_tokens: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    runners: dict[int, dict[str, Any]] = field(default_factory=dict)
    """A runner's id -> the runner; a group runner's `groups` holds its group's id."""
    protected_branches: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    """A project's id -> its protected branches."""
    redirects: dict[str, int] = field(default_factory=dict)
    """A renamed project's old full path -> its id."""
    registry: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    """A project's id -> its container repositories."""
    registry_lag: int = 1
    """How many listings a deleted container repository is still listed (GitLab deletes it in Sidekiq)."""
    immediate_deletion: bool = True
    """The instance setting `allow_immediate_namespaces_deletion` (on by default on self-managed)."""
    admin_mode: bool = False
    """The instance's Admin Mode setting."""
    token_scopes: set[str] = field(default_factory=lambda: set(ADMIN_TOKEN_SCOPES))
    """The scopes of `TOKEN`."""
    token_expires: str | None = "2027-06-30"
    settings: dict[str, Any] = field(
        default_factory=lambda: {
            "password_authentication_enabled_for_git": True,
            "require_two_factor_authentication": False,
            "require_admin_two_factor_authentication": False,
        }
    )
    """The application settings (GitLab's defaults: doc/api/settings.md)."""
    two_factor: set[int] = field(default_factory=set)
    """The users with two-factor authentication on: Git over HTTP takes no password of theirs."""
    """When `TOKEN` expires (an ISO date), or None: never."""
    failures: list[int] = field(default_factory=list)
    """Statuses to answer, one a request, before answering properly (a restarting GitLab). A 404
    among them is the gateway's own, empty: Envoy's answer for a route it does not have yet."""
    failures_for: dict[str, list[int]] = field(default_factory=dict)
    """`METHOD /path` -> statuses to answer, one a request, instead of handling it (as `failures`,
    for that request only)."""
    lost_answers: dict[str, list[int]] = field(default_factory=dict)
    """`METHOD /path` -> statuses to answer, one a request, AFTER handling it: GitLab acted, but the
    gateway lost its answer (Envoy's 502/504 while Puma still worked)."""
    retry_after: str = "1"
    """The `Retry-After` a 429 among `failures` carries."""
    redirect_base: str | None = None
    """Where redirects point (scheme and host); the request's own host when None."""
    meanwhile: Callable[[str, str, dict[str, str]], None] | None = None
    """What someone else does in GitLab just before it handles a request (method, path, query)."""
    users: dict[int, str] = field(default_factory=lambda: {ADMIN: "root", USER: "someone"})
    me: int = ADMIN
    """The user `TOKEN` belongs to."""
    members: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    """A group's id -> its members."""
    calls: list[str] = field(default_factory=list)
    """`METHOD /path` of every request, in order."""
    page_size: int = 2
    next_id: int = 100

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def add_group(self, path: str, *, owner: str | None = None, parent_id: int | None = None, creator: int = USER) -> dict[str, Any]:
        group: dict[str, Any] = {"id": self.new_id(), "name": path, "path": path, "description": "", "visibility": "private"}
        group |= {"parent_id": parent_id, "marked_for_deletion_on": None, "created_at": "2026-01-01T00:00:00.000Z"}
        self.groups[group["id"]] = group
        self.add_member(group, creator)  # its maker, whose membership names no `created_by`
        if owner is not None:
            self.attributes[f"groups/{group['id']}"] = {"blueprint_owner": owner}
        return group

    def add_member(self, group: dict[str, Any], user: int, access_level: int = OWNER_ACCESS, *, added_by: int | None = None) -> None:
        member: dict[str, Any] = {"id": user, "username": self.users[user], "state": "active", "access_level": access_level}
        member["created_at"] = "2026-01-01T00:00:00.000Z"
        if added_by is not None:
            member["created_by"] = {"id": added_by, "username": self.users[added_by], "state": "active"}
        self.members.setdefault(group["id"], []).append(member)

    def remove_member(self, group: dict[str, Any], user: int) -> None:
        self.members[group["id"]] = [member for member in self.members[group["id"]] if member["id"] != user]

    def add_project(self, group: dict[str, Any], path: str, *, owner: str | None = None, creator: int = USER) -> dict[str, Any]:
        project: dict[str, Any] = {"id": self.new_id(), "name": path, "path": path, "namespace_id": group["id"], "visibility": "private"}
        project |= {"default_branch": "main", "marked_for_deletion_at": None, "creator_id": creator}
        self.projects[project["id"]] = project
        if owner is not None:
            self.attributes[f"projects/{project['id']}"] = {"blueprint_owner": owner}
        return project

    def add_variable(self, holder: str, key: str, value: str, scope: str = "*") -> dict[str, Any]:
        variable = {"variable_type": "env_var", "key": key, "value": value, "protected": False, "masked": False}
        variable |= {"hidden": False, "raw": False, "environment_scope": scope, "description": None}
        self.variables.setdefault(holder, []).append(variable)
        return variable

    def variable(self, holder: str, key: str, scope: str = "*") -> dict[str, Any]:
        return next(v for v in self.variables.get(holder, []) if v["key"] == key and v["environment_scope"] == scope)

    def add_image(self, project: dict[str, Any], name: str = "") -> dict[str, Any]:
        full_path = self.project_full_path(project)
        repository = {"id": self.new_id(), "name": name, "path": f"{full_path}/{name}".rstrip("/"), "project_id": project["id"]}
        repository |= {"location": f"registry.example/{repository['path']}", "created_at": "2026-01-01T00:00:00Z", "status": None}
        self.registry.setdefault(project["id"], []).append(repository)
        return repository

    def holds_images(self, group: dict[str, Any]) -> bool:
        return any(self.registry.get(p["id"]) for p in self.projects.values() if p["namespace_id"] == group["id"])

    def add_runner(self, description: str, tags: list[str], *, group: dict[str, Any] | None = None) -> dict[str, Any]:
        """An instance runner, or with `group` a runner of that group."""
        runner: dict[str, Any] = {"id": self.new_id(), "description": description, "tag_list": tags, "run_untagged": True, "active": True}
        runner["access_level"] = "not_protected"  # Ci::Runner's default (enum access_level)
        runner |= {"runner_type": "instance_type", "online": False, "status": "offline", "token": f"glrt-stub-{self.next_id}"}
        runner["groups"] = [] if group is None else [group["id"]]
        if group is not None:
            runner["runner_type"] = "group_type"
        self.runners[runner["id"]] = runner
        return runner

    def group_full_path(self, group: dict[str, Any]) -> str:
        parent = self.groups.get(group["parent_id"]) if group["parent_id"] else None
        return f"{self.group_full_path(parent)}/{group['path']}" if parent else str(group["path"])

    def project_full_path(self, project: dict[str, Any]) -> str:
        return f"{self.group_full_path(self.groups[project['namespace_id']])}/{project['path']}"


def _access_level(params: dict[str, Any], current: str = "not_protected") -> str:
    """A runner's `access_level` from a create or update call: one of Ci::Runner.access_levels' keys,
    else 400, as grape's `values:` check answers (lib/api/user_runners.rb, lib/api/ci/runners.rb)."""
    level = str(params.get("access_level", current))
    if level not in ("not_protected", "ref_protected"):
        raise Refusal(400, {"error": "access_level does not have a valid value"})
    return level


class Refusal(Exception):
    def __init__(self, status: int, message: Any) -> None:
        super().__init__(status)
        self.status, self.message = status, message


def _paged(items: list[Any], query: dict[str, str], size: int) -> tuple[list[Any], dict[str, str]]:
    page = int(query.get("page", "1"))
    start = (page - 1) * size
    more = start + size < len(items)
    return items[start : start + size], {"X-Next-Page": str(page + 1) if more else ""}


class GitLabStub(http.server.BaseHTTPRequestHandler):
    state: GitLabState
    routes: list[tuple[str, re.Pattern[str], Callable[..., Any]]] = []

    def _reply(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _handle(self, method: str) -> None:
        url = urlparse(self.path)
        path = url.path.removeprefix("/api/v4")
        self.state.calls.append(f"{method} {path}")
        if not url.path.startswith("/api/v4/") and (git := re.fullmatch(r"/(.+)\.git/info/refs", url.path)):
            self._git_info_refs(git.group(1))
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else {}
        if self.headers.get("PRIVATE-TOKEN") != TOKEN:
            self._reply(401, {"message": "401 Unauthorized"})
            return
        if self.state.failures or self.state.failures_for.get(f"{method} {path}"):
            status = (self.state.failures or self.state.failures_for[f"{method} {path}"]).pop(0)
            throttled = {"Retry-After": self.state.retry_after} if status == 429 else {}
            self._reply(status, None if status == 404 else {"message": "stub: GitLab is restarting or throttling"}, throttled)
            return
        query = {key: values[-1] for key, values in parse_qs(url.query).items()}
        if self.state.meanwhile is not None:
            self.state.meanwhile(method, path, query)
        for route_method, pattern, handler in self.routes:
            match = pattern.fullmatch(path)
            if route_method == method and match:
                try:
                    if self.state.admin_mode and "admin_mode" not in self.state.token_scopes and handler in ADMIN_ONLY:
                        raise Refusal(403, "403 Forbidden")
                    reply = handler(self, {**query, **body}, **{key: unquote(value) for key, value in match.groupdict().items()})
                except Refusal as refusal:
                    message = refusal.message
                    self._reply(refusal.status, message if isinstance(message, dict) else {"message": message})
                    return
                if lost := self.state.lost_answers.get(f"{method} {path}"):
                    self._reply(lost.pop(0), {"message": "stub: the gateway lost GitLab's answer"})
                    return
                self._reply(*reply) if isinstance(reply, tuple) else self._reply(200, reply)
                return
        self._reply(404, {"message": "404 Not Found"})

    def _git_info_refs(self, project_path: str) -> None:
        """Git over HTTP's ref advertisement, behind Basic auth as GitLab checks it: a token, or a
        user's password while the setting allows passwords and the user has no two-factor
        authentication (a refusal is 401 with `WWW-Authenticate: Basic realm="GitLab"`); then the
        project, 404 when it is not there.
        """
        scheme, _, encoded = str(self.headers.get("Authorization", "")).partition(" ")
        login, _, password = base64.b64decode(encoded or "").decode(errors="replace").partition(":") if scheme == "Basic" else ("", "", "")
        user = next((id_ for id_, name in self.state.users.items() if name == login), None)
        by_password = (
            user == ADMIN
            and password == ROOT_PASSWORD
            and self.state.settings["password_authentication_enabled_for_git"]
            and user not in self.state.two_factor
        )
        if not (by_password or password == TOKEN):
            body = b"HTTP Basic: Access denied. If a password was provided for Git authentication, the password was incorrect"
            self._raw(401, body, "text/plain", {"WWW-Authenticate": 'Basic realm="GitLab"'})
            return
        if not any(self.state.project_full_path(project) == project_path for project in self.state.projects.values()):
            self._raw(404, b"The project you were looking for could not be found.", "text/plain")
            return
        self._raw(200, b"001e# service=git-upload-pack\n0000", "application/x-git-upload-pack-advertisement")

    def _raw(self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's names)
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._handle("PUT")

    def do_DELETE(self) -> None:  # noqa: N802
        self._handle("DELETE")

    def do_PATCH(self) -> None:  # noqa: N802
        self._handle("PATCH")

    def log_message(self, *_: Any) -> None:
        return

    # Groups and projects.

    def _group(self, id_: str) -> dict[str, Any]:
        for group in self.state.groups.values():
            if str(group["id"]) == id_ or self.state.group_full_path(group).lower() == id_.lower():
                return group
        raise Refusal(404, "404 Group Not Found")

    def _project(self, id_: str) -> dict[str, Any]:
        for project in self.state.projects.values():
            if str(project["id"]) == id_ or self.state.project_full_path(project).lower() == id_.lower():
                return project
        raise Refusal(404, "404 Project Not Found")

    def _show_group(self, group: dict[str, Any]) -> dict[str, Any]:
        full_path = self.state.group_full_path(group)
        return {**group, "full_path": full_path, "web_url": f"https://gitlab.example/groups/{full_path}"}

    def _show_project(self, project: dict[str, Any]) -> dict[str, Any]:
        full_path = self.state.project_full_path(project)
        shown = {key: value for key, value in project.items() if key != "namespace_id"}
        shown["namespace"] = {
            "id": project["namespace_id"],
            "full_path": self.state.group_full_path(self.state.groups[project["namespace_id"]]),
        }
        when = project["marked_for_deletion_at"]
        return {**shown, "path_with_namespace": full_path, "marked_for_deletion_on": when, "web_url": f"https://gitlab.example/{full_path}"}

    def _admin(self) -> bool:
        """Whether `TOKEN` acts as an administrator (with Admin Mode on, only with the `admin_mode` scope)."""
        return not self.state.admin_mode or "admin_mode" in self.state.token_scopes

    def _with_attributes(self, params: dict[str, Any], holder: str, shown: dict[str, Any]) -> dict[str, Any]:
        """`shown` with its custom attributes when asked for and the caller is an admin, as GitLab does."""
        if str(params.get("with_custom_attributes")).lower() != "true" or not self._admin():
            return shown
        attributes = self.state.attributes.get(holder, {})
        return {**shown, "custom_attributes": [{"key": key, "value": value} for key, value in attributes.items()]}

    def get_group(self, params: dict[str, Any], id_: str) -> Any:
        group = self._group(id_)
        return self._with_attributes(params, f"groups/{group['id']}", self._show_group(group))

    def group_members(self, params: dict[str, Any], id_: str) -> Any:
        items, headers = _paged(list(self.state.members.get(self._group(id_)["id"], [])), params, self.state.page_size)
        return 200, items, headers

    def current_user(self, _: dict[str, Any]) -> Any:
        """The token's user (lib/api/users.rb `get "user"`: Entities::UserPublic, `two_factor_enabled` included)."""
        me = self.state.me
        return {
            "id": me,
            "username": self.state.users[me],
            "state": "active",
            "is_admin": self._admin(),
            "two_factor_enabled": me in self.state.two_factor,
        }

    def application_settings(self, _: dict[str, Any]) -> Any:
        return dict(self.state.settings)

    def create_group(self, params: dict[str, Any]) -> Any:
        if any(self.state.group_full_path(group).lower() == str(params["path"]).lower() for group in self.state.groups.values()):
            raise Refusal(400, 'Failed to save group {:path=>["has already been taken"]}')
        group = self.state.add_group(str(params["path"]), creator=self.state.me)
        group |= {key: params[key] for key in ("name", "description", "visibility") if key in params}
        return 201, self._show_group(group)

    def update_group(self, params: dict[str, Any], id_: str) -> Any:
        group = self._group(id_)
        group |= {key: params[key] for key in ("name", "path", "description", "visibility") if key in params}
        return self._show_group(group)

    def delete_group(self, params: dict[str, Any], id_: str) -> Any:
        group = self._group(id_)
        if str(params.get("permanently_remove")).lower() == "true":
            if not self.state.immediate_deletion:
                raise Refusal(400, "stub: immediate deletion is not allowed on this instance")
            if group["parent_id"] is None:
                raise Refusal(400, "`permanently_remove` option is only available for subgroups.")
            if not group["marked_for_deletion_on"]:
                raise Refusal(400, "Group must be marked for deletion first.")
            if params.get("full_path") != self.state.group_full_path(group):
                raise Refusal(400, "`full_path` is incorrect. You must enter the complete path for the subgroup.")
            del self.state.groups[group["id"]]
            self.state.projects = {key: p for key, p in self.state.projects.items() if p["namespace_id"] != group["id"]}
            return 202, {"message": "202 Accepted"}
        if group["marked_for_deletion_on"]:
            raise Refusal(400, "Group has been already marked for deletion")
        group["marked_for_deletion_on"] = "2026-07-01"
        if not self.state.holds_images(group):
            group["path"] += f"{SCHEDULED}{group['id']}"
            group["name"] += f"{SCHEDULED}{group['id']}"
        return 202, {"message": "202 Accepted"}

    def restore_group(self, _: dict[str, Any], id_: str) -> Any:
        group = self._group(id_)
        if not group["marked_for_deletion_on"]:
            raise Refusal(400, "Group has not been marked for deletion")
        group["marked_for_deletion_on"] = None
        original = group["path"].split(SCHEDULED)[0]
        # Namespaces::RestoreBaseService: the old path, or, if it is taken, the old path with a random suffix.
        taken = any(other["path"] == original and other is not group for other in self.state.groups.values())
        group["path"] = group["name"] = f"{original}-Ab3xZ" if taken else original
        return 201, self._show_group(group)

    def get_project(self, params: dict[str, Any], id_: str) -> Any:
        try:
            project = self._project(id_)
            return self._with_attributes(params, f"projects/{project['id']}", self._show_project(project))
        except Refusal:
            moved = self.state.redirects.get(id_.lower())  # the old path of a renamed project
            if moved not in self.state.projects:
                raise
            base = self.state.redirect_base or f"http://{self.headers['Host']}"
            return 301, {"message": "301 Moved Permanently"}, {"Location": f"{base}/api/v4/projects/{moved}"}

    def create_project(self, params: dict[str, Any]) -> Any:
        group = self._group(str(params["namespace_id"]))
        for project in self.state.projects.values():
            if project["namespace_id"] == group["id"] and project["path"] == params["path"]:
                raise Refusal(400, {"message": {"name": ["has already been taken"], "path": ["has already been taken"]}})
        project = self.state.add_project(group, str(params["path"]), creator=self.state.me)
        project |= {key: params[key] for key in ("name", "visibility", "default_branch") if key in params}
        return 201, self._show_project(project)

    def update_project(self, params: dict[str, Any], id_: str) -> Any:
        project = self._project(id_)
        if params.get("path", project["path"]) != project["path"]:  # a rename leaves a redirect
            self.state.redirects[self.state.project_full_path(project).lower()] = project["id"]
        project |= {key: params[key] for key in ("name", "path", "visibility", "default_branch") if key in params}
        return self._show_project(project)

    def delete_project(self, params: dict[str, Any], id_: str) -> Any:
        project = self._project(id_)
        if str(params.get("permanently_remove")).lower() == "true":
            if not self.state.immediate_deletion:
                raise Refusal(400, "stub: immediate deletion is not allowed on this instance")
            if not project["marked_for_deletion_at"]:
                raise Refusal(400, "Project must be marked for deletion first.")
            if params.get("full_path") != self.state.project_full_path(project):
                raise Refusal(400, "`full_path` is incorrect. You must enter the complete path for the project.")
            del self.state.projects[project["id"]]
            return 202, {"message": "202 Accepted"}
        if self.state.groups[project["namespace_id"]]["marked_for_deletion_on"]:
            return 202, {"message": "202 Accepted"}  # `ancestor_scheduled_for_deletion?`: it goes with its group
        if project["marked_for_deletion_at"]:
            raise Refusal(400, "Project has been already marked for deletion")
        if self.state.registry.get(project["id"]):
            raise Refusal(400, "Cannot rename project because it contains container registry tags!")
        self.state.redirects[self.state.project_full_path(project).lower()] = project["id"]
        project |= {"marked_for_deletion_at": "2026-07-01", "archived": True}
        project["path"] += f"{SCHEDULED}{project['id']}"
        project["name"] += f"{SCHEDULED}{project['id']}"
        return 202, {"message": "202 Accepted"}

    def restore_project(self, _: dict[str, Any], id_: str) -> Any:
        project = self._project(id_)
        if not project["marked_for_deletion_at"]:
            raise Refusal(400, "Project has not been marked for deletion")
        project |= {"marked_for_deletion_at": None, "archived": False}
        project["path"], project["name"] = project["path"].split(SCHEDULED)[0], project["name"].split(SCHEDULED)[0]
        return 201, self._show_project(project)

    def _holder(self, scope: str, id_: str) -> str:
        holder = self._group(id_) if scope == "groups" else self._project(id_)
        return f"{scope}/{holder['id']}"

    def get_attribute(self, _: dict[str, Any], scope: str, id_: str, key: str) -> Any:
        attributes = self.state.attributes.get(self._holder(scope, id_), {})
        if key not in attributes:
            raise Refusal(404, "404 Not found")
        return {"key": key, "value": attributes[key]}

    def set_attribute(self, params: dict[str, Any], scope: str, id_: str, key: str) -> Any:
        self.state.attributes.setdefault(self._holder(scope, id_), {})[key] = str(params["value"])
        return {"key": key, "value": str(params["value"])}

    # CI/CD variables.

    def _variables(self, scope: str, id_: str) -> list[dict[str, Any]]:
        return self.state.variables.setdefault(self._holder(scope, id_), [])

    def _variable(self, params: dict[str, Any], scope: str, id_: str, key: str) -> dict[str, Any]:
        environment = params.get("filter[environment_scope]")
        found = [v for v in self._variables(scope, id_) if v["key"] == key and environment in (None, v["environment_scope"])]
        if len(found) > 1:
            raise Refusal(409, "There are multiple variables with provided parameters. Please use 'filter[environment_scope]'")
        if not found:
            raise Refusal(404, "404 Variable Not Found")
        return found[0]

    def get_variable(self, params: dict[str, Any], scope: str, id_: str, key: str) -> Any:
        return self._variable(params, scope, id_, key)

    def create_variable(self, params: dict[str, Any], scope: str, id_: str) -> Any:
        key, environment = str(params["key"]), str(params.get("environment_scope", "*"))
        if any(v["key"] == key and v["environment_scope"] == environment for v in self._variables(scope, id_)):
            raise Refusal(400, {"message": {"key": [f"({key}) has already been taken"]}})
        variable = self.state.add_variable(self._holder(scope, id_), key, str(params["value"]), environment)
        variable |= {name: params[name] for name in ("variable_type", "protected", "masked", "raw") if name in params}
        return 201, variable

    def update_variable(self, params: dict[str, Any], scope: str, id_: str, key: str) -> Any:
        variable = self._variable(params, scope, id_, key)
        variable |= {name: params[name] for name in ("value", "variable_type", "protected", "masked", "raw") if name in params}
        return variable

    def delete_variable(self, params: dict[str, Any], scope: str, id_: str, key: str) -> Any:
        self._variables(scope, id_).remove(self._variable(params, scope, id_, key))
        return 204, None

    # Container registry.

    def list_repositories(self, params: dict[str, Any], id_: str) -> Any:
        project = self._project(id_)
        listed = list(self.state.registry.get(project["id"], []))
        for repository in listed:
            if repository["status"] == "delete_scheduled":
                repository["lag"] = repository.get("lag", self.state.registry_lag) - 1
                if repository["lag"] < 0:  # Sidekiq got to it
                    self.state.registry[project["id"]].remove(repository)
        listed = [{k: v for k, v in r.items() if k != "lag"} for r in self.state.registry.get(project["id"], [])]
        items, headers = _paged(listed, params, self.state.page_size)
        return 200, items, headers

    def delete_repository(self, _: dict[str, Any], id_: str, repository_id: str) -> Any:
        project = self._project(id_)
        for repository in self.state.registry.get(project["id"], []):
            if str(repository["id"]) == repository_id:
                repository["status"] = "delete_scheduled"
                return 202, None
        raise Refusal(404, "404 Not found")

    # Deploy tokens.

    def list_deploy_tokens(self, params: dict[str, Any], id_: str) -> Any:
        tokens = [self._show_token(token) for token in self.state.deploy_tokens.get(self._project(id_)["id"], [])]
        if str(params.get("active")).lower() == "true":
            tokens = [token for token in tokens if not token["revoked"] and not token["expired"]]
        items, headers = _paged(tokens, params, self.state.page_size)
        return 200, items, headers

    @staticmethod
    def _show_token(token: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in token.items() if key != "token"}

    def create_deploy_token(self, params: dict[str, Any], id_: str) -> Any:
        project, token_id = self._project(id_), self.state.new_id()
        token = {"id": token_id, "name": params["name"], "username": f"gitlab+deploy-token-{token_id}", "expires_at": None}
        token |= {"scopes": list(params["scopes"]), "revoked": False, "expired": False, "token": f"gldt-stub-{token_id}"}
        self.state.deploy_tokens.setdefault(project["id"], []).append(token)
        return 201, token

    def _token(self, id_: str, token_id: str) -> dict[str, Any]:
        for token in self.state.deploy_tokens.get(self._project(id_)["id"], []):
            if str(token["id"]) == token_id:
                return token
        raise Refusal(404, "404 Not found")

    def get_deploy_token(self, _: dict[str, Any], id_: str, token_id: str) -> Any:
        return self._show_token(self._token(id_, token_id))

    def delete_deploy_token(self, _: dict[str, Any], id_: str, token_id: str) -> Any:
        token = self._token(id_, token_id)
        self.state.deploy_tokens[self._project(id_)["id"]].remove(token)
        return 204, None

    # Runners.

    def _runner(self, id_: str) -> dict[str, Any]:
        if int(id_) not in self.state.runners:
            raise Refusal(404, "404 Runner Not Found")
        return self.state.runners[int(id_)]

    def _show_runner(self, runner: dict[str, Any], *, details: bool) -> dict[str, Any]:
        shown = {key: runner[key] for key in ("id", "description", "active", "runner_type", "online", "status")}
        shown |= {"ip_address": None, "paused": not runner["active"], "is_shared": runner["runner_type"] == "instance_type", "name": None}
        if not details:
            return shown
        groups = [self.state.groups[id_] for id_ in runner["groups"] if id_ in self.state.groups]
        shown["groups"] = [{"id": g["id"], "name": g["name"], "web_url": self._show_group(g)["web_url"]} for g in groups]
        return shown | {"tag_list": runner["tag_list"], "run_untagged": runner["run_untagged"], "access_level": runner["access_level"]}

    def list_runners(self, params: dict[str, Any]) -> Any:
        """Instance runners of a type, those carrying every tag of `tag_list` (lib/api/ci/runners.rb)."""
        tags = set(filter(None, str(params.get("tag_list", "")).split(",")))
        runners = [
            self._show_runner(runner, details=False)
            for runner in self.state.runners.values()
            if runner["runner_type"] == params.get("type", runner["runner_type"]) and tags <= set(runner["tag_list"])
        ]
        items, headers = _paged(runners, params, self.state.page_size)
        return 200, items, headers

    def list_group_runners(self, params: dict[str, Any], id_: str) -> Any:
        """The group's runners, its ancestors' and, unless `type` says otherwise, the instance's."""
        group: dict[str, Any] | None = self._group(id_)
        lineage: set[int] = set()
        while group is not None:
            lineage.add(group["id"])
            group = self.state.groups.get(group["parent_id"]) if group["parent_id"] else None
        runners = [
            self._show_runner(runner, details=False)
            for runner in self.state.runners.values()
            if (runner["runner_type"] == "instance_type" or lineage & set(runner["groups"]))
            and runner["runner_type"] == params.get("type", runner["runner_type"])
        ]
        items, headers = _paged(runners, params, self.state.page_size)
        return 200, items, headers

    def create_runner(self, params: dict[str, Any]) -> Any:
        if params["runner_type"] == "instance_type" and self.state.admin_mode and "admin_mode" not in self.state.token_scopes:
            raise Refusal(403, "403 Forbidden")
        group = None
        if params["runner_type"] == "group_type":
            if "group_id" not in params:
                raise Refusal(400, {"error": "group_id is missing"})
            group = self.state.groups.get(int(params["group_id"]))
            if group is None:
                raise Refusal(400, "Missing/invalid group")
        runner = self.state.add_runner(str(params.get("description", "")), list(params.get("tag_list", [])), group=group)
        runner |= {"runner_type": params["runner_type"], "run_untagged": bool(params.get("run_untagged", True))}
        runner["access_level"] = _access_level(params)
        return 201, {"id": runner["id"], "token": runner["token"], "token_expires_at": None}

    def get_runner(self, _: dict[str, Any], id_: str) -> Any:
        return self._show_runner(self._runner(id_), details=True)

    def metadata(self, _: dict[str, Any]) -> Any:
        """The instance's metadata, for any authenticated user (lib/api/metadata.rb, Entities::Metadata)."""
        kas = {"enabled": True, "externalUrl": None, "externalK8sProxyUrl": None, "version": None}
        return {"version": "19.1.0", "revision": "0123456789a", "kas": kas, "enterprise": False}

    def version(self, _: dict[str, Any]) -> Any:
        """GitLab's version, for any authenticated user (lib/api/version.rb: the same entity as /metadata)."""
        return self.metadata(_)

    def token_self(self, _: dict[str, Any]) -> Any:
        """The token the request carries (lib/api/personal_access_tokens/self_information_api.rb, Entities::PersonalAccessToken)."""
        scopes = sorted(self.state.token_scopes)
        return {"id": 1, "name": "blueprint-admin", "revoked": False, "active": True, "scopes": scopes, "user_id": self.state.me,
                "expires_at": self.state.token_expires}  # fmt: skip

    def update_runner(self, params: dict[str, Any], id_: str) -> Any:
        runner = self._runner(id_)
        runner |= {key: params[key] for key in ("description", "tag_list", "run_untagged") if key in params}
        runner["access_level"] = _access_level(params, runner["access_level"])
        return self._show_runner(runner, details=True)

    def reset_runner_token(self, _: dict[str, Any], id_: str) -> Any:
        runner = self._runner(id_)
        runner["token"] = f"glrt-stub-reset-{self.state.new_id()}"
        return 201, {"token": runner["token"], "token_expires_at": None}

    def delete_runner(self, _: dict[str, Any], id_: str) -> Any:
        self._runner(id_)
        del self.state.runners[int(id_)]
        return 204, None

    # Protected branches.

    def get_protected_branch(self, _: dict[str, Any], id_: str, name: str) -> Any:
        for branch in self.state.protected_branches.get(self._project(id_)["id"], []):
            if branch["name"] == name:
                return branch
        raise Refusal(404, "404 Not found")

    def protect_branch(self, params: dict[str, Any], id_: str) -> Any:
        project, name = self._project(id_), str(params["name"])
        protected = self.state.protected_branches.setdefault(project["id"], [])
        if any(branch["name"] == name for branch in protected):
            raise Refusal(409, f"Protected branch '{name}' already exists")
        levels = {kind: int(params.get(f"{kind}_access_level", 40)) for kind in ("push", "merge")}
        branch = {"id": self.state.new_id(), "name": name, "allow_force_push": bool(params.get("allow_force_push", False))}
        branch |= {f"{kind}_access_levels": [{"access_level": level}] for kind, level in levels.items()}
        protected.append(branch)
        return 201, branch

    # A project's repository and pipelines (any project's are the one `Repository`).

    def tree(self, params: dict[str, Any], id_: str) -> Any:
        repo = self.state.repository
        if not repo.commits:
            raise Refusal(404, "404 Tree Not Found")
        entries = [{"path": path, "type": "blob", "id": blob_id(content)} for path, content in sorted(repo.files.items())]
        items, headers = _paged(entries, params, self.state.page_size)
        return 200, items, headers

    def branch(self, _: dict[str, Any], id_: str, branch: str) -> Any:
        return {"name": branch, "commit": {"id": self.state.repository.head()}}

    def commit(self, params: dict[str, Any], id_: str) -> Any:
        """`encoding` is `text` (the default) or `base64`, else 400 [lib/api/commits.rb
        `validate_commit_action!`]; a base64 action's content is decoded to the bytes the blob holds
        (Gitaly's UserCommitFilesActionHeader `base64_content`, lib/gitlab/gitaly_client/operation_service.rb).
        """
        repo = self.state.repository
        if not params.get("actions") and not params.get("allow_empty"):
            raise Refusal(400, "Provide at least one action, or set allow_empty to true")
        params.setdefault("actions", [])
        for index, action in enumerate(params["actions"]):
            if action.get("encoding", "text") not in ("text", "base64"):
                raise Refusal(400, f"actions[{index}][encoding] must be text or base64")
        for action in params["actions"]:
            if action["action"] == "delete":
                repo.files.pop(action["file_path"])
            elif action.get("encoding") == "base64":
                repo.files[action["file_path"]] = base64.b64decode(action["content"], validate=True)
            else:
                repo.files[action["file_path"]] = action["content"]
        body = {key: params[key] for key in ("branch", "commit_message", "actions")}
        sha = hashlib.sha1(json.dumps([len(repo.commits), body], sort_keys=True).encode(), usedforsecurity=False).hexdigest()
        repo.commits.append({"id": sha, "message": params["commit_message"], "actions": params["actions"]})
        return 201, {"id": sha}

    def pipelines(self, params: dict[str, Any], id_: str) -> Any:
        """Newest first, filtered by `sha` and `ref` when given (lib/api/ci/pipelines.rb, Ci::PipelinesFinder)."""
        return [
            p
            for p in reversed(self.state.repository.pipelines)
            if all(p.get(key) == params[key] for key in ("sha", "ref") if key in params)
        ]

    def pipeline(self, _: dict[str, Any], id_: str, pipeline: str) -> Any:
        return next(p for p in self.state.repository.pipelines if p["id"] == int(pipeline))

    def jobs(self, _: dict[str, Any], id_: str, pipeline: str) -> Any:
        return self.state.repository.jobs.get(int(pipeline), [])

    def run_pipeline(self, params: dict[str, Any], id_: str) -> Any:
        """A new run, which ends as `next_status` (the stub's stand-in for its jobs)."""
        repo = self.state.repository
        run = {"id": 100 + len(repo.pipelines), "sha": repo.head(), "ref": params["ref"], "status": repo.next_status}
        run["web_url"] = f"https://gitlab/p/-/pipelines/{run['id']}"
        repo.pipelines.append(run)
        repo.posts.append(f"/api/v4/projects/{id_}/pipeline")
        return 201, run


def _route(method: str, pattern: str, handler: Callable[..., Any]) -> tuple[str, re.Pattern[str], Callable[..., Any]]:
    return method, re.compile(pattern.replace("{id}", "(?P<id_>[^/]+)")), handler


S = GitLabStub
GitLabStub.routes = [
    _route("GET", r"/user", S.current_user),
    _route("GET", r"/metadata", S.metadata),
    _route("GET", r"/version", S.version),
    _route("GET", r"/personal_access_tokens/self", S.token_self),
    _route("GET", r"/application/settings", S.application_settings),
    _route("GET", r"/groups/{id}", S.get_group),
    _route("GET", r"/groups/{id}/members/all", S.group_members),
    _route("POST", r"/groups", S.create_group),
    _route("PUT", r"/groups/{id}", S.update_group),
    _route("DELETE", r"/groups/{id}", S.delete_group),
    _route("POST", r"/groups/{id}/restore", S.restore_group),
    _route("GET", r"/projects/{id}", S.get_project),
    _route("POST", r"/projects", S.create_project),
    _route("PUT", r"/projects/{id}", S.update_project),
    _route("DELETE", r"/projects/{id}", S.delete_project),
    _route("POST", r"/projects/{id}/restore", S.restore_project),
    _route("GET", r"/(?P<scope>groups|projects)/{id}/custom_attributes/(?P<key>[^/]+)", S.get_attribute),
    _route("PUT", r"/(?P<scope>groups|projects)/{id}/custom_attributes/(?P<key>[^/]+)", S.set_attribute),
    _route("GET", r"/(?P<scope>groups|projects)/{id}/variables/(?P<key>[^/]+)", S.get_variable),
    _route("POST", r"/(?P<scope>groups|projects)/{id}/variables", S.create_variable),
    _route("PUT", r"/(?P<scope>groups|projects)/{id}/variables/(?P<key>[^/]+)", S.update_variable),
    _route("DELETE", r"/(?P<scope>groups|projects)/{id}/variables/(?P<key>[^/]+)", S.delete_variable),
    _route("GET", r"/projects/{id}/registry/repositories", S.list_repositories),
    _route("DELETE", r"/projects/{id}/registry/repositories/(?P<repository_id>\d+)", S.delete_repository),
    _route("GET", r"/projects/{id}/deploy_tokens", S.list_deploy_tokens),
    _route("POST", r"/projects/{id}/deploy_tokens", S.create_deploy_token),
    _route("GET", r"/projects/{id}/deploy_tokens/(?P<token_id>\d+)", S.get_deploy_token),
    _route("DELETE", r"/projects/{id}/deploy_tokens/(?P<token_id>\d+)", S.delete_deploy_token),
    _route("GET", r"/runners/all", S.list_runners),
    _route("GET", r"/groups/{id}/runners", S.list_group_runners),
    _route("POST", r"/user/runners", S.create_runner),
    _route("GET", r"/runners/{id}", S.get_runner),
    _route("PUT", r"/runners/{id}", S.update_runner),
    _route("DELETE", r"/runners/{id}", S.delete_runner),
    _route("POST", r"/runners/{id}/reset_authentication_token", S.reset_runner_token),
    _route("GET", r"/projects/{id}/protected_branches/(?P<name>[^/]+)", S.get_protected_branch),
    _route("POST", r"/projects/{id}/protected_branches", S.protect_branch),
    _route("GET", r"/projects/{id}/repository/tree", S.tree),
    _route("GET", r"/projects/{id}/repository/branches/(?P<branch>[^/]+)", S.branch),
    _route("POST", r"/projects/{id}/repository/commits", S.commit),
    _route("GET", r"/projects/{id}/pipelines", S.pipelines),
    _route("GET", r"/projects/{id}/pipelines/(?P<pipeline>\d+)", S.pipeline),
    _route("GET", r"/projects/{id}/pipelines/(?P<pipeline>\d+)/jobs", S.jobs),
    _route("POST", r"/projects/{id}/pipeline", S.run_pipeline),
]

ADMIN_ONLY = frozenset({S.get_attribute, S.set_attribute, S.list_runners, S.application_settings})
"""Admin-only endpoints: `authenticated_as_admin!` (lib/api/custom_attributes_endpoints.rb, lib/api/ci/runners.rb, lib/api/settings.rb)."""


@contextmanager
def gitlab_stub(state: GitLabState, port: int | None = None, *, tls: ssl.SSLContext | None = None) -> Iterator[str]:
    """Serve `state`; with `tls` (a server context whose certificate names `localhost`), over HTTPS
    at `https://localhost:<port>`."""
    with serving(type("Stub", (GitLabStub,), {"state": state}), port, tls=tls) as url:
        yield url


@contextmanager
def serving(
    handler: type[http.server.BaseHTTPRequestHandler], port: int | None = None, *, tls: ssl.SSLContext | None = None
) -> Iterator[str]:
    """Serve `handler` on a thread until the block ends; its URL (https://localhost:<port> with `tls`)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port or free_port()), handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)  # a quick shutdown
    thread.start()
    try:
        yield f"https://localhost:{server.server_address[1]}" if tls is not None else f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
