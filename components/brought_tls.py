"""A wildcard certificate the user brings (`blueprint:tlsCertificate=<namespace>/<name>`), served by
the gateway instead of the platform CA's, on an existing cluster.

Why: a managed cluster's nodes (GKE, EKS, AKS) trust the public roots alone, and blueprint cannot add
the platform CA to their containerd, so pulls from `registry.<domain>` would fail x509.

How the gateway serves it: by reference, never by copy, so the certificate's key never passes through
blueprint (nor its state). GitLab chart 10.x renders each of its listeners' `tls` from the values
`gatewayApiResources.gateway.listeners.<name>.tls` as given (templates/_gateway.tpl
`gitlab.gatewayApi.gateway.listener`: `toYaml` of the listener's `tls`; values.yaml names each
listener's default Secret there), so `certificateRefs` may name the Secret in its own namespace; a
ReferenceGrant there lets the Gateway in GitLab's namespace refer to it. Envoy Gateway v1.8.1 resolves a
listener's cross-namespace certificate through ReferenceGrants (internal/gatewayapi/validate.go,
"Certificate ref to secret ... not permitted by any ReferenceGrant"; the chart's `envoy-gateway` values
restrict no namespace it watches), and reads them as `gateway.networking.k8s.io/v1beta1`, which the
pinned bundle (v1.5.1) serves beside v1 and which older bundles on managed clusters serve too.

What trusts it: its `ca.crt` when it has one (a private CA), else the public roots: in the cluster each
image's own (no custom CA: this machine's certifi bundle there would roll the Runners), here `requests`'.
phase1 reads the Secret's `type`, `tls.crt` and `ca.crt` (never `tls.key`) on each run, as the doctor does.
"""

from __future__ import annotations

import base64
import binascii
import datetime
from dataclasses import dataclass
from typing import Any

from cryptography import x509

TLS_TYPE = "kubernetes.io/tls"
JSONPATH = "jsonpath={.type} {.data.tls\\.crt} {.data.ca\\.crt}"
READ_ARGS = f'get secret --namespace "$SECRET_NAMESPACE" "$SECRET_NAME" -o "{JSONPATH}"'
"""kubectl's arguments that read what blueprint needs of the Secret: its type, certificate and CA, base64
(an absent key prints nothing), never its key."""

REFERENCE_GRANT_API = "gateway.networking.k8s.io/v1beta1"
TRUST_KEY = "gateway-ca.crt"
"""The key, in the customCAs Secret, of the CA of a brought certificate (every key is mounted)."""


@dataclass(frozen=True, kw_only=True)
class Brought:
    """What phase1 read of the Secret: its reference and the CA that issued it ("" = a public one)."""

    namespace: str
    name: str
    ca_pem: str

    @property
    def ref(self) -> dict[str, str]:
        """The Secret as a listener's `certificateRefs` entry (cross-namespace)."""
        return {"kind": "Secret", "name": self.name, "namespace": self.namespace}


def split(ref: str) -> tuple[str, str]:
    """`<namespace>/<name>` (stacks/config/cluster.py checked it) as its two parts."""
    namespace, _, name = ref.partition("/")
    return namespace, name


def read_answer(stdout: str) -> tuple[str, str, str]:
    """The Secret's type, certificate PEM and CA PEM ("" when absent) from READ_ARGS' answer, or a
    ValueError saying what is wrong (never a value of the Secret).
    """
    parts = stdout.split()
    if not parts:
        raise ValueError("kubectl found no such Secret")
    kind, encoded = parts[0], parts[1:]
    if kind != TLS_TYPE:
        raise ValueError(f"it is of type {kind}, not {TLS_TYPE} (`kubectl create secret tls` makes one)")
    try:
        decoded = [base64.b64decode(text, validate=True).decode() for text in encoded]
    except (binascii.Error, UnicodeDecodeError):
        raise ValueError("its tls.crt or ca.crt is not base64 of PEM text") from None
    if not decoded:
        raise ValueError("it has no tls.crt")
    return kind, decoded[0], decoded[1] if len(decoded) > 1 else ""


def certificate_problem(cert_pem: str, domain: str, now: datetime.datetime) -> str | None:
    """Why the first certificate of `cert_pem` cannot serve the platform's names at `now` (it must
    cover `*.<domain>` and be valid), or None.
    """
    try:
        certs = x509.load_pem_x509_certificates(cert_pem.encode())
    except ValueError:
        return "its tls.crt holds no PEM certificate"
    leaf = certs[0]
    try:
        names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)
    except x509.ExtensionNotFound:
        names = []
    wanted = f"*.{domain}"
    if wanted not in (name.lower() for name in names):
        shown = ", ".join(names[:5]) or "none"
        return f"its certificate does not cover {wanted} (its DNS names: {shown}): bring one for {wanted}"
    if now >= leaf.not_valid_after_utc:
        return f"its certificate expired on {leaf.not_valid_after_utc:%Y-%m-%d}: renew it"
    if now < leaf.not_valid_before_utc:
        return f"its certificate is valid from {leaf.not_valid_before_utc:%Y-%m-%d %H:%M} UTC only"
    return None


def public_roots() -> str:
    """The public roots (the CA bundle `requests` verifies with): what trusts a certificate without `ca.crt`."""
    from requests.utils import DEFAULT_CA_BUNDLE_PATH  # certifi's, which requests verifies with

    with open(DEFAULT_CA_BUNDLE_PATH, encoding="utf-8") as bundle:
        return bundle.read()


def trust_pem(brought: Brought) -> str:
    """What this machine trusts for the names the gateway serves with `brought`."""
    return brought.ca_pem or public_roots()


def reference_grant(brought: Brought, *, gateway_namespace: object, labels: dict[str, str]) -> dict[str, Any]:
    """The ReferenceGrant, in the Secret's namespace, that lets Gateways of `gateway_namespace` refer to
    that Secret alone.
    """
    return {
        "apiVersion": REFERENCE_GRANT_API,
        "kind": "ReferenceGrant",
        "metadata": {"name": f"blueprint-gateway-{brought.name}"[:253], "namespace": brought.namespace, "labels": labels},
        "spec": {
            "from": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": gateway_namespace}],
            "to": [{"group": "", "kind": "Secret", "name": brought.name}],
        },
    }
