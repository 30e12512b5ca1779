"""The doctor's check of the gateway's certificate on an existing cluster (components/brought_tls.py).

Without `blueprint:tlsCertificate` the gateway serves the platform CA's certificate, which the
cluster's nodes do not trust unless someone configured their containerd: every deploy's pull from
`registry.<domain>` then fails x509, so a warning says so and how to avoid it. With it, the Secret
must be there, of type kubernetes.io/tls, with a certificate for `*.<domain>` that has not expired and
chains to its `ca.crt` (or, without one, to the public roots):
read as phase1 reads it (its type, tls.crt and ca.crt; never tls.key, never a value printed).
"""

from __future__ import annotations

import datetime
import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING

from cli.doctor.checks import Check
from components import brought_tls

if TYPE_CHECKING:  # the config imports pulumi, which `blueprint --help` should not wait for
    from stacks.config.cluster import ClusterConfig

CERTIFICATE = "gateway certificate"
EXAMPLE = "certificates/wildcard-tls"


def certificate_check(
    kubectl: Callable[..., tuple[int, str]],
    cluster: ClusterConfig,
    *,
    domain: str,
    set_key: Callable[[str, str], str],
    now: datetime.datetime | None = None,
) -> Check:
    """The check of `cluster`'s brought certificate for `domain`, read with `kubectl(*args)` (the
    context's), or the warning that there is none; `set_key(key, example)` says how to set a key.
    """
    registry = f"registry.{domain}"
    if not cluster.tls_certificate:
        return Check(
            name=CERTIFICATE,
            ok=True,
            found="the platform CA's (blueprint:tlsCertificate is empty)",
            advice=f"the cluster's nodes must trust the platform CA for {registry}, or every deploy fails pulling its image "
            "(x509) and `up` fails at phase3. Managed nodes (GKE, EKS, AKS) do not: bring a certificate for "
            f"*.{domain} that they trust, {set_key('tlsCertificate', EXAMPLE)} (docs/guide/existing-cluster.md, TLS); on nodes "
            f"whose containerd you manage, add /etc/containerd/certs.d/{registry}/hosts.toml with the platform CA instead",
        )
    namespace, name = brought_tls.split(cluster.tls_certificate)
    made = (
        f"kubectl --context {shlex.quote(cluster.kube_context)} create secret tls {shlex.quote(name)} --namespace "
        f"{shlex.quote(namespace)} --cert=<certificate chain for *.{domain}> --key=<its key>"
    )
    code, output = kubectl("get", "secret", "--namespace", namespace, name, "-o", brought_tls.JSONPATH)
    if code != 0:
        said = " ".join(output.split())[:300] or "kubectl said nothing"
        return Check(name=CERTIFICATE, ok=False, found=f"the Secret {cluster.tls_certificate} cannot be read: {said}", fix=made)
    try:
        _kind, cert_pem, ca_pem = brought_tls.read_answer(output)
        anchor = brought_tls.trusted_issuer(cert_pem, domain, now or datetime.datetime.now(datetime.UTC), ca_pem)
    except ValueError as error:
        return Check(name=CERTIFICATE, ok=False, found=f"the Secret {cluster.tls_certificate}: {error}", fix=made)
    trusted = "of its ca.crt, which blueprint trusts" if ca_pem else "of the public roots (it has no ca.crt)"
    return Check(name=CERTIFICATE, ok=True, found=f"the Secret {cluster.tls_certificate}, for *.{domain}, issued under {anchor}, {trusted}")
