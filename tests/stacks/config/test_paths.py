"""The folders the config names: a data folder or an image cache whose wipe would take something else
with it (the project, a home, a system tree), or whose path a shell would misread, is refused; the
checkout id is made once and kept."""

from __future__ import annotations

import os
import pwd
import re
from pathlib import Path

import pytest

from cli.plan import ProgramFailed, plan
from stacks.config import PROJECT_DIR, ConfigError, paths
from stacks.config.paths import absolute_data_dir, checkout_id, default_image_cache_dir, read_checkout_id
from stacks.config.phases import parse_phase1
from tests.stacks.config import error_for


@pytest.mark.parametrize("value", [".git/data", "infra/.git", str(PROJECT_DIR / ".git" / "x")])
def test_data_folder_inside_git_is_refused(value: str) -> None:
    message = error_for(dataDir=value)
    assert f"blueprint:dataDir = {value!r}" in message
    assert "inside a .git folder" in message


@pytest.mark.parametrize("value", [".", "..", "/", ""])
def test_data_folder_that_would_take_the_project_with_it_is_refused(value: str) -> None:
    assert "must not be the project folder or one of its parents" in error_for(dataDir=value)


def test_data_folder_that_is_the_home_folder_is_refused() -> None:
    assert "must not be the home folder" in error_for(dataDir=str(Path.home()))


def test_relative_data_folder_is_made_absolute_against_the_project() -> None:
    assert parse_phase1({"dataDir": "infra/data/x"}, Path("/srv/blueprint")).data_dir == Path("/srv/blueprint/infra/data/x")


@pytest.mark.parametrize("value", ["/srv/a:b", "/srv/a,b"])
def test_data_folder_path_with_docker_mount_separators_is_refused(value: str) -> None:
    assert f"it holds {value[-2]!r}" in error_for(dataDir=value)


@pytest.mark.parametrize("char", ["'", '"', "$", "`", ";", "&", "|", "*", "?", "[", "\\", "\n", "\t", "<", ">", "(", "#", "!"])
def test_data_folder_with_a_character_a_shell_or_glob_would_read_is_refused(char: str) -> None:
    message = error_for(dataDir=f"/srv/blue{char}print")
    assert "may hold only letters, digits, spaces and +-./@_~ (it reaches shell scripts and Docker's mount syntax)" in message
    assert f"it holds {char!r}" in message


@pytest.mark.parametrize("value", ["/srv/My Data/blue_print-1.0+x@y~", "/srv/données"])
def test_data_folder_with_letters_digits_spaces_and_safe_punctuation_is_accepted(value: str) -> None:
    assert parse_phase1({"dataDir": value}).data_dir == Path(value)


SYSTEM = ["/etc", "/etc/blueprint", "/usr/local/blueprint", "/bin", "/boot/x", "/dev/shm/x", "/proc/x", "/sys/x", "/System/x", "/Library/x"]


@pytest.mark.parametrize("value", SYSTEM)
def test_data_folder_in_a_system_tree_is_refused(value: str) -> None:
    assert "which belongs to the operating system" in error_for(dataDir=value)


ELSEWHERE = Path("/blueprint-test-checkout/blueprint")
"""A checkout inside none of the folders these tests name: where the real one is (CI may clone
under /tmp, /home or /srv) must not change which rule a value meets first."""


@pytest.fixture
def home_elsewhere(monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home inside none of the folders these tests name (a CI job's HOME may be /tmp or /root)."""
    home = Path("/blueprint-test-home/me")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(paths, "own_homes", lambda: {home})
    return home


HOLDERS = ["/srv", "/opt", "/var", "/var/lib", "/tmp", "/home", "/root", "/mnt", "/media", "/Users", "/Volumes", "/private"]


@pytest.mark.usefixtures("home_elsewhere")
@pytest.mark.parametrize("value", HOLDERS)
def test_data_folder_that_holds_other_folders_itself_is_refused(value: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_phase1({"dataDir": value}, ELSEWHERE)
    assert f"must not be {value} itself, which holds other folders; a folder inside it ({value}/blueprint) is fine" in str(error.value)


@pytest.mark.usefixtures("home_elsewhere")
@pytest.mark.parametrize("value", ["/srv/blueprint", "/opt/blueprint/data", "/var/lib/blueprint", "/tmp/blueprint", "~/blueprint-data"])
def test_data_folder_inside_a_folder_that_holds_others_is_accepted(value: str) -> None:
    assert parse_phase1({"dataDir": value}, ELSEWHERE).data_dir == Path(value).expanduser()


@pytest.mark.parametrize("checkout", ["/tmp/blueprint", "/home/someone/blueprint", "/srv/blueprint"])
def test_a_checkout_inside_a_folder_that_holds_others_keeps_its_default_data_folder(checkout: str) -> None:
    """The refusal is for /tmp itself, not for a checkout CI cloned under it."""
    assert parse_phase1({}, Path(checkout)).data_dir == Path(checkout).resolve() / "infra" / "data" / "shared"


NO_SUCH_USER = "blueprint-test-no-such-user"


def test_a_data_folder_in_the_home_of_no_user_is_one_config_error_naming_the_value() -> None:
    """`~user` of a user the machine does not know: pathlib raises a RuntimeError."""
    message = error_for(dataDir=f"~{NO_SUCH_USER}/x")
    assert f"blueprint:dataDir = '~{NO_SUCH_USER}/x' is not valid: there is no user {NO_SUCH_USER!r} on this machine" in message
    assert "use ~/<folder> in your own home, or an absolute path" in message


def test_a_data_folder_read_outside_the_config_check_is_a_config_error_too() -> None:
    """`blueprint destroy` reads phase1's dataDir to find the data folder no stack holds any more."""
    with pytest.raises(ConfigError, match=f"there is no user {NO_SUCH_USER!r}"):
        absolute_data_dir(f"~{NO_SUCH_USER}/x", PROJECT_DIR)


def test_a_plan_with_a_data_folder_in_the_home_of_no_user_stops_with_the_config_error() -> None:
    with pytest.raises(ProgramFailed) as failed:
        plan("phase1", {"blueprint:dataDir": f"~{NO_SUCH_USER}/x"})
    assert isinstance(failed.value.cause, ConfigError)


def test_a_data_folder_in_another_users_home_is_refused(home_elsewhere: Path) -> None:
    """Not this user's to fill with secrets, nor to wipe: root's home, for a user whose home is elsewhere."""
    message = error_for(dataDir="~root/blueprint-data")
    assert "~root is another user's home (/root), not yours to fill with secrets or to wipe" in message


def _other_users(monkeypatch: pytest.MonkeyPatch, *homes: tuple[str, str]) -> None:
    """The password database holds these users, `(name, home)`, and no one else."""
    entries = [pwd.struct_passwd((name, "x", 2000 + n, 2000 + n, "", home, "/bin/sh")) for n, (name, home) in enumerate(homes)]
    monkeypatch.setattr(pwd, "getpwall", lambda: entries)


@pytest.mark.usefixtures("home_elsewhere")
def test_a_data_folder_in_another_users_home_is_refused_however_it_is_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """`~bob/x` is refused: `/home/bob/x`, the same folder, is too."""
    _other_users(monkeypatch, ("bob", "/home/bob"))
    with pytest.raises(ConfigError) as error:
        parse_phase1({"dataDir": "/home/bob/blueprint-data"}, ELSEWHERE)
    assert "the data folder must not be in /home/bob, the home folder of bob: not yours to fill with secrets or to wipe" in str(error.value)


@pytest.mark.usefixtures("home_elsewhere")
def test_a_data_folder_that_holds_another_users_home_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    _other_users(monkeypatch, ("bob", "/data/people/bob"))
    with pytest.raises(ConfigError) as error:
        parse_phase1({"dataDir": "/data/people"}, ELSEWHERE)
    assert "must not hold /data/people/bob, the home folder of bob, which a wipe would remove with it" in str(error.value)


@pytest.mark.usefixtures("home_elsewhere")
@pytest.mark.parametrize("value", ["/srv/blueprint", "/var/lib/blueprint", "/opt/blueprint"])
def test_system_accounts_whose_home_is_root_or_a_shared_folder_refuse_no_data_folder(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    _other_users(monkeypatch, ("systemd-network", "/"), ("sys", "/var"), ("nobody", "/nonexistent"))
    assert parse_phase1({"dataDir": value}, ELSEWHERE).data_dir == Path(value)


def test_your_own_home_by_name_is_accepted() -> None:
    me = pwd.getpwuid(os.getuid()).pw_name
    assert parse_phase1({"dataDir": f"~{me}/blueprint-data"}).data_dir == Path(f"~{me}/blueprint-data").expanduser().resolve()


@pytest.mark.parametrize("value", ["data", "../blueprint-data", "infra/data", "infra/data/../secrets", "apps/data"])
def test_relative_data_folder_outside_infra_data_is_refused(value: str) -> None:
    message = error_for(dataDir=value)
    assert f"blueprint:dataDir = {value!r} is not valid: a " in message
    assert "must be inside infra/data/, the one folder of the project git ignores" in message
    assert "use infra/data/<name>, or an absolute path outside the project" in message


@pytest.mark.parametrize("inside", ["apps/data", "infra/secrets", "infra/data"])
def test_absolute_data_folder_inside_the_project_but_outside_infra_data_is_refused(inside: str) -> None:
    message = error_for(dataDir=str(PROJECT_DIR / inside))
    assert "a data folder inside the project must be inside infra/data/, the one folder of the project git ignores" in message


@pytest.mark.parametrize("value", ["infra/data/dev", str(PROJECT_DIR / "infra" / "data" / "mine")])
def test_data_folder_inside_infra_data_is_accepted(value: str) -> None:
    assert parse_phase1({"dataDir": value}).data_dir == PROJECT_DIR / "infra" / "data" / Path(value).name


def test_a_checkout_id_is_made_on_first_use_and_kept(tmp_path: Path) -> None:
    made = checkout_id(tmp_path / ".pulumi-state" / "blueprint-checkout-id")
    assert re.fullmatch("[0-9a-f]{16}", made)
    assert checkout_id(tmp_path / ".pulumi-state" / "blueprint-checkout-id") == made


def test_two_checkouts_get_different_ids(tmp_path: Path) -> None:
    assert checkout_id(tmp_path / "one" / "id") != checkout_id(tmp_path / "two" / "id")


def test_a_checkout_id_file_that_holds_no_id_is_refused_naming_the_fix(tmp_path: Path) -> None:
    (tmp_path / "id").write_text("not an id\n")
    with pytest.raises(ConfigError) as error:
        read_checkout_id(tmp_path / "id")
    assert f"{tmp_path / 'id'} does not hold a checkout id (16 hex digits). Write back the id it held" in str(error.value)


def test_the_offline_plan_names_a_fixed_checkout_and_writes_no_id(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Plans are the same in every checkout, and planning never writes into it."""
    monkeypatch.setattr(paths, "CHECKOUT_ID_FILE", tmp_path / "blueprint-checkout-id")
    claim = plan("phase1").one("command:local:Command", "kind-data-folder")
    assert claim["inputs"]["environment"]["OWNER"] == "blueprint/phase1@offline-plan"
    assert not (tmp_path / "blueprint-checkout-id").exists()


def test_a_project_folder_whose_path_a_shell_would_misread_gets_an_absolute_data_folder_as_its_fix() -> None:
    with pytest.raises(ConfigError) as error:
        parse_phase1({}, Path("/srv/o'brien/blueprint"))
    assert "in the project's own folder, /srv/o'brien/blueprint: give an absolute data folder outside it" in str(error.value)
    assert "fix: in Pulumi.phase1.yaml, replace `config: {}` with `config:` and the line `  blueprint:dataDir: '~/blueprint-data'`" in str(
        error.value
    )


def test_the_default_cache_folder_is_in_the_users_cache_folder_whatever_xdg_cache_home_says(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "/srv/cache")
    assert default_image_cache_dir("Linux") == (Path.home() / ".cache/blueprint/images").resolve()
    assert default_image_cache_dir("Darwin") == (Path.home() / "Library/Caches/blueprint/images").resolve()


def test_the_default_cache_folder_is_resolved_so_one_folder_has_one_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".cache").symlink_to(tmp_path / "real")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_image_cache_dir("Linux") == tmp_path / "real" / "blueprint" / "images"


def test_a_default_cache_folder_that_would_hold_the_data_folder_is_refused_naming_it() -> None:
    message = error_for(dataDir=str(default_image_cache_dir() / "platform"))
    assert f"blueprint:imageCacheDir = '' is not valid: its default here, {default_image_cache_dir()}, cannot be used" in message


def test_an_image_cache_folder_inside_the_project_is_refused() -> None:
    assert "give one outside this project" in error_for(imageCacheDir=str(PROJECT_DIR / "infra" / "data" / "images"))


def test_an_image_cache_folder_relative_to_the_checkout_is_refused() -> None:
    message = error_for(imageCacheDir="cache")
    assert "blueprint:imageCacheDir = 'cache'" in message
    assert "absolute path or as ~/<folder>" in message


def test_an_image_cache_folder_inside_the_data_folder_is_refused(tmp_path: Path) -> None:
    message = error_for(dataDir=str(tmp_path / "data"), imageCacheDir=str(tmp_path / "data" / "images"))
    assert "must not be inside the data folder" in message


def test_an_image_cache_folder_that_holds_the_data_folder_is_refused(tmp_path: Path) -> None:
    message = error_for(dataDir=str(tmp_path / "cache" / "data"), imageCacheDir=str(tmp_path / "cache"))
    assert "must not hold the data folder" in message


def test_an_image_cache_folder_is_checked_as_a_folder_a_wipe_removes() -> None:
    assert "the image cache folder must not be inside /etc" in error_for(imageCacheDir="/etc/blueprint")


def test_an_image_cache_folder_that_is_a_file_is_refused_as_a_data_folder_is(tmp_path: Path) -> None:
    (tmp_path / "images").write_text("not a folder\n")
    message = error_for(imageCacheDir=str(tmp_path / "images"))
    assert f"the image cache folder {tmp_path / 'images'} is a file, not a folder; remove or move it, or give another folder" in message


def test_a_data_folder_whose_part_is_255_bytes_is_taken_and_256_refused_however_few_characters(tmp_path: Path) -> None:
    assert parse_phase1({"dataDir": str(tmp_path / ("d" * 255))}).data_dir == tmp_path / ("d" * 255)
    assert "a part of its path is 256 bytes long" in error_for(dataDir=str(tmp_path / ("d" * 254 + "é")))  # 255 characters


def test_a_part_of_the_data_folder_that_exists_is_not_measured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder there proves its name fine (one made on a Mac, on a volume mounted here): as if names took 10 bytes."""
    monkeypatch.setattr(paths, "NAME_MAX", 10)
    (tmp_path / "an-existing-folder").mkdir()
    assert parse_phase1({"dataDir": str(tmp_path / "an-existing-folder" / "data")}).data_dir == tmp_path / "an-existing-folder" / "data"


def test_a_part_of_the_data_folder_yet_to_be_made_is_measured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paths, "NAME_MAX", 10)
    assert "a part of its path is 12 bytes long ('a-new-folder')" in error_for(dataDir=str(tmp_path / "a-new-folder"))


def test_on_macos_a_part_is_measured_in_utf16_units_not_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """HFS+ and APFS take 255 UTF-16 units a name: 200 `é` (400 bytes) fit."""
    monkeypatch.setattr(os, "uname", lambda: os.uname_result(("Darwin", "mac", "23.0", "", "arm64")))
    assert parse_phase1({"dataDir": str(tmp_path / ("é" * 200))}).data_dir == tmp_path / ("é" * 200)


def test_on_macos_a_part_over_255_utf16_units_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "uname", lambda: os.uname_result(("Darwin", "mac", "23.0", "", "arm64")))
    message = error_for(dataDir=str(tmp_path / ("é" * 256)))
    assert "a part of its path is 256 UTF-16 units long ('éééé" in message
    assert "over the 255 UTF-16 units a file system takes for one name; shorten it" in message
