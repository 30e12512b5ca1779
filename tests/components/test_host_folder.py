"""Folders a stack owns on the host: what `up` creates and refuses, and what `destroy` does to
them for both `preserveData` values. Exercised through phase1's data folder, running the recorded
`local.Command` scripts for real, as pulumi-command does (`/bin/sh -c`, recorded environment)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import versions
from components.kind_cluster import REGISTRY_HOSTS_SUBDIR
from tests.plans import COMMAND, fake_command, planned, run_script


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A data folder under a world-traversable parent (not pytest's 0700 tmp), so an unprivileged
    user can be tested against it."""
    parent = Path(tempfile.mkdtemp(prefix="blueprint-test-", dir="/tmp"))
    parent.chmod(0o755)
    yield parent / "data"
    for path in parent.rglob("*"):
        if path.is_dir():
            path.chmod(0o755)  # undo what a test locked
    shutil.rmtree(parent)


def _fill(folder: Path, **config: str) -> None:
    """The data folder as an `up` leaves it: created by the data-folder command, then written to."""
    created = run_script(planned("phase1", dataDir=str(folder), **config).one(COMMAND, "kind-data-folder"), "create")
    assert created.returncode == 0, created.stderr
    (folder / "volumes" / "pg").mkdir(parents=True)
    (folder / "volumes" / "pg" / "PG_VERSION").write_text("17\n")


def test_data_folder_create_makes_the_registry_hosts_folder(data_dir: Path) -> None:
    command = planned("phase1", dataDir=str(data_dir)).one(COMMAND, "kind-data-folder")
    assert run_script(command, "create").returncode == 0
    assert (data_dir / REGISTRY_HOSTS_SUBDIR).is_dir()


def test_data_folder_can_be_created_again_by_its_own_stack(data_dir: Path) -> None:
    _fill(data_dir)
    command = planned("phase1", dataDir=str(data_dir)).one(COMMAND, "kind-data-folder")
    assert run_script(command, "update").returncode == 0
    assert (data_dir / "volumes" / "pg" / "PG_VERSION").exists()


def test_data_folder_holding_foreign_files_is_refused(data_dir: Path) -> None:
    data_dir.mkdir()
    (data_dir / "thesis.tex").write_text("mine")
    done = run_script(planned("phase1", dataDir=str(data_dir)).one(COMMAND, "kind-data-folder"), "create")
    assert done.returncode == 1
    assert "holds files blueprint did not write" in done.stderr


def test_data_folder_of_another_stack_is_refused(data_dir: Path) -> None:
    _fill(data_dir)
    done = run_script(planned("dev", dataDir=str(data_dir)).one(COMMAND, "kind-data-folder"), "create")
    assert done.returncode == 1
    assert "belongs to blueprint/phase1; give blueprint/dev its own folder" in done.stderr


def test_wipe_refuses_a_folder_this_stack_does_not_own(data_dir: Path) -> None:
    _fill(data_dir)
    done = run_script(planned("dev", dataDir=str(data_dir)).one(COMMAND, "kind-data-folder"), "delete")
    assert done.returncode == 1
    assert (data_dir / "volumes" / "pg" / "PG_VERSION").exists()


def test_destroy_with_preserve_data_false_removes_the_data_folder(data_dir: Path) -> None:
    _fill(data_dir)
    command = planned("phase1", dataDir=str(data_dir), preserveData="false").one(COMMAND, "kind-data-folder")
    done = run_script(command, "delete")
    assert done.returncode == 0, done.stderr
    assert not data_dir.exists()


def test_destroy_with_preserve_data_true_leaves_the_data_untouched(data_dir: Path) -> None:
    _fill(data_dir)
    before = sorted(str(p) for p in data_dir.rglob("*"))
    command = planned("phase1", dataDir=str(data_dir), preserveData="true").one(COMMAND, "kind-data-folder")
    done = run_script(command, "delete")
    assert done.returncode == 0, done.stderr
    assert sorted(str(p) for p in data_dir.rglob("*")) == before
    assert (data_dir / "volumes" / "pg" / "PG_VERSION").read_text() == "17\n"


NOBODY = 65534


@pytest.fixture
def locked_data_dir(data_dir: Path) -> tuple[Path, int | None]:
    """A data folder of an unprivileged user, holding a folder that user cannot empty, as a pod's
    files (Postgres: UID 26, mode 0700) are for the host user. Returns the folder and the user to
    run as (None: the current, unprivileged user)."""
    _fill(data_dir)
    locked = data_dir / "volumes" / "pg"
    if os.geteuid() != 0:
        locked.chmod(0o500)
        return data_dir, None
    for path in [data_dir, *data_dir.rglob("*")]:
        os.chown(path, NOBODY, NOBODY)
    os.chown(locked, 26, 26)
    locked.chmod(0o700)
    return data_dir, NOBODY


@pytest.fixture
def fake_docker_dir() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="blueprint-bin-", dir="/tmp"))
    folder.chmod(0o777)  # the unprivileged user records its calls here
    yield folder
    shutil.rmtree(folder)


def test_wipe_removes_pod_owned_files_through_a_one_shot_container_of_the_node_image(
    locked_data_dir: tuple[Path, int | None], fake_docker_dir: Path
) -> None:
    data_dir, user = locked_data_dir
    calls = fake_docker_dir / "calls"
    fake_command(fake_docker_dir, "docker", f'echo "$*" > {calls}\n')
    command = planned("phase1", dataDir=str(data_dir)).one(COMMAND, "kind-data-folder")
    run_script(command, "delete", path_prefix=fake_docker_dir, user=user)
    expected = (
        f"run --rm --network none --user 0 -v {data_dir}:/blueprint-data --entrypoint find {versions.KIND_NODE_IMAGE} "
        "/blueprint-data -mindepth 1 ! -path /blueprint-data/.blueprint-owner ! -path /blueprint-data/.blueprint-wiping -delete"
    )
    assert calls.read_text().strip() == expected


def test_wipe_fails_loudly_when_the_data_folder_survives(locked_data_dir: tuple[Path, int | None], fake_docker_dir: Path) -> None:
    data_dir, user = locked_data_dir
    fake_command(fake_docker_dir, "docker", "exit 0\n")  # a container that removed nothing
    command = planned("phase1", dataDir=str(data_dir)).one(COMMAND, "kind-data-folder")
    done = run_script(command, "delete", path_prefix=fake_docker_dir, user=user)
    assert done.returncode == 1
    assert f"could not remove {data_dir}" in done.stderr


def test_a_wipe_that_failed_half_way_can_be_run_again(locked_data_dir: tuple[Path, int | None], fake_docker_dir: Path) -> None:
    data_dir, user = locked_data_dir
    fake_command(fake_docker_dir, "docker", "exit 1\n")  # Docker is down
    command = planned("phase1", dataDir=str(data_dir)).one(COMMAND, "kind-data-folder")
    run_script(command, "delete", path_prefix=fake_docker_dir, user=user)
    assert (data_dir / ".blueprint-owner").exists(), "the marker must outlive a failed wipe"
    again = run_script(command, "delete", path_prefix=fake_docker_dir, user=user)
    assert "does not name" not in again.stderr


def test_preserve_data_change_updates_the_data_folder_in_place() -> None:
    keep = planned("phase1", preserveData="true").one(COMMAND, "kind-data-folder")
    wipe = planned("phase1", preserveData="false").one(COMMAND, "kind-data-folder")
    assert keep["inputs"]["delete"] != wipe["inputs"]["delete"]
    assert "delete" not in keep["replaceOnChanges"]
    assert keep["inputs"]["update"] == keep["inputs"]["create"]


def test_a_volume_folder_a_pod_took_over_does_not_fail_the_next_up(data_dir: Path) -> None:
    command = planned("phase2").one(COMMAND, "storage-platform-folder")
    folder = data_dir / "platform"
    assert run_script(command, "create", env={"FOLDER": str(folder)}).returncode == 0
    taken = folder / "volumes" / "redis" / "valkey-data"
    os.chown(taken, 999, 999)  # what a chart's init container may do
    done = run_script(command, "update", env={"FOLDER": str(folder)})
    assert done.returncode == 0, done.stderr


def test_volume_folders_are_created_world_writable(data_dir: Path) -> None:
    command = planned("phase2").one(COMMAND, "storage-platform-folder")
    folder = data_dir / "platform"
    assert run_script(command, "create", env={"FOLDER": str(folder)}).returncode == 0
    assert (folder / "volumes" / "postgres" / "pg-1").stat().st_mode & 0o777 == 0o777


def test_an_up_over_a_folder_wiped_half_way_is_refused(locked_data_dir: tuple[Path, int | None], fake_docker_dir: Path) -> None:
    """The host user's files (the secrets) are gone and the pods' (the databases) remain: new
    secrets beside old data would lock GitLab, MinIO and OpenBao out of it."""
    data_dir, user = locked_data_dir
    fake_command(fake_docker_dir, "docker", "exit 1\n")  # Docker is down
    command = planned("phase1", dataDir=str(data_dir)).one(COMMAND, "kind-data-folder")
    run_script(command, "delete", path_prefix=fake_docker_dir, user=user)
    done = run_script(command, "create", user=user)
    assert done.returncode == 1
    assert "stopped half-way" in done.stderr


def test_the_platform_folder_is_not_claimed_inside_a_data_folder_wiped_half_way(tmp_path: Path) -> None:
    """phase2's claim runs again over a data folder whose own wipe (phase1's) stopped half-way."""
    data = tmp_path / "data"
    (data / "platform").mkdir(parents=True)
    (data / ".blueprint-wiping").touch()
    claim = planned("phase2").one(COMMAND, "storage-platform-folder")
    done = run_script(claim, "create", env={"FOLDER": str(data / "platform")})
    assert done.returncode == 1
    assert f"a destroy that removes {data} stopped half-way" in done.stderr
