"""Our dynamic providers through Pulumi's own provider host, as the engine drives it
(tests/providers/provider_host.py): the inputs phase2 registers, the provider as the SDK pickles
it, every call over gRPC, and what the engine records. The platform's GitLab group against the
local stand-in for GitLab; a host secret in a temporary folder.
"""

from __future__ import annotations

import base64
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pulumi.runtime.proto import provider_pb2

from providers.gitlab_group import GroupProvider
from providers.host_secret import HostSecretProvider
from tests.providers.gitlab_stub import TOKEN, GitLabState
from tests.providers.provider_host import Host, Registered, provider_host, registered

GROUP = "pulumi-python:dynamic/gitlab:Group"
HOST_SECRET = "pulumi-python:dynamic/blueprint:HostSecret"


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    """One provider host for the module, as the engine keeps one for a deployment."""
    with provider_host(tmp_path_factory.mktemp("host") / "stderr") as running:
        yield running


def apps_group(gitlab: str, **values: Any) -> Registered:
    """phase2's group, pointed at the stand-in (no CA file: it answers plain HTTP)."""
    stand_in = {"gitlab_url": gitlab, "token": TOKEN, "ca_file": "/nonexistent/ca.crt"}
    return registered("phase2", GROUP, "apps-group", GroupProvider(), **stand_in, **values)


def test_a_created_group_is_recorded_with_the_token_kept_secret(host: Host, gitlab: str, state: GitLabState) -> None:
    group = apps_group(gitlab)
    id_, _, outputs = host.create(group)
    assert outputs["full_path"] == state.groups[int(id_)]["path"] == group.inputs["path"]
    assert outputs["token"] == TOKEN
    assert [key for key, value in group.plain(outputs).items() if TOKEN in str(value)] == []


def test_a_refresh_loads_the_provider_from_the_recorded_outputs_and_records_a_scheduled_deletion(
    host: Host, gitlab: str, state: GitLabState
) -> None:
    group = apps_group(gitlab)
    id_, inputs, outputs = host.create(group)
    assert host.read(group, id_, inputs, outputs) == outputs  # nothing changed in GitLab: nothing changes
    state.groups[int(id_)]["marked_for_deletion_on"] = "2026-07-01"
    assert host.read(group, id_, inputs, outputs)["marked_for_deletion_on"] == "2026-07-01"


def test_a_new_description_updates_the_group_in_place_and_rewrites_the_recorded_provider(
    host: Host, gitlab: str, state: GitLabState
) -> None:
    group = apps_group(gitlab)
    id_, inputs, outputs = host.create(group)
    # As an earlier release might have pickled the same class: the update records the new pickle.
    earlier = {**outputs, "__provider": base64.b64encode(pickle.dumps(GroupProvider(), protocol=2)).decode()}
    changed = apps_group(gitlab, description="Changed.")
    diff = host.diff(changed, id_, inputs, earlier)
    assert (diff.changes, list(diff.replaces)) == (provider_pb2.DiffResponse.DIFF_SOME, [])
    updated = host.update(changed, id_, inputs, earlier)
    assert state.groups[int(id_)]["description"] == updated["description"] == "Changed."
    assert updated["__provider"] == changed.inputs["__provider"] != earlier["__provider"]


def test_a_deleted_group_is_scheduled_for_deletion(host: Host, gitlab: str, state: GitLabState) -> None:
    group = apps_group(gitlab)
    id_, inputs, outputs = host.create(group)
    host.delete(group, id_, inputs, outputs)
    assert state.groups[int(id_)]["marked_for_deletion_on"]


def test_a_host_secret_is_recorded_as_a_secret_only_and_kept_in_its_file(host: Host, tmp_path: Path) -> None:
    path = tmp_path / "secrets" / "gitlab-root-password"
    secret = registered("phase2", HOST_SECRET, "gitlab-root-password", HostSecretProvider(), path=str(path))
    id_, inputs, outputs = host.create(secret)
    assert type(inputs["length"]) is float  # as every number arrives, and the check passes it
    assert path.read_text().strip() == outputs["value"]
    assert len(outputs["value"]) == inputs["length"] == 32
    assert "value" in secret.secrets
    assert outputs["value"] not in str(secret.plain(outputs))
    assert host.read(secret, id_, inputs, outputs) == outputs
