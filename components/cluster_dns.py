"""In-cluster names for the platform: pods resolve `gitlab.<domain>`, `registry.<domain>`, ... to
the gateway, so runner jobs clone and push through the same URLs the laptop uses.

kind's CoreDNS reads kubeadm's single-key Corefile from `kube-system/coredns`; it has `reload` but
no `import`, so there is no drop-in: this patch owns the whole `Corefile` (kubeadm's text for
Kubernetes 1.35, cmd/kubeadm/app/phases/addons/dns/manifests.go, plus our `rewrite` lines). Each
name is rewritten to the Envoy Service with `answer auto`, so the answer carries the name asked
for (CoreDNS >= 1.8.4; Kubernetes 1.35 ships 1.12 or later). The patch is retained on delete:
removing the fields it owns would remove the Corefile and break every lookup in the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

KUBEADM_COREFILE = """\
.:53 {{
    errors
    health {{
       lameduck 5s
    }}
    ready
{rewrites}    kubernetes cluster.local in-addr.arpa ip6.arpa {{
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }}
    prometheus :9153
    forward . /etc/resolv.conf {{
       max_concurrent 1000
    }}
    cache 30 {{
       disable success cluster.local
       disable denial cluster.local
    }}
    loop
    reload
    loadbalance
}}
"""


@dataclass(frozen=True, kw_only=True)
class ClusterDnsArgs:
    names: tuple[str, ...]
    """Fully qualified names to resolve in the cluster."""
    target: str
    """The Service they resolve to, e.g. gitlab-envoy.gitlab.svc.cluster.local."""


def corefile(args: ClusterDnsArgs) -> str:
    rewrites = "".join(f"    rewrite name exact {name} {args.target} answer auto\n" for name in args.names)
    return KUBEADM_COREFILE.format(rewrites=rewrites)


class ClusterDns(pulumi.ComponentResource):
    """The CoreDNS Corefile with the platform's names."""

    def __init__(self, name: str, args: ClusterDnsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("blueprint:index:ClusterDns", name, None, opts)
        k8s.core.v1.ConfigMapPatch(
            f"{name}-corefile",
            metadata=k8s.meta.v1.ObjectMetaPatchArgs(
                name="coredns", namespace="kube-system", annotations={"pulumi.com/patchForce": "true"}
            ),
            data={"Corefile": corefile(args)},
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=True),
        )
        self.register_outputs({})
