"""No secret value in any report of `blueprint verify`: a whole run over a platform whose every
answer (kubectl, docker, kind, each URL, each connection, GitLab's and OpenBao's errors) repeats the
platform's secrets, and whose outputs and files hold them, shows none of them."""

from __future__ import annotations

import contextlib
import datetime
import json
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli.verify import data, specs, verify
from cli.verify.model import _guarded, _result
from cli.verify.report import report, to_table
from cli.verify.services import Answer
from stacks import outputs
from tests.cli.doctor.fakes import HEALTHY_OUTPUTS, FakeMachine
from tests.cli.fake_runner import FakeRunner
from tests.cli.verify.platforms import PHASE1, platform_on
from tests.providers.engine import free_port
from versions import BLUEPRINT

SECRETS = {
    "admin token": "glpat-admin-token-value-0123",
    "glab token": "glpat-glab-token-value-4567",
    "root password": "root-password-value-89ab",
    "openbao admin": "openbao-admin-password-cdef",
    "openbao writer": 'openbao-writer-pa"ss\\word-0011',
    "deploy kubeconfig": "apiVersion: v1\nkind: Config\nusers:\n- name: deploy\n  user:\n    token: deploy-kubeconfig-token-2233",
}
"""Each as a report could meet it; the writer's password with a quote and a backslash, and the deploy
kubeconfig on several lines: JSON escapes those, so they must be masked before it does."""
SAID = " ".join(SECRETS.values())
WHEN = datetime.datetime(2026, 12, 2, tzinfo=datetime.UTC)


def _outputs(folder: Path) -> dict[str, dict[str, Any]]:
    files = {
        outputs.ADMIN_TOKEN_FILE: SECRETS["admin token"].removeprefix(outputs.ADMIN_TOKEN_PREFIX),
        outputs.GLAB_TOKEN_FILE: SECRETS["glab token"],
        outputs.GITLAB_ROOT_PASSWORD_FILE: SECRETS["root password"],
        outputs.OPENBAO_ADMIN_PASSWORD_FILE: SECRETS["openbao admin"],
        outputs.OPENBAO_WRITER_PASSWORD_FILE: SECRETS["openbao writer"],
    }
    for key, value in files.items():
        (folder / key).write_text(value + "\n")
    (folder / "ca.crt").write_text(SAID)
    nowhere = f"127.0.0.1:{free_port()}"
    phase2 = {
        **{key: str(folder / key) for key in files},
        outputs.GITLAB_URL: f"http://{nowhere}", outputs.REGISTRY_HOST: "registry.blueprint.test",
        outputs.CA_CERT_FILE: str(folder / "ca.crt"),
        outputs.OPENBAO_ADDR: f"http://{nowhere}", outputs.APPS_GROUP_ID: "7", outputs.DEPLOY_KUBECONFIG: SECRETS["deploy kubeconfig"],
        outputs.REDIS_HOST: "valkey.redis.svc.cluster.local", outputs.MINIO_ENDPOINT: "http://minio.minio.svc.cluster.local:9000",
    }  # fmt: skip
    phase3 = {outputs.APP_URLS: {"guestbook": "https://guestbook.blueprint.test"}}  # an app of the manifest: --deep times it
    stamp = {outputs.BLUEPRINT_VERSION: BLUEPRINT}
    return {"phase1": {**PHASE1, **stamp, outputs.HEADLAMP: True}, "phase2": {**phase2, **stamp}, "phase3": {**phase3, **stamp}}


IN_OPENBAO = {
    "valkey password": "valkey-password-value-4455",
    "minio gitlab key": "minio-gitlab-secret-key-6677",
    "minio runner-cache key": "minio-runner-cache-secret-key-8899",
}
"""What the checks that read their credentials from OpenBao (Valkey's, MinIO's) read there; only the
servers those checks talk to repeat them (no other part of the platform knows them)."""
KV = {
    "redis-password": {"password": IN_OPENBAO["valkey password"]},
    "minio-gitlab-secret-key": {"accessKey": "gitlab", "secretKey": IN_OPENBAO["minio gitlab key"]},
    "minio-runner-cache-secret-key": {"accessKey": "runner-cache", "secretKey": IN_OPENBAO["minio runner-cache key"]},
}


@contextlib.contextmanager
def _echoing() -> Iterator[int]:
    """A loopback port whose every connection gets every secret back, whatever it sent: what Valkey and
    MinIO answer through their port-forward."""

    class Echo(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            self.request.settimeout(5)
            with contextlib.suppress(OSError):
                self.request.recv(65536)
                self.request.sendall(f"error: {SAID} {' '.join(IN_OPENBAO.values())}\r\n".encode())

    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), Echo) as server:
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield server.server_address[1]
        finally:
            server.shutdown()


def test_no_secret_shows_in_any_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    echoing = {
        **HEALTHY_OUTPUTS,
        **{command: (1, f"error: {SAID}") for command in ("kubectl --context", "docker ps", "env KIND_EXPERIMENTAL_PROVIDER=")},
    }
    machine = FakeMachine(outputs=echoing)
    runner = FakeRunner(_outputs(tmp_path))

    def ask(url: str, **_: Any) -> Answer:
        return Answer(500, body={"message": SAID}, said=f"HTTP 500: {SAID}")

    def dial(host: str, port: int) -> Any:
        raise OSError(f"refused: {SAID}")

    monkeypatch.setattr(data, "_kv_entries", lambda platform, names: {name: KV[name] for name in names})
    with _echoing() as port:

        @contextlib.contextmanager
        def forward(target: Any) -> Iterator[int]:
            yield port

        platform = platform_on(machine, ask=ask, dial=dial, runner=runner, forward=forward)
        platform.deep = True  # `--deep`'s checks too
        code, document = verify(platform, when=WHEN)
        # Then every check once more, whatever its needs said: each one meets the secrets.
        every = [_result(spec, _guarded(spec)) for _, spec in specs(platform)]
    again = report(every, document["platform"], platform.secrets, when=WHEN)
    shown = [*_strings(document), *_strings(again), to_table(document), json.dumps(document), json.dumps(again)]
    assert code == 1
    # Each value as it is, and as repr() escapes it (an error that repeats what a server sent does).
    forms = {name: (value, repr(value)[1:-1]) for name, value in {**SECRETS, **IN_OPENBAO}.items()}
    assert not [name for name, values in forms.items() if any(value in text for value in values for text in shown)]


def _strings(value: Any) -> list[str]:
    """Every string a report holds, as a reader of the JSON gets it back."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []
