"""What GitLab's get-or-create providers share: find ours, adopt or refuse, check the recorded id.

The group, projects, variables and deploy tokens (providers/gitlab_group.py, gitlab_project.py,
gitlab_variable.py, gitlab_deploy_token.py) and the runners (gitlab_runner.py) live in GitLab's
database, which `preserveData` keeps when Pulumi's state is not kept with it. So `create` first
looks where the object must be: one of ours is adopted (brought to the inputs, restored if GitLab
scheduled it for deletion), anything else is refused naming the fix, and only an empty place gets
a new one. A group or project is ours when its admin-only custom attribute `blueprint_owner` holds
`<pulumi project>/<stack>`, or, unmarked, when GitLab's own record shows the admin token's user
made it (a create whose answer was lost); a variable or deploy token is ours inside one of ours.
`update`, `delete` and `read` first check that what GitLab holds at the recorded id is ours (a state
can outlive its GitLab), and `read` keeps the recorded state when GitLab gives no answer. A delete
is done once GitLab has at least scheduled the group or project for deletion. A replacement that
finds the same group or project (the same path, in another case or through a rename's redirect, or
the same path in a group of a new id) adopts it first, and the engine deletes the old resource after
(create-before-delete: CreateReplacement, then DeleteReplaced; pulumi tests/integration/steps/step3):
so each create writes its own `blueprint_claim` on the object, and a delete leaves alone an object
that carries another resource's claim. Why, and what
GitLab's source says: docs/design/decisions.md, entries 1, 31 and 32.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any, ClassVar

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, ResourceProvider, UpdateResult

from providers.gitlab_api import GitLab, GitLabApiError, encode
from providers.http import PLAIN_PULUMI

PROVIDER_VERSION = "1"
"""Bump when the behaviour of the group, project, variable or deploy token provider changes (they
are pickled by reference: only an input change makes the engine call `update` with the new code)."""

OWNER_ATTRIBUTE = "blueprint_owner"
"""The custom attribute that marks a group or project as ours (no dot: Grape reads one as a format)."""
CLAIM_ATTRIBUTE = "blueprint_claim"
"""The custom attribute each create of a group or project writes its own claim in (a random value,
the output CLAIM): the newest resource that made or adopted it."""
CLAIM = "claim"
SCHEDULED = "marked_for_deletion_on"
"""The output that records the date GitLab scheduled a group or project for deletion (None if not)."""
RENAMED_FOR_DELETION = re.compile(r"-(?:deletion_scheduled|deleted)-\d+$")
"""What scheduling a deletion appends to a group's or project's path (Projects::MarkForDeletionService
`suffixed_identifier`: `-deleted-<id>` while the `rename_group_path_upon_deletion_scheduling` flag was off)."""


class GitLabObjectError(Exception):
    """An object GitLab holds is in the way, or is gone; the message names it and the fix."""


class NotOurs(Exception):
    """What GitLab holds at a recorded id is not ours; the message says what it is instead."""


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
    nothing, or nothing of ours, is there; the recorded state when GitLab gives no answer.
    """
    try:
        found = look()
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
    claimed_in: ClassVar[str | None] = None
    """"groups" or "projects": where a create writes its claim (CLAIM_ATTRIBUTE); None: no claim."""

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
        owner = str(props["owner"])
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
        outs = self._outputs({}, props, obj)
        if self.claimed_in is not None:
            outs[CLAIM] = uuid.uuid4().hex
            api.put(f"/{self.claimed_in}/{self.ident(obj)}/custom_attributes/{CLAIM_ATTRIBUTE}", {"value": outs[CLAIM]})
        return CreateResult(id_=self.ident(obj), outs=outs)

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
            return  # not ours (this state outlived its GitLab): left alone
        if current is not None and not self._claimed_since(api, id_, props, current):
            self.remove(api, id_, props, current)

    def _claimed_since(self, api: GitLab, id_: str, props: dict[str, Any], current: dict[str, Any]) -> bool:
        """Whether a newer resource made `current` its own (its replacement found the same object):
        it carries a claim, and not the one this resource wrote. The delete then leaves it alone (a
        Python dynamic provider cannot warn the engine, pulumi/pulumi#6065).
        """
        recorded = props.get(CLAIM)
        if self.claimed_in is None or not recorded:
            return False
        now = attribute_of(api, f"/{self.claimed_in}/{id_}", current, CLAIM_ATTRIBUTE)
        return now is not None and now != recorded

    def marked(self, api: GitLab, props: dict[str, Any], made: dict[str, Any], path: str) -> dict[str, Any]:
        """`made`, just created at `path` (API path), once marked as ours; if marking fails, it is
        deleted again before failing: the next `up` would refuse an unmarked object of its own making.
        """
        try:
            put_mark(api, path, str(props["owner"]))
        except GitLabApiError:
            self.remove(api, str(made["id"]), props)
            raise
        return made


def scheduled_on(obj: dict[str, Any]) -> Any:
    """When GitLab scheduled the group or project for deletion (the API shows the date), or None."""
    return obj.get("marked_for_deletion_on") or obj.get("marked_for_deletion_at") or None


def scheduled(obj: dict[str, Any]) -> bool:
    return scheduled_on(obj) is not None


def restore(api: GitLab, path: str, current: dict[str, Any]) -> None:
    """Restore the group or project at `path` (API path) if GitLab has scheduled it for deletion.
    GitLab gives it back its own path, or, when that is taken meanwhile, that path with a random
    suffix (Namespaces::RestoreBaseService), where it would no longer be ours to find: refused then.
    """
    if not scheduled(current):
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


def attribute_of(api: GitLab, path: str, held: dict[str, Any], key: str) -> str | None:
    """The custom attribute `key` of `held`, the group or project at `path` (API path): from its custom
    attributes when the answer carries them (asked with `with_custom_attributes`), else asked for (an
    answer without them: a followed redirect, or a token that is no admin, which that call then names).
    """
    attributes = held.get("custom_attributes")
    if not isinstance(attributes, list):
        found = api.find(f"{path}/custom_attributes/{key}")
        return None if found is None else str(found.get("value"))
    return next((str(item.get("value")) for item in attributes if item.get("key") == key), None)


def mark_of(api: GitLab, path: str, held: dict[str, Any]) -> str | None:
    """The owner mark of `held`, the group or project at `path` (API path), if it has one."""
    return attribute_of(api, path, held, OWNER_ATTRIBUTE)


def _whose(mark: str | None) -> str:
    return f"its {OWNER_ATTRIBUTE} is {mark!r}" if mark is not None else f"it has no {OWNER_ATTRIBUTE}"


def _as_recorded(full_path: str) -> str:
    """`full_path` without what scheduling a deletion appended to any of its parts (restoring undoes it)."""
    return "/".join(RENAMED_FOR_DELETION.sub("", part) for part in full_path.split("/")).lower()


def held_at(api: GitLab, scope: str, id_: object) -> dict[str, Any] | None:
    """The group or project (`scope`: "groups" or "projects") of id `id_`, with its custom attributes."""
    extra = {"with_projects": "false"} if scope == "groups" else {}
    held: dict[str, Any] | None = api.find(f"/{scope}/{encode(id_)}", with_custom_attributes="true", **extra)
    return held


def full_path_of(scope: str, held: dict[str, Any]) -> str:
    return str(held.get("full_path") if scope == "groups" else held.get("path_with_namespace"))


def check_ours(api: GitLab, scope: str, held: dict[str, Any], owner: str, at: str | None = None, subject: str = "it") -> None:
    """Raise NotOurs unless `held` (a group or project) carries the mark `owner` and, with `at`, sits at
    that full path (or where scheduling its deletion, or its group's, moved it).
    """
    full_path = full_path_of(scope, held)
    mark = mark_of(api, f"/{scope}/{held['id']}", held)
    if mark != owner:
        raise NotOurs(f"{subject} is {full_path}, and {_whose(mark)}")
    if at is not None and _as_recorded(full_path) != at.lower():
        raise NotOurs(f"{subject} carries this stack's mark but is at {full_path}, not {at}")


def in_one_of_ours(api: GitLab, scope: str, id_: object, owner: str, subject: str | None = None) -> bool:
    """Whether the group or project `id_` (`scope`: "groups" or "projects") that holds a variable, a
    deploy token or a sync is still there (False when GitLab holds nothing there); raises NotOurs
    when it does not carry the mark `owner` (`subject`: how its message names it).
    """
    found = held_at(api, scope, id_)
    if found is None:
        return False
    check_ours(api, scope, found, owner, subject=subject or f"the {scope[:-1]} {id_} that holds it")
    return True


def token_user(api: GitLab) -> int:
    """The id of the user the admin token belongs to (doc/api/users.md `GET /user`)."""
    return int(api.get("/user")["id"])


def claim(api: GitLab, kind: str, found: dict[str, Any], path: str, owner: str, made_by_us: Callable[[], bool]) -> None:
    """Make `found`, the group or project at `path` (API path), ours: it carries the mark `owner`
    already, or it carries none and `made_by_us` proves it is ours (then it gets the mark); refuse
    it otherwise.
    """
    mark = mark_of(api, path, found)
    if mark == owner:
        return
    if mark is None and made_by_us():
        put_mark(api, path, owner)  # ours from a create whose mark was never set
        return
    where = full_path_of(f"{kind}s", found)
    raise GitLabObjectError(
        f"GitLab already has a {kind} {where} that this stack ({owner}) did not create ({_whose(mark)}). "
        f"Rename, move or delete that {kind} in GitLab, then {up_again(owner)}"
    )


def put_mark(api: GitLab, path: str, owner: str) -> None:
    api.put(f"{path}/custom_attributes/{OWNER_ATTRIBUTE}", {"value": owner})


def settings_of(props: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {key: props[key] for key in keys if props.get(key) is not None}


def delete_scheduled(
    api: GitLab,
    path: str,
    full_path_key: str,
    found: dict[str, Any] | None,
    *,
    immediately: Callable[[dict[str, Any]], bool],
    before: Callable[[dict[str, Any]], None] = lambda _: None,
) -> None:
    """Schedule a group or project for deletion (after `before` it), then, where GitLab allows it,
    delete it at once (a project; a top-level group GitLab only schedules). A refusal that leaves it
    scheduled is done: a Python dynamic provider cannot warn the engine (pulumi/pulumi#6065).
    `found`: what GitLab holds at `path`, if already read.
    """
    found = api.find(path) if found is None else found
    if found is None:
        return
    if not scheduled(found):
        before(found)
        _scheduled_anyway(api, path, None, lambda: api.delete(path))  # a retry after GitLab marked it
        found = api.find(path)  # scheduling renamed it: the permanent delete names the new path
        if found is not None and not scheduled(found):
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
        if again is not None and (not scheduled(again) or (named is not None and again.get(named[0]) != named[1])):
            raise
