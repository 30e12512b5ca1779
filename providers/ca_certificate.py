"""The platform CA's certificate, limited to the platform's own names.

Users trust this CA system-wide, so it must not be able to vouch for anything but the platform:
the certificate carries a critical X.509 Name Constraints extension (RFC 5280 section 4.2.1.10)
that permits DNS names under `<domain>` only and excludes every IP address, and an extended key
usage of TLS server authentication only. A verifier that honours
the extension (OpenSSL, Go, NSS/Firefox, Chrome's verifier, Apple's) then rejects any certificate
this CA signs for another name, even if its key leaked. pulumi-tls cannot write the extension,
hence this provider; the key stays a `HostSecret` in the data folder, so after a `preserveData`
cycle the CA is issued again with the same key and subject and a copy a user already trusts still
verifies the new certificates.

Path length 0: the CA signs server certificates only, never another CA.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, ResourceProvider, UpdateResult

PROVIDER_VERSION = "1"
"""Bump when the certificate's contents change: the provider is pickled by reference."""

INPUTS = ("private_key_pem", "common_name", "organization", "domain", "validity_hours", "provider_version")


def issue_ca_certificate(
    private_key_pem: str, *, common_name: str, organization: str, domain: str, validity_hours: int, now: datetime.datetime | None = None
) -> str:
    """A self-signed CA certificate, PEM, for `private_key_pem`, that may sign names under `domain` only."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = serialization.load_pem_private_key(private_key_pem.encode(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise ValueError(f"the CA key must be an EC or RSA key, got {type(key).__name__}")
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name), x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization)])
    start = (now or datetime.datetime.now(datetime.UTC)).replace(microsecond=0)
    public_key = key.public_key()
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(start - datetime.timedelta(minutes=5))  # a clock a little behind still accepts it
        .not_valid_after(start + datetime.timedelta(hours=validity_hours))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.NameConstraints(
                permitted_subtrees=[x509.DNSName(domain)],
                excluded_subtrees=[x509.IPAddress(ipaddress.ip_network("0.0.0.0/0")), x509.IPAddress(ipaddress.ip_network("::/0"))],
            ),
            critical=True,
        )
        # TLS servers only: verifiers that chain extended key usages (Windows, macOS, OpenSSL's purpose
        # checks) refuse what it would sign for e-mail, code or clients.
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
        .sign(key, hashes.SHA256())
    )
    return certificate.public_bytes(serialization.Encoding.PEM).decode()


class CaCertificateProvider(ResourceProvider):
    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        failures = []
        domain = news.get("domain")
        if not isinstance(domain, str) or not domain or domain.startswith(".") or "*" in domain:
            failures.append(CheckFailure("domain", f"expected a DNS domain like local.example.net, got {domain!r}"))
        hours = news.get("validity_hours")
        if not isinstance(hours, int | float) or int(hours) < 24:
            failures.append(CheckFailure("validity_hours", f"expected an integer >= 24, got {hours!r}"))
        return CheckResult(news, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [key for key in INPUTS if olds.get(key) != news.get(key)]
        return DiffResult(changes=bool(changed), replaces=[], delete_before_replace=False)

    def _outs(self, props: dict[str, Any]) -> dict[str, Any]:
        cert_pem = issue_ca_certificate(
            str(props["private_key_pem"]),
            common_name=str(props["common_name"]),
            organization=str(props["organization"]),
            domain=str(props["domain"]),
            validity_hours=int(props["validity_hours"]),
        )
        return {**{key: props.get(key) for key in INPUTS}, "cert_pem": cert_pem}

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=f"blueprint-ca-{props['domain']}", outs=self._outs(props))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        """A changed input issues the certificate again (same key: what trusts the old one still verifies)."""
        return UpdateResult(outs=self._outs(news))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        return ReadResult(id_, props)

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing: the certificate exists only in state and in the files and Secrets made from it."""


@dataclass(frozen=True, kw_only=True)
class CaCertificateArgs:
    private_key_pem: pulumi.Input[str]
    """The CA's private key, PEM (secret)."""
    domain: str
    """The only DNS subtree the CA may sign for."""
    common_name: str
    organization: str
    validity_hours: int


class CaCertificate(pulumi.dynamic.Resource, module="blueprint", name="CaCertificate"):
    """A self-signed, name-constrained CA certificate."""

    cert_pem: pulumi.Output[str]
    """The certificate, PEM (public)."""

    def __init__(self, name: str, args: CaCertificateArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        props = {
            "private_key_pem": pulumi.Output.secret(args.private_key_pem),
            "common_name": args.common_name,
            "organization": args.organization,
            "domain": args.domain,
            "validity_hours": args.validity_hours,
            "provider_version": PROVIDER_VERSION,
            "cert_pem": None,
        }
        super().__init__(CaCertificateProvider(), name, props, opts)
