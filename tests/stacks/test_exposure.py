"""phase2 and phase3 on an existing cluster (issue 24): the gateway is a LoadBalancer (or a NodePort
the API server numbers), nothing is pinned to kind's node labels, this machine reaches OpenBao and
GitLab through port-forwards (never 127.0.0.1), and kind's node access is not deployed."""

from __future__ import annotations

import json
import tomllib
from typing import Any

import pytest

from apps_manifest import host_names, load_manifest
from cli import stand_ins
from cli.lifecycle import destroy_view
from stacks import outputs
from tests.plans import planned

EXISTING = {"cluster": "existing", "kubeContext": "ctx", "domain": "platform.example.com"}
RELEASE = "kubernetes:helm.sh/v3:Release"
OPENBAO_PROVIDERS = ("pulumi-python:dynamic/openbao:Init", "pulumi-python:dynamic/openbao:KvSecret")
GITLAB_PROVIDERS = tuple(
    f"pulumi-python:dynamic/gitlab:{kind}" for kind in ("AdminToken", "GlabToken", "Group", "Runner", "Project", "ProjectSync")
)


def envoy_service(**config: str) -> dict[str, Any]:
    values = planned("phase2", **{**EXISTING, **config}).one(RELEASE, "gitlab-chart")["inputs"]["values"]
    return dict(values["gatewayApiResources"]["envoy"]["proxySpec"]["provider"]["kubernetes"]["envoyService"])


def node_ports(value: Any) -> list[Any]:
    """Every `nodePort` anywhere in `value`."""
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in ([item] if key == "nodePort" else node_ports(item))]
    if isinstance(value, list):
        return [found for item in value for found in node_ports(item)]
    return []


def test_the_gateway_is_a_load_balancer_by_default_on_an_existing_cluster() -> None:
    service = envoy_service()
    assert service["type"] == "LoadBalancer"
    assert node_ports(service) == []


def test_exposure_node_port_is_a_node_port_service_whose_ports_the_api_server_picks() -> None:
    service = envoy_service(exposure="nodePort")
    assert service["type"] == "NodePort"
    assert node_ports(service) == []


def test_no_node_port_is_fixed_anywhere_on_an_existing_cluster() -> None:
    plan = planned("phase2", **EXISTING)
    assert node_ports([resource.get("inputs") for resource in plan.resources]) == []
    assert '"type": "NodePort"' not in json.dumps([resource.get("inputs") for resource in plan.resources])


def test_openbao_is_in_the_cluster_alone_on_an_existing_cluster() -> None:
    values = planned("phase2", **EXISTING).one(RELEASE, "openbao-chart")["inputs"]["values"]
    assert values["server"]["service"] == {"type": "ClusterIP"}


def node_selectors(value: Any) -> list[Any]:
    """Every `nodeSelector` anywhere in `value`, and every runner config's node_selector table."""
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in ([item] if key == "nodeSelector" else node_selectors(item))]
    if isinstance(value, list):
        return [found for item in value for found in node_selectors(item)]
    return ["runners.kubernetes.node_selector"] if isinstance(value, str) and "runners.kubernetes.node_selector" in value else []


def test_nothing_on_an_existing_cluster_is_pinned_to_kinds_node_labels() -> None:
    plan = planned("phase2", **EXISTING)
    assert [r["name"] for r in plan.resources if "blueprint/role" in json.dumps(r.get("inputs"))] == []
    assert node_selectors([r.get("inputs") for r in plan.resources]) == []


@pytest.mark.parametrize("stack", ["phase2", "phase3"])
def test_openbao_is_never_reached_at_127_0_0_1_on_an_existing_cluster(stack: str) -> None:
    plan = planned(stack, **EXISTING)
    reached = [r for r in plan.resources if r["type"] in OPENBAO_PROVIDERS]
    assert reached
    assert [r["name"] for r in reached if "127.0.0.1" in json.dumps(r["inputs"])] == []
    assert {json.dumps(r["inputs"]["forward"], sort_keys=True) for r in reached} == {
        json.dumps({"context": "ctx", "namespace": "openbao", "port": 8200, "service": "openbao"}, sort_keys=True)
    }


@pytest.mark.parametrize("stack", ["phase2", "phase3"])
def test_gitlab_is_reached_through_envoys_service_on_an_existing_cluster(stack: str) -> None:
    reached = [r for r in planned(stack, **EXISTING).resources if r["type"] in GITLAB_PROVIDERS]
    assert reached
    assert {json.dumps(r["inputs"].get("forward"), sort_keys=True) for r in reached} == {
        json.dumps({"context": "ctx", "namespace": "gitlab", "port": 443, "service": "gitlab-envoy"}, sort_keys=True)
    }


def test_kind_providers_get_no_forward() -> None:
    plan = planned("phase2")
    assert [r["name"] for r in plan.resources if "forward" in r.get("inputs", {}) or "kube_context" in r.get("inputs", {})] == []


def test_the_kubectl_calls_of_the_providers_name_the_existing_context() -> None:
    plan = planned("phase2", **EXISTING)
    for typ, name in [
        ("pulumi-python:dynamic/openbao:Init", "openbao-init"),
        ("pulumi-python:dynamic/gitlab:AdminToken", "gitlab-admin-token"),
        ("pulumi-python:dynamic/blueprint:DeployKubeconfig", "ci-access-kubeconfig"),
    ]:
        assert plan.one(typ, name)["inputs"]["kube_context"] == "ctx"


def test_kinds_node_access_is_not_deployed_on_an_existing_cluster() -> None:
    names = {r["name"] for r in planned("phase2", **EXISTING).resources}
    assert not {name for name in names if name.startswith(("cluster-dns", "node-registry", "gitlab-image-prepull"))}


def test_gitlab_runs_where_gitlab_node_selector_says_and_anywhere_without_it() -> None:
    anywhere = planned("phase2", **EXISTING).one(RELEASE, "gitlab-chart")["inputs"]["values"]
    assert "nodeSelector" not in json.dumps(anywhere)
    placed = planned("phase2", **EXISTING, gitlabNodeSelector="pool=platform").one(RELEASE, "gitlab-chart")["inputs"]["values"]
    assert placed["global"]["nodeSelector"] == {"pool": "platform"}
    assert placed["envoy-gateway"]["deployment"]["pod"]["nodeSelector"] == {"pool": "platform"}
    kubernetes = placed["gatewayApiResources"]["envoy"]["proxySpec"]["provider"]["kubernetes"]
    assert kubernetes["envoyDeployment"]["pod"]["nodeSelector"] == {"pool": "platform"}


def _runner(**config: str) -> tuple[dict[str, Any], dict[str, Any]]:
    values = planned("phase2", **{**EXISTING, **config}).one(RELEASE, "runner-chart")["inputs"]["values"]
    return values, tomllib.loads(values["runners"]["config"])["runners"][0]["kubernetes"]


def test_ci_jobs_and_runners_run_where_job_node_selector_says_and_anywhere_without_it() -> None:
    values, kubernetes = _runner()
    assert "nodeSelector" not in values
    assert "node_selector" not in kubernetes
    values, kubernetes = _runner(jobNodeSelector="pool=ci,tier=build")
    assert values["nodeSelector"] == {"pool": "ci", "tier": "build"}
    assert kubernetes["node_selector"] == {"pool": "ci", "tier": "build"}


def test_runner_egress_reaches_the_api_server_phase1_read() -> None:
    address, port = stand_ins.EXISTING_API_SERVER
    policy = planned("phase2", **EXISTING).one("kubernetes:networking.k8s.io/v1:NetworkPolicy", "runner-egress-manager-egress")
    rules = policy["inputs"]["spec"]["egress"]
    assert {"to": [{"ipBlock": {"cidr": f"{address}/32"}}], "ports": [{"protocol": "TCP", "port": port}]} in rules
    assert "172.16.0.0/12" not in json.dumps(rules)


def test_phase2_hands_phase3_its_forwards_on_an_existing_cluster_alone() -> None:
    assert outputs.GITLAB_FORWARD in planned("phase2", **EXISTING).outputs
    assert not {outputs.GITLAB_FORWARD, outputs.OPENBAO_FORWARD} & set(planned("phase2").outputs)


def test_phase3_plans_on_an_existing_cluster_with_gitlab_at_its_domain() -> None:
    plan = planned("phase3", **EXISTING)
    projects = plan.find("pulumi-python:dynamic/gitlab:Project")
    assert projects
    assert {r["inputs"]["gitlab_url"] for r in projects} == {"https://gitlab.platform.example.com"}


GATEWAY_SERVICE_CONFIG = {
    "gatewayServiceAnnotations": '{"service.beta.kubernetes.io/aws-load-balancer-scheme": "internal"}',
    "loadBalancerSourceRanges": "10.0.0.0/8, 203.0.113.0/24",
    "loadBalancerClass": "service.k8s.aws/nlb",
}


def test_the_gateway_service_takes_the_configured_annotations_source_ranges_and_class() -> None:
    service = envoy_service(**GATEWAY_SERVICE_CONFIG)
    assert service["annotations"] == {"service.beta.kubernetes.io/aws-load-balancer-scheme": "internal"}
    assert service["loadBalancerSourceRanges"] == ["10.0.0.0/8", "203.0.113.0/24"]
    assert service["loadBalancerClass"] == "service.k8s.aws/nlb"
    assert service["type"] == "LoadBalancer"


def test_without_those_keys_the_gateway_service_has_none_of_their_fields() -> None:
    assert not {"annotations", "loadBalancerSourceRanges", "loadBalancerClass"} & set(envoy_service())


def _runner_hosts(stack: str, **config: str) -> list[tuple[Any, Any]]:
    """Each runner's (manager's `hostAliases`, jobs' `host_aliases`), `None` where it has none."""
    result = planned(stack, **config)
    found = []
    for name in ("runner-chart", "image-build-runner-chart"):
        values = result.one(RELEASE, name)["inputs"]["values"]
        kubernetes = tomllib.loads(values["runners"]["config"])["runners"][0]["kubernetes"]
        found.append((values.get("hostAliases"), kubernetes.get("host_aliases")))
    return found


def test_the_runners_pods_reach_the_platforms_names_at_envoys_cluster_ip_on_an_existing_cluster() -> None:
    """Not through the load balancer, which an AWS one (a hostname) would make them leave the cluster for."""
    names = list(host_names(EXISTING["domain"], load_manifest(files=False)))
    assert {"gitlab.platform.example.com", "registry.platform.example.com", "kas.platform.example.com"} <= set(names)
    aliases = [{"ip": stand_ins.ENVOY_CLUSTER_IP, "hostnames": names}]
    assert _runner_hosts("phase2", **EXISTING) == [(aliases, aliases), (aliases, aliases)]


def test_kinds_runners_have_no_host_aliases() -> None:
    """Kind's CoreDNS resolves the platform's names (components/cluster_dns.py)."""
    assert _runner_hosts("phase2") == [(None, None), (None, None)]


def test_a_destroy_leaves_envoys_service_that_phase2_only_reads() -> None:
    """Envoy Gateway made it; the read for the host aliases is external in the state."""
    (read,) = (r for r in destroy_view(planned("phase2", **EXISTING)).resources if (r["type"], r["name"]) == stand_ins.ENVOY_SERVICE_READ)
    assert read["destroy"] == "forget"
