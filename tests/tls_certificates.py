"""Certificates for tests of the brought certificate (components/brought_tls.py): self-signed ones, and
ones a test's own CA issued, through an intermediate or not."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

_KEY = ec.generate_private_key(ec.SECP256R1())


@dataclass(frozen=True)
class Issuer:
    """A test's CA: its certificate and key."""

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def pem(self) -> str:
        return self.cert.public_bytes(serialization.Encoding.PEM).decode()


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def issuer(common_name: str = "Example Private CA", *, parent: Issuer | None = None, key_usage: bool = True) -> Issuer:
    """A CA valid for the tests' year, self-signed or issued by `parent`; `key_usage=False` leaves out
    its keyUsage, as `openssl req -x509` does with OpenSSL's default configuration."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    signer = parent.key if parent else key
    builder = (
        x509.CertificateBuilder(
            subject_name=_name(common_name),
            issuer_name=parent.cert.subject if parent else _name(common_name),
            public_key=key.public_key(),
            serial_number=x509.random_serial_number(),
        )
        .not_valid_before(now - datetime.timedelta(days=400))
        .not_valid_after(now + datetime.timedelta(days=730))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )
    if parent:
        builder = builder.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(parent.key.public_key()), critical=False)
    if key_usage:
        usage = dict.fromkeys(
            ("content_commitment", "key_encipherment", "data_encipherment", "key_agreement", "encipher_only", "decipher_only"), False
        )
        builder = builder.add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, **usage), critical=True)
    return Issuer(cert=builder.sign(signer, hashes.SHA256()), key=key)


def certificate_pem(
    names: Sequence[str], *, not_after: datetime.datetime | None = None, by: Issuer | None = None, chain: Sequence[Issuer] = ()
) -> str:
    """A certificate for DNS `names`, valid from 400 days ago until `not_after` (a year from now),
    self-signed or issued by `by` (with no authorityKeyIdentifier, as `openssl x509 -req` may leave
    it), followed by the certificates of `chain` (intermediates, as a tls.crt holds them)."""
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder(
            subject_name=_name(names[0]),
            issuer_name=by.cert.subject if by else _name(names[0]),
            public_key=_KEY.public_key(),
            serial_number=1,
        )
        .not_valid_before(now - datetime.timedelta(days=400))
        .not_valid_after(not_after or now + datetime.timedelta(days=365))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name) for name in names]), critical=False)
        .sign(by.key if by else _KEY, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode() + "".join(link.pem for link in chain)
