"""One commit per project per change: a project's files pushed to its branch by the Commits API.

The files it should hold are compared with the branch's tree by git blob id (computed locally: no
file is downloaded), and every difference (create, update, delete) goes into **one** commit; no
difference, no commit. A file is a string (text, sent as it is) or `{"base64": <its bytes>}`
(binary, sent as a `base64` action); its blob id is git's over the bytes either way. The outputs
carry the branch's head, which the smoke pipeline waits on.

Only into a project of ours: before any commit the project must carry our `blueprint_owner` mark
(one GET, providers/gitlab_get_or_create.py), or the sync refuses, naming the fix. `read` reports
the sync gone when its project is gone or not ours (the next `up` syncs it again), and keeps the
recorded state when GitLab gives no answer. Why: docs/design/decisions.md, entry 30.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, ResourceProvider, UpdateResult

from providers.gitlab_api import CONNECTION, Connection, GitLab, GitLabApiError, encode, wire
from providers.gitlab_get_or_create import (
    GitLabObjectError,
    NotOurs,
    gone_message,
    in_one_of_ours,
    not_ours_message,
    program_owner,
    refreshed,
)

PROVIDER_VERSION = "1"
"""Bump when the provider's behaviour changes (it is pickled by reference)."""

INPUTS = (*CONNECTION, "project", "branch", "files", "message", "owner", "provider_version")


FileContent: TypeAlias = str | Mapping[str, str]
"""A file the branch must hold: its text, or `{"base64": ...}` of its bytes (a binary file)."""


def file_bytes(content: FileContent) -> bytes:
    """The bytes of a file as `files` gives it (text as UTF-8, as GitLab stores a text action's content)."""
    if isinstance(content, str):
        return content.encode()
    return base64.b64decode(content["base64"], validate=True)


def blob_id(content: str | bytes) -> str:
    r"""The git blob id of `content` (what GitLab's tree API reports for the file): git hashes the
    bytes, as `blob <length>\0<bytes>`; a string stands for its UTF-8 bytes.
    """
    data = content.encode() if isinstance(content, str) else content
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _content(path: str, content: FileContent) -> dict[str, str]:
    """An action's content: text as it is, a binary file as base64 with `encoding: base64` (the
    Commits API's `actions[].encoding`, `text` (the default) or `base64`: doc/api/commits.md;
    lib/api/commits.rb `validate_commit_action!`).
    """
    if isinstance(content, str):
        return {"file_path": path, "content": content}
    return {"file_path": path, "content": content["base64"], "encoding": "base64"}


def commit_actions(desired: Mapping[str, FileContent], current: dict[str, str]) -> list[dict[str, str]]:
    """The Commits API actions that turn a tree of `current` {path: blob id} into `desired`
    {path: content}: create what is new, update what differs, delete what is gone. Sorted by path.
    """
    actions = []
    for path in sorted(set(desired) | set(current)):
        if path not in current:
            actions.append({"action": "create", **_content(path, desired[path])})
        elif path not in desired:
            actions.append({"action": "delete", "file_path": path})
        elif blob_id(file_bytes(desired[path])) != current[path]:
            actions.append({"action": "update", **_content(path, desired[path])})
    return actions


def current_tree(api: GitLab, repository: str, branch: str) -> dict[str, str]:
    """{path: blob id} of every file on the branch; empty when the branch does not exist yet."""
    try:
        entries = list(api.pages(f"{repository}/tree", ref=branch, recursive="true"))
    except GitLabApiError as error:
        if error.status == 404:
            return {}  # an empty repository: the first commit creates the branch
        raise
    return {entry["path"]: entry["id"] for entry in entries if entry["type"] == "blob"}


def check_project(api: GitLab, props: dict[str, Any]) -> None:
    """Refuse, naming the fix, unless the project is there and ours."""
    owner, what = str(props.get("owner") or ""), f"project {props['project']} (of this sync)"
    try:
        there = in_one_of_ours(api, "projects", props["project"], owner, subject="it")
    except NotOurs as theirs:
        raise GitLabObjectError(not_ours_message(what, str(theirs), owner)) from None
    if not there:
        raise GitLabObjectError(gone_message(what, owner))


def sync(props: dict[str, Any]) -> dict[str, Any]:
    """Commit the differences, if any, in one commit; return the outputs (the branch's head)."""
    api, repository = GitLab.of(props), f"/projects/{encode(props['project'])}/repository"
    check_project(api, props)
    actions = commit_actions(dict(props["files"]), current_tree(api, repository, str(props["branch"])))
    if actions:
        body = {"branch": props["branch"], "commit_message": props["message"], "actions": actions}
        commit = str(api.post(f"{repository}/commits", body)["id"])
    else:
        commit = str(api.get(f"{repository}/branches/{encode(props['branch'])}")["commit"]["id"])
    return {**{key: props.get(key) for key in INPUTS}, "commit": commit, "changed": [action["file_path"] for action in actions]}


class GitLabSyncProvider(ResourceProvider):
    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [key for key in INPUTS if olds.get(key) != news.get(key)]
        return DiffResult(changes=bool(changed), replaces=["project"] if "project" in changed else [], delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=f"{props['project']}@{props['branch']}", outs=sync(props))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=sync(news))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        def look() -> dict[str, Any] | None:
            return {} if in_one_of_ours(GitLab.of(props), "projects", props["project"], str(props["owner"])) else None

        return refreshed(id_, props, look, lambda _: {})

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing: the history stays in the repository, which goes with its project."""


@dataclass(frozen=True, kw_only=True)
class GitLabSyncArgs:
    connection: Connection
    project: pulumi.Input[str]
    """The project's id or full path."""
    files: dict[str, FileContent]
    """{path in the repository: content}: everything the branch must hold; a binary file's
    content is `{"base64": ...}` of its bytes."""
    branch: str = "main"
    message: str = "blueprint: sync from apps/"
    owner: str | None = None
    """`<pulumi project>/<stack>`, the mark the project must carry; the running program's by default."""


class GitLabSync(pulumi.dynamic.Resource, module="gitlab", name="ProjectSync"):
    """A project's branch holding exactly `files`, changed by one commit per change."""

    commit: pulumi.Output[str]
    """The branch's head after the sync."""

    def __init__(self, name: str, args: GitLabSyncArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        props = wire(dataclasses.replace(args, owner=args.owner or program_owner()), PROVIDER_VERSION, "commit", "changed")
        super().__init__(GitLabSyncProvider(), name, props, opts)
