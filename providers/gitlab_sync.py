"""One commit per project per change: a project's files pushed to its branch by the Commits API.

The provider compares the files it should hold with the branch's tree (git blob ids, computed
locally, so no file is downloaded), and sends every difference (create, update, delete) as the
actions of **one** commit: one edit makes one pipeline. Unchanged files make no commit; a file
gone from `apps/<name>/` is deleted from the repository. The outputs carry the branch's head, which
the smoke pipeline waits on.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, ResourceProvider, UpdateResult

PROVIDER_VERSION = "1"
"""Bump when the provider's behaviour changes (it is pickled by reference)."""

INPUTS = ("gitlab_url", "token", "ca_file", "project", "branch", "files", "message", "provider_version")


class GitLabSyncError(Exception):
    """GitLab refused the sync; the message says which project and why."""


def blob_id(content: str) -> str:
    """The git blob id of `content` (what GitLab's tree API reports for the file)."""
    data = content.encode()
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def commit_actions(desired: dict[str, str], current: dict[str, str]) -> list[dict[str, str]]:
    """The Commits API actions that turn a tree of `current` {path: blob id} into `desired`
    {path: content}: create what is new, update what differs, delete what is gone. Sorted by path.
    """
    actions = []
    for path in sorted(set(desired) | set(current)):
        if path not in current:
            actions.append({"action": "create", "file_path": path, "content": desired[path]})
        elif path not in desired:
            actions.append({"action": "delete", "file_path": path})
        elif blob_id(desired[path]) != current[path]:
            actions.append({"action": "update", "file_path": path, "content": desired[path]})
    return actions


def _session(props: dict[str, Any]) -> Any:
    import requests

    session = requests.Session()
    session.headers["PRIVATE-TOKEN"] = str(props["token"])
    session.verify = str(props["ca_file"])
    return session


def _api(props: dict[str, Any]) -> str:
    return f"{str(props['gitlab_url']).rstrip('/')}/api/v4/projects/{quote(str(props['project']), safe='')}"


def current_tree(props: dict[str, Any]) -> dict[str, str]:
    """{path: blob id} of every file on the branch; empty when the branch does not exist yet."""
    session, tree, page = _session(props), {}, 1
    while True:
        response = session.get(
            f"{_api(props)}/repository/tree",
            params={"ref": props["branch"], "recursive": "true", "per_page": 100, "page": page},
            timeout=30,
        )
        if response.status_code == 404:
            return {}  # an empty repository: the first commit creates the branch
        _check(response, props, "read the repository tree")
        entries = response.json()
        tree.update({entry["path"]: entry["id"] for entry in entries if entry["type"] == "blob"})
        if not response.headers.get("X-Next-Page"):
            return tree
        page = int(response.headers["X-Next-Page"])


def head(props: dict[str, Any]) -> str:
    response = _session(props).get(f"{_api(props)}/repository/branches/{quote(str(props['branch']), safe='')}", timeout=30)
    _check(response, props, "read the branch")
    return str(response.json()["commit"]["id"])


def _check(response: Any, props: dict[str, Any], doing: str) -> None:
    if response.status_code >= 400:
        raise GitLabSyncError(
            f"GitLab refused to {doing} of project {props['project']} (HTTP {response.status_code}): {response.text[:300]}"
        )


def sync(props: dict[str, Any]) -> dict[str, Any]:
    """Commit the differences, if any, in one commit; return the outputs (the branch's head)."""
    actions = commit_actions(dict(props["files"]), current_tree(props))
    if actions:
        response = _session(props).post(
            f"{_api(props)}/repository/commits",
            json={"branch": props["branch"], "commit_message": props["message"], "actions": actions},
            timeout=60,
        )
        _check(response, props, f"commit {len(actions)} change(s)")
        commit = str(response.json()["id"])
    else:
        commit = head(props)
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
        return ReadResult(id_, props)

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing: the history stays in the repository, which goes with its project."""


@dataclass(frozen=True, kw_only=True)
class GitLabSyncArgs:
    gitlab_url: str
    token: pulumi.Input[str]
    ca_file: pulumi.Input[str]
    project: pulumi.Input[str]
    """The project's id or full path."""
    files: dict[str, str]
    """{path in the repository: content}: everything the branch must hold."""
    branch: str = "main"
    message: str = "blueprint: sync from apps/"


class GitLabSync(pulumi.dynamic.Resource, module="gitlab", name="ProjectSync"):
    """A project's branch holding exactly `files`, changed by one commit per change."""

    commit: pulumi.Output[str]
    """The branch's head after the sync."""

    def __init__(self, name: str, args: GitLabSyncArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        props = {
            "gitlab_url": args.gitlab_url,
            "token": pulumi.Output.secret(args.token),
            "ca_file": args.ca_file,
            "project": args.project,
            "branch": args.branch,
            "files": args.files,
            "message": args.message,
            "provider_version": PROVIDER_VERSION,
            "commit": None,
            "changed": None,
        }
        super().__init__(GitLabSyncProvider(), name, props, opts)
