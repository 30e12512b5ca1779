"""Every dynamic provider through Pulumi's own provider host, as the engine drives it
(tests/providers/provider_host.py): the inputs the plan registers, the provider as the SDK pickles
it, every call over gRPC, and what the engine records. Each type goes once through create (on one
host), refresh, a second `up`, an update and a delete (on another, as a later command's host), in
tests/providers/host_cases.py; the rules below read what each call recorded and what the stand-ins
saw.
"""

from __future__ import annotations

import base64
import datetime
import json
import pickle
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from pulumi.output import Unknown
from pulumi.runtime import rpc
from pulumi.runtime.proto import provider_pb2

from cli.plan import UNKNOWN
from components.openbao import ADMIN_USER
from providers.deploy_kubeconfig import expires_at
from providers.gitlab_group import GroupProvider
from providers.host_secret import HostSecretProvider
from providers.openbao_kv import OpenBaoKvProvider
from tests.plans import planned, planned_as
from tests.providers.bao_tls import SERVER_NAME
from tests.providers.engine import BaoServer, call, login
from tests.providers.gitlab_stub import TOKEN, GitLabState
from tests.providers.host_cases import CASES, DYNAMIC, World
from tests.providers.provider_host import PROVIDER, Host, Journey, Registered, configured, registered, started
from tests.providers.shared_bao import shared_server

DIFF_NONE, DIFF_SOME = provider_pb2.DiffResponse.DIFF_NONE, provider_pb2.DiffResponse.DIFF_SOME
GROUP = f"{DYNAMIC}/gitlab:Group"
HOST_SECRET = f"{DYNAMIC}/blueprint:HostSecret"
KV = f"{DYNAMIC}/openbao:KvSecret"


@pytest.fixture(scope="session")
def openbao(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BaoServer]:
    """The TLS server this process shares with other modules (tests/providers/shared_bao.py): the
    cases converge it (which changes nothing in a converged vault) and write KV paths of their own."""
    yield from shared_server(tmp_path_factory, tls=True)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[World]:
    """Two provider hosts for the module (an `up`'s, and a later command's), and the OpenBao server over TLS."""
    folder = tmp_path_factory.mktemp("host")
    (folder / "bin").mkdir()
    logs = [folder / "up.log", folder / "later.log"]
    with ExitStack() as servers:
        hosts = servers.enter_context(started(logs, folder / "bin"))
        openbao: BaoServer = request.getfixturevalue("openbao")  # while they start
        up, later = (servers.enter_context(configured(process, log)) for process, log in zip(hosts, logs, strict=True))
        yield World(up, later, folder, folder / "bin", openbao, servers)


class Journeys:
    """Each type's journey, taken once, when a test first asks for it (a failed one fails every test that asks)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.taken: dict[str, Journey | Exception] = {}

    def __getitem__(self, name: str) -> Journey:
        if name not in self.taken:
            try:
                self.taken[name] = CASES[name](self.world)
            except Exception as failed:  # kept, to fail each test that needs it with the same error
                self.taken[name] = failed
        taken = self.taken[name]
        if isinstance(taken, Exception):
            raise taken
        return taken


@pytest.fixture(scope="module")
def journeys(world: World) -> Journeys:
    return Journeys(world)


EVERY_TYPE = pytest.mark.parametrize("name", list(CASES))


def test_every_dynamic_resource_type_has_a_case() -> None:
    """No type is left out: each class of providers/ that is a `pulumi.dynamic.Resource` is a case."""
    import providers

    declared = set()
    for module in sorted(Path(providers.__file__).parent.glob("*.py")):
        text = module.read_text()
        declared |= {line.split('name="')[1].split('"')[0] for line in text.splitlines() if "(pulumi.dynamic.Resource," in line}
    assert declared == set(CASES)


@EVERY_TYPE
def test_every_type_is_created_by_the_host_with_the_provider_its_resource_pickled(journeys: Journeys, name: str) -> None:
    trip = journeys[name]
    assert trip.id
    assert trip.created[PROVIDER] == trip.resource.inputs[PROVIDER]
    assert {key: trip.inputs[key] for key in trip.resource.inputs} == trip.resource.inputs  # numbers as the floats they arrive as


@EVERY_TYPE
def test_every_types_check_takes_what_a_first_preview_does_not_know_yet(journeys: Journeys, world: World, name: str) -> None:
    """A first `preview` registers what another resource will make as unknown: the host's check must pass it on."""
    trip = journeys[name]
    unknown = not_known_in_a_preview(trip.resource)
    checked = world.up.check(trip.resource.but(**dict.fromkeys(unknown, rpc.UNKNOWN)), preview=True)
    assert [key for key in unknown if not isinstance(checked[key], Unknown)] == []


@EVERY_TYPE
def test_every_types_diff_of_a_preview_reports_a_change_where_a_value_is_not_known_yet(journeys: Journeys, world: World, name: str) -> None:
    """A preview of an update whose upstream changes: the engine asks for the diff with those values
    unknown; the provider may not call anything with them, and must report a change."""
    trip = journeys[name]
    unknown = not_known_in_a_preview(trip.resource)
    diff = world.later.diff(trip.resource.but(**dict.fromkeys(unknown, rpc.UNKNOWN)), trip.id, trip.inputs, trip.refreshed)
    assert diff.changes == (DIFF_SOME if unknown else DIFF_NONE)


def not_known_in_a_preview(resource: Registered) -> list[str]:
    """The inputs of `resource` that a preview of its stack registers as unknown."""
    previewed = planned_as("preview", resource.stack).one(resource.type, resource.name)
    return [key for key, value in previewed["inputs"].items() if value == UNKNOWN]


@EVERY_TYPE
def test_every_types_provider_is_loaded_again_from_the_recorded_state_by_a_later_host(journeys: Journeys, name: str) -> None:
    """The later host never saw the program: it loads the provider from the `__provider` the state recorded."""
    trip = journeys[name]
    assert (trip.refreshed_id, trip.refreshed[PROVIDER]) == (trip.id, trip.created[PROVIDER])
    assert trip.updated[PROVIDER] == trip.changed.inputs[PROVIDER]


@EVERY_TYPE
def test_a_refresh_of_what_nobody_changed_records_the_same_state(journeys: Journeys, name: str) -> None:
    trip = journeys[name]
    assert trip.refreshed == trip.created


@EVERY_TYPE
def test_a_second_up_with_no_change_changes_nothing(journeys: Journeys, name: str) -> None:
    trip = journeys[name]
    assert trip.same is not None
    assert (trip.same.changes, list(trip.same.replaces)) == (DIFF_NONE, [])


@EVERY_TYPE
def test_a_changed_setting_is_updated_in_place_and_recorded(journeys: Journeys, name: str) -> None:
    trip = journeys[name]
    assert trip.diff is not None
    assert (trip.diff.changes, list(trip.diff.replaces)) == (DIFF_SOME, [])
    changed = [key for key, value in trip.changed.inputs.items() if trip.resource.inputs.get(key) != value]
    assert changed
    assert {key: trip.updated[key] for key in changed} == {key: trip.changed_inputs[key] for key in changed}


@EVERY_TYPE
def test_every_secret_is_recorded_as_a_secret_never_in_plain(journeys: Journeys, name: str) -> None:
    trip = journeys[name]
    for outputs in trip.outputs():
        secrets = trip.resource.secret_values(outputs)
        assert secrets, "every type carries a secret"
        plain = json.dumps(trip.resource.plain(outputs))
        assert [secret for secret in secrets if secret in plain] == []


def test_no_secret_reaches_the_provider_hosts_log(journeys: Journeys, world: World) -> None:
    """What the hosts print (the engine shows it) holds no secret of any type's journey."""
    trips = [journeys[name] for name in CASES]
    logs = (world.folder / "up.log").read_text() + (world.folder / "later.log").read_text()
    secrets = {secret for trip in trips for outputs in trip.outputs() for secret in trip.resource.secret_values(outputs)}
    assert [secret for secret in secrets if secret in logs] == []


REPLACING = [
    ("Group", "path", "elsewhere", False),
    ("Project", "path", "elsewhere", False),
    ("Runner", "description", "blueprint/phase2: another runner", False),
    ("GroupVariable", "key", "ANOTHER_KEY", False),
    ("ProjectVariable", "key", "ANOTHER_KEY", False),
    ("DeployToken", "scopes", ["read_registry", "read_repository"], True),
    ("ProjectSync", "project", "4242", False),
    ("KvSecret", "path", "gitlab/deploy-tokens/elsewhere", False),
]
"""The inputs that name another object: (type, input, another value, deleted before its replacement)."""


@pytest.mark.parametrize(("name", "key", "value", "first"), REPLACING)
def test_an_input_that_names_another_object_replaces_it(
    journeys: Journeys, world: World, name: str, key: str, value: Any, first: bool
) -> None:
    trip = journeys[name]
    diff = world.later.diff(trip.resource.but(**{key: value}), trip.id, trip.inputs, trip.refreshed)
    assert (diff.changes, list(diff.replaces), diff.deleteBeforeReplace) == (DIFF_SOME, [key], first)


@pytest.mark.parametrize("name", ["Runner", "GroupVariable", "ProjectVariable", "Project", "DeployToken", "KvSecret", "GlabToken"])
def test_a_refresh_after_the_delete_drops_what_the_delete_removed(journeys: Journeys, world: World, name: str) -> None:
    trip = journeys[name]
    assert world.later.read(trip.changed, trip.id, trip.changed_inputs, trip.updated)[0] == ""


def all_at_once(host: Host, resources: list[Registered]) -> list[dict[str, Any]]:
    """The outputs of creating `resources` all at once, as the engine sends a stack's independent
    resources, and the host runs them on its four worker threads on one provider instance."""
    with ThreadPoolExecutor(max_workers=len(resources)) as engine:
        return [created for _, _, created in engine.map(host.create, resources)]


def test_phase2s_host_secrets_made_all_at_once_each_keep_their_own_value(world: World, tmp_path: Path) -> None:
    secrets = [
        registered("phase2", HOST_SECRET, record["name"], HostSecretProvider(), path=str(tmp_path / Path(record["inputs"]["path"]).name))
        for record in planned("phase2").resources
        if record["type"] == HOST_SECRET
    ]
    assert len(secrets) > 4
    for secret, created in zip(secrets, all_at_once(world.up, secrets), strict=True):
        assert Path(secret.inputs["path"]).read_text().strip() == created["value"]


def test_phase2s_openbao_entries_written_all_at_once_each_hold_their_own_data(world: World) -> None:
    bao, pki = world.bao, world.bao.pki
    assert pki is not None
    server = {"address": bao.address, "password": bao.writer_password, "ca_file": str(pki.ca_file), "server_name": SERVER_NAME}
    entries = [
        registered(
            "phase2",
            KV,
            record["name"],
            OpenBaoKvProvider(),
            **server,
            data={key: f"{record['name']}/{key}" for key in record["inputs"]["data"]},
        )  # fmt: skip
        for record in planned("phase2").resources
        if record["type"] == KV
    ][:8]  # twice the host's four workers
    assert len(entries) > 4
    all_at_once(world.up, entries)
    admin = login(bao, ADMIN_USER, bao.admin_password)
    for entry in entries:
        stored = call(bao, "GET", f"secret/data/{entry.inputs['path']}", admin).json()["data"]["data"]
        assert stored == entry.inputs["data"]


# What each type does to the world, as its user would see it.


def test_a_host_secret_keeps_its_value_in_its_file_through_an_update_and_the_delete(journeys: Journeys) -> None:
    trip = journeys["HostSecret"]
    assert trip.seen == dict.fromkeys(("create", "update", "delete"), trip.created["value"])
    assert (len(trip.created["value"]), trip.updated["value"], trip.updated["length"]) == (32, trip.created["value"], 48)


def test_the_ca_certificate_is_issued_again_by_an_update_with_its_key_for_its_domain_only(journeys: Journeys) -> None:
    trip = journeys["CaCertificate"]
    created, updated = (x509.load_pem_x509_certificate(str(outputs["cert_pem"]).encode()) for outputs in (trip.created, trip.updated))
    assert created.public_key() == updated.public_key()
    lasts = [certificate.not_valid_after_utc - certificate.not_valid_before_utc for certificate in (created, updated)]
    assert lasts[0] > datetime.timedelta(days=365) > datetime.timedelta(hours=48) <= lasts[1] < datetime.timedelta(hours=49)
    constraints = updated.extensions.get_extension_for_class(x509.NameConstraints).value
    assert [name.value for name in constraints.permitted_subtrees or []] == [trip.resource.inputs["domain"]]


def test_the_deploy_kubeconfig_gets_a_token_of_its_own_on_create_and_update_and_records_its_expiry(journeys: Journeys) -> None:
    trip = journeys["DeployKubeconfig"]
    asked = [[line for line in trip.seen[step] if "create token" in line] for step in ("create", "update", "delete")]
    assert [len(tokens) for tokens in asked] == [1, 2, 2]
    assert trip.created["anchor"] != trip.updated["anchor"]  # each token bound to a Secret of its own
    expiry = expires_at(trip.created["kubeconfig"])
    assert expiry is not None
    assert trip.created["expires_at"] == expiry > datetime.datetime.now(datetime.UTC).timestamp()


def test_openbao_init_leaves_a_server_its_writer_logs_in_to(journeys: Journeys) -> None:
    assert journeys["Init"].seen == dict.fromkeys(("create", "update", "delete"), True)


def test_a_kv_secret_is_written_rewritten_and_removed_in_openbao(journeys: Journeys) -> None:
    trip = journeys["KvSecret"]
    assert trip.seen == {"create": trip.resource.inputs["data"], "update": trip.changed.inputs["data"], "delete": None}


def test_a_kv_delete_that_cannot_reach_openbao_succeeds_and_warns_on_the_hosts_stderr(journeys: Journeys, world: World) -> None:
    """The host has no engine to log to: `pulumi.log.warn` prints to its stderr, which the engine shows."""
    trip = journeys["KvSecret"]
    lost = {**trip.updated, "ca_file": str(world.folder / "no-such-ca.crt")}  # its CA file gone: nothing can be trusted
    world.later.delete(trip.changed, trip.id, {**trip.changed_inputs, "ca_file": lost["ca_file"]}, lost)
    warned = [line for line in (world.folder / "later.log").read_text().splitlines() if line.startswith("warning: ")]
    assert [line for line in warned if f"the OpenBao entry secret/{trip.resource.inputs['path']} was not deleted" in line]


def test_a_group_is_made_changed_and_scheduled_for_deletion_in_gitlab(journeys: Journeys) -> None:
    trip = journeys["Group"]
    (made,), (changed,), (deleted,) = (trip.seen[step] for step in ("create", "update", "delete"))
    assert (made["path"], made["description"], changed["description"]) == (
        trip.resource.inputs["path"],
        "Apps that blueprint builds and deploys.",
        "Changed.",
    )
    assert deleted["marked_for_deletion_on"]
    assert trip.created["full_path"] == trip.resource.inputs["path"]


def test_a_runner_is_registered_changed_and_deleted_in_gitlab_its_token_recorded(journeys: Journeys) -> None:
    trip = journeys["Runner"]
    runner = trip.seen["create"][int(trip.id)]
    assert trip.created["authentication_token"] == runner["token"]
    assert trip.seen["update"][int(trip.id)]["run_untagged"] is trip.changed.inputs["run_untagged"] is not runner["run_untagged"]
    assert trip.seen["delete"] == {}


@pytest.mark.parametrize("name", ["GroupVariable", "ProjectVariable"])
def test_a_variable_is_set_changed_and_deleted_in_gitlab(journeys: Journeys, name: str) -> None:
    trip = journeys[name]
    settings = ("key", "value", "variable_type", "protected", "masked", "raw")
    made, changed = ({key: variables[0][key] for key in settings} for variables in (trip.seen["create"], trip.seen["update"]))
    assert made == {key: trip.resource.inputs[key] for key in settings}
    assert changed == {key: trip.changed.inputs[key] for key in settings}
    assert trip.seen["delete"] == []


def test_a_project_is_made_protected_renamed_and_deleted_in_gitlab(journeys: Journeys) -> None:
    trip = journeys["Project"]
    (made,), (renamed,) = trip.seen["create"]["projects"], trip.seen["update"]["projects"]
    assert (made["path"], made["name"], renamed["name"]) == ("guestbook", "guestbook", "Guestbook")
    assert [branch["name"] for branch in trip.seen["create"]["protected"][int(trip.id)]] == ["main"]
    assert trip.seen["delete"]["projects"] == []


def test_a_deploy_token_is_made_kept_by_an_update_and_revoked_by_the_delete(journeys: Journeys) -> None:
    trip = journeys["DeployToken"]
    (made,) = trip.seen["create"]
    assert trip.created["deploy_token"] == trip.updated["deploy_token"] == made["token"]
    assert (trip.seen["update"], made["scopes"]) == (trip.seen["create"], ["read_registry"])
    assert trip.seen["delete"] == []


def test_a_project_sync_is_one_commit_per_change_and_its_delete_leaves_the_history(journeys: Journeys) -> None:
    trip = journeys["ProjectSync"]
    files = sorted(trip.resource.inputs["files"])
    assert trip.seen["create"] == {"files": files, "commits": 1}
    assert trip.seen["update"] == trip.seen["delete"] == {"files": sorted([*files, "NOTES.md"]), "commits": 2}
    assert trip.updated["changed"] == ["NOTES.md"]


def test_a_smoke_pipeline_runs_again_for_a_finished_commit_and_a_new_target_only(journeys: Journeys) -> None:
    trip = journeys["SmokePipeline"]
    assert [len(trip.seen[step]) for step in ("create", "update", "delete")] == [1, 2, 2]
    assert (trip.created["status"], trip.updated["status"]) == ("success", "success")


def test_the_admin_token_is_seeded_once_through_the_toolbox_its_value_never_in_argv(journeys: Journeys) -> None:
    trip = journeys["AdminToken"]
    (seeded,) = trip.seen["create"]
    assert "exec -i deploy/gitlab-toolbox -c toolbox -- gitlab-rails runner -" in seeded
    assert trip.resource.inputs["token"] not in seeded
    assert trip.seen["update"] == trip.seen["delete"] == [seeded]


def test_glabs_token_is_made_kept_by_an_update_and_revoked_and_removed_by_the_delete(journeys: Journeys) -> None:
    trip = journeys["GlabToken"]
    value = trip.created["value"]
    assert trip.seen["create"] == trip.seen["update"] == {"file": value, "live": [value]}
    assert trip.updated["value"] == value
    assert trip.seen["delete"] == {"file": None, "live": []}


# The group and the host secret, further.


def apps_group(gitlab: str, **values: Any) -> Registered:
    """phase2's group, pointed at the stand-in (no CA file: it answers plain HTTP)."""
    stand_in = {"gitlab_url": gitlab, "token": TOKEN, "ca_file": "/nonexistent/ca.crt"}
    return registered("phase2", GROUP, "apps-group", GroupProvider(), **stand_in, **values)


@pytest.fixture
def host(world: World) -> Host:
    return world.up


def test_a_refresh_records_a_deletion_gitlab_scheduled(host: Host, gitlab: str, state: GitLabState) -> None:
    group = apps_group(gitlab)
    id_, inputs, outputs = host.create(group)
    state.groups[int(id_)]["marked_for_deletion_on"] = "2026-07-01"
    assert host.read(group, id_, inputs, outputs)[1]["marked_for_deletion_on"] == "2026-07-01"


def test_an_update_rewrites_the_provider_an_earlier_release_recorded(host: Host, gitlab: str, state: GitLabState) -> None:
    group = apps_group(gitlab)
    id_, inputs, outputs = host.create(group)
    # As an earlier release might have pickled the same class: the update records the new pickle.
    earlier = {**outputs, PROVIDER: base64.b64encode(pickle.dumps(GroupProvider(), protocol=2)).decode()}
    changed = apps_group(gitlab, description="Changed.")
    diff = host.diff(changed, id_, inputs, earlier)
    assert (diff.changes, list(diff.replaces)) == (DIFF_SOME, [])
    updated = host.update(changed, id_, inputs, earlier)
    assert state.groups[int(id_)]["description"] == updated["description"] == "Changed."
    assert updated[PROVIDER] == changed.inputs[PROVIDER] != earlier[PROVIDER]


def test_a_host_secrets_length_arrives_as_a_float_and_passes_the_check(host: Host, tmp_path: Path) -> None:
    path = tmp_path / "secrets" / "gitlab-root-password"
    secret = registered("phase2", HOST_SECRET, "gitlab-root-password", HostSecretProvider(), path=str(path))
    _, inputs, outputs = host.create(secret)
    assert type(inputs["length"]) is float
    assert len(outputs["value"]) == inputs["length"] == 32


def test_a_host_secret_in_a_data_folder_at_another_path_is_written_back_from_the_state(host: Host, tmp_path: Path) -> None:
    """A second operator's checkout, or a new laptop, has its data folder at another path, and no files:
    the state, on the shared backend, holds the value (secret), and the `up` writes it there, never a
    new one (a new seal key would leave OpenBao sealed for good)."""
    first = tmp_path / "alice" / "platform" / "secrets" / "openbao-seal-key"
    here = tmp_path / "bob" / "platform" / "secrets" / "openbao-seal-key"
    secret = registered("phase2", HOST_SECRET, "openbao-seal-key", HostSecretProvider(), path=str(first))
    id_, inputs, outputs = host.create(secret)
    assert "value" in secret.secrets
    moved = secret.but(path=str(here))
    assert host.diff(moved, id_, inputs, outputs).changes == DIFF_SOME
    assert host.update(moved, id_, inputs, outputs)["value"] == outputs["value"] == here.read_text().strip()
