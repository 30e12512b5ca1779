"""What the tests of `blueprint verify`'s checks run them on: a `Platform` over a FakeMachine, a
FakeRunner, and answers by URL; the outputs of a platform whose every check passes."""

from __future__ import annotations

import ssl
from collections.abc import Callable, Mapping
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
