"""The apps' projects: adopted when ours, refused otherwise, made only in the group of the stack
that made it; restored through their old path's redirect; deleted after their images; their default
branch protected before the first push."""

from __future__ import annotations

import pytest

from providers.gitlab_api import GitLab, GitLabApiError
from providers.gitlab_get_or_create import GitLabObjectError
from providers.gitlab_project import IMAGES_TIMEOUT_SECONDS, ProjectProvider
from tests.providers.clock import FakeClock
from tests.providers.engine import outputs_of
from tests.providers.gitlab_kinds import GROUP, OWNER, connection, project_props, recorded
from tests.providers.gitlab_stub import ADMIN, USER, GitLabState

pytestmark = pytest.mark.usefixtures("clock")  # every wait and retry on a clock the test drives


def test_an_existing_project_of_ours_is_adopted_not_recreated(gitlab: str, state: GitLabState, projects: ProjectProvider) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    existing = state.add_project(group, "guestbook", owner=OWNER)
    made = projects.create(project_props(gitlab, group))
    assert made.id == str(existing["id"])
    assert len(state.projects) == 1
    assert outputs_of(made)["full_path"] == f"{GROUP}/guestbook"


def test_a_project_we_did_not_create_is_refused_naming_it(gitlab: str, state: GitLabState, projects: ProjectProvider) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    state.add_project(group, "guestbook")
    with pytest.raises(GitLabObjectError, match=f"project {GROUP}/guestbook that this stack"):
        projects.create(project_props(gitlab, group))


def test_a_deleted_project_does_not_block_creating_it_again(gitlab: str, state: GitLabState, projects: ProjectProvider) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    old = projects.create(project_props(gitlab, group))
    projects.delete(old.id, outputs_of(old))
    assert int(old.id) not in state.projects  # scheduled, then deleted at once with its new path
    new = projects.create(project_props(gitlab, group))
    assert new.id != old.id


def test_a_scheduled_project_found_through_its_old_paths_redirect_is_restored(
    gitlab: str, state: GitLabState, projects: ProjectProvider
) -> None:
    """With immediate deletion off, a destroyed project stays scheduled under its new path, and its
    old path redirects there: a new state restores it rather than make a second one."""
    state.immediate_deletion = False
    group = state.add_group(GROUP, owner=OWNER)
    old = projects.create(project_props(gitlab, group))
    projects.delete(old.id, outputs_of(old))
    assert state.projects[int(old.id)]["path"] == f"guestbook-deletion_scheduled-{old.id}"
    again = projects.create(project_props(gitlab, group))
    assert again.id == old.id
    assert (state.projects[int(old.id)]["path"], state.projects[int(old.id)]["marked_for_deletion_at"]) == ("guestbook", None)


def test_a_project_renamed_on_purpose_leaves_its_old_path_free(gitlab: str, state: GitLabState, projects: ProjectProvider) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    old = projects.create(project_props(gitlab, group))
    GitLab.of(connection(gitlab)).put(f"/projects/{old.id}", {"path": "renamed"})
    new = projects.create(project_props(gitlab, group))
    assert new.id != old.id
    assert state.projects[int(old.id)]["path"] == "renamed"


def test_someone_elses_scheduled_project_leaves_its_old_path_free(gitlab: str, state: GitLabState, projects: ProjectProvider) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    theirs = state.add_project(group, "guestbook")
    GitLab.of(connection(gitlab)).delete(f"/projects/{theirs['id']}")
    ours = projects.create(project_props(gitlab, group))
    assert ours.id != str(theirs["id"])
    assert state.projects[theirs["id"]]["marked_for_deletion_at"]


def test_a_project_with_container_images_is_deleted_after_its_images(gitlab: str, state: GitLabState, projects: ProjectProvider) -> None:
    """GitLab refuses to schedule (rename) a project that holds registry tags without the registry's
    metadata database, and deletes repositories in the background."""
    group = state.add_group(GROUP, owner=OWNER)
    made = projects.create(project_props(gitlab, group))
    state.add_image(state.projects[int(made.id)])
    state.registry_lag = 2
    projects.delete(made.id, outputs_of(made))
    assert int(made.id) not in state.projects


def test_images_gitlab_does_not_delete_in_time_fail_the_delete_naming_them(
    gitlab: str, state: GitLabState, projects: ProjectProvider, clock: FakeClock
) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    made = projects.create(project_props(gitlab, group))
    state.add_image(state.projects[int(made.id)], "cache")
    state.registry_lag = 10_000
    with pytest.raises(
        GitLabObjectError,
        match=rf"container repositories of project {GROUP}/guestbook within 660s: {GROUP}/guestbook/cache \(delete_scheduled\)",
    ):
        projects.delete(made.id, outputs_of(made))
    assert clock.waited == pytest.approx(IMAGES_TIMEOUT_SECONDS)
    assert state.projects[int(made.id)]["marked_for_deletion_at"] is None


def test_a_delete_that_gitlab_finds_already_scheduled_goes_on(gitlab: str, state: GitLabState, projects: ProjectProvider) -> None:
    """A retried DELETE, or someone deleting it in the UI meanwhile: GitLab answers 400 "has been
    already marked for deletion", and the project is deleted at once all the same."""
    group = state.add_group(GROUP, owner=OWNER)
    made = projects.create(project_props(gitlab, group))
    client = GitLab.of(connection(gitlab))

    def someone_schedules_it(method: str, path: str, query: dict[str, str]) -> None:
        if (method, path, query) == ("DELETE", f"/projects/{made.id}", {}):
            state.meanwhile = None
            client.delete(path)

    state.meanwhile = someone_schedules_it
    projects.delete(made.id, outputs_of(made))
    assert int(made.id) not in state.projects


def test_a_permanent_delete_gitlab_refuses_fails_unless_it_left_the_project_scheduled(
    gitlab: str, state: GitLabState, projects: ProjectProvider
) -> None:
    """Someone restored it meanwhile: GitLab answers 400 "must be marked for deletion first"."""
    group = state.add_group(GROUP, owner=OWNER)
    made = projects.create(project_props(gitlab, group))
    client = GitLab.of(connection(gitlab))

    def someone_restores_it(method: str, path: str, query: dict[str, str]) -> None:
        if method == "DELETE" and query.get("permanently_remove") == "true":
            state.meanwhile = None
            client.post(f"{path}/restore")

    state.meanwhile = someone_restores_it
    with pytest.raises(GitLabApiError, match="HTTP 400.*must be marked for deletion first"):
        projects.delete(made.id, outputs_of(made))


def test_deleting_what_is_already_gone_succeeds(gitlab: str, state: GitLabState, projects: ProjectProvider) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    made = projects.create(project_props(gitlab, group))
    del state.projects[int(made.id)]
    projects.delete(made.id, outputs_of(made))


def test_a_refresh_reports_a_vanished_object_as_gone(gitlab: str, state: GitLabState, projects: ProjectProvider) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    made = projects.create(project_props(gitlab, group))
    del state.projects[int(made.id)]
    gone = projects.read(made.id, outputs_of(made))
    assert (gone.id, gone.outs) == (None, {})


def test_a_project_whose_group_gitlab_scheduled_and_renamed_is_still_ours(gitlab: str, state: GitLabState) -> None:
    """Scheduling renames the group (`<path>-deletion_scheduled-<id>`), and so every project's full path."""
    ours = recorded("project", gitlab, state)
    group_id = state.projects[int(ours.id)]["namespace_id"]
    GitLab.of(connection(gitlab)).delete(f"/groups/{group_id}")
    assert state.group_full_path(state.groups[group_id]) == f"{GROUP}-deletion_scheduled-{group_id}"
    refreshed = ours.provider.read(ours.id, ours.outputs)
    assert refreshed.id == ours.id
    ours.provider.update(ours.id, outputs_of(refreshed), ours.news)
    assert state.projects[int(ours.id)]["name"] == "changed"


def test_an_unmarked_project_someone_else_created_is_refused(gitlab: str, state: GitLabState, projects: ProjectProvider) -> None:
    group = state.add_group(GROUP, owner=OWNER, creator=ADMIN)
    theirs = state.add_project(group, "guestbook", creator=USER)
    with pytest.raises(GitLabObjectError, match="did not create"):
        projects.create(project_props(gitlab, group))
    assert f"projects/{theirs['id']}" not in state.attributes


def test_a_project_goes_into_the_group_another_stack_made(gitlab: str, state: GitLabState, projects: ProjectProvider) -> None:
    """phase2 makes the platform's group, phase3 its projects: the group must carry phase2's mark."""
    group = state.add_group(GROUP, owner="blueprint/phase2")
    made = projects.create(project_props(gitlab, group, group_owner="blueprint/phase2"))
    assert state.projects[int(made.id)]["namespace_id"] == group["id"]
    assert state.attributes[f"projects/{made.id}"]["blueprint_owner"] == OWNER
    theirs = state.add_group("elsewhere", owner="someone/else")
    with pytest.raises(GitLabObjectError, match="not the one this state recorded"):
        projects.create(project_props(gitlab, theirs, path="redis", group_owner="blueprint/phase2", namespace="elsewhere"))


def test_a_new_project_has_its_default_branch_protected_before_its_first_push(
    gitlab: str, state: GitLabState, projects: ProjectProvider
) -> None:
    """The deploy credential is a protected variable: only jobs of a protected ref get it."""
    group = state.add_group(GROUP, owner=OWNER)
    made = projects.create(project_props(gitlab, group))
    [branch] = state.protected_branches[int(made.id)]
    assert (branch["name"], branch["push_access_levels"], branch["merge_access_levels"]) == (
        "main",
        [{"access_level": 40}],
        [{"access_level": 40}],
    )
    assert state.repository.commits == []


@pytest.mark.parametrize("protected_before", [True, False])
def test_an_adopted_or_updated_project_has_its_default_branch_protected(
    gitlab: str, state: GitLabState, projects: ProjectProvider, protected_before: bool
) -> None:
    """Adopted over a preserved GitLab, or brought to the inputs after someone unprotected it;
    a protection GitLab already holds (its own default, or ours) is kept as it is."""
    group = state.add_group(GROUP, owner=OWNER)
    existing = state.add_project(group, "guestbook", owner=OWNER)
    held = {"id": 1, "name": "main", "push_access_levels": [{"access_level": 30}], "merge_access_levels": [{"access_level": 30}]}
    state.protected_branches[existing["id"]] = [dict(held)] if protected_before else []
    made = projects.create(project_props(gitlab, group))
    assert [b["name"] for b in state.protected_branches[existing["id"]]] == ["main"]
    if protected_before:
        assert state.protected_branches[existing["id"]] == [held]
    state.protected_branches[existing["id"]] = []  # someone unprotects it
    projects.update(str(made.id), outputs_of(made), project_props(gitlab, group, name="Guestbook"))
    assert [b["name"] for b in state.protected_branches[existing["id"]]] == ["main"]


def test_a_replacement_that_finds_the_same_project_keeps_it_when_the_engine_deletes_the_old_one(
    gitlab: str, state: GitLabState, projects: ProjectProvider
) -> None:
    """The engine replaces create-before-delete: the new resource's create (which finds the project
    at the same path and adopts it), then the old resource's delete, with the old id: the same
    project. A group of a new id at the same path is one such replacement."""
    group = state.add_group(GROUP, owner=OWNER)
    old = projects.create(project_props(gitlab, group))
    news = project_props(gitlab, group, namespace_id=float(group["id"]) + 1000)
    assert "namespace_id" in (projects.diff(old.id, outputs_of(old), news).replaces or [])
    new = projects.create(news)
    projects.delete(old.id, outputs_of(old))
    assert new.id == old.id
    assert state.projects[int(old.id)]["marked_for_deletion_at"] is None
    assert state.projects[int(old.id)]["path"] == "guestbook"


def test_the_resource_that_holds_the_project_last_still_deletes_it(gitlab: str, state: GitLabState, projects: ProjectProvider) -> None:
    group = state.add_group(GROUP, owner=OWNER)
    old = projects.create(project_props(gitlab, group))
    new = projects.create(project_props(gitlab, group, path="GuestBook"))  # GitLab finds paths in any case
    assert new.id == old.id
    projects.delete(old.id, outputs_of(old))
    projects.delete(new.id, outputs_of(new))
    assert int(new.id) not in state.projects
