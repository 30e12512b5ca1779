"""On an existing cluster, the wildcard DNS record in time for phase3 (docs/guide/existing-cluster.md, "DNS").

There the nodes resolve the platform's names through public DNS (on kind, blueprint writes them
into CoreDNS and the nodes' /etc/hosts: stacks/node_access.py), and phase3's smoke pipelines need
them: the nodes pull the apps' images from `registry.<domain>` (the Runners' pods have the names as
host aliases: stacks/node_access.py `runner_host_aliases`). So `up` says the record as soon as
phase2 is up (the gateway's address exists from then on), checks from this machine before phase3
that both names resolve to the gateway, and stops there when they do not, with the record and the
command to run again (`--skip-dns-check` past it, when the cluster resolves what this machine cannot:
a private zone, split-horizon DNS); a failed phase3 says the record too. On kind none of this runs.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cli.report import Gateway, dns_lines, platform_names
from stacks import outputs

Resolve = Callable[[str], set[str]]
"""A host name -> the addresses it resolves to from this machine (empty: none)."""


def resolve(host: str) -> set[str]:
    """The addresses `host` resolves to here, as every program of this machine resolves it."""
    try:
        return {str(found[4][0]) for found in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)}
    except (OSError, UnicodeError):  # gaierror is an OSError; a label too long for IDNA a UnicodeError
        return set()


@dataclass(frozen=True, kw_only=True)
class DnsRecord:
    """The steps of an `up` around its stacks (`cli.phases._in_order`) that say and check the record."""

    say: Callable[[str], None]
    outputs: Callable[[str], Mapping[str, Any] | None]
    """A stack's outputs (`StackRunner.outputs`)."""
    gateway: Callable[[Mapping[str, Any]], Gateway]
    """phase1's outputs -> the gateway's addresses now (`cli.report.gateway_address`)."""
    resolve: Resolve
    again: str
    """The command that takes the `up` up again."""
    check: bool = True
    """Whether to resolve the names before phase3 (False: `--skip-dns-check`, the cluster's view trusted)."""

    def _stacks(self) -> tuple[Mapping[str, Any], Mapping[str, Any]] | None:
        phase1, phase2 = self.outputs("phase1") or {}, self.outputs("phase2") or {}
        return (phase1, phase2) if outputs.on_existing(phase1) and phase2 else None

    def _record(self, phase1: Mapping[str, Any], phase2: Mapping[str, Any], gateway: Gateway) -> list[str]:
        domain, hosts = platform_names(phase1, phase2, self.outputs("phase3") or {})
        return dns_lines(phase1, domain, hosts, gateway)

    def after(self, stack: str) -> None:
        """Once phase2 is up: the gateway's address and the record, before phase3 needs it."""
        if stack != "phase2" or (stacks := self._stacks()) is None:
            return
        self.say("== the DNS record phase3 needs: the nodes resolve the platform's names in public DNS")
        self.say("\n".join(self._record(*stacks, self.gateway(stacks[0]))))

    def before(self, stack: str) -> bool:
        """Before phase3: whether it must not start, said with the record and the command to run again."""
        if stack != "phase3" or (stacks := self._stacks()) is None:
            return False
        phase1, phase2 = stacks
        names = needed_names(phase2)
        if not self.check:
            self.say(
                f"== DNS: not checked from here (--skip-dns-check): phase3's pipelines need the cluster to resolve {' and '.join(names)}"
            )
            return False
        gateway = self.gateway(phase1)
        problems = unresolved(names, gateway, self.resolve)
        if not problems:
            self.say(f"== DNS: {' and '.join(names)} resolve to the gateway from here")
            return False
        self.say(
            "blueprint: phase3 was not started: its pipelines need the platform's names in DNS, and from this machine\n"
            + "\n".join(f"  {problem}" for problem in problems)
        )
        self.say("\n".join(self._record(phase1, phase2, gateway)))
        self.say(
            f"Make that record; once `getent hosts {names[0]}` shows the gateway's address here, run `{self.again}` again "
            "(what is up stays up: nothing is lost). If the cluster resolves them though this machine does not (a private "
            f"DNS zone, split-horizon DNS), run `{self.again} --skip-dns-check`."
        )
        return True

    def failed(self, stack: str) -> None:
        """After a failed phase3: the record again, the first thing its pipelines need."""
        if stack != "phase3" or (stacks := self._stacks()) is None:
            return
        self.say("phase3's pipelines need the platform's names in DNS: check the record")
        self.say("\n".join(self._record(*stacks, self.gateway(stacks[0]))))


def needed_names(phase2: Mapping[str, Any]) -> list[str]:
    """The names phase3's pipelines reach from the cluster: GitLab's and its registry's."""
    gitlab = str(phase2.get(outputs.GITLAB_URL, "")).split("://", 1)[-1].split("/", 1)[0]
    return [gitlab, str(phase2.get(outputs.REGISTRY_HOST, ""))]


def unresolved(names: list[str], gateway: Gateway, resolve: Resolve) -> list[str]:
    """What is wrong with `names` in DNS, one line each (none: each resolves to the gateway). The gateway's
    addresses are its IPs, or what its hostname resolves to; with NodePort (the record goes to the user's own
    load balancer) or no address read, a name need only resolve.
    """
    wanted: set[str] = set()
    if gateway.node_ports is None:
        for kind, value in gateway.addresses:
            wanted |= resolve(value) if kind == "Hostname" else {value}
    problems = []
    for name in names:
        found = resolve(name)
        if not found:
            problems.append(f"{name} does not resolve")
        elif wanted and not found & wanted:
            problems.append(f"{name} resolves to {', '.join(sorted(found))}, not to the gateway ({', '.join(sorted(wanted))})")
    return problems
