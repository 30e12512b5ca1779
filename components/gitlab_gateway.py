"""GitLab's Gateway, as the chart renders it and as blueprint completes it: pure builders.

The chart's bundled Envoy Gateway serves it. Envoy's Service is, on kind, a NodePort on the NodePorts
phase1 maps, and on an existing cluster a LoadBalancer (or a NodePort the API server numbers), under
a fixed name (`ENVOY_SERVICE`, which kind's in-cluster DNS points `*.<domain>` at:
`components/cluster_dns.py`); its patch must give exactly the ports of the chart's listeners
(`check_envoy_service_ports`), each under the name Envoy Gateway gives it. The GitLab component
(`components/gitlab.py`) adds the apps' and Headlamp's listeners to the chart's Gateway, and waits
for it to be Programmed (`programmed_gate_annotations`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import versions
from apps_manifest import HEADLAMP_HOST

ENVOY_SERVICE = "gitlab-envoy"
"""Fixed name of the Envoy Service (EnvoyProxy `envoyService.name`)."""
APPS_LISTENER = "apps-https"
"""The listener blueprint adds to the chart's Gateway for the apps' HTTPRoutes."""
HEADLAMP_LISTENER = "headlamp-https"
"""The listener blueprint adds for Headlamp's HTTPRoute, when phase1 installed Headlamp."""
SHELL_PORT = "global.shell.port"
SSH_LISTENER_PORT_OF_CHART: dict[str, int | str] = {version: 22 for version in ("10.1.1", "10.1.2", "10.1.3", "10.1.4")}
"""The port of the chart's `gitlab-ssh` (TCP) listener, per chart version: a number, or SHELL_PORT.
It is set in templates/_gateway.tpl, `gitlab.gatewayApi.gateway.listener`; no value sets it. Two
versions of that template exist upstream. Up to 9.11.0 it says `$port = 22` (the chart's master at
3403350, 2026-03-02, Chart.yaml 9.9.1, in the mirror integratop/gitlab-org-charts-mirror; 9.11.0's
"Unglobalize Gateway API resources", fb5977af, in nobidev/gitlab-charts). The only copies seen with
`include "gitlab.shell.port"` (nobidev/gitlab-charts@1d8cd77) come with the gitlab-shell TCPRoute's
BackendTrafficPolicy, which chart 10.2.0 did not have yet (charts work item 6588), so 10.1 (branched
in June, 2026) has the first; 10.1.2-10.1.4 changed only HTTPRoutes and the GatewayClass (CHANGELOG).
No 10.1.x copy itself could be read, so an entry here is an inference, and nothing at plan time can
tell a wrong one: a chart version not listed here stops the plan, but a listed one whose listener is
elsewhere breaks SSH alone: the patch's SSH port, named (envoy_proxy_spec), is added to the Service
as a fourth port that reaches no listener, while 80 and 443 keep working. A `helm template` of the
pinned chart settles an entry.
"""
PROGRAMMED_TIMEOUT_SECONDS = 600
"""How long the bring-up waits for the Gateway's Programmed condition, once the release is up."""
RELEASE_DIGEST_ANNOTATION = "blueprint/gitlab-release-sha256"
"""On the Programmed gate: the release's chart and values, so that a changed release is waited for again."""


def ssh_listener_port(chart_version: str, shell_port: int) -> int:
    """The port the chart's Gateway gives its `gitlab-ssh` listener (SSH_LISTENER_PORT_OF_CHART)."""
    if chart_version not in SSH_LISTENER_PORT_OF_CHART:
        raise ValueError(
            f"GitLab chart {chart_version} (versions.GITLAB_CHART_VERSION): the port of its Gateway's gitlab-ssh listener "
            "is not known; read `gitlab.gatewayApi.gateway.listener` in that version's templates/_gateway.tpl and add it "
            "to components.gitlab_gateway.SSH_LISTENER_PORT_OF_CHART"
        )
    port = SSH_LISTENER_PORT_OF_CHART[chart_version]
    return shell_port if port == SHELL_PORT else int(port)


def gateway_listener_ports(chart_version: str, values: dict[str, Any]) -> set[int]:
    """The ports of the listeners the chart renders on its Gateway for these values (templates/gateway.yaml,
    _gateway.tpl): 443 for the HTTPS ones, 80 for the HTTP-to-HTTPS redirect or cert-manager's
    solver, and the SSH one. Envoy Gateway gives its Service one port per listener port.
    """
    gateway_api = values["global"]["gatewayApi"]
    ports = {443, ssh_listener_port(chart_version, values["global"]["shell"]["port"])}
    if gateway_api.get("httpToHttpsRedirect") or gateway_api.get("configureCertmanager"):
        ports.add(80)
    return ports


def check_envoy_service_ports(chart_version: str, values: dict[str, Any]) -> dict[str, Any]:
    """`values`, once the Envoy Service patch names exactly the ports of the chart's listeners as these
    values make them (the HTTP one only with the redirect; the SSH one from SSH_LISTENER_PORT_OF_CHART,
    which this trusts): a port the Service does not have is added beside the listeners' (named, so the
    Service stays valid), and answers nothing on its NodePort. It stops an unlisted chart version and
    values that drop or add a listener; it cannot tell a wrong table entry (see SSH_LISTENER_PORT_OF_CHART).
    """
    service = values["gatewayApiResources"]["envoy"]["proxySpec"]["provider"]["kubernetes"]["envoyService"]
    patched = sorted(port["port"] for port in service["patch"]["value"]["spec"]["ports"])
    listening = sorted(gateway_listener_ports(chart_version, values))
    if patched != listening:
        raise ValueError(
            f"GitLab chart {chart_version}'s Gateway listens on ports {listening}, but the Envoy Service patch "
            f"sets {patched}: Envoy's Service would be rejected; make components.gitlab_gateway.envoy_proxy_spec patch {listening}"
        )
    return values


def envoy_service_port_name(protocol: str, port: int) -> str:
    """The name Envoy Gateway v1.8.1 gives the Service port of a listener: `<protocol>-<port>`, lower
    case (internal/gatewayapi/helpers.go irListenerPortName; the IR protocols HTTP, HTTPS, TCP).
    """
    return f"{protocol}-{port}".lower()


def envoy_proxy_spec(
    *,
    node_ports: tuple[int, int, int] | None,
    ssh_port: int,
    node_selector: dict[str, str],
    service_type: str = "NodePort",
    service_fields: Mapping[str, Any] = {},
) -> dict[str, Any]:
    """Envoy Gateway's EnvoyProxy spec: on kind, a NodePort Service on phase1's NodePorts; on an
    existing cluster (`node_ports` None), a Service of `service_type`, LoadBalancer or NodePort, whose
    node ports the API server picks (fixed ones may be taken on a shared cluster). Envoy Gateway
    applies the patch as a strategic merge onto the Service it renders (internal/utils/merge.go
    MergeWithPatch), and a Service's `ports` merge on `port` (k8s.io/api core/v1 ServiceSpec,
    patchMergeKey "port"): so the patch gives the Gateway's listener ports, 80, 443 and the SSH
    listener's (ssh_listener_port of the host's `ssh_port`; check_envoy_service_ports checks them).
    Each is named as Envoy Gateway names it (envoy_service_port_name), a no-op where it matches: a
    port that matches no listener is added, and the API server takes a Service of several ports only
    when each has a name (core/v1 ServicePort `name`: a DNS_LABEL, unique in the Service, optional
    only for a single port), so such a port breaks only itself, never the Service with 80 and 443. `node_ports`: HTTP, HTTPS and SSH;
    `node_selector`: where Envoy runs ({}: anywhere, no nodeSelector at all). `type` is one of
    Envoy Gateway v1.8.1's KubernetesServiceSpec types (api/v1alpha1/shared_types.go); `service_fields`,
    more of its fields (annotations, loadBalancerSourceRanges, loadBalancerClass), set as they are.
    """
    listener_port = ssh_listener_port(versions.GITLAB_CHART_VERSION, ssh_port)
    named = [("HTTP", 80), ("HTTPS", 443), ("TCP", listener_port)]  # the chart's gitlab-ssh listener is TCP (templates/_gateway.tpl)
    ports = [{"name": envoy_service_port_name(protocol, port), "port": port} for protocol, port in named]
    if node_ports is not None:
        ports = [{**port, "nodePort": node_port} for port, node_port in zip(ports, node_ports, strict=True)]
    kubernetes: dict[str, Any] = {
        "envoyService": {
            "name": ENVOY_SERVICE,
            "type": service_type,
            # kind: the node phase1 maps runs no Envoy. A load balancer's targets need not run one either.
            "externalTrafficPolicy": "Cluster",
            "patch": {"type": "StrategicMerge", "value": {"spec": {"ports": ports}}},
            **service_fields,
        },
    }
    if node_selector:
        kubernetes["envoyDeployment"] = {"pod": {"nodeSelector": node_selector}}
    return {"provider": {"type": "Kubernetes", "kubernetes": kubernetes}}


CHART_TLS_LISTENERS = ("gitlab-web", "registry-web", "kas-web", "pages-web", "minio-web", "kas-workspaces-web")
"""The chart's listeners that end TLS (templates/gateway.yaml renders those its values enable; `gitlab-ssh`
is TCP; `openbao-web` is rendered only with the chart's own OpenBao, which blueprint does not install)."""
WILDCARD_SECRET = {"kind": "Secret", "name": "gitlab-wildcard-tls"}
"""The platform CA's wildcard (components/tls.py LISTENER_SECRETS), in the Gateway's namespace."""


def chart_listeners_serving(certificate: dict[str, str]) -> dict[str, Any]:
    """`gatewayApiResources.gateway.listeners` values that make each of the chart's TLS listeners serve
    `certificate` (a `certificateRefs` entry) instead of the Secret of its own fixed name: the chart
    renders a listener's `tls` as given (templates/_gateway.tpl `gitlab.gatewayApi.gateway.listener`,
    `toYaml` of it), and Helm merges these maps into its defaults. Values of a listener the chart does
    not render are not read.
    """
    return {name: {"tls": {"mode": "Terminate", "certificateRefs": [certificate]}} for name in CHART_TLS_LISTENERS}


def apps_listener(*, domain: str, namespace: str, certificate: dict[str, str] | None = None) -> dict[str, Any]:
    """A listener for the apps on the chart's Gateway. The chart renders only its own listeners,
    each by a fixed name and admitting routes from its own namespace (templates/gateway.yaml and
    _gateway.tpl: `gatewayApiResources.gateway.listeners` only configures those names; no value adds
    one); the laptop's port 443 reaches this one Envoy, so the apps (`https://<app>.<domain>`) must
    be served there too. `listeners` is a map-list keyed by name, so a server-side apply adds this
    entry beside the chart's, re-applied after every change of the release (GitLab's constructor).
    It admits the routes of the apps' `namespace` alone.
    """
    return _https_listener(APPS_LISTENER, f"*.{domain}", namespace, certificate)


def headlamp_listener(*, domain: str, namespace: str, certificate: dict[str, str] | None = None) -> dict[str, Any]:
    """A listener for Headlamp alone, beside the apps': `headlamp.<domain>` exactly, admitting routes
    from Headlamp's `namespace` only. Not the apps listener widened: its `*.<domain>` takes routes
    for any name from the apps' namespace, where CI deploys, so an app's route could claim the name
    the dashboard's login token is typed into. Listeners distinct only by hostname match a request
    exact name first, wildcard after (Gateway API v1.6, GatewaySpec `listeners`, "Listeners that are
    distinct only by Hostname"), so `headlamp.<domain>` reaches this listener's routes alone. Same
    port and wildcard certificate as the apps' (it covers the name), in the Gateway's own namespace:
    no ReferenceGrant.
    """
    return _https_listener(HEADLAMP_LISTENER, f"{HEADLAMP_HOST}.{domain}", namespace, certificate)


def _https_listener(name: str, hostname: str, namespace: str, certificate: dict[str, str] | None = None) -> dict[str, Any]:
    """A listener on 443 for `hostname`, TLS ended with `certificate` (a `certificateRefs` entry; None:
    the platform CA's wildcard), admitting the routes of `namespace` alone.
    """
    return {
        "name": name,
        "port": 443,
        "protocol": "HTTPS",
        "hostname": hostname,
        "tls": {"mode": "Terminate", "certificateRefs": [certificate or WILDCARD_SECRET]},
        "allowedRoutes": {"namespaces": {"from": "Selector", "selector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}}},
    }


def gateway_listeners(
    *, domain: str, apps_namespace: str, headlamp_namespace: str | None, certificate: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """The listeners this adds to the chart's Gateway: the apps', and Headlamp's when it is installed.
    One server-side apply owns them both, so turning Headlamp off later drops its listener (an entry
    a field manager applied before and applies no more is removed), and nothing dangles.
    """
    extra = [headlamp_listener(domain=domain, namespace=headlamp_namespace, certificate=certificate)] if headlamp_namespace else []
    return [apps_listener(domain=domain, namespace=apps_namespace, certificate=certificate), *extra]


def programmed_gate_annotations(release_digest: str) -> dict[str, str]:
    """What makes pulumi-kubernetes (>= 4.18) wait, when it applies the gate, for the Gateway's
    `Programmed` condition to be True for its current generation (provider/pkg/metadata/overrides.go
    ReadyCondition; await/condition/kubectl.go checkCondition). It has no await logic of its own for
    Gateways, and Helm waits for pods, never for a Gateway's status. Envoy Gateway v1.8.1 (the one
    chart 10.1 bundles) sets Programmed once the Gateway has an address (for a NodePort Service: the
    nodes' InternalIPs, as on kind) and its Envoy Deployment has an available replica
    (internal/gatewayapi/status/gateway.go updateGatewayProgrammedCondition). The provider reads
    `waitFor` from the object an apply returns, so once these are on the Gateway, the apps listener's
    patch waits for Programmed too when it is re-applied (with the default ten minutes).
    """
    return {
        "pulumi.com/waitFor": "condition=Programmed",
        "pulumi.com/timeoutSeconds": str(PROGRAMMED_TIMEOUT_SECONDS),
        RELEASE_DIGEST_ANNOTATION: release_digest,
    }
