"""What the tests of `blueprint verify`'s checks run them on: a `Platform` over a FakeMachine, a
FakeRunner, and answers by URL; the outputs of a platform whose every check passes."""

from __future__ import annotations

import ssl
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cli.verify.checks import Platform
from cli.verify.report import Secrets
from cli.verify.services import Answer
from stacks import outputs
from tests.cli.doctor.fakes import FakeMachine
from tests.cli.fake_runner import FakeRunner

DOMAIN = "blueprint.test"
PHASE1: dict[str, Any] = {
    outputs.CLUSTER_NAME: "blueprint",
    outputs.CLUSTER_ID: "0123456789abcdef",
    outputs.DOMAIN: DOMAIN,
    outputs.SSH_PORT: 2222,
    outputs.NODE_LABEL_KEY: "blueprint/role",
    outputs.GITLAB_NODE_LABEL: "gitlab",
    outputs.RUNNER_NODE_LABEL: "runner",
    outputs.HEADLAMP: False,
    outputs.IMAGE_MIRRORS: {"docker.io": "172.30.0.10:5000"},
}
EXISTING: dict[str, Any] = {
    **PHASE1,
    outputs.CLUSTER_TYPE: "existing",
    outputs.KUBE_CONTEXT: "prod",
    outputs.CLUSTER_ID: "uid-1",
    outputs.IMAGE_MIRRORS: {},
}
"""phase1's outputs on an existing cluster (context `prod`)."""
GITLAB_FORWARD = {"context": "prod", "namespace": "gitlab", "service": "gitlab-envoy", "port": 443}
"""phase2's `gitlabForward` there (stacks/exposure.py `gitlab_forward`)."""


def brought(phase2: Mapping[str, Any], gateway_ca: str) -> dict[str, Any]:
    """phase2's outputs with `blueprint:tlsCertificate`: the gateway serves the user's certificate, which
    `gateway_ca` (gatewayCaFile) verifies; the platform CA (caCertFile) still serves OpenBao."""
    return {**phase2, outputs.GATEWAY_CA_FILE: gateway_ca}


@dataclass
class Answers:
    """What `ask` answers, by URL; any other URL has no answer."""

    by_url: dict[str, Answer] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)

    def __call__(self, url: str, **_: Any) -> Answer:
        self.asked.append(url)
        return self.by_url.get(url, Answer(None, said=f"nothing answers at {url}"))


def http_answer(status: int, body: str = "", link: str = "") -> tuple[int, str]:
    """What `curl --include` prints of a registry's answer (distribution's headers; a `Link` to the next
    page, registry/handlers/catalog.go), with curl's exit: 0 for any status, as without `--fail`."""
    head = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Service Unavailable'}", "Content-Type: application/json"]
    head += ["Docker-Distribution-Api-Version: registry/2.0", *([f"Link: {link}"] if link else [])]
    return 0, "\r\n".join([*head, "Date: Thu, 01 Jan 2026 00:00:00 GMT", "", body])


CURL_REFUSED = 7, "curl: (7) Failed to connect to 172.30.0.10 port 5000 after 2 ms: Could not connect to server"
CURL_TIMED_OUT = 28, "curl: (28) Connection timed out after 5002 milliseconds"


@dataclass(frozen=True, kw_only=True)
class NodeCurl(FakeMachine):
    """A FakeMachine whose cluster node runs curl: `docker exec <node> curl ... <url>` answers `curled[url]`
    (curl's exit and what it prints), any other URL as a mirror that is down (CURL_REFUSED); `curls` are
    the node and URL of each (in `calls` too)."""

    curled: dict[str, tuple[int, str]] = field(default_factory=dict)
    curls: list[tuple[str, str]] = field(default_factory=list)
    stderr: str = ""
    """What the engine's CLI writes on stderr before each exec's output (a warning): in what `run` says
    (merged, as RealMachine's), in `run_apart`'s only when the exec fails."""

    def run(self, argv: Sequence[str], timeout: float) -> tuple[int, str]:
        if list(argv[1:2]) == ["exec"] and "curl" in argv:
            code, said = self._curl(argv)
            return code, self.stderr + said
        return super().run(argv, timeout)

    def run_apart(self, argv: Sequence[str], timeout: float) -> tuple[int, str]:
        if list(argv[1:2]) == ["exec"] and "curl" in argv:
            code, said = self._curl(argv)
            return code, said if code == 0 else self.stderr + said
        return super().run_apart(argv, timeout)

    def _curl(self, argv: Sequence[str]) -> tuple[int, str]:
        self.calls.append(list(argv))
        self.curls.append((argv[2], argv[-1]))
        return self.curled.get(argv[-1], CURL_REFUSED)


def no_laptop_network(monkeypatch: Any) -> None:
    """Any connection from this machine fails the test: a container's address does not route from a
    laptop with Docker Desktop or a Podman machine."""
    import socket

    def refused(*_: Any, **__: Any) -> Any:
        raise AssertionError("asked from this machine")

    monkeypatch.setattr(socket.socket, "connect", refused)
    monkeypatch.setattr(socket, "create_connection", refused)


def platform_on(
    machine: FakeMachine | None = None,
    stacks: Mapping[str, dict[str, Any]] | None = None,
    *,
    ask: Callable[..., Answer] | None = None,
    dial: Callable[[str, int], Any] | None = None,
    trust: Callable[[], ssl.SSLContext] = ssl.create_default_context,
    engine: str = "docker",
    runner: Any = None,
    forward: Callable[[Any], Any] | None = None,
) -> Platform:
    """A Platform whose stacks' outputs are already read (as their checks record them)."""
    machine = machine or FakeMachine()
    made = Platform(
        machine=machine,
        runner=lambda: runner or FakeRunner(),
        ask=ask or Answers(),
        secrets=Secrets(),
        engine=engine,
        dial=dial or (lambda host, port: (_ for _ in ()).throw(OSError(f"no {host}:{port}"))),
        system_trust=trust,
        forward=forward,
        resolve=lambda name: {found} if (found := machine.resolve(name)) else set(),
    )
    made.outputs.update({stack: dict(values) for stack, values in (stacks or {}).items()})
    return made
