"""Self-signed certificates for tests of the brought certificate (components/brought_tls.py)."""

from __future__ import annotations

import datetime
from collections.abc import Sequence

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

_KEY = ec.generate_private_key(ec.SECP256R1())


def certificate_pem(names: Sequence[str], *, not_after: datetime.datetime | None = None) -> str:
    """A certificate for DNS `names`, valid from yesterday until `not_after` (a year from now)."""
    now = datetime.datetime.now(datetime.UTC)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    cert = (
        x509.CertificateBuilder(subject_name=subject, issuer_name=subject, public_key=_KEY.public_key(), serial_number=1)
        .not_valid_before(now - datetime.timedelta(days=400))
        .not_valid_after(not_after or now + datetime.timedelta(days=365))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name) for name in names]), critical=False)
        .sign(_KEY, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode()
