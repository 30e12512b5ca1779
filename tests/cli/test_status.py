"""`blueprint status`, against a fake runner and a fake probe."""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from cli import status
from shown import shown
from stacks import outputs
from tests.cli.fake_runner import PHASE2, FakeRunner, phase2_with_token
from tests.providers.engine import free_port


def test_status_reports_each_phase_and_each_health(tmp_path: Path) -> None:
    phase2 = phase2_with_token(tmp_path)
    runner = FakeRunner(existing={"phase1": {}, "phase2": phase2, "phase3": {outputs.APP_URLS: {"guestbook": "https://guestbook.x"}}})
    probed: list[str] = []

    def probe(url: str, ca: str, headers: Mapping[str, str], **_: object) -> str:
        probed.append(url)
        return "ok"

    text = status.status(runner, probe)
    assert "phase1: up" in text
    assert "phase3: up" in text
    assert [url.split("/", 3)[-1] for url in probed] == [
        "api/v4/version",
        "v1/sys/seal-status",
        "api/v4/groups/7/runners?type=group_type&status=online",
        "healthz",
    ]


def test_the_cli_calls_gitlab_with_the_admin_token_of_phase2s_file(tmp_path: Path) -> None:
    runner = FakeRunner(existing={"phase2": phase2_with_token(tmp_path, "FromTheFile42")})
    sent: dict[str, str] = {}

    def probe(url: str, ca: str, headers: Mapping[str, str], **_: object) -> str:
        sent[url.split("/", 3)[-1]] = dict(headers).get("PRIVATE-TOKEN", "")
        return "ok"

    status.status(runner, probe)
    assert sent["api/v4/version"] == sent["api/v4/groups/7/runners?type=group_type&status=online"] == "glpat-FromTheFile42"
    assert sent["v1/sys/seal-status"] == ""


def test_status_without_the_admin_token_file_says_which_file_and_what_to_run(tmp_path: Path) -> None:
    missing = tmp_path / "gitlab-admin-token"
    runner = FakeRunner(existing={"phase2": {**PHASE2, outputs.ADMIN_TOKEN_FILE: str(missing)}})
    probed: list[str] = []

    def probe(url: str, ca: str, headers: Mapping[str, str], **_: object) -> str:
        probed.append(url)
        return "ok"

    text = status.status(runner, probe)
    assert (
        f"  GitLab:  unknown: phase2 is not up, or its data folder is not on this machine: {missing}; run `uv run blueprint up` first"
    ) in text.splitlines()
    assert "  Runners: unknown: no admin token (above)" in text.splitlines()
    assert [url.split("/", 3)[-1] for url in probed] == ["v1/sys/seal-status"]


def test_status_says_which_blueprint_release_brought_each_stack_up() -> None:
    runner = FakeRunner(existing={"phase1": {outputs.BLUEPRINT_VERSION: "0.1.0"}})
    text = status.status(runner, lambda *_: "ok", lambda phase1: [])
    assert text.splitlines() == ["phase1: up, by blueprint 0.1.0", "phase2: not up", "phase3: not up"]


def test_status_of_nothing_says_not_up() -> None:
    text = status.status(FakeRunner(), lambda *_: "ok", lambda phase1: [])
    assert text.splitlines() == ["phase1: not up", "phase2: not up", "phase3: not up"]


def test_status_ends_with_the_image_cache_read_from_phase1s_outputs_or_none_when_it_is_not_up() -> None:
    seen: list[Any] = []

    def cache(phase1: Mapping[str, Any] | None) -> list[str]:
        seen.append(phase1)
        return ["image cache: /cache, 1.0 GiB on disk"]

    up = {outputs.IMAGE_CACHE_DIR: "/cache"}
    text = status.status(FakeRunner(existing={"phase1": up}), lambda *_: "ok", cache)
    assert text.splitlines()[-1] == "image cache: /cache, 1.0 GiB on disk"
    status.status(FakeRunner(), lambda *_: "ok", cache)
    assert seen == [up, None]


def test_status_shows_a_crafted_recorded_version_bounded_and_without_control_characters() -> None:
    crafted = "\x1b]0;owned\x07\x1b[2J" + "A" * 5000 + "\nphase2: up, by blueprint 0.1.0"
    runner = FakeRunner(existing={"phase1": {outputs.BLUEPRINT_VERSION: crafted}})
    text = status.status(runner, lambda url, ca, headers, **_: "ok", image_cache=lambda phase1: [])
    assert text.splitlines() == [
        f"phase1: up, by blueprint {shown(crafted)} (not a blueprint version)",
        "phase2: not up",
        "phase3: not up",
    ]
    assert "\x1b" not in text


def test_a_probe_closes_the_session_it_opens(monkeypatch: pytest.MonkeyPatch) -> None:
    import requests

    import providers.http

    closed: list[bool] = []

    class Answering(requests.Session):
        def get(self, url: str | bytes, **kwargs: Any) -> requests.Response:
            answer = requests.Response()
            answer.status_code, answer._content = 200, b'{"sealed": false}'
            answer.headers["Content-Type"] = "application/json"
            return answer

        def close(self) -> None:
            closed.append(True)
            super().close()

    monkeypatch.setattr(providers.http, "session", lambda **options: Answering())
    assert status.probe("http://127.0.0.1:8200/v1/sys/seal-status", "", {}) == "unsealed"
    assert closed == [True]


def test_probe_sends_nothing_where_our_missing_ca_cannot_vouch(tmp_path: Path) -> None:
    gone = tmp_path / "ca.crt"
    assert status.probe("https://gitlab.local.example.net/api/v4/version", str(gone), {"PRIVATE-TOKEN": "t"}) == (
        f"unknown: the CA file {gone} is missing"
    )


def test_probe_of_plain_http_needs_no_ca_file(tmp_path: Path) -> None:
    """OpenBao answers on plain http at 127.0.0.1: our CA file, missing or not, plays no part."""
    said = status.probe(f"http://127.0.0.1:{free_port()}/v1/sys/seal-status", str(tmp_path / "ca.crt"), {})
    assert said == "unreachable (ConnectionError)"


def test_openbao_is_probed_under_its_own_name_never_the_loopback_address(tmp_path: Path) -> None:
    """Reached at 127.0.0.1, OpenBao proves who it is with a certificate for its own name."""
    runner = FakeRunner(existing={"phase2": phase2_with_token(tmp_path)})
    names: dict[str, object] = {}

    def probe(url: str, ca: str, headers: Mapping[str, str], server_name: object = None) -> str:
        names[url.split("/", 3)[-1]] = server_name
        return "ok"

    status.status(runner, probe, image_cache=lambda phase1: [])
    assert names["v1/sys/seal-status"] == "openbao.local.example.net"
    assert names["api/v4/version"] is None


def test_status_on_an_existing_cluster_says_there_is_no_image_cache() -> None:
    def cache(phase1: Mapping[str, Any] | None) -> list[str]:
        raise AssertionError("no image cache is looked for on an existing cluster")

    up = {outputs.CLUSTER_TYPE: "existing", outputs.IMAGE_CACHE_DIR: ""}
    text = status.status(FakeRunner(existing={"phase1": up}), lambda *_: "ok", cache)
    assert text.splitlines()[-1].startswith("image cache: none (blueprint:cluster is existing")


def test_status_before_phase1_is_up_reads_existing_from_its_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "Pulumi.phase1.yaml").write_text("config:\n  blueprint:cluster: existing\n  blueprint:kubeContext: prod\n")
    monkeypatch.setattr("stacks.config.schema.STACK_FILES_DIR", tmp_path)
    text = status.status(FakeRunner(), lambda *_: "ok", lambda phase1: ["image cache: /cache"])
    assert text.splitlines()[-1].startswith("image cache: none (blueprint:cluster is existing")


ON_EXISTING = {
    outputs.CLUSTER_TYPE: "existing",
    outputs.KUBE_CONTEXT: "prod",
    outputs.IMAGE_CACHE_DIR: "",
    outputs.API_SERVER_ENDPOINTS: [{"address": "172.16.0.10", "port": 443}, {"address": "172.16.1.10", "port": 443}],
}


def existing_status(live: list[dict[str, Any]] | str) -> str:
    asked: list[str] = []

    def read(context: str) -> list[dict[str, Any]] | str:
        asked.append(context)
        return live

    text = status.status(FakeRunner(existing={"phase1": ON_EXISTING}), lambda *_: "ok", lambda phase1: [], read)
    assert asked == ["prod"]
    return text


def test_status_says_to_re_run_up_when_the_api_servers_endpoints_moved_since_phase1_read_them() -> None:
    text = existing_status([{"address": "172.16.0.10", "port": 443}, {"address": "172.16.2.20", "port": 443}])
    assert (
        "API server: its endpoints moved since the last up (recorded 172.16.0.10:443, 172.16.1.10:443, now 172.16.0.10:443, "
        "172.16.2.20:443): the Runners and deploy jobs cannot reach it; re-run `uv run blueprint up`"
    ) in text.splitlines()


def test_status_says_the_api_server_is_where_phase1_recorded_it() -> None:
    text = existing_status([{"address": "172.16.1.10", "port": 443.0}, {"address": "172.16.0.10", "port": 443}])
    assert "API server: at the endpoints phase1 recorded (172.16.0.10:443, 172.16.1.10:443)" in text.splitlines()


def test_status_says_when_the_api_servers_endpoints_cannot_be_read() -> None:
    assert "API server: unknown, its endpoints cannot be read (kubectl: 'Unable to connect')" in existing_status(
        "kubectl: 'Unable to connect'"
    )


def test_the_live_api_server_is_read_with_the_context_as_phase1_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from components.existing_cluster import READ_ARGS

    ran: list[list[str]] = []
    slices = {"items": [{"ports": [{"port": 443}], "endpoints": [{"addresses": ["172.16.0.10"]}]}]}

    def run(argv: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        ran.append(argv)
        return subprocess.CompletedProcess(argv, 0, json.dumps(slices), "")

    monkeypatch.setattr(subprocess, "run", run)
    assert status.live_api_server("prod") == [{"address": "172.16.0.10", "port": 443}]
    assert ran == [["kubectl", "--context", "prod", "--request-timeout=20s", *shlex.split(READ_ARGS["apiServer"])]]
