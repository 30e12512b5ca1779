"""phase1's data folder once no stack holds it (an earlier destroy kept it): removed by a
`destroy --wipe-data` of the checkout that owned it, and only then."""

from __future__ import annotations

import os
import pickle
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from cli import data_folder
from cli.doctor import machine
from cli.teardown import ClusterState, World
from components.markers import CLUSTER_MARKER, LEASES_FOLDER, OWNER_MARKER
from providers.host_secret import WIPING_MARKER
from stacks.config import PROJECT_DIR
from stacks.config.paths import CHECKOUT_ID_FILE
from tests.cli.teardown_fakes import CHECKOUT, PHASE1_HERE, FakePulumi, recorded_state, run_destroy, world
from tests.plans import plan_key, planned


@pytest.fixture
def left_data(tmp_path: Path) -> Path:
    """A data folder phase1 claimed, kept by a preserveData destroy, over a cluster now deleted."""
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / OWNER_MARKER).write_text(f"{PHASE1_HERE}\n")
    (folder / CLUSTER_MARKER).write_text("blueprint\n")
    return folder


def after_a_preserve_destroy(left_data: Path, preserve_data: str = "false") -> tuple[FakePulumi, World, list[tuple[str, str]]]:
    pulumi = FakePulumi({"phase3": recorded_state("phase3", preserveData="true")}, gitlab=False, cluster="gone")
    the_world, wiped = world(pulumi, dataDir=str(left_data), preserveData=preserve_data)
    return pulumi, the_world, wiped


def test_wiping_after_a_preserve_destroy_removes_the_data_folder_no_stack_holds(left_data: Path) -> None:
    pulumi, the_world, wiped = after_a_preserve_destroy(left_data)
    code, said = run_destroy(pulumi, False, world=the_world)
    assert code == 0, said
    assert wiped == [(str(left_data), PHASE1_HERE)]


def test_the_data_folder_no_stack_holds_is_wiped_with_the_folders_its_phase2_claimed_inside(left_data: Path) -> None:
    """As phase1's own wipe would have: phase2 of this checkout, kept by the same preserveData destroy."""
    platform = left_data / "platform"
    platform.mkdir()
    (platform / OWNER_MARKER).write_text(f"blueprint/phase2@{CHECKOUT}\n")
    done = data_folder.wipe_folder(str(left_data), PHASE1_HERE)
    assert done.returncode == 0, done.stderr
    assert not left_data.exists()


def test_a_wipe_that_outlasts_its_time_names_the_destroy_that_goes_on_never_an_rm(left_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The script is stopped half-way; its marker makes the same destroy finish it."""
    monkeypatch.setattr(machine, "in_own_group", lambda argv, seconds, **_: None)
    done = data_folder.wipe_folder(str(left_data), PHASE1_HERE)
    assert done.returncode == 1
    assert "took more than 30 minutes" in done.stderr
    assert "`uv run blueprint destroy --wipe-data`" in done.stderr
    assert "rm -rf" not in done.stderr


def test_a_command_past_its_time_is_stopped_with_every_process_it_started() -> None:
    """A wipe's shell killed alone would leave its `find -delete` running, and the wait for their
    output hanging: the whole session goes. (It sleeps far longer than the bound it is given.)"""
    assert machine.in_own_group(["/bin/sh", "-c", "sleep 600 & sleep 600"], 1, env=dict(os.environ)) is None


def test_a_data_folder_no_stack_holds_is_kept_without_wipe_data(left_data: Path) -> None:
    pulumi, the_world, wiped = after_a_preserve_destroy(left_data, preserve_data="true")
    code, said = run_destroy(pulumi, None, world=the_world)
    assert code == 0, said
    assert wiped == []


def test_a_data_folder_with_a_platform_still_on_its_cluster_is_not_wiped(left_data: Path) -> None:
    """phase1's state removed by hand while phase2 stays up: phase2's destroy comes first."""
    (left_data / LEASES_FOLDER).mkdir()
    (left_data / LEASES_FOLDER / "blueprint_phase2").write_text("blueprint/phase2\n")
    pulumi = FakePulumi({"phase2": recorded_state("phase2")})
    the_world, wiped = world(pulumi, dataDir=str(left_data))
    code, said = run_destroy(pulumi, False, world=the_world)
    assert code == 1
    assert "phase2 still runs on a cluster over it: destroy it first (`uv run blueprint destroy --phase 2 --wipe-data`)" in said
    assert wiped == []


def test_a_lease_left_by_a_stack_that_is_not_up_is_named_with_the_command_that_removes_it(left_data: Path) -> None:
    """Its stack's state was removed by hand: nothing would ever release it."""
    lease = left_data / LEASES_FOLDER / "blueprint_phase2"
    lease.parent.mkdir()
    lease.write_text("blueprint/phase2\n")
    pulumi, the_world, wiped = after_a_preserve_destroy(left_data)
    code, said = run_destroy(pulumi, False, world=the_world)
    assert (code, wiped) == (1, [])
    assert f"a stack that is not up left its lease on the cluster in it (blueprint_phase2): remove it (`rm -- {lease}`)" in said


def test_a_cluster_left_running_with_phase1_not_up_is_named_with_the_command_that_deletes_it(left_data: Path) -> None:
    pulumi = FakePulumi({})
    the_world, wiped = world(pulumi, cluster=ClusterState("running"), dataDir=str(left_data))
    code, said = run_destroy(pulumi, False, world=the_world)
    assert (code, wiped) == (1, [])
    assert "delete it (`kind delete cluster --name blueprint`)" in said


def test_a_cluster_nobody_can_ask_about_is_named_with_starting_docker_or_cluster_gone(left_data: Path) -> None:
    pulumi = FakePulumi({})
    unknown = ClusterState("unknown", "`kind get clusters` failed: Cannot connect to the Docker daemon")
    the_world, wiped = world(pulumi, cluster=unknown, dataDir=str(left_data))
    code, said = run_destroy(pulumi, False, world=the_world)
    assert (code, wiped) == (1, [])
    assert "Start Docker (`sudo systemctl start docker`, or open Docker Desktop)" in said
    assert "`uv run blueprint destroy --wipe-data --cluster-gone`" in said


def test_a_wipe_data_the_folders_checks_refuse_destroys_nothing_and_is_finished_by_running_it_again(left_data: Path) -> None:
    """Once the last stack is gone, nothing would prove this checkout may finish the wipe: the checks come first."""
    pulumi = FakePulumi({"phase3": recorded_state("phase3", preserveData="true")}, gitlab=False)
    running, wiped = world(pulumi, cluster=ClusterState("running"), dataDir=str(left_data))
    code, said = run_destroy(pulumi, False, world=running)
    assert code == 1
    assert "the kind cluster blueprint blueprint made over it still runs" in said
    assert "Nothing was destroyed" in said
    assert pulumi.is_up("phase3")
    assert wiped == []
    gone, wiped = world(pulumi, cluster=ClusterState("gone"), dataDir=str(left_data))  # the user deleted the cluster, as told
    code, said = run_destroy(pulumi, False, world=gone)
    assert code == 0, said
    assert wiped == [(str(left_data), PHASE1_HERE)]


def test_a_wipe_data_the_folders_checks_refuse_never_says_to_remove_it_by_hand(left_data: Path) -> None:
    pulumi, _, _ = after_a_preserve_destroy(left_data)
    running, _ = world(pulumi, cluster=ClusterState("running"), dataDir=str(left_data))
    code, said = run_destroy(pulumi, False, world=running)
    assert code == 1
    assert "rm -rf" not in said


REFUSED_FOR_A_MOUNT = """
import dataclasses, sys
from cli import data_folder
from cli.doctor import machine
from cli.teardown import ClusterState
from tests.cli.teardown_fakes import FakePulumi, world
config = {"blueprint:dataDir": sys.argv[1]}
gone, _ = world(FakePulumi({}), cluster=ClusterState("gone"), dataDir=sys.argv[1])
sys.exit(data_folder.unowned_data(print, config, dataclasses.replace(gone, wipe_folder=data_folder.wipe_folder), [], wipe=True))
"""


def over_a_mount(left_data: Path, scenario: str, *made: tuple[str, dict[str, str]]) -> subprocess.CompletedProcess[str]:
    """Python's `scenario`, given the data folder and a file of the plans `made` (stack, config), run
    where a tmpfs is mounted at its `volumes`, in a user and mount namespace of its own."""
    mount = left_data / "volumes"
    mount.mkdir()
    plans = left_data.parent / "plans.pickle"
    plans.write_bytes(pickle.dumps({plan_key(stack, **config): planned(stack, **config) for stack, config in made}))
    inside = 'mount -t tmpfs blueprint-test "$1" && exec "$2" -c "$3" "$4" "$5"'
    argv = ["unshare", "--user", "--map-root-user", "--mount", "/bin/sh", "-c", inside, "sh"]
    return subprocess.run(
        [*argv, str(mount), sys.executable, scenario, str(left_data), str(plans)],
        cwd=PROJECT_DIR,
        env={**os.environ, "PYTHONPATH": str(PROJECT_DIR)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.usefixtures("mount_namespaces")
def test_a_wipe_refused_for_a_filesystem_mounted_inside_never_says_to_remove_it_by_hand(left_data: Path) -> None:
    """`rm -rf` crosses mounts: it would remove what the other filesystem holds."""
    done = over_a_mount(left_data, REFUSED_FOR_A_MOUNT)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "another filesystem is mounted inside it" in done.stdout
    assert "rm -rf" not in done.stdout


def test_a_data_folder_whose_cluster_still_runs_is_not_wiped(left_data: Path) -> None:
    pulumi, _, wiped = after_a_preserve_destroy(left_data)
    the_world, wiped = world(pulumi, cluster=ClusterState("running"), dataDir=str(left_data))
    code, said = run_destroy(pulumi, False, world=the_world)
    assert code == 1
    assert "the kind cluster blueprint blueprint made over it still runs" in said
    assert wiped == []


ANOTHER_CHECKOUT = "blueprint/phase1@fedcba9876543210"


@pytest.mark.parametrize("checkout", [CHECKOUT, None], ids=["another checkout", "a fresh clone"])
@pytest.mark.parametrize("preserve", [None, False], ids=["without a flag", "--wipe-data"])
def test_a_checkout_with_no_stack_never_wipes_nor_hands_out_another_checkouts_data_folder(
    left_data: Path, checkout: str | None, preserve: bool | None
) -> None:
    """Another checkout with the same absolute dataDir, whose platform still runs on it: only that
    checkout's destroy removes it, and no `rm -rf` is said, which would take that platform's data."""
    (left_data / OWNER_MARKER).write_text(f"{ANOTHER_CHECKOUT}\n")
    (left_data / LEASES_FOLDER).mkdir()
    (left_data / LEASES_FOLDER / "blueprint_phase2").write_text("blueprint/phase2\n")
    pulumi = FakePulumi({})
    the_world, wiped = world(pulumi, checkout=checkout, dataDir=str(left_data))
    code, said = run_destroy(pulumi, preserve, world=the_world)
    assert wiped == []
    assert code == (0 if preserve is None else 1)
    assert ANOTHER_CHECKOUT in said or "this checkout never ran a stack" in said
    assert "rm -rf" not in said


def test_the_data_folder_this_checkout_kept_is_said_kept_with_the_destroy_that_removes_it(left_data: Path) -> None:
    pulumi = FakePulumi({})
    the_world, wiped = world(pulumi, cluster=ClusterState("gone"), dataDir=str(left_data))
    code, said = run_destroy(pulumi, None, world=the_world)
    assert (code, wiped) == (0, [])
    assert (
        f"the data folder {left_data} is kept: no stack of this checkout holds it any more; `uv run blueprint destroy --wipe-data`" in said
    )
    assert "rm -rf" not in said


def test_wipe_data_with_no_stack_left_removes_the_folder_this_checkouts_phase1_claimed(left_data: Path) -> None:
    """Its owner file names this checkout's phase1: proof enough, whatever an earlier destroy left."""
    pulumi = FakePulumi({})
    the_world, wiped = world(pulumi, cluster=ClusterState("gone"), dataDir=str(left_data))
    code, said = run_destroy(pulumi, False, world=the_world)
    assert code == 0, said
    assert wiped == [(str(left_data), PHASE1_HERE)]


RETRIED_AFTER_A_MOUNT = """
import dataclasses, pickle, sys
from pathlib import Path
from cli import data_folder
from cli.doctor import machine
from cli.teardown import ClusterState
from tests import plans
from tests.cli.teardown_fakes import FakePulumi, recorded_state, run_destroy, world
made = pickle.loads(Path(sys.argv[2]).read_bytes())  # the test's own plans, not made again here
plans._cached_plan = lambda stack, overrides, preview=False: made[(stack, overrides)]
pulumi = FakePulumi({"phase3": recorded_state("phase3", preserveData="true")}, gitlab=False, cluster="gone")
gone, _ = world(pulumi, cluster=ClusterState("gone"), dataDir=sys.argv[1], preserveData="false")
gone = dataclasses.replace(gone, wipe_folder=data_folder.wipe_folder)
for run in ("first", "again"):
    code, said = run_destroy(pulumi, False, world=gone)
    print(run, code, pulumi.is_up("phase3"), said.replace("\\n", " | "))
"""


@pytest.mark.usefixtures("mount_namespaces")
def test_a_wipe_data_the_wipe_script_refused_after_phase3_went_is_tried_again_by_running_it_again(left_data: Path) -> None:
    """The folder's own checks passed, phase3 was destroyed, then the script refused (a filesystem
    mounted inside): with no stack left, running the destroy again runs the script again, whose refusal
    says what to fix, until it is fixed; never "kept" with exit 0 and an `rm -rf` that crosses the mount."""
    done = over_a_mount(left_data, RETRIED_AFTER_A_MOUNT, ("phase3", {"preserveData": "true"}), ("phase3", {}))
    first, again = done.stdout.splitlines()[-2:]
    assert first.startswith("first 1 False"), done.stdout + done.stderr
    assert again.startswith("again 1 False"), again
    for said in (first, again):
        assert "another filesystem is mounted inside it" in said
        assert "rm -rf" not in said


def test_wipe_data_with_cluster_gone_takes_a_cluster_nobody_can_ask_about_for_gone(left_data: Path) -> None:
    """A preserveData destroy with `--cluster-gone` forgot the cluster and left its marker: the user
    said Docker and the cluster are gone for good, and is not sent to start Docker."""
    pulumi = FakePulumi({"phase3": recorded_state("phase3", preserveData="true")}, gitlab=False, cluster="gone")
    unknown = ClusterState("unknown", "`kind get clusters` failed: Cannot connect to the Docker daemon")
    docker_gone, wiped = world(pulumi, cluster=unknown, dataDir=str(left_data))
    code, said = run_destroy(pulumi, False, world=docker_gone, cluster_gone=True)
    assert code == 0, said
    assert wiped == [(str(left_data), PHASE1_HERE)]


def test_wiping_the_folder_of_an_earlier_preserve_destroy_asks_first(left_data: Path) -> None:
    pulumi, the_world, wiped = after_a_preserve_destroy(left_data)
    code, said = run_destroy(pulumi, False, world=the_world, confirm=lambda question: "REMOVING" not in question)
    assert code == 1
    assert wiped == []


def test_the_folder_is_not_wiped_from_under_phase3_by_destroying_phase1_alone(left_data: Path) -> None:
    pulumi, the_world, wiped = after_a_preserve_destroy(left_data)
    code, said = run_destroy(pulumi, False, phase="1", world=the_world)
    assert code == 1
    assert "destroy phase3 too" in said
    assert wiped == []


def test_a_wipe_of_that_folder_started_before_is_finished_with_no_stack_left(left_data: Path) -> None:
    """Only this wipe's own marker proves a checkout with no stack left may finish it."""
    (left_data / WIPING_MARKER).touch()
    pulumi = FakePulumi({})
    the_world, wiped = world(pulumi, cluster=ClusterState("gone"), dataDir=str(left_data))
    code, said = run_destroy(pulumi, False, world=the_world)
    assert code == 0, said
    assert wiped == [(str(left_data), PHASE1_HERE)]


@pytest.mark.parametrize("marker", ["blueprint/phase1@fedcba9876543210", "blueprint/phase1"], ids=["another checkout", "before ids"])
def test_a_data_folder_that_names_another_checkouts_phase1_is_not_wiped(left_data: Path, marker: str) -> None:
    """The same stack of another checkout (or a marker from before markers named the checkout, which
    may be another's) is another owner: only the user can remove its data."""
    (left_data / OWNER_MARKER).write_text(f"{marker}\n")
    pulumi, the_world, wiped = after_a_preserve_destroy(left_data)
    code, said = run_destroy(pulumi, False, world=the_world)
    assert code == 1
    assert f"not this checkout's phase1 ({PHASE1_HERE})" in said
    assert wiped == []


def test_a_checkout_that_never_ran_a_stack_wipes_no_data_folder(left_data: Path) -> None:
    pulumi = FakePulumi({"phase3": recorded_state("phase3", preserveData="true")}, gitlab=False, cluster="gone")
    the_world, wiped = world(pulumi, checkout=None, dataDir=str(left_data), preserveData="false")
    code, said = run_destroy(pulumi, False, world=the_world)
    assert code == 1
    assert "this checkout has no id (.pulumi-state/blueprint-checkout-id), so it claimed no folder" in said
    assert wiped == []


@pytest.mark.parametrize("checkout", [None, "fedcba9876543210"], ids=["id lost", "id made anew by a later up"])
@pytest.mark.parametrize("preserve", [None, False], ids=["without a flag", "--wipe-data"])
def test_a_data_folder_whose_checkout_lost_its_id_is_named_with_the_command_that_writes_it_back(
    left_data: Path, checkout: str | None, preserve: bool | None
) -> None:
    """.pulumi-state/ lost (the stacks' state and the checkout id with it), the data folder left, claimed
    by this checkout's phase1: the id to write back is the part after '@' of its owner file."""
    pulumi = FakePulumi({})
    the_world, wiped = world(pulumi, checkout=checkout, cluster=ClusterState("gone"), dataDir=str(left_data))
    code, said = run_destroy(pulumi, preserve, world=the_world)
    assert wiped == []
    folder, file = shlex.quote(str(CHECKOUT_ID_FILE.parent)), shlex.quote(str(CHECKOUT_ID_FILE))
    assert f"write its id back (`mkdir -p {folder} && printf '%s\\n' {CHECKOUT} > {file}`)" in said, said


@pytest.mark.parametrize("marker", ["blueprint/phase1", "blueprint/phase1@$(touch pwned)"], ids=["before ids", "no id"])
def test_an_owner_file_that_names_no_checkout_id_is_never_written_back(left_data: Path, marker: str) -> None:
    """What a file holds never goes into a command to paste."""
    (left_data / OWNER_MARKER).write_text(f"{marker}\n")
    pulumi = FakePulumi({})
    the_world, _ = world(pulumi, checkout=None, cluster=ClusterState("gone"), dataDir=str(left_data))
    _, said = run_destroy(pulumi, False, world=the_world)
    assert "printf" not in said


def test_a_data_folder_there_is_wiped_however_long_its_names(left_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its names proved themselves when it was made (on a Mac, say, where `é` takes one unit of 255, not two bytes)."""
    monkeypatch.setattr("stacks.config.paths.NAME_MAX", 5)  # every part of its path is longer
    pulumi, the_world, wiped = after_a_preserve_destroy(left_data)
    code, said = run_destroy(pulumi, False, world=the_world)
    assert code == 0, said
    assert wiped == [(str(left_data), PHASE1_HERE)]
