"""The platform CA: users trust it system-wide, so it can vouch for the platform's names only."""

from __future__ import annotations

import datetime

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from cryptography.x509.verification import PolicyBuilder, Store, VerificationError

from providers.ca_certificate import PROVIDER_VERSION, CaCertificateProvider
from providers.host_secret import generate_ca_key
from tests.providers.engine import as_engine_loads, outputs_of

DOMAIN = "local.example.net"


@pytest.fixture(scope="module")
def ca_key_pem() -> str:
    return generate_ca_key(0)


def props(key_pem: str, domain: str = DOMAIN) -> dict[str, object]:
    return {
        "private_key_pem": key_pem,
        "common_name": f"blueprint CA ({domain})",
        "organization": "blueprint",
        "domain": domain,
        "validity_hours": 87600.0,  # the engine's wire format: numbers arrive as floats
        "provider_version": PROVIDER_VERSION,
    }


@pytest.fixture(scope="module")
def ca_pem(ca_key_pem: str) -> str:
    return str(outputs_of(as_engine_loads(CaCertificateProvider()).create(props(ca_key_pem)))["cert_pem"])


def server_certificate(ca_pem: str, ca_key_pem: str, *names: str) -> x509.Certificate:
    """A server certificate for `names`, signed with the CA's key (what a stolen key could make)."""
    ca = x509.load_pem_x509_certificate(ca_pem.encode())
    ca_key = serialization.load_pem_private_key(ca_key_pem.encode(), password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name) for name in names]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )


def verifies(ca_pem: str, certificate: x509.Certificate, host: str) -> bool:
    ca = x509.load_pem_x509_certificate(ca_pem.encode())
    verifier = PolicyBuilder().store(Store([ca])).build_server_verifier(x509.DNSName(host))
    try:
        verifier.verify(certificate, [])
    except VerificationError:
        return False
    return True


def test_a_certificate_for_the_platforms_names_verifies(ca_pem: str, ca_key_pem: str) -> None:
    wildcard = server_certificate(ca_pem, ca_key_pem, f"*.{DOMAIN}", DOMAIN)
    assert verifies(ca_pem, wildcard, f"gitlab.{DOMAIN}")


def test_a_certificate_the_ca_key_signs_for_another_name_is_rejected(ca_pem: str, ca_key_pem: str) -> None:
    assert not verifies(ca_pem, server_certificate(ca_pem, ca_key_pem, "bank.example.com"), "bank.example.com")


def test_the_name_constraints_are_critical_and_exclude_every_ip_address(ca_pem: str) -> None:
    extension = x509.load_pem_x509_certificate(ca_pem.encode()).extensions.get_extension_for_class(x509.NameConstraints)
    assert extension.critical
    assert extension.value.permitted_subtrees == [x509.DNSName(DOMAIN)]
    assert {str(subtree.value) for subtree in extension.value.excluded_subtrees or []} == {"0.0.0.0/0", "::/0"}


def test_the_ca_is_for_tls_servers_only(ca_pem: str) -> None:
    usage = x509.load_pem_x509_certificate(ca_pem.encode()).extensions.get_extension_for_class(x509.ExtendedKeyUsage)
    assert list(usage.value) == [ExtendedKeyUsageOID.SERVER_AUTH]


def test_the_ca_signs_no_other_ca(ca_pem: str) -> None:
    constraints = x509.load_pem_x509_certificate(ca_pem.encode()).extensions.get_extension_for_class(x509.BasicConstraints)
    assert (constraints.critical, constraints.value.ca, constraints.value.path_length) == (True, True, 0)


def test_issued_again_with_the_same_key_a_trusted_copy_still_verifies(ca_pem: str, ca_key_pem: str) -> None:
    again = outputs_of(as_engine_loads(CaCertificateProvider()).update("id", props(ca_key_pem), props(ca_key_pem)))["cert_pem"]
    assert again != ca_pem
    # A leaf the new CA certificate's key signs verifies against the copy the user trusted before.
    assert verifies(ca_pem, server_certificate(str(again), ca_key_pem, f"*.{DOMAIN}"), f"registry.{DOMAIN}")


def test_unchanged_inputs_are_no_change() -> None:
    provider = as_engine_loads(CaCertificateProvider())
    same = props("key")
    assert provider.diff("id", same, dict(same)).changes is False
    assert provider.diff("id", same, props("key", domain="other.example.org")).changes is True


def test_a_domain_that_is_not_one_is_refused() -> None:
    failures = as_engine_loads(CaCertificateProvider()).check({}, props("key", domain="*.example.org")).failures
    assert [failure.property for failure in failures or []] == ["domain"]
