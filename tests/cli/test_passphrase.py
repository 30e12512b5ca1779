"""The passphrase that encrypts Pulumi's state: blueprint generates a private one on first use and
keeps it outside the checkout, readable by the user alone, unless the user set Pulumi's own
variables, which then win. No Pulumi runtime: these are the environment blueprint hands to Pulumi."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from cli import commands, passphrase
from stacks.config import PROJECT_DIR


def passphrase_file() -> Path:
    return Path(commands.pulumi_environment()["PULUMI_CONFIG_PASSPHRASE_FILE"])


def test_the_first_run_creates_a_passphrase_file_readable_by_the_user_alone(config_home: Path) -> None:
    path = passphrase_file()
    assert path == config_home / "blueprint" / "pulumi-passphrase"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_the_passphrase_is_long_and_random(config_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = passphrase_file().read_text().strip()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "another-user"))
    assert len(first) >= 32
    assert passphrase_file().read_text().strip() != first


def test_the_next_run_reuses_the_passphrase(config_home: Path) -> None:
    first = passphrase_file().read_text()
    assert passphrase_file().read_text() == first


def test_without_xdg_config_home_the_passphrase_is_under_dot_config_outside_the_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE_FILE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    path = passphrase_file()
    assert path == tmp_path / ".config" / "blueprint" / "pulumi-passphrase"
    assert not path.resolve().is_relative_to(PROJECT_DIR)


def test_every_checkout_of_the_user_shares_one_passphrase(config_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(commands, "PROJECT_DIR", tmp_path / "one")
    first = passphrase_file()
    monkeypatch.setattr(commands, "PROJECT_DIR", tmp_path / "two")
    assert passphrase_file() == first


def test_the_passphrase_itself_never_goes_into_the_environment_blueprint_passes_on(config_home: Path) -> None:
    env = commands.pulumi_environment()
    assert "PULUMI_CONFIG_PASSPHRASE" not in env
    assert Path(env["PULUMI_CONFIG_PASSPHRASE_FILE"]).read_text().strip() not in repr(env)


def test_pulumi_config_passphrase_set_by_the_user_wins(config_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "mine")
    env = commands.pulumi_environment()
    assert "PULUMI_CONFIG_PASSPHRASE_FILE" not in env
    assert env.get("PULUMI_CONFIG_PASSPHRASE", "mine") == "mine"
    assert not config_home.exists()


def test_pulumi_config_passphrase_file_set_by_the_user_wins(config_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = tmp_path / "my-passphrase"
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE_FILE", str(mine))
    env = commands.pulumi_environment()
    assert env.get("PULUMI_CONFIG_PASSPHRASE_FILE", str(mine)) == str(mine)
    assert "PULUMI_CONFIG_PASSPHRASE" not in env
    assert not config_home.exists()


def test_an_empty_pulumi_config_passphrase_file_is_ignored_as_pulumi_ignores_it(config_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE_FILE", "")
    assert passphrase_file() == config_home / "blueprint" / "pulumi-passphrase"


def test_a_link_in_place_of_the_passphrase_file_is_refused(config_home: Path, tmp_path: Path) -> None:
    """Whoever put the link there chose where the state's key lives."""
    (config_home / "blueprint").mkdir(parents=True)
    (config_home / "blueprint" / "pulumi-passphrase").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(passphrase.PassphraseFileError, match="not a plain file"):
        commands.pulumi_environment()


def test_a_passphrase_file_others_can_read_is_made_private(config_home: Path) -> None:
    path = passphrase_file()
    path.chmod(0o644)
    passphrase_file()
    assert path.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("value", ["", "blueprint"])
def test_an_empty_or_public_passphrase_of_the_user_is_warned_about(value: str) -> None:
    assert "anyone with the state can read its secrets" in str(passphrase.weak_choice({"PULUMI_CONFIG_PASSPHRASE": value}))


def test_a_passphrase_of_the_users_own_is_not_warned_about() -> None:
    assert passphrase.weak_choice({"PULUMI_CONFIG_PASSPHRASE": "correct horse battery staple"}) is None
