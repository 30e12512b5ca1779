"""The shared GitLab client: transient failures are retried (a POST only when it never reached
GitLab), pages are followed, and an error names the call and the status but never the token."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from providers import gitlab_api
from providers.gitlab_api import GitLab, GitLabApiError
from stacks.config import PROJECT_DIR
from tests.providers.engine import free_port
from tests.providers.gitlab_stub import TOKEN, GitLabState, gitlab_stub


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gitlab_api, "RETRY_PAUSES", (0.01, 0.01, 0.01, 0.01))


def client(url: str, token: str = TOKEN) -> GitLab:
    return GitLab.of({"gitlab_url": url, "token": token, "ca_file": "/nonexistent/ca.crt"})


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


def test_a_post_that_never_reached_gitlab_is_sent_again(monkeypatch: pytest.MonkeyPatch, state: GitLabState) -> None:
    """Refused connections while GitLab starts: nothing was sent, so the create is safe to repeat."""
    monkeypatch.setattr(gitlab_api, "RETRY_PAUSES", (0.2, 0.2, 0.2, 0.2))
    port, done = free_port(), threading.Event()

    def serve_late() -> None:
        time.sleep(0.3)
        with gitlab_stub(state, port=port):
            done.wait(10)

    threading.Thread(target=serve_late).start()
    try:
        made = client(f"http://127.0.0.1:{port}").post("/groups", {"name": "g", "path": "g"})
    finally:
        done.set()
    assert made["path"] == "g"
    assert state.calls == ["POST /groups"]


def test_a_gitlab_that_never_answers_is_named(state: GitLabState) -> None:
    with pytest.raises(GitLabApiError, match=r"GET /api/v4/groups/g failed \(no answer\): cannot reach http://127.0.0.1:"):
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


def test_importing_the_gitlab_providers_imports_no_client_library() -> None:
    """The engine's provider host imports them by reference: nothing may happen until a call."""
    modules = "providers.gitlab_api, providers.gitlab_objects, providers.gitlab_runner, providers.gitlab_sync, providers.gitlab_pipeline"
    code = f"import sys, {modules}; print(sorted(m for m in ('requests', 'urllib3') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_DIR, capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "[]"


def test_a_missing_ca_file_is_named_with_how_to_get_it_back() -> None:
    """requests would raise a bare OSError, and the user would see a traceback instead of the fix."""
    api = GitLab.of({"gitlab_url": "https://gitlab.local.example.net", "token": TOKEN, "ca_file": "/nonexistent/ca.crt"})
    with pytest.raises(GitLabApiError) as failed:
        api.get("/version")
    assert "the CA certificate /nonexistent/ca.crt" in str(failed.value)
    assert "pulumi stack output -s phase2 caCertPem > /nonexistent/ca.crt" in str(failed.value)
