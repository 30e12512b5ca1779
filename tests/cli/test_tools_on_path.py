"""The folders `doctor --fix` installs into go first on blueprint's PATH: those that exist, each once.
They hold only those tools, so nothing of the user's comes before the project's environment."""

from __future__ import annotations

from pathlib import Path

from cli.main import tools_on_path

TOOLS = ".local/share/blueprint/bin"


def test_the_install_folders_that_exist_go_first_on_path(tmp_path: Path) -> None:
    (tmp_path / ".pulumi/bin").mkdir(parents=True)
    (tmp_path / TOOLS).mkdir(parents=True)
    environ = {"PATH": "/work/.venv/bin:/usr/local/bin:/usr/bin"}
    assert tools_on_path(environ, tmp_path)
    assert environ["PATH"] == f"{tmp_path}/.pulumi/bin:{tmp_path}/{TOOLS}:/work/.venv/bin:/usr/local/bin:/usr/bin"


def test_an_install_folder_that_does_not_exist_is_not_put_on_path(tmp_path: Path) -> None:
    (tmp_path / TOOLS).mkdir(parents=True)
    environ = {"PATH": "/usr/bin"}
    tools_on_path(environ, tmp_path)
    assert environ["PATH"] == f"{tmp_path}/{TOOLS}:/usr/bin"


def test_an_install_folder_already_on_path_moves_first_and_stays_once(tmp_path: Path) -> None:
    """A `pulumi` older than blueprint needs, earlier on PATH, must not win over the one `--fix` installed."""
    (tmp_path / ".pulumi/bin").mkdir(parents=True)
    environ = {"PATH": f"/usr/local/bin:{tmp_path}/.pulumi/bin/:/usr/bin"}
    tools_on_path(environ, tmp_path)
    assert environ["PATH"] == f"{tmp_path}/.pulumi/bin:/usr/local/bin:/usr/bin"


def test_the_users_own_local_bin_is_left_where_it_is(tmp_path: Path) -> None:
    """~/.local/bin may hold the user's own python or uv: it never comes before the project's environment."""
    (tmp_path / ".local/bin").mkdir(parents=True)
    (tmp_path / TOOLS).mkdir(parents=True)
    environ = {"PATH": f"/work/.venv/bin:/usr/bin:{tmp_path}/.local/bin"}
    tools_on_path(environ, tmp_path)
    assert environ["PATH"] == f"{tmp_path}/{TOOLS}:/work/.venv/bin:/usr/bin:{tmp_path}/.local/bin"


def test_without_install_folders_path_is_left_alone(tmp_path: Path) -> None:
    environ = {"PATH": "/usr/bin::/bin"}
    assert not tools_on_path(environ, tmp_path)
    assert not tools_on_path(environ, None)
    assert environ == {"PATH": "/usr/bin::/bin"}
