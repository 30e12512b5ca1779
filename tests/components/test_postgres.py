"""PostgreSQL on CloudNativePG: the cluster, roles, databases, and re-adoption of preserved data.
The adoption step's script is run for real, with fake `kind`, `kubectl` and `docker` on PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

import versions
from components import postgres as pg
from components.storage import Provisioned, Volume
from stacks.config import PROJECT_DIR
from tests.plans import COMMAND, fake_command, planned, run_script

CLUSTER = "kubernetes:postgresql.cnpg.io/v1:Cluster"
DATABASE = "kubernetes:postgresql.cnpg.io/v1:Database"
SECRET = "kubernetes:core/v1:Secret"


def test_operator_chart_is_pinned_from_its_repository() -> None:
    inputs = planned("phase2").one("kubernetes:helm.sh/v3:Release", "postgres-operator")["inputs"]
    assert (inputs["chart"], inputs["version"], inputs["repositoryOpts"]["repo"]) == (
        "cloudnative-pg",
        versions.CNPG_CHART_VERSION,
        versions.CNPG_CHART_REPO,
    )


def test_the_cluster_is_postgresql_cnpg_as_the_troubleshooting_commands_name_it() -> None:
    """`kubectl wait cluster/postgresql-cnpg` (the old blueprint's, and docs/guide/troubleshooting.md's)."""
    inputs = planned("phase2").one(CLUSTER, "postgres-cluster")["inputs"]
    assert (inputs["metadata"]["name"], inputs["metadata"]["namespace"]) == ("postgresql-cnpg", "postgres")
    assert "cluster/postgresql-cnpg" in (PROJECT_DIR / "docs" / "guide" / "troubleshooting.md").read_text()


def test_cluster_runs_postgresql_17_pinned_by_digest() -> None:
    spec = planned("phase2").one(CLUSTER, "postgres-cluster")["inputs"]["spec"]
    assert spec["imageName"].startswith("ghcr.io/cloudnative-pg/postgresql:17.")
    assert "@sha256:" in spec["imageName"]
    assert spec["instances"] == 1


def test_cluster_bootstraps_gitlabs_database_owned_by_gitlab() -> None:
    initdb = planned("phase2").one(CLUSTER, "postgres-cluster")["inputs"]["spec"]["bootstrap"]["initdb"]
    assert (initdb["database"], initdb["owner"], initdb["secret"]["name"]) == ("gitlabhq_production", "gitlab", "postgresql-cnpg-gitlab")


def test_openbao_role_is_managed_with_its_own_secret() -> None:
    [role] = planned("phase2").one(CLUSTER, "postgres-cluster")["inputs"]["spec"]["managed"]["roles"]
    assert (role["name"], role["login"], role["passwordSecret"]["name"]) == ("openbao", True, "postgresql-cnpg-openbao")


@pytest.mark.parametrize("role", ["gitlab", "openbao"])
def test_role_secrets_are_basic_auth_with_a_generated_password(role: str) -> None:
    inputs = planned("phase2").one(SECRET, f"postgres-{role}-secret")["inputs"]
    assert inputs["type"] == "kubernetes.io/basic-auth"
    assert inputs["metadata"]["labels"] == {"cnpg.io/reload": "true"}
    assert inputs["stringData"] == {"password": "[secret]", "username": "[secret]"}


def test_gitlabs_database_gets_its_extensions_and_is_never_dropped() -> None:
    spec = planned("phase2").one(DATABASE, "postgres-gitlabhq-production-database")["inputs"]["spec"]
    assert (spec["name"], spec["owner"], spec["databaseReclaimPolicy"]) == ("gitlabhq_production", "gitlab", "retain")
    assert [extension["name"] for extension in spec["extensions"]] == ["pg_trgm", "btree_gist", "amcheck"]


def test_openbaos_database_is_owned_by_its_role() -> None:
    spec = planned("phase2").one(DATABASE, "postgres-openbao-database")["inputs"]["spec"]
    assert (spec["name"], spec["owner"], spec["cluster"], spec["databaseReclaimPolicy"]) == (
        "openbao",
        "openbao",
        {"name": "postgresql-cnpg"},
        "retain",
    )


def test_cluster_is_awaited_until_ready_and_databases_until_applied() -> None:
    result = planned("phase2")
    assert result.one(CLUSTER, "postgres-cluster")["inputs"]["metadata"]["annotations"]["pulumi.com/waitFor"] == "condition=Ready"
    for database in result.find(DATABASE):
        assert database["inputs"]["metadata"]["annotations"]["pulumi.com/waitFor"] == "jsonpath={.status.applied}=true"


def test_the_adoption_step_runs_before_the_cluster_and_after_its_volume() -> None:
    result = planned("phase2")
    adopt = result.one(COMMAND, "postgres-adopt-data")
    assert adopt["urn"] in result.one(CLUSTER, "postgres-cluster")["dependsOn"]
    assert result.one("kubernetes:core/v1:PersistentVolume", "storage-postgres-postgresql-cnpg-1")["urn"] in adopt["dependsOn"]


def test_the_adopted_claim_is_what_cloudnativepg_restores_from() -> None:
    claim = yaml.safe_load(planned("phase2").one(COMMAND, "postgres-adopt-data")["inputs"]["stdin"])
    assert claim["metadata"]["name"] == "postgresql-cnpg-1"
    assert claim["metadata"]["labels"]["cnpg.io/cluster"] == "postgresql-cnpg"
    assert claim["metadata"]["annotations"]["cnpg.io/nodeSerial"] == "1"
    assert "ownerReferences" not in claim["metadata"]
    assert claim["spec"]["volumeName"] == "blueprint-postgres-postgresql-cnpg-1"


FAKE_KUBECTL = """\
echo "$*" >> "$CALLS"
case "$*" in
  *" get clusters.postgresql.cnpg.io "*)
    [ -f "$CLUSTER_EXISTS" ] && exit 0
    echo 'Error from server (NotFound): clusters.postgresql.cnpg.io "postgresql-cnpg" not found' >&2; exit 1 ;;
  *" apply "*) cat > "$APPLIED" ;;
esac
"""


@pytest.fixture
def adoption(tmp_path: Path) -> dict[str, str]:
    fake_command(tmp_path / "bin", "kubectl", FAKE_KUBECTL)
    fake_command(tmp_path / "bin", "kind", 'echo "apiVersion: v1 # $*"\n')
    return {
        "BIN": str(tmp_path / "bin"),
        "CALLS": str(tmp_path / "calls"),
        "APPLIED": str(tmp_path / "applied"),
        "CLUSTER_EXISTS": str(tmp_path / "cluster-exists"),
        "PGDATA_DIR": str(tmp_path / "volume" / "pgdata"),
    }


def adopt(env: dict[str, str]) -> str:
    done = run_script(planned("phase2").one(COMMAND, "postgres-adopt-data"), "create", path_prefix=Path(env["BIN"]), env=env)
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_an_empty_volume_is_left_to_initdb(adoption: dict[str, str]) -> None:
    assert "initialises a new cluster" in adopt(adoption)
    assert not Path(adoption["CALLS"]).exists()


def test_preserved_data_without_a_cluster_is_adopted(adoption: dict[str, str]) -> None:
    Path(adoption["PGDATA_DIR"]).mkdir(parents=True)
    adopt(adoption)
    assert yaml.safe_load(Path(adoption["APPLIED"]).read_text())["metadata"]["annotations"]["cnpg.io/nodeSerial"] == "1"


def test_a_running_cluster_is_not_adopted_again(adoption: dict[str, str]) -> None:
    Path(adoption["PGDATA_DIR"]).mkdir(parents=True)
    Path(adoption["CLUSTER_EXISTS"]).touch()
    adopt(adoption)
    assert not Path(adoption["APPLIED"]).exists()


def test_passwords_never_appear_in_the_plan() -> None:
    assert "stand-in-password" not in planned("phase2").to_json()


def test_postgres_host_is_the_read_write_service() -> None:
    assert planned("phase2").outputs["postgresHost"]["value"] == f"{pg.CLUSTER}-rw.postgres.svc.cluster.local"


NOBODY = 65534


@pytest.fixture
def postgres_own_volume() -> Iterator[tuple[dict[str, str], int | None]]:
    """Preserved data in a volume folder that is Postgres' own (0700, uid 26), which the host user
    cannot look into, with fake `kind`, `kubectl` and `docker`; returns the environment and the
    user to run as (None: the current, unprivileged user). Under a world-traversable parent."""
    parent = Path(tempfile.mkdtemp(prefix="blueprint-test-", dir="/tmp"))
    parent.chmod(0o755)
    fake_command(parent / "bin", "kubectl", FAKE_KUBECTL)
    fake_command(parent / "bin", "kind", 'echo "apiVersion: v1 # $*"\n')
    (parent / "out").mkdir(mode=0o777)
    (parent / "out").chmod(0o777)
    volume = parent / "volume"
    (volume / "pgdata").mkdir(parents=True)
    env = {
        "BIN": str(parent / "bin"),
        "CALLS": str(parent / "out" / "calls"),
        "APPLIED": str(parent / "out" / "applied"),
        "CLUSTER_EXISTS": str(parent / "out" / "cluster-exists"),
        "PGDATA_DIR": str(volume / "pgdata"),
    }
    if os.geteuid() == 0:
        os.chown(volume, 26, 26)
        volume.chmod(0o700)
        yield env, NOBODY
    else:
        volume.chmod(0o000)
        yield env, None
    volume.chmod(0o755)
    shutil.rmtree(parent)


def adopt_as(env: dict[str, str], user: int | None, docker_exit: int) -> subprocess.CompletedProcess[str]:
    fake_command(Path(env["BIN"]), "docker", f'echo "$*" > {env["CALLS"]}.docker\nexit {docker_exit}\n')
    command = planned("phase2").one(COMMAND, "postgres-adopt-data")
    return run_script(command, "create", path_prefix=Path(env["BIN"]), env=env, user=user)


def test_preserved_data_the_host_user_cannot_see_is_found_through_a_one_shot_container(
    postgres_own_volume: tuple[dict[str, str], int | None],
) -> None:
    """The volume's folder is Postgres' alone: a look from the host would find nothing, and
    CloudNativePG would initialise over the preserved data."""
    env, user = postgres_own_volume
    done = adopt_as(env, user, docker_exit=0)
    assert done.returncode == 0, done.stderr
    assert Path(env["APPLIED"]).exists(), "the preserved data must be adopted"
    volume = str(Path(env["PGDATA_DIR"]).parent)
    probe = f"-v {volume}:/blueprint-volume:ro --entrypoint test {versions.KIND_NODE_IMAGE} -d /blueprint-volume/pgdata"
    assert probe in Path(env["CALLS"] + ".docker").read_text()


def test_a_look_that_fails_stops_the_adoption_rather_than_initialise_over_the_data(
    postgres_own_volume: tuple[dict[str, str], int | None],
) -> None:
    env, user = postgres_own_volume
    done = adopt_as(env, user, docker_exit=125)  # Docker is down
    assert done.returncode == 1
    assert "cannot tell whether" in done.stderr
    assert not Path(env["APPLIED"]).exists()


PG_VOLUME = Volume(namespace="postgres", claim="postgresql-cnpg-1", size="1Gi", owner=pg.POSTGRES_USER)


def test_kinds_static_volume_needs_its_pv_and_host_folder() -> None:
    with pytest.raises(ValueError, match="a static volume needs its PV"):
        pg.PostgresArgs(volume=PG_VOLUME, volume_resource=None, data_host_path="/data/pg")


@pytest.mark.parametrize("with_pv", [True, False])
def test_a_provisioned_claim_has_no_pv_and_needs_the_clusters_context(with_pv: bool) -> None:
    with pytest.raises(ValueError, match="a provisioned claim has no PV"):
        pg.PostgresArgs(
            volume=PG_VOLUME,
            volume_resource=object() if with_pv else None,  # type: ignore[arg-type]
            provisioned=Provisioned(storage_class="", keep=True),
            kube_context="" if with_pv is False else "ctx",
        )


def test_on_an_existing_cluster_postgres_makes_no_adoption_step_and_releases_its_claim_instead() -> None:
    result = planned("phase2", cluster="existing", kubeContext="ctx", domain="platform.example.com")
    assert result.find(COMMAND, "postgres-adopt-data") == []
    step = result.one(COMMAND, "postgres-release-claim")
    assert step["inputs"]["environment"] == {
        "KUBE_CONTEXT": "ctx",
        "NAMESPACE": "postgres",
        "RELEASED_CLAIM": "postgresql-cnpg-1",
        "PRESERVE_DATA": "false",
    }
    assert "create" not in step["inputs"]
