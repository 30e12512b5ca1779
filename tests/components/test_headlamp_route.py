"""Headlamp at https://headlamp.<domain>, through GitLab's gateway like every other UI, only when
phase1 installed it. phase1 says so in a plain output; phase2 owns the route (the Gateway API exists
only from phase2 on) and a listener of its own for it: exact name, Headlamp's namespace alone, so no
app deployed by CI can take the name the dashboard's token is typed into."""

from __future__ import annotations

from typing import Any

from components import gitlab as gl
from components import gitlab_gateway as gw
from stacks import outputs
from tests.plans import planned, waits_for

ROUTE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
GATEWAY_PATCH = "kubernetes:gateway.networking.k8s.io/v1:GatewayPatch"
HOST = "headlamp.local.example.net"


def _listeners(**config: str) -> dict[str, dict[str, Any]]:
    patch = planned("phase2", **config).one(GATEWAY_PATCH, "gitlab-apps-listener")
    return {listener["name"]: listener for listener in patch["inputs"]["spec"]["listeners"]}


def test_phase1_tells_phase2_in_a_plain_output_whether_it_installed_headlamp() -> None:
    assert planned("phase1").outputs[outputs.HEADLAMP] == {"secret": False, "value": False}
    assert planned("phase1", headlamp="true").outputs[outputs.HEADLAMP] == {"secret": False, "value": True}


def test_with_headlamp_phase2_routes_its_name_to_headlamps_service_on_gitlabs_gateway() -> None:
    route = planned("phase2", headlamp="true").one(ROUTE, "headlamp-route-http-route")["inputs"]
    assert (route["metadata"]["name"], route["metadata"]["namespace"]) == ("headlamp", "headlamp")
    assert route["spec"]["hostnames"] == [HOST]
    [parent] = route["spec"]["parentRefs"]
    assert (parent["name"], parent["namespace"], parent["sectionName"]) == (gl.GATEWAY, "gitlab", gw.HEADLAMP_LISTENER)
    [rule] = route["spec"]["rules"]
    # The chart's Service (fullnameOverride `headlamp`, port 80), in the route's own namespace: no ReferenceGrant.
    assert rule["backendRefs"] == [{"group": "", "kind": "Service", "name": "headlamp", "port": 80}]
    assert "namespace" not in rule["backendRefs"][0]


def test_without_headlamp_phase2_has_no_route_and_no_listener_for_it() -> None:
    assert planned("phase2").find(ROUTE) == []
    assert set(_listeners()) == {gw.APPS_LISTENER}


def test_headlamps_listener_takes_its_exact_name_from_its_namespace_alone_with_the_wildcard_cert() -> None:
    listener = _listeners(headlamp="true")[gw.HEADLAMP_LISTENER]
    assert (listener["port"], listener["protocol"], listener["hostname"]) == (443, "HTTPS", HOST)
    assert listener["allowedRoutes"]["namespaces"] == {
        "from": "Selector",
        "selector": {"matchLabels": {"kubernetes.io/metadata.name": "headlamp"}},
    }
    assert listener["tls"] == _listeners(headlamp="true")[gw.APPS_LISTENER]["tls"]


def test_the_apps_listener_stays_the_apps_alone_with_headlamp_on() -> None:
    assert _listeners(headlamp="true")[gw.APPS_LISTENER] == _listeners()[gw.APPS_LISTENER]


def test_headlamps_route_comes_after_its_listener_and_so_goes_before_it_on_destroy() -> None:
    result = planned("phase2", headlamp="true")
    route = result.one(ROUTE, "headlamp-route-http-route")
    waited = waits_for(result, route["urn"])
    assert result.one(GATEWAY_PATCH, "gitlab-apps-listener")["urn"] in waited
    assert result.one(GATEWAY_PATCH, "gitlab-gateway-programmed")["urn"] in route["dependsOn"]
    assert route["provider"].startswith(result.one("pulumi:providers:kubernetes", "kubernetes")["urn"] + "::")


def test_in_dev_headlamps_route_waits_for_headlamps_namespace() -> None:
    result = planned("dev", headlamp="true")
    route = result.one(ROUTE, "headlamp-route-http-route")
    assert result.one("kubernetes:core/v1:Namespace", "headlamp-namespace")["urn"] in route["dependsOn"]
