"""On an existing cluster the providers reach OpenBao and GitLab through `kubectl port-forward`
(providers/cluster_access.py), never a port of 127.0.0.1 named in their inputs: a real `bao` (over
TLS, with OpenBao's certificate) and the GitLab stub behind a fake `kubectl` that forwards as
kubectl does, printing its "Forwarding from 127.0.0.1:<port> -> <port>" line first.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from cli.status import probe
from providers.cluster_access import CONTEXT_KEY, TARGET_KEY, ForwardError, Target, forwarded
from providers.gitlab_api import GitLab
from providers.openbao_kv import PROVIDER_VERSION as KV_VERSION
from providers.openbao_kv import OpenBaoKvProvider, current
from stacks import preflight
from tests.providers.bao_tls import SERVER_NAME
from tests.providers.engine import BaoServer, as_engine_loads, init_inputs, init_provider
from tests.providers.gitlab_stub import TOKEN, GitLabState, gitlab_stub
from tests.providers.shared_bao import shared_server

CONTEXT = "team-cluster"
IN_CLUSTER = "https://openbao.openbao.svc.cluster.local:8200"
"""The address phase2 gives the providers on an existing cluster: nothing on this machine answers there."""
OPENBAO = Target(context=CONTEXT, namespace="openbao", service="openbao", port=8200)

FAKE_KUBECTL = """\
#!{python}
import json, socket, sys, threading
args = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(json.dumps({{"pid": __import__("os").getpid(), "args": args}}) + "\\n")
if "port-forward" in args:
    if {refuse!r}:
        print({refuse!r}, file=sys.stderr)
        sys.exit(1)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    print(f"Forwarding from 127.0.0.1:{{port}} -> {{args[-1].lstrip(':')}}", flush=True)

    def pipe(source, sink):
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    while True:
        client, _ = listener.accept()
        print(f"Handling connection for {{port}}", flush=True)
        server = socket.create_connection(("127.0.0.1", {upstream}))
        threading.Thread(target=pipe, args=(client, server), daemon=True).start()
        threading.Thread(target=pipe, args=(server, client), daemon=True).start()
elif "config" in args and "view" in args:
    print("apiVersion: v1\\nkind: Config\\ncurrent-context: " + args[-1])
elif " ".join(args[-4:-2]) == "rollout status" or "rollout" in args:
    pass
elif "get" in args:
    print("Error from server (NotFound)", file=sys.stderr)
    sys.exit(1)
"""


def fake_kubectl(folder: Path, monkeypatch: pytest.MonkeyPatch, *, upstream: int = 9, refuse: str = "") -> Path:
    """A `kubectl` first on PATH that forwards to 127.0.0.1:`upstream` (or refuses with `refuse`), and logs each call."""
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "calls.jsonl"
    script = folder / "kubectl"
    script.write_text(FAKE_KUBECTL.format(python=sys.executable, log=str(log), upstream=upstream, refuse=refuse))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    return log


def calls(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def forwards(log: Path) -> list[dict[str, Any]]:
    return [call for call in calls(log) if "port-forward" in call["args"]]


def ended(pid: int, within: float = 60.0) -> bool:
    """Whether process `pid` is gone (or a zombie) within `within` seconds: a generous bound, never a margin."""
    deadline = time.monotonic() + within
    collected = -float("inf")
    while time.monotonic() < deadline:
        if time.monotonic() - collected >= 2:
            # What a cycle keeps is finalised by a collection: one each 2 s, not one each poll (a full
            # collection of an xdist worker's heap costs it far more CPU than the poll itself).
            gc.collect()
            collected = time.monotonic()
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":
            return True
        time.sleep(0.2)
    return False


@pytest.fixture(scope="session")
def bao(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BaoServer]:
    """The TLS server this process shares with other modules (tests/providers/shared_bao.py): each test
    converges it (which changes nothing in a converged vault) and writes only a path of its own."""
    yield from shared_server(tmp_path_factory, tls=True)


def test_an_up_reaches_openbao_through_a_port_forward_of_its_service(
    bao: BaoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OpenBao's check, initialisation and a KV write and read, with no 127.0.0.1 in the inputs: TLS end
    to end (OpenBao's certificate checked for its name), through `kubectl --context <ctx> port-forward`."""
    log = fake_kubectl(tmp_path / "bin", monkeypatch, upstream=int(urlsplit(bao.address).port or 0))
    reach = {TARGET_KEY: OPENBAO.wire()}
    init = init_inputs(bao, tmp_path, address=IN_CLUSTER, **reach, **{CONTEXT_KEY: CONTEXT})
    assert "127.0.0.1" not in json.dumps(init)
    init_provider().create(init)
    kv = {
        "address": IN_CLUSTER, "ca_file": init["ca_file"], "server_name": SERVER_NAME, "username": "blueprint",
        "password": bao.writer_password, "mount": "secret", "path": "forwarded/check", "data": {"password": "s3cret"},
        "provider_version": KV_VERSION, **reach,
    }  # fmt: skip
    as_engine_loads(OpenBaoKvProvider()).create(kv)
    assert current(kv) == {"password": "s3cret"}
    made = forwards(log)
    assert made, calls(log)
    assert all(
        call["args"] == ["--context", CONTEXT, "--namespace", "openbao", "port-forward", "--address", "127.0.0.1", "svc/openbao", ":8200"]
        for call in made
    )


def test_the_rollout_wait_uses_the_contexts_kubeconfig(bao: BaoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No `kind` on an existing cluster: kubectl resolves the context's kubeconfig, as the user's KUBECONFIG says."""
    log = fake_kubectl(tmp_path / "bin", monkeypatch, upstream=int(urlsplit(bao.address).port or 0))
    init_provider().create(init_inputs(bao, tmp_path, address=IN_CLUSTER, **{TARGET_KEY: OPENBAO.wire(), CONTEXT_KEY: CONTEXT}))
    views = [call["args"] for call in calls(log) if "view" in call["args"]]
    assert ["config", "view", "--raw", "--minify", "--flatten", "--context", CONTEXT] in views


def test_a_forward_stops_once_its_caller_is_done(bao: BaoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No kubectl is left running behind a provider's call: the forward ends with the session that used it."""
    log = fake_kubectl(tmp_path / "bin", monkeypatch, upstream=int(urlsplit(bao.address).port or 0))
    kv = {
        "address": IN_CLUSTER, "ca_file": str(bao.pki.ca_file if bao.pki else ""), "server_name": SERVER_NAME,
        "username": "blueprint", "password": bao.writer_password, "mount": "secret", "path": "forwarded/gone",
        TARGET_KEY: OPENBAO.wire(),
    }  # fmt: skip
    init_provider().create(init_inputs(bao, tmp_path, address=IN_CLUSTER, **{TARGET_KEY: OPENBAO.wire(), CONTEXT_KEY: CONTEXT}))
    current(kv)
    pids = [int(str(call["pid"])) for call in forwards(log)]
    assert pids
    assert all(ended(pid) for pid in pids)


def test_gitlab_is_called_through_a_port_forward_of_envoys_service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before any DNS record names gitlab.<domain>: the name need not resolve, the forward reaches Envoy's Service."""
    state = GitLabState()
    with gitlab_stub(state) as url:
        log = fake_kubectl(tmp_path / "bin", monkeypatch, upstream=int(urlsplit(url).port or 0))
        envoy = Target(context=CONTEXT, namespace="gitlab", service="gitlab-envoy", port=443)
        props = {"gitlab_url": "http://gitlab.unresolvable.invalid", "token": TOKEN, "ca_file": "", TARGET_KEY: envoy.wire()}
        assert GitLab.of(props, pauses=()).get("/user")["username"] == "root"
    assert [call["args"][-2:] for call in forwards(log)] == [["svc/gitlab-envoy", ":443"]]


def test_a_refused_forward_says_what_kubectl_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_kubectl(tmp_path / "bin", monkeypatch, refuse='error: context "team-cluster" does not exist')
    with pytest.raises(ForwardError) as refused, forwarded(OPENBAO):
        pass
    assert 'context "team-cluster" does not exist' in str(refused.value)
    assert "service openbao/openbao port 8200 of context team-cluster" in str(refused.value)


def test_without_kubectl_the_forward_says_to_install_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(ForwardError, match="install kubectl"), forwarded(OPENBAO):
        pass


def test_phase3s_preflight_checks_openbao_through_the_forward(bao: BaoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """phase3 on an existing cluster checks the platform before it starts, through the same forwards."""
    fake_kubectl(tmp_path / "bin", monkeypatch, upstream=int(urlsplit(bao.address).port or 0))
    init_provider().create(init_inputs(bao, tmp_path, address=IN_CLUSTER, **{TARGET_KEY: OPENBAO.wire(), CONTEXT_KEY: CONTEXT}))
    waits = preflight.Waits(attempts=1, pause=0.0, runner_wait=0.0, runner_poll=0.0)
    tls = {"ca_file": str(bao.pki.ca_file if bao.pki else ""), "server_name": SERVER_NAME}
    assert preflight.check_openbao(IN_CLUSTER, waits=waits, **tls, forward=OPENBAO) is None


def test_status_asks_openbao_through_the_forward(bao: BaoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`blueprint status` (and destroy's "does GitLab answer?") on an existing cluster: through phase2's forwards."""
    fake_kubectl(tmp_path / "bin", monkeypatch, upstream=int(urlsplit(bao.address).port or 0))
    init_provider().create(init_inputs(bao, tmp_path, address=IN_CLUSTER, **{TARGET_KEY: OPENBAO.wire(), CONTEXT_KEY: CONTEXT}))
    ca_file = str(bao.pki.ca_file if bao.pki else "")
    assert probe(f"{IN_CLUSTER}/v1/sys/seal-status", ca_file, {}, server_name=SERVER_NAME, forward=OPENBAO.wire()) == "unsealed"


DEAD_POD_KUBECTL = """\
#!{python}
# A port-forward whose pod went away: kubectl keeps listening and fails each connection at once
# (kubernetes/kubernetes#67059, kubernetes/kubectl#686: it does not exit).
import socket, sys
with open({starts!r}, "a") as starts:
    starts.write("start\\n")
listener = socket.create_server(("127.0.0.1", 0))
print(f"Forwarding from 127.0.0.1:{{listener.getsockname()[1]}} -> 443", flush=True)
while True:
    client, _ = listener.accept()
    print("E portforward.go: error forwarding port 443 to pod abc: container not found", file=sys.stderr, flush=True)
    client.close()
"""


def test_a_forward_whose_pod_went_away_is_started_again_at_the_next_attempt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """kubectl outlives its pod; the Service's next pod (a rollout, a drained node) is reached by a new forward."""
    import requests

    from providers import http

    starts = tmp_path / "starts"
    script = tmp_path / "kubectl"
    script.write_text(DEAD_POD_KUBECTL.format(python=sys.executable, starts=str(starts)))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    target = Target(context=CONTEXT, namespace="gitlab", service="gitlab-envoy", port=443)
    with http.session(forward=target) as asking:
        for _ in range(3):
            with pytest.raises(requests.ConnectionError):
                asking.get("http://gitlab.platform.example.com/api/v4/version", timeout=30)
    assert starts.read_text().splitlines() == ["start"] * 3


HOLDER = """\
import sys, time
from providers.cluster_access import Target, forwarded
with forwarded(Target(context="team-cluster", namespace="openbao", service="openbao", port=8200)) as port:
    print(port, flush=True)
    time.sleep(600)
"""
"""A provider host holding a forward, until it is killed."""


def test_kubectl_ends_when_the_process_that_started_it_is_killed_outright(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGKILL runs no finalizer: without prctl's parent-death signal, kubectl would live on, an open
    tunnel into the cluster on 127.0.0.1 (Linux; elsewhere documented in docs/reference/credentials.md)."""
    import signal
    import subprocess

    log = fake_kubectl(tmp_path / "bin", monkeypatch)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], cwd=Path(__file__).parents[2], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip().isdigit()
        [kubectl] = [call["pid"] for call in forwards(log)]
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        holder.stdout and holder.stdout.close()
    gone = ended(kubectl)
    if not gone:
        os.kill(kubectl, signal.SIGKILL)  # the orphan this test found, ended
    assert gone


def test_a_forwards_error_reader_ends_quietly_when_the_forward_closes_its_pipe() -> None:
    # The forward's end closes kubectl's pipes, maybe while the thread reading its errors still reads:
    # that ends the thread, never an "Exception in thread" on the user's terminal.
    import io

    from providers import cluster_access

    closed = io.StringIO("portforward.go: error forwarding port 443 to pod abc: container not found\n")
    closed.close()
    said: list[str] = []
    cluster_access._drain(closed, said)
    assert said == []
