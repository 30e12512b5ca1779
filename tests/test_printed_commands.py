"""Every command blueprint prints for the user to run quotes the paths and names in it, so pasting it
runs exactly that command: a folder named `it's; $(...)` must come back as one argument, never as
shell syntax (an unquoted `sudo rm -rf '<folder>'` with a quote in the folder deletes other paths).

The config refuses such names for the data folder; these commands must be safe regardless, so
each case below prints its command for a hostile path given directly, through the real script or
function that prints it. A command is read back from where it starts in the message, with a
shell's rules, for as many words as it has.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from cli.data_folder import wipe_refused
from cli.passphrase import PassphraseFileError, _trusted
from cli.teardown import ClusterState
from components.markers import CLUSTER_MARKER, LEASES_FOLDER, OWNER_MARKER
from providers.http import missing_ca_file
from tests.cli.teardown_fakes import PHASE1_HERE, FakePulumi, world
from tests.components.test_host_folder_access import private_group_id
from tests.plans import COMMAND, fake_command, planned, run_script

HOSTILE = 'it\'s; $(touch pwned) `id` & | * ? [a] \\ ~ "q" <x> #'
"""A folder name that is shell syntax in every way a quote can fail."""


def words(text: str, start: str, count: int) -> list[str]:
    """The first `count` words of the command that begins with `start` in `text`, as a shell reads them."""
    assert start in text, text
    lexer = shlex.shlex(text[text.index(start) :], posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.whitespace += "`"  # a message may wrap a command in backticks; quoted, a backtick is the path's
    return [lexer.get_token() or "" for _ in range(count)]


def _data_folder_script(script: str, folder: Path, bin_dir: Path, env: dict[str, str] | None = None) -> str:
    command = planned("phase1").one(COMMAND, "kind-data-folder")
    done = run_script(command, script, path_prefix=bin_dir, env={"FOLDER": str(folder), **(env or {})})
    assert done.returncode == 1, done.stderr
    return done.stderr


def wipe_that_cannot_finish(root: Path, bin_dir: Path) -> tuple[str, str, list[str]]:
    folder = root / HOSTILE
    folder.mkdir()
    (folder / OWNER_MARKER).write_text("blueprint/phase1@offline-plan\n")
    fake_command(bin_dir, "rmdir", 'touch "$2/written-meanwhile"; exit 1\n')  # the folder cannot be removed
    return _data_folder_script("delete", folder, bin_dir), "ls", ["ls", "-lA", "--", str(folder)]


def claim_of_a_folder_whose_marker_is_a_link(root: Path, bin_dir: Path) -> tuple[str, str, list[str]]:
    folder = root / HOSTILE
    folder.mkdir()
    (folder / OWNER_MARKER).symlink_to(root / "elsewhere")
    marker = str(folder / OWNER_MARKER)
    owner = "blueprint/phase1@offline-plan"
    return _data_folder_script("create", folder, bin_dir), "rm --", ["rm", "--", marker, "&&", "echo", owner, ">", marker]


def claim_inside_a_folder_anyone_may_write_in(root: Path, bin_dir: Path) -> tuple[str, str, list[str]]:
    folder = root / HOSTILE
    folder.mkdir()
    folder.chmod(0o777)
    private_group_id(bin_dir)
    return _data_folder_script("create", folder / "data", bin_dir), "chmod", ["chmod", "o-w", str(folder)]


def claim_of_a_folder_anyone_may_write_in(root: Path, bin_dir: Path) -> tuple[str, str, list[str]]:
    folder = root / HOSTILE
    folder.mkdir()
    folder.chmod(0o777)
    private_group_id(bin_dir)
    return _data_folder_script("create", folder, bin_dir), "chmod", ["chmod", "o-w", str(folder)]


def cluster_delete_with_a_lease_left(root: Path, bin_dir: Path) -> tuple[str, str, list[str]]:
    lease = root / HOSTILE / LEASES_FOLDER / "blueprint_phase2"
    lease.parent.mkdir(parents=True)
    lease.write_text("blueprint/phase2\n")
    command = planned("phase1").one(COMMAND, "kind-cluster")
    done = run_script(command, "delete", path_prefix=bin_dir, env={"DATA_DIR": str(root / HOSTILE)})
    assert done.returncode == 1, done.stderr
    return done.stderr, "rm --", ["rm", "--", str(lease)]


def cluster_of_that_name_not_ours(root: Path, bin_dir: Path) -> tuple[str, str, list[str]]:
    name = HOSTILE.replace("\\", "")  # kind lists names one per line; no backslash needed to test the quoting
    fake_command(
        bin_dir, "kind", 'case "$1" in version) echo "kind v0.31.0 go1.25.5 linux/amd64" ;; get) echo "$KIND_CLUSTER_NAME" ;; esac\n'
    )
    command = planned("phase1").one(COMMAND, "kind-cluster")
    env = {"DATA_DIR": str(root), "KIND_CLUSTER_NAME": name}
    done = run_script(command, "create", path_prefix=bin_dir, env=env)
    assert done.returncode == 1, done.stderr
    return done.stderr, "kind delete", ["kind", "delete", "cluster", "--name", name]


def passphrase_file_that_is_a_link(root: Path, bin_dir: Path) -> tuple[str, str, list[str]]:
    link = root / HOSTILE
    link.symlink_to(root / "elsewhere")
    with pytest.raises(PassphraseFileError) as error:
        _trusted(link)
    return str(error.value), "rm", ["rm", "--", str(link)]


def missing_ca_certificate(root: Path, bin_dir: Path) -> tuple[str, str, list[str]]:
    ca_file = root / HOSTILE / "ca.crt"
    message = missing_ca_file(str(ca_file))
    assert message is not None
    return message, "pulumi stack output", ["pulumi", "stack", "output", "-s", "phase2", "caCertPem", ">", str(ca_file)]


def cluster_left_over_a_data_folder_no_stack_holds(root: Path, bin_dir: Path) -> tuple[str, str, list[str]]:
    folder = root / "data"
    folder.mkdir()
    (folder / OWNER_MARKER).write_text(f"{PHASE1_HERE}\n")
    (folder / CLUSTER_MARKER).write_text(f"{HOSTILE}\n")
    running, _ = world(FakePulumi({}), cluster=ClusterState("running"), dataDir=str(folder))
    problem = wipe_refused(running.phase1_config(), running, [])
    assert problem is not None
    return problem, "kind delete", ["kind", "delete", "cluster", "--name", HOSTILE]


CASES: list[Callable[[Path, Path], tuple[str, str, list[str]]]] = [
    wipe_that_cannot_finish,
    claim_of_a_folder_whose_marker_is_a_link,
    claim_of_a_folder_anyone_may_write_in,
    claim_inside_a_folder_anyone_may_write_in,
    cluster_delete_with_a_lease_left,
    cluster_of_that_name_not_ours,
    passphrase_file_that_is_a_link,
    missing_ca_certificate,
    cluster_left_over_a_data_folder_no_stack_holds,
]


@pytest.mark.parametrize("case", CASES, ids=[case.__name__ for case in CASES])
def test_a_printed_command_gives_back_a_hostile_path_as_one_argument(
    case: Callable[[Path, Path], tuple[str, str, list[str]]], tmp_path: Path
) -> None:
    root, bin_dir = tmp_path / "root", tmp_path / "bin"
    root.mkdir()
    bin_dir.mkdir()
    printed, start, expected = case(root, bin_dir)
    assert words(printed, start, len(expected)) == expected
