"""Each phase's config: a bad value is refused with an error naming the key, the value, what is valid
and the fix, every one at once; a secret's value never shows. The parsing is pure: no Pulumi
runtime here, except in the test that proves a plan takes a secret's stand-in."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.plan import plan
from stacks.config import PROJECT_DIR, ConfigError
from stacks.config.paths import default_image_cache_dir
from stacks.config.phases import MAX_GITLAB_NODES, MAX_RUNNER_NODES, key_problems, parse_phase1
from tests.stacks.config import error_for


def test_defaults_are_the_ones_pulumi_yaml_declares() -> None:
    config = parse_phase1({})
    assert (config.cluster_name, config.gitlab_nodes, config.runner_nodes) == ("blueprint", 3, 1)
    assert (config.preserve_data, config.headlamp, config.domain) == (False, False, "local.example.net")
    assert config.headlamp_admin is False
    assert (config.ports.http, config.ports.https) == (80, 443)
    assert config.data_dir == PROJECT_DIR / "infra" / "data" / "shared"


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
        "fix: in Pulumi.phase1.yaml, replace `config: {}` with `config:` and the line `  blueprint:runnerNodes: 1` (under a `config:` "
        'that holds lines already, add that line); or with Pulumi: `eval "$(uv run blueprint env)"`, then '
        "`pulumi config set -s phase1 blueprint:runnerNodes 1`" in error_for(runnerNodes="0")
    )


ENV = 'eval "$(uv run blueprint env)"'


def test_a_key_on_a_stack_that_does_not_read_it_is_moved_in_the_stack_files_first_and_with_pulumi_after_blueprint_env() -> None:
    [problem] = key_problems("phase2", {"blueprint:domain": "x.example.net"}, set_keys={"blueprint:domain"}, secret_keys=set())
    assert "Move it: move its line from Pulumi.phase2.yaml to Pulumi.phase1.yaml (a `config: {}` there becomes `config:`" in problem
    assert problem.index("move its line") < problem.index(f"or with Pulumi: `{ENV}`, then `pulumi config rm -s phase2 blueprint:domain`")
    assert problem.endswith("`pulumi config set -s phase1 blueprint:domain x.example.net`")


def test_a_secret_on_a_stack_that_does_not_read_it_is_set_anew_on_the_other_never_moved() -> None:
    """Its line is encrypted with its own stack's key: moved, the other stack could not decrypt it."""
    [problem] = key_problems(
        "phase2", {"blueprint:domain": "x.example.net"}, set_keys={"blueprint:domain"}, secret_keys={"blueprint:domain"}
    )
    assert "to Pulumi.phase1.yaml" not in problem
    assert (
        f"Move it: remove its line from Pulumi.phase2.yaml, and set it on phase1 with Pulumi: `{ENV}`, then "
        "`pulumi config set --secret -s phase1 blueprint:domain <value>`"
    ) in problem
    assert "x.example.net" not in problem


def test_a_secret_value_never_appears_in_an_error() -> None:
    with pytest.raises(ConfigError) as error:
        parse_phase1({"clusterName": "Hunter2-Secret"}, secret_keys={"clusterName"})
    assert "Hunter2" not in str(error.value)
    assert "blueprint:clusterName = [secret]" in str(error.value)


@pytest.mark.parametrize(("key", "maximum"), [("gitlabNodes", MAX_GITLAB_NODES), ("runnerNodes", MAX_RUNNER_NODES)])
def test_a_node_count_above_its_bound_is_refused(key: str, maximum: int) -> None:
    assert parse_phase1({key: str(maximum)}) is not None
    assert f"blueprint:{key} = '{maximum + 1}' is not valid: expected an integer from 1 to {maximum}" in error_for(
        **{key: str(maximum + 1)}
    )


@pytest.mark.parametrize("domain", ["10.0.0.1", "192.168.1.10", "a.b.1"])
def test_a_domain_that_is_an_ip_address_is_refused(domain: str) -> None:
    assert "expected a DNS name, not an IP address" in error_for(domain=domain)


def test_a_secret_values_reason_never_quotes_it() -> None:
    with pytest.raises(ConfigError) as error:
        parse_phase1({"dataDir": "/srv/hunter2;x"}, secret_keys={"dataDir"})
    assert "hunter2" not in str(error.value)
    assert "blueprint:dataDir = [secret] is not valid: it is secret, so what is wrong is not shown" in str(error.value)


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
    monkeypatch.setattr("stacks.config.schema.STACK_FILES_DIR", tmp_path)
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
    assert parse_phase1({}).image_cache_dir == default_image_cache_dir()


def test_image_cache_false_turns_the_cache_off() -> None:
    assert parse_phase1({"imageCache": "false"}).image_cache_dir is None


def test_a_cluster_name_whose_mirrors_names_are_one_dns_label_is_accepted_with_the_cache_on() -> None:
    assert parse_phase1({"clusterName": "a" * 36}).cluster_name == "a" * 36  # "-mirror-registry-gitlab-com" makes 63


def test_a_cluster_name_too_long_for_the_mirrors_names_is_refused_with_the_cache_on() -> None:
    assert "at most 36 characters here, or set blueprint:imageCache to false" in error_for(clusterName="a" * 40)
    assert parse_phase1({"clusterName": "a" * 40, "imageCache": "false"}).cluster_name == "a" * 40


def test_a_domain_whose_registry_name_is_a_public_registry_is_refused() -> None:
    assert "registry.gitlab.com is a public registry the platform pulls from" in error_for(domain="gitlab.com")


@pytest.mark.parametrize("domain", ["co.uk", "github.io", "s3.amazonaws.com", "eu-west-1.compute.amazonaws.com", "x.ck", "xn--55qx5d.cn"])
def test_a_domain_that_is_a_public_suffix_is_refused(domain: str) -> None:
    """ICANN's (co.uk) and private (github.io) suffixes, those of a wildcard rule (*.ck) and an IDN one
    punycoded (公司.cn): names of many owners."""
    assert f"{domain} is a public suffix" in error_for(domain=domain)


@pytest.mark.parametrize("domain", ["amazonaws.com", "fastly.net", "amazoncognito.com"])
def test_a_domain_that_holds_public_suffixes_below_it_is_refused(domain: str) -> None:
    """amazonaws.com is no suffix, but s3.amazonaws.com is: a CA for amazonaws.com would vouch for its owners too."""
    assert f"{domain} holds public suffixes" in error_for(domain=domain)


@pytest.mark.parametrize(
    "domain", ["example.co.uk", "me.github.io", "local.example.net", "blueprint.test", "lab.internal", "dev.localhost", "xn--zz.cn"]
)
def test_a_domain_under_a_public_suffix_is_accepted(domain: str) -> None:
    """One label under a suffix is one owner's; a top-level name the list lacks (test, internal) is a suffix like any other."""
    assert parse_phase1({"domain": domain}).domain == domain
