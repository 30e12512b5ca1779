"""The Mermaid drawings of the architecture: the whole of it (the laptop, the cluster's node groups,
the data folder, the image cache), and the traffic alone, small enough for the README.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import PurePosixPath

from cli.diagram.model import ANY_WORKER, EVERY_NODE, Architecture, DataPath, Workload

PHASE_STYLES = {"phase1": "fill:#e8f0fe,stroke:#4a6fb5", "phase2": "fill:#e6f4ea,stroke:#3c8a55", "phase3": "fill:#fef3e0,stroke:#c27c0e"}


def mermaid_id(text: str) -> str:
    """A Mermaid-safe id for `text`: letters, digits and underscores only, starting with a letter,
    so no character of a name (`:`, `$`, `/`, `-`, `.`) can end the id or start an arrow.
    """
    cleaned = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")
    return cleaned if cleaned[:1].isalpha() else f"n_{cleaned}"


def _label(text: str) -> str:
    """`text` as a quoted Mermaid label (a quote would end it)."""
    return '"' + text.replace('"', "#quot;") + '"'


def _ids(arch: Architecture) -> dict[str, str]:
    """A Mermaid id for each thing drawn, by its key; keys that clean to one id get a hash suffix."""
    keys = [f"group {g.key}" for g in arch.groups] + [f"workload {w.key}" for w in arch.workloads]
    keys += [f"port {m.host_port}" for m in arch.mappings] + [f"data {d.path}" for d in arch.data]
    ids: dict[str, str] = {}
    counts: dict[str, int] = {}
    for key in keys:
        counts[mermaid_id(key)] = counts.get(mermaid_id(key), 0) + 1
    for key in keys:
        plain = mermaid_id(key)
        ids[key] = plain if counts[plain] == 1 else f"{plain}_{hashlib.sha256(key.encode()).hexdigest()[:8]}"
    return ids


def _workload_label(workload: Workload) -> str:
    return f"{workload.name}<br/>{workload.what}<br/>ns {workload.namespace} · {workload.phase}"


def _secret_folders(data: Sequence[DataPath]) -> dict[str, list[DataPath]]:
    """Secret files by folder: drawn as one box per folder, listed in the table."""
    folders: dict[str, list[DataPath]] = {}
    for entry in data:
        if entry.what.startswith("secret "):
            folders.setdefault(str(PurePosixPath(entry.path).parent), []).append(entry)
    return folders


def drawing(arch: Architecture) -> str:
    """A Mermaid flowchart of `arch`: the laptop, the cluster's node groups and the data folder."""
    ids = _ids(arch)
    workload_id = {w.key: ids[f"workload {w.key}"] for w in arch.workloads}
    secrets = _secret_folders(arch.data)
    by_phase: dict[str, list[str]] = {}
    lines = ["flowchart LR"]
    lines += _laptop(arch, ids, by_phase)
    lines += _cluster(arch, ids, workload_id, by_phase)
    lines += _data_folder(arch, ids, secrets, by_phase)
    lines += _image_cache(arch, by_phase)
    lines += _edges(arch, ids, workload_id, secrets)
    for phase, members in sorted(by_phase.items()):
        if phase in PHASE_STYLES:
            lines.append(f"  classDef {phase} {PHASE_STYLES[phase]}")
            lines.append(f"  class {','.join(sorted(set(members)))} {phase}")
    return "\n".join(lines) + "\n"


def _laptop(arch: Architecture, ids: dict[str, str], by_phase: dict[str, list[str]]) -> list[str]:
    lines = ['  subgraph laptop["Laptop, 127.0.0.1"]', '    you["you: browser, git, docker, kubectl, bao<br/>blueprint up (Pulumi)"]']
    for mapping in [*arch.mappings, *([arch.api_server] if arch.api_server else [])]:
        port_id = ids.get(f"port {mapping.host_port}") or mermaid_id(f"port {mapping.host_port}")
        lines.append(f"    {port_id}[{_label(f'{mapping.host_address}:{mapping.host_port}')}]")
        by_phase.setdefault(mapping.phase, []).append(port_id)
    return [*lines, "  end"]


def _cluster(arch: Architecture, ids: dict[str, str], workload_id: dict[str, str], by_phase: dict[str, list[str]]) -> list[str]:
    lines = [f"  subgraph cluster[{_label(f'kind cluster {arch.cluster} · {arch.cluster_phase}')}]"]
    placements = [(g.key, f"{g.title}: {g.count} node{'s' if g.count != 1 else ''}") for g in arch.groups]
    placements += [(EVERY_NODE, "on every node"), (ANY_WORKER, "on any worker (no nodeSelector)")]
    for key, title in placements:
        inside = [w for w in arch.workloads if w.placement == key]
        group_id = ids.get(f"group {key}") or mermaid_id(f"group {key}")
        if not inside and key in (EVERY_NODE, ANY_WORKER):
            continue
        lines.append(f"    subgraph {group_id}[{_label(title)}]")
        if key == "control-plane" and arch.api_server:
            lines.append(f"      api[{_label('Kubernetes API server')}]")
            by_phase.setdefault(arch.cluster_phase, []).append("api")
        for workload in inside:
            lines.append(f"      {workload_id[workload.key]}[{_label(_workload_label(workload))}]")
            by_phase.setdefault(workload.phase, []).append(workload_id[workload.key])
        lines.append("    end")
    return [*lines, "  end"]


def _data_folder(arch: Architecture, ids: dict[str, str], secrets: dict[str, list[DataPath]], by_phase: dict[str, list[str]]) -> list[str]:
    lines = [f"  subgraph data[{_label(f'data folder {arch.data_dir} on the laptop')}]"]
    for entry in arch.data:
        if entry.what.startswith("secret ") or entry.claim:
            continue
        data_id = ids[f"data {entry.path}"]
        label = entry.path if entry.path.endswith((".crt", ".key", ".json", ".yml")) else f"{entry.path}/"
        lines.append(f"    {data_id}[{_label(f'{label}<br/>{entry.phase}')}]")
        by_phase.setdefault(entry.phase, []).append(data_id)
    for folder, files in sorted(secrets.items()):
        folder_id = mermaid_id(f"secrets {folder}")
        phases = sorted({f.phase for f in files})
        lines.append(f"    {folder_id}[{_label(f'{folder}/<br/>{len(files)} secret files · ' + ', '.join(phases))}]")
        by_phase.setdefault(phases[0], []).append(folder_id)
    return [*lines, "  end"]


def _image_cache(arch: Architecture, by_phase: dict[str, list[str]]) -> list[str]:
    if not arch.mirrors:
        return []
    # The folder is the user's cache folder (blueprint:imageCacheDir), different on each machine: not drawn.
    title = _label("image cache: Docker containers at fixed addresses on their own network, storing in imageCacheDir")
    lines = [f"  subgraph image_cache[{title}]"]
    for registry, container, phase in arch.mirrors:
        mirror_id = mermaid_id(f"mirror {registry}")
        lines.append(f"    {mirror_id}[{_label(f'{container}<br/>mirror of {registry} · {phase}')}]")
        by_phase.setdefault(phase, []).append(mirror_id)
    return [*lines, "  end"]


def _edges(arch: Architecture, ids: dict[str, str], workload_id: dict[str, str], secrets: dict[str, list[DataPath]]) -> list[str]:
    """Kind's port mappings to NodePorts, the names the gateway routes, its SSH forward, the mounts and the volumes."""
    lines = []
    ports = {m.target_port: m for m in arch.mappings}
    for workload in arch.workloads:
        for node_port, port in sorted(workload.node_ports.items()):
            if node_port in ports:
                port_id = ids[f"port {ports[node_port].host_port}"]
                to = f"NodePort {node_port} → :{port}" if port else f"NodePort {node_port}"
                lines.append(f"  {port_id} -->|{_label(to)}| {workload_id[workload.key]}")
    if arch.api_server:
        lines.append(f"  {mermaid_id(f'port {arch.api_server.host_port}')} --> api")
    for route in [*arch.routes, *arch.laptop_routes]:
        if route.workload in workload_id and arch.gateway in workload_id and route.workload != arch.gateway:
            lines.append(f"  {workload_id[arch.gateway]} -->|{_label(route.host)}| {workload_id[route.workload]}")
    for workload in arch.workloads:
        for port, (behind, _serves) in sorted(workload.forwards.items()):
            if behind in workload_id:
                lines.append(f"  {workload_id[workload.key]} -->|{_label(f'SSH :{port}')}| {workload_id[behind]}")
    for entry in arch.data:
        if entry.mount:
            lines.append(f"  cluster -.-|{_label(f'mounts at {entry.node_path}')}| {ids[f'data {entry.path}']}")
        if entry.workload in workload_id:
            lines.append(f"  {workload_id[entry.workload]} --- {ids[f'data {entry.path}']}")
    if arch.mirrors:
        lines.append(f"  cluster -.->|{_label('pulls through them (containerd hosts.toml), else from the registry')}| image_cache")
    for folder in sorted(secrets):
        lines.append(f"  you -.-|{_label('reads and writes; no node mounts it')}| {mermaid_id(f'secrets {folder}')}")
    return lines


def traffic(arch: Architecture) -> str:
    """A small Mermaid flowchart of the traffic alone: each 127.0.0.1 port of the laptop, kind's port
    mapping to the NodePort behind it, the gateway, and the names it routes (grouped by what serves
    them, the domain left out) to the workloads that answer; the API server's port to the API server.
    """
    by_key = {w.key: w for w in arch.workloads}
    served = {m.host_port: (w, n) for m in arch.mappings for w in arch.workloads for n in w.node_ports if n == m.target_port}
    names: dict[str, list[str]] = {}
    for route in [*arch.routes, *arch.laptop_routes]:
        if route.workload in by_key and route.workload != arch.gateway:
            names.setdefault(route.workload, []).append(route.host.removesuffix(arch.domain))
    forwards = [(behind, port) for port, (behind, _) in sorted(by_key[arch.gateway].forwards.items())] if arch.gateway in by_key else []
    drawn = [w.key for w in arch.workloads if w.key in names or any(w is s for s, _ in served.values()) or w.key in dict(forwards)]
    ids = _short_ids([by_key[key] for key in drawn])
    lines = ["flowchart LR", f"  subgraph laptop[{_label('laptop, 127.0.0.1')}]"]
    for mapping in [*arch.mappings, *([arch.api_server] if arch.api_server else [])]:
        lines.append(f"    port_{mapping.host_port}[{_label(f':{mapping.host_port}')}]")
    lines += ["  end", f"  subgraph cluster[{_label(f'kind cluster {arch.cluster}')}]"]
    for key in drawn:
        workload = by_key[key]
        shown = f"{workload.name}<br/>Envoy: routes *.{arch.domain} by name" if key == arch.gateway else workload.name
        lines.append(f"    {ids[key]}[{_label(shown)}]")
    lines += [f"    api[{_label('Kubernetes API server')}]"] if arch.api_server else []
    lines.append("  end")
    for mapping in arch.mappings:
        if mapping.host_port in served:
            workload, node_port = served[mapping.host_port]
            lines.append(f"  port_{mapping.host_port} -->|{_label(f'NodePort {node_port}')}| {ids[workload.key]}")
    if arch.api_server:
        lines.append(f"  port_{arch.api_server.host_port} --> api")
    for key, hosts in names.items():
        lines.append(f"  {ids[arch.gateway]} -->|{_label('<br/>'.join(hosts))}| {ids[key]}")
    for behind, port in forwards:
        lines.append(f"  {ids[arch.gateway]} -->|{_label(f'SSH :{port}')}| {ids[behind]}")
    return "\n".join(lines) + "\n"


_TAKEN = frozenset({"api", "laptop", "cluster", "end"})
"""Ids the traffic drawing gives its own nodes and subgraphs, and Mermaid's `end`."""


def _short_ids(workloads: Sequence[Workload]) -> dict[str, str]:
    """A Mermaid id for each workload, by its key: its name, numbered when two share one."""
    ids: dict[str, str] = {}
    for workload in workloads:
        plain = mermaid_id(workload.name)
        ids[workload.key] = plain if plain not in ids.values() and plain not in _TAKEN else f"{plain}_{len(ids)}"
    return ids
