"""The shared GitLab client: transient failures are retried (a POST only when it never reached
GitLab, or was throttled), pages are followed, nothing from the environment changes where calls go
or what they trust, the token follows no redirect off GitLab's host, and an error names the call and
the status but never the token nor what the request sent."""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from providers.gitlab_api import MAX_PAGES, GitLab, GitLabApiError
from providers.http import RETRY_AFTER_MAX
from tests.providers.clock import FakeClock
from tests.providers.engine import free_port
from tests.providers.gitlab_stub import TOKEN, GitLabState, gitlab_stub

pytestmark = pytest.mark.usefixtures("clock")  # every retry on a clock the test drives


def client(url: str, token: str = TOKEN, **props: Any) -> GitLab:
    return GitLab.of({"gitlab_url": url, "token": token, "ca_file": "/nonexistent/ca.crt", **props})


@pytest.fixture
def no_proxy_exemption(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)


def test_a_gateway_error_is_retried(gitlab: str, state: GitLabState) -> None:
    state.add_group("blueprint-apps")
    state.failures = [502, 503]
    assert client(gitlab).get("/groups/blueprint-apps")["path"] == "blueprint-apps"
    assert len(state.calls) == 3


def test_a_post_is_not_repeated_after_a_gateway_error(gitlab: str, state: GitLabState) -> None:
    """GitLab may have made the group before the gateway failed: the next `up` adopts it."""
    state.failures = [502]
    with pytest.raises(GitLabApiError, match=r"POST /api/v4/groups failed \(HTTP 502\)"):
        client(gitlab).post("/groups", {"name": "g", "path": "g"})
    assert state.calls == ["POST /groups"]


def test_a_post_that_never_reached_gitlab_is_sent_again(state: GitLabState, clock: FakeClock) -> None:
    """Refused connections while GitLab starts: nothing was sent, so the create is safe to repeat."""
    port = free_port()
    with contextlib.ExitStack() as later:
        clock.at(1.0, lambda: later.enter_context(gitlab_stub(state, port=port)))  # GitLab answers from then on
        made = client(f"http://127.0.0.1:{port}").post("/groups", {"name": "g", "path": "g"})
    assert made["path"] == "g"
    assert state.calls == ["POST /groups"]
    assert clock.pauses == [1.0]


def test_a_gitlab_that_never_answers_is_named(state: GitLabState) -> None:
    with pytest.raises(GitLabApiError, match=r"GET /api/v4/groups/g failed \(no answer\): nothing answers at 127.0.0.1:\d+: is the kind"):
        client(f"http://127.0.0.1:{free_port()}").get("/groups/g")


def test_an_error_names_the_call_and_status_and_never_the_token(gitlab: str) -> None:
    with pytest.raises(GitLabApiError) as refused:
        client(gitlab).get("/groups/nowhere")
    assert str(refused.value) == 'GitLab: GET /api/v4/groups/nowhere failed (HTTP 404): {"message": "404 Group Not Found"}'
    with pytest.raises(GitLabApiError) as unauthorised:
        client(gitlab, token="glpat-wrong-value").get("/groups/nowhere")
    assert "HTTP 401" in str(unauthorised.value)
    assert "glpat-wrong-value" not in str(unauthorised.value)


def test_every_page_is_read(gitlab: str, state: GitLabState) -> None:
    for n in range(5):
        state.add_runner(f"runner {n}", ["kubernetes"])
    assert [runner["description"] for runner in client(gitlab).pages("/runners/all")] == [f"runner {n}" for n in range(5)]


def test_a_missing_ca_file_is_named_with_how_to_get_it_back() -> None:
    """requests would raise a bare OSError, and the user would see a traceback instead of the fix."""
    api = GitLab.of({"gitlab_url": "https://gitlab.local.example.net", "token": TOKEN, "ca_file": "/nonexistent/ca.crt"})
    with pytest.raises(GitLabApiError) as failed:
        api.get("/version")
    assert "the CA certificate /nonexistent/ca.crt" in str(failed.value)
    assert "pulumi stack output -s phase2 caCertPem > /nonexistent/ca.crt" in str(failed.value)


def test_the_missing_ca_files_fix_says_what_the_plain_pulumi_command_needs() -> None:
    """It names `pulumi stack output`, which needs blueprint's state passphrase in that shell."""
    api = GitLab.of({"gitlab_url": "https://gitlab.local.example.net", "token": TOKEN, "ca_file": "/nonexistent/ca.crt"})
    with pytest.raises(GitLabApiError) as failed:
        api.get("/version")
    assert 'eval "$(uv run blueprint env)"' in str(failed.value)


def test_a_throttled_request_is_sent_again_after_the_pause_gitlab_names(gitlab: str, state: GitLabState, clock: FakeClock) -> None:
    """A 429 was refused before GitLab acted on it, so even a POST is sent again."""
    state.failures, state.retry_after = [429], "2"
    assert client(gitlab).post("/groups", {"name": "g", "path": "g"})["path"] == "g"
    assert state.calls == ["POST /groups", "POST /groups"]
    assert clock.pauses == [2.0]


def test_a_pause_gitlab_names_is_bounded(gitlab: str, state: GitLabState, clock: FakeClock) -> None:
    state.failures, state.retry_after = [429], "3600"
    client(gitlab).get("/runners/all")
    assert clock.pauses == [RETRY_AFTER_MAX]


def test_a_proxy_from_the_environment_is_not_used(gitlab: str, monkeypatch: pytest.MonkeyPatch, no_proxy_exemption: None) -> None:
    """GitLab is on the laptop's gateway: a proxy set for the rest of the world does not apply."""
    nowhere = f"http://127.0.0.1:{free_port()}"
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, nowhere)
    assert client(gitlab).get("/runners/all") == []


def test_a_ca_bundle_from_the_environment_does_not_replace_the_ca_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`requests` would check GitLab's certificate against REQUESTS_CA_BUNDLE instead of the CA file
    (here it fails on the bundle's missing path before connecting; with the CA file it connects)."""
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/nonexistent/bundle.pem")
    ca_file = tmp_path / "ca.crt"
    ca_file.write_text("-----BEGIN CERTIFICATE-----\n")
    api = GitLab.of({"gitlab_url": f"https://127.0.0.1:{free_port()}", "token": TOKEN, "ca_file": str(ca_file)})
    with pytest.raises(GitLabApiError, match=r"failed \(no answer\): nothing answers at 127.0.0.1:\d+"):
        api.get("/version")


def test_a_redirect_to_gitlab_itself_is_followed_once(gitlab: str, state: GitLabState) -> None:
    """GitLab answers a renamed project's old path with where the project went."""
    project = state.add_project(state.add_group("blueprint-apps"), "guestbook")
    state.redirects["blueprint-apps/old-name"] = project["id"]
    assert client(gitlab).find("/projects/blueprint-apps%2Fold-name")["id"] == project["id"]
    assert state.calls == ["GET /projects/blueprint-apps%2Fold-name", f"GET /projects/{project['id']}"]


def test_a_redirect_to_another_host_is_not_followed(gitlab: str, state: GitLabState) -> None:
    """The token goes nowhere but GitLab: `requests` would re-send the PRIVATE-TOKEN header."""
    elsewhere = GitLabState()
    project = state.add_project(state.add_group("blueprint-apps"), "guestbook")
    state.redirects["blueprint-apps/old-name"] = project["id"]
    with gitlab_stub(elsewhere) as other_host:
        state.redirect_base = other_host
        with pytest.raises(GitLabApiError, match=f"redirected to {other_host}, not to {gitlab}: not followed"):
            client(gitlab).get("/projects/blueprint-apps%2Fold-name")
    assert elsewhere.calls == []


class Echo(http.server.BaseHTTPRequestHandler):
    """Refuses every request with a validation error that echoes each value it was sent, and `also`."""

    also = ""

    def do_PUT(self) -> None:  # noqa: N802 (the stdlib's name)
        sent = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        errors = {key: [f"{value} is invalid"] for key, value in sent.items()}
        answer = json.dumps({"message": {**errors, "base": [self.also]}}).encode()
        self.send_response(400)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *_: Any) -> None:
        return


@pytest.fixture
def echo() -> Iterator[tuple[str, type[Echo]]]:
    handler: type[Echo] = type("Handler", (Echo,), {})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler
    server.shutdown()
    server.server_close()


def test_an_error_never_shows_a_string_the_request_sent(echo: tuple[str, type[Echo]]) -> None:
    url, _ = echo
    kubeconfig = "apiVersion: v1\nusers:\n- user: {token: sa-token-value}\n"
    with pytest.raises(GitLabApiError) as refused:
        client(url).put("/projects/1/variables/DEPLOY_KUBECONFIG", {"value": kubeconfig, "masked": True})
    message = str(refused.value)
    assert "HTTP 400" in message
    assert "sa-token-value" not in message
    assert "[secret]" in message


def test_an_error_never_shows_the_runner_token(echo: tuple[str, type[Echo]]) -> None:
    url, handler = echo
    handler.also = "glrt-runner-token-value"
    with pytest.raises(GitLabApiError) as refused:
        client(url, authentication_token="glrt-runner-token-value").put("/runners/5", {"run_untagged": True})
    assert "glrt-runner-token-value" not in str(refused.value)


def test_a_patch_is_not_repeated_after_a_gateway_error(gitlab: str, state: GitLabState) -> None:
    """PATCH is not idempotent (RFC 9110 section 9.2.2): GitLab may have acted before the gateway failed."""
    state.failures = [502]
    with pytest.raises(GitLabApiError, match=r"PATCH /api/v4/groups/1 failed \(HTTP 502\)"):
        client(gitlab).call("PATCH", "/groups/1", body={"name": "g"})
    assert state.calls == ["PATCH /groups/1"]


def test_a_name_that_does_not_resolve_names_its_hosts_line_without_retrying(clock: FakeClock) -> None:
    """Waiting does not add the line to /etc/hosts: the user does, and the message gives it."""
    with pytest.raises(GitLabApiError) as failed:
        client("http://gitlab.blueprint.invalid").get("/version")
    assert failed.value.detail == (
        "gitlab.blueprint.invalid does not resolve on this machine: add this line to /etc/hosts "
        "(C:\\Windows\\System32\\drivers\\etc\\hosts on Windows): 127.0.0.1 gitlab.blueprint.invalid"
    )
    assert clock.pauses == []


def test_an_answer_that_is_not_json_tells_nothing_of_what_gitlab_holds(tmp_path: Path) -> None:
    """Something else on GitLab's port: a refresh must keep the state (`unanswered`), not fail on a decode."""
    (tmp_path / "api" / "v4" / "groups").mkdir(parents=True)
    (tmp_path / "api" / "v4" / "groups" / "g").write_text("<html>not GitLab</html>")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    try:
        with pytest.raises(GitLabApiError) as failed:
            client(f"http://127.0.0.1:{server.server_address[1]}").get("/groups/g")
    finally:
        server.shutdown()
        server.server_close()
    assert failed.value.unanswered
    assert "the answer (HTTP 200) is not GitLab's JSON" in str(failed.value)


class Page:
    """An answer of `http.send` holding one item and naming the next page."""

    def __init__(self, next_page: str) -> None:
        self.status_code, self.content, self.text = 200, b'[{"id": 1}]', '[{"id": 1}]'
        self.headers = {"X-Next-Page": next_page}

    def json(self) -> Any:
        return json.loads(self.content)


def pages_answered(monkeypatch: pytest.MonkeyPatch, next_page: Callable[[int], str]) -> list[int]:
    """The pages `pages` asks for of a server naming `next_page(page)` after each, till it stops."""
    asked: list[int] = []

    def send(_session: Any, _method: str, _url: str, **options: Any) -> Page:
        asked.append(int(options["params"]["page"]))
        return Page(next_page(asked[-1]))

    monkeypatch.setattr("providers.http.send", send)
    with pytest.raises(GitLabApiError) as failed:
        list(client("http://gitlab.test").pages("/projects"))
    assert failed.value.unanswered, "it tells nothing of what GitLab holds"
    return asked


def test_a_next_page_that_is_not_after_this_one_stops_the_list_with_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that names page 2 for ever would be asked for it for ever."""
    assert pages_answered(monkeypatch, lambda _page: "2") == [1, 2]


def test_a_list_longer_than_blueprint_reads_stops_with_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    assert pages_answered(monkeypatch, lambda page: str(page + 1)) == list(range(1, MAX_PAGES + 1))
