"""The tables of the architecture page, beside its drawings: what runs on each node group, what each
port of the laptop reaches, which names are routed to what, and where data lives.
"""

from __future__ import annotations

from cli.diagram.egress import ENFORCED_BY
from cli.diagram.model import ANY_WORKER, EVERY_NODE, Architecture, Workload


def _cell(text: str) -> str:
    """`text` in a Markdown table cell (a bar would end it)."""
    return text.replace("|", "\\|")


def tables(arch: Architecture) -> list[str]:
    """The page's sections after the drawings, each with its table; the phases' table is left open
    for the caller, which counts each plan's resources.
    """
    return [
        "## What runs where",
        "",
        *_nodes(arch),
        "",
        "## Ports on the laptop",
        "",
        *_ports(arch),
        "",
        "## Names",
        "",
        *_names(arch),
        "",
        "## What CI pods may reach",
        "",
        *_egress(arch),
        "",
        "## Where data lives",
        "",
        f"The data folder is on the laptop: `blueprint:dataDir`, by default `{arch.data_dir}` in the checkout. The nodes mount",
        "only what the table says they do; everything else in it only blueprint, on the laptop, reads and writes.",
        "",
        *_data(arch),
        "",
        "## Phases",
        "",
        "| phase | its components | resources |",
        "|---|---|---:|",
    ]


def _nodes(arch: Architecture) -> list[str]:
    group_title = {g.key: g.title for g in arch.groups} | {EVERY_NODE: "every node", ANY_WORKER: "any worker"}
    rows = [
        f"The nodes are the kind cluster's ({arch.cluster_phase}); each workload says its namespace and the phase that deploys it.",
        "",
        "| node group | nodes | what runs there |",
        "|---|---:|---|",
    ]
    for group in arch.groups:
        inside = [w for w in arch.workloads if w.placement == group.key]
        runs = ", ".join(f"{w.name} ({w.namespace}, {w.phase})" for w in inside) or (
            "the Kubernetes API server" if group.role == "control-plane" else "—"
        )
        rows.append(f"| {_cell(group.title)} | {group.count} | {_cell(runs)} |")
    for key in (EVERY_NODE, ANY_WORKER):
        inside = [w for w in arch.workloads if w.placement == key]
        if inside:
            runs = ", ".join(f"{w.name} ({w.namespace}, {w.phase})" for w in inside)
            rows.append(f"| {group_title[key]} | | {_cell(runs)} |")
    return rows


def _ports(arch: Architecture) -> list[str]:
    by_key = {w.key: w for w in arch.workloads}
    rows = ["| on the laptop | reaches | in namespace | mapped by | served by |", "|---|---|---|---|---|"]
    for mapping in arch.mappings:
        target = next(((w, p) for w in arch.workloads for n, p in w.node_ports.items() if n == mapping.target_port), None)
        if target:
            workload, port = target
            reaches = f"NodePort {mapping.target_port} → {workload.name}" + (f" :{port}" if port else "")
            if port in workload.forwards and (behind := by_key.get(workload.forwards[port][0])):
                reaches += f" → {behind.name}: {workload.forwards[port][1]}"
            row = [_cell(reaches), workload.namespace, mapping.phase, workload.phase]
        else:
            row = [f"NodePort {mapping.target_port}, which nothing in the plans serves", "", mapping.phase, ""]
        rows.append(f"| {mapping.host_address}:{mapping.host_port} | " + " | ".join(row) + " |")
    if arch.api_server:
        api = arch.api_server
        rows.append(f"| {api.host_address}:{api.host_port} | the Kubernetes API server (kubectl, Pulumi) | | {api.phase} | {api.phase} |")
    return rows


def _names(arch: Architecture) -> list[str]:
    by_key: dict[str, Workload] = {w.key: w for w in arch.workloads}
    gateway = by_key.get(arch.gateway)
    https = next((m for m in arch.mappings if gateway and gateway.node_ports.get(m.target_port) == 443), None)
    through = (
        f"{https.host_address}:{https.host_port} → {gateway.name}" if https and gateway else gateway.name if gateway else "the gateway"
    )
    rows = [
        "Every name below resolves to 127.0.0.1 on the laptop (the `/etc/hosts` line) and, inside the cluster, to the gateway",
        f"(a DNS rewrite); each goes through {_cell(through)}.",
        "",
        "| name | served by | in namespace | phase |",
        "|---|---|---|---|",
    ]
    for route in arch.routes:
        server = by_key.get(route.workload)
        if server:
            serves = f"{server.name}: {route.serves or server.what}"
            rows.append(f"| {route.host} | {_cell(serves)} | {server.namespace} | {server.phase} |")
        else:
            rows.append(f"| {route.host} | nothing the plans show | | |")
    return rows


def _data(arch: Architecture) -> list[str]:
    by_key = {w.key: w for w in arch.workloads}
    rows = ["| path in the data folder | what | on the nodes at | phase |", "|---|---|---|---|"]
    for entry in arch.data:
        what = entry.what
        if entry.workload in by_key:
            what += f", used by {by_key[entry.workload].name}"
        rows.append(f"| `{entry.path}` | {_cell(what)} | {f'`{entry.node_path}`' if entry.node_path else '—'} | {entry.phase} |")
    return rows


def _egress(arch: Architecture) -> list[str]:
    """Each egress NetworkPolicy: a pod selected by several may reach what any of them allows."""
    rows = [*ENFORCED_BY, "", "| namespace | pods | may reach (namespace (pods) or address: ports) | phase |", "|---|---|---|---|"]
    rows += [f"| {namespace} | {_cell(pods)} | {_cell(reaches)} | {phase} |" for namespace, pods, reaches, phase in arch.egress]
    return rows
