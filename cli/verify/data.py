"""The checks of the data tier: the CloudNativePG cluster healthy with its databases and roles (as
kubectl reads its `Cluster` and `Database` objects), and Valkey answering AUTH with the password
`blueprint secrets` lists (through a port-forward to its Service, as providers/cluster_access.py
makes them for an existing cluster, on kind too).
"""

from __future__ import annotations

import json
import socket
from typing import Any

from cli.doctor.machine import first_line
from cli.verify.checks import UP, Platform
from cli.verify.model import Verdict, failed, passed
from cli.verify.services import TIMEOUT, _openbao_props, _password
from stacks import outputs

POSTGRES, VALKEY = "PostgreSQL (CloudNativePG)", "Valkey AUTH"
POSTGRES_NAMESPACE = "postgres"
"""Where phase2 puts the CloudNativePG cluster (stacks/phase2.py POSTGRES_VOLUME)."""
HEALTHY = "Cluster in healthy state"
"""CloudNativePG's phase of a cluster with nothing pending (api/v1/cluster_types.go, PhaseHealthy)."""
RECONCILED = "reconciled"
"""A managed role that matches its spec (api/v1/cluster_types.go, RoleStatusReconciled)."""
VALKEY_PORT = 6379


def postgres_check(platform: Platform) -> Verdict:
    """The `Cluster` is healthy, its managed roles reconciled, and each `Database` applied."""
    from components import postgres as pg

    kinds = "clusters.postgresql.cnpg.io,databases.postgresql.cnpg.io"
    code, said = platform.kubectl("--namespace", POSTGRES_NAMESPACE, "get", kinds, "-o", "json")
    fix = f"{platform.kubectl_said('describe', 'cluster', pg.CLUSTER, namespace=POSTGRES_NAMESPACE)}; `{UP} --phase 2`"
    if code != 0:
        return failed(f"kubectl could not read the cluster: {first_line(said)}", fix)
    try:
        items = json.loads(said).get("items") or []
    except (ValueError, AttributeError):
        return failed("kubectl's answer was not a list", fix)
    cluster = next((item for item in items if item.get("kind") == "Cluster" and item["metadata"].get("name") == pg.CLUSTER), None)
    if cluster is None:
        return failed(f"no Cluster {pg.CLUSTER} in namespace {POSTGRES_NAMESPACE}", f"`{UP} --phase 2`")
    status: dict[str, Any] = cluster.get("status") or {}
    wrong = [] if status.get("phase") == HEALTHY else [f"phase {status.get('phase')!r}"]
    reconciled = ((status.get("managedRolesStatus") or {}).get("byStatus") or {}).get(RECONCILED) or []
    wrong += [f"role {role} not reconciled" for role in (pg.OPENBAO_ROLE,) if role not in reconciled]
    applied = {
        (item.get("spec") or {}).get("name")
        for item in items
        if item.get("kind") == "Database" and (item.get("status") or {}).get("applied")
    }
    wrong += [f"database {name} not applied" for name in (pg.GITLAB_DATABASE, pg.OPENBAO_DATABASE) if name not in applied]
    if wrong:
        return failed("; ".join(wrong), fix)
    return passed(f"healthy; databases {pg.GITLAB_DATABASE}, {pg.OPENBAO_DATABASE}; role {pg.OPENBAO_ROLE} reconciled")


def _redis_password(platform: Platform) -> str:
    """Valkey's password, read from OpenBao as `blueprint secrets --show redis-password` reads it."""
    from components.openbao import KV_MOUNT, WRITER_USER
    from credentials import PLATFORM
    from providers.openbao_api import OpenBao

    entry = next(entry for entry in PLATFORM if entry.name == "redis-password")
    bao = OpenBao(_openbao_props(platform))
    password, file = _password(platform, outputs.OPENBAO_WRITER_PASSWORD_FILE)
    with bao.logged_in(WRITER_USER, password, file) as token:
        platform.secrets.add(token)
        response = bao.get(f"{KV_MOUNT}/data/{entry.path}", token)
    data = (response.json().get("data") or {}).get("data") or {} if response.status_code == 200 else {}
    return platform.secrets.add(str(data.get(entry.key, "")))


def _auth(port: int, password: str) -> str:
    """Valkey's first answer line to `AUTH <password>` (RESP: an array of two bulk strings)."""
    word = password.encode()
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as connection:
        connection.sendall(b"*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n" % (len(word), word))
        return connection.recv(512).decode(errors="replace").split("\r\n", 1)[0]


def valkey_check(platform: Platform) -> Verdict:
    """Valkey answers AUTH with the recorded password, through a port-forward to its Service."""
    from providers.cluster_access import Target, forwarded

    host = str(platform.of("phase2").get(outputs.REDIS_HOST))  # <service>.<namespace>.svc.cluster.local
    service, namespace = (host.split(".") + [""])[:2]
    password = _redis_password(platform)
    if not password:
        return failed("OpenBao holds no Valkey password (secret/redis)", f"`{UP} --phase 2` writes it again")
    target = Target(context=platform.context, namespace=namespace, service=service, port=VALKEY_PORT)
    with (platform.forward or forwarded)(target) as port:
        said = platform.secrets.masked(_auth(port, password))
    if said != "+OK":
        return failed(
            f"Valkey refused the recorded password: {said[:120]}",
            f"{platform.kubectl_said('logs', f'deploy/{service}', namespace=namespace)}; `{UP} --phase 2`",
        )
    return passed(f"{service}.{namespace} accepts the recorded password")
