"""The passphrase that encrypts Pulumi's state: blueprint generates a private one on first use and
keeps it outside the checkout, readable by the user alone, unless the user set Pulumi's own
variables, which then win. No Pulumi runtime: these are the environment blueprint hands to Pulumi."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from cli import passphrase, stack_runner
from cli.main import main
from shown import PATH_LIMIT, shown
from stacks.config import PROJECT_DIR


def passphrase_file() -> Path:
    return Path(stack_runner.pulumi_environment()["PULUMI_CONFIG_PASSPHRASE_FILE"])


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
    monkeypatch.setattr(stack_runner, "PROJECT_DIR", tmp_path / "one")
    first = passphrase_file()
    monkeypatch.setattr(stack_runner, "PROJECT_DIR", tmp_path / "two")
    assert passphrase_file() == first


def test_the_passphrase_itself_never_goes_into_the_environment_blueprint_passes_on(config_home: Path) -> None:
    env = stack_runner.pulumi_environment()
    assert "PULUMI_CONFIG_PASSPHRASE" not in env
    assert Path(env["PULUMI_CONFIG_PASSPHRASE_FILE"]).read_text().strip() not in repr(env)


def test_pulumi_config_passphrase_set_by_the_user_wins(config_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "mine")
    env = stack_runner.pulumi_environment()
    assert "PULUMI_CONFIG_PASSPHRASE_FILE" not in env
    assert env.get("PULUMI_CONFIG_PASSPHRASE", "mine") == "mine"
    assert not config_home.exists()


def test_pulumi_config_passphrase_file_set_by_the_user_wins(config_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = tmp_path / "my-passphrase"
    mine.write_text("my own passphrase\n")
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE_FILE", str(mine))
    env = stack_runner.pulumi_environment()
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
        stack_runner.pulumi_environment()


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


@pytest.mark.parametrize("text", ["", "\n", "  \t\n"])
def test_an_empty_passphrase_file_is_refused_with_the_fix(config_home: Path, text: str) -> None:
    """Pulumi trims the file and takes what is left, nothing too, as the passphrase."""
    path = config_home / "blueprint" / "pulumi-passphrase"
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_text(text)
    path.chmod(0o600)
    with pytest.raises(passphrase.PassphraseFileError) as refused:
        stack_runner.pulumi_environment()
    assert f"{str(path)!r} is empty: it holds no passphrase" in str(refused.value)
    assert f"`rm -- {path}`" in str(refused.value)
    assert path.read_text() == text, "never replaced: stacks may be encrypted with what it held"


def test_blueprint_env_with_a_home_that_does_not_exist_says_so_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE_FILE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "gone"))
    assert main(["env"]) == 1
    said = capsys.readouterr()
    assert said.out == ""
    assert f"your home folder {str(tmp_path / 'gone')!r} (HOME) does not exist; blueprint keeps its passphrase in" in said.err
    assert "set HOME to your home folder, or XDG_CONFIG_HOME to a folder of yours" in said.err
    assert not (tmp_path / "gone").exists()


def test_a_config_folder_that_cannot_be_made_is_one_message_with_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "a-file" / "config"))
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE_FILE", raising=False)
    with pytest.raises(passphrase.PassphraseFileError, match="blueprint cannot create its passphrase file .*: set HOME"):
        stack_runner.pulumi_environment()


@pytest.mark.parametrize("text", ["\n", "blueprint\n"])
def test_an_empty_or_public_passphrase_file_of_the_user_is_warned_about(tmp_path: Path, text: str) -> None:
    """What Pulumi reads from it, trimmed (pulumi/pulumi pkg/secrets/passphrase/manager.go)."""
    (tmp_path / "mine").write_text(text)
    warning = passphrase.weak_choice({"PULUMI_CONFIG_PASSPHRASE_FILE": str(tmp_path / "mine")})
    assert "the passphrase in PULUMI_CONFIG_PASSPHRASE_FILE is" in str(warning)


NOBODY = 65534


def test_a_config_folder_another_user_owns_is_one_message_with_the_chown(
    config_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A `sudo -E blueprint ...` makes ~/.config/blueprint root's, 0700: the user may not even look in it."""
    folder = config_home / "blueprint"
    folder.mkdir(parents=True, mode=0o700)
    (folder / "pulumi-passphrase").write_text("made under sudo\n")
    owner = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: owner + 1)  # blueprint runs as another user than the folder's owner
    assert main(["env"]) == 1
    said = capsys.readouterr()
    assert said.out == ""
    assert said.err.startswith(f"error: {str(folder)!r} belongs to another user (uid {owner})"), said.err
    assert f"`sudo chown -R {owner + 1}:{os.getgid()} -- {folder}`" in said.err


def test_a_passphrase_file_another_user_owns_is_refused_and_left_as_it_is(config_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not made private under someone else's name (a chmod blueprint may not do), nor trusted. Root
    gives the file to nobody; any other user runs blueprint as another user than the files' owner."""
    path = config_home / "blueprint" / "pulumi-passphrase"
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_text("theirs\n")
    path.chmod(0o644)
    if os.geteuid() == 0:
        os.chown(path, NOBODY, NOBODY)
    else:
        owner = os.getuid()
        monkeypatch.setattr(os, "getuid", lambda: owner + 1)
    with pytest.raises(passphrase.PassphraseFileError, match="belongs to another user"):
        stack_runner.pulumi_environment()
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_a_passphrase_file_the_system_will_not_look_at_is_one_message_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Whatever the system refuses while blueprint checks the file (a folder it may not search, a path
    too long, as here) is said with the file's name."""
    config = "/" + "x/" * 2100
    monkeypatch.setenv("XDG_CONFIG_HOME", config)
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE_FILE", raising=False)
    assert main(["env"]) == 1
    said = capsys.readouterr().err
    path = f"{config}blueprint/pulumi-passphrase"
    assert said.startswith(f"error: blueprint cannot use its passphrase file {shown(path, PATH_LIMIT)} (File name too long)")
    assert "Traceback" not in said


@pytest.mark.parametrize("home", ["", "relative/home"])
def test_an_empty_or_relative_home_is_refused_before_anything_is_made(
    home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Python reads an empty HOME as `/` (posixpath.expanduser): the passphrase would land in /.config, as root."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", home)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE_FILE", raising=False)
    assert main(["env"]) == 1
    said = capsys.readouterr()
    assert said.out == ""
    assert said.err.startswith("error: HOME is empty" if not home else "error: HOME is relative ('relative/home')"), said.err
    assert "Set HOME to your home folder (an absolute path)" in said.err
    assert "Traceback" not in said.err
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(passphrase.PassphraseFileError, match="^HOME is "):
        passphrase.environment({"HOME": home})


def test_a_passphrase_file_of_the_users_choice_that_another_user_owns_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its owner chooses the state's key, and can read every secret in the state."""
    chosen = tmp_path / "passphrase"
    chosen.write_text("a passphrase of someone else's\n")
    owner = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: owner + 1)
    with pytest.raises(passphrase.PassphraseFileError) as refused:
        passphrase.environment({"PULUMI_CONFIG_PASSPHRASE_FILE": str(chosen), "HOME": str(tmp_path)})
    assert str(refused.value).startswith(
        f"PULUMI_CONFIG_PASSPHRASE_FILE names {str(chosen)!r}, which belongs to another user (uid {owner})"
    )
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE_FILE", str(chosen))
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)
    assert main(["env"]) == 1
    assert "Traceback" not in capsys.readouterr().err


def test_checking_the_passphrase_makes_no_file(config_home: Path) -> None:
    """What every Pulumi command checks first, and what only reads the state, leave nothing behind."""
    env = stack_runner.pulumi_environment(create=False)
    assert env["PULUMI_CONFIG_PASSPHRASE_FILE"] == str(config_home / "blueprint" / "pulumi-passphrase")
    assert not config_home.exists()


def test_a_passphrase_file_of_the_users_choice_they_cannot_read_is_refused_with_the_chmod(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = tmp_path / "my-passphrase"
    mine.write_text("mine\n")
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE_FILE", str(mine))
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)
    monkeypatch.setattr(os, "access", lambda path, mode: False)  # the tests may run as root, who reads anything
    with pytest.raises(passphrase.PassphraseFileError) as refused:
        passphrase.environment(os.environ)
    assert f"PULUMI_CONFIG_PASSPHRASE_FILE names {str(mine)!r}, which you cannot read" in str(refused.value)
    assert f"`chmod u+r -- {mine}`" in str(refused.value)
    assert "unset PULUMI_CONFIG_PASSPHRASE_FILE" in str(refused.value)


def test_a_passphrase_file_of_the_users_choice_is_not_looked_for_when_pulumi_config_passphrase_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pulumi reads PULUMI_CONFIG_PASSPHRASE first, and then never the file (`readPassphrase`)."""
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "mine")
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE_FILE", str(tmp_path / "no-such-file"))
    assert passphrase.environment(os.environ) == {}


def test_state_that_cannot_be_decrypted_with_blueprints_passphrase_missing_says_it_is_missing(config_home: Path) -> None:
    said = passphrase.cannot_decrypt(os.environ)
    assert f"blueprint's passphrase file {str(config_home / 'blueprint' / 'pulumi-passphrase')!r} is missing" in said
    assert not config_home.exists()


def test_a_passphrase_file_of_the_users_choice_that_is_a_loop_of_links_is_refused_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE_FILE", str(loop))
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)
    with pytest.raises(passphrase.PassphraseFileError) as refused:
        passphrase.environment(os.environ)
    assert f"PULUMI_CONFIG_PASSPHRASE_FILE names {str(loop)!r}, which cannot be looked at (Too many levels of symbolic links)" in str(
        refused.value
    )


def own_file_exported(config_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """What `eval "$(uv run blueprint env)"` leaves in the shell: PULUMI_CONFIG_PASSPHRASE_FILE naming blueprint's own file."""
    own = config_home / "blueprint" / "pulumi-passphrase"
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE_FILE", str(own))
    return own


def test_blueprints_own_file_exported_by_env_is_made_again_when_it_is_gone(config_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After `rm -rf ~/.config/blueprint`, the next write makes it, as if the variable were unset."""
    own = own_file_exported(config_home, monkeypatch)
    assert stack_runner.pulumi_environment()["PULUMI_CONFIG_PASSPHRASE_FILE"] == str(own)
    assert own.read_text().strip()


def test_blueprints_own_file_exported_by_env_is_refused_when_empty(config_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    own = own_file_exported(config_home, monkeypatch)
    own.parent.mkdir(parents=True, mode=0o700)
    own.write_text("\n")
    own.chmod(0o600)
    with pytest.raises(passphrase.PassphraseFileError, match="is empty: it holds no passphrase"):
        stack_runner.pulumi_environment()


def test_blueprints_own_file_exported_by_env_is_made_private(config_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    own = own_file_exported(config_home, monkeypatch)
    own.parent.mkdir(parents=True, mode=0o700)
    own.write_text("kept\n")
    own.chmod(0o644)
    stack_runner.pulumi_environment()
    assert stat.S_IMODE(own.stat().st_mode) == 0o600


def test_a_relative_passphrase_file_is_the_one_in_the_checkout_where_pulumi_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pulumi runs in the checkout (the Automation API's work_dir) and reads a relative file from there,
    whatever folder blueprint was started in: blueprint checks that one, and hands Pulumi its absolute path."""
    checkout, elsewhere = tmp_path / "checkout", tmp_path / "elsewhere"
    checkout.mkdir()
    elsewhere.mkdir()
    (checkout / "my-passphrase").write_text("mine\n")
    monkeypatch.chdir(elsewhere)  # where the user typed the command: no such file here
    environ = {"PULUMI_CONFIG_PASSPHRASE_FILE": "my-passphrase", "HOME": str(tmp_path)}
    assert passphrase.environment(environ, work_dir=checkout) == {"PULUMI_CONFIG_PASSPHRASE_FILE": str(checkout / "my-passphrase")}


def test_a_relative_passphrase_file_missing_from_the_checkout_is_refused_naming_where_pulumi_looks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (tmp_path / "my-passphrase").write_text("mine\n")
    monkeypatch.chdir(tmp_path)  # the caller's folder holds one; Pulumi would not read it
    with pytest.raises(passphrase.PassphraseFileError) as refused:
        passphrase.environment({"PULUMI_CONFIG_PASSPHRASE_FILE": "my-passphrase", "HOME": str(tmp_path)}, work_dir=checkout)
    assert f"(Pulumi reads {str(checkout / 'my-passphrase')!r}, from the checkout), which does not exist" in str(refused.value)


def test_unsetting_a_missing_passphrase_file_is_advised_only_while_no_stack_was_written(tmp_path: Path) -> None:
    """A stack written with that passphrase cannot be read with blueprint's own: the advice would end in "cannot decrypt"."""
    environ = {"PULUMI_CONFIG_PASSPHRASE_FILE": str(tmp_path / "gone"), "HOME": str(tmp_path)}
    with pytest.raises(passphrase.PassphraseFileError) as fresh:
        passphrase.environment(environ, work_dir=tmp_path)
    assert "or unset the variable (`unset PULUMI_CONFIG_PASSPHRASE_FILE`): blueprint then makes and keeps its own" in str(fresh.value)
    stacks = tmp_path / ".pulumi-state" / ".pulumi" / "stacks" / "blueprint"
    stacks.mkdir(parents=True)
    (stacks / "phase1.json").write_text("{}")
    with pytest.raises(passphrase.PassphraseFileError) as written:
        passphrase.environment(environ, work_dir=tmp_path)
    assert "blueprint then makes and keeps its own" not in str(written.value)
    assert f"the stacks in {str(tmp_path / '.pulumi-state')!r} need the passphrase they were written with" in str(written.value)


def test_a_relative_passphrase_file_is_read_from_the_checkout_pulumi_runs_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE_FILE", "secrets/pass")
    assert passphrase._users_file(os.environ, passphrase._work_dir(None)) == str(PROJECT_DIR / "secrets" / "pass")
