"""On an existing cluster, `up` says the wildcard DNS record once phase2 is up, and starts phase3 only
once the names its pipelines need resolve to the gateway (cli/dns_gate.py). No network: the gateway
and the resolver are fakes."""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest

from cli import commands, phases
from cli.dns_gate import unresolved
from cli.main import parser
from cli.report import Gateway
from stacks import outputs
from tests.cli.fake_runner import PHASE2, FakeRunner, context

EXISTING_PHASE1 = {outputs.CLUSTER_TYPE: "existing", outputs.KUBE_CONTEXT: "team", outputs.HEADLAMP: False}
LOAD_BALANCER = Gateway(addresses=(("IPAddress", "203.0.113.7"),))
RECORD = "*.local.example.net  A  203.0.113.7"
NAMES = ("gitlab.local.example.net", "registry.local.example.net")


def _resolver(answers: Mapping[str, set[str]]) -> Any:
    return lambda host: set(answers.get(host, set()))


def _up(
    phase: str, resolved: Mapping[str, set[str]], failing: str | None = None, gateway: Gateway = LOAD_BALANCER
) -> tuple[int, str, FakeRunner]:
    runner = FakeRunner({"phase1": EXISTING_PHASE1, "phase2": PHASE2}, failing=failing)
    ctx, out = context(runner, gateway=lambda phase1: gateway, resolve=_resolver(resolved))
    return phases.up(ctx, phase), out.getvalue(), runner


def test_up_on_an_existing_cluster_stops_before_phase3_while_its_names_do_not_resolve() -> None:
    code, said, runner = _up("all", {})
    assert code == 1
    assert ("up", "phase3") not in runner.calls
    assert "gitlab.local.example.net does not resolve" in said
    assert RECORD in said
    assert "run `uv run blueprint up` again (what is up stays up: nothing is lost)" in said


def test_up_says_the_record_as_soon_as_phase2_is_up_before_phase3_is_checked() -> None:
    said = _up("all", {})[1]
    assert said.index(RECORD) < said.index("blueprint: phase3 was not started")
    assert said.index("== phase2: pulumi up") < said.index(RECORD)


def test_names_that_resolve_elsewhere_than_the_gateway_stop_phase3() -> None:
    code, said, runner = _up("3", dict.fromkeys(NAMES, {"198.51.100.9"}))
    assert code == 1
    assert runner.calls == []
    assert "registry.local.example.net resolves to 198.51.100.9, not to the gateway (203.0.113.7)" in said
    assert "run `uv run blueprint up --phase 3` again" in said


def test_names_that_resolve_to_the_gateway_let_phase3_run() -> None:
    code, said, runner = _up("all", dict.fromkeys(NAMES, {"203.0.113.7"}))
    assert code == 0
    assert ("up", "phase3") in runner.calls
    assert "== DNS: gitlab.local.example.net and registry.local.example.net resolve to the gateway from here" in said


def test_a_failed_phase3_says_the_record_after_its_failure() -> None:
    code, said, _ = _up("all", dict.fromkeys(NAMES, {"203.0.113.7"}), failing="phase3")
    assert code == 1
    assert said.rindex(RECORD) > said.index("phase3 failed")


def test_a_hostname_load_balancer_is_compared_through_the_addresses_its_name_resolves_to() -> None:
    gateway = Gateway(addresses=(("Hostname", "abc.elb.example.com"),))
    resolve = _resolver({"abc.elb.example.com": {"192.0.2.1", "192.0.2.2"}, "gitlab.d": {"192.0.2.2"}, "registry.d": {"192.0.2.9"}})
    assert unresolved(["gitlab.d", "registry.d"], gateway, resolve) == [
        "registry.d resolves to 192.0.2.9, not to the gateway (192.0.2.1, 192.0.2.2)"
    ]


def test_with_node_ports_a_name_need_only_resolve_since_the_record_goes_to_the_users_own_load_balancer() -> None:
    nodes = Gateway(addresses=(("IPAddress", "10.0.0.4"),), node_ports={443: 31443})
    resolve = _resolver({"gitlab.d": {"198.51.100.1"}})
    assert unresolved(["gitlab.d", "registry.d"], nodes, resolve) == ["registry.d does not resolve"]


@pytest.mark.parametrize("phase", ["all", "3"])
def test_on_kind_up_neither_reads_the_gateway_nor_resolves_a_name(phase: str) -> None:
    def never(*_: Any) -> Any:
        raise AssertionError("asked on kind")

    runner = FakeRunner({"phase1": {}, "phase2": PHASE2})
    ctx, _ = context(runner, gateway=never, resolve=never)
    assert phases.up(ctx, phase) == 0
    assert ("up", "phase3") in runner.calls


def test_the_stop_names_the_way_past_it_when_the_cluster_resolves_what_this_machine_cannot() -> None:
    """A private DNS zone (an internal load balancer's) or split-horizon DNS: the cluster's view is right, this machine's is not."""
    said = _up("all", {})[1]
    assert "private DNS zone" in said
    assert "run `uv run blueprint up --skip-dns-check`" in said


def test_up_with_skip_dns_check_runs_phase3_without_resolving_a_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cli.doctor.run", lambda stacks: 0)
    monkeypatch.setattr("cli.verify.fast_tally", lambda platform, phase: "")
    runner = FakeRunner({"phase1": EXISTING_PHASE1, "phase2": PHASE2})
    made = commands._context

    def fakes(*args: Any, **kwargs: Any) -> phases.Context:
        never = lambda host: pytest.fail(f"{host} resolved though the check is skipped")  # noqa: E731
        return replace(made(*args, **kwargs), gateway=lambda phase1: LOAD_BALANCER, resolve=never)

    monkeypatch.setattr(commands, "_context", fakes)
    out = io.StringIO()
    args = parser().parse_args(["up", "--skip-dns-check", "--no-glab-login"])
    assert commands.main_for(commands.UP, args, runner, out) == 0
    assert ("up", "phase3") in runner.calls
    assert "== DNS: not checked from here (--skip-dns-check)" in out.getvalue()
