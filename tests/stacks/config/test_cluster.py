"""`blueprint:cluster` and the keys of each kind of cluster: kind by default; `existing` needs a
context; a key of the other kind is refused by name (never silently ignored); `dev` stays kind's."""

from __future__ import annotations

import pytest

from stacks.config import ConfigError
from stacks.config.cluster import EXISTING_ONLY, KIND_ONLY, parse_selector
from stacks.config.phases import parse_phase1
from stacks.config.schema import declared_keys, default_string
from tests.stacks.config import error_for

EXISTING = {"cluster": "existing", "kubeContext": "ctx"}


def test_the_cluster_is_kind_by_default_with_none_of_the_existing_keys() -> None:
    cluster = parse_phase1({}).cluster
    assert (cluster.cluster, cluster.existing, cluster.kube_context, cluster.exposure) == ("kind", False, "", "")


def test_an_existing_cluster_takes_its_context_and_is_exposed_by_a_load_balancer_by_default() -> None:
    config = parse_phase1(EXISTING)
    assert (config.cluster.existing, config.cluster.kube_context, config.cluster.exposure) == (True, "ctx", "loadBalancer")
    assert (config.cluster.storage_class, config.cluster.gitlab_node_selector, config.cluster.job_node_selector) == ("", {}, {})


def test_an_existing_cluster_has_no_image_cache_though_the_key_is_on_by_default() -> None:
    assert default_string("imageCache") == "true"
    assert parse_phase1(EXISTING).image_cache_dir is None


def test_an_existing_cluster_without_a_context_is_refused_naming_the_key_and_how_to_list_contexts() -> None:
    message = error_for(cluster="existing")
    assert "blueprint:kubeContext = '' is not valid: blueprint:cluster is existing" in message
    assert "`kubectl config get-contexts` lists them" in message
    assert "blueprint:kubeContext: <context>" in message


@pytest.mark.parametrize("value", ["Existing", "k3s", ""])
def test_a_cluster_other_than_kind_or_existing_is_refused(value: str) -> None:
    assert f"blueprint:cluster = {value!r} is not valid: expected kind or existing" in error_for(cluster=value)


@pytest.mark.parametrize(("key", "value"), [("kubeContext", "ctx"), ("storageClass", "gp3"), ("exposure", "nodePort")])
def test_a_key_of_an_existing_cluster_is_refused_with_kind_naming_it(key: str, value: str) -> None:
    message = error_for(**{key: value})
    assert f"blueprint:{key} = {value!r} is not valid: it is for an existing cluster, and blueprint:cluster is kind" in message


@pytest.mark.parametrize("key", ["gitlabNodeSelector", "jobNodeSelector"])
def test_a_node_selector_is_refused_with_kind_whose_nodes_blueprint_labels(key: str) -> None:
    assert f"blueprint:{key} = 'pool=ci' is not valid: it is for an existing cluster" in error_for(**{key: "pool=ci"})


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("clusterName", "lab"),
        ("gitlabNodes", "2"),
        ("runnerNodes", "2"),
        ("httpPort", "8080"),
        ("sshPort", "2022"),
        ("openbaoPort", "8201"),
        ("apiServerPort", "6444"),
        ("headlamp", "true"),
        ("imageCacheDir", "/tmp/images"),
        ("containerEngine", "podman"),
    ],
)
def test_a_key_of_kind_set_on_an_existing_cluster_is_refused_naming_it(key: str, value: str) -> None:
    message = error_for(**EXISTING, **{key: value})
    assert f"blueprint:{key} = {value!r} is not valid: blueprint:cluster is existing, and " in message
    assert f"blueprint:{key}: {default_string(key)}" in message  # the fix puts its default back


def test_every_key_belongs_to_both_kinds_of_cluster_or_is_listed_as_one_kinds() -> None:
    both = {"cluster", "dataDir", "preserveData", "domain", "imageCache", "pipelineTimeout"}
    assert set(declared_keys()) == both | set(EXISTING_ONLY) | set(KIND_ONLY) | {"httpsPort"}
    assert "httpsPort" in KIND_ONLY  # listed, though its one valid value is its default


def test_the_dev_stack_on_an_existing_cluster_is_refused_pointing_at_the_phase_stacks() -> None:
    with pytest.raises(ConfigError) as error:
        parse_phase1(EXISTING, stack="dev")
    message = str(error.value)
    assert "blueprint:cluster = 'existing' is not valid: the dev stack runs every phase on a kind cluster of its own" in message
    assert "with the phase1, phase2 and phase3 stacks" in message
    assert "blueprint:cluster: kind" in message


@pytest.mark.parametrize(("key", "value"), [("exposure", "ingress"), ("containerEngine", "lxc"), ("storageClass", "Fast_SSD")])
def test_a_value_outside_its_choices_is_refused_once(key: str, value: str) -> None:
    message = error_for(**({} if key == "containerEngine" else EXISTING), **{key: value})
    assert message.count(f"blueprint:{key} = ") == 1, message


def test_the_engine_takes_docker_podman_or_empty_with_kind() -> None:
    assert [parse_phase1({"containerEngine": engine}).cluster.container_engine for engine in ("docker", "podman", "")] == [
        "docker",
        "podman",
        "",
    ]


def test_a_node_selector_is_read_as_key_value_pairs() -> None:
    config = parse_phase1({**EXISTING, "gitlabNodeSelector": "pool=gitlab, topology.kubernetes.io/zone=eu-1a", "jobNodeSelector": "ci="})
    assert config.cluster.gitlab_node_selector == {"pool": "gitlab", "topology.kubernetes.io/zone": "eu-1a"}
    assert config.cluster.job_node_selector == {"ci": ""}


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("pool", "'pool' is not key=value"),
        ("pool=a,pool=b", "pool is given twice"),
        ("Pool/x=a", "its prefix 'Pool' is not a lowercase DNS subdomain"),
        ("-pool=a", "'-pool' is not a label name"),
        ("pool=a b", "the value of pool is not a label value"),
        (f"pool={'a' * 64}", "the value of pool is not a label value"),
    ],
)
def test_a_node_selector_that_is_not_labels_is_refused_saying_why(text: str, why: str) -> None:
    assert why in str(parse_selector(text)[1])
    message = error_for(**EXISTING, jobNodeSelector=text)
    assert "blueprint:jobNodeSelector = " in message
    assert "expected node labels as key=value,key=value (empty: any node): " in message
    assert why in message


def test_a_context_with_a_control_character_is_refused() -> None:
    assert "blueprint:kubeContext = " in error_for(cluster="existing", kubeContext="ctx\nx")


def test_a_kind_key_refused_for_its_own_sake_on_an_existing_cluster_is_said_once() -> None:
    message = error_for(**EXISTING, headlampAdmin="true")
    assert message.count("blueprint:headlampAdmin = ") == 1, message
    assert "there is no Headlamp" in message


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("gatewayServiceAnnotations", '{"networking.gke.io/load-balancer-type": "Internal"}'),
        ("loadBalancerSourceRanges", "10.0.0.0/8"),
        ("loadBalancerClass", "service.k8s.aws/nlb"),
    ],
)
def test_the_gateway_services_keys_are_refused_with_kind(key: str, value: str) -> None:
    message = error_for(**{key: value})
    assert f"blueprint:{key} = {value!r} is not valid: it is for an existing cluster, and blueprint:cluster is kind" in message


@pytest.mark.parametrize("key", ["loadBalancerSourceRanges", "loadBalancerClass"])
def test_a_load_balancers_key_is_refused_with_a_node_port(key: str) -> None:
    message = error_for(**EXISTING, exposure="nodePort", **{key: "10.0.0.0/8" if key == "loadBalancerSourceRanges" else "x.io/lb"})
    assert f"blueprint:{key} = " in message
    assert "it is for a load balancer, and blueprint:exposure is nodePort" in message


def test_annotations_are_a_json_object_of_strings_whose_values_may_hold_commas() -> None:
    value = '{"service.beta.kubernetes.io/aws-load-balancer-subnets": "subnet-a,subnet-b"}'
    service = parse_phase1({**EXISTING, "gatewayServiceAnnotations": value}).cluster.gateway_service
    assert service == {"annotations": {"service.beta.kubernetes.io/aws-load-balancer-subnets": "subnet-a,subnet-b"}}


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("scheme=internal", "it is not JSON"),
        ('["a"]', "expected a JSON object of annotation keys to strings"),
        ('{"a": true}', "expected a JSON object of annotation keys to strings"),
        ('{"-bad": "x"}', "the annotation key '-bad' is not valid"),
    ],
)
def test_annotations_that_are_not_a_json_object_of_strings_are_refused(value: str, says: str) -> None:
    message = error_for(**EXISTING, gatewayServiceAnnotations=value)
    assert f"blueprint:gatewayServiceAnnotations = {value!r} is not valid" in message
    assert says in message


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("10.0.0.1/8", "'10.0.0.1/8' is not a CIDR (did you mean 10.0.0.0/8?)"),
        ("203.0.113.7", "give its prefix length, such as 203.0.113.7/32"),
        ("10.0.0.0/33", "'10.0.0.0/33' is not a CIDR"),
        ("office", "'office' is not a CIDR;"),
    ],
)
def test_source_ranges_that_are_not_cidrs_are_refused(value: str, says: str) -> None:
    message = error_for(**EXISTING, loadBalancerSourceRanges=value)
    assert f"blueprint:loadBalancerSourceRanges = {value!r} is not valid: expected the CIDRs" in message
    assert says in message


def test_a_load_balancer_class_that_is_no_label_key_is_refused() -> None:
    message = error_for(**EXISTING, loadBalancerClass="internal vip")
    assert "blueprint:loadBalancerClass = 'internal vip' is not valid: expected a load balancer class" in message
