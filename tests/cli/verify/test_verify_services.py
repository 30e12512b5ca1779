"""`blueprint verify`'s checks of what answers from the laptop, each seen passing and failing with
its fix: TLS against a local server whose certificates the project's own CA code made
(tests/providers/bao_tls.py), the system store, SSH's banner, OpenBao as a real `bao` server, and
GitLab, its Runners and pipelines as the GitLab stub."""

from __future__ import annotations

import contextlib
import re
import shlex
import socket
import socketserver
import ssl
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cli.verify import gitlab as gitlab_checks
from cli.verify import services
from cli.verify.model import FAIL, PASS, SKIP, WARN
from cli.verify.services import Answer
from stacks import outputs
from tests.cli.verify.platforms import EXISTING, GITLAB_FORWARD, PHASE1, Answers, brought, platform_on
from tests.providers.bao_tls import Pki, issue

GITLAB, REGISTRY, KAS = "gitlab.blueprint.test", "registry.blueprint.test", "kas.blueprint.test"


class Served:
    """A TLS listener on loopback that presents, for each name asked (SNI), the certificate `by_name` holds."""

    def __init__(self) -> None:
        self.by_name: dict[str, ssl.SSLContext] = {}
        served = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                context.sni_callback = lambda conn, name, _: (
                    setattr(conn, "context", served.by_name[str(name)]) if name in served.by_name else None
                )
                with contextlib.suppress(OSError), context.wrap_socket(self.request, server_side=True) as tls:
                    tls.recv(1)

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def serve(self, name: str, pki: Pki) -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(pki.cert_file, pki.key_file)
        self.by_name[name] = context

    def dial(self, host: str, port: int) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.server.server_address[1]), timeout=10)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """The platform CA (name-constrained to blueprint.test, by providers/ca_certificate.py) and GitLab's leaf."""
    return issue(tmp_path_factory.mktemp("ca"), name=GITLAB)


@pytest.fixture(scope="module")
def served(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    server = Served()
    server.serve(GITLAB, pki)
    server.serve(REGISTRY, issue(tmp_path_factory.mktemp("registry"), name=REGISTRY, by=pki))
    server.serve(KAS, issue(tmp_path_factory.mktemp("kas"), name=KAS, by=pki))
    yield server
    server.server.shutdown()
    server.server.server_close()


def _phase2(pki: Pki, **more: Any) -> dict[str, Any]:
    return {outputs.CA_CERT_FILE: str(pki.ca_file), outputs.GITLAB_URL: f"https://{GITLAB}", outputs.REGISTRY_HOST: REGISTRY, **more}


def test_tls_passes_when_every_host_chains_to_the_platform_ca(pki: Pki, served: Served) -> None:
    verdict = services.tls_check(platform_on(stacks={"phase2": _phase2(pki)}, dial=served.dial))
    assert verdict.status == PASS
    assert "3 hosts" in verdict.saw


@contextlib.contextmanager
def _serving(by_name: dict[str, Pki]) -> Iterator[Served]:
    """A listener of its own, serving `by_name` alone (the module's keeps its certificates for the other tests)."""
    server = Served()
    for name, pki in by_name.items():
        server.serve(name, pki)
    try:
        yield server
    finally:
        server.server.shutdown()
        server.server.server_close()


def test_tls_fails_when_the_gateway_does_not_serve_kas(pki: Pki, tmp_path: Path) -> None:
    with _serving({GITLAB: pki, REGISTRY: issue(tmp_path, name=REGISTRY, by=pki)}) as server:
        verdict = services.tls_check(platform_on(stacks={"phase2": _phase2(pki)}, dial=server.dial))
    assert verdict.status == FAIL
    assert verdict.saw.startswith(f"{KAS}: no TLS answer")


def test_a_certificate_expiring_within_a_month_warns_with_the_up_that_renews_it(pki: Pki, tmp_path: Path) -> None:
    soon = issue(tmp_path / "kas", name=KAS, by=pki, days=10.5)
    with _serving({GITLAB: pki, REGISTRY: issue(tmp_path / "registry", name=REGISTRY, by=pki), KAS: soon}) as server:
        verdict = services.tls_check(platform_on(stacks={"phase2": _phase2(pki)}, dial=server.dial))
    assert verdict.status == WARN
    assert verdict.saw.startswith(f"{KAS}: expires ")
    assert verdict.saw.endswith("(10 days)")
    assert verdict.fix == "`uv run blueprint up --phase 2` issues new ones: it renews a certificate in its last 30 days"


def test_a_brought_certificate_close_to_expiry_warns_that_blueprint_never_renews_it(pki: Pki, tmp_path: Path) -> None:
    issuer = issue(tmp_path / "theirs", name=GITLAB, days=5.5)
    by_name = {GITLAB: issuer, **{name: issue(tmp_path / name, name=name, by=issuer, days=5.5) for name in (REGISTRY, KAS)}}
    with _serving(by_name) as server:
        verdict = services.tls_check(platform_on(stacks={"phase2": brought(_phase2(pki), str(issuer.ca_file))}, dial=server.dial))
    assert verdict.status == WARN
    assert verdict.saw.count("(5 days)") == 3
    assert "blueprint never renews it" in verdict.fix


def test_tls_fails_on_a_host_whose_certificate_another_ca_made(pki: Pki, served: Served, tmp_path: Path) -> None:
    served.serve("app.blueprint.test", issue(tmp_path, name="app.blueprint.test"))
    phase3 = {outputs.APP_URLS: {"app": "https://app.blueprint.test"}}
    verdict = services.tls_check(platform_on(stacks={"phase2": _phase2(pki), "phase3": phase3}, dial=served.dial))
    assert verdict.status == FAIL
    assert "app.blueprint.test: certificate refused" in verdict.saw
    assert verdict.fix


@pytest.mark.parametrize(("theirs_too", "where"), [(False, ["--namespace", "gitlab"]), (True, ["--all-namespaces"])])
def test_tls_failures_fix_lists_the_tls_secrets_with_types_the_cluster_has(
    pki: Pki, served: Served, tmp_path: Path, theirs_too: bool, where: list[str]
) -> None:
    """No cert-manager runs (components/gitlab.py: `installCertmanager` off), so a `certificates` type would
    make kubectl refuse the whole command: it lists the Secrets of type kubernetes.io/tls, the gateway's
    namespace's, or with `blueprint:tlsCertificate` every namespace's (the user's Secret is in one of theirs)."""
    served.serve("app.blueprint.test", issue(tmp_path, name="app.blueprint.test"))
    phase2 = brought(_phase2(pki), str(pki.ca_file)) if theirs_too else _phase2(pki)
    phase3 = {outputs.APP_URLS: {"app": "https://app.blueprint.test"}}
    verdict = services.tls_check(platform_on(stacks={"phase1": PHASE1, "phase2": phase2, "phase3": phase3}, dial=served.dial))
    [command] = [shlex.split(quoted) for quoted in re.findall(r"`(kubectl [^`]*)`", verdict.fix)]
    asked = command[command.index("--context") + 2 :]
    assert verdict.status == FAIL
    assert [word for word in asked if word not in where] == ["get", "secrets", "--field-selector", "type=kubernetes.io/tls"]
    assert " ".join(where) in " ".join(asked)


def test_tls_fails_on_a_name_outside_the_cas_name_constraints(pki: Pki, served: Served, tmp_path: Path) -> None:
    served.serve("app.elsewhere.test", issue(tmp_path, name="app.elsewhere.test", by=pki))
    phase3 = {outputs.APP_URLS: {"app": "https://app.elsewhere.test"}}
    verdict = services.tls_check(platform_on(stacks={"phase2": _phase2(pki), "phase3": phase3}, dial=served.dial))
    assert verdict.status == FAIL
    assert "app.elsewhere.test: certificate refused (permitted subtree violation)" in verdict.saw


def test_tls_fails_with_the_command_that_writes_a_missing_ca_file_again(tmp_path: Path) -> None:
    phase2 = {outputs.CA_CERT_FILE: str(tmp_path / "ca.crt"), outputs.GITLAB_URL: f"https://{GITLAB}", outputs.REGISTRY_HOST: REGISTRY}
    verdict = services.tls_check(platform_on(stacks={"phase2": phase2}))
    assert verdict.status == FAIL
    assert verdict.fix == "`uv run blueprint up --phase 2` writes it again"


def test_the_ca_in_the_system_store_passes_when_the_system_trusts_gitlab(pki: Pki, served: Served) -> None:
    trusting = lambda: ssl.create_default_context(cafile=str(pki.ca_file))  # noqa: E731
    verdict = services.ca_trust_check(platform_on(stacks={"phase2": _phase2(pki)}, dial=served.dial, trust=trusting))
    assert verdict.status == PASS


def test_the_ca_not_in_the_system_store_is_a_warning_with_the_command(pki: Pki, served: Served) -> None:
    verdict = services.ca_trust_check(platform_on(stacks={"phase2": _phase2(pki)}, dial=served.dial))
    assert verdict.status == WARN
    assert str(pki.ca_file) in verdict.fix


def test_on_macos_the_warning_says_the_keychain_is_out_of_its_sight(pki: Pki, served: Served) -> None:
    from tests.cli.doctor.fakes import FakeMachine

    macos = FakeMachine(system="darwin")
    verdict = services.ca_trust_check(platform_on(macos, stacks={"phase2": _phase2(pki)}, dial=served.dial))
    assert verdict.status == WARN
    assert "cannot see the macOS Keychain" in verdict.saw
    assert f"open https://{GITLAB} in Safari" in verdict.fix


@pytest.fixture(scope="module")
def theirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Pki, Served]]:
    """The user's own certificate (blueprint:tlsCertificate), of an issuer that is not the platform CA,
    served for GitLab and its registry."""
    issuer = issue(tmp_path_factory.mktemp("brought"), name=GITLAB)
    server = Served()
    server.serve(GITLAB, issuer)
    server.serve(REGISTRY, issue(tmp_path_factory.mktemp("brought-registry"), name=REGISTRY, by=issuer))
    server.serve(KAS, issue(tmp_path_factory.mktemp("brought-kas"), name=KAS, by=issuer))
    yield issuer, server
    server.server.shutdown()
    server.server.server_close()


def _forwarding(port: int, asked: list[Any]) -> Any:
    """A port-forward stand-in: records each Service port it is asked for, and reaches loopback's `port`."""

    @contextlib.contextmanager
    def forward(target: Any) -> Iterator[int]:
        asked.append(target)
        yield port

    return forward


def test_tls_passes_when_the_gateway_serves_a_brought_certificate_its_issuer_verifies(pki: Pki, theirs: tuple[Pki, Served]) -> None:
    issuer, server = theirs
    phase2 = brought(_phase2(pki), str(issuer.ca_file))
    verdict = services.tls_check(platform_on(stacks={"phase2": phase2}, dial=server.dial))
    assert verdict.status == PASS, verdict
    assert "your certificate's issuer" in verdict.saw


def test_tls_on_an_existing_cluster_goes_through_the_forward_to_the_gateways_https_port(pki: Pki, theirs: tuple[Pki, Served]) -> None:
    issuer, server = theirs
    phase2 = brought(_phase2(pki, **{outputs.GITLAB_FORWARD: GITLAB_FORWARD}), str(issuer.ca_file))
    asked: list[Any] = []
    forward = _forwarding(server.server.server_address[1], asked)
    verdict = services.tls_check(platform_on(stacks={"phase1": EXISTING, "phase2": phase2}, forward=forward))
    assert verdict.status == PASS, verdict
    assert {str(target) for target in asked} == {"service gitlab/gitlab-envoy port 443 of context prod"}


def test_the_trust_warning_with_a_brought_certificate_names_its_issuer_not_the_platform_ca(pki: Pki, theirs: tuple[Pki, Served]) -> None:
    issuer, server = theirs
    phase2 = brought(_phase2(pki), str(issuer.ca_file))
    verdict = services.ca_trust_check(platform_on(stacks={"phase2": phase2}, dial=server.dial))
    assert verdict.status == WARN
    assert "platform CA" not in verdict.saw
    assert str(issuer.ca_file) in verdict.fix
    assert str(pki.ca_file) not in verdict.fix


def test_the_gitlab_client_trusts_the_brought_certificates_issuer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import providers.gitlab_api as api

    token = tmp_path / "token"
    token.write_text("glpat-0123456789abcdef")
    phase2 = brought({outputs.CA_CERT_FILE: "/platform/ca.crt", outputs.ADMIN_TOKEN_FILE: str(token)}, "/platform/gateway-ca.crt")
    seen: dict[str, Any] = {}
    monkeypatch.setattr(api.GitLab, "of", classmethod(lambda cls, props, **_: seen.update(props)))
    gitlab_checks.client(platform_on(stacks={"phase2": phase2}))
    assert seen["ca_file"] == "/platform/gateway-ca.crt"


def test_the_apps_and_headlamp_are_asked_trusting_the_brought_certificates_issuer() -> None:
    trusted: list[str] = []

    def ask(url: str, *, ca_file: str = "", **_: Any) -> Answer:
        trusted.append(ca_file)
        return Answer(200)

    phase2 = brought({outputs.CA_CERT_FILE: "/platform/ca.crt", outputs.GITLAB_URL: f"https://{GITLAB}"}, "/platform/gateway-ca.crt")
    stacks = {
        "phase1": {**PHASE1, outputs.HEADLAMP: True},
        "phase2": phase2,
        "phase3": {outputs.APP_URLS: {"app": "https://app.blueprint.test"}},
    }
    assert gitlab_checks.apps_check(platform_on(stacks=stacks, ask=ask)).status == PASS
    assert gitlab_checks.headlamp_check(platform_on(stacks=stacks, ask=ask)).status == PASS
    assert trusted == ["/platform/gateway-ca.crt", "/platform/gateway-ca.crt"]


@pytest.fixture(scope="module")
def ssh() -> Iterator[tuple[list[bytes], int]]:
    """A TCP server on loopback that greets each connection with `banner[0]`."""
    banner = [b"SSH-2.0-GitLab-SSHD\r\n"]

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            self.request.sendall(banner[0])

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield banner, server.server_address[1]
    server.shutdown()
    server.server_close()


def _ssh_platform(pki: Pki, port: int) -> Any:
    dial = lambda host, _: socket.create_connection(("127.0.0.1", port), timeout=10)  # noqa: E731
    return platform_on(stacks={"phase1": PHASE1, "phase2": _phase2(pki)}, dial=dial)


def test_ssh_passes_on_gitlabs_banner(pki: Pki, ssh: tuple[list[bytes], int]) -> None:
    verdict = gitlab_checks.ssh_check(_ssh_platform(pki, ssh[1]))
    assert verdict.status == PASS
    assert "SSH-2.0-GitLab-SSHD" in verdict.saw
    assert ":2222" in verdict.saw


def test_ssh_fails_when_something_else_answers_on_its_port(pki: Pki, ssh: tuple[list[bytes], int]) -> None:
    ssh[0][0] = b"HTTP/1.1 400 Bad Request\r\n"
    try:
        verdict = gitlab_checks.ssh_check(_ssh_platform(pki, ssh[1]))
    finally:
        ssh[0][0] = b"SSH-2.0-GitLab-SSHD\r\n"
    assert verdict.status == FAIL
    assert "not as SSH" in verdict.saw
    assert "2222" in verdict.fix


def test_ssh_fails_when_nothing_answers(pki: Pki) -> None:
    verdict = gitlab_checks.ssh_check(platform_on(stacks={"phase1": PHASE1, "phase2": _phase2(pki)}))
    assert verdict.status == FAIL
    assert "nothing answers" in verdict.saw
    assert verdict.fix


def test_ssh_on_an_existing_cluster_goes_through_the_forward_to_the_gateways_ssh_port(pki: Pki, ssh: tuple[list[bytes], int]) -> None:
    """The SSH listener is port 22 of Envoy's Service there (stacks/exposure.py SSH_PORT_EXISTING), not its HTTPS port."""
    asked: list[Any] = []
    forward = _forwarding(ssh[1], asked)
    phase2 = _phase2(pki, **{outputs.GITLAB_FORWARD: GITLAB_FORWARD})
    verdict = gitlab_checks.ssh_check(platform_on(stacks={"phase1": EXISTING, "phase2": phase2}, forward=forward))
    assert verdict.status == PASS, verdict
    assert [str(target) for target in asked] == ["service gitlab/gitlab-envoy port 22 of context prod"]
    assert f"{GITLAB}:22" in verdict.saw


def test_ssh_on_an_existing_cluster_fails_when_its_forward_does_not_start(pki: Pki) -> None:
    @contextlib.contextmanager
    def forward(target: Any) -> Iterator[int]:
        raise RuntimeError(f"kubectl port-forward to {target} did not start")
        yield 0

    phase2 = _phase2(pki, **{outputs.GITLAB_FORWARD: GITLAB_FORWARD})
    verdict = gitlab_checks.ssh_check(platform_on(stacks={"phase1": EXISTING, "phase2": phase2}, forward=forward))
    assert verdict.status == FAIL
    assert f"nothing answers at {GITLAB}:22" in verdict.saw


def test_apps_pass_when_each_healthz_answers() -> None:
    answers = Answers({"https://app.blueprint.test/healthz": Answer(200)})
    stacks: dict[str, dict[str, Any]] = {
        "phase2": {outputs.CA_CERT_FILE: "/ca.crt"},
        "phase3": {outputs.APP_URLS: {"app": "https://app.blueprint.test"}},
    }
    assert gitlab_checks.apps_check(platform_on(stacks=stacks, ask=answers)).status == PASS


def test_apps_fail_naming_the_app_that_does_not_answer() -> None:
    answers = Answers({"https://app.blueprint.test/healthz": Answer(503, said="HTTP 503")})
    stacks: dict[str, dict[str, Any]] = {
        "phase2": {outputs.CA_CERT_FILE: "/ca.crt"},
        "phase3": {outputs.APP_URLS: {"app": "https://app.blueprint.test"}},
    }
    verdict = gitlab_checks.apps_check(platform_on(stacks=stacks, ask=answers))
    assert verdict.status == FAIL
    assert "app: HTTP 503" in verdict.saw
    assert verdict.fix


HEADLAMP_ON = {**PHASE1, outputs.HEADLAMP: True}


def test_headlamp_passes_when_its_route_answers() -> None:
    answers = Answers({"https://headlamp.blueprint.test/": Answer(200)})
    stacks = {"phase1": HEADLAMP_ON, "phase2": {outputs.GITLAB_URL: f"https://{GITLAB}", outputs.CA_CERT_FILE: "/ca.crt"}}
    assert gitlab_checks.headlamp_check(platform_on(stacks=stacks, ask=answers)).status == PASS


def test_headlamp_fails_when_its_route_does_not_answer() -> None:
    stacks = {"phase1": HEADLAMP_ON, "phase2": {outputs.GITLAB_URL: f"https://{GITLAB}:8443", outputs.CA_CERT_FILE: "/ca.crt"}}
    verdict = gitlab_checks.headlamp_check(platform_on(stacks=stacks))
    assert verdict.status == FAIL
    assert "https://headlamp.blueprint.test:8443/" in verdict.saw
    assert "Headlamp" in verdict.fix


def test_headlamp_is_skipped_when_off() -> None:
    assert gitlab_checks.headlamp_check(platform_on(stacks={"phase1": PHASE1, "phase2": {}})).status == SKIP


def _together(count: int) -> Callable[[], None]:
    """A wait that returns once `count` callers wait at once; asked one after another, it breaks (5 s)."""
    barrier = threading.Barrier(count, timeout=5)

    def wait() -> None:
        barrier.wait()

    return wait


def test_tls_asks_every_host_at_once_and_names_the_one_that_did_not_answer(pki: Pki, served: Served) -> None:
    wait = _together(4)  # GitLab, the registry, KAS, the app

    def dial(host: str, port: int) -> socket.socket:
        wait()
        if host == "app.blueprint.test":
            raise TimeoutError("timed out")
        return served.dial(host, port)

    phase3 = {outputs.APP_URLS: {"app": "https://app.blueprint.test"}}
    verdict = services.tls_check(platform_on(stacks={"phase2": _phase2(pki), "phase3": phase3}, dial=dial))
    assert verdict.status == FAIL
    assert verdict.saw == "app.blueprint.test: no TLS answer (TimeoutError: timed out)"


def test_apps_are_asked_at_once_each_named() -> None:
    wait = _together(2)

    def ask(url: str, **_: Any) -> Answer:
        wait()
        return Answer(200) if "one" in url else Answer(None, said="no answer within 10 s")

    stacks: dict[str, dict[str, Any]] = {
        "phase2": {outputs.CA_CERT_FILE: "/ca.crt"},
        "phase3": {outputs.APP_URLS: {"one": "https://one.blueprint.test", "two": "https://two.blueprint.test"}},
    }
    verdict = gitlab_checks.apps_check(platform_on(stacks=stacks, ask=ask))
    assert verdict.saw == "two: no answer within 10 s"
