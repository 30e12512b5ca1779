"""glab's token provider, loaded as the engine loads it, against a local stand-in for GitLab's token
API: GitLab makes each token (doc/api/user_tokens.md), so a renewal, a revoke or a lost file always
ends in a new value, and the old one is revoked."""

from __future__ import annotations

import http.server
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from providers.gitlab_token import GLAB_TOKEN_NAME, PROVIDER_VERSION, GitLabTokenError, GlabTokenProvider
from tests.providers.engine import as_engine_loads, free_port
from tests.providers.gitlab_stub import serving

ADMIN = "glpat-admin-0123456789abcdefghij"


class Api(http.server.BaseHTTPRequestHandler):
    """Root is user 1; `tokens` maps each value GitLab made to its row (id, name, scopes, expires_at,
    active). The admin token makes, lists and revokes; a token reads and revokes itself."""

    tokens: dict[str, dict[str, Any]] = {}
    posted: list[dict[str, Any]] = []
    settings: dict[str, Any] = {}
    fail_post = False
    url = ""
    ca_file = ""

    def _answer(self, status: int, body: Any = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        if body is not None:
            self.wfile.write(json.dumps(body).encode())

    def _caller(self) -> str:
        return str(self.headers.get("PRIVATE-TOKEN"))

    def _own(self) -> dict[str, Any] | None:
        row = self.tokens.get(self._caller())
        return row if row and row["active"] else None

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        path, query = urlsplit(self.path).path, parse_qs(urlsplit(self.path).query)
        if path == "/api/v4/user" and self._caller() == ADMIN:
            return self._answer(200, {"id": 1, "username": "root"})
        if path == "/api/v4/personal_access_tokens/self" and (row := self._own()):
            return self._answer(200, row)
        if path == "/api/v4/personal_access_tokens" and self._caller() == ADMIN and query.get("state") == ["active"]:
            return self._answer(200, [row for row in self.tokens.values() if row["active"]])
        return self._answer(401, {"message": "401 Unauthorized"})

    def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path != "/api/v4/users/1/personal_access_tokens" or self._caller() != ADMIN:
            return self._answer(401, {"message": "401 Unauthorized"})
        if self.fail_post:
            return self._answer(500, {"message": "500 Internal Server Error"})
        self.posted.append(body)
        made = {
            "id": len(self.tokens) + 10,
            "name": body["name"],
            "scopes": body["scopes"],
            "expires_at": body["expires_at"],
            "active": True,
        }
        value = f"glpat-made-{made['id']}-abcdefghijklmnop"
        self.tokens[value] = made
        return self._answer(201, {**made, "token": value})

    def do_PUT(self) -> None:  # noqa: N802 (the stdlib's name)
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path != "/api/v4/application/settings" or self._caller() != ADMIN:
            return self._answer(401, {"message": "401 Unauthorized"})
        self.settings.update(body)
        return self._answer(200, self.settings)

    def do_DELETE(self) -> None:  # noqa: N802 (the stdlib's name)
        path = urlsplit(self.path).path
        if path == "/api/v4/personal_access_tokens/self" and (row := self._own()):
            row["active"] = False
            return self._answer(204)
        by_id = [row for row in self.tokens.values() if path == f"/api/v4/personal_access_tokens/{row['id']}"]
        if by_id and self._caller() == ADMIN:
            by_id[0]["active"] = False
            return self._answer(204)
        return self._answer(401, {"message": "401 Unauthorized"})

    def log_message(self, *_: Any) -> None:
        return


pytestmark = pytest.mark.usefixtures("clock")  # every retry on a clock the test drives (providers/poll.py)


@pytest.fixture
def gitlab(tmp_path: Path) -> Iterator[type[Api]]:
    handler: type[Api] = type("Stub", (Api,), {"tokens": {}, "posted": [], "settings": {}})
    with serving(handler) as url:
        handler.url = url
        handler.ca_file = str(tmp_path / "ca.crt")
        Path(handler.ca_file).write_text("-----BEGIN CERTIFICATE-----\n")
        yield handler


def inputs(gitlab: type[Api], tmp_path: Path) -> dict[str, Any]:
    return {
        "gitlab_url": gitlab.url,
        "ca_file": gitlab.ca_file,
        "token": ADMIN,
        "path": str(tmp_path / "secrets" / "gitlab-glab-token"),
        "name": GLAB_TOKEN_NAME,
        "scopes": ["api"],
        "expires_days": 30,
        "provider_version": PROVIDER_VERSION,
    }


@pytest.fixture
def provider() -> GlabTokenProvider:
    return as_engine_loads(GlabTokenProvider())


def created(provider: GlabTokenProvider, props: dict[str, Any]) -> dict[str, Any]:
    outs = provider.create(props).outs
    assert outs is not None
    return outs


def updated(provider: GlabTokenProvider, olds: dict[str, Any], news: dict[str, Any]) -> dict[str, Any]:
    outs = provider.update("10", olds, news).outs
    assert outs is not None
    return outs


def live(gitlab: type[Api]) -> set[str]:
    return {value for value, row in gitlab.tokens.items() if row["active"]}


def test_gitlab_makes_glabs_token_api_scope_30_days_into_a_0600_file(
    gitlab: type[Api], tmp_path: Path, provider: GlabTokenProvider
) -> None:
    outs = created(provider, inputs(gitlab, tmp_path))
    path = Path(outs["path"])
    assert path.read_text() == outs["value"] + "\n"
    assert path.stat().st_mode & 0o777 == 0o600
    assert live(gitlab) == {outs["value"]}
    expires = (datetime.now(UTC).date() + timedelta(days=30)).isoformat()
    assert gitlab.posted == [{"name": GLAB_TOKEN_NAME, "scopes": ["api"], "expires_at": expires}]


def test_a_destroy_revokes_glabs_token_and_removes_its_file(gitlab: type[Api], tmp_path: Path, provider: GlabTokenProvider) -> None:
    outs = created(provider, inputs(gitlab, tmp_path))
    provider.delete("10", outs)
    assert live(gitlab) == set()
    assert not Path(outs["path"]).exists()


def test_the_up_after_a_destroy_that_kept_the_data_gets_a_new_value(gitlab: type[Api], tmp_path: Path, provider: GlabTokenProvider) -> None:
    first = created(provider, inputs(gitlab, tmp_path))
    provider.delete("10", first)
    second = created(provider, inputs(gitlab, tmp_path))
    assert second["value"] != first["value"]
    assert live(gitlab) == {second["value"]}


def test_a_token_that_lasts_and_has_its_file_is_kept(gitlab: type[Api], tmp_path: Path, provider: GlabTokenProvider) -> None:
    outs = created(provider, inputs(gitlab, tmp_path))
    assert provider.diff("10", outs, inputs(gitlab, tmp_path)).changes is False
    assert updated(provider, outs, inputs(gitlab, tmp_path))["value"] == outs["value"]
    assert gitlab.posted[1:] == []


def test_a_token_in_its_last_week_is_replaced_by_a_new_one_and_revoked(
    gitlab: type[Api], tmp_path: Path, provider: GlabTokenProvider
) -> None:
    old = created(provider, inputs(gitlab, tmp_path))
    gitlab.tokens[old["value"]]["expires_at"] = (datetime.now(UTC).date() + timedelta(days=7)).isoformat()
    assert provider.diff("10", old, inputs(gitlab, tmp_path)).changes is True
    new = updated(provider, old, inputs(gitlab, tmp_path))
    assert new["value"] != old["value"]
    assert live(gitlab) == {new["value"]}
    assert Path(new["path"]).read_text().strip() == new["value"]


def test_a_removed_file_gets_a_new_token_never_the_old_value_back(gitlab: type[Api], tmp_path: Path, provider: GlabTokenProvider) -> None:
    old = created(provider, inputs(gitlab, tmp_path))
    Path(old["path"]).unlink()
    assert provider.diff("10", old, inputs(gitlab, tmp_path)).changes is True
    new = updated(provider, old, inputs(gitlab, tmp_path))
    assert new["value"] != old["value"]
    assert live(gitlab) == {new["value"]}


def test_refresh_drops_a_token_gitlab_refuses(gitlab: type[Api], tmp_path: Path, provider: GlabTokenProvider) -> None:
    outs = created(provider, inputs(gitlab, tmp_path))
    gitlab.tokens[outs["value"]]["active"] = False
    assert provider.read("10", outs).id is None


def test_a_token_a_crash_left_unrecorded_is_revoked_by_the_next_one(gitlab: type[Api], tmp_path: Path, provider: GlabTokenProvider) -> None:
    lost = created(provider, inputs(gitlab, tmp_path))  # made, then the state never recorded it
    made = created(provider, inputs(gitlab, tmp_path))
    assert live(gitlab) == {made["value"]} != {lost["value"]}


def test_deleting_a_token_gitlab_refuses_already_succeeds(gitlab: type[Api], tmp_path: Path, provider: GlabTokenProvider) -> None:
    """GitLab's data wiped, or the token expired: nothing is left to revoke."""
    outs = created(provider, inputs(gitlab, tmp_path))
    gitlab.tokens.clear()
    provider.delete("10", outs)
    assert not Path(outs["path"]).exists()


def test_deleting_while_gitlab_does_not_answer_fails_saying_so(gitlab: type[Api], tmp_path: Path, provider: GlabTokenProvider) -> None:
    outs = created(provider, inputs(gitlab, tmp_path))
    away = {**outs, "gitlab_url": f"http://127.0.0.1:{free_port()}"}
    with pytest.raises(GitLabTokenError, match="could not revoke the token blueprint-glab") as failed:
        provider.delete("10", away)
    assert outs["value"] not in str(failed.value)
    assert Path(outs["path"]).exists()  # kept with its live token: the next destroy revokes it


def test_a_failed_make_names_neither_token(gitlab: type[Api], tmp_path: Path, provider: GlabTokenProvider) -> None:
    gitlab.fail_post = True
    with pytest.raises(GitLabTokenError, match="could not make the token blueprint-glab") as failed:
        provider.create(inputs(gitlab, tmp_path))
    assert ADMIN not in str(failed.value)


def test_glabs_value_is_made_by_gitlab_not_kept_as_a_host_secret() -> None:
    from tests.plans import planned

    plan = planned("phase2")
    token = plan.one("pulumi-python:dynamic/gitlab:GlabToken", "gitlab-glab-token")["inputs"]
    assert (token["name"], token["scopes"], token["expires_days"], token["token"]) == (GLAB_TOKEN_NAME, ["api"], 30, "[secret]")
    assert [r["name"] for r in plan.resources if "glab" in r["name"] and r["type"].endswith(":HostSecret")] == []


def test_making_glabs_token_turns_admin_mode_on_so_it_reaches_no_admin_api(
    gitlab: type[Api], tmp_path: Path, provider: GlabTokenProvider
) -> None:
    """glab's token is root's: with Admin Mode off (GitLab's default) its `api` scope alone would reach
    the admin API; with it on, only a token with `admin_mode` (the admin token's) does."""
    created(provider, inputs(gitlab, tmp_path))
    assert gitlab.settings == {"admin_mode": True}
