"""Config validation: a bad value stops the program before any resource is registered, with an
error naming the key, the value and what is valid. The parsing is pure: no Pulumi runtime here,
except in the tests that prove the ordering through a plan."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.plan import ProgramFailed, plan
from stacks.config import PROJECT_DIR, ConfigError, declared_keys, default_string, parse_phase1, parse_phase2


def error_for(**raw: str) -> str:
    with pytest.raises(ConfigError) as error:
        parse_phase1(raw)
    return str(error.value)


def test_defaults_are_the_ones_pulumi_yaml_declares() -> None:
    config = parse_phase1({})
    assert (config.cluster_name, config.gitlab_nodes, config.runner_nodes) == ("blueprint", 3, 1)
    assert (config.preserve_data, config.headlamp, config.domain) == (False, False, "local.example.net")
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
    assert "expected an integer >= 1" in message


def test_node_count_that_is_not_a_number_is_refused() -> None:
    assert "blueprint:gitlabNodes = 'three'" in error_for(gitlabNodes="three")


@pytest.mark.parametrize("name", ["Blueprint", "blue_print", "-blueprint", "blueprint-", "", "a" * 50])
def test_cluster_name_that_is_not_a_short_dns_label_is_refused(name: str) -> None:
    message = error_for(clusterName=name)
    assert f"blueprint:clusterName = {name!r}" in message
    assert "DNS-1123 label" in message


def test_longest_valid_cluster_name_is_accepted() -> None:
    assert parse_phase1({"clusterName": "a" * 49}).cluster_name == "a" * 49


@pytest.mark.parametrize("key", ["httpPort", "httpsPort", "sshPort", "openbaoPort", "apiServerPort"])
@pytest.mark.parametrize("value", ["0", "65536", "http"])
def test_port_outside_1_to_65535_is_refused(key: str, value: str) -> None:
    message = error_for(**{key: value})
    assert f"blueprint:{key} = '{value}'" in message
    assert "from 1 to 65535" in message


def test_port_used_twice_is_refused_naming_both_keys() -> None:
    message = error_for(openbaoPort="443")
    assert "blueprint:openbaoPort = '443'" in message
    assert "blueprint:httpsPort already uses port 443" in message


@pytest.mark.parametrize("key", ["preserveData", "headlamp"])
@pytest.mark.parametrize("value", ["yes", "1", ""])
def test_flag_that_is_not_a_boolean_is_refused(key: str, value: str) -> None:
    message = error_for(**{key: value})
    assert f"blueprint:{key} = '{value}'" in message
    assert "expected true or false" in message


def test_flags_accept_true_and_false_in_any_case() -> None:
    assert parse_phase1({"preserveData": "True", "headlamp": "FALSE"}).preserve_data is True


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
    assert parse_phase1({"dataDir": "data"}, Path("/srv/blueprint")).data_dir == Path("/srv/blueprint/data")


@pytest.mark.parametrize("domain", ["localhost", "Local.Example.Net", "local..net", "-a.net"])
def test_domain_that_is_not_a_dns_name_of_two_labels_is_refused(domain: str) -> None:
    assert f"blueprint:domain = {domain!r}" in error_for(domain=domain)


def test_unknown_key_is_refused_with_the_closest_valid_one() -> None:
    assert "blueprint:gitlabNode is not a blueprint setting; did you mean blueprint:gitlabNodes?" in error_for(gitlabNode="3")


def test_every_bad_value_is_reported_at_once() -> None:
    message = error_for(gitlabNodes="0", httpPort="0", headlamp="maybe")
    assert all(key in message for key in ("gitlabNodes", "httpPort", "headlamp"))


def test_error_names_the_fix() -> None:
    assert "fix: `pulumi config set blueprint:runnerNodes 1`" in error_for(runnerNodes="0")


def test_default_strings_are_what_pulumi_passes() -> None:
    assert (default_string("preserveData"), default_string("gitlabNodes")) == ("false", "3")


def test_bad_config_stops_the_program_before_any_resource_is_registered() -> None:
    with pytest.raises(ProgramFailed) as failed:
        plan("phase1", {"blueprint:gitlabNodes": "0"})
    assert isinstance(failed.value.cause, ConfigError)
    assert [r["type"] for r in failed.value.registered] == ["pulumi:pulumi:Stack"]


@pytest.mark.parametrize("value", ["/srv/a:b", "/srv/a,b"])
def test_data_folder_path_with_docker_mount_separators_is_refused(value: str) -> None:
    assert "must not contain ':' or ','" in error_for(dataDir=value)


def test_a_secret_value_never_appears_in_an_error() -> None:
    with pytest.raises(ConfigError) as error:
        parse_phase1({"clusterName": "Hunter2-Secret"}, secret_keys={"clusterName"})
    assert "Hunter2" not in str(error.value)
    assert "blueprint:clusterName = [secret]" in str(error.value)


def test_openbao_threshold_above_its_shares_is_refused() -> None:
    with pytest.raises(ConfigError) as error:
        parse_phase2({"openbaoKeyShares": "2", "openbaoKeyThreshold": "3"})
    assert "blueprint:openbaoKeyThreshold = '3' is not valid: at most blueprint:openbaoKeyShares (2)" in str(error.value)


def test_openbao_shares_below_one_are_refused() -> None:
    with pytest.raises(ConfigError) as error:
        parse_phase2({"openbaoKeyShares": "0"})
    assert "blueprint:openbaoKeyShares = '0'" in str(error.value)
