"""phase3's pre-flight (stacks/preflight.py) against a real OpenBao and the GitLab stub over HTTPS.

The CA is ours (providers/ca_certificate.py, name-constrained to `localhost` here), the only trust
the checks use; GitLab's API is the stub (tests/providers/gitlab_stub.py), the registry a small
HTTPS server answering `/v2/` as GitLab's does. Each test breaks one thing and looks for the
sentence that names it.
"""

from __future__ import annotations

import contextlib
import datetime
import http.server
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pulumi
import pytest

from components.runner import runner_description
from providers.ca_certificate import issue_ca_certificate
from stacks import outputs, preflight
from stacks.phase3 import preflight_applies
from tests.providers.bao_tls import SERVER_NAME
from tests.providers.clock import FakeClock, install
from tests.providers.engine import BaoServer, free_port, running_bao
from tests.providers.gitlab_stub import TOKEN, GitLabState, gitlab_stub

OWNER = "blueprint/phase2"
FAST = preflight.Waits(attempts=2, pause=0.01, runner_wait=0.5, runner_poll=0.05)
HOSTS_LINE = "127.0.0.1 gitlab.local.example.net registry.local.example.net"


@pytest.fixture(autouse=True)
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """Every wait and retry of the checks on a clock the test drives (providers/poll.py)."""
    return install(monkeypatch)


@dataclass(frozen=True)
class Tls:
    ca_file: Path
    server: ssl.SSLContext


def _key() -> Any:
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def _pem(key: Any) -> str:
    from cryptography.hazmat.primitives import serialization

    text: str = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    return text


def _tls(folder: Path) -> Tls:
    """Our kind of CA for `localhost`, and a server context with a certificate it signed for `localhost`."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    folder.mkdir(parents=True)
    ca_key, server_key = _key(), _key()
    ca_pem = issue_ca_certificate(_pem(ca_key), common_name="test CA", organization="blueprint", domain="localhost", validity_hours=1)
    ca = x509.load_pem_x509_certificate(ca_pem.encode())
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca.subject)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    (folder / "ca.crt").write_text(ca_pem)
    (folder / "server.crt").write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    (folder / "server.key").write_text(_pem(server_key))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(folder / "server.crt", folder / "server.key")
    return Tls(folder / "ca.crt", server)


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Tls:
    return _tls(tmp_path_factory.mktemp("tls") / "ours")


@pytest.fixture(scope="module")
def bao(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BaoServer]:
    """OpenBao as phase2 leaves it: initialised, unsealed by its own key."""
    with running_bao(tmp_path_factory.mktemp("preflight") / "bao") as server:
        server.wait_until_active()
        yield server


@dataclass
class RegistryAnswer:
    """What the registry stand-in answers to `GET /v2/`: GitLab's registry asks for a token."""

    status: int = 401
    headers: dict[str, str] | None = None

    def __post_init__(self) -> None:
        if self.headers is None:
            self.headers = {"WWW-Authenticate": 'Bearer realm="https://gitlab.local.example.net/jwt/auth",service="container_registry"'}


@contextlib.contextmanager
def registry_stub(answer: RegistryAnswer, tls: ssl.SSLContext) -> Iterator[str]:
    class Registry(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            self.send_response(answer.status if self.path == "/v2/" else 404)
            for key, value in (answer.headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_: Any) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Registry)
    server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield f"https://localhost:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class World:
    """Everything phase3 reaches, each one healthy until a test breaks it."""

    state: GitLabState
    registry: RegistryAnswer
    platform: preflight.Platform
    default_runner: dict[str, Any]
    image_build_runner: dict[str, Any]

    def problems(self, waits: preflight.Waits = FAST, token: str | None = TOKEN) -> list[str]:
        return preflight.problems(self.platform, token, waits=waits, token_problem="no token")


def online(runner: dict[str, Any]) -> None:
    runner.update(status="online", online=True)


@pytest.fixture
def world(tls: Tls, bao: BaoServer, tmp_path: Path) -> Iterator[World]:
    state, registry = GitLabState(), RegistryAnswer()
    group = state.add_group("blueprint-apps", owner=OWNER)
    runners = [state.add_runner(runner_description(OWNER, image_builds=builds), [], group=group) for builds in (False, True)]
    state.add_runner("someone else's runner", [], group=group)
    for runner in runners:
        online(runner)
    token_file = tmp_path / "gitlab-admin-token"
    token_file.write_text(TOKEN.removeprefix(outputs.ADMIN_TOKEN_PREFIX))
    with gitlab_stub(state, tls=tls.server) as gitlab_url, registry_stub(registry, tls.server) as registry_url:
        platform = preflight.Platform(
            openbao_addr=bao.address,
            openbao_server_name=SERVER_NAME,
            gitlab_url=gitlab_url,
            registry_url=registry_url,
            ca_file=str(tls.ca_file),
            token_file=str(token_file),
            runner_id=str(runners[0]["id"]),
            group_id=str(group["id"]),
            runner_owner=OWNER,
            hosts_line=HOSTS_LINE,
        )
        yield World(state, registry, platform, *runners)


def test_all_green_finds_no_problem(world: World) -> None:
    assert world.problems() == []
    assert "GET /metadata" in world.state.calls  # GitLab's API was asked, with the admin token


def test_openbao_that_does_not_answer_is_named(world: World) -> None:
    port = free_port()
    world.platform = replace(world.platform, openbao_addr=f"http://127.0.0.1:{port}")
    [problem] = world.problems()
    assert problem == (
        f"OpenBao at http://127.0.0.1:{port} does not answer: nothing answers at 127.0.0.1:{port}: is the kind cluster running? "
        "(`docker ps`); look at its pod: `kubectl -n openbao get pods`"
    )


def test_uninitialised_openbao_is_named(world: World, tmp_path: Path) -> None:
    # A server without blueprint's self-initialisation: answers `sys/health` with 501, initialized false.
    blank = BaoServer(tmp_path / "blank", persistent=False, tail="")
    blank.start()
    try:
        world.platform = replace(world.platform, openbao_addr=blank.address)
        [problem] = world.problems()
    finally:
        blank.stop()
    assert problem == f"OpenBao at {blank.address} is not initialised: {preflight.PHASE2_UP} initialises it"


def test_gitlab_name_that_does_not_resolve_names_the_hosts_line(world: World) -> None:
    world.platform = replace(world.platform, gitlab_url="https://gitlab.blueprint.invalid")
    [problem] = world.problems()
    assert problem == (
        "GitLab's API at https://gitlab.blueprint.invalid does not answer: gitlab.blueprint.invalid does not resolve on this "
        f"machine: add this line to /etc/hosts (C:\\Windows\\System32\\drivers\\etc\\hosts on Windows): {HOSTS_LINE}"
    )


def test_gitlab_certificate_our_ca_does_not_sign_names_the_ca_file(world: World, tmp_path: Path) -> None:
    another = _tls(tmp_path / "another")
    world.platform = replace(world.platform, ca_file=str(another.ca_file))
    found = world.problems()
    assert len(found) == 2  # GitLab's API and the registry: both behind the same gateway certificate
    assert all(f"'s certificate does not verify against our CA {another.ca_file}" in problem for problem in found)
    assert all(f"caCertPem > {another.ca_file}" in problem for problem in found)


def test_missing_ca_file_names_the_command_that_writes_it(world: World, tmp_path: Path) -> None:
    world.platform = replace(world.platform, ca_file=str(tmp_path / "gone.crt"))
    found = world.problems()
    assert len(found) == 3  # OpenBao, GitLab and the registry: each is checked against it
    assert all(
        f"the CA certificate {tmp_path / 'gone.crt'} that the platform's certificates are checked against is missing" in p for p in found
    )


def test_gitlab_that_refuses_the_admin_token_is_named(world: World) -> None:
    [problem] = world.problems(token="glpat-not-the-token")
    assert (
        problem == f"GitLab's API at {world.platform.gitlab_url} refuses the admin token (HTTP 401): {preflight.PHASE2_UP} makes it again"
    )
    assert "not-the-token" not in problem


def test_gitlab_behind_a_gateway_error_is_named_after_the_retries(world: World) -> None:
    world.state.failures_for["GET /metadata"] = [503] * FAST.attempts
    [problem] = world.problems()
    assert problem.startswith(f"GitLab's API at {world.platform.gitlab_url}: the gateway answers HTTP 503, GitLab does not")
    assert world.state.calls.count("GET /metadata") == FAST.attempts


def test_gitlab_restarting_for_less_than_the_retries_is_no_problem(world: World) -> None:
    world.state.failures_for["GET /metadata"] = [502] * (FAST.attempts - 1)
    assert world.problems() == []


def test_registry_that_does_not_answer_is_named(world: World) -> None:
    world.registry.status = 503
    [problem] = world.problems()
    assert problem.startswith(f"the registry at {world.platform.registry_url}: the gateway answers HTTP 503, the registry does not")


def test_registry_401_without_a_challenge_is_not_the_registry(world: World) -> None:
    world.registry.headers = {}
    [problem] = world.problems()
    assert problem.startswith(f"the registry at {world.platform.registry_url}: the gateway answers HTTP 401")


def test_offline_runner_is_named_with_its_kubectl_command(world: World, clock: FakeClock) -> None:
    world.default_runner.update(status="never_contacted", online=False)
    [problem] = world.problems()
    assert problem == (
        f"the default runner (runner {world.default_runner['id']}) is never_contacted after {FAST.runner_wait:g}s: its manager does "
        "not ask GitLab for jobs; look at it: `kubectl -n gitlab-runner get pods` and `kubectl -n gitlab-runner logs deploy/gitlab-runner`"
    )
    assert clock.waited == pytest.approx(FAST.runner_wait)  # waited for, as long as the budget says


def test_offline_image_build_runner_is_named_with_its_namespace(world: World) -> None:
    world.image_build_runner.update(status="offline", online=False)
    [problem] = world.problems()
    assert problem.startswith(f"the image-build runner (runner {world.image_build_runner['id']}) is offline")
    assert "kubectl -n gitlab-runner-image-build get pods" in problem


def test_runner_that_comes_online_within_the_wait_is_no_problem(world: World) -> None:
    world.default_runner.update(status="never_contacted", online=False)
    asked: list[str] = []

    def meanwhile(method: str, path: str, _query: dict[str, str]) -> None:
        asked.append(path)
        if asked.count(f"/runners/{world.default_runner['id']}") == 3:  # its manager asks for jobs at last
            online(world.default_runner)

    world.state.meanwhile = meanwhile
    assert world.problems() == []


def test_paused_runner_is_named_without_waiting(world: World) -> None:
    world.default_runner.update(status="paused", active=False)
    [problem] = world.problems(waits=replace(FAST, runner_wait=60.0))
    assert (
        problem == f"the default runner (runner {world.default_runner['id']}) is paused in GitLab: resume it (Admin area > CI/CD > Runners)"
    )


def test_missing_image_build_runner_is_named(world: World) -> None:
    del world.state.runners[world.image_build_runner["id"]]
    [problem] = world.problems()
    assert problem == f"the image-build runner is not in GitLab: {preflight.REFRESH_PHASE2}, then {preflight.PHASE2_UP} registers it"


def test_runner_gone_from_gitlab_is_named(world: World) -> None:
    del world.state.runners[world.default_runner["id"]]
    [problem] = world.problems()
    assert problem == (
        f"the default runner (runner {world.default_runner['id']}) is gone from GitLab: "
        f'`pulumi refresh -s phase2` drops it from phase2\'s state (in a shell that ran `eval "$(uv run blueprint env)"`), '
        f"then {preflight.PHASE2_UP} registers it again"
    )


def test_runners_are_not_checked_when_gitlab_does_not_answer(world: World) -> None:
    world.platform = replace(world.platform, gitlab_url="https://gitlab.blueprint.invalid")
    world.default_runner.update(status="offline", online=False)
    [problem] = world.problems()
    assert problem.startswith("GitLab's API at https://gitlab.blueprint.invalid does not answer")


def test_every_problem_is_named_at_once(world: World) -> None:
    world.platform = replace(world.platform, openbao_addr=f"http://127.0.0.1:{free_port()}")
    world.registry.status = 502
    world.image_build_runner.update(status="stale", online=False)
    found = world.problems()
    assert [problem.split(" ", 2)[:2] for problem in found] == [["OpenBao", "at"], ["the", "registry"], ["the", "image-build"]]


def phase2_outputs(world: World) -> dict[str, Any]:
    platform = world.platform
    return {
        outputs.OPENBAO_ADDR: platform.openbao_addr,
        outputs.OPENBAO_SERVER_NAME: platform.openbao_server_name,
        outputs.GITLAB_URL: "https://gitlab.local.example.net",
        outputs.REGISTRY_HOST: "registry.local.example.net",
        outputs.CA_CERT_FILE: platform.ca_file,
        outputs.ADMIN_TOKEN_FILE: platform.token_file,
        outputs.RUNNER_ID: platform.runner_id,
        outputs.APPS_GROUP_ID: float(platform.group_id),  # a number may arrive as a float
        outputs.APPS_GROUP_OWNER: OWNER,
    }


def test_platform_is_read_from_phase2s_outputs(world: World) -> None:
    platform = preflight.from_outputs(phase2_outputs(world))
    assert (platform.gitlab_url, platform.registry_url) == ("https://gitlab.local.example.net", "https://registry.local.example.net")
    assert platform.hosts_line.startswith("127.0.0.1 gitlab.local.example.net registry.local.example.net kas.local.example.net ")
    assert "guestbook.local.example.net" in platform.hosts_line.split()
    assert (platform.group_id, platform.token_file) == (world.platform.group_id, world.platform.token_file)


def test_up_stops_with_one_line_naming_the_problem(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preflight, "Waits", lambda: FAST)
    monkeypatch.setattr(preflight, "from_outputs", lambda _inputs: world.platform)
    world.registry.status = 503
    with pytest.raises(pulumi.RunError) as raised:
        preflight.run({}, preview=False)
    said = str(raised.value)
    assert said.startswith("phase3's pre-flight found 1 problem before touching GitLab (nothing was created or changed): (1) the registry")
    assert "\n" not in said
    assert TOKEN not in said


def test_preview_warns_instead_of_stopping(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    warned: list[str] = []
    monkeypatch.setattr(preflight, "from_outputs", lambda _inputs: world.platform)
    monkeypatch.setattr(pulumi.log, "warn", warned.append)
    world.default_runner.update(status="never_contacted", online=False)
    preflight.run({}, preview=True)  # no RunError, and no wait for the runner
    [warning] = warned
    assert "found 1 problem before touching GitLab (`up` stops here unless they are fixed by then): (1) the default runner" in warning
    assert " after " not in warning  # a preview waits for nothing


def test_unreadable_admin_token_is_named(world: World, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(preflight, "Waits", lambda: FAST)
    monkeypatch.setattr(preflight, "from_outputs", lambda _inputs: replace(world.platform, token_file=str(tmp_path / "none")))
    with pytest.raises(pulumi.RunError) as raised:
        preflight.run({}, preview=False)
    assert f"GitLab's API at {world.platform.gitlab_url} was not checked: phase2 is not up" in str(raised.value)


def test_preflight_runs_in_the_phase3_stack_only() -> None:
    assert preflight_applies({outputs.ADMIN_TOKEN_FILE: "/data/secrets/gitlab-admin-token"})
    assert not preflight_applies({outputs.SEEDED_ADMIN_TOKEN: "seeded"})  # dev: GitLab comes up in the same run
