"""The folders `doctor --fix` installs into, blueprint's own under ~/.local/share/blueprint, go first on
blueprint's PATH: those that are there and the user's alone, each once. They hold only those tools, so
nothing of the user's comes before the project's environment; no folder of the user's is moved."""

from __future__ import annotations

import grp
import os
from pathlib import Path

import pytest

from cli.tools_path import tools_folders, tools_on_path, unsafe_way

TOOLS = ".local/share/blueprint/bin"
PULUMI = ".local/share/blueprint/pulumi/bin"


def made(home: Path, *folders: str) -> None:
    for folder in folders:
        (home / folder).mkdir(parents=True)


def test_the_install_folders_that_exist_go_first_on_path(tmp_path: Path) -> None:
    made(tmp_path, PULUMI, TOOLS)
    environ = {"PATH": "/work/.venv/bin:/usr/local/bin:/usr/bin"}
    assert tools_on_path(environ, tmp_path)
    assert environ["PATH"] == f"{tmp_path}/{PULUMI}:{tmp_path}/{TOOLS}:/work/.venv/bin:/usr/local/bin:/usr/bin"


def test_an_install_folder_that_does_not_exist_is_not_put_on_path(tmp_path: Path) -> None:
    made(tmp_path, TOOLS)
    environ = {"PATH": "/usr/bin"}
    tools_on_path(environ, tmp_path)
    assert environ["PATH"] == f"{tmp_path}/{TOOLS}:/usr/bin"


def test_an_install_folder_already_on_path_moves_first_and_stays_once(tmp_path: Path) -> None:
    """A `pulumi` older than blueprint needs, earlier on PATH, must not win over the one `--fix` installed."""
    made(tmp_path, PULUMI)
    environ = {"PATH": f"/usr/local/bin:{tmp_path}/{PULUMI}/:/usr/bin"}
    tools_on_path(environ, tmp_path)
    assert environ["PATH"] == f"{tmp_path}/{PULUMI}:/usr/local/bin:/usr/bin"


def test_the_users_own_local_bin_is_left_where_it_is(tmp_path: Path) -> None:
    """~/.local/bin may hold the user's own python or uv: it never comes before the project's environment."""
    made(tmp_path, ".local/bin", TOOLS)
    environ = {"PATH": f"/work/.venv/bin:/usr/bin:{tmp_path}/.local/bin"}
    tools_on_path(environ, tmp_path)
    assert environ["PATH"] == f"{tmp_path}/{TOOLS}:/work/.venv/bin:/usr/bin:{tmp_path}/.local/bin"


def test_pulumis_own_install_folder_is_never_put_first_on_path(tmp_path: Path) -> None:
    """~/.pulumi/bin is where Pulumi's installer put the user's Pulumi, maybe an old one: where the
    user's PATH has it (or not) is theirs to say; the user's newer `pulumi` earlier on PATH still wins."""
    made(tmp_path, ".pulumi/bin")
    environ = {"PATH": f"/opt/pulumi/bin:/usr/bin:{tmp_path}/.pulumi/bin"}
    assert not tools_on_path(environ, tmp_path)
    assert environ["PATH"] == f"/opt/pulumi/bin:/usr/bin:{tmp_path}/.pulumi/bin"


def test_without_install_folders_path_is_left_alone(tmp_path: Path) -> None:
    environ = {"PATH": "/usr/bin::/bin"}
    assert not tools_on_path(environ, tmp_path)
    assert not tools_on_path(environ, None)
    assert environ == {"PATH": "/usr/bin::/bin"}


@pytest.mark.parametrize("writable", [TOOLS, ".local/share/blueprint"])
def test_a_tools_folder_other_users_may_write_in_is_not_put_on_path(tmp_path: Path, writable: str) -> None:
    """What goes first on PATH is what every script blueprint runs calls `docker`, `rm` or `pulumi`:
    a folder anyone can write in (or swap, through blueprint's folder above it) is no one's to trust."""
    made(tmp_path, TOOLS)
    (tmp_path / writable).chmod(0o777)
    environ = {"PATH": "/usr/bin"}
    assert not tools_on_path(environ, tmp_path)
    assert environ["PATH"] == "/usr/bin"


def test_a_tools_folder_the_users_private_group_may_write_in_goes_first_on_path(tmp_path: Path) -> None:
    """A umask of 002 (each user with a group of their own, as root and Debian's or Fedora's users
    have) gives every folder group write."""
    made(tmp_path, TOOLS)
    (tmp_path / TOOLS).chmod(0o775)
    environ = {"PATH": "/usr/bin"}
    assert tools_on_path(environ, tmp_path)
    assert environ["PATH"] == f"{tmp_path}/{TOOLS}:/usr/bin"


def test_a_tools_folder_another_user_owns_is_not_put_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made(tmp_path, TOOLS)
    owner = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: owner + 1)  # blueprint runs as someone else than the folder's owner
    environ = {"PATH": "/usr/bin"}
    assert not tools_on_path(environ, tmp_path)


def test_a_file_where_a_tools_folder_goes_is_not_put_on_path(tmp_path: Path) -> None:
    (tmp_path / TOOLS).parent.mkdir(parents=True)
    (tmp_path / TOOLS).write_text("")
    environ = {"PATH": "/usr/bin"}
    assert not tools_on_path(environ, tmp_path)


NOBODY = 65534


@pytest.mark.parametrize("shared", ["another group", "the primary group named otherwise"])
def test_a_tools_folder_a_shared_group_may_write_in_is_not_put_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared: str
) -> None:
    """Group write is the user's alone only in a group of their own: macOS gives every user `staff`,
    SUSE `users`, whose members could put their own `kubectl` there."""
    made(tmp_path, TOOLS)
    (tmp_path / TOOLS).chmod(0o775)
    gid = os.getgid()
    if shared == "another group":
        monkeypatch.setattr(os, "getgid", lambda: gid + 1)
    else:
        monkeypatch.setattr(grp, "getgrgid", lambda _gid: grp.struct_group(("staff", "*", gid, [])))
    environ = {"PATH": "/usr/bin"}
    assert not tools_on_path(environ, tmp_path)
    assert environ["PATH"] == "/usr/bin"


@pytest.mark.parametrize("above", ["", ".local", ".local/share"])
def test_a_tools_folder_under_a_folder_anyone_may_write_in_is_not_put_on_path(tmp_path: Path, above: str) -> None:
    """Whoever may write in a folder above it may rename blueprint's folder away (a rename needs no
    right on the folder moved) and put one of theirs, with their `kubectl`, in its place."""
    made(tmp_path, TOOLS)
    (tmp_path / above).chmod(0o777)
    assert tools_folders(tmp_path) == []
    assert unsafe_way(tmp_path / TOOLS) == f"other users may write in {tmp_path / above} (`chmod o-w -- {tmp_path / above}` stops that)"


def test_a_tools_folder_under_a_folder_a_shared_group_may_write_in_is_not_put_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made(tmp_path, TOOLS)
    (tmp_path / ".local/share").chmod(0o775)
    gid = os.getgid()
    monkeypatch.setattr(grp, "getgrgid", lambda _gid: grp.struct_group(("staff", "*", gid, [])))
    assert tools_folders(tmp_path) == []
    share = tmp_path / ".local/share"
    assert unsafe_way(tmp_path / TOOLS) == f"the members of group staff may write in {share} (`chmod g-w -- {share}` stops that)"


def test_a_tools_folder_under_a_sticky_folder_anyone_may_write_in_goes_first_on_path(tmp_path: Path) -> None:
    """/tmp's sticky bit keeps everyone from renaming what is not theirs: a home under it is safe."""
    shared = tmp_path / "shared"
    made(shared, TOOLS)
    shared.chmod(0o1777)
    environ = {"PATH": "/usr/bin"}
    assert tools_on_path(environ, shared)
    assert environ["PATH"] == f"{shared}/{TOOLS}:/usr/bin"


def test_a_tools_folder_under_a_folder_another_user_owns_is_not_put_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its owner may swap what it holds. Root gives the home folder to nobody; any other user, runs
    blueprint as another user than the one who made them (then the first folder that is not root's
    is someone else's)."""
    made(tmp_path, TOOLS)
    if os.geteuid() == 0:
        os.chown(tmp_path, NOBODY, NOBODY)
    else:
        owner = os.getuid()
        monkeypatch.setattr(os, "getuid", lambda: owner + 1)
    assert tools_folders(tmp_path) == []
    assert "belongs to another user" in str(unsafe_way(tmp_path / TOOLS))


def test_a_tools_folder_reached_through_a_link_is_checked_where_the_link_points(tmp_path: Path) -> None:
    """~/.local/share/blueprint as a link into a folder anyone may write in is as swappable as that folder."""
    elsewhere = tmp_path / "open" / "blueprint"
    made(tmp_path, "home/.local/share", f"open/blueprint/{TOOLS.removeprefix('.local/share/blueprint/')}")
    (tmp_path / "home/.local/share/blueprint").symlink_to(elsewhere)
    (tmp_path / "open").chmod(0o777)
    assert tools_folders(tmp_path / "home") == []
    assert (
        unsafe_way(tmp_path / "home" / TOOLS)
        == f"other users may write in {tmp_path / 'open'} (`chmod o-w -- {tmp_path / 'open'}` stops that)"
    )


@pytest.mark.parametrize("home", ["h:y", "relative"])
def test_a_home_path_that_is_not_one_absolute_folder_puts_nothing_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: str
) -> None:
    """HOME=/tmp/x:y would put `/tmp/x` (anyone may make it) and the relative `y/.local/...` on PATH;
    a relative folder is looked up from wherever each command runs."""
    monkeypatch.chdir(tmp_path)
    made(tmp_path, f"{home}/{TOOLS}", f"{home}/{PULUMI}")
    environ = {"PATH": "/usr/bin"}
    assert not tools_on_path(environ, tmp_path / home if home == "h:y" else Path(home))
    assert environ["PATH"] == "/usr/bin"
