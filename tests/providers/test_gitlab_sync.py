"""One commit per project per change: the diff logic as pure functions, and the provider (loaded
as the engine loads it) against a local stub of the Commits API."""

from __future__ import annotations

import base64
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from providers.gitlab_api import GitLabApiError
from providers.gitlab_get_or_create import GitLabObjectError
from providers.gitlab_sync import PROVIDER_VERSION, FileContent, GitLabSyncProvider, blob_id, commit_actions, file_bytes
from tests.providers.engine import as_engine_loads, free_port, outputs_of
from tests.providers.gitlab_stub import ADMIN, TOKEN, GitLabState, Repository

OWNER = "blueprint/phase3"


def test_blob_ids_are_gits(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("hello\n")
    git = subprocess.run(["git", "hash-object", str(tmp_path / "file")], capture_output=True, text=True, check=True)
    assert blob_id("hello\n") == git.stdout.strip()


BINARY = b"\x89PNG\r\n\x1a\n\x00\xff\xfe\x00 not UTF-8"
"""A binary file: its bytes do not decode as UTF-8 (0xff, 0x00 among them)."""
AS_BASE64 = {"base64": base64.b64encode(BINARY).decode()}
"""How `files` carries it."""


def test_binary_blob_ids_are_gits_over_the_bytes(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(BINARY)
    git = subprocess.run(["git", "hash-object", str(tmp_path / "file")], capture_output=True, text=True, check=True)
    assert blob_id(file_bytes(AS_BASE64)) == git.stdout.strip()


def test_text_files_are_sent_as_text() -> None:
    """No `encoding`: GitLab's default is text (doc/api/commits.md)."""
    assert commit_actions({"app.py": "print('é')\n"}, {}) == [{"action": "create", "file_path": "app.py", "content": "print('é')\n"}]


def test_binary_files_are_sent_as_base64() -> None:
    actions = commit_actions({"new.png": AS_BASE64, "old.png": AS_BASE64}, {"old.png": blob_id(b"other bytes")})
    assert actions == [
        {"action": "create", "file_path": "new.png", "content": AS_BASE64["base64"], "encoding": "base64"},
        {"action": "update", "file_path": "old.png", "content": AS_BASE64["base64"], "encoding": "base64"},
    ]


def test_new_changed_and_removed_files_become_create_update_delete() -> None:
    current = {"same": blob_id("a"), "changed": blob_id("old"), "gone": blob_id("x")}
    actions = commit_actions({"same": "a", "changed": "new", "added": "n"}, current)
    assert actions == [
        {"action": "create", "file_path": "added", "content": "n"},
        {"action": "update", "file_path": "changed", "content": "new"},
        {"action": "delete", "file_path": "gone"},
    ]


def test_unchanged_files_make_no_action() -> None:
    assert commit_actions({"a": "1", "b": "2"}, {"a": blob_id("1"), "b": blob_id("2")}) == []


PROJECT = "42"
"""The project of ours the tests sync (any project's repository is the stub's one `Repository`)."""


def props(gitlab: str, files: Mapping[str, FileContent]) -> dict[str, Any]:
    return {
        "gitlab_url": gitlab,
        "token": TOKEN,
        "ca_file": "/nonexistent/ca.crt",
        "project": PROJECT,
        "branch": "main",
        "files": files,
        "message": "blueprint: sync from apps/",
        "owner": OWNER,
        "provider_version": PROVIDER_VERSION,
    }


@pytest.fixture(autouse=True)
def ours(state: GitLabState) -> dict[str, Any]:
    """Project 42 of the stack's group, marked as the stack's."""
    project = state.add_project(state.add_group("blueprint-apps", owner=OWNER, creator=ADMIN), "guestbook", owner=OWNER, creator=ADMIN)
    state.projects[int(PROJECT)] = state.projects.pop(project["id"]) | {"id": int(PROJECT)}
    state.attributes[f"projects/{PROJECT}"] = state.attributes.pop(f"projects/{project['id']}")
    return state.projects[int(PROJECT)]


@pytest.fixture
def provider() -> GitLabSyncProvider:
    return as_engine_loads(GitLabSyncProvider())


def test_the_first_sync_is_one_commit_with_every_file(gitlab: str, repository: Repository, provider: GitLabSyncProvider) -> None:
    outs = outputs_of(provider.create(props(gitlab, {"app.py": "print()\n", "chart/Chart.yaml": "name: x\n", ".gitlab-ci.yml": "x: 1\n"})))
    assert len(repository.commits) == 1
    assert [action["action"] for action in repository.commits[0]["actions"]] == ["create", "create", "create"]
    assert outs["commit"] == repository.head()


def test_one_edit_is_one_commit_of_one_action(gitlab: str, repository: Repository, provider: GitLabSyncProvider) -> None:
    files = {"a": "1", "b": "2", "c": "3"}
    old = outputs_of(provider.create(props(gitlab, files)))
    new = outputs_of(provider.update("42@main", old, props(gitlab, {**files, "b": "changed"})))
    assert len(repository.commits) == 2
    assert repository.commits[1]["actions"] == [{"action": "update", "file_path": "b", "content": "changed"}]
    assert new["changed"] == ["b"]


def test_unchanged_files_make_no_commit(gitlab: str, repository: Repository, provider: GitLabSyncProvider) -> None:
    files = {"a": "1", "b": "2", "c": "3"}  # more files than a page: the tree is read across pages
    old = outputs_of(provider.create(props(gitlab, files)))
    again = outputs_of(provider.update("42@main", old, props(gitlab, files)))
    assert len(repository.commits) == 1
    assert again["commit"] == old["commit"]


def test_a_binary_file_is_one_base64_commit_action_holding_its_exact_bytes(
    gitlab: str, repository: Repository, provider: GitLabSyncProvider
) -> None:
    provider.create(props(gitlab, {"logo.png": AS_BASE64, "app.py": "print()\n"}))
    [commit] = repository.commits
    assert [action for action in commit["actions"] if action["file_path"] == "logo.png"] == [
        {"action": "create", "file_path": "logo.png", "content": AS_BASE64["base64"], "encoding": "base64"}
    ]
    assert repository.files == {"logo.png": BINARY, "app.py": "print()\n"}  # as GitLab decodes it


def test_an_unchanged_binary_file_makes_no_commit(gitlab: str, repository: Repository, provider: GitLabSyncProvider) -> None:
    files: dict[str, FileContent] = {
        "logo.png": AS_BASE64,
        "font.woff2": {"base64": base64.b64encode(bytes(range(256))).decode()},
        "a": "1",
    }
    old = outputs_of(provider.create(props(gitlab, files)))
    again = outputs_of(provider.update("42@main", old, props(gitlab, files)))
    assert (len(repository.commits), again["commit"], again["changed"]) == (1, old["commit"], [])


def test_a_file_removed_from_the_folder_is_removed_from_the_repository(
    gitlab: str, repository: Repository, provider: GitLabSyncProvider
) -> None:
    old = outputs_of(provider.create(props(gitlab, {"keep": "1", "drop": "2"})))
    provider.update("42@main", old, props(gitlab, {"keep": "1"}))
    assert repository.files == {"keep": "1"}
    assert repository.commits[1]["actions"] == [{"action": "delete", "file_path": "drop"}]


def test_a_refused_request_names_the_project_and_the_status(gitlab: str, provider: GitLabSyncProvider) -> None:
    with pytest.raises(GitLabApiError, match=r"GET /api/v4/projects/42(/repository/tree)? failed \(HTTP 401\)"):
        provider.create({**props(gitlab, {"a": "1"}), "token": "wrong"})


def test_a_new_file_list_is_an_update_a_new_project_a_replacement(provider: GitLabSyncProvider) -> None:
    olds = props("http://x", {"a": "1"})
    assert provider.diff("42@main", olds, props("http://x", {"a": "2"})).replaces == []
    assert provider.diff("42@main", olds, {**olds, "project": "43"}).replaces == ["project"]


def test_a_sync_never_commits_to_a_project_that_is_not_ours(
    gitlab: str, state: GitLabState, repository: Repository, provider: GitLabSyncProvider, ours: dict[str, Any]
) -> None:
    """The state outlived its GitLab, and project 42 is now a user's: one commit would delete
    every file of theirs that is not in apps/."""
    old = outputs_of(provider.create(props(gitlab, {"a": "1"})))
    state.attributes.clear()
    ours["path"] = "their-project"
    repository.files = {"their-file": "theirs"}
    with pytest.raises(GitLabObjectError) as refused:
        provider.update(f"{PROJECT}@main", old, props(gitlab, {"a": "2"}))
    assert (len(repository.commits), repository.files) == (1, {"their-file": "theirs"})
    assert "belongs to an earlier GitLab" in str(refused.value)
    assert "`pulumi refresh -s phase3`" in str(refused.value)


def test_a_refresh_drops_a_sync_whose_project_is_not_ours(gitlab: str, state: GitLabState, provider: GitLabSyncProvider) -> None:
    """So that the next `up`, once it has made the project again (perhaps with the same id), syncs it."""
    made = provider.create(props(gitlab, {"a": "1"}))
    state.attributes.clear()
    gone = provider.read(str(made.id), outputs_of(made))
    assert (gone.id, gone.outs) == (None, {})


@pytest.mark.usefixtures("clock")  # the client's retries on a clock the test drives
def test_a_refresh_keeps_a_sync_when_gitlab_gives_no_answer(gitlab: str, provider: GitLabSyncProvider) -> None:
    made = provider.create(props(gitlab, {"a": "1"}))
    recorded = {**outputs_of(made), "gitlab_url": f"http://127.0.0.1:{free_port()}"}
    kept = provider.read(str(made.id), recorded)
    assert (kept.id, kept.outs) == (made.id, recorded)
