"""`blueprint verify`'s check of the CloudNativePG cluster, as the doctor's fake kubectl answers:
seen passing, and failing with its fix."""

from __future__ import annotations

import json
from typing import Any

from cli.verify import data
from cli.verify.model import FAIL, PASS
from components import postgres as pg
from tests.cli.doctor.fakes import FakeMachine
from tests.cli.verify.platforms import PHASE1, platform_on


def _objects(phase: str = data.HEALTHY, reconciled: tuple[str, ...] = (pg.OPENBAO_ROLE,), applied: bool = True) -> list[dict[str, Any]]:
    cluster = {
        "kind": "Cluster",
        "metadata": {"name": pg.CLUSTER},
        "status": {"phase": phase, "managedRolesStatus": {"byStatus": {data.RECONCILED: list(reconciled)}}},
    }
    databases = [
        {"kind": "Database", "spec": {"name": name}, "status": {"applied": applied}} for name in (pg.GITLAB_DATABASE, pg.OPENBAO_DATABASE)
    ]
    return [cluster, *databases]


def _check(items: list[dict[str, Any]]) -> Any:
    machine = FakeMachine(outputs={"kubectl --context": (0, json.dumps({"items": items}))})
    return data.postgres_check(platform_on(machine, {"phase1": PHASE1}))


def test_postgres_passes_healthy_with_its_databases_and_roles() -> None:
    assert _check(_objects()).status == PASS


def test_postgres_fails_with_the_phase_it_is_in() -> None:
    verdict = _check(_objects(phase="Waiting for the instances to become active"))
    assert verdict.status == FAIL
    assert "Waiting for the instances" in verdict.saw
    assert f"describe cluster {pg.CLUSTER}" in verdict.fix


def test_postgres_fails_naming_a_role_not_reconciled_and_a_database_not_applied() -> None:
    verdict = _check(_objects(reconciled=(), applied=False))
    assert verdict.status == FAIL
    assert f"role {pg.OPENBAO_ROLE} not reconciled" in verdict.saw
    assert f"database {pg.GITLAB_DATABASE} not applied" in verdict.saw


def test_postgres_fails_when_there_is_no_cluster() -> None:
    verdict = _check([])
    assert verdict.status == FAIL
    assert "--phase 2" in verdict.fix
