"""GitLab's release: the external data tier by Secret name, every bundled part off, Envoy on the
host-mapped NodePorts, placement on the GitLab nodes, and the three object storage formats."""

from __future__ import annotations

import configparser
import json
from typing import Any

import pytest
import yaml

import versions
from apps_manifest import APPS_DIR
from components import gitlab as gl
from components import gitlab_gateway as gw
from stacks import outputs
from tests.plans import planned

RELEASE = "kubernetes:helm.sh/v3:Release"
S3 = {"endpoint": "http://minio.minio.svc.cluster.local:9000", "access_key": "AKIA", "secret_key": "SECRET"}


def values() -> dict[str, Any]:
    return dict(planned("phase2").one(RELEASE, "gitlab-chart")["inputs"]["values"])


def test_fog_connection_has_the_keys_of_the_charts_minio_example() -> None:
    # examples/objectstorage/rails.minio.yaml: provider, region, keys, signature version, endpoint, path_style
    connection = yaml.safe_load(gl.fog_connection(**S3))
    assert connection == {
        "provider": "AWS",
        "region": "us-east-1",
        "aws_access_key_id": "AKIA",
        "aws_secret_access_key": "SECRET",
        "aws_signature_version": 4,
        "endpoint": "http://minio.minio.svc.cluster.local:9000",
        "path_style": True,
    }


def test_registry_storage_has_the_keys_of_the_charts_minio_example() -> None:
    # examples/objectstorage/registry.minio.yaml: v4auth, regionendpoint, pathstyle, region, bucket, keys
    s3 = yaml.safe_load(gl.registry_storage(**S3))["s3_v2"]
    assert {key: s3[key] for key in ("v4auth", "regionendpoint", "pathstyle", "bucket", "accesskey", "secretkey")} == {
        "v4auth": True,
        "regionendpoint": "http://minio.minio.svc.cluster.local:9000",
        "pathstyle": True,
        "bucket": "registry",
        "accesskey": "AKIA",
        "secretkey": "SECRET",
    }
    assert s3["secure"] is False


def test_registry_storage_uses_the_s3_v2_driver_with_path_style() -> None:
    # GitLab 19 removed the SDK v1 `s3` driver (gitlab-org/gitlab#523095). The v2 driver reads
    # `pathstyle` (container-registry s3-aws/common ParamPathStyle, v2/s3.go UsePathStyle); MinIO needs it.
    storage = yaml.safe_load(gl.registry_storage(**S3))
    assert list(storage) == ["s3_v2"]
    assert storage["s3_v2"]["pathstyle"] is True
    assert "forcepathstyle" not in storage["s3_v2"]


def test_backup_storage_is_an_s3cmd_ini_without_https() -> None:
    # doc/installation/migration/bundled_chart_migration.md: [default] access_key, secret_key, host_base, host_bucket, use_https
    parser = configparser.ConfigParser()
    parser.read_string(gl.backup_storage(**S3))
    section = parser["default"]
    assert (section["access_key"], section["secret_key"]) == ("AKIA", "SECRET")
    assert section["host_base"] == section["host_bucket"] == "minio.minio.svc.cluster.local:9000"
    assert section["use_https"] == "False"


def test_chart_is_pinned_waits_long_and_skips_its_crds() -> None:
    inputs = planned("phase2").one(RELEASE, "gitlab-chart")["inputs"]
    assert (inputs["chart"], inputs["version"], inputs["repositoryOpts"]["repo"]) == ("gitlab", "10.1.4", versions.GITLAB_CHART_REPO)
    assert inputs["timeout"] >= 900
    assert inputs["skipCrds"] is True


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("installCertmanager",), False),
        (("global", "gatewayApi", "configureCertmanager"), False),
        (("prometheus", "install"), False),
        (("gitlab-runner", "install"), False),
        (("global", "openbao", "enabled"), False),
        (("global", "minio", "enabled"), False),
        (("postgresql", "install"), False),
        (("redis", "install"), False),
        (("envoy-gateway", "crds", "gatewayAPI", "safeUpgradePolicy", "enabled"), False),
    ],
)
def test_every_bundled_part_is_off(path: tuple[str, ...], value: bool) -> None:
    node: Any = values()
    for key in path:
        node = node[key]
    assert node is value


def test_postgres_and_redis_are_the_external_ones_by_secret_name() -> None:
    global_ = values()["global"]
    assert global_["psql"] == {
        "host": "postgresql-cnpg-rw.postgres.svc.cluster.local",
        "port": 5432,
        "database": "gitlabhq_production",
        "username": "gitlab",
        "password": {"secret": gl.PSQL_SECRET, "key": "password"},
    }
    assert global_["redis"]["host"] == "valkey.redis.svc.cluster.local"
    assert global_["redis"]["auth"] == {"enabled": True, "secret": gl.REDIS_SECRET, "key": "password"}


def test_gitlab_main_and_ci_connections_use_one_database() -> None:
    # GitLab 19 requires no separate `ci` database: no `global.psql.ci` pointing elsewhere.
    assert "ci" not in values()["global"]["psql"]


def test_the_registry_metadata_database_is_off_explicitly_so_a_kept_registry_stays_reachable() -> None:
    """The chart refuses its default `prefer` with external PostgreSQL (templates/_checkConfig_registry.tpl); on
    over a registry that holds images, they become unreachable (gitlab-org/gitlab#600955): preserveData keeps them."""
    assert values()["registry"]["database"] == {"enabled": False}


def test_object_storage_uses_only_buckets_gitlabs_minio_user_may_use() -> None:
    app_config = values()["global"]["appConfig"]
    assert app_config["object_store"]["connection"] == {"secret": gl.OBJECT_STORE_SECRET, "key": "connection"}
    used = {app_config[kind]["bucket"] for kind in gl.BUCKET_OF} | {app_config["backups"]["bucket"], app_config["backups"]["tmpBucket"]}
    used.add(values()["global"]["registry"]["bucket"])
    policy = planned("phase2").one("kubernetes:core/v1:ConfigMap", "minio-policies")["inputs"]["data"]["gitlab.json"]
    [statement] = [statement for statement in json.loads(policy)["Statement"] if statement["Effect"] == "Allow"]
    assert {f"arn:aws:s3:::{bucket}" for bucket in used} | {f"arn:aws:s3:::{bucket}/*" for bucket in used} <= set(statement["Resource"])
    assert values()["registry"]["storage"] == {"secret": gl.REGISTRY_STORAGE_SECRET, "key": "config", "redirect": {"disable": True}}


def test_a_bucket_gitlabs_minio_user_may_not_use_is_refused() -> None:
    with pytest.raises(ValueError, match=r"may not use: \['runner-cache'\]; add them to components.minio.GITLAB_BUCKETS"):
        gl._check_buckets({"lfs": "git-lfs", "artifacts": "runner-cache"})


def test_envoy_is_a_node_port_on_the_ports_phase1_maps() -> None:
    phase1 = planned("phase1").outputs
    service = values()["gatewayApiResources"]["envoy"]["proxySpec"]["provider"]["kubernetes"]["envoyService"]
    assert (service["type"], service["externalTrafficPolicy"], service["name"]) == ("NodePort", "Cluster", gw.ENVOY_SERVICE)
    ports = {port["port"]: port["nodePort"] for port in service["patch"]["value"]["spec"]["ports"]}
    assert ports == {
        80: phase1[outputs.GATEWAY_HTTP_NODE_PORT]["value"],
        443: phase1[outputs.GATEWAY_HTTPS_NODE_PORT]["value"],
        22: phase1[outputs.GATEWAY_SSH_NODE_PORT]["value"],  # chart 10.1's SSH listener: 22, whatever global.shell.port says
    }


def test_gitlab_pods_run_on_the_nodes_labelled_for_gitlab() -> None:
    phase1 = planned("phase1").outputs
    selector = {phase1[outputs.NODE_LABEL_KEY]["value"]: phase1[outputs.GITLAB_NODE_LABEL]["value"]}
    assert values()["global"]["nodeSelector"] == selector
    assert values()["envoy-gateway"]["deployment"]["pod"]["nodeSelector"] == selector
    assert (
        values()["gatewayApiResources"]["envoy"]["proxySpec"]["provider"]["kubernetes"]["envoyDeployment"]["pod"]["nodeSelector"]
        == selector
    )


def test_hosts_https_ssh_port_and_ca() -> None:
    global_ = values()["global"]
    assert global_["hosts"] == {"domain": "local.example.net", "https": True}
    assert global_["shell"]["port"] == planned("phase1").outputs[outputs.SSH_PORT]["value"]
    assert global_["certificates"]["customCAs"] == [{"secret": "blueprint-ca"}]


def test_gitaly_lands_on_its_static_volume() -> None:
    persistence = values()["gitlab"]["gitaly"]["persistence"]
    assert persistence == {"storageClass": "blueprint-static", "size": "20Gi", "matchLabels": {}}


def test_rails_secrets_and_host_keys_survive_a_destroy() -> None:
    result = planned("phase2")
    data_dir = planned("phase1").outputs[outputs.DATA_DIR]["value"]
    rails = result.one("pulumi-python:dynamic/blueprint:HostSecret", "gitlab-rails-secrets")["inputs"]
    assert (rails["kind"], rails["path"]) == ("gitlab-rails-secrets", f"{data_dir}/platform/secrets/gitlab-rails-secrets.yml")
    assert values()["global"]["railsSecrets"] == {"secret": gl.RAILS_SECRET}
    assert result.one("kubernetes:core/v1:Secret", "gitlab-rails-secret")["inputs"]["stringData"] == {"secrets.yml": "[secret]"}


def test_the_values_hold_no_secret() -> None:
    text = str(values())
    assert "stand-in" not in text
    assert "PRIVATE KEY" not in text


def test_gitlab_waits_for_what_it_reads() -> None:
    result = planned("phase2")
    depends = set(result.one(RELEASE, "gitlab-chart")["dependsOn"])
    for type_, name in [
        ("kubernetes:postgresql.cnpg.io/v1:Database", "postgres-gitlabhq-production-database"),
        (RELEASE, "redis-chart"),
        ("kubernetes:batch/v1:Job", "minio-buckets"),
        ("kubernetes:core/v1:Secret", "tls-gitlab-tls"),
        ("kubernetes:helm.sh/v4:Chart", "gateway-crds-chart"),
        ("kubernetes:core/v1:PersistentVolume", "storage-gitlab-repo-data-gitlab-gitaly-0"),
    ]:
        assert result.one(type_, name)["urn"] in depends, name


def test_the_apps_get_a_listener_on_gitlabs_gateway_for_their_namespace_only() -> None:
    result = planned("phase2")
    patch = result.one("kubernetes:gateway.networking.k8s.io/v1:GatewayPatch", "gitlab-apps-listener")
    assert (patch["inputs"]["metadata"]["name"], patch["inputs"]["metadata"]["namespace"]) == ("gitlab-gw", "gitlab")
    [listener] = patch["inputs"]["spec"]["listeners"]
    assert (listener["name"], listener["port"], listener["hostname"]) == ("apps-https", 443, "*.local.example.net")
    assert listener["allowedRoutes"]["namespaces"]["selector"] == {"matchLabels": {"kubernetes.io/metadata.name": "apps"}}
    assert result.one(RELEASE, "gitlab-chart")["urn"] in patch["dependsOn"]


def test_the_guestbook_charts_route_attaches_to_that_listener() -> None:
    values = yaml.safe_load((APPS_DIR / "guestbook" / "chart" / "values.yaml").read_text())
    assert values["gateway"] == {"name": gl.GATEWAY, "namespace": "gitlab", "sectionName": gw.APPS_LISTENER}


def test_the_apps_listener_is_reapplied_whenever_the_release_changes() -> None:
    result = planned("phase2")
    patch = result.one("kubernetes:gateway.networking.k8s.io/v1:GatewayPatch", "gitlab-apps-listener")
    release = result.one(RELEASE, "gitlab-chart")
    digest = patch["inputs"]["metadata"]["annotations"][gl.APPS_LISTENER_DIGEST_ANNOTATION]
    assert digest == gl.release_digest(release["inputs"]["version"], release["inputs"]["values"])
    changed = json.loads(json.dumps(release["inputs"]["values"]))
    changed["global"]["hosts"]["domain"] = "other.example.net"
    assert gl.release_digest(release["inputs"]["version"], changed) != digest
    assert gl.release_digest("10.1.3", release["inputs"]["values"]) != digest
    assert release["urn"] in patch["dependsOn"]


GATEWAY_PATCH = "kubernetes:gateway.networking.k8s.io/v1:GatewayPatch"


def test_the_bring_up_waits_for_gitlabs_gateway_to_be_programmed() -> None:
    gate = planned("phase2").one(GATEWAY_PATCH, "gitlab-gateway-programmed")["inputs"]
    assert (gate["metadata"]["name"], gate["metadata"]["namespace"]) == (gl.GATEWAY, "gitlab")
    annotations = gate["metadata"]["annotations"]
    assert annotations["pulumi.com/waitFor"] == "condition=Programmed"
    assert annotations["pulumi.com/timeoutSeconds"] == str(gw.PROGRAMMED_TIMEOUT_SECONDS)
    # Annotations only: the gate owns no listener or other field of the chart's Gateway.
    assert "spec" not in gate


def test_the_programmed_gate_comes_after_every_writer_of_the_gateway() -> None:
    result = planned("phase2")
    gate = result.one(GATEWAY_PATCH, "gitlab-gateway-programmed")
    writers = [r for r in result.find(GATEWAY_PATCH) if r["name"] != gate["name"] and r["inputs"]["metadata"]["name"] == gl.GATEWAY]
    assert result.one(RELEASE, "gitlab-chart")["urn"] in gate["dependsOn"]
    for writer in writers:
        assert writer["urn"] in gate["dependsOn"], writer["name"]


def test_a_changed_gitlab_release_is_waited_for_again() -> None:
    gate = planned("phase2").one(GATEWAY_PATCH, "gitlab-gateway-programmed")["inputs"]
    digest = gate["metadata"]["annotations"][gw.RELEASE_DIGEST_ANNOTATION]
    assert digest == gl.release_digest(versions.GITLAB_CHART_VERSION, values())
    assert gl.release_digest("0.0.0", values()) != digest
    assert gl.release_digest(versions.GITLAB_CHART_VERSION, {**values(), "installCertmanager": True}) != digest


def test_gitlab_gets_one_database_its_ci_connection_on_mains() -> None:
    """GitLab's `single-database-ci-connection` mode (docs/design/decisions.md, 45): no `main` or `ci`
    of their own under global.psql, so the chart puts `ci` on `main`'s database without database tasks."""
    planned_values = values()
    assert not {"main", "ci"} & set(planned_values["global"]["psql"])
    assert gl.check_one_database(planned_values) is planned_values


@pytest.mark.parametrize("name", ["main", "ci"])
def test_a_connection_pointed_at_another_database_stops_the_plan(name: str) -> None:
    changed = json.loads(json.dumps(values()))
    changed["global"]["psql"][name] = {"database": "gitlabhq_production_ci"}
    with pytest.raises(ValueError, match=rf"global\.psql\.{name} points GitLab's {name} connection elsewhere .*drop global\.psql\.{name}"):
        gl.check_one_database(changed)
