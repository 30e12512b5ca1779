"""No secret value in any report of `blueprint verify`: a whole run over a platform whose every
answer (kubectl, docker, kind, each URL, each connection, GitLab's and OpenBao's errors) repeats the
platform's secrets, and whose outputs and files hold them, shows none of them."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

from cli.verify import specs, verify
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
    }  # fmt: skip
    phase3 = {outputs.APP_URLS: {"guestbook": "https://guestbook.blueprint.test"}}  # an app of the manifest: --deep times it
    stamp = {outputs.BLUEPRINT_VERSION: BLUEPRINT}
    return {"phase1": {**PHASE1, **stamp, outputs.HEADLAMP: True}, "phase2": {**phase2, **stamp}, "phase3": {**phase3, **stamp}}


def test_no_secret_shows_in_any_report(tmp_path: Path) -> None:
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

    platform = platform_on(machine, ask=ask, dial=dial, runner=runner)
    platform.deep = True  # `--deep`'s checks too
    code, document = verify(platform, when=WHEN)
    # Then every check once more, whatever its needs said: each one meets the secrets.
    every = [_result(spec, _guarded(spec)) for _, spec in specs(platform)]
    again = report(every, document["platform"], platform.secrets, when=WHEN)
    shown = [*_strings(document), *_strings(again), to_table(document), json.dumps(document), json.dumps(again)]
    assert code == 1
    assert not [name for name, value in SECRETS.items() if any(value in text for text in shown)]


def _strings(value: Any) -> list[str]:
    """Every string a report holds, as a reader of the JSON gets it back."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []
