"""GitLab objects that live in GitLab's database, got or created: the group, its projects, their
CI/CD variables and deploy tokens (and, in `gitlab_runner`, the group's runners).

`preserveData` keeps GitLab's database across a destroy, but Pulumi's state is not always kept
with it (`pulumi destroy -s phase3`, a lost state, a `dev` stack destroyed and made again). So
creating one of these objects first looks for it where it must be, and:

- **adopts** what it finds, if it is ours: it brings it to the inputs (a group or project
  scheduled for deletion is restored first) and records its id, never failing with "has already
  been taken" and never making a second one;
- **refuses** what is not ours, with an error that names the object and the fix;
- creates it only when nothing is there. When marking what it just created fails (Admin Mode on
  and a token without the `admin_mode` scope, say), it deletes it again before failing, so the
  next `up` does not refuse an unmarked object of its own making.

**Ours.** A group or project is ours when its custom attribute `blueprint_owner` holds the owner
value, `<pulumi project>/<stack>` (the host folders' `.blueprint-owner` files add the checkout's id;
GitLab's objects need not: their database lives in a data folder only this checkout can claim, and
only this checkout's admin token reaches it), set when we create it. Custom attributes are
GitLab's own admin-only key/value store on users, groups and projects (doc/api/custom_attributes.md;
the policy `admin` rule enables read/update, and the admin token's `api` scope covers the
endpoints, with `admin_mode` when the instance's Admin Mode is on);
no user without admin rights can forge or remove the mark, and it lives in the database with the
object. Variables and deploy tokens live inside an object of ours, so they are ours by their key:
a variable by its key in the `*` environment scope (the same key in other scopes is the user's),
the deploy token by its name and exact scopes.

**Ours, at the recorded id.** `update`, `delete` and `read` act on the id Pulumi's state recorded,
and a state can outlive its GitLab (a wiped platform brought up again, a plain
`pulumi destroy -s phase2` under a running phase3): in the new GitLab the same ids may be a
user's group, project or runner. So before anything is changed, the group or project at that id
must carry our mark and sit at the full path the inputs name (a `-deletion_scheduled-<id>` GitLab
put on it or on its group counts as that path: restoring it is ours to do); a variable or deploy
token, whose own ids carry no mark, must sit in a group or project that carries it (also checked
before one is created: a new variable or project must not go into a user's group that has our
group's id). What fails is not ours: `read` reports it gone (refresh drops it; the next `up` gets
or creates ours), `update` refuses, naming it and `pulumi refresh -s <stack>`, and `delete` leaves
it alone. For a group or project it costs no extra call: its GET by id asks for its custom
attributes too (`with_custom_attributes=true`, honoured for an admin only:
lib/api/helpers/custom_attributes.rb, and `get ":id"` in lib/api/groups.rb and lib/api/projects.rb);
for a variable or deploy token, one GET of its parent. Variables and deploy tokens recorded
before their owner was (provider version 2) cannot be checked: `read` keeps them as recorded and
`delete` leaves them; the next `up` records the owner.

**Ours without the mark.** `create` POSTs the group or project, then PUTs the mark: an `up` killed
between the two, or a POST whose answer was lost (GitLab may have acted on it), leaves one of our
own making unmarked. Nothing a user without admin rights can set proves it ours (GitLab lets any
user create a top-level group, and name and describe it as they like); GitLab's own record of who
made it, against the admin token's user (`GET /user`), does:

- a project whose `creator_id` is that user (Projects::CreateService `@project.creator =
  current_user`; API::Entities::Project shows it; no API call changes it);
- a top-level group whose only member, direct, inherited or invited (`GET /groups/:id/members/all`),
  is that user, as an Owner (50), with no `created_by`: Groups::CreateService makes its caller an
  Owner with `add_owner(current_user)`, which names no one as having added them
  (Members::Creator#member_attributes: `created_by: member.created_by || current_user`), whereas a
  member someone added names them (API::Entities::Member `created_by`). A user who made the group,
  added the admin as an Owner and left has left the admin's membership naming them.

Such a group or project is marked and adopted; any other unmarked one is refused as above. (One
an administrator made by hand at that path passes too: only an administrator can.)

**Another stack's group.** The platform's group is phase2's, its projects phase3's: a project is
made only in a group that carries the mark `group_owner` names (phase2's), and the group's
variables are checked against that mark too (`parent_owner`).

**Default branch.** A project's default branch is protected (Maintainers push and merge) when the
project is made, adopted or updated, before its first push: the deploy credential is a protected
variable, which GitLab hands only to jobs of protected refs (`_protect`).

**No answer.** `read` keeps the recorded state when GitLab cannot be reached, the CA file is
missing, or only its gateway answers (502/503/504, after the retries), as providers/openbao_kv.py
does: `pulumi refresh` then cannot tell, so it changes nothing and does not fail (the README has
refresh unseal OpenBao, with GitLab perhaps still down). Only GitLab's own answer that the object
is not there (404), or is not ours, makes `read` report it gone.

**Scheduled for deletion.** A group or project scheduled for deletion (by a half-failed destroy,
or in GitLab's UI) still answers by id, renamed `<path>-deletion_scheduled-<id>`, and GitLab
deletes it for good when its retention ends. So `update` and `create` restore one of ours
(`POST /groups/:id/restore`, `POST /projects/:id/restore`, which rename it back) before bringing
it to the inputs, and `read` reports it as it is, with `marked_for_deletion_on` set: then `diff`
shows a change and the next `up` restores it. Reporting it gone instead would make the next `up`
create a second one beside it (a renamed group's old path is free), and keeping it silently would
leave syncs going into a project GitLab is about to delete. A project's old path answers with a
redirect to the renamed project (lib/api/helpers.rb `find_project!`), which `find` follows to
restore ours rather than create a second one. A renamed group's old path answers 404, and `find`
does not search for it (`GET /groups?search=` matches substrings of names and paths): a group of
ours is scheduled only by our own destroy, after its projects were deleted for good, so it is
empty, and a new group serves as well; a group deleted in the UI while the state is kept is found
by id and restored as above.

**Deleting** (only with `preserveData=false`; otherwise every one of these is `retain_on_delete`).
GitLab 18+ only schedules a group or project for deletion (`DELETE /groups/:id`,
`DELETE /projects/:id`) and renames it `<path>-deletion_scheduled-<id>`, which frees its path
(Projects::MarkForDeletionService; Groups::MarkForDeletionService renames only when the group holds
no container images). Renaming a project that holds container registry tags is refused unless the
registry has its metadata database (Projects::UpdateService#validate_renaming_project_with_tags),
and ours has none, so a project's container repositories are deleted first
(`DELETE /projects/:id/registry/repositories/:repository_id`, doc/api/container_registry.md),
which GitLab does in the background: the delete waits, bounded, until none is listed. A project
is then deleted at once by a second call with `permanently_remove=true` and its new `full_path`
(doc/api/projects.md "Delete a project"; allowed unless the instance turned
`allow_immediate_namespaces_deletion` off). A top-level group cannot be deleted at once through
the API (`permanently_remove` "is only available for subgroups", lib/api/groups.rb): it stays
scheduled, under its new name when GitLab renamed it, and GitLab deletes it when its retention
ends (Admin > Settings > General > Deletion protection). So does a project when the instance
refuses immediate deletion. Either is accepted only when GitLab, read again, shows it scheduled;
that it stays is said here, not at run time: a Python dynamic provider has no connection to the
engine, so `pulumi.log.warn` there only prints to the provider's stderr (pulumi/pulumi#6065). A
retried `DELETE` that GitLab answers 400 ("has been already marked for deletion",
Namespaces::MarkForDeletionBaseService) is done when GitLab, read again, shows it scheduled. When a
group keeps its path (its projects' images were still being deleted), the next create finds it
there, scheduled and ours, and restores it. Pulumi deletes the projects before the group, since
they depend on it.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, ResourceProvider, UpdateResult

from providers.gitlab_api import CONNECTION, PLAIN_PULUMI, Connection, GitLab, GitLabApiError, encode, wire

PROVIDER_VERSION = "4"
"""Bump when the providers' behaviour changes (they are pickled by reference)."""

OWNER_ATTRIBUTE = "blueprint_owner"
"""The custom attribute that marks a group or project as ours (no dot: Grape reads one as a format)."""
SCHEDULED = "marked_for_deletion_on"
"""The output that records the date GitLab scheduled a group or project for deletion (None if not)."""
IMAGES_TIMEOUT_SECONDS = 660.0
"""How long a project's delete waits for GitLab to delete its container images. A DELETE only
schedules a repository; a cron job deletes scheduled ones every 5 minutes (`cleanup_container_
registry_worker`, `*/5 * * * *`; gitlab-org/gitlab!101918): two runs, and a little more."""
IMAGES_POLL_SECONDS = 3.0
ALL_ENVIRONMENTS = "*"
"""The environment scope of our variables: GitLab's default, and the one jobs of every environment get."""
OWNER_ACCESS = 50
"""GitLab's Owner access level (Gitlab::Access::OWNER)."""
MAINTAINER_ACCESS = 40
"""GitLab's Maintainer access level (Gitlab::Access::MAINTAINER): who may push to and merge into a
project's default branch once it is protected."""
RENAMED_FOR_DELETION = re.compile(r"-(?:deletion_scheduled|deleted)-\d+$")
"""What scheduling a deletion appends to a group's or project's path (Projects::MarkForDeletionService
`suffixed_identifier`: `-deleted-<id>` while the `rename_group_path_upon_deletion_scheduling` flag was off)."""


class GitLabObjectError(Exception):
    """An object GitLab holds is in the way, or is gone; the message names it and the fix."""


class NotOurs(Exception):
    """What GitLab holds at a recorded id is not ours; the message says what it is instead."""


class Unverifiable(NotOurs):
    """The state recorded no owner to check what GitLab holds against (see the module docstring)."""


def program_owner() -> str:
    """`<pulumi project>/<stack>` of the running program: the owner a resource records by default."""
    return f"{pulumi.get_project()}/{pulumi.get_stack()}"


def stack_of(owner: str) -> str:
    """The stack of an owner `<pulumi project>/<stack>`."""
    return owner.rpartition("/")[2] or "<stack>"


def refresh_then_up(owner: str) -> str:
    """How to drop a recorded object from the state, and have the next `up` get or create it."""
    stack = stack_of(owner)
    return f"`pulumi refresh -s {stack}` drops it from this state, and the next `pulumi up -s {stack}` gets or creates it ({PLAIN_PULUMI})"


def up_again(owner: str) -> str:
    stack = stack_of(owner)
    return f"run `pulumi up -s {stack}` again ({PLAIN_PULUMI})"


def not_ours_message(what: str, why: str, owner: str) -> str:
    """The refusal of an update (or a sync's commit) whose recorded object is not ours any more."""
    return (
        f"GitLab's {what} is not the one this state recorded: {why}. This state belongs to an earlier GitLab (one "
        f"wiped, or brought up again, since), or the object was moved in GitLab; nothing was changed. {refresh_then_up(owner)}."
    )


def gone_message(what: str, owner: str) -> str:
    return f"the {what} is gone from GitLab: {refresh_then_up(owner)}"


def refreshed(
    id_: str, props: dict[str, Any], look: Callable[[], dict[str, Any] | None], observed: Callable[[dict[str, Any]], dict[str, Any]]
) -> ReadResult:
    """What a refresh records: `observed` of what `look` finds at `id_`; gone when GitLab answers that
    nothing, or nothing of ours, is there; the recorded state when GitLab gives no answer or there
    is no owner to check against (see the module docstring).
    """
    try:
        found = look()
    except Unverifiable:
        return ReadResult(id_, props)
    except NotOurs:
        return ReadResult(None, {})  # refresh drops it; the next `up` gets or creates ours
    except GitLabApiError as error:
        if error.unanswered:
            return ReadResult(id_, props)  # cannot tell: keep what the state records
        raise
    if found is None:
        return ReadResult(None, {})  # refresh drops it; the next `up` gets or creates it
    return ReadResult(id_, {**props, **observed(found)})


class GetOrCreateProvider(ResourceProvider):
    """What the object kinds share: get or create on `create`, bring it to the inputs on `update`,
    report it as GitLab holds it on `read` (gone, not ours, or scheduled for deletion), delete it
    (already gone is done) on `delete`; `update`, `read` and `delete` first check that what GitLab
    holds at the recorded id is ours (see the module docstring).

    A kind says how to find its object where it must be (`find`), what GitLab holds at its id and
    whether it is ours (`current`), and how to make, adopt, change and remove it. Outputs are the
    inputs, the previous outputs a call did not refresh, and what `outs` reads from GitLab's answer.
    """

    kind: ClassVar[str]
    inputs: ClassVar[tuple[str, ...]]
    """What `diff` compares (the wire keys)."""
    replace_on: ClassVar[tuple[str, ...]] = ()
    """Inputs that name another object: a change makes that one (and deletes the old one after)."""

    def find(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any] | None:
        raise NotImplementedError

    def current(self, api: GitLab, id_: str, props: dict[str, Any]) -> dict[str, Any] | None:
        """What GitLab holds at the recorded `id_`, or None when it holds nothing there; raises
        NotOurs when what it holds is not ours (see the module docstring).
        """
        raise NotImplementedError

    def what(self, id_: str, props: dict[str, Any]) -> str:
        """The object, as messages name it."""
        return f"{self.kind} {id_}"

    def before_create(self, api: GitLab, props: dict[str, Any]) -> None:
        """Refuse to create (or adopt) it where it must not go."""

    def in_ours(self, api: GitLab, scope: str, parent: object, id_: str, props: dict[str, Any]) -> None:
        """Refuse, naming it, unless the group or project `parent` that holds it is there and ours
        (carries the mark `parent_owner`, when another stack made it, else `owner`).
        """
        owner = str(props.get("owner") or "")
        try:
            there = in_one_of_ours(api, scope, parent, str(props.get("parent_owner") or owner))
        except NotOurs as theirs:
            raise GitLabObjectError(not_ours_message(self.what(id_, props), str(theirs), owner)) from None
        if not there:
            raise GitLabObjectError(gone_message(f"{scope[:-1]} {parent} (that is to hold the {self.kind})", owner))

    def make(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def adopt(self, api: GitLab, props: dict[str, Any], found: dict[str, Any]) -> dict[str, Any]:
        return self.change(api, props, found)

    def change(self, api: GitLab, props: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
        return current

    def remove(self, api: GitLab, id_: str, props: dict[str, Any], current: dict[str, Any] | None = None) -> None:
        """Delete it (`current`: what GitLab holds at `id_`, if already read)."""
        raise NotImplementedError

    def ident(self, obj: dict[str, Any]) -> str:
        return str(obj["id"])

    def outs(self, obj: dict[str, Any]) -> dict[str, Any]:
        return {}

    def observed(self, obj: dict[str, Any]) -> dict[str, Any]:
        """What a refresh records of what GitLab holds."""
        return self.outs(obj)

    def _outputs(self, base: dict[str, Any], props: dict[str, Any], obj: dict[str, Any]) -> dict[str, Any]:
        return {**base, **{key: props.get(key) for key in self.inputs}, **self.outs(obj)}

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [key for key in self.inputs if olds.get(key) != news.get(key)]
        restore = bool(olds.get(SCHEDULED))  # a refresh found it scheduled for deletion: `update` restores it
        return DiffResult(
            changes=bool(changed) or restore, replaces=[key for key in changed if key in self.replace_on], delete_before_replace=False
        )

    def create(self, props: dict[str, Any]) -> CreateResult:
        api = GitLab.of(props)
        self.before_create(api, props)
        found = self.find(api, props)
        obj = self.make(api, props) if found is None else self.adopt(api, props, found)
        return CreateResult(id_=self.ident(obj), outs=self._outputs({}, props, obj))

    def update(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        api, owner = GitLab.of(news), str(news.get("owner") or "")
        try:
            current = self.current(api, id_, news)
        except NotOurs as theirs:
            raise GitLabObjectError(not_ours_message(self.what(id_, news), str(theirs), owner)) from None
        if current is None:
            raise GitLabObjectError(gone_message(self.what(id_, news), owner))
        return UpdateResult(outs=self._outputs(olds, news, self.change(api, news, current)))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        return refreshed(id_, props, lambda: self.current(GitLab.of(props), id_, props), self.observed)

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        api = GitLab.of(props)
        try:
            current = self.current(api, id_, props)
        except NotOurs:
            return  # not ours (this state outlived its GitLab), or not known to be: left alone
        if current is not None:
            self.remove(api, id_, props, current)

    def marked(self, api: GitLab, props: dict[str, Any], made: dict[str, Any], path: str) -> dict[str, Any]:
        """`made`, just created at `path` (API path), once marked as ours; if marking fails, it is
        deleted again before failing: the next `up` would refuse an unmarked object of its own making.
        """
        try:
            _mark(api, path, str(props["owner"]))
        except GitLabApiError:
            self.remove(api, str(made["id"]), props)
            raise
        return made


def _scheduled_on(obj: dict[str, Any]) -> Any:
    """When GitLab scheduled the group or project for deletion (the API shows the date), or None."""
    return obj.get("marked_for_deletion_on") or obj.get("marked_for_deletion_at") or None


def _scheduled(obj: dict[str, Any]) -> bool:
    return _scheduled_on(obj) is not None


def _restore(api: GitLab, path: str, current: dict[str, Any]) -> None:
    """Restore the group or project at `path` (API path) if GitLab has scheduled it for deletion.
    GitLab gives it back its own path, or, when that is taken meanwhile, that path with a random
    suffix (Namespaces::RestoreBaseService), where it would no longer be ours to find: refused then.
    """
    if not _scheduled(current):
        return
    full = str(current.get("full_path") or current.get("path_with_namespace") or "")
    original = RENAMED_FOR_DELETION.sub("", full)
    if original != full:
        kind = path.split("/")[1]  # "groups" or "projects"
        there = api.find(f"/{kind}/{encode(original)}")
        if there is not None and str(there.get("id")) != str(current.get("id")):
            raise GitLabObjectError(
                f"GitLab scheduled {full} for deletion, and {original}, its path, now holds something else "
                f"(id {there.get('id')}): restoring it would move it to a random path. Move or remove that one, then run again"
            )
    api.post(f"{path}/restore")


def _owner(api: GitLab, path: str) -> str | None:
    """The owner mark of the group or project at `path` (API path), if it has one."""
    mark = api.find(f"{path}/custom_attributes/{OWNER_ATTRIBUTE}")
    return None if mark is None else str(mark.get("value"))


def _mark_of(api: GitLab, path: str, held: dict[str, Any]) -> str | None:
    """The owner mark of `held`, the group or project at `path` (API path): from its custom attributes
    when the answer carries them (asked with `with_custom_attributes`), else asked for (an answer
    without them: a followed redirect, or a token that is no admin, which that call then names).
    """
    attributes = held.get("custom_attributes")
    if not isinstance(attributes, list):
        return _owner(api, path)
    return next((str(item.get("value")) for item in attributes if item.get("key") == OWNER_ATTRIBUTE), None)


def _whose(mark: str | None) -> str:
    return f"its {OWNER_ATTRIBUTE} is {mark!r}" if mark is not None else f"it has no {OWNER_ATTRIBUTE}"


def _as_recorded(full_path: str) -> str:
    """`full_path` without what scheduling a deletion appended to any of its parts (restoring undoes it)."""
    return "/".join(RENAMED_FOR_DELETION.sub("", part) for part in full_path.split("/")).lower()


def _held(api: GitLab, scope: str, id_: object) -> dict[str, Any] | None:
    """The group or project (`scope`: "groups" or "projects") of id `id_`, with its custom attributes."""
    extra = {"with_projects": "false"} if scope == "groups" else {}
    held: dict[str, Any] | None = api.find(f"/{scope}/{encode(id_)}", with_custom_attributes="true", **extra)
    return held


def _full_path_of(scope: str, held: dict[str, Any]) -> str:
    return str(held.get("full_path") if scope == "groups" else held.get("path_with_namespace"))


def _check_ours(api: GitLab, scope: str, held: dict[str, Any], owner: str, at: str | None = None, subject: str = "it") -> None:
    """Raise NotOurs unless `held` (a group or project) carries the mark `owner` and, with `at`, sits at
    that full path (or where scheduling its deletion, or its group's, moved it).
    """
    full_path = _full_path_of(scope, held)
    mark = _mark_of(api, f"/{scope}/{held['id']}", held)
    if mark != owner:
        raise NotOurs(f"{subject} is {full_path}, and {_whose(mark)}")
    if at is not None and _as_recorded(full_path) != at.lower():
        raise NotOurs(f"{subject} carries this stack's mark but is at {full_path}, not {at}")


def in_one_of_ours(api: GitLab, scope: str, id_: object, owner: str | None, subject: str | None = None) -> bool:
    """Whether the group or project `id_` (`scope`: "groups" or "projects") that holds a variable, a
    deploy token or a sync is still there (False when GitLab holds nothing there); raises NotOurs
    when it is not ours (`subject`: how its message names it), and Unverifiable when no owner was
    recorded to check it against.
    """
    if not owner:
        raise Unverifiable(f"this state recorded no owner to check the {scope[:-1]} {id_} against")
    held = _held(api, scope, id_)
    if held is None:
        return False
    _check_ours(api, scope, held, owner, subject=subject or f"the {scope[:-1]} {id_} that holds it")
    return True


def _token_user(api: GitLab) -> int:
    """The id of the user the admin token belongs to (doc/api/users.md `GET /user`)."""
    return int(api.get("/user")["id"])


def _group_made_by_us(api: GitLab, group: dict[str, Any]) -> bool:
    """Whether GitLab's own record shows the admin token's user made `group`, alone (see the module
    docstring): a top-level group whose one member is that user, an Owner nobody added.
    """
    if group.get("parent_id") is not None:
        return False
    members = list(api.pages(f"/groups/{group['id']}/members/all"))
    if len(members) != 1:
        return False
    member = members[0]
    return member.get("id") == _token_user(api) and member.get("access_level") == OWNER_ACCESS and not member.get("created_by")


def _project_made_by_us(api: GitLab, project: dict[str, Any]) -> bool:
    """Whether GitLab records the admin token's user as the maker of `project` (its `creator_id`)."""
    return project.get("creator_id") is not None and int(project["creator_id"]) == _token_user(api)


def _claim(api: GitLab, kind: str, found: dict[str, Any], path: str, owner: str, made_by_us: Callable[[], bool]) -> None:
    """Make `found`, the group or project at `path` (API path), ours: it carries the mark `owner`
    already, or it carries none and `made_by_us` proves it is ours (then it gets the mark); refuse
    it otherwise.
    """
    mark = _mark_of(api, path, found)
    if mark == owner:
        return
    if mark is None and made_by_us():
        _mark(api, path, owner)  # ours from a create whose mark was never set (see the module docstring)
        return
    where = _full_path_of(f"{kind}s", found)
    raise GitLabObjectError(
        f"GitLab already has a {kind} {where} that this stack ({owner}) did not create ({_whose(mark)}). "
        f"Rename, move or delete that {kind} in GitLab, then {up_again(owner)}. If it is this stack's own "
        f"from before blueprint marked what it makes, mark it as an administrator: "
        f"PUT /api/v4{path}/custom_attributes/{OWNER_ATTRIBUTE} with value={owner}"
    )


def _mark(api: GitLab, path: str, owner: str) -> None:
    api.put(f"{path}/custom_attributes/{OWNER_ATTRIBUTE}", {"value": owner})


class GroupProvider(GetOrCreateProvider):
    kind = "group"
    inputs = (*CONNECTION, "path", "name", "description", "visibility", "owner", "provider_version")
    replace_on = ("path",)

    def find(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any] | None:
        return _held(api, "groups", props["path"])

    def current(self, api: GitLab, id_: str, props: dict[str, Any]) -> dict[str, Any] | None:
        found = _held(api, "groups", id_)
        if found is not None:
            _check_ours(api, "groups", found, str(props["owner"]), at=str(props["path"]))
        return found

    def what(self, id_: str, props: dict[str, Any]) -> str:
        return f"group {id_} (recorded at {props['path']})"

    def make(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any]:
        group: dict[str, Any] = api.post("/groups", _settings(props, "name", "path", "description", "visibility"))
        return self.marked(api, props, group, f"/groups/{group['id']}")

    def adopt(self, api: GitLab, props: dict[str, Any], found: dict[str, Any]) -> dict[str, Any]:
        _claim(api, "group", found, f"/groups/{found['id']}", str(props["owner"]), lambda: _group_made_by_us(api, found))
        return self.change(api, props, found)

    def change(self, api: GitLab, props: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
        _restore(api, f"/groups/{current['id']}", current)
        group: dict[str, Any] = api.put(f"/groups/{current['id']}", _settings(props, "name", "description", "visibility"))
        return group

    def remove(self, api: GitLab, id_: str, props: dict[str, Any], current: dict[str, Any] | None = None) -> None:
        immediately = lambda group: group.get("parent_id") is not None  # noqa: E731
        _delete_scheduled(api, f"/groups/{id_}", "full_path", current, immediately=immediately)

    def outs(self, obj: dict[str, Any]) -> dict[str, Any]:
        return {"full_path": obj.get("full_path"), "web_url": obj.get("web_url"), SCHEDULED: _scheduled_on(obj)}


class ProjectProvider(GetOrCreateProvider):
    """A project in a group, its default branch protected (see `_protect`)."""

    kind = "project"
    inputs = (
        *CONNECTION, "namespace", "namespace_id", "path", "name", "visibility", "default_branch", "owner", "group_owner",
        "provider_version",
    )  # fmt: skip
    replace_on = ("namespace", "namespace_id", "path")

    def find(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any] | None:
        # GitLab redirects a renamed project's old path to it, and `find` follows: one of ours renamed
        # by its scheduled deletion is restored; any other renamed or moved project left the path free.
        found = _held(api, "projects", _full_path(props))
        if found is None or str(found["path_with_namespace"]).lower() == _full_path(props).lower():
            return found
        ours = _scheduled(found) and _mark_of(api, f"/projects/{found['id']}", found) == props["owner"]
        return found if ours else None

    def current(self, api: GitLab, id_: str, props: dict[str, Any]) -> dict[str, Any] | None:
        found = _held(api, "projects", id_)
        if found is not None:
            _check_ours(api, "projects", found, str(props["owner"]), at=_full_path(props))
        return found

    def what(self, id_: str, props: dict[str, Any]) -> str:
        return f"project {id_} (recorded at {_full_path(props)})"

    def make(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any]:
        # The group is found by id: it must be ours, where the project is to be (see the module docstring).
        namespace_id = int(float(props["namespace_id"]))
        group = _held(api, "groups", namespace_id)
        if group is None:
            raise GitLabObjectError(gone_message(f"group {namespace_id} ({props['namespace']})", str(props["owner"])))
        try:
            _check_ours(api, "groups", group, str(props.get("group_owner") or props["owner"]), at=str(props["namespace"]))
        except NotOurs as theirs:
            what = f"group {namespace_id} (recorded at {props['namespace']})"
            raise GitLabObjectError(not_ours_message(what, str(theirs), str(props["owner"]))) from None
        settings = {
            **_settings(props, "name", "path", "visibility", "default_branch"),
            "namespace_id": namespace_id,
            "initialize_with_readme": False,  # the sync's first commit makes the branch
        }
        project: dict[str, Any] = api.post("/projects", settings)
        made = self.marked(api, props, project, f"/projects/{project['id']}")
        _protect(api, made, str(props["default_branch"]))
        return made

    def adopt(self, api: GitLab, props: dict[str, Any], found: dict[str, Any]) -> dict[str, Any]:
        _claim(api, "project", found, f"/projects/{found['id']}", str(props["owner"]), lambda: _project_made_by_us(api, found))
        return self.change(api, props, found)

    def change(self, api: GitLab, props: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
        _restore(api, f"/projects/{current['id']}", current)
        # Not the default branch: GitLab refuses one the repository does not have yet.
        project: dict[str, Any] = api.put(f"/projects/{current['id']}", _settings(props, "name", "visibility"))
        _protect(api, project, str(props["default_branch"]))
        return project

    def remove(self, api: GitLab, id_: str, props: dict[str, Any], current: dict[str, Any] | None = None) -> None:
        path = f"/projects/{id_}"
        _delete_scheduled(
            api,
            path,
            "path_with_namespace",
            current,
            immediately=lambda _: True,
            before=lambda found: _delete_images(api, path, found["path_with_namespace"]),
        )

    def outs(self, obj: dict[str, Any]) -> dict[str, Any]:
        return {"full_path": obj.get("path_with_namespace"), "web_url": obj.get("web_url"), SCHEDULED: _scheduled_on(obj)}


def _full_path(props: dict[str, Any]) -> str:
    return f"{props['namespace']}/{props['path']}"


def _protect(api: GitLab, project: dict[str, Any], branch: str) -> None:
    """Protect `branch`, the default branch of `project`, unless it is (Maintainers push and merge).

    The deploy credential is a protected variable, which GitLab hands only to jobs of protected
    refs (Gitlab::Ci::Variables::Builder `protected_ref?`: `project.protected_for?(ref)`). A fresh
    GitLab protects a project's default branch by itself (`default_branch_protection_defaults`,
    `protected_fully` in config/initializers/1_settings.rb), but only when the first push creates it,
    in the background (Projects::ProtectDefaultBranchService from Git::BranchHooksService), and only
    while an administrator leaves that setting on. So it is protected here, before the first push:
    GitLab protects a name the repository does not hold yet (`POST /projects/:id/protected_branches`
    checks no branch; lib/api/protected_branches.rb), and answers 409 when it is protected already.
    """
    path = f"/projects/{project['id']}/protected_branches"
    if api.find(f"{path}/{encode(branch)}") is not None:
        return
    try:
        api.post(path, {"name": branch, "push_access_level": MAINTAINER_ACCESS, "merge_access_level": MAINTAINER_ACCESS})
    except GitLabApiError as error:
        if error.status != 409:  # "Protected branch '<name>' already exists": protected meanwhile
            raise


def _settings(props: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {key: props[key] for key in keys if props.get(key) is not None}


def _delete_scheduled(
    api: GitLab,
    path: str,
    full_path_key: str,
    found: dict[str, Any] | None,
    *,
    immediately: Callable[[dict[str, Any]], bool],
    before: Callable[[dict[str, Any]], None] = lambda _: None,
) -> None:
    """Schedule a group or project for deletion (after `before` it), then, where GitLab allows it,
    delete it at once. A refusal that leaves it scheduled is done (see the module docstring).
    `found`: what GitLab holds at `path`, if already read.
    """
    found = api.find(path) if found is None else found
    if found is None:
        return
    if not _scheduled(found):
        before(found)
        _scheduled_anyway(api, path, None, lambda: api.delete(path))  # a retry after GitLab marked it
        found = api.find(path)  # scheduling renamed it: the permanent delete names the new path
        if found is not None and not _scheduled(found):
            return  # accepted unmarked: an ancestor group is scheduled, and it goes with it (lib/api/projects.rb `delete_project`)
    if found is None or not immediately(found):
        return
    full_path = found[full_path_key]
    _scheduled_anyway(api, path, (full_path_key, full_path), lambda: api.delete(path, permanently_remove="true", full_path=full_path))


def _scheduled_anyway(api: GitLab, path: str, named: tuple[str, Any] | None, delete: Callable[[], None]) -> None:
    """Run `delete`; a 400 counts as done when GitLab, read again, shows the object gone or
    scheduled for deletion (and still at the full path the call `named`, if it named one). The
    error texts differ between GitLab versions, and one 400 ("must be marked for deletion first",
    a wrong `full_path`, a project's container images) is not another: the state decides.
    """
    try:
        delete()
    except GitLabApiError as error:
        if error.status != 400:
            raise
        again = api.find(path)
        if again is not None and (not _scheduled(again) or (named is not None and again.get(named[0]) != named[1])):
            raise


def _delete_images(api: GitLab, project: str, name: str) -> None:
    """Delete the container repositories of the project at `project` (API path), `name`, and wait,
    bounded, until GitLab's background jobs have removed them all (doc/api/container_registry.md).
    """
    repositories = f"{project}/registry/repositories"
    listed = list(api.pages(repositories))
    for repository in listed:
        if repository.get("status") not in ("delete_scheduled", "delete_ongoing"):
            api.delete(f"{repositories}/{repository['id']}")
    deadline = time.monotonic() + IMAGES_TIMEOUT_SECONDS
    while listed:
        if time.monotonic() >= deadline:
            left = ", ".join(f"{item.get('path')} ({item.get('status') or 'not scheduled'})" for item in listed)
            raise GitLabObjectError(
                f"GitLab has not deleted the container repositories of project {name} within {IMAGES_TIMEOUT_SECONDS:.0f}s: "
                f"{left}. GitLab refuses to delete a project that holds images, and deletes them in the background "
                f"(a job every 5 minutes): look at the project's Deploy > Container registry in GitLab, then run the destroy again"
            )
        time.sleep(IMAGES_POLL_SECONDS)
        listed = list(api.pages(repositories))


SETTINGS = ("value", "variable_type", "protected", "masked", "raw")
"""A variable's settings, as GitLab's variables API names them."""
IN_ALL_ENVIRONMENTS = {"filter[environment_scope]": ALL_ENVIRONMENTS}
"""The query that picks our variable of a key among its environment scopes."""


class VariableProvider(GetOrCreateProvider):
    """A CI/CD variable of a group or a project (`scope`: "groups" or "projects"), upserted by key
    in the `*` environment scope (doc/api/group_level_variables.md, doc/api/project_level_variables.md).
    GitLab answers GET, PUT and DELETE of a key held in several scopes with 409 "There are multiple
    variables with provided parameters" (lib/api/helpers/variables_helpers.rb `find_variable`), so
    every call names the scope: `filter[environment_scope]`, and `environment_scope` on create.
    """

    kind = "variable"
    inputs = (
        *CONNECTION, "scope", "parent", "key", "value", "variable_type", "protected", "masked", "raw", "owner", "parent_owner",
        "provider_version",
    )  # fmt: skip
    replace_on = ("scope", "parent", "key")

    @staticmethod
    def _path(props: dict[str, Any]) -> str:
        return f"/{props['scope']}/{encode(props['parent'])}/variables"

    def find(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any] | None:
        found: dict[str, Any] | None = api.find(f"{self._path(props)}/{encode(props['key'])}", **IN_ALL_ENVIRONMENTS)
        return found

    def current(self, api: GitLab, id_: str, props: dict[str, Any]) -> dict[str, Any] | None:
        if not in_one_of_ours(api, str(props["scope"]), props["parent"], props.get("parent_owner") or props.get("owner")):
            return None  # its group or project is gone, and it with it
        return self.find(api, props)

    def what(self, id_: str, props: dict[str, Any]) -> str:
        return f"variable {props['key']} of {str(props['scope'])[:-1]} {props['parent']}"

    def before_create(self, api: GitLab, props: dict[str, Any]) -> None:
        self.in_ours(api, str(props["scope"]), props["parent"], str(props["key"]), props)

    def make(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any]:
        settings = {"key": props["key"], **self._settings(props), "environment_scope": ALL_ENVIRONMENTS}
        made: dict[str, Any] = api.post(self._path(props), settings)
        return made

    def change(self, api: GitLab, props: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
        changed: dict[str, Any] = api.put(f"{self._path(props)}/{encode(props['key'])}", self._settings(props), **IN_ALL_ENVIRONMENTS)
        return changed

    @staticmethod
    def _settings(props: dict[str, Any]) -> dict[str, Any]:
        return _settings(props, *SETTINGS)

    def remove(self, api: GitLab, id_: str, props: dict[str, Any], current: dict[str, Any] | None = None) -> None:
        api.delete(f"{self._path(props)}/{encode(props['key'])}", **IN_ALL_ENVIRONMENTS)

    def ident(self, obj: dict[str, Any]) -> str:
        return str(obj["key"])

    def observed(self, obj: dict[str, Any]) -> dict[str, Any]:
        # What GitLab holds, so that a refresh shows an edit made in GitLab and `up` undoes it.
        # Only here: were GitLab's answer to differ from an input, every `up` would update again.
        return {key: obj[key] for key in SETTINGS if key in obj}


class DeployTokenProvider(GetOrCreateProvider):
    """A project deploy token, by name and exact scopes (doc/api/deploy_tokens.md). GitLab hands one
    named `gitlab-deploy-token` to every job as CI_DEPLOY_USER and CI_DEPLOY_PASSWORD. Its value,
    which GitLab gives once, in the answer that makes it, is kept as the secret output `deploy_token`
    (phase3 mirrors it into OpenBao): a token found without it (adopted from a preserved GitLab, or
    recorded before the value was kept) is revoked and made again, as the runner's token is reset
    (providers/gitlab_runner.py), and its project's smoke pipeline runs again (its `target` names
    the token), so the deployed app's pull Secret gets the new one. Which one, when several active tokens bear that name, is chance
    (app/models/deploy_token.rb `gitlab_deploy_token`: `active.find_by(name:)`), so an active token
    of our name with other scopes is refused, naming the fix, rather than joined by a second one;
    it is never revoked (it may be the user's). Deploy tokens cannot be changed, so other scopes
    are another token.
    """

    kind = "deploy token"
    inputs = (*CONNECTION, "project", "name", "scopes", "owner", "provider_version")
    replace_on = ("project", "name", "scopes")

    def diff(self, id_: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        # Deleted before its replacement: the new one would find ours, of other scopes, in the way.
        # Jobs get the new one at once (GitLab hands it to them), so the moment without one harms nothing.
        result = super().diff(id_, olds, news)
        # Recorded before its value was kept: made again, so that its value is known.
        replaces = [*(result.replaces or []), *([] if olds.get("deploy_token") else ["deploy_token"])]
        return DiffResult(changes=result.changes or bool(replaces), replaces=replaces, delete_before_replace=bool(replaces))

    def find(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any] | None:
        project, wanted = props["project"], sorted(props["scopes"])
        named = [
            token for token in api.pages(f"/projects/{encode(project)}/deploy_tokens", active="true") if token["name"] == props["name"]
        ]
        if others := [token for token in named if sorted(token["scopes"]) != wanted]:
            theirs = "; ".join(f"id {token['id']} with scopes {', '.join(token['scopes'])}" for token in others)
            where = api.get(f"/projects/{encode(project)}")["path_with_namespace"]
            raise GitLabObjectError(
                f"project {where} already has an active deploy token named {props['name']!r} with other scopes than "
                f"{', '.join(wanted)} ({theirs}). GitLab hands jobs any one active token of that name, so a second one "
                f"would make it chance which one they get. Revoke that token (Settings > Repository > Deploy tokens) or "
                f"make it again under another name, then {up_again(str(props.get('owner') or ''))}"
            )
        return named[0] if named else None

    def current(self, api: GitLab, id_: str, props: dict[str, Any]) -> dict[str, Any] | None:
        if not in_one_of_ours(api, "projects", props["project"], props.get("owner")):
            return None  # its project is gone, and it with it
        token: dict[str, Any] | None = api.find(f"/projects/{encode(props['project'])}/deploy_tokens/{id_}")
        return None if token is None or token.get("revoked") or token.get("expired") else token

    def what(self, id_: str, props: dict[str, Any]) -> str:
        return f"deploy token {props['name']} ({id_}) of project {props['project']}"

    def before_create(self, api: GitLab, props: dict[str, Any]) -> None:
        self.in_ours(api, "projects", props["project"], "new", props)

    def make(self, api: GitLab, props: dict[str, Any]) -> dict[str, Any]:
        made: dict[str, Any] = api.post(
            f"/projects/{encode(props['project'])}/deploy_tokens", {"name": props["name"], "scopes": list(props["scopes"])}
        )
        return made  # with its `token`, which GitLab gives in this answer alone

    def adopt(self, api: GitLab, props: dict[str, Any], found: dict[str, Any]) -> dict[str, Any]:
        # Ours, but its value is unknown to this state (GitLab never shows it again): revoked and made anew.
        self.remove(api, str(found["id"]), props, found)
        return self.make(api, props)

    def remove(self, api: GitLab, id_: str, props: dict[str, Any], current: dict[str, Any] | None = None) -> None:
        api.delete(f"/projects/{encode(props['project'])}/deploy_tokens/{id_}")

    def outs(self, obj: dict[str, Any]) -> dict[str, Any]:
        # Only the answer that made it has its value; otherwise the state keeps it.
        # (`token` is the connection's admin token: the value's output is `deploy_token`.)
        return {"username": obj.get("username"), **({"deploy_token": obj["token"]} if obj.get("token") else {})}


@dataclass(frozen=True, kw_only=True)
class GroupArgs:
    connection: Connection
    path: str
    name: str
    owner: str
    """`<pulumi project>/<stack>`: the mark that makes the group ours."""
    visibility: str = "internal"
    description: str = ""


class Group(pulumi.dynamic.Resource, module="gitlab", name="Group"):
    """A top-level group, got (if ours) or created; its id is GitLab's."""

    full_path: pulumi.Output[str]
    web_url: pulumi.Output[str]
    marked_for_deletion_on: pulumi.Output[str | None]
    """When GitLab scheduled it for deletion, as the last refresh found it: the next `up` restores it."""

    def __init__(self, name: str, args: GroupArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(GroupProvider(), name, wire(args, PROVIDER_VERSION, "full_path", "web_url", SCHEDULED), opts)


@dataclass(frozen=True, kw_only=True)
class ProjectArgs:
    connection: Connection
    namespace: str
    """The group's full path: the project is found at `<namespace>/<path>`."""
    namespace_id: pulumi.Input[str]
    """The group's id."""
    path: str
    name: str
    owner: str
    group_owner: str | None = None
    """The mark of the group it goes into, when another stack made that group (phase2 makes the
    platform's group, phase3 its projects); `owner` by default."""
    visibility: str = "internal"
    default_branch: str = "main"
    """Protected when the project is made or brought to the inputs: the deploy credential reaches
    only its jobs (`_protect`)."""


class Project(pulumi.dynamic.Resource, module="gitlab", name="Project"):
    """A project in a group, got (if ours) or created; its id is GitLab's."""

    full_path: pulumi.Output[str]
    web_url: pulumi.Output[str]
    marked_for_deletion_on: pulumi.Output[str | None]
    """When GitLab scheduled it for deletion, as the last refresh found it: the next `up` restores it."""

    def __init__(self, name: str, args: ProjectArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(ProjectProvider(), name, wire(args, PROVIDER_VERSION, "full_path", "web_url", SCHEDULED), opts)


@dataclass(frozen=True, kw_only=True)
class VariableArgs:
    connection: Connection
    parent: pulumi.Input[str]
    """The group's or project's id."""
    key: str
    value: pulumi.Input[str]
    secret: bool = False
    """The value is a secret: it stays one in the outputs too."""
    variable_type: str = "env_var"
    """`env_var`, or `file` (jobs get the path of a file holding the value)."""
    protected: bool = False
    masked: bool = False
    raw: bool = False
    owner: str | None = None
    """`<pulumi project>/<stack>` of the stack it belongs to (messages name its command); the
    running program's by default."""
    parent_owner: str | None = None
    """The mark of the group or project that holds it, when another stack made that one (phase2
    makes the platform's group, phase3 its variables); `owner` by default."""


def _variable(args: VariableArgs, scope: str, opts: pulumi.ResourceOptions | None) -> tuple[dict[str, Any], pulumi.ResourceOptions]:
    props = {**wire(dataclasses.replace(args, owner=args.owner or program_owner()), PROVIDER_VERSION), "scope": scope}
    del props["secret"]
    if args.secret:
        props["value"] = pulumi.Output.secret(args.value)
    return props, pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=["value"] if args.secret else []))


class GroupVariable(pulumi.dynamic.Resource, module="gitlab", name="GroupVariable"):
    """A group's CI/CD variable, upserted by key."""

    def __init__(self, name: str, args: VariableArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(VariableProvider(), name, *_variable(args, "groups", opts))


class ProjectVariable(pulumi.dynamic.Resource, module="gitlab", name="ProjectVariable"):
    """A project's CI/CD variable, upserted by key."""

    def __init__(self, name: str, args: VariableArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(VariableProvider(), name, *_variable(args, "projects", opts))


@dataclass(frozen=True, kw_only=True)
class DeployTokenArgs:
    connection: Connection
    project: pulumi.Input[str]
    """The project's id."""
    name: str
    scopes: tuple[str, ...]
    owner: str | None = None
    """`<pulumi project>/<stack>` of the project that holds it; the running program's by default."""


class DeployToken(pulumi.dynamic.Resource, module="gitlab", name="DeployToken"):
    """A project deploy token: an active one of this name with these scopes, or a new one."""

    username: pulumi.Output[str]
    deploy_token: pulumi.Output[str]
    """Its value (secret), kept from the answer that made it."""

    def __init__(self, name: str, args: DeployTokenArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        args = dataclasses.replace(args, owner=args.owner or program_owner())
        secret = pulumi.ResourceOptions(additional_secret_outputs=["deploy_token"])
        props = wire(args, PROVIDER_VERSION, "username", "deploy_token")
        super().__init__(DeployTokenProvider(), name, props, pulumi.ResourceOptions.merge(opts, secret))
