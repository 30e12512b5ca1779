"""KV v2 writes against a real OpenBao, through the provider as the engine loads it.

The provider logs in as user `blueprint` for every call (components/openbao.py gives it only
`secret/data/*`). On `pulumi refresh` the engine reads every resource at once, so a KV read may
find OpenBao just restarted (sealed until it unseals itself with its static key), unsealed but not
active yet, or sealed by hand; and right after KV v2 is enabled the mount answers "upgrading" for
a moment. None of these may fail a call that can wait, nor make refresh drop or rewrite a secret
it could not see.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hvac
import pulumi
import pytest

from components.openbao import ADMIN_USER, WRITER_USER
from providers import openbao_kv
from providers.http import session
from providers.openbao_kv import PROVIDER_VERSION, OpenBaoKvProvider
from tests.providers.clock import FakeClock
from tests.providers.engine import BaoServer, as_engine_loads, free_port, outputs_of, running_bao

pytestmark = pytest.mark.run_first  # most of these tests wait on a real server (tests/conftest.py)


@pytest.fixture(scope="module")
def bao(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BaoServer]:
    """One self-initialised server for the module (each test writes its own path), restarted once when
    its first start left OpenBao's unseal retry pending (see UNSEAL_RETRY): then only a start unseals
    it, as the tests that seal it need."""
    with running_bao(tmp_path_factory.mktemp("kv") / "bao") as server:
        server.wait_until_active()
        if UNSEAL_RETRY in server.log_since_start():  # logged as it starts, seconds before it is active
            server.restart()
            server.wait_until_active()
        yield server


def admin(bao: BaoServer) -> hvac.Client:
    """A client logged in as `admin`, for what the tests look at or break behind the provider's back."""
    client = hvac.Client(url=bao.address, session=session())  # no proxy from the environment
    client.auth.userpass.login(username=ADMIN_USER, password=bao.admin_password)
    return client


UNSEAL_RETRY = "failed to unseal core"
"""What OpenBao logs when its auto-unseal at start finds no key: it then tries again every 5 s until a
try succeeds (openbao internal/command/server.go, `runUnseal`). On a first start that try races the
self-initialisation, which makes the key and unseals by itself: when the try comes first, the retry is
still pending after the vault is up, and unseals a vault sealed by hand within those 5 s."""


def seal_by_hand(bao: BaoServer) -> None:
    """Seal the server as its admin would (`bao operator seal`), once nothing unseals it but a start."""
    assert UNSEAL_RETRY not in bao.log_since_start(), "OpenBao's auto-unseal retry is pending: it would unseal the vault again"
    admin(bao).sys.seal()


@pytest.fixture
def restored_afterwards(bao: BaoServer) -> Iterator[None]:
    """For a test that seals, steps down or restarts the module's server: restarted (it unseals itself)
    after it, unless it is left active already (a restart the test made itself is as good)."""
    yield
    if not bao.is_active():
        bao.restart()
        bao.wait_until_active()


@pytest.fixture
def path(request: pytest.FixtureRequest) -> str:
    return str(request.node.name)


@pytest.fixture
def provider() -> OpenBaoKvProvider:
    return as_engine_loads(OpenBaoKvProvider())


def kv(bao: BaoServer, path: str, **data: str) -> dict[str, Any]:
    return {
        "address": bao.address,
        "username": WRITER_USER,
        "password": bao.writer_password,
        "mount": "secret",
        "path": path,
        "data": data,
        "provider_version": PROVIDER_VERSION,
    }


def versions(bao: BaoServer, path: str) -> int:
    metadata = admin(bao).secrets.kv.v2.read_secret_metadata(path=path, mount_point="secret")
    return len(metadata["data"]["versions"])


def stored(bao: BaoServer, path: str, mount: str = "secret") -> dict[str, str]:
    response = admin(bao).secrets.kv.v2.read_secret_version(path=path, mount_point=mount, raise_on_deleted_version=False)
    return dict(response["data"]["data"])


def test_create_writes_the_secret(bao: BaoServer, path: str, provider: OpenBaoKvProvider) -> None:
    result = provider.create(kv(bao, path, password="s3cret"))
    assert stored(bao, path) == {"password": "s3cret"}
    assert result.id == f"secret/{path}"


def test_writing_the_same_data_again_adds_no_version(bao: BaoServer, path: str, provider: OpenBaoKvProvider) -> None:
    outs = outputs_of(provider.create(kv(bao, path, password="s3cret")))
    provider.update(f"secret/{path}", outs, kv(bao, path, password="s3cret"))
    provider.create(kv(bao, path, password="s3cret"))  # a lost state: create finds it written
    assert versions(bao, path) == 1


def test_a_changed_value_updates_in_place(bao: BaoServer, path: str, provider: OpenBaoKvProvider) -> None:
    outs = outputs_of(provider.create(kv(bao, path, password="one")))
    diff = provider.diff(f"secret/{path}", outs, kv(bao, path, password="two"))
    assert (diff.changes, diff.replaces) == (True, [])
    provider.update(f"secret/{path}", outs, kv(bao, path, password="two"))
    assert stored(bao, path) == {"password": "two"}


def test_a_new_path_replaces(bao: BaoServer, path: str, provider: OpenBaoKvProvider) -> None:
    outs = outputs_of(provider.create(kv(bao, path, password="one")))
    assert provider.diff(f"secret/{path}", outs, {**outs, "path": "valkey"}).replaces == ["path"]


def test_unchanged_inputs_show_no_diff(bao: BaoServer, path: str, provider: OpenBaoKvProvider) -> None:
    outs = outputs_of(provider.create(kv(bao, path, password="one")))
    assert provider.diff(f"secret/{path}", outs, kv(bao, path, password="one")).changes is False


def test_refresh_reports_a_value_changed_behind_pulumi(bao: BaoServer, path: str, provider: OpenBaoKvProvider) -> None:
    outs = outputs_of(provider.create(kv(bao, path, password="one")))
    admin(bao).secrets.kv.v2.create_or_update_secret(path=path, secret={"password": "edited"})
    result = provider.read(f"secret/{path}", outs)
    assert result.outs is not None
    assert result.outs["data"] == {"password": "edited"}


def test_refresh_drops_a_secret_deleted_behind_pulumi(bao: BaoServer, path: str, provider: OpenBaoKvProvider) -> None:
    outs = outputs_of(provider.create(kv(bao, path, password="one")))
    admin(bao).secrets.kv.v2.delete_metadata_and_all_versions(path=path, mount_point="secret")
    assert provider.read(f"secret/{path}", outs).id is None


def test_the_read_before_a_write_waits_out_a_kv_v2_upgrade(bao: BaoServer, path: str, provider: OpenBaoKvProvider) -> None:
    """A new KV v2 mount answers "upgrading" for a few milliseconds, too short to hit every time; a
    v1 mount holding data, tuned to v2, answers the same for as long as it copies the data."""
    client = admin(bao)
    client.sys.enable_secrets_engine("kv", path=path, options={"version": "1"})
    for number in range(50):
        client.secrets.kv.v1.create_or_update_secret(path=f"old-{number}", secret={"n": str(number)}, mount_point=path)
    client.sys.tune_mount_configuration(path=path, options={"version": "2"})
    # The writer's policy stops at secret/: on this mount the provider writes as admin.
    provider.create({**kv(bao, "new", password="s3cret"), "mount": path, "username": ADMIN_USER, "password": bao.admin_password})
    assert stored(bao, "new", mount=path) == {"password": "s3cret"}


@pytest.mark.usefixtures("restored_afterwards", "clock")
def test_refresh_of_a_sealed_server_keeps_the_recorded_secret(
    bao: BaoServer, path: str, provider: OpenBaoKvProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    outs = outputs_of(provider.create(kv(bao, path, password="one")))
    seal_by_hand(bao)  # sealed by hand it stays sealed: it unseals itself only when it starts
    monkeypatch.setattr(openbao_kv, "WAIT_SECONDS", 1.0)
    result = provider.read(f"secret/{path}", outs)
    assert (result.id, result.outs) == (f"secret/{path}", outs)


@pytest.mark.usefixtures("restored_afterwards", "clock")
def test_a_write_to_a_server_sealed_by_hand_says_only_a_start_unseals_it(
    bao: BaoServer, path: str, provider: OpenBaoKvProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not that `up` unseals it: a vault sealed by hand stays sealed until its pod starts again."""
    seal_by_hand(bao)
    monkeypatch.setattr(openbao_kv, "WAIT_SECONDS", 1.0)
    with pytest.raises(openbao_kv.OpenBaoUnavailable) as failed:
        provider.create(kv(bao, path, password="one"))
    assert "within 1s (sealed); OpenBao unseals itself only when it starts: restart its pod; then run" in str(failed.value)


@pytest.mark.usefixtures("clock")  # the wait on a clock the test drives
def test_refresh_of_an_unreachable_server_keeps_the_recorded_secret(
    bao: BaoServer, path: str, provider: OpenBaoKvProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded = {**kv(bao, path, password="one"), "address": "http://127.0.0.1:9"}  # nothing listens on port 9
    monkeypatch.setattr(openbao_kv, "WAIT_SECONDS", 0.5)
    result = provider.read(f"secret/{path}", recorded)
    assert (result.id, result.outs) == (f"secret/{path}", recorded)


@pytest.mark.usefixtures("restored_afterwards")
def test_refresh_right_after_a_restart_waits_for_the_server_to_unseal_itself(
    bao: BaoServer, path: str, provider: OpenBaoKvProvider
) -> None:
    outs = outputs_of(provider.create(kv(bao, path, password="one")))
    admin(bao).secrets.kv.v2.create_or_update_secret(path=path, secret={"password": "edited"})
    bao.restart()  # back as soon as it answers: sealed, or not active yet
    assert outputs_of(provider.read(f"secret/{path}", outs))["data"] == {"password": "edited"}


@pytest.mark.usefixtures("restored_afterwards")
def test_refresh_of_a_node_not_active_yet_waits_for_it(
    bao: BaoServer, path: str, provider: OpenBaoKvProvider, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step-down leaves the only node without an active one: "local node not active". OpenBao's own
    end of it is a fixed 10 s (`manualStepDownSleepPeriod`, vault/core.go): the test ends it at the
    provider's first pause instead, as a pod restart does (it unseals itself and becomes active)."""
    outs = outputs_of(provider.create(kv(bao, path, password="one")))
    admin(bao).sys.step_down()
    bao.wait_until_standby()
    seen: list[str | None] = []
    not_yet = openbao_kv._not_yet

    def recorded(error: Exception) -> str | None:
        seen.append(not_yet(error))
        return seen[-1]

    def pod_restarted() -> None:
        bao.restart()
        bao.wait_until_active()

    monkeypatch.setattr(openbao_kv, "_not_yet", recorded)
    clock.at(0.0, pod_restarted)
    assert outputs_of(provider.read(f"secret/{path}", outs))["data"] == {"password": "one"}
    assert (seen, len(clock.pauses)) == (["not active"], 1)


def writer_tokens(bao: BaoServer) -> int:
    """How many live tokens carry the writer's policy."""
    client = admin(bao)
    accessors = client.auth.token.list_accessors()["data"]["keys"]
    policies = [client.auth.token.lookup_accessor(accessor)["data"]["policies"] for accessor in accessors]
    return sum("blueprint-writer" in token_policies for token_policies in policies)


def test_each_call_revokes_the_token_it_logged_in_with(bao: BaoServer, path: str, provider: OpenBaoKvProvider) -> None:
    before = writer_tokens(bao)
    outs = outputs_of(provider.create(kv(bao, path, password="one")))
    provider.read(f"secret/{path}", outs)
    assert writer_tokens(bao) == before


def test_openbao_is_called_without_the_environments_proxy_or_token(
    bao: BaoServer, path: str, provider: OpenBaoKvProvider, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """OpenBao is on this laptop: a proxy set for the world would see the password, and a token from
    VAULT_TOKEN or ~/.vault-token (an admin's, after `bao login`) would ride along with every request."""
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("VAULT_TOKEN", "s.a-token-of-someone-else")
    monkeypatch.setenv("HOME", str(tmp_path))
    provider.create(kv(bao, path, password="value"))
    assert openbao_kv._client({"address": bao.address}).token == ""
    monkeypatch.undo()  # the test's own admin client reads through the environment
    assert stored(bao, path) == {"password": "value"}


@pytest.mark.usefixtures("clock")  # the wait on a clock the test drives
def test_a_failed_write_names_a_command_that_resumes_every_stack_that_writes(
    bao: BaoServer, path: str, provider: OpenBaoKvProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """phase2 and phase3 (and dev) write here: not `--phase 2` alone, which would not resume phase3's writes."""
    monkeypatch.setattr(openbao_kv, "WAIT_SECONDS", 0.5)
    with pytest.raises(openbao_kv.OpenBaoUnavailable) as failed:
        provider.create({**kv(bao, path, password="one"), "address": "http://127.0.0.1:9"})  # nothing listens on port 9
    assert "--phase" not in str(failed.value)
    assert str(failed.value).endswith(
        '(unreachable); then run `uv run blueprint up` (for the dev stack: `eval "$(uv run blueprint env)" && pulumi up -s dev`) again'
    )


def deploy_token_path(path: str) -> str:
    """A path where phase3 keeps a deploy token: the writer's policy lets it delete there."""
    return f"gitlab/deploy-tokens/{path}"


def test_a_destroy_deletes_an_entry_marked_delete_on_destroy_with_every_version(
    bao: BaoServer, path: str, provider: OpenBaoKvProvider
) -> None:
    """phase3 under preserveData=false: its destroy revokes the token, so no entry may still serve it."""
    token_path = deploy_token_path(path)
    outs = outputs_of(provider.create({**kv(bao, token_path, token="one"), "delete_on_destroy": True}))
    provider.update(f"secret/{token_path}", outs, {**kv(bao, token_path, token="two"), "delete_on_destroy": True})
    assert versions(bao, token_path) == 2
    provider.delete(f"secret/{token_path}", outputs_of(provider.read(f"secret/{token_path}", outs)))
    with pytest.raises(hvac.exceptions.InvalidPath):
        admin(bao).secrets.kv.v2.read_secret_metadata(path=token_path, mount_point="secret")


@pytest.mark.parametrize("recorded", [{}, {"delete_on_destroy": False}], ids=["recorded-without-it", "false"])
def test_a_destroy_keeps_an_entry_not_marked_delete_on_destroy(
    bao: BaoServer, path: str, provider: OpenBaoKvProvider, recorded: dict[str, Any]
) -> None:
    """phase2's entries, and phase3's under preserveData=true: they stay with OpenBao's storage."""
    token_path = deploy_token_path(path)
    outs = outputs_of(provider.create({**kv(bao, token_path, token="one"), **recorded}))
    provider.delete(f"secret/{token_path}", outs)
    assert stored(bao, token_path) == {"token": "one"}


def test_delete_on_destroy_left_out_is_false_and_changing_it_is_an_update(bao: BaoServer, path: str, provider: OpenBaoKvProvider) -> None:
    """phase2 leaves the input out: that is false, so it coming as false shows no change."""
    outs = outputs_of(provider.create(kv(bao, path, password="one")))
    assert "delete_on_destroy" not in outs
    assert provider.diff(f"secret/{path}", outs, {**kv(bao, path, password="one"), "delete_on_destroy": False}).changes is False
    diff = provider.diff(f"secret/{path}", outs, {**kv(bao, path, password="one"), "delete_on_destroy": True})
    assert (diff.changes, diff.replaces) == (True, [])
    updated = outputs_of(provider.update(f"secret/{path}", outs, {**kv(bao, path, password="one"), "delete_on_destroy": True}))
    assert updated["delete_on_destroy"] is True
    assert versions(bao, path) == 1


def warnings_of(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    warned: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: warned.append(message))
    return warned


@pytest.mark.usefixtures("clock")  # the wait on a clock the test drives
def test_a_destroy_that_cannot_reach_openbao_goes_on_and_warns_naming_the_entry_left(
    bao: BaoServer, path: str, provider: OpenBaoKvProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cluster gone, or OpenBao down: bounded, no failure, the stale entry named with its removal."""
    token_path = deploy_token_path(path)
    recorded = {**kv(bao, token_path, token="one"), "delete_on_destroy": True, "address": "http://127.0.0.1:9"}
    monkeypatch.setattr(openbao_kv, "DELETE_WAIT_SECONDS", 0.5)
    warned = warnings_of(monkeypatch)
    provider.delete(f"secret/{token_path}", recorded)
    assert warned == [
        f"the OpenBao entry secret/{token_path} was not deleted (unreachable for 0s): what it holds was revoked with this "
        "stack. If that OpenBao runs on, remove the entry as its admin: `export BAO_ADDR=http://127.0.0.1:9`, log in "
        f"(`uv run bao login -method=userpass username=admin`), then `uv run bao kv metadata delete -mount=secret {token_path}`"
    ]


def test_a_delete_openbao_refuses_goes_on_and_warns_without_the_password(
    bao: BaoServer, path: str, provider: OpenBaoKvProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer may delete phase3's deploy tokens alone: elsewhere OpenBao answers 403, which is said, not raised."""
    outs = outputs_of(provider.create({**kv(bao, path, password="one"), "delete_on_destroy": True}))
    warned = warnings_of(monkeypatch)
    provider.delete(f"secret/{path}", outs)
    [warning] = warned
    assert f"the OpenBao entry secret/{path} was not deleted (Forbidden: 1 error occurred: * permission denied" in warning
    assert bao.writer_password not in warning
    assert stored(bao, path) == {"password": "one"}


@pytest.mark.usefixtures("clock")  # the wait on a clock the test drives
def test_a_login_answered_without_a_token_is_not_blueprints_openbao(provider: OpenBaoKvProvider, path: str) -> None:
    """A JSON answer with no `auth` (another server on the port): waited out as not answering, then one message, no KeyError."""

    class NoToken(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = json.dumps({"status": "ok"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NoToken)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    props = {"address": f"http://127.0.0.1:{server.server_port}", "username": WRITER_USER, "password": "x", "mount": "secret", "path": path}
    try:
        with pytest.raises(openbao_kv.OpenBaoUnavailable, match="could not answer for secret"):
            openbao_kv.current(props, wait_seconds=0.5)
    finally:
        server.shutdown()
        server.server_close()


def test_a_revoke_openbao_refuses_fails_the_call_naming_the_token_left_valid(
    bao: BaoServer, path: str, provider: OpenBaoKvProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Noticed, not suppressed: the writer's token would stay valid up to its token_max_ttl unknown to anyone."""

    def refused(_self: Any, **_kwargs: Any) -> Any:
        raise hvac.exceptions.InternalServerError("1 error occurred:\n\t* internal error\n\n")

    monkeypatch.setattr(hvac.api.auth_methods.Token, "revoke_self", refused)
    with pytest.raises(openbao_kv.RevokeFailed, match=r"did not revoke the token of user blueprint .* stays valid .*internal error"):
        provider.create(kv(bao, path, password="one"))
