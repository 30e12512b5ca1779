"""The OpenBao client's reading of answers: what is not OpenBao's answer (another program at its
address, a body of another shape) is one error naming the address, never a traceback."""

from __future__ import annotations

import json
from typing import Any

import pytest

from providers.openbao_api import OpenBao
from providers.openbao_errors import OpenBaoInitError

ADDRESS = "http://127.0.0.1:8200"


class Answer:
    """What `requests` gives the client: a status, a body, its JSON."""

    def __init__(self, status: int, body: bytes) -> None:
        self.status_code, self.content, self.text = status, body, body.decode()

    def json(self) -> Any:
        return json.loads(self.content)


def bao() -> OpenBao:
    return OpenBao({"address": ADDRESS, "http_timeout": 1})


def test_a_refusal_whose_json_is_not_openbaos_is_an_openbao_error_naming_the_status() -> None:
    with pytest.raises(OpenBaoInitError, match=rf"^OpenBao at {ADDRESS} refused writing sys/policies/acl/x \(HTTP 400: HTTP 400\)$"):
        bao().done(Answer(400, b'["unexpected"]'), "writing sys/policies/acl/x")


@pytest.mark.parametrize("body", [b"<html>hello</html>", b'["a", "list"]'], ids=["html", "a JSON list"])
def test_a_success_that_is_not_openbaos_json_is_an_openbao_error_naming_the_address(body: bytes) -> None:
    """Another program answering on openbaoPort (an HTML page, a proxy's banner)."""
    with pytest.raises(OpenBaoInitError) as failed:
        bao().done(Answer(200, body), "reading sys/mounts")
    assert str(failed.value) == (
        f"the answer to reading sys/mounts from {ADDRESS} (HTTP 200) is not OpenBao's JSON: is another program answering at that address?"
    )


def test_a_login_answer_without_a_token_is_an_openbao_error_that_shows_no_password() -> None:
    class Login(OpenBao):
        def request(self, method: str, path: str, token: str | None = None, body: dict[str, Any] | None = None) -> Any:
            return Answer(200, b'{"auth": null}')

    with pytest.raises(OpenBaoInitError, match="the answer to the login from .* is not OpenBao's JSON") as failed:
        Login({"address": ADDRESS, "http_timeout": 1}).login("blueprint", "s3cret-password", "/x/password")
    assert "s3cret-password" not in str(failed.value)


@pytest.mark.parametrize("status", [403, 500])
def test_a_revoke_openbao_does_not_confirm_is_an_error_naming_the_token_left_valid(status: int) -> None:
    """A failed revoke is noticed: the admin's token would otherwise stay valid for hours, unknown to anyone."""

    class Refusing(OpenBao):
        def request(self, method: str, path: str, token: str | None = None, body: dict[str, Any] | None = None) -> Any:
            assert (method, path) == ("POST", "auth/token/revoke-self")
            return Answer(status, b'{"errors": ["permission denied"]}')

    with pytest.raises(OpenBaoInitError, match=r"did not revoke the token of user admin .* stays valid") as failed:
        Refusing({"address": ADDRESS, "http_timeout": 1}).revoke("s.the-admin-token", "admin")
    assert "s.the-admin-token" not in str(failed.value)
    assert "permission denied" in str(failed.value)


def test_a_revoke_is_sent_through_the_session_of_every_other_call() -> None:
    """Not a bare request: the same proxy-less session (providers/http.py) as the login before it."""
    sent: list[tuple[str, str]] = []

    class Session:
        verify = True

        def request(self, method: str, url: str, **_request: Any) -> Answer:
            sent.append((method, url))
            return Answer(204, b"")

    client = OpenBao({"address": ADDRESS, "http_timeout": 1})
    client.__dict__["_session"] = Session()  # the cached session every call of this client uses
    client.revoke("s.token", "blueprint")
    assert sent == [("POST", f"{ADDRESS}/v1/auth/token/revoke-self")]
