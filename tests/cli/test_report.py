"""The end of an `up`: the summary, the smoke pipelines' tally, and `--glab-login`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cli import report
from stacks import outputs
from tests.cli.fake_runner import PHASE2, phase2_with_glab_token, phase2_with_token


def test_the_summary_says_where_things_and_credentials_are_never_the_credentials() -> None:
    text = report.summary(
        {"phase1": {}, "phase2": PHASE2, "phase3": {outputs.APP_URLS: {"guestbook": "https://guestbook.local.example.net"}}}
    )
    assert "https://gitlab.local.example.net" in text
    assert "cat /data/platform/secrets/gitlab-root-password" in text
    assert 'echo "glpat-$(cat /data/platform/secrets/gitlab-admin-token)"' in text
    assert "--show-secrets" not in text
    assert "secret/gitlab/bootstrap/admin_token" in text
    assert "127.0.0.1 gitlab.local.example.net registry.local.example.net kas.local.example.net guestbook.local.example.net" in text
    assert "/data/platform/ca.crt" in text
    assert "glpat-secret-value" not in text
    assert "root-secret-value" not in text


def test_the_summary_names_headlamp_and_puts_it_on_the_hosts_line_only_when_phase1_installed_it() -> None:
    hosts_line = "127.0.0.1 gitlab.local.example.net registry.local.example.net kas.local.example.net"
    without = report.summary({"phase1": {outputs.HEADLAMP: False}, "phase2": PHASE2})
    assert f"{hosts_line}\n" in without
    assert "headlamp" not in without.lower()
    with_headlamp = report.summary({"phase1": {outputs.HEADLAMP: True}, "phase2": PHASE2})
    assert f"{hosts_line} headlamp.local.example.net\n" in with_headlamp
    assert "Headlamp:  https://headlamp.local.example.net" in with_headlamp


def test_the_smoke_tally_counts_the_manifests_projects_that_have_a_green_pipeline() -> None:
    projects = ["shared-code", "guestbook", "redis", "redis-slave"]
    green = {name: f"https://gitlab.x/blueprint-apps/{name}/-/pipelines/1" for name in projects}
    assert report.smoke_tally(projects, green) == "4/4 smoke pipelines green"
    del green["shared-code"]
    assert report.smoke_tally(projects, green) == (
        "3/4 smoke pipelines green (none recorded for shared-code: `uv run blueprint up --phase 3` runs them)"
    )


def test_the_summary_prints_commands_that_show_the_root_password_and_token_from_their_files(tmp_path: Path) -> None:
    folder = tmp_path / "it's $(touch pwned) `id`"
    folder.mkdir()
    (folder / "gitlab-root-password").write_text("RootPassword1\n")
    phase2 = {**phase2_with_token(folder, "Token2"), outputs.GITLAB_ROOT_PASSWORD_FILE: str(folder / "gitlab-root-password")}
    text = report.summary({"phase1": {}, "phase2": phase2, "phase3": {}})
    shown = {}
    for command in (report.root_password_command(phase2), report.admin_token_command(phase2)):
        assert command in text
        shown[command] = subprocess.run(["/bin/sh", "-c", command], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert sorted(shown.values()) == ["RootPassword1\n", "glpat-Token2\n"]
    assert not (tmp_path / "pwned").exists()


def test_the_summary_of_a_cluster_alone_gives_the_kubeconfig_command_that_parses() -> None:
    from cli.main import parser

    text = report.summary({"phase1": {outputs.CLUSTER_NAME: "blueprint"}})
    command = text.split("(for kubectl: uv run ", 1)[1].split(")", 1)[0]
    assert parser().parse_args(command.split()[1:]).command == "kubeconfig"


def test_the_summary_of_an_existing_cluster_alone_names_its_context_never_a_kind_cluster() -> None:
    phase1 = {outputs.CLUSTER_TYPE: "existing", outputs.KUBE_CONTEXT: "gke_acme_prod", outputs.CLUSTER_NAME: ""}
    text = report.summary({"phase1": phase1})
    assert "  cluster: the existing one of context gke_acme_prod (for kubectl: kubectl --context gke_acme_prod)" in text.splitlines()
    assert "kind cluster" not in text


def test_glab_login_passes_its_own_token_on_stdin_and_trusts_our_ca(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    calls: list[tuple[list[str], str | None]] = []

    def run(argv: list[str], **kwargs: Any) -> Any:
        calls.append((argv, kwargs.get("input")))
        return None

    said = report.glab_login(phase2_with_glab_token(tmp_path), run)
    assert said.startswith("glab is logged in to gitlab.local.example.net as root, with its own token")
    assert calls[0][0] == ["glab", "config", "set", "ca_cert", "/data/platform/ca.crt", "--host", "gitlab.local.example.net"]
    assert calls[1] == (["glab", "auth", "login", "--hostname", "gitlab.local.example.net", "--stdin"], "glpat-glab-value")


def test_glab_is_never_given_the_admin_token(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The admin token holds sudo and admin_mode for 364 days; glab gets its own, `api` alone."""
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    given: list[str] = []

    def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        given.append(str(kwargs.get("input")))
        return subprocess.CompletedProcess(argv, 0, "", "")

    report.glab_login(phase2_with_glab_token(tmp_path), run)
    assert "glpat-secret-value" not in given


def test_glab_login_without_glab_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda name: None)
    assert "glab is not installed" in report.glab_login(PHASE2)


def test_a_glab_that_fails_is_said_and_the_up_still_stands(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")

    def run(argv: list[str], **kwargs: Any) -> Any:
        raise subprocess.CalledProcessError(1, argv, stderr="error: could not authenticate")

    said = report.glab_login(phase2_with_glab_token(tmp_path), run)
    assert "could not authenticate" in said
    assert "secret-value" not in said


def test_glab_login_without_its_token_file_says_which_file_and_what_to_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    calls: list[list[str]] = []

    def run(argv: list[str], **kwargs: Any) -> Any:
        calls.append(argv)

    said = report.glab_login(PHASE2, run)
    assert said == (
        "glab could not be logged in to gitlab.local.example.net: phase2 is not up, or its data folder is not on this machine: "
        "/data/platform/secrets/gitlab-glab-token; run `uv run blueprint up` first; the platform is up regardless"
    )
    assert calls == []


def test_glab_login_touches_the_platform_host_alone(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    (tmp_path / "token").write_text("abc\n")
    ran: list[list[str]] = []

    def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        ran.append(argv)
        return subprocess.CompletedProcess(argv, 0, "", "")

    phase2 = {
        outputs.GITLAB_URL: "https://gitlab.local.example.net",
        outputs.CA_CERT_FILE: "/ca.crt",
        outputs.GLAB_TOKEN_FILE: str(tmp_path / "token"),
    }
    report.glab_login(phase2, run=run)
    hosts = [argv[argv.index("--host" if "--host" in argv else "--hostname") + 1] for argv in ran]
    assert len(hosts) == 2
    assert set(hosts) == {"gitlab.local.example.net"}


def test_glab_is_logged_in_with_the_token_gitlab_made_as_its_file_holds_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """GitLab makes glab's token, prefix and all: each `up` logs glab in with the file's value, so a
    renewed token reaches glab."""
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    given: list[str] = []

    def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        given.append(kwargs.get("input") or "")
        return subprocess.CompletedProcess(argv, 0, "", "")

    report.glab_login(phase2_with_glab_token(tmp_path, "glpat-made-by-gitlab"), run)
    assert given[-1] == "glpat-made-by-gitlab"


# On an existing cluster (issue 24): the DNS record to make at the gateway's address, not /etc/hosts.

EXISTING_PHASE1 = {outputs.CLUSTER_TYPE: "existing", outputs.KUBE_CONTEXT: "team", outputs.HEADLAMP: False}


def _gateway_answer(addresses: list[dict[str, str]], service_type: str = "LoadBalancer") -> str:
    """What `kubectl get gateway/... service/... -o json` prints: a List of the two."""
    ports = [{"name": "https-443", "port": 443, "nodePort": 31443}, {"name": "http-80", "port": 80, "nodePort": 31080}]
    return json.dumps(
        {
            "kind": "List",
            "items": [
                {"kind": "Gateway", "status": {"addresses": addresses}},
                {"kind": "Service", "spec": {"type": service_type, "ports": ports}},
            ],
        }
    )


def _run(stdout: str, seen: list[list[str]]) -> Any:
    def run(command: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        seen.append(command)
        return subprocess.CompletedProcess(command, 0, stdout, "")

    return run


def test_on_an_existing_cluster_the_summary_names_the_wildcard_record_at_the_load_balancers_ip() -> None:
    seen: list[list[str]] = []
    gateway = report.gateway_address(EXISTING_PHASE1, _run(_gateway_answer([{"type": "IPAddress", "value": "203.0.113.7"}]), seen))
    text = report.summary({"phase1": EXISTING_PHASE1, "phase2": PHASE2}, gateway=gateway)
    assert "*.local.example.net  A  203.0.113.7" in text
    assert "/etc/hosts" not in text
    assert "127.0.0.1 gitlab" not in text
    assert seen[0][:5] == ["kubectl", "--context", "team", "--namespace", "gitlab"]


def test_a_load_balancer_with_a_hostname_gets_a_cname_record() -> None:
    answer = _gateway_answer([{"type": "Hostname", "value": "abc.elb.amazonaws.com"}])
    gateway = report.gateway_address(EXISTING_PHASE1, _run(answer, []))
    assert "*.local.example.net  CNAME  abc.elb.amazonaws.com" in report.summary(
        {"phase1": EXISTING_PHASE1, "phase2": PHASE2}, gateway=gateway
    )


def test_a_node_port_gateway_names_the_nodes_and_ports_for_the_users_load_balancer_and_no_a_record() -> None:
    """With NodePort the gateway's addresses are the nodes' (Envoy Gateway status/gateway.go), which answer on
    no port 443: the record goes to the user's own load balancer in front of them (the existing-cluster guide)."""
    nodes = [{"type": "IPAddress", "value": "10.0.0.4"}, {"type": "IPAddress", "value": "10.0.0.5"}]
    answer = _gateway_answer(nodes, service_type="NodePort")
    text = report.summary({"phase1": EXISTING_PHASE1, "phase2": PHASE2}, gateway=report.gateway_address(EXISTING_PHASE1, _run(answer, [])))
    assert "  A  " not in text
    assert "  CNAME  " not in text
    assert "nodes 10.0.0.4, 10.0.0.5" in text
    assert "443 -> node port 31443" in text
    assert "*.local.example.net  ->  your load balancer's address" in text


def test_a_gateway_without_an_address_says_how_to_see_it_once_it_has_one() -> None:
    gateway = report.gateway_address(EXISTING_PHASE1, _run(_gateway_answer([]), []))
    text = report.summary({"phase1": EXISTING_PHASE1, "phase2": PHASE2}, gateway=gateway)
    assert "the gateway has no address yet" in text
    assert "kubectl --context team --namespace gitlab get gateway gitlab-gw -o 'jsonpath={.status.addresses}'" in text


def test_on_an_existing_cluster_the_openbao_login_forwards_its_service_first() -> None:
    forward = {"context": "team", "namespace": "openbao", "service": "openbao", "port": 8200}
    phase2 = {**PHASE2, outputs.OPENBAO_ADDR: "https://openbao.openbao.svc.cluster.local:8200", outputs.OPENBAO_FORWARD: forward}
    login = report.openbao_login(phase2)
    assert login.startswith("kubectl --context team --namespace openbao port-forward svc/openbao 8200 &")
    assert "BAO_ADDR=https://127.0.0.1:8200" in login


# A brought certificate (blueprint:tlsCertificate): the gateway's names are verified with its CA file.
BROUGHT_PHASE2 = {**PHASE2, outputs.GATEWAY_CA_FILE: "/data/platform/gateway-ca.crt"}


def test_with_a_brought_certificate_the_summary_asks_no_one_to_trust_the_platform_ca() -> None:
    text = report.summary({"phase1": EXISTING_PHASE1, "phase2": BROUGHT_PHASE2})
    assert "trust the CA" not in text
    assert "the gateway serves your certificate (blueprint:tlsCertificate)" in text


def test_with_a_brought_certificate_the_apps_are_checked_against_its_ca() -> None:
    asked: list[str] = []

    def ask(_url: str, ca: str, _headers: object) -> str:
        asked.append(ca)
        return "ok"

    phase3 = {outputs.APP_URLS: {"guestbook": "https://guestbook.local.example.net"}}
    report.check_apps({"phase2": BROUGHT_PHASE2, "phase3": phase3}, ask)
    assert asked == ["/data/platform/gateway-ca.crt"]


def test_with_a_brought_certificate_glab_trusts_its_ca(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    calls: list[list[str]] = []

    def run(argv: list[str], **_kwargs: Any) -> Any:
        calls.append(argv)

    phase2 = {**phase2_with_glab_token(tmp_path), outputs.GATEWAY_CA_FILE: "/data/platform/gateway-ca.crt"}
    report.glab_login(phase2, run)
    assert calls[0][:5] == ["glab", "config", "set", "ca_cert", "/data/platform/gateway-ca.crt"]
