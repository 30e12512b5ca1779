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
import re
import warnings
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.x509.verification import Criticality, ExtensionPolicy, Policy, PolicyBuilder, ServerVerifier, Store, VerificationError

TLS_TYPE = "kubernetes.io/tls"
JSONPATH = "jsonpath={.type} {.data.tls\\.crt} {.data.ca\\.crt}"
READ_ARGS = f'get secret --namespace "$SECRET_NAMESPACE" "$SECRET_NAME" -o "{JSONPATH}"'
"""kubectl's arguments that read what blueprint needs of the Secret: its type, certificate and CA, base64
(an absent key prints nothing), never its key."""

REFERENCE_GRANT_API = "gateway.networking.k8s.io/v1beta1"
REFERENCE_GRANTS = "referencegrants.gateway.networking.k8s.io"
"""The resource phase2 creates in the Secret's namespace (what `kubectl auth can-i create` asks of)."""
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


def certificate_problem(cert_pem: str, domain: str, now: datetime.datetime, ca_pem: str = "") -> str | None:
    """Why `cert_pem` (the leaf, then its intermediates) cannot serve the platform's names at `now`, or None
    (`trusted_issuer`).
    """
    try:
        trusted_issuer(cert_pem, domain, now, ca_pem)
    except ValueError as error:
        return str(error)
    return None


def trusted_issuer(cert_pem: str, domain: str, now: datetime.datetime, ca_pem: str = "") -> str:
    """The subject of the trusted CA that `cert_pem`'s chain ends at: its first certificate must cover
    `*.<domain>`, be valid at `now`, and chain through the ones after it to `ca_pem` (the Secret's
    `ca.crt`), or without one to the public roots, what trusts it then (`trust_pem`). A ValueError says
    why not.
    """
    certs = _certificates(cert_pem)
    if not certs:
        raise ValueError("its tls.crt holds no PEM certificate")
    leaf = certs[0]
    try:
        names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)
    except x509.ExtensionNotFound:
        names = []
    wanted = f"*.{domain}"
    if wanted not in (name.lower() for name in names):
        shown = ", ".join(names[:5]) or "none"
        raise ValueError(f"its certificate does not cover {wanted} (its DNS names: {shown}): bring one for {wanted}")
    if now >= leaf.not_valid_after_utc:
        raise ValueError(f"its certificate expired on {leaf.not_valid_after_utc:%Y-%m-%d}: renew it")
    if now < leaf.not_valid_before_utc:
        raise ValueError(f"its certificate is valid from {leaf.not_valid_before_utc:%Y-%m-%d %H:%M} UTC only")
    anchors = _certificates(ca_pem or public_roots())
    if not anchors:
        raise ValueError("its ca.crt holds no PEM certificate")
    try:
        chain = _verifier(anchors, domain, now).verify(leaf, certs[1:])
    except VerificationError as error:
        said = str(error).split(" (encountered", 1)[0].removeprefix("validation failed: ")[:200]
        if ca_pem:
            raise ValueError(
                f"its certificate does not chain to its ca.crt ({said}): put the CA that issued it in the Secret's ca.crt, "
                "and any intermediate after the certificate in tls.crt"
            ) from None
        raise ValueError(
            f"its certificate does not chain to the public roots, and the Secret has no ca.crt ({said}): put any "
            "intermediate after the certificate in tls.crt; a self-signed certificate, or a private CA's, is trusted only "
            "with that CA as the Secret's ca.crt"
        ) from None
    return chain[-1].subject.rfc4514_string()


_PEM_CERTIFICATE = re.compile(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.DOTALL)


def _certificates(pem: str) -> list[x509.Certificate]:
    """Each certificate of `pem` that parses: one odd root of a bundle (certifi's holds one with a negative
    serial, which cryptography warns of and means to refuse) is left out, never the whole bundle.
    """
    found = []
    for block in _PEM_CERTIFICATE.findall(pem):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                found.append(x509.load_pem_x509_certificate(block.encode()))
            except ValueError:
                continue
    return found


def _ca_key_usage(_policy: Policy, _cert: x509.Certificate, usage: x509.KeyUsage | None) -> None:
    if usage is not None and not usage.key_cert_sign:
        raise ValueError("a CA whose keyUsage lacks keyCertSign")


def _verifier(anchors: list[x509.Certificate], domain: str, now: datetime.datetime) -> ServerVerifier:
    """A verifier of `gitlab.<domain>` at `now` under `anchors`: the Web PKI's profile (cryptography's
    x509.verification defaults), less two RFC 5280 rules that OpenSSL and Go, which call the gateway, do
    not enforce and that a private CA made with `openssl` often breaks: a leaf's authorityKeyIdentifier,
    a CA's keyUsage (checked for keyCertSign when present, as OpenSSL does).
    """
    ee = ExtensionPolicy.webpki_defaults_ee().may_be_present(x509.AuthorityKeyIdentifier, Criticality.AGNOSTIC, None)
    ca = (
        ExtensionPolicy.webpki_defaults_ca()
        .may_be_present(x509.AuthorityKeyIdentifier, Criticality.AGNOSTIC, None)
        .may_be_present(x509.KeyUsage, Criticality.AGNOSTIC, _ca_key_usage)
    )
    builder = PolicyBuilder().store(Store(anchors)).time(now).extension_policies(ca_policy=ca, ee_policy=ee)
    return builder.build_server_verifier(x509.DNSName(f"gitlab.{domain}"))


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
        # Cut to a name's 253 characters, and never ending in '-' or '.', which a DNS subdomain may not.
        "metadata": {"name": f"blueprint-gateway-{brought.name}"[:253].rstrip("-."), "namespace": brought.namespace, "labels": labels},
        "spec": {
            "from": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": gateway_namespace}],
            "to": [{"group": "", "kind": "Secret", "name": brought.name}],
        },
    }
