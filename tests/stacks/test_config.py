"""Config validation: a bad value stops the program before any resource is registered, with an
error naming the key, the value and what is valid. The parsing is pure: no Pulumi runtime here,
except in the tests that prove the ordering through a plan."""

from __future__ import annotations

import os
import pwd
import re
from pathlib import Path

import pytest

from cli.plan import ProgramFailed, _run, plan
from stacks import config
from stacks.config import (
    PROJECT_DIR,
    ConfigError,
    absolute_data_dir,
    checkout_id,
    declared_keys,
    default_string,
    key_problems,
    parse_phase1,
    read_checkout_id,
    stack_config,
)


def error_for(**raw: str) -> str:
    with pytest.raises(ConfigError) as error:
        parse_phase1(raw)
    return str(error.value)


def test_defaults_are_the_ones_pulumi_yaml_declares() -> None:
    config = parse_phase1({})
    assert (config.cluster_name, config.gitlab_nodes, config.runner_nodes) == ("blueprint", 3, 1)
    assert (config.preserve_data, config.headlamp, config.domain) == (False, False, "local.example.net")
    assert config.headlamp_admin is False
    assert (config.ports.http, config.ports.https) == (80, 443)
    assert config.data_dir == PROJECT_DIR / "infra" / "data" / "shared"


def test_every_declared_key_has_type_default_and_description() -> None:
    for key, spec in declared_keys().items():
        assert {"type", "default", "description"} <= set(spec), key


@pytest.mark.parametrize("key", ["gitlabNodes", "runnerNodes"])
@pytest.mark.parametrize("value", ["0", "-1"])
def test_node_count_below_one_is_refused(key: str, value: str) -> None:
    message = error_for(**{key: value})
    assert f"blueprint:{key} = '{value}'" in message
    assert "expected an integer from 1 to" in message


def test_node_count_that_is_not_a_number_is_refused() -> None:
    assert "blueprint:gitlabNodes = 'three'" in error_for(gitlabNodes="three")


@pytest.mark.parametrize("name", ["Blueprint", "blue_print", "-blueprint", "blueprint-", "", "a" * 50])
def test_cluster_name_that_is_not_a_short_dns_label_is_refused(name: str) -> None:
    message = error_for(clusterName=name)
    assert f"blueprint:clusterName = {name!r}" in message
    assert "DNS-1123 label" in message


def test_longest_valid_cluster_name_is_accepted() -> None:
    # Without the image cache, whose mirrors' names take 27 characters more (a test below).
    assert parse_phase1({"clusterName": "a" * 49, "imageCache": "false"}).cluster_name == "a" * 49


@pytest.mark.parametrize("key", ["httpPort", "httpsPort", "sshPort", "openbaoPort", "apiServerPort"])
@pytest.mark.parametrize("value", ["0", "65536", "http"])
def test_port_outside_1_to_65535_is_refused(key: str, value: str) -> None:
    message = error_for(**{key: value})
    assert f"blueprint:{key} = '{value}'" in message
    assert "from 1 to 65535" in message


def test_an_https_port_other_than_443_is_refused_naming_why() -> None:
    """GitLab's URLs are on 443 and phase2 calls them from the laptop: another port would fail late, in phase2."""
    message = error_for(httpsPort="8443")
    assert "blueprint:httpsPort = '8443' is not valid: GitLab's URLs" in message
    assert "no other port works yet; free port 443" in message


def test_port_used_twice_is_refused_naming_both_keys() -> None:
    message = error_for(openbaoPort="443")
    assert "blueprint:openbaoPort = '443'" in message
    assert "blueprint:httpsPort is port 443 too: give each its own port (this one, or that one)" in message


@pytest.mark.parametrize("key", ["preserveData", "headlamp", "headlampAdmin"])
@pytest.mark.parametrize("value", ["yes", "1", ""])
def test_flag_that_is_not_a_boolean_is_refused(key: str, value: str) -> None:
    message = error_for(**{key: value})
    assert f"blueprint:{key} = '{value}'" in message
    assert "expected true or false" in message


def test_a_flag_takes_true_or_false_alone_as_pulumi_does() -> None:
    assert parse_phase1({"preserveData": "true", "headlamp": "false"}).preserve_data is True
    assert "blueprint:preserveData = 'True' is not valid: expected true or false" in error_for(preserveData="True")


@pytest.mark.parametrize("value", [" 2", "1_0", "٣", "2.5"])
def test_a_count_takes_what_pulumi_takes_for_an_integer(value: str) -> None:
    assert f"blueprint:gitlabNodes = {value!r} is not valid: expected an integer" in error_for(gitlabNodes=value)


@pytest.mark.parametrize(
    ("written", "passed"),
    [("yes", "yes"), ("on", "on"), ("True", "true"), ("2.0", "2"), ("1e3", "1000"), ("", ""), ("'007'", "007")],
)
def test_a_stack_file_value_reaches_the_program_as_pulumi_passes_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, written: str, passed: str
) -> None:
    monkeypatch.setattr("stacks.config.STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.phase1.yaml").write_text(f"config:\n  blueprint:headlamp: {written}\n")
    assert stack_config("phase1")[0]["blueprint:headlamp"] == passed


def test_a_stack_file_key_without_a_namespace_is_the_projects_as_pulumi_reads_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("stacks.config.STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.phase1.yaml").write_text("config:\n  gitlabNodes: 2\n")
    assert stack_config("phase1")[0]["blueprint:gitlabNodes"] == "2"


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


@pytest.mark.parametrize("domain", ["localhost", "Local.Example.Net", "local..net", "-a.net"])
def test_domain_that_is_not_a_dns_name_of_two_labels_is_refused(domain: str) -> None:
    assert f"blueprint:domain = {domain!r}" in error_for(domain=domain)


def test_unknown_key_is_refused_with_the_closest_valid_one() -> None:
    [problem] = key_problems("phase1", {"blueprint:gitlabNode": "3"}, set_keys={"blueprint:gitlabNode"}, secret_keys=set())
    assert "blueprint:gitlabNode = '3' (in Pulumi.phase1.yaml) is not a blueprint setting; did you mean blueprint:gitlabNodes?" in problem


def test_every_bad_value_is_reported_at_once() -> None:
    message = error_for(gitlabNodes="0", httpPort="0", headlamp="maybe")
    assert all(key in message for key in ("gitlabNodes", "httpPort", "headlamp"))


def test_error_names_the_fix_on_the_stack_with_and_without_the_pulumi_cli() -> None:
    assert (
        "fix: `pulumi config set -s phase1 blueprint:runnerNodes 1`, or add the line `  blueprint:runnerNodes: 1` under `config:` in "
        "Pulumi.phase1.yaml (a `config: {}` becoming `config:`)" in error_for(runnerNodes="0")
    )


def test_default_strings_are_what_pulumi_passes() -> None:
    assert (default_string("preserveData"), default_string("gitlabNodes")) == ("false", "3")


def test_bad_config_stops_the_program_before_any_resource_is_registered() -> None:
    config, secret_keys = stack_config("phase1", {"blueprint:gitlabNodes": "0"})
    with pytest.raises(ProgramFailed) as failed:
        _run("phase1", config, secret_keys, PROJECT_DIR / "__main__.py", {})
    assert isinstance(failed.value.cause, ConfigError)
    assert [r["type"] for r in failed.value.registered] == ["pulumi:pulumi:Stack"]


@pytest.mark.parametrize("value", ["/srv/a:b", "/srv/a,b"])
def test_data_folder_path_with_docker_mount_separators_is_refused(value: str) -> None:
    assert f"it holds {value[-2]!r}" in error_for(dataDir=value)


def test_a_secret_value_never_appears_in_an_error() -> None:
    with pytest.raises(ConfigError) as error:
        parse_phase1({"clusterName": "Hunter2-Secret"}, secret_keys={"clusterName"})
    assert "Hunter2" not in str(error.value)
    assert "blueprint:clusterName = [secret]" in str(error.value)


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
    monkeypatch.setattr(config, "own_homes", lambda: {home})
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
    monkeypatch.setattr(config, "CHECKOUT_ID_FILE", tmp_path / "blueprint-checkout-id")
    claim = plan("phase1").one("command:local:Command", "kind-data-folder")
    assert claim["inputs"]["environment"]["OWNER"] == "blueprint/phase1@offline-plan"
    assert not (tmp_path / "blueprint-checkout-id").exists()


def test_a_project_folder_whose_path_a_shell_would_misread_gets_an_absolute_data_folder_as_its_fix() -> None:
    with pytest.raises(ConfigError) as error:
        parse_phase1({}, Path("/srv/o'brien/blueprint"))
    assert "in the project's own folder, /srv/o'brien/blueprint: give an absolute data folder outside it" in str(error.value)
    assert "fix: `pulumi config set -s phase1 blueprint:dataDir '~/blueprint-data'`" in str(error.value)


def reference_configuration_rows() -> dict[str, tuple[str, str]]:
    """docs/reference/configuration.md's table: each key -> (read by, default)."""
    text = (PROJECT_DIR / "docs" / "reference" / "configuration.md").read_text()
    table = text[text.index("| Key | Type | Default | Read by |") :].split("\n\n", 1)[0]
    rows: dict[str, tuple[str, str]] = {}
    for line in table.splitlines()[2:]:
        key, _type, default, read_by = (cell.strip() for cell in line.strip("|").split("|"))
        name = re.sub(r"^\[`(\w+)`\]\(#\w+\)$", r"\1", key)
        rows[name] = (read_by, "" if default == "empty" else default.strip("`"))
    return rows


def test_the_configuration_reference_says_which_stack_reads_each_key_and_its_default() -> None:
    rows = reference_configuration_rows()
    assert set(rows) == set(declared_keys())
    for key, (read_by, default) in rows.items():
        assert read_by == ", ".join([*config.stacks_reading(key), "dev"]), key
        assert default == default_string(key), key


@pytest.mark.parametrize(("key", "maximum"), [("gitlabNodes", config.MAX_GITLAB_NODES), ("runnerNodes", config.MAX_RUNNER_NODES)])
def test_a_node_count_above_its_bound_is_refused(key: str, maximum: int) -> None:
    assert parse_phase1({key: str(maximum)}) is not None
    assert f"blueprint:{key} = '{maximum + 1}' is not valid: expected an integer from 1 to {maximum}" in error_for(
        **{key: str(maximum + 1)}
    )


@pytest.mark.parametrize("domain", ["10.0.0.1", "192.168.1.10", "a.b.1"])
def test_a_domain_that_is_an_ip_address_is_refused(domain: str) -> None:
    assert "expected a DNS name, not an IP address" in error_for(domain=domain)


def test_a_secure_value_of_ours_is_checked_by_the_program_not_refused_by_its_stand_in(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from stacks.validation import check_stack_files

    monkeypatch.setattr("stacks.config.STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.phase1.yaml").write_text("config:\n  blueprint:domain:\n    secure: v1:AAAA\n")
    assert check_stack_files(["phase1"]) is None
    assert stack_config("phase1") == ({**stack_config("phase2")[0]}, ["blueprint:domain"])


def test_a_secret_values_reason_never_quotes_it() -> None:
    with pytest.raises(ConfigError) as error:
        parse_phase1({"dataDir": "/srv/hunter2;x"}, secret_keys={"dataDir"})
    assert "hunter2" not in str(error.value)
    assert "blueprint:dataDir = [secret] is not valid: it is secret, so what is wrong is not shown" in str(error.value)


def test_a_problem_two_stacks_share_is_said_once() -> None:
    from stacks.validation import message

    said = message({"phase2": ["apps/apps_manifest.yaml: broken"], "phase3": ["apps/apps_manifest.yaml: broken", "other"]})
    assert said.startswith("2 problems in what blueprint reads")
    assert said.count("apps/apps_manifest.yaml: broken") == 1


@pytest.mark.parametrize(
    ("written", "read"), [("10:00", "10:00"), ("0o10", "8"), ("010", "8"), ("1_0", "10"), ("0x1F", "31"), ("09", "9"), ("-5", "-5")]
)
def test_a_stack_file_number_is_read_as_gos_yaml_reads_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, written: str, read: str) -> None:
    monkeypatch.setattr("stacks.config.STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.phase3.yaml").write_text(f"config:\n  blueprint:pipelineTimeout: {written}\n")
    assert stack_config("phase3")[0]["blueprint:pipelineTimeout"] == read


def test_a_check_across_keys_skips_a_secret_one_whose_stand_in_is_all_there_is() -> None:
    hidden = {"headlamp", "sshPort"}
    assert parse_phase1({"headlampAdmin": "true", "headlamp": "false"}, secret_keys=hidden, stand_ins=hidden).headlamp_admin is True
    assert parse_phase1({"httpPort": "2222"}, secret_keys=hidden, stand_ins=hidden).ports.http == 2222


def test_the_program_checks_a_secret_against_other_keys_since_it_has_the_real_value() -> None:
    with pytest.raises(ConfigError) as error:
        parse_phase1({"sshPort": "8200"}, secret_keys={"sshPort"})
    assert "blueprint:sshPort = [secret] is not valid" in str(error.value)
    assert "8200" not in str(error.value)


def test_a_plan_takes_a_secret_that_another_key_depends_on(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The plan cannot decrypt `headlamp`: its stand-in (false) must not refuse headlampAdmin, which the real value may allow."""
    monkeypatch.setattr("stacks.config.STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.phase1.yaml").write_text("config:\n  blueprint:headlamp:\n    secure: v1:AAAA\n  blueprint:headlampAdmin: true\n")
    assert plan("phase1").find("blueprint:index:KindCluster")


@pytest.mark.parametrize(
    ("key", "said"),
    [
        ("bluprint:gitlabNode", "write it as blueprint:gitlabNodes in Pulumi.phase1.yaml"),
        ("bluprint:zzzz", "is not a blueprint setting, nor close to one; Pulumi.yaml lists them"),
    ],
)
def test_a_misspelt_namespace_is_told_the_key_it_most_likely_means(key: str, said: str) -> None:
    [problem] = key_problems("phase1", {key: "5"}, set_keys={key}, secret_keys=set())
    assert said in problem


def test_a_key_that_pulumi_yaml_does_not_declare_nor_comes_close_to_is_unknown() -> None:
    [problem] = key_problems("phase1", {"blueprint:zzzzzz": "5"}, set_keys={"blueprint:zzzzzz"}, secret_keys=set())
    assert problem == "blueprint:zzzzzz = '5' (in Pulumi.phase1.yaml) is not a blueprint setting; Pulumi.yaml declares every valid key"


def test_the_image_cache_is_on_by_default_in_the_users_cache_folder() -> None:
    assert parse_phase1({}).image_cache_dir == config.default_image_cache_dir()


def test_image_cache_false_turns_the_cache_off() -> None:
    assert parse_phase1({"imageCache": "false"}).image_cache_dir is None


def test_the_default_cache_folder_is_in_the_users_cache_folder_whatever_xdg_cache_home_says(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "/srv/cache")
    assert config.default_image_cache_dir("Linux") == (Path.home() / ".cache/blueprint/images").resolve()
    assert config.default_image_cache_dir("Darwin") == (Path.home() / "Library/Caches/blueprint/images").resolve()


def test_the_default_cache_folder_is_resolved_so_one_folder_has_one_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".cache").symlink_to(tmp_path / "real")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert config.default_image_cache_dir("Linux") == tmp_path / "real" / "blueprint" / "images"


def test_a_default_cache_folder_that_would_hold_the_data_folder_is_refused_naming_it() -> None:
    message = error_for(dataDir=str(config.default_image_cache_dir() / "platform"))
    assert f"blueprint:imageCacheDir = '' is not valid: its default here, {config.default_image_cache_dir()}, cannot be used" in message


def test_a_cluster_name_whose_mirrors_names_are_one_dns_label_is_accepted_with_the_cache_on() -> None:
    assert parse_phase1({"clusterName": "a" * 36}).cluster_name == "a" * 36  # "-mirror-registry-gitlab-com" makes 63


def test_a_cluster_name_too_long_for_the_mirrors_names_is_refused_with_the_cache_on() -> None:
    assert "at most 36 characters here, or set blueprint:imageCache to false" in error_for(clusterName="a" * 40)
    assert parse_phase1({"clusterName": "a" * 40, "imageCache": "false"}).cluster_name == "a" * 40


def test_a_domain_whose_registry_name_is_a_public_registry_is_refused() -> None:
    assert "registry.gitlab.com is a public registry the platform pulls from" in error_for(domain="gitlab.com")


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
