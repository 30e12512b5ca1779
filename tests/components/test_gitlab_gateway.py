"""GitLab's Gateway as the chart renders it: the port of its SSH listener per chart version, and an
Envoy Service patch that gives exactly the ports of the chart's listeners, each named as Envoy
Gateway names it (a patched port that matches no listener then breaks only itself)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

import versions
from components import gitlab_gateway as gw
from tests.plans import planned


def values() -> dict[str, Any]:
    """The GitLab release's values, as phase2 plans them."""
    return dict(planned("phase2").one("kubernetes:helm.sh/v3:Release", "gitlab-chart")["inputs"]["values"])


def test_the_pinned_charts_ssh_listener_is_on_22_not_on_global_shell_port() -> None:
    # templates/_gateway.tpl of chart 10.1: `$port = 22` for TCP (gw.SSH_LISTENER_PORT_OF_CHART says where from)
    assert gw.ssh_listener_port(versions.GITLAB_CHART_VERSION, shell_port=2222) == 22


def test_a_chart_whose_ssh_listener_port_is_not_recorded_stops_the_plan() -> None:
    with pytest.raises(ValueError, match=r"GitLab chart 10\.2\.0 .*add it to components\.gitlab_gateway\.SSH_LISTENER_PORT_OF_CHART"):
        gw.ssh_listener_port("10.2.0", shell_port=2222)


def test_envoy_service_patch_names_exactly_the_gateways_listener_ports() -> None:
    planned_values = values()
    patched = {
        port["port"]
        for port in planned_values["gatewayApiResources"]["envoy"]["proxySpec"]["provider"]["kubernetes"]["envoyService"]["patch"]["value"][
            "spec"
        ]["ports"]
    }
    assert patched == gw.gateway_listener_ports(versions.GITLAB_CHART_VERSION, planned_values) == {80, 443, 22}
    assert gw.check_envoy_service_ports(versions.GITLAB_CHART_VERSION, planned_values) is planned_values


def test_values_without_the_http_listener_make_the_service_patch_refused() -> None:
    # Without the redirect (or cert-manager), the Gateway has no listener on 80: the patch's 80 would be a fourth port.
    changed = json.loads(json.dumps(values()))
    changed["global"]["gatewayApi"]["httpToHttpsRedirect"] = False
    with pytest.raises(ValueError, match=r"listens on ports \[22, 443\], but the Envoy Service patch sets \[22, 80, 443\]"):
        gw.check_envoy_service_ports(versions.GITLAB_CHART_VERSION, changed)


def test_a_service_patch_on_global_shell_port_is_refused_for_a_chart_listening_on_22() -> None:
    changed = json.loads(json.dumps(values()))
    service = changed["gatewayApiResources"]["envoy"]["proxySpec"]["provider"]["kubernetes"]["envoyService"]
    for port in service["patch"]["value"]["spec"]["ports"]:
        if port["port"] == 22:
            port["port"] = changed["global"]["shell"]["port"]
    with pytest.raises(ValueError, match=r"listens on ports \[22, 80, 443\], but the Envoy Service patch sets \[80, 443, 2222\]"):
        gw.check_envoy_service_ports(versions.GITLAB_CHART_VERSION, changed)


def _patched_ports(rendered: list[dict[str, Any]], patch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A strategic merge of the patch's ports onto the Service's: by `port`, the merge key of a
    Service's ports (k8s.io/api core/v1 ServiceSpec), a patch entry that matches none appended."""
    merged = [dict(port) for port in rendered]
    for entry in patch:
        match = next((port for port in merged if port["port"] == entry["port"]), None)
        if match is None:
            merged.append(dict(entry))
        else:
            match.update(entry)
    return merged


def _valid_service_ports(ports: list[dict[str, Any]]) -> bool:
    """What the API server asks of a Service's ports when it has several: each named, a DNS label, unique."""
    names = [port.get("name") for port in ports]
    labels = all(isinstance(name, str) and re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", name) for name in names)
    return labels and len(set(names)) == len(names)


def test_a_patched_port_that_matches_no_listener_leaves_the_envoy_service_valid() -> None:
    """A wrong SSH entry (the listener really on 2222): the patch's port 22 is added beside Envoy
    Gateway's own ports, and the Service with 80 and 443 is still one the API server takes."""
    spec = gw.envoy_proxy_spec(node_ports=(30080, 30443, 30022), ssh_port=2222, node_selector={})
    patch = spec["provider"]["kubernetes"]["envoyService"]["patch"]["value"]["spec"]["ports"]
    # Envoy Gateway's own Service ports for listeners on 80, 443 and 2222 (internal/infrastructure/kubernetes/proxy/resource_provider.go).
    rendered = [
        {"name": "http-80", "port": 80, "targetPort": 10080},
        {"name": "https-443", "port": 443, "targetPort": 10443},
        {"name": "tcp-2222", "port": 2222, "targetPort": 12222},
    ]
    merged = _patched_ports(rendered, patch)
    assert _valid_service_ports(merged), merged
    assert {port["port"]: port.get("nodePort") for port in merged}[443] == 30443


def test_every_patched_port_carries_the_name_envoy_gateway_gives_it() -> None:
    """Named as Envoy Gateway names a listener's port (`<protocol>-<port>`), so a match renames nothing."""
    service = values()["gatewayApiResources"]["envoy"]["proxySpec"]["provider"]["kubernetes"]["envoyService"]
    named = {port["port"]: port.get("name") for port in service["patch"]["value"]["spec"]["ports"]}
    assert named == {80: "http-80", 443: "https-443", 22: "tcp-22"}
