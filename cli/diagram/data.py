"""Where data lives, read from the offline plans: the host data folder, what the nodes mount of it,
each volume's folder, the CA certificate and the secret files; and the image cache's mirrors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cli.diagram.model import COMMAND_TYPE, HOST_SECRET_TYPE, PV_TYPE, DataPath, Workload, relative_to
from cli.plan import Plan

GLAB_TOKEN_TYPE = "pulumi-python:dynamic/gitlab:GlabToken"
"""glab's token: a secret file it writes itself, as a HostSecret does."""


def data(plans: Sequence[Plan], config: Mapping[str, Any], kind_phase: str, data_dir: str, workloads: Sequence[Workload]) -> list[DataPath]:
    found: dict[str, DataPath] = {}
    mounts: dict[str, str] = {}
    nodes = config.get("nodes") or []
    # Each mount once, in the order the nodes have them (the GitLab nodes alone mount the volumes).
    every_mount: dict[str, Any] = {}
    for node in nodes:
        for mount in node.get("extraMounts") or []:
            every_mount.setdefault(str(mount["containerPath"]), mount)
    for mount in every_mount.values():
        having = [node for node in nodes if mount in (node.get("extraMounts") or [])]
        relative = relative_to(str(mount["hostPath"]), data_dir)
        if relative is None:
            continue
        mounts[str(mount["containerPath"])] = relative
        access = "read-only" if mount.get("readOnly") else "read-write"
        roles = sorted({str((node.get("labels") or {}).get(label, "")) for node in having for label in node.get("labels") or {}})
        where = "every node" if len(having) == len(nodes) else f"the {', '.join(roles)} nodes" if roles else "some nodes"
        found[relative] = DataPath(relative, f"mounted on {where}, {access}", str(mount["containerPath"]), kind_phase, mount=True)
    for result in plans:
        owners = {
            w.namespace: w.key for w in workloads if w.phase == result.stack and not w.key.endswith("/jobs") and "/gateway" not in w.key
        }
        for resource in result.find(COMMAND_TYPE):
            env = resource["inputs"].get("environment") or {}
            if "FOLDER" in env and "OWNER" in env:
                folder = relative_to(str(env["FOLDER"]), data_dir)
                if folder is not None and folder != ".":
                    found.setdefault(
                        folder, DataPath(folder, f"claimed by {str(env['OWNER']).split('@')[0]}", "", result.stack, claim=True)
                    )
            if "CA_FILE" in env and (relative := relative_to(str(env["CA_FILE"]), data_dir)):
                found[relative] = DataPath(relative, "the platform CA's certificate: trust it on the laptop", "", result.stack)
            if "HOSTS_DIR" in env and "REGISTRY_HOST" in env and (relative := relative_to(str(env["HOSTS_DIR"]), data_dir)):
                path = f"{relative}/{env['REGISTRY_HOST']}"
                found[path] = DataPath(path, "how containerd pulls from the registry: hosts.toml and the CA", "", result.stack)
        for resource in [*result.find(HOST_SECRET_TYPE), *result.find(GLAB_TOKEN_TYPE)]:  # GlabToken writes its own file
            relative = relative_to(str(resource["inputs"].get("path", "")), data_dir)
            if relative:
                found[relative] = DataPath(relative, f"secret {resource['name']}", "", result.stack)
        for resource in result.find(PV_TYPE):
            spec = resource["inputs"].get("spec") or {}
            node_path = str((spec.get("hostPath") or {}).get("path", ""))
            base = next((m for m in sorted(mounts, key=len, reverse=True) if node_path.startswith(m + "/")), None)
            if base is None:
                continue
            relative = f"{mounts[base]}/{node_path[len(base) + 1 :]}"
            claim = spec.get("claimRef") or {}
            size = (spec.get("capacity") or {}).get("storage", "")
            found[relative] = DataPath(
                relative,
                f"volume {claim.get('namespace')}/{claim.get('name')} ({size})",
                node_path,
                result.stack,
                owners.get(str(claim.get("namespace")), ""),
            )
    for entry in found.values():
        # What the nodes see of it: anything inside a mounted folder.
        if not entry.node_path:
            above = next((m for m, r in mounts.items() if entry.path.startswith(r + "/")), None)
            entry.node_path = f"{above}/{entry.path[len(mounts[above]) + 1 :]}" if above else ""
    return sorted(found.values(), key=lambda d: d.path)


def mirrors(plans: Sequence[Plan]) -> list[tuple[str, str, str]]:
    """(registry, container, phase) of each image cache mirror the plans start (components/image_cache.py)."""
    from components.image_cache import mirror_cache_folder

    return sorted(
        (str(r["inputs"]["environment"]["REGISTRY"]), str(r["inputs"]["environment"]["CONTAINER"]), result.stack)
        for result in plans
        for r in result.resources
        if r["type"] == "command:local:Command" and mirror_cache_folder(r["inputs"])
    )
