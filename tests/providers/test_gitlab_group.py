"""The platform's group: made and marked as the stack's, adopted when ours (marked, or made by the
admin alone), refused otherwise; restored, not duplicated, when GitLab scheduled it for deletion."""

from __future__ import annotations

import pytest

from providers.gitlab_api import GitLabApiError
from providers.gitlab_get_or_create import GitLabObjectError
from providers.gitlab_group import GroupProvider
from tests.providers.engine import outputs_of
from tests.providers.gitlab_kinds import GROUP, OWNER, group_props, recorded
from tests.providers.gitlab_stub import ADMIN, TOKEN, USER, GitLabState

pytestmark = pytest.mark.usefixtures("clock")  # every wait and retry on a clock the test drives


def test_a_new_group_is_created_and_marked_as_the_stacks(gitlab: str, state: GitLabState, groups: GroupProvider) -> None:
    made = groups.create(group_props(gitlab))
    group = state.groups[int(made.id)]
    assert (group["path"], group["visibility"]) == (GROUP, "internal")
    assert state.attributes[f"groups/{made.id}"]["blueprint_owner"] == OWNER


def test_an_existing_group_of_ours_is_adopted_not_recreated(gitlab: str, state: GitLabState, groups: GroupProvider) -> None:
    existing = state.add_group(GROUP, owner=OWNER)
    made = groups.create(group_props(gitlab))
    assert made.id == str(existing["id"])
    assert list(state.groups) == [existing["id"]]
    assert existing["visibility"] == "internal"  # brought to the inputs


def test_a_group_we_did_not_create_is_refused_naming_it(gitlab: str, state: GitLabState, groups: GroupProvider) -> None:
    state.add_group(GROUP)
    with pytest.raises(GitLabObjectError) as refused:
        groups.create(group_props(gitlab))
    message = str(refused.value)
    assert f"group {GROUP} that this stack ({OWNER}) did not create" in message
    assert TOKEN not in message


def test_a_group_of_another_stack_is_refused(gitlab: str, state: GitLabState, groups: GroupProvider) -> None:
    state.add_group(GROUP, owner="blueprint/dev")
    with pytest.raises(GitLabObjectError, match="its blueprint_owner is 'blueprint/dev'"):
        groups.create(group_props(gitlab))


def test_a_deleted_group_does_not_block_creating_it_again(gitlab: str, state: GitLabState, groups: GroupProvider) -> None:
    """A top-level group is only scheduled for deletion (and renamed): the path is free again."""
    old = groups.create(group_props(gitlab))
    groups.delete(old.id, outputs_of(old))
    assert state.groups[int(old.id)]["marked_for_deletion_on"]
    new = groups.create(group_props(gitlab))
    assert new.id != old.id


def test_a_scheduled_group_of_ours_that_kept_its_path_is_restored(gitlab: str, state: GitLabState, groups: GroupProvider) -> None:
    """GitLab does not rename a group whose projects still hold images: it is restored, not refused."""
    old = groups.create(group_props(gitlab))
    state.add_image(state.add_project(state.groups[int(old.id)], "guestbook"))
    groups.delete(old.id, outputs_of(old))
    again = groups.create(group_props(gitlab))
    assert again.id == old.id
    assert state.groups[int(old.id)]["marked_for_deletion_on"] is None


def test_a_new_path_replaces_the_group_other_inputs_update_it(groups: GroupProvider) -> None:
    olds = group_props("http://x")
    assert groups.diff("1", olds, group_props("http://x", path="elsewhere")).replaces == ["path"]
    changed = groups.diff("1", olds, group_props("http://x", description="new"))
    assert (changed.changes, changed.replaces) == (True, [])


def test_what_cannot_be_marked_as_ours_is_deleted_again(gitlab: str, state: GitLabState, groups: GroupProvider) -> None:
    """With Admin Mode on, a token without `admin_mode` cannot set the mark: what was just made
    goes, so that the next `up` makes it again instead of refusing it as not ours."""
    state.admin_mode, state.token_scopes = True, {"api", "create_runner"}
    with pytest.raises(GitLabApiError, match="custom_attributes/blueprint_owner failed \\(HTTP 403\\)"):
        groups.create(group_props(gitlab))
    state.token_scopes.add("admin_mode")
    made = groups.create(group_props(gitlab))
    assert state.attributes[f"groups/{made.id}"]["blueprint_owner"] == OWNER


@pytest.mark.parametrize(
    "how",
    ["a user made it, added the admin as an Owner and left", "the admin made it, and it has another member"],
)
def test_an_unmarked_group_is_refused_unless_the_admin_made_it_alone(
    gitlab: str, state: GitLabState, groups: GroupProvider, how: str
) -> None:
    """GitLab lets ordinary users create top-level groups: only GitLab's own record of the maker counts."""
    if how.startswith("a user"):
        group = state.add_group(GROUP, creator=USER)
        state.add_member(group, ADMIN, added_by=USER)
        state.remove_member(group, USER)
    else:
        group = state.add_group(GROUP, creator=ADMIN)
        state.add_member(group, USER, 30, added_by=ADMIN)
    group["description"] = "Apps that blueprint builds and deploys."  # what anyone can write proves nothing
    with pytest.raises(GitLabObjectError, match="did not create"):
        groups.create(group_props(gitlab))
    assert f"groups/{group['id']}" not in state.attributes


def test_a_scheduled_group_whose_path_was_taken_meanwhile_is_not_restored_elsewhere(gitlab: str, state: GitLabState) -> None:
    """GitLab would restore it at its path with a random suffix, where nothing would find it again."""
    ours = recorded("group", gitlab, state)
    group = state.groups[int(ours.id)]
    group["marked_for_deletion_on"] = "2026-07-01"
    group["path"] = group["name"] = f"{GROUP}-deletion_scheduled-{group['id']}"
    state.add_group(GROUP)
    with pytest.raises(GitLabObjectError, match="now holds something else"):
        ours.provider.update(ours.id, {**ours.outputs, "marked_for_deletion_on": "2026-07-01"}, ours.news)
    assert group["marked_for_deletion_on"] == "2026-07-01"


def test_a_new_path_that_finds_the_same_group_keeps_it_when_the_engine_deletes_the_old_one(
    gitlab: str, state: GitLabState, groups: GroupProvider
) -> None:
    """Create-before-delete: the new path in another case finds the same group (GitLab finds paths in
    any case), the replacement adopts it, and the old resource's delete then leaves it alone."""
    old = groups.create(group_props(gitlab))
    news = group_props(gitlab, path=GROUP.upper())
    assert groups.diff(old.id, outputs_of(old), news).replaces == ["path"]
    new = groups.create(news)
    groups.delete(old.id, outputs_of(old))
    assert new.id == old.id
    assert state.groups[int(old.id)]["marked_for_deletion_on"] is None
