"""In-cluster DNS: the platform's names resolve to the gateway; the rest of kubeadm's Corefile stays."""

from __future__ import annotations

from components.cluster_dns import ClusterDnsArgs, corefile
from tests.plans import planned

PATCH = "kubernetes:core/v1:ConfigMapPatch"


def test_each_platform_name_is_rewritten_to_the_gateway_before_the_kubernetes_plugin() -> None:
    text = planned("phase2").one(PATCH, "cluster-dns-corefile")["inputs"]["data"]["Corefile"]
    for name in ("gitlab", "registry", "kas"):
        line = f"rewrite name exact {name}.local.example.net gitlab-envoy.gitlab.svc.cluster.local answer auto"
        assert line in text
        assert text.index(line) < text.index("kubernetes cluster.local")


def test_kubeadms_plugins_are_kept() -> None:
    text = corefile(ClusterDnsArgs(names=("a.example.net",), target="t.svc.cluster.local"))
    for plugin in (
        "errors",
        "health",
        "ready",
        "prometheus :9153",
        "forward . /etc/resolv.conf",
        "cache 30",
        "loop",
        "reload",
        "loadbalance",
    ):
        assert plugin in text


def test_the_patch_takes_the_corefile_and_is_kept_on_delete() -> None:
    patch = planned("phase2").one(PATCH, "cluster-dns-corefile")
    assert patch["inputs"]["metadata"]["annotations"] == {"pulumi.com/patchForce": "true"}
    assert (patch["inputs"]["metadata"]["name"], patch["inputs"]["metadata"]["namespace"]) == ("coredns", "kube-system")
    assert patch["retainOnDelete"] is True


def test_the_apps_hosts_resolve_to_the_gateway_in_the_cluster() -> None:
    text = planned("phase2").one(PATCH, "cluster-dns-corefile")["inputs"]["data"]["Corefile"]
    assert "rewrite name exact guestbook.local.example.net gitlab-envoy.gitlab.svc.cluster.local answer auto" in text
