"""The admin token provider, loaded as the engine loads it, against fake `kind`/`kubectl` (which
record how the seed script reaches the toolbox) and a local stand-in for GitLab's token API."""

from __future__ import annotations

import http.server
import json
import os
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from providers.gitlab_token import (
    GLAB_TOKEN_NAME,
    PROVIDER_VERSION,
    GitLabTokenArgs,
    GitLabTokenError,
    GitLabTokenProvider,
    accepted,
    seed_script,
)
from tests.plans import fake_command
from tests.providers.clock import FakeClock
from tests.providers.engine import as_engine_loads, free_port
from tests.providers.gitlab_stub import serving

TOKEN = "glpat-abcdefghijklmnopqrstuvwxyz0123456789ABCD"
SCOPES = ["api", "create_runner", "admin_mode"]


class TokenApi(http.server.BaseHTTPRequestHandler):
    """GET /api/v4/personal_access_tokens/self: 200 and the token's scopes and expiry for the accepted
    token (doc/api/personal_access_tokens.md), 401 for any other; DELETE revokes it (204), 401 for
    any other."""

    accepted: set[str] = set()
    scopes: list[str] = SCOPES
    expires_at: str | None = None
    url = ""
    ca_file = ""
    """A CA file that exists (the stub speaks plain HTTP, so its content does not matter)."""

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        ok = self.path == "/api/v4/personal_access_tokens/self" and self.headers.get("PRIVATE-TOKEN") in self.accepted
        self.send_response(200 if ok else 401)
        self.end_headers()
        answer = {"name": "blueprint", "revoked": False, "active": True, "scopes": self.scopes, "expires_at": self.expires_at}
        self.wfile.write(json.dumps(answer).encode())

    def do_DELETE(self) -> None:  # noqa: N802 (the stdlib's name)
        token = self.headers.get("PRIVATE-TOKEN")
        ok = self.path == "/api/v4/personal_access_tokens/self" and token in self.accepted
        if ok:
            self.accepted.discard(str(token))
        self.send_response(204 if ok else 401)
        self.end_headers()
        if not ok:
            self.wfile.write(b'{"message":"401 Unauthorized"}')

    def log_message(self, *_: Any) -> None:
        return


@pytest.fixture
def gitlab(tmp_path: Path) -> Iterator[type[TokenApi]]:
    handler: type[TokenApi] = type("Api", (TokenApi,), {"accepted": set()})
    with serving(handler) as url:
        handler.url = url
        handler.ca_file = str(tmp_path / "ca.crt")
        Path(handler.ca_file).write_text("-----BEGIN CERTIFICATE-----\n")
        yield handler


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Fake kind and kubectl on PATH; kubectl records its argv and stdin."""
    fake_command(tmp_path / "bin", "kind", 'echo "apiVersion: v1"\n')
    fake_command(tmp_path / "bin", "kubectl", f'echo "$*" > {tmp_path}/argv\ncat > {tmp_path}/stdin\necho created\n')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    return tmp_path


def props(gitlab: type[TokenApi], **extra: Any) -> dict[str, Any]:
    return {
        "gitlab_url": gitlab.url,
        "ca_file": gitlab.ca_file,
        "token": TOKEN,
        "kind_cluster_name": "blueprint",
        "namespace": "gitlab",
        "toolbox": "gitlab-toolbox",
        "scopes": SCOPES,
        "expires_days": 364.0,
        "wait_seconds": 2.0,
        "provider_version": PROVIDER_VERSION,
        **extra,
    }


def without_ca(gitlab: type[TokenApi]) -> dict[str, Any]:
    """GitLab over HTTPS, as phase2 reaches it, with the CA file it is checked against deleted."""
    Path(gitlab.ca_file).unlink()
    return props(gitlab, gitlab_url=gitlab.url.replace("http://", "https://"))


pytestmark = pytest.mark.usefixtures("clock")  # every wait on a clock the test drives


@pytest.fixture
def provider() -> GitLabTokenProvider:
    return as_engine_loads(GitLabTokenProvider())


def test_the_seed_script_reaches_the_toolbox_on_stdin_never_in_argv(
    gitlab: type[TokenApi], tools: Path, provider: GitLabTokenProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("providers.gitlab_token.wait_until_accepted", lambda *_: None)
    provider.create(props(gitlab))
    argv = (tools / "argv").read_text()
    assert "-n gitlab exec -i deploy/gitlab-toolbox -c toolbox -- gitlab-rails runner -" in argv
    assert TOKEN not in argv
    assert f'value = "{TOKEN}"' in (tools / "stdin").read_text()


def test_an_accepted_token_is_not_seeded_again(gitlab: type[TokenApi], tools: Path, provider: GitLabTokenProvider) -> None:
    gitlab.accepted.add(TOKEN)
    provider.create(props(gitlab))
    assert not (tools / "argv").exists()


def test_a_token_gitlab_refuses_shows_as_a_change(gitlab: type[TokenApi], provider: GitLabTokenProvider) -> None:
    assert provider.diff("root/blueprint", props(gitlab), props(gitlab)).changes is True
    gitlab.accepted.add(TOKEN)
    assert accepted(props(gitlab)) is True


def test_refresh_drops_a_token_gitlab_refuses(gitlab: type[TokenApi], provider: GitLabTokenProvider) -> None:
    assert provider.read("root/blueprint", props(gitlab)).id is None


def test_a_gitlab_that_never_answers_fails_naming_the_hosts_line(
    gitlab: type[TokenApi], tools: Path, provider: GitLabTokenProvider, clock: FakeClock
) -> None:
    with pytest.raises(GitLabTokenError) as failed:
        provider.create(props(gitlab, gitlab_url=f"http://127.0.0.1:{free_port()}"))
    assert "did not accept the seeded token blueprint within 2s (no answer)" in str(failed.value)
    assert "add '127.0.0.1 127.0.0.1' to /etc/hosts" in str(failed.value)
    assert clock.waited == pytest.approx(2.0)


def test_diff_without_the_ca_file_reports_no_change(gitlab: type[TokenApi], provider: GitLabTokenProvider) -> None:
    inputs = without_ca(gitlab)
    assert provider.diff("root/blueprint", inputs, inputs).changes is False


def test_refresh_without_the_ca_file_keeps_the_token(gitlab: type[TokenApi], provider: GitLabTokenProvider) -> None:
    inputs = without_ca(gitlab)
    result = provider.read("root/blueprint", inputs)
    assert (result.id, result.outs) == ("root/blueprint", inputs)


@pytest.mark.parametrize("call", ["create", "update"])
def test_seeding_without_the_ca_file_fails_at_once_saying_how_to_restore_it(
    gitlab: type[TokenApi], tools: Path, provider: GitLabTokenProvider, call: str
) -> None:
    inputs = without_ca(gitlab)
    with pytest.raises(GitLabTokenError) as failed:
        provider.create(inputs) if call == "create" else provider.update("root/blueprint", inputs, inputs)
    assert not (tools / "argv").exists(), "seeded although GitLab's answer could not be checked"
    assert f"pulumi stack output -s phase2 caCertPem > {gitlab.ca_file}" in str(failed.value)
    assert TOKEN not in str(failed.value)


def test_a_failed_seed_never_shows_the_token(gitlab: type[TokenApi], tools: Path, provider: GitLabTokenProvider) -> None:
    fake_command(tools / "bin", "kubectl", f'echo "undefined method for {TOKEN}" >&2\nexit 1\n')
    with pytest.raises(GitLabTokenError) as failed:
        provider.create(props(gitlab))
    assert TOKEN not in str(failed.value)
    assert "[secret]" in str(failed.value)


def test_the_seed_script_is_idempotent_ruby() -> None:
    script = seed_script(TOKEN, SCOPES, 364)
    assert "PersonalAccessToken.find_by_token(value)" in script
    assert "lasting = token&.active? && token.expires_at.present? && token.expires_at > Date.parse(" in script
    assert "if lasting && token.scopes.map(&:to_s).sort == scopes.sort" in script
    assert 'scopes = ["api", "create_runner", "admin_mode"]' in script
    assert "scopes: scopes, expires_at: 364.days.from_now" in script


def test_the_admin_token_has_the_old_blueprints_scopes_and_creates_runners() -> None:
    """Users script against it and `docker login` with it, as they did with the old blueprint's token."""
    old_blueprints = {"api", "read_api", "read_repository", "write_repository", "read_registry", "write_registry", "read_user", "sudo"}
    scopes = GitLabTokenArgs(gitlab_url="https://g", ca_file="c", token="t", kind_cluster_name="k", namespace="n", toolbox="x").scopes
    assert set(scopes) >= old_blueprints | {"create_runner"}


def test_the_admin_token_asks_for_the_admin_mode_scope() -> None:
    """With the instance's Admin Mode on, admin API calls need it; with it off, it changes nothing."""
    assert (
        "admin_mode"
        in GitLabTokenArgs(gitlab_url="https://g", ca_file="c", token="t", kind_cluster_name="k", namespace="n", toolbox="x").scopes
    )


def test_a_token_without_a_scope_the_inputs_name_shows_as_a_change(gitlab: type[TokenApi], provider: GitLabTokenProvider) -> None:
    """GitLab's database restored from before the scopes grew: its token has the value but not every
    scope, so the next `up` seeds it again, and the seed script gives it the scopes in place."""
    gitlab.accepted.add(TOKEN)
    gitlab.scopes = ["api", "create_runner"]
    assert provider.diff("root/blueprint", props(gitlab), props(gitlab)).changes is True
    gitlab.scopes = list(SCOPES)
    assert provider.diff("root/blueprint", props(gitlab), props(gitlab)).changes is False


def test_the_seed_script_gives_an_active_token_the_inputs_scopes() -> None:
    script = seed_script(TOKEN, SCOPES, 364)
    assert 'elsif lasting\n  token.update!(scopes: scopes)\n  puts "updated"' in script


def test_a_new_token_revokes_roots_other_blueprint_tokens() -> None:
    """A rotated value leaves no live stale token (PersonalAccessToken#revoke!)."""
    script = seed_script(TOKEN, SCOPES, 364)
    created = script[script.index("token.save!") : script.index('puts "created"')]
    assert 'name = "blueprint"' in script
    assert "user.personal_access_tokens.active.where(name: name).where.not(id: token.id).each(&:revoke!)" in created


def test_gitlab_is_asked_without_the_environments_proxy(gitlab: type[TokenApi], monkeypatch: pytest.MonkeyPatch) -> None:
    """GitLab is on the laptop's gateway: a proxy set for the rest of the world does not apply."""
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{free_port()}")
    gitlab.accepted.add(TOKEN)
    assert accepted(props(gitlab)) is True


def glab_props(gitlab: type[TokenApi]) -> dict[str, Any]:
    return props(gitlab, name=GLAB_TOKEN_NAME, scopes=["api"], expires_days=30.0)


def test_the_admin_tokens_delete_leaves_it_in_gitlab(gitlab: type[TokenApi], provider: GitLabTokenProvider) -> None:
    gitlab.accepted.add(TOKEN)
    provider.delete("root/blueprint", props(gitlab))
    assert TOKEN in gitlab.accepted


def test_a_token_in_its_last_week_counts_as_refused_so_an_up_renews_it(gitlab: type[TokenApi]) -> None:
    gitlab.accepted.add(TOKEN)
    gitlab.expires_at = "2026-03-08"
    assert accepted(glab_props(gitlab), today=date(2026, 3, 1)) is False
    assert accepted(glab_props(gitlab), today=date(2026, 2, 28)) is True


def test_a_lifetime_the_renewal_would_never_leave_is_refused() -> None:
    with pytest.raises(ValueError, match="expires_days must be more than 7"):
        GitLabTokenArgs(gitlab_url="https://g", ca_file="c", token="t", kind_cluster_name="k", namespace="n", toolbox="x", expires_days=7)


@pytest.fixture
def east_of_utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The laptop at UTC+14, its clock at 2026-12-01 20:00 UTC: already 2 December there."""
    import time

    monkeypatch.setenv("TZ", "Etc/GMT-14")
    time.tzset()
    monkeypatch.setattr("time.time", lambda: 1796155200.0)  # 2026-12-01T20:00:00Z
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("east_of_utc")
def test_renewal_counts_days_in_utc_as_gitlab_does(gitlab: type[TokenApi]) -> None:
    """On the day a token enters its renewal window in local time but not in UTC, Python and the seed
    script agree: GitLab's dates are UTC dates, so the token still counts as lasting."""
    gitlab.accepted.add(TOKEN)
    gitlab.expires_at = "2026-12-09"  # UTC today + 8: outside the 7-day window
    assert accepted(glab_props(gitlab)) is True
    gitlab.expires_at = "2026-12-08"  # UTC today + 7: inside it
    assert accepted(glab_props(gitlab)) is False


@pytest.mark.usefixtures("east_of_utc")
def test_the_seed_script_renews_by_the_same_utc_date_python_checks() -> None:
    script = seed_script(TOKEN, ["api"], 30)
    assert 'token.expires_at > Date.parse("2026-12-08")' in script
    assert "from_now" not in script.split("lasting =", 1)[1].split("\n", 1)[0]


def test_a_token_gitlab_keeps_refusing_fails_without_blaming_etc_hosts(
    gitlab: type[TokenApi], tools: Path, provider: GitLabTokenProvider
) -> None:
    """GitLab answered (401): the laptop reaches it, so /etc/hosts is not the fix."""
    with pytest.raises(GitLabTokenError) as failed:
        provider.create(props(gitlab))
    assert "(refused)" in str(failed.value)
    assert "/etc/hosts" not in str(failed.value)


def test_a_gitlab_that_never_answers_through_its_forward_names_the_forward_not_the_hosts_line(
    gitlab: type[TokenApi], tools: Path, provider: GitLabTokenProvider, clock: FakeClock
) -> None:
    """An existing cluster: GitLab is reached through a port-forward, so no /etc/hosts line helps."""
    forward = {"context": "team", "namespace": "gitlab", "service": "gitlab-envoy", "port": 443}
    with pytest.raises(GitLabTokenError) as failed:
        provider.create(props(gitlab, gitlab_url="https://gitlab.platform.example.com", forward=forward, kube_context="team"))
    assert "port-forward to service gitlab/gitlab-envoy port 443 of context team" in str(failed.value)
    assert "/etc/hosts" not in str(failed.value)
    assert "--context team" in (tools / "argv").read_text()
