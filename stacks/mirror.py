"""The OpenBao mirror of the credential catalogue (credentials.py): one `OpenBaoKv` per KV path.

phase2 and phase3 hand `mirror` the value of each of their catalogue entries (by name) and any
plain context a path carries beside its secrets (a user name, a host); every entry with a path
must get a value, and no value may come without an entry, so the catalogue and what is mirrored
cannot drift apart. Each KV write depends on OpenBao's initialisation and on its sources only
(never on the slow chain, cluster -> Postgres -> GitLab, unless its source is on it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi

from credentials import KV_MOUNT, Credential
from providers.cluster_access import Target
from providers.openbao_kv import OpenBaoKv, OpenBaoKvArgs


def kv_resource_name(path: str) -> str:
    """The resource's name for `path`: one resource per KV path."""
    return f"openbao-kv-{path.replace('/', '-')}"


def mirror(
    entries: Sequence[Credential],
    values: Mapping[str, pulumi.Input[str]],
    *,
    address: pulumi.Input[str],
    ca_file: pulumi.Input[str],
    server_name: pulumi.Input[str],
    username: str,
    password: pulumi.Input[str],
    context: Mapping[str, Mapping[str, pulumi.Input[str]]] | None = None,
    depends_on: Sequence[pulumi.Resource] = (),
    delete_on_destroy: bool | None = None,
    forward: Target | None = None,
) -> list[OpenBaoKv]:
    """Write `values[name]` of every entry of `entries` that has a path, at `secret/<path>` under
    its `key`, with `context[path]` beside it. A name without a value, or a value without an entry,
    is a programming error (ValueError naming it). `delete_on_destroy` (left out when None) says
    whether the stack's destroy deletes the entries (providers/openbao_kv.py); `forward` (an existing
    cluster) is how this machine reaches OpenBao (providers/cluster_access.py).
    """
    wanted = {entry.name for entry in entries if entry.path is not None}
    if missing := sorted(wanted - set(values)):
        raise ValueError(f"no value for the credential(s) {', '.join(missing)} of the catalogue (credentials.py)")
    if extra := sorted(set(values) - wanted):
        raise ValueError(f"credential(s) {', '.join(extra)} have no catalogue entry with an OpenBao path (credentials.py)")
    data: dict[str, dict[str, Any]] = {}
    for entry in entries:
        if entry.path is not None:
            data.setdefault(entry.path, dict((context or {}).get(entry.path, {})))[entry.key] = values[entry.name]
    return [
        OpenBaoKv(
            kv_resource_name(path),
            OpenBaoKvArgs(
                address=address,
                ca_file=ca_file,
                server_name=server_name,
                username=username,
                password=password,
                path=path,
                data=fields,
                mount=KV_MOUNT,
                delete_on_destroy=delete_on_destroy,
                forward=forward,
            ),
            opts=pulumi.ResourceOptions(depends_on=list(depends_on)),
        )
        for path, fields in data.items()
    ]
