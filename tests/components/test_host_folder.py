"""Folders a stack owns on the host: what `up` creates and refuses, and what `destroy` does to
them for both `preserveData` values. Exercised through phase1's data folder, running the recorded
`local.Command` scripts for real, as pulumi-command does (`/bin/sh -c`, recorded environment)."""

from __future__ import annotations

import atexit
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import versions
from cli.plan import ProgramFailed, plan
from components.host_folder import PRESERVE_DATA, Subfolder
from components.kind_cluster import REGISTRY_HOSTS_SUBDIR
from components.markers import OWNER_MARKER
from providers.host_secret import WIPING_MARKER, unfinished_wipe
from stacks import outputs
from stacks.config import PROJECT_DIR
from stacks.layout_record import HOST
from tests.fake_podman import FAKE_PODMAN
from tests.plans import COMMAND, fake_command, planned, run_script


def _world_traversable_folder() -> Path:
    parent = Path(tempfile.mkdtemp(prefix="blueprint-test-", dir="/tmp"))
    parent.chmod(0o755)
    return parent


def _remove_all_in(parent: Path) -> None:
    for path in parent.rglob("*"):
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o755)  # undo what a test locked
    for path in parent.iterdir():
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A data folder under a world-traversable parent (not pytest's 0700 tmp), so an unprivileged
    user can be tested against it."""
    parent = _world_traversable_folder()
    yield parent / "data"
    _remove_all_in(parent)
    parent.rmdir()


def data_folder(folder: Path, stack: str = "phase1", name: str = "kind-data-folder", **config: str) -> dict[str, Any]:
    """The command `name` of `stack` (phase1's data folder's, dev's, phase2's folders in it) as its
    plan with `dataDir` = `folder` (and `config`) records it: the plan with `config` alone, its
    FOLDER moved under `folder` as the program resolves it. One plan serves every test's folder: a
    plan over another folder changes FOLDER alone (test_a_plan_over_another_data_folder_changes_its_folder_alone)."""
    command = planned(stack, **config).one(COMMAND, name)
    planned_data = planned("phase1" if stack == "phase2" else stack, **config).outputs[outputs.DATA_DIR]["value"]
    inside = Path(command["inputs"]["environment"]["FOLDER"]).relative_to(planned_data)
    environment = {**command["inputs"]["environment"], "FOLDER": str(folder.resolve() / inside)}
    return {**command, "inputs": {**command["inputs"], "environment": environment}}


def test_a_plan_over_another_data_folder_changes_its_folder_alone(data_dir: Path) -> None:
    assert data_folder(data_dir) == planned("phase1", dataDir=str(data_dir)).one(COMMAND, "kind-data-folder")


@cache
def _claimed_once() -> Path:
    """A data folder as phase1's claim leaves it, made once a run by the real script: what it holds
    (the markers, the subfolders and their modes) names no path, so a copy of it is that claim's
    work at any path (`_fill`)."""
    parent = Path(tempfile.mkdtemp(prefix="blueprint-claimed-", dir="/tmp"))
    atexit.register(shutil.rmtree, parent, ignore_errors=True)
    created = run_script(data_folder(parent / "data"), "create")
    assert created.returncode == 0, created.stderr
    return parent / "data"


def _fill(folder: Path) -> None:
    """The data folder as an `up` leaves it: created by the data-folder command (a copy of its work,
    `_claimed_once`, with its modes), then written to."""
    shutil.copytree(_claimed_once(), folder, symlinks=True)
    (folder / "volumes" / "pg").mkdir(parents=True)
    (folder / "volumes" / "pg" / "PG_VERSION").write_text("17\n")


def test_data_folder_create_makes_the_registry_hosts_folder(data_dir: Path) -> None:
    command = data_folder(data_dir)
    assert run_script(command, "create").returncode == 0
    assert (data_dir / REGISTRY_HOSTS_SUBDIR).is_dir()


def test_data_folder_can_be_created_again_by_its_own_stack(data_dir: Path) -> None:
    _fill(data_dir)
    command = data_folder(data_dir)
    assert run_script(command, "update").returncode == 0
    assert (data_dir / "volumes" / "pg" / "PG_VERSION").exists()


def test_data_folder_holding_foreign_files_is_refused(data_dir: Path) -> None:
    data_dir.mkdir()
    (data_dir / "thesis.tex").write_text("mine")
    done = run_script(data_folder(data_dir), "create")
    assert done.returncode == 1
    assert "holds files blueprint did not write" in done.stderr


def test_data_folder_of_another_stack_is_refused(data_dir: Path) -> None:
    _fill(data_dir)
    done = run_script(data_folder(data_dir, "dev"), "create")
    assert done.returncode == 1
    assert "belongs to blueprint/phase1@offline-plan; give blueprint/dev@offline-plan its own folder" in done.stderr


def test_wipe_refuses_a_folder_this_stack_does_not_own(data_dir: Path) -> None:
    _fill(data_dir)
    done = run_script(data_folder(data_dir, "dev"), "delete")
    assert done.returncode == 1
    assert (data_dir / "volumes" / "pg" / "PG_VERSION").exists()


def test_destroy_with_preserve_data_false_removes_the_data_folder(data_dir: Path) -> None:
    _fill(data_dir)
    command = data_folder(data_dir, preserveData="false")
    done = run_script(command, "delete")
    assert done.returncode == 0, done.stderr
    assert not data_dir.exists()


def test_destroy_with_preserve_data_true_leaves_the_data_untouched(data_dir: Path) -> None:
    _fill(data_dir)
    before = sorted(str(p) for p in data_dir.rglob("*"))
    command = data_folder(data_dir, preserveData="true")
    done = run_script(command, "delete")
    assert done.returncode == 0, done.stderr
    assert sorted(str(p) for p in data_dir.rglob("*")) == before
    assert (data_dir / "volumes" / "pg" / "PG_VERSION").read_text() == "17\n"


def test_a_folder_to_keep_that_was_removed_by_hand_is_not_said_kept(data_dir: Path) -> None:
    command = data_folder(data_dir)
    done = run_script(command, "delete", env={PRESERVE_DATA: "true"})
    assert done.returncode == 0
    assert "keeping" not in done.stderr
    assert f"{data_dir} is not there (removed by hand?): nothing to keep" in done.stderr


def _stack_file(folder: Path, text: str) -> dict[str, str]:
    """A stack file of this test, as `pulumi config set` leaves it, where the recorded one would be."""
    path = folder.parent / "Pulumi.phase1.yaml"
    path.write_text(text)
    return {"STACK_FILE": str(path)}


SET_TO_KEEP = 'encryptionsalt: v1:abc\nconfig:\n  blueprint:preserveData: "true"\n'


@pytest.mark.parametrize("text", [SET_TO_KEEP, "config:\n  preserveData: true\n", "config:\n  blueprint:config:preserveData: 'true'\n"])
def test_a_plain_destroy_after_config_set_keeps_the_data_the_last_up_recorded_to_wipe(data_dir: Path, text: str) -> None:
    """`pulumi config set -s phase1 blueprint:preserveData true`, then `pulumi destroy`, no `up`
    between: the delete that runs is the one recorded, with preserveData=false; it reads the stack's
    file now, keeps the data, and says why."""
    _fill(data_dir)
    command = data_folder(data_dir, preserveData="false")
    done = run_script(command, "delete", env=_stack_file(data_dir, text))
    assert done.returncode == 0, done.stderr
    assert (data_dir / "volumes" / "pg" / "PG_VERSION").read_text() == "17\n"
    said = "Pulumi.phase1.yaml says blueprint:preserveData true (set since the last up, which recorded false), keeping"
    assert f"{said} {data_dir}" in done.stderr


@pytest.mark.parametrize("text", ["config: {}\n", 'config:\n  blueprint:preserveData: "false"\n', None])
def test_a_plain_destroy_wipes_when_the_stack_file_does_not_say_keep(data_dir: Path, text: str | None) -> None:
    _fill(data_dir)
    command = data_folder(data_dir, preserveData="false")
    env = _stack_file(data_dir, text) if text is not None else {"STACK_FILE": str(data_dir.parent / "Pulumi.phase1.yaml")}
    done = run_script(command, "delete", env=env)
    assert done.returncode == 0, done.stderr
    assert not data_dir.exists()


def test_a_moved_checkouts_wipe_goes_by_the_recorded_choice(data_dir: Path) -> None:
    """The recorded stack file and Python were the old checkout's, gone with its folder: a stack file
    in no folder says nothing, and needs no Python to read it (`uv sync` there could not help)."""
    _fill(data_dir)
    command = data_folder(data_dir, preserveData="false")
    gone = data_dir.parent / "old-checkout"
    env = {"STACK_FILE": str(gone / "Pulumi.phase1.yaml"), "CONFIG_PYTHON": str(gone / ".venv/bin/python")}
    done = run_script(command, "delete", env=env)
    assert done.returncode == 0, done.stderr
    assert not data_dir.exists()


def test_the_python_that_reads_the_stack_file_is_the_same_from_a_linked_checkout_path(tmp_path: Path) -> None:
    """`pulumi up` from a path through a link and from the real one register the same inputs: else a
    second `up` with no change updates every host folder."""
    linked = tmp_path / "checkout"
    linked.symlink_to(PROJECT_DIR)
    said = subprocess.run(
        [str(linked / ".venv/bin/python"), "-c", "from components.host_folder import CONFIG_PYTHON; print(CONFIG_PYTHON)"],
        cwd=linked, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert said.stdout.strip() == str(PROJECT_DIR / ".venv/bin/python")


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("config:\n  blueprint:preserveData: maybe\n", "neither true nor false"),
        ("config: [\n", "line 2"),
        ("- just\n- a list\n", "AttributeError"),
    ],
)
def test_a_stack_file_that_cannot_be_read_stops_the_wipe_and_says_why(data_dir: Path, text: str, why: str) -> None:
    """It may say to keep the data: nothing is removed until it can be read."""
    _fill(data_dir)
    command = data_folder(data_dir, preserveData="false")
    done = run_script(command, "delete", env=_stack_file(data_dir, text))
    assert done.returncode == 1
    assert (data_dir / "volumes" / "pg" / "PG_VERSION").exists()
    assert f"not removing {data_dir}: cannot tell what" in done.stderr
    assert why in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (os.mkfifo, "it is not a regular file"),
        (lambda path: path.symlink_to("gone.yaml"), "it is a link to gone.yaml, which does not exist"),
    ],
    ids=["a-fifo", "a-dangling-link"],
)
def test_a_stack_file_that_is_no_regular_file_stops_the_wipe_at_once(data_dir: Path, make: Callable[[Path], None], why: str) -> None:
    _fill(data_dir)
    command = data_folder(data_dir, preserveData="false")
    path = data_dir.parent / "Pulumi.phase1.yaml"
    make(path)
    done = run_script(command, "delete", env={"STACK_FILE": str(path)})
    assert done.returncode == 1
    assert (data_dir / "volumes" / "pg" / "PG_VERSION").exists()
    assert f"not removing {data_dir}: cannot tell what" in done.stderr
    assert why in done.stderr


@pytest.mark.parametrize(
    ("stack", "name", "decides"),
    [("phase1", "kind-data-folder", "phase1"), ("phase2", "storage-volumes-folder", "phase1"), ("dev", "storage-platform-folder", "dev")],
)
def test_every_wipe_reads_the_stack_file_whose_preserve_data_decides_it(stack: str, name: str, decides: str) -> None:
    """phase2 takes preserveData from phase1 (`blueprint destroy --wipe-data` sets it there); dev has its own."""
    environment = planned(stack).one(COMMAND, name)["inputs"]["environment"]
    assert Path(environment["STACK_FILE"]) == PROJECT_DIR / f"Pulumi.{decides}.yaml"
    reader = subprocess.run([environment["CONFIG_PYTHON"], "-I", "-c", "import yaml_files"], cwd="/", capture_output=True, check=False)
    assert reader.returncode == 0, "the Python that reads the stack file has the checkout's yaml_files (and PyYAML) from any folder"


def test_a_folder_that_became_a_link_is_not_wiped_through_it(data_dir: Path, fake_docker_dir: Path) -> None:
    """Docker would mount where the link leads (`-v` resolves it) and empty that as root: a wipe
    removes nothing through a link, not even the claim of the folder it leads to."""
    _fill(data_dir)
    # As the last `up` recorded it, while it was a folder (a plan resolves links in dataDir).
    command = planned("phase1", dataDir=str(data_dir), preserveData="false").one(COMMAND, "kind-data-folder")
    moved = data_dir.with_name("elsewhere")
    data_dir.rename(moved)
    data_dir.symlink_to(moved)
    calls = fake_docker_dir / "calls"
    fake_command(fake_docker_dir, "docker", f'echo "$*" >> {calls}\n')
    done = run_script(command, "delete", path_prefix=fake_docker_dir)
    assert done.returncode == 1
    assert f"not removing {data_dir}: it is a symbolic link now (to {moved}), and blueprint removes nothing through a link" in (done.stderr)
    assert sorted(p.name for p in moved.iterdir()) == sorted([OWNER_MARKER, ".blueprint-layout", "containerd", "volumes"])
    assert (moved / "volumes" / "pg" / "PG_VERSION").exists()
    assert not calls.exists()


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
    command = data_folder(data_dir)
    run_script(command, "delete", path_prefix=fake_docker_dir, user=user)
    expected = (
        f"run --rm --network none --user 0 -v {data_dir}:/blueprint-data --entrypoint find {versions.KIND_NODE_IMAGE} "
        "/blueprint-data -mindepth 1 -xdev ! -path /blueprint-data/.blueprint-owner ! -path /blueprint-data/.blueprint-wiping "
        "! -path /blueprint-data/.blueprint-layout -delete"
    )
    assert calls.read_text().strip() == expected


def test_the_wipe_removes_pod_owned_files_through_a_podman_container(
    locked_data_dir: tuple[Path, int | None], fake_docker_dir: Path
) -> None:
    data_dir, user = locked_data_dir
    calls = fake_docker_dir / "calls"
    fake_command(fake_docker_dir, "podman", FAKE_PODMAN)
    command = data_folder(data_dir, containerEngine="podman")
    done = run_script(command, "delete", path_prefix=fake_docker_dir, user=user, env={"CALLS": str(calls)})
    wipe = f"run --rm --network none --user 0 -v {data_dir}:/blueprint-data --entrypoint find {versions.KIND_NODE_IMAGE}"
    assert any(call.startswith(wipe) for call in calls.read_text().splitlines()), done.stderr
    assert "removed through Podman" in done.stderr  # the fake removed nothing: the message names the engine


def test_wipe_fails_loudly_when_the_data_folder_survives(locked_data_dir: tuple[Path, int | None], fake_docker_dir: Path) -> None:
    data_dir, user = locked_data_dir
    fake_command(fake_docker_dir, "docker", "exit 0\n")  # a container that removed nothing
    command = data_folder(data_dir)
    done = run_script(command, "delete", path_prefix=fake_docker_dir, user=user)
    assert done.returncode == 1
    assert f"could not remove {data_dir}" in done.stderr


def test_a_wipe_that_could_not_remove_the_folder_gives_the_destroy_that_finishes_it_on_a_line_of_its_own(
    locked_data_dir: tuple[Path, int | None], fake_docker_dir: Path
) -> None:
    data_dir, user = locked_data_dir
    fake_command(fake_docker_dir, "docker", "exit 0\n")  # a container that removed nothing
    command = data_folder(data_dir)
    done = run_script(command, "delete", path_prefix=fake_docker_dir, user=user)
    assert printed_commands(done.stderr) == [["uv", "run", "blueprint", "destroy", "--wipe-data"]]


def test_no_wipe_ever_says_to_remove_a_folder_with_rm(
    locked_data_dir: tuple[Path, int | None], fake_docker_dir: Path, tmp_path: Path
) -> None:
    """`rm -rf` crosses a filesystem mounted inside, and takes what another stack claimed in the folder:
    not after a wipe that could not remove what pods own, nor kept after it, nor when files appear meanwhile."""
    data_dir, user = locked_data_dir
    command = data_folder(data_dir)
    fake_command(fake_docker_dir, "docker", "exit 0\n")  # a container that removed nothing
    said = [run_script(command, "delete", path_prefix=fake_docker_dir, user=user).stderr]
    said.append(run_script(command, "delete", user=user, env={PRESERVE_DATA: "true"}).stderr)
    meanwhile = tmp_path / "meanwhile"
    _fill(meanwhile)
    fake_command(tmp_path / "bin", "rmdir", 'touch "$2/written-meanwhile"; exit 1\n')
    said.append(run_script(data_folder(meanwhile), "delete", path_prefix=tmp_path / "bin").stderr)
    assert [any(words in text for words in ("could not remove", "stopped half-way")) for text in said] == [True] * 3, said
    assert [text for text in said if "rm -r" in text] == []


def test_a_wipe_that_failed_half_way_can_be_run_again(locked_data_dir: tuple[Path, int | None], fake_docker_dir: Path) -> None:
    data_dir, user = locked_data_dir
    fake_command(fake_docker_dir, "docker", "exit 1\n")  # Docker is down
    command = data_folder(data_dir)
    run_script(command, "delete", path_prefix=fake_docker_dir, user=user)
    assert (data_dir / ".blueprint-owner").exists(), "the marker must outlive a failed wipe"
    again = run_script(command, "delete", path_prefix=fake_docker_dir, user=user)
    assert "does not name" not in again.stderr


def test_preserve_data_change_updates_the_data_folder_in_place() -> None:
    keep = planned("phase1", preserveData="true").one(COMMAND, "kind-data-folder")
    wipe = planned("phase1", preserveData="false").one(COMMAND, "kind-data-folder")
    assert keep["inputs"]["environment"][PRESERVE_DATA] != wipe["inputs"]["environment"][PRESERVE_DATA]
    assert keep["inputs"]["delete"] == wipe["inputs"]["delete"], "one delete script, whatever preserveData says"
    assert "environment" not in keep["replaceOnChanges"]
    assert keep["inputs"]["update"] == keep["inputs"]["create"]


def _recording_docker(folder: Path, body: str = "") -> Path:
    """A fake `docker` that appends each call's arguments, one line per call, to the file returned."""
    calls = folder / "calls"
    fake_command(folder, "docker", f'echo "$*" >> {calls}\n{body}')
    return calls


def _claimed_by_phase1(data_dir: Path) -> None:
    """The data folder as phase1's claim leaves it: phase2's folders are claimed only inside it."""
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / OWNER_MARKER).write_text("blueprint/phase1@offline-plan\n")


def test_a_volume_folder_is_given_to_its_pods_user_through_a_one_shot_container(data_dir: Path, fake_docker_dir: Path) -> None:
    """The host user cannot chown to another user; root in a container of the node image can."""
    _claimed_by_phase1(data_dir)
    calls = _recording_docker(fake_docker_dir)
    folder = data_dir / "volumes" / "platform"
    claim = planned("phase2").one(COMMAND, "storage-volumes-folder")
    done = run_script(claim, "create", path_prefix=fake_docker_dir, env={"FOLDER": str(folder)})
    assert done.returncode == 0, done.stderr
    chown = 'chown -R "$0" /blueprint-volume && chmod "$1" /blueprint-volume'
    expected = (
        f"run --rm --network none --user 0 -v {folder}/postgres/postgresql-cnpg-1:/blueprint-volume --entrypoint sh "
        f"{versions.KIND_NODE_IMAGE} -c {chown} 26:26 0700"
    )
    assert expected in calls.read_text().splitlines()


def test_a_volume_folder_already_its_users_with_its_mode_is_left_alone(data_dir: Path, fake_docker_dir: Path) -> None:
    """Every `up` claims the folder again: only a folder not yet right costs a container."""
    _claimed_by_phase1(data_dir)
    calls = _recording_docker(fake_docker_dir)
    folder = data_dir / "volumes" / "platform"
    (folder / "mine").mkdir(parents=True)
    (folder / "mine").chmod(0o700)
    claim = planned("phase2").one(COMMAND, "storage-volumes-folder")
    (folder / OWNER_MARKER).write_text(claim["inputs"]["environment"]["OWNER"] + "\n")  # claimed by an earlier up
    subfolders = {"SUBFOLDERS": f"mine 0700 {os.getuid()}:{os.getgid()}", "FOLDER": str(folder)}
    done = run_script(claim, "create", path_prefix=fake_docker_dir, env=subfolders)
    assert done.returncode == 0, done.stderr
    assert not calls.exists()


def test_an_up_that_cannot_give_a_volume_folder_away_fails_and_says_why(data_dir: Path, fake_docker_dir: Path) -> None:
    """Never a pod over a folder it cannot write: the up stops, and runs again once Docker is back."""
    _claimed_by_phase1(data_dir)
    _recording_docker(fake_docker_dir, "exit 125\n")
    claim = planned("phase2").one(COMMAND, "storage-volumes-folder")
    done = run_script(claim, "create", path_prefix=fake_docker_dir, env={"FOLDER": str(data_dir / "volumes" / "platform")})
    assert done.returncode == 1
    assert "is Docker running? Start it and run the up again" in done.stderr


def refused_plan(stack: str, **config: str) -> str:
    """What the program says, refusing to plan `stack` (planned anew: the folders changed) over what
    this machine's host folders hold."""
    with pytest.raises(ProgramFailed) as failed:
        plan(stack, {f"blueprint:{key}": value for key, value in config.items()}, layout_records=HOST)
    return str(failed.value)


def test_a_folder_is_not_taken_over_inside_any_folder_wiped_half_way(data_dir: Path) -> None:
    """The volumes folder is two levels inside the data folder: every folder up counts, not just the parent."""
    (data_dir / "volumes" / "platform").mkdir(parents=True)
    (data_dir / WIPING_MARKER).write_text(f"{PHASE1_HERE}\n")
    assert f"a destroy that removes {data_dir} stopped half-way" in str(unfinished_wipe(data_dir / "volumes" / "platform"))


def test_the_offline_plan_reads_no_half_wipe_from_the_host(data_dir: Path) -> None:
    """`uv run blueprint plan`, `images`, `docs` and `diagram` plan over the configured folder, the
    user's real one: what a wipe left there is the real program's to refuse, not the plan's."""
    data_dir.mkdir(exist_ok=True)
    (data_dir / WIPING_MARKER).write_text(f"{PHASE1_HERE}\n")
    assert plan("dev", {"blueprint:dataDir": str(data_dir)}).one(COMMAND, "kind-data-folder")


def test_an_up_over_a_folder_wiped_half_way_is_refused(locked_data_dir: tuple[Path, int | None], fake_docker_dir: Path) -> None:
    """The host user's files (the secrets) are gone and the pods' (the databases) remain: new
    secrets beside old data would lock GitLab, MinIO and OpenBao out of it."""
    data_dir, user = locked_data_dir
    fake_command(fake_docker_dir, "docker", "exit 1\n")  # Docker is down
    command = data_folder(data_dir)
    run_script(command, "delete", path_prefix=fake_docker_dir, user=user)
    assert f"a destroy that removes {data_dir} stopped half-way" in refused_plan("phase1", dataDir=str(data_dir))


def test_phase2_is_refused_over_its_volumes_folder_wiped_half_way_beside_a_platform_folder_wiped_whole(data_dir: Path) -> None:
    """Both are wiped at once: the volumes folder's command stays in phase2's state, and the next up
    runs no script for it (its inputs did not change), while it claims the platform folder anew."""
    _fill(data_dir)
    (data_dir / "volumes" / "platform").mkdir()
    (data_dir / "volumes" / "platform" / WIPING_MARKER).write_text("blueprint/phase2@offline-plan\n")
    said = refused_plan("phase2", dataDir=str(data_dir))
    assert f"a destroy that removes {data_dir}/volumes/platform stopped half-way" in said
    assert "`uv run blueprint destroy --phase 2 --wipe-data`" in said


def test_dev_is_refused_over_its_volumes_folder_wiped_half_way(data_dir: Path) -> None:
    """dev claims phase2's folders in its own data folder: the same holds in it."""
    (data_dir / "volumes" / "platform").mkdir(parents=True)
    (data_dir / "volumes" / "platform" / WIPING_MARKER).write_text("blueprint/dev@offline-plan\n")
    said = refused_plan("dev", dataDir=str(data_dir))
    assert f"a destroy that removes {data_dir}/volumes/platform stopped half-way" in said
    assert """`eval "$(uv run blueprint env)" && pulumi destroy -s dev`""" in said


def test_the_offline_plan_of_a_folder_not_there_is_not_refused(data_dir: Path) -> None:
    assert not data_dir.exists()
    assert plan("dev", {"blueprint:dataDir": str(data_dir)}).resources


def printed_commands(stderr: str) -> list[list[str]]:
    """The commands a script printed for the user, each on a line of its own, indented, as words."""
    return [shlex.split(line) for line in stderr.splitlines() if line.startswith("  ")]


PHASE1_HERE = "blueprint/phase1@offline-plan"
"""phase1's owner in the plan's checkout."""
ANOTHER_CHECKOUT = "blueprint/phase1@0123456789abcdef"
"""phase1's owner in another checkout of the project (the plan's own is `blueprint/phase1@offline-plan`)."""


def test_data_folder_of_the_same_stack_in_another_checkout_is_refused(data_dir: Path) -> None:
    _fill(data_dir)
    command = data_folder(data_dir)
    done = run_script(command, "create", env={"OWNER": ANOTHER_CHECKOUT})
    assert done.returncode == 1
    assert "belongs to blueprint/phase1@offline-plan" in done.stderr
    assert "this stack in another checkout" in done.stderr
    assert (data_dir / OWNER_MARKER).read_text() == "blueprint/phase1@offline-plan\n"


def test_an_up_over_its_folder_after_the_checkout_id_was_lost_names_the_id_to_write_back(data_dir: Path) -> None:
    """A new id (`.pulumi-state/` lost) makes the checkout's own folder look another's: the claim
    names the line that gives the checkout its id back, never another folder alone (which would
    leave the data behind)."""
    _fill(data_dir)
    (data_dir / OWNER_MARKER).write_text(f"{ANOTHER_CHECKOUT}\n")
    command = data_folder(data_dir)
    done = run_script(command, "create")
    assert done.returncode == 1
    assert "mkdir -p .pulumi-state && printf '%s\\n' 0123456789abcdef > .pulumi-state/blueprint-checkout-id" in done.stderr


def test_a_marker_with_more_than_an_id_is_never_pasted_into_the_write_back(data_dir: Path) -> None:
    _fill(data_dir)
    (data_dir / OWNER_MARKER).write_text("blueprint/phase1@$(touch pwned)\n")
    command = data_folder(data_dir)
    done = run_script(command, "create")
    assert done.returncode == 1
    assert "write its id back" not in done.stderr


def test_wipe_refuses_the_folder_of_the_same_stack_in_another_checkout(data_dir: Path) -> None:
    _fill(data_dir)
    command = data_folder(data_dir)
    done = run_script(command, "delete", env={"OWNER": ANOTHER_CHECKOUT})
    assert done.returncode == 1
    assert (data_dir / "volumes" / "pg" / "PG_VERSION").exists()


@pytest.mark.parametrize(
    "data_folder_owner",
    [
        ANOTHER_CHECKOUT,
        "blueprint/phase1",  # no checkout id: not this checkout's
        "another-project/phase1@offline-plan",
        "blueprint/phase1@0123456789abcdef@offline-plan",
        "",
    ],
)
def test_phase2s_folder_is_claimed_only_inside_the_data_folder_of_this_checkouts_phase1(data_dir: Path, data_folder_owner: str) -> None:
    platform = data_dir / "platform"
    platform.mkdir(parents=True)
    (platform / OWNER_MARKER).write_text("blueprint/phase2@offline-plan\n")
    (data_dir / OWNER_MARKER).write_text(data_folder_owner + "\n")
    command = data_folder(data_dir, "phase2", "storage-platform-folder")
    done = run_script(command, "create")
    assert done.returncode == 1
    assert f"{platform} is inside {data_dir}, which" in done.stderr


def test_a_foreign_owner_is_shown_with_a_stack_names_characters_only(data_dir: Path) -> None:
    """The marker is in a folder the nodes mount: what it holds is never echoed raw to a terminal."""
    data_dir.mkdir()
    (data_dir / OWNER_MARKER).write_text("\x1b]0;pwned\x07blueprint/x$(id)\n")
    done = run_script(data_folder(data_dir), "create")
    assert done.returncode == 1
    assert "belongs to 0pwnedblueprint/xid;" in done.stderr
    assert "\x1b" not in done.stderr


def _in_a_mount_namespace(command: dict[str, object], script: str, mount: Path, *, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run a recorded script of `command` where a tmpfs holding the file `kept` is mounted at
    `mount`, inside a user and mount namespace of its own (no real root needed, nothing mounted
    outside it); stdout then says `kept` if that file outlived the script.
    """
    inputs = command["inputs"]
    assert isinstance(inputs, dict)
    environment = {**os.environ, **inputs["environment"], **env, "MOUNT": str(mount), "SCRIPT": inputs[script]}
    inside = (
        'mount -t tmpfs blueprint-test "$MOUNT" && echo kept > "$MOUNT/kept" || exit 99; '
        '/bin/sh -c "$SCRIPT"; code=$?; cat "$MOUNT/kept"; exit $code'
    )
    argv = ["unshare", "--user", "--map-root-user", "--mount", "/bin/sh", "-c", inside]
    return subprocess.run(argv, env=environment, capture_output=True, text=True, timeout=30, check=False)


@pytest.mark.usefixtures("mount_namespaces")
def test_a_wipe_over_a_filesystem_mounted_inside_removes_nothing_and_says_to_unmount_it(data_dir: Path, fake_docker_dir: Path) -> None:
    _fill(data_dir)
    mount = data_dir / "volumes" / "it's a mount"  # the mount table writes its spaces as \040
    mount.mkdir()
    command = data_folder(data_dir)
    done = _in_a_mount_namespace(command, "delete", mount, env={"PATH": f"{fake_docker_dir}:{os.environ['PATH']}"})
    assert done.returncode == 1, done.stderr
    assert done.stdout == "kept\n"
    assert "another filesystem is mounted inside it" in done.stderr
    assert ["sudo", "umount", str(mount)] in printed_commands(done.stderr)
    assert "rm -rf" not in done.stderr, "rm -rf crosses mounts"
    assert (data_dir / "volumes" / "pg" / "PG_VERSION").exists(), "refused before anything is removed"


@pytest.mark.usefixtures("mount_namespaces")
def test_the_wipe_never_removes_anything_on_another_filesystem(tmp_path: Path, fake_docker_dir: Path) -> None:
    """Even one the mount table shows under another path (here, through a link on the way to the
    folder), which the check before the wipe cannot see: every find stays on the folder's own
    filesystem (-xdev), the host's and the one-shot container's."""
    real = tmp_path / "real"
    _fill(real / "data")
    (tmp_path / "link").symlink_to(real)
    mount = real / "data" / "volumes" / "mnt"
    mount.mkdir()
    fake_command(fake_docker_dir, "docker", "exit 0\n")
    command = data_folder(real / "data")
    env = {"FOLDER": str(tmp_path / "link" / "data"), "PATH": f"{fake_docker_dir}:{os.environ['PATH']}"}
    done = _in_a_mount_namespace(command, "delete", mount, env=env)
    assert done.stdout == "kept\n", done.stderr
    assert done.returncode == 1
    assert not (real / "data" / "volumes" / "pg").exists(), "what is on the folder's own filesystem goes"


@pytest.mark.parametrize(("path", "mode"), [("../elsewhere", "0700"), ("/abs", "0700"), ("with space", "0700"), ("ok", "777")])
def test_a_subfolder_outside_the_folder_or_with_an_unclear_mode_is_refused(path: str, mode: str) -> None:
    """UP_SCRIPT reads each subfolder as `<path> <mode> <owner>` words, relative to the folder."""
    with pytest.raises(ValueError, match="subfolder"):
        Subfolder(path=path, mode=mode)


def test_of_two_first_claims_of_one_empty_folder_at_the_same_moment_only_one_wins(data_dir: Path, tmp_path: Path) -> None:
    """Both find no marker before either writes one (a fake `mkdir` holds each until both have looked):
    the marker is made only if none exists, so the second claim refuses instead of taking the folder too."""
    real_mkdir = shutil.which("mkdir")
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    bin_ = tmp_path / "bin"
    fake_command(
        bin_,
        "mkdir",
        f'touch {barrier}/"$PPID"\ni=0\nwhile [ "$(ls {barrier} | wc -l)" -lt 2 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done\n'
        f'exec {real_mkdir} "$@"\n',
    )
    command = data_folder(data_dir)
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(
            pool.map(lambda owner: run_script(command, "create", path_prefix=bin_, env={"OWNER": owner}), [PHASE1_HERE, ANOTHER_CHECKOUT])
        )
    assert sorted(done.returncode for done in runs) == [0, 1], [done.stderr for done in runs]
    winner = next(owner for owner, done in zip([PHASE1_HERE, ANOTHER_CHECKOUT], runs, strict=True) if done.returncode == 0)
    loser = next(done for done in runs if done.returncode == 1)
    # The winner names itself in the marker an instant after making it: the loser names it if it reads
    # it written, else says "another up" (never a wrong owner, never nothing).
    assert any(f"{data_dir} was claimed by {who} at the same moment" in loser.stderr for who in (winner, "another up")), loser.stderr
    assert (data_dir / OWNER_MARKER).read_text() == f"{winner}\n"


def test_a_data_folder_moved_elsewhere_is_claimed_again_by_its_own_stack(tmp_path: Path) -> None:
    """Its marker names the stack and the checkout, not the path: a `dataDir` moved with the
    platform down (no state left) needs no marker rewritten."""
    old, new = tmp_path / "old", tmp_path / "new"
    _fill(old)
    old.rename(new)
    done = run_script(data_folder(new), "create")
    assert done.returncode == 0, done.stderr


# A claim inside another owner's folder, and a wipe of a folder holding one.


def test_a_data_folder_is_not_claimed_inside_another_checkouts_data_folder(data_dir: Path) -> None:
    """That checkout's wipe would remove it with its own: refused before anything is made."""
    _fill(data_dir)
    inner = data_dir / "b"
    command = data_folder(data_dir)
    done = run_script(command, "create", env={"FOLDER": str(inner), "OWNER": ANOTHER_CHECKOUT})
    assert done.returncode == 1
    assert f"{inner} is inside {data_dir}, which {PHASE1_HERE} claimed" in done.stderr
    assert not inner.exists()


def test_dev_s_data_folder_is_not_claimed_inside_phase1s(data_dir: Path) -> None:
    _fill(data_dir)
    done = run_script(data_folder(data_dir / "dev", "dev"), "create")
    assert done.returncode == 1
    assert f"is inside {data_dir}, which {PHASE1_HERE} claimed" in done.stderr
    assert not (data_dir / "dev").exists()


@pytest.mark.parametrize(
    "inner_owner",
    [ANOTHER_CHECKOUT, "blueprint/dev@offline-plan", "blueprint/phase2@0123456789abcdef", "blueprint/phase2", "blueprint/phase1", ""],
)
def test_a_wipe_removes_nothing_while_a_folder_inside_is_claimed_by_another_owner(data_dir: Path, inner_owner: str) -> None:
    """Another checkout's folder, this checkout's dev, a marker naming no checkout: not this stack's data."""
    _fill(data_dir)
    inner = data_dir / "volumes" / "b"
    inner.mkdir()
    (inner / OWNER_MARKER).write_text(f"{inner_owner}\n")
    (inner / "secret").write_text("b")
    done = run_script(data_folder(data_dir), "delete")
    assert done.returncode == 1
    assert f"blueprint: - {inner}, claimed by" in done.stderr
    assert (inner / "secret").exists()
    assert (data_dir / "volumes" / "pg" / "PG_VERSION").exists(), "refused before anything is removed"
    assert (data_dir / OWNER_MARKER).exists()


def test_phase1s_wipe_removes_the_folders_its_phase2_claimed_inside(data_dir: Path) -> None:
    """phase2 of this checkout, kept by an earlier preserveData destroy: its folders belong in the data folder."""
    _fill(data_dir)
    for folder in (data_dir / "platform", data_dir / "volumes" / "platform"):
        folder.mkdir(parents=True)
        (folder / OWNER_MARKER).write_text("blueprint/phase2@offline-plan\n")
    done = run_script(data_folder(data_dir), "delete")
    assert done.returncode == 0, done.stderr
    assert not data_dir.exists()


# What the user's shell exports never decides anything: every name the scripts read is passed, empty when unset.


def test_an_inner_owners_exported_in_the_users_shell_never_lets_a_wipe_remove_anothers_folder(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dev's data folder has no inner owners: pulumi-command runs its wipe with the user's environment below its own."""
    dev = planned("dev").one(COMMAND, "kind-data-folder")
    assert run_script(dev, "create", env={"FOLDER": str(data_dir)}).returncode == 0
    theirs = data_dir / "volumes" / "theirs"
    theirs.mkdir(parents=True)
    (theirs / OWNER_MARKER).write_text("blueprint/dev@0123456789abcdef\n")
    monkeypatch.setenv("INNER_OWNERS", "blueprint/dev@0123456789abcdef")
    done = run_script(dev, "delete", env={"FOLDER": str(data_dir)})
    assert done.returncode == 1
    assert (theirs / OWNER_MARKER).exists()


def test_a_parent_owner_exported_in_the_users_shell_never_makes_a_data_folders_claim_refuse(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARENT_OWNER", PHASE1_HERE)
    done = run_script(planned("phase1").one(COMMAND, "kind-data-folder"), "create", env={"FOLDER": str(data_dir)})
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("value", ["", "yes", "True"])
def test_a_delete_whose_preserve_data_is_neither_true_nor_false_removes_nothing(data_dir: Path, value: str) -> None:
    _fill(data_dir)
    command = data_folder(data_dir)
    done = run_script(command, "delete", env={PRESERVE_DATA: value})
    assert done.returncode == 1
    assert (data_dir / "volumes" / "pg" / "PG_VERSION").exists()


# A data folder that is emptied but cannot be removed itself.


def _in_a_namespace_over_a_tmpfs(
    command: dict[str, object], scripts: list[str], mount: Path, *, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """Run `command`'s scripts one after another in a user and mount namespace of their own, where a
    new tmpfs is mounted at `mount`; stdout has `rc=<exit code>` for each, then what `mount` holds."""
    inputs = command["inputs"]
    assert isinstance(inputs, dict)
    environment = {**os.environ, **inputs["environment"], **env, "MOUNT": str(mount)}
    environment.update({f"SCRIPT_{index}": inputs[script] for index, script in enumerate(scripts)})
    inside = (
        'mount -t tmpfs -o mode=0755 blueprint-test "$MOUNT" || exit 99; '  # as mkdir makes a folder: the user's alone
        + "".join(f'/bin/sh -c "$SCRIPT_{index}"; echo "rc=$?"; ' for index in range(len(scripts)))
        + 'ls -A "$MOUNT"'
    )
    argv = ["unshare", "--user", "--map-root-user", "--mount", "/bin/sh", "-c", inside]
    return subprocess.run(argv, env=environment, capture_output=True, text=True, timeout=30, check=False)


@pytest.mark.usefixtures("mount_namespaces")
def test_a_wipe_of_a_data_folder_that_is_a_mount_point_empties_it_and_a_second_destroy_finds_it_wiped(data_dir: Path) -> None:
    """rmdir cannot remove a mount point (EBUSY): the folder stays, empty, unclaimed; no later destroy is stuck."""
    data_dir.mkdir()
    command = data_folder(data_dir)
    done = _in_a_namespace_over_a_tmpfs(command, ["create", "delete", "delete", "create"], data_dir, env={})
    assert [line for line in done.stdout.splitlines() if line.startswith("rc=")] == ["rc=0"] * 4, done.stderr
    assert f"emptied {data_dir}, and left it in place, empty" in done.stderr
    assert f"{data_dir} is empty and claimed by no stack (an earlier wipe emptied it)" in done.stderr
    assert "does not name" not in done.stderr


def test_a_wipe_of_a_data_folder_whose_parent_the_user_cannot_write_empties_it_and_a_second_destroy_finds_it_wiped(
    data_dir: Path,
) -> None:
    """The destroy guide's own example, /srv/blueprint: a folder the user owns, in a folder only root may write."""
    data_dir.mkdir()
    parent = data_dir.parent
    user = None
    if os.geteuid() == 0:
        os.chown(data_dir, NOBODY, NOBODY)  # the parent stays root's, 0755
        user = NOBODY
    else:
        parent.chmod(0o555)
    try:
        command = data_folder(data_dir)
        assert run_script(command, "create", user=user).returncode == 0
        first = run_script(command, "delete", user=user)
        assert first.returncode == 0, first.stderr
        assert f"emptied {data_dir}, and left it in place, empty" in first.stderr
        assert list(data_dir.iterdir()) == []
        again = run_script(command, "delete", user=user)
        assert again.returncode == 0, again.stderr
        assert run_script(command, "create", user=user).returncode == 0
    finally:
        parent.chmod(0o755)


def test_a_wipe_that_cannot_remove_a_folder_something_wrote_into_meanwhile_says_so(data_dir: Path, fake_docker_dir: Path) -> None:
    """Not left for "empty": what appeared is not blueprint's to call wiped."""
    _fill(data_dir)
    fake_command(fake_docker_dir, "rmdir", 'touch "$2/written-meanwhile"; exit 1\n')
    done = run_script(data_folder(data_dir), "delete", path_prefix=fake_docker_dir)
    assert done.returncode == 1
    assert "files appeared in it while it was removed" in done.stderr


# Markers never read nor written through a link.


def test_a_marker_that_is_a_link_is_refused_and_never_written_through(data_dir: Path, tmp_path: Path) -> None:
    """A marker is a regular file (lib_marker_of.sh): a link may name any file, and is no claim."""
    _fill(data_dir)
    target = tmp_path / "victim"
    target.write_text(PHASE1_HERE)  # no newline: a write through the link would add one
    (data_dir / OWNER_MARKER).unlink()
    (data_dir / OWNER_MARKER).symlink_to(target)
    command = data_folder(data_dir)
    done = run_script(command, "update")
    assert done.returncode == 1
    assert f"{data_dir / OWNER_MARKER} is no file" in done.stderr
    assert target.read_text() == PHASE1_HERE
    assert (data_dir / OWNER_MARKER).is_symlink()


@pytest.mark.parametrize(
    "text",
    [
        "config:\n  preserveData: false\n  blueprint:preserveData: true\n",  # Pulumi keeps one of the two, at random
        "config:\n  blueprint:config:preserveData: false\n  blueprint:preserveData: true\n",
        "config:\n  blueprint:config:preserveData: true\n  blueprint:preserveData: false\n",
    ],
    ids=["bare-and-namespaced", "old-form-and-namespaced", "namespaced-false-old-form-true"],
)
def test_a_stack_file_giving_preserve_data_twice_does_not_wipe(data_dir: Path, text: str) -> None:
    """Pulumi keeps one spelling of the two at random (Go's map order): which one is no answer."""
    _fill(data_dir)
    command = data_folder(data_dir, preserveData="false")
    done = run_script(command, "delete", env=_stack_file(data_dir, text))
    assert (data_dir / "volumes" / "pg" / "PG_VERSION").exists(), done.stderr
    assert done.returncode == 1
    assert "gives preserveData 2 times" in done.stderr


@pytest.mark.parametrize("word", ["no", "off", "n", "false # a comment\n  preserveData: false"])
def test_a_stack_file_saying_no_or_off_does_not_wipe(data_dir: Path, word: str) -> None:
    """Pulumi reads `no` and `off` as the text written (YAML 1.2), which the program refuses for a
    boolean: no answer, so nothing is removed (YAML 1.1, PyYAML's default, reads them as false)."""
    _fill(data_dir)
    command = data_folder(data_dir, preserveData="false")
    done = run_script(command, "delete", env=_stack_file(data_dir, f"config:\n  blueprint:preserveData: {word}\n"))
    assert done.returncode == 1
    assert (data_dir / "volumes" / "pg" / "PG_VERSION").exists()


def test_a_reader_saying_more_than_false_does_not_wipe(data_dir: Path, tmp_path: Path) -> None:
    """A warning beside the answer is no answer: only a plain `false` (or nothing said) wipes."""
    _fill(data_dir)
    command = data_folder(data_dir, preserveData="false")
    reader = tmp_path / "python"
    reader.write_text("#!/bin/sh\necho 'DeprecationWarning: something' >&2\necho false\n")
    reader.chmod(0o755)
    env = _stack_file(data_dir, "config:\n  blueprint:preserveData: false\n") | {"CONFIG_PYTHON": str(reader)}
    done = run_script(command, "delete", env=env)
    assert done.returncode == 1
    assert (data_dir / "volumes" / "pg" / "PG_VERSION").exists()
    assert "gave no plain true or false (DeprecationWarning" in done.stderr
