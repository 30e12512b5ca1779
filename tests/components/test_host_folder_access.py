"""Who else can reach a folder a stack claims: the claim takes only a folder that is the user's alone
(another user, or anyone who may write in it, could swap the platform's data and secrets under it),
and the scripts read a marker only from a regular file, a bounded part of it (a pod writes under the
volumes folder: a FIFO or a device named as a marker must never hang a wipe)."""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from components.markers import LAYOUT_MARKER, OWNER_MARKER
from tests.components.test_host_folder import NOBODY, _fill, data_dir  # noqa: F401 (a fixture)
from tests.plans import COMMAND, fake_command, planned, run_script


def _claim(folder: Path, script: str = "create", path_prefix: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run_script(planned("phase1", dataDir=str(folder)).one(COMMAND, "kind-data-folder"), script, path_prefix=path_prefix)


def _printed(stderr: str) -> list[list[str]]:
    return [shlex.split(line) for line in stderr.splitlines() if line.startswith("  ")]


@pytest.fixture
def umask_002() -> Iterator[None]:
    """A user whose group may write what they make (Debian's and Fedora's default for a user's own group)."""
    before = os.umask(0o002)
    yield
    os.umask(before)


def test_a_folder_anyone_may_write_in_is_not_claimed_and_the_fix_is_said(data_dir: Path) -> None:  # noqa: F811
    """As /tmp/blueprint-data made by `mkdir -m 0777`: another user could swap what it holds."""
    data_dir.mkdir()
    data_dir.chmod(0o777)
    done = _claim(data_dir)
    assert done.returncode == 1
    assert f"anyone may write in {data_dir}" in done.stderr
    assert ["chmod", "o-w", str(data_dir)] in _printed(done.stderr)
    assert list(data_dir.iterdir()) == [], "refused before anything is written"


@pytest.mark.usefixtures("umask_002")
def test_a_folder_made_with_a_umask_that_lets_the_group_write_is_claimed_and_claimed_again(data_dir: Path) -> None:  # noqa: F811
    data_dir.mkdir()
    assert data_dir.stat().st_mode & 0o777 == 0o775
    for script in ("create", "update"):
        done = _claim(data_dir, script)
        assert done.returncode == 0, done.stderr


def test_a_folder_another_user_owns_is_not_claimed(data_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    """Root runs it over a folder nobody's user owns; any other user, with an `id` that says another
    user runs it (the claim asks `id -u` whose the folder must be)."""
    data_dir.mkdir()
    prefix = None
    if os.geteuid() == 0:
        os.chown(data_dir, NOBODY, NOBODY)
    else:
        prefix = tmp_path / "bin"
        fake_command(prefix, "id", f"echo {os.geteuid() + 1}\n")
    done = _claim(data_dir, path_prefix=prefix)
    assert done.returncode == 1
    assert f"{data_dir} belongs to another user" in done.stderr
    assert list(data_dir.iterdir()) == [], "refused before anything is written"


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
        command = planned("phase1", dataDir=str(data_dir)).one(COMMAND, "kind-data-folder")
        inside = 'mount --bind /usr "$VOLUMES" || exit 99; exec /bin/sh -c "$SCRIPT"'
        argv = ["unshare", "--user", "--map-root-user", "--mount", "/bin/sh", "-c", inside]
        env = {**os.environ, **command["inputs"]["environment"], "VOLUMES": str(volumes), "SCRIPT": command["inputs"]["update"]}
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 1, done.stderr
    assert f"{volumes} belongs to another user" in done.stderr


@pytest.mark.parametrize("kind", ["fifo", "link to a fifo"])
def test_a_marker_a_pod_made_a_fifo_never_hangs_the_wipe(data_dir: Path, kind: str) -> None:  # noqa: F811
    """A pod writes in its volume: `.blueprint-owner` there is a claim the wipe reads, and refuses as nobody's it knows."""
    _fill(data_dir)
    marker = data_dir / "volumes" / "pg" / OWNER_MARKER
    if kind == "fifo":
        os.mkfifo(marker)
    else:
        os.mkfifo(data_dir / "volumes" / "pg" / "fifo")
        marker.symlink_to("fifo")
    command = planned("phase1", dataDir=str(data_dir)).one(COMMAND, "kind-data-folder")
    try:
        done = run_script(command, "delete")
    except subprocess.TimeoutExpired:
        pytest.fail(f"the wipe hangs on a {kind} named {OWNER_MARKER}")
    assert done.returncode == 1
    assert f"- {marker.parent}, claimed by an unreadable marker" in done.stderr
    assert (data_dir / "volumes" / "pg" / "PG_VERSION").exists()


def test_the_layout_record_a_claim_writes_is_readable_by_all_and_leaves_no_draft(data_dir: Path) -> None:  # noqa: F811
    assert _claim(data_dir).returncode == 0
    assert _claim(data_dir, "update").returncode == 0
    assert (data_dir / LAYOUT_MARKER).stat().st_mode & 0o777 == 0o644
    assert not [path.name for path in data_dir.iterdir() if path.name.startswith(f"{LAYOUT_MARKER}.")]
