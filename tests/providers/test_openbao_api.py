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
