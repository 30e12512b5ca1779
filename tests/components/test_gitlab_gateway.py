"""GitLab's Gateway as the chart renders it: the port of its SSH listener per chart version, and an
Envoy Service patch that names exactly the ports of the chart's listeners (a port it does not name
would make the API server reject the whole Service)."""

from __future__ import annotations

import json
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
