"""OpenBao's install: postgresql storage set explicitly, an install that does not hang while the
server is sealed, and the API on the NodePort phase1 maps to the host."""

from __future__ import annotations

from typing import Any

import versions
from stacks import outputs
from tests.plans import planned

INIT = "pulumi-python:dynamic/openbao:Init"


def server_values() -> dict[str, Any]:
    return dict(planned("phase2").one("kubernetes:helm.sh/v3:Release", "openbao-chart")["inputs"]["values"]["server"])


def test_chart_and_image_are_pinned() -> None:
    inputs = planned("phase2").one("kubernetes:helm.sh/v3:Release", "openbao-chart")["inputs"]
    assert (inputs["chart"], inputs["version"]) == ("openbao", versions.OPENBAO_CHART_VERSION)
    assert inputs["values"]["server"]["image"] == {"tag": versions.OPENBAO_IMAGE_TAG}


def test_storage_is_postgresql_never_the_removed_file_backend() -> None:
    config = server_values()["standalone"]["config"]
    assert 'storage "postgresql"' in config
    assert 'storage "file"' not in config
    assert server_values()["dataStorage"] == {"enabled": False}


def test_the_connection_url_reaches_the_server_from_a_secret() -> None:
    [env] = server_values()["extraSecretEnvironmentVars"]
    assert env == {"envName": "BAO_PG_CONNECTION_URL", "secretName": "openbao-storage", "secretKey": "connection-url"}
    secret = planned("phase2").one("kubernetes:core/v1:Secret", "openbao-storage")["inputs"]
    assert secret["stringData"] == {"connection-url": "[secret]"}


def test_a_sealed_server_counts_as_ready_so_the_install_does_not_hang() -> None:
    assert "sealedcode=204" in server_values()["readinessProbe"]["path"]
    assert "uninitcode=204" in server_values()["readinessProbe"]["path"]


def test_the_api_is_on_the_node_port_phase1_maps() -> None:
    node_port = planned("phase1").outputs[outputs.OPENBAO_NODE_PORT]["value"]
    assert server_values()["service"] == {"type": "NodePort", "nodePort": node_port}


def test_openbao_waits_for_its_database() -> None:
    result = planned("phase2")
    database = result.one("kubernetes:postgresql.cnpg.io/v1:Database", "postgres-openbao-database")
    assert database["urn"] in result.one("kubernetes:helm.sh/v3:Release", "openbao-chart")["dependsOn"]


def test_init_runs_against_the_host_port_with_keys_under_the_data_folder() -> None:
    phase1 = planned("phase1").outputs
    init = planned("phase2").one(INIT, "openbao-init")
    assert init["inputs"]["address"] == f"http://127.0.0.1:{phase1[outputs.OPENBAO_PORT]['value']}"
    assert init["inputs"]["keys_file"] == f"{phase1[outputs.DATA_DIR]['value']}/platform/secrets/openbao-init.json"
    assert (init["inputs"]["key_shares"], init["inputs"]["key_threshold"]) == (1, 1)
    assert init["additionalSecretOutputs"] == ["root_token", "unseal_keys"]


def test_key_shares_and_threshold_come_from_config() -> None:
    inputs = planned("dev", openbaoKeyShares="3", openbaoKeyThreshold="2").one(INIT, "openbao-init")["inputs"]
    assert (inputs["key_shares"], inputs["key_threshold"]) == (3, 2)


def test_init_waits_for_the_release() -> None:
    result = planned("phase2")
    release = result.one("kubernetes:helm.sh/v3:Release", "openbao-chart")
    assert release["urn"] in result.one(INIT, "openbao-init")["dependsOn"]


def test_every_generated_credential_is_written_to_the_vault_after_init() -> None:
    result = planned("phase2")
    init = result.one(INIT, "openbao-init")
    writes = {r["inputs"]["path"]: r for r in result.find("pulumi-python:dynamic/openbao:KvSecret")}
    assert set(writes) == {"postgres/gitlab", "postgres/openbao", "redis", "minio", "gitlab/root", "gitlab/bootstrap/admin_token"}
    for write in writes.values():
        assert init["urn"] in write["dependsOn"]
        assert write["inputs"]["token"] == "[secret]"
        assert set(write["inputs"]["data"].values()) == {"[secret]"}
