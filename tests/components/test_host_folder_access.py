"""Who else can reach a folder a stack claims: the claim takes only a folder that is the user's alone,
inside folders none but the user and root may change (another user, a shared group, or anyone who
may write in one could swap the platform's data and secrets under it), and makes nothing others may
write in whatever the user's umask; the scripts read a marker only from a regular file that is no
link, a bounded part of it, and show what it says only from a folder of the user's (a pod writes
under the volumes folder: a FIFO, a link or a folder named as a marker must never hang nor block a
wipe, nor have it show another file)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from components.markers import LAYOUT_MARKER, OWNER_MARKER
from tests.components.test_host_folder import NOBODY, _fill, data_dir, data_folder  # noqa: F401 (a fixture)
from tests.plans import COMMAND, fake_command, planned, run_script


def _claim(folder: Path, script: str = "create", path_prefix: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run_script(data_folder(folder), script, path_prefix=path_prefix)


def _printed(stderr: str) -> list[list[str]]:
    return [shlex.split(line) for line in stderr.splitlines() if line.startswith("  ")]


@pytest.fixture
def lone_folder() -> Iterator[Path]:
    """A new folder right in /tmp (root's, sticky): nothing above it is another user's."""
    folder = Path(tempfile.mkdtemp(prefix="blueprint-lone-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def id_saying(folder: Path, **answers: object) -> Path:
    """An `id` in `folder` that gives `answers` (by option: `u`, `g`, `un`, `gn`), and the real one's
    answer to any other question: the folder, for PATH."""
    cases = "".join(f"  -{option}) echo {value} ;;\n" for option, value in answers.items())
    fake_command(folder, "id", f'case "$1" in\n{cases}  *) exec {shutil.which("id")} "$@" ;;\nesac\n')
    return folder


def another_users_id(folder: Path) -> Path:
    """An `id` that says another user runs it (the scripts ask `id -u` whose a folder must be)."""
    return id_saying(folder, u=os.geteuid() + 1)


def owned_by_another_user(folder: Path, bin_folder: Path) -> Path | None:
    """`folder` as another user's: root gives it to nobody's user; any other user gets an `id` in
    `bin_folder` that says another user runs it. The PATH prefix to run a script with, or None."""
    if os.geteuid() == 0:
        os.chown(folder, NOBODY, NOBODY)
        return None
    return another_users_id(bin_folder)


def private_group_id(folder: Path) -> Path:
    """An `id` of a user whose primary group is their own, named as they are (Debian, Fedora): the
    tests read alike whatever group runs them."""
    return id_saying(folder, un="alice", gn="alice")


def shared_group_id(folder: Path) -> Path:
    """An `id` of a user whose primary group is shared, not named as they are (macOS's `staff`, SUSE's `users`)."""
    return id_saying(folder, un="alice", gn="staff")


@pytest.fixture
def umask_002() -> Iterator[None]:
    """A user whose group may write what they make (Debian's and Fedora's default for a user's own group)."""
    before = os.umask(0o002)
    yield
    os.umask(before)


def test_a_folder_anyone_may_write_in_is_not_claimed_and_the_fix_is_said(data_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    """As /tmp/blueprint-data made by `mkdir -m 0777`: another user could swap what it holds."""
    data_dir.mkdir()
    data_dir.chmod(0o777)
    done = _claim(data_dir, path_prefix=private_group_id(tmp_path / "bin"))
    assert done.returncode == 1
    assert f"anyone may write in {data_dir}" in done.stderr
    assert ["chmod", "o-w", str(data_dir)] in _printed(done.stderr)
    assert list(data_dir.iterdir()) == [], "refused before anything is written"


@pytest.mark.usefixtures("umask_002")
def test_a_folder_made_with_a_umask_that_lets_the_group_write_is_claimed_and_claimed_again(data_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    """Only the user is in their own private group."""
    data_dir.mkdir()
    assert data_dir.stat().st_mode & 0o777 == 0o775
    for script in ("create", "update"):
        done = _claim(data_dir, script, path_prefix=private_group_id(tmp_path / "bin"))
        assert done.returncode == 0, done.stderr


def test_a_folder_another_user_owns_is_not_claimed(lone_folder: Path, tmp_path: Path) -> None:
    """Root runs it over a folder nobody's user owns; any other user, with an `id` that says another
    user runs it (the claim asks `id -u` whose the folder must be)."""
    done = _claim(lone_folder, path_prefix=owned_by_another_user(lone_folder, tmp_path / "bin"))
    assert done.returncode == 1
    assert f"{lone_folder} belongs to another user" in done.stderr
    assert list(lone_folder.iterdir()) == [], "refused before anything is written"


def test_a_subfolder_of_blueprints_own_that_another_user_owns_is_not_claimed(data_dir: Path, request: pytest.FixtureRequest) -> None:  # noqa: F811
    """The folders the user's claim makes for itself (the registry hosts, the volumes): what pods own
    is given to them by ids, and never checked (tests/components/test_host_folder.py)."""
    assert _claim(data_dir).returncode == 0
    volumes = data_dir / "volumes"
    if os.geteuid() == 0:
        os.chown(volumes, NOBODY, NOBODY)
        done = _claim(data_dir, "update")
    else:  # /usr, which root owns, over the volumes folder, in a user and mount namespace of the claim's own
        request.getfixturevalue("mount_namespaces")
        command = data_folder(data_dir)
        inside = 'mount --bind /usr "$VOLUMES" || exit 99; exec /bin/sh -c "$SCRIPT"'
        argv = ["unshare", "--user", "--map-root-user", "--mount", "/bin/sh", "-c", inside]
        env = {**os.environ, **command["inputs"]["environment"], "VOLUMES": str(volumes), "SCRIPT": command["inputs"]["update"]}
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 1, done.stderr
    assert f"{volumes} belongs to another user" in done.stderr


@pytest.mark.parametrize("kind", ["fifo", "link to a fifo", "folder"])
def test_what_a_pod_makes_at_a_markers_name_that_is_no_regular_file_never_hangs_nor_blocks_the_wipe(
    data_dir: Path,  # noqa: F811
    kind: str,
) -> None:
    """A pod writes in its volume: a claim is a regular file, so a FIFO, a link or a folder of that
    name (MinIO keeps each object as a folder named after its key) is data, wiped with the rest."""
    _fill(data_dir)
    marker = data_dir / "volumes" / "pg" / OWNER_MARKER
    if kind == "fifo":
        os.mkfifo(marker)
    elif kind == "folder":
        marker.mkdir()
        (marker / "xl.meta").write_bytes(b"XL2 ")
    else:
        os.mkfifo(data_dir / "volumes" / "pg" / "fifo")
        marker.symlink_to("fifo")
    command = data_folder(data_dir)
    try:
        done = run_script(command, "delete")
    except subprocess.TimeoutExpired:
        pytest.fail(f"the wipe hangs on a {kind} named {OWNER_MARKER}")
    assert done.returncode == 0, done.stderr
    assert not data_dir.exists()


def test_a_marker_swapped_for_a_fifo_after_it_was_checked_never_hangs_the_wipe(data_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    """What is there when the script looks may not be when it reads (a pod still running): a read of a
    marker that does not end is given up after 5 seconds, and the marker counts as another's. The
    test drives the clock: its `sleep` says when the 5 seconds are asked for, and ends them at once."""
    _fill(data_dir)
    (data_dir / "volumes" / "pg" / OWNER_MARKER).write_text("blueprint/phase1@offline-plan\n")
    real_sleep, asked = shutil.which("sleep"), tmp_path / "asked"
    fake_command(tmp_path / "bin", "head", f'case "$1" in -c) exec {real_sleep} 60 ;; esac; exec {shutil.which("head")} "$@"\n')
    fake_command(tmp_path / "bin", "sleep", f'echo "$*" >> {asked}\n[ "$*" = 5 ] || exec {real_sleep} "$@"\n')
    command = data_folder(data_dir)
    done = run_script(command, "delete", path_prefix=tmp_path / "bin")
    assert done.returncode == 1
    assert "not removing" in done.stderr
    assert (data_dir / "volumes" / "pg" / "PG_VERSION").exists()
    assert set(asked.read_text().splitlines()) == {"5"}, "every read waited for is given up after 5 seconds"


def test_the_layout_record_a_claim_writes_is_readable_by_all_and_leaves_no_draft(data_dir: Path) -> None:  # noqa: F811
    assert _claim(data_dir).returncode == 0
    assert _claim(data_dir, "update").returncode == 0
    assert (data_dir / LAYOUT_MARKER).stat().st_mode & 0o777 == 0o644
    assert not [path.name for path in data_dir.iterdir() if path.name.startswith(f"{LAYOUT_MARKER}.")]


@pytest.mark.usefixtures("umask_002")
def test_a_folder_a_shared_group_may_write_in_is_not_claimed_and_the_fix_is_said(data_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    """Group write is the user's own only with a user-private group: any member of a shared one could swap what it holds."""
    data_dir.mkdir()
    done = _claim(data_dir, path_prefix=shared_group_id(tmp_path / "bin"))
    assert done.returncode == 1
    assert f"the members of its group, which is not your own user's group, may write in {data_dir}" in done.stderr
    assert ["chmod", "g-w,o-w", str(data_dir)] in _printed(done.stderr)
    assert list(data_dir.iterdir()) == [], "refused before anything is written"


def test_a_folder_is_not_claimed_inside_a_folder_anyone_may_write_in(data_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    """Whoever may write in a folder above may rename the data folder away and put theirs in its place."""
    data_dir.parent.chmod(0o777)
    done = _claim(data_dir, path_prefix=private_group_id(tmp_path / "bin"))
    assert done.returncode == 1
    assert f"{data_dir} is inside {data_dir.parent}, which others than you may write in" in done.stderr
    assert ["chmod", "o-w", str(data_dir.parent)] in _printed(done.stderr)
    assert not data_dir.exists(), "refused before anything is made"


def test_a_folder_is_not_claimed_inside_a_folder_a_shared_group_may_write_in(data_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    data_dir.parent.chmod(0o775)
    done = _claim(data_dir, path_prefix=shared_group_id(tmp_path / "bin"))
    assert done.returncode == 1
    assert ["chmod", "g-w,o-w", str(data_dir.parent)] in _printed(done.stderr)


def test_a_folder_is_claimed_inside_a_sticky_folder_anyone_may_write_in(data_dir: Path) -> None:  # noqa: F811
    """As /tmp: none may rename there what another owns."""
    data_dir.parent.chmod(0o1777)
    assert _claim(data_dir).returncode == 0


def test_a_folder_is_not_claimed_inside_a_folder_another_user_owns(data_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    """Root runs it inside a folder nobody's user owns; any other user, with an `id` that says another user runs it."""
    done = _claim(data_dir, path_prefix=owned_by_another_user(data_dir.parent, tmp_path / "bin"))
    assert done.returncode == 1
    assert f"{data_dir} is inside {data_dir.parent}, which another user owns" in done.stderr
    assert not data_dir.exists(), "refused before anything is made"


def test_a_folder_above_is_checked_where_a_link_leads_and_where_the_link_is(data_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    """The data folder given through a link: the folder the link leads to counts too (another's,
    writable by anyone here), not only the link's own place."""
    loose = tmp_path / "loose"
    (loose / "inner").mkdir(parents=True)
    loose.chmod(0o777)
    data_dir.parent.joinpath("link").symlink_to(loose / "inner")
    done = _claim(data_dir.parent / "link" / "data")
    assert done.returncode == 1
    assert ["chmod", "o-w", str(loose)] in _printed(done.stderr)


@pytest.fixture
def umask_000() -> Iterator[None]:
    """The umask of a user who lets everyone write what they make (a shared machine's accident)."""
    before = os.umask(0)
    yield
    os.umask(before)


@pytest.mark.usefixtures("umask_000")
def test_nothing_a_claim_or_a_lease_makes_is_writable_by_others_whatever_the_users_umask(data_dir: Path) -> None:  # noqa: F811
    """Another user could plant a registry's hosts.toml in containerd/ that every node reads, or swap
    the markers and leases the destroys trust."""
    data_dir.parent.chmod(0o755)
    assert _claim(data_dir).returncode == 0
    lease = planned("phase2").one(COMMAND, "cluster-lease")
    leased = run_script(lease, "create", env={"DATA_DIR": str(data_dir)})
    assert leased.returncode == 0, leased.stderr
    made = [data_dir, *data_dir.rglob("*")]
    assert [str(path) for path in made if path.lstat().st_mode & 0o022 and not path.is_symlink()] == []


SECRET = "hvs.CAESIJ-7ffm3Q_secret_root_token_example-xyz"
"""What a file only the user may read holds: the passphrase, an OpenBao password, a root token."""


def secret_file(tmp_path: Path) -> Path:
    secret = tmp_path / "pulumi-passphrase"
    secret.write_text(SECRET + "\n")
    secret.chmod(0o600)
    return secret


def test_a_marker_link_in_a_pods_volume_never_shows_what_it_leads_to(data_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    """A (compromised) pod owns its volume's folder and may leave a link at a marker's name there."""
    _fill(data_dir)
    (data_dir / "volumes" / "pg" / OWNER_MARKER).symlink_to(secret_file(tmp_path))
    done = run_script(data_folder(data_dir), "delete")
    assert SECRET not in done.stderr


def test_a_marker_link_above_the_data_folder_never_shows_what_it_leads_to(data_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    (data_dir.parent / OWNER_MARKER).symlink_to(secret_file(tmp_path))
    done = _claim(data_dir)
    assert SECRET not in done.stderr


def test_a_claim_reads_no_marker_in_a_folder_another_user_made(lone_folder: Path, tmp_path: Path) -> None:
    """/tmp/blueprint-data made by another user, with a link as its marker: refused as that user's
    before its marker is read."""
    (lone_folder / OWNER_MARKER).symlink_to(secret_file(tmp_path))
    done = _claim(lone_folder, path_prefix=owned_by_another_user(lone_folder, tmp_path / "bin"))
    assert done.returncode == 1
    assert f"{lone_folder} belongs to another user" in done.stderr
    assert SECRET not in done.stderr


def test_a_wipe_shows_no_marker_of_a_folder_another_user_owns(data_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    """A pod's volume is its user's: what a marker there says is the pod's to say, never shown. Root
    gives the volume to nobody's user; any other user runs it with an `id` that says another runs it."""
    _fill(data_dir)
    (data_dir / "volumes" / "pg" / OWNER_MARKER).write_text("blueprint/phase1@0123456789abcdef\n")
    prefix = owned_by_another_user(data_dir / "volumes" / "pg", tmp_path / "bin")
    done = run_script(data_folder(data_dir), "delete", path_prefix=prefix)
    assert done.returncode == 1
    assert "0123456789abcdef" not in done.stderr
    assert f"- {data_dir / 'volumes' / 'pg'}, claimed by a marker in a folder another user owns" in done.stderr
