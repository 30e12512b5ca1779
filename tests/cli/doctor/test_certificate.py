"""`blueprint doctor` on an existing cluster: the gateway's certificate (blueprint:tlsCertificate).
Without one, a warning that the nodes must trust the platform CA; with one, the Secret checked as
phase1 reads it (type, coverage of `*.<domain>`, expiry), no value of it ever printed."""

from __future__ import annotations

import base64
import datetime
from dataclasses import replace

from cli.doctor import existing_cluster_checks
from cli.doctor.certificate import CERTIFICATE
from cli.doctor.checks import PULUMI_MIN_VERSION, Check
from tests.cli.doctor.fake_kubectl import CONTEXT, ClusterMachine, FakeCluster
from tests.cli.doctor.test_cluster import EXISTING_CLUSTER
from tests.tls_certificates import certificate_pem, issuer

DOMAIN = "platform.example.com"
BROUGHT = replace(EXISTING_CLUSTER, tls_certificate="certs/wildcard-tls")
NOW = datetime.datetime.now(datetime.UTC)


def answer(cert_pem: str, *, kind: str = "kubernetes.io/tls", ca_pem: str = "") -> str:
    """What kubectl prints for the doctor's jsonpath of such a Secret."""
    encoded = [base64.b64encode(pem.encode()).decode() for pem in (cert_pem, ca_pem) if pem]
    return " ".join([kind, *encoded])


def certificate(secrets: dict[str, str], config: object = BROUGHT) -> Check:
    machine = ClusterMachine(cluster=FakeCluster(secrets=secrets))
    found = existing_cluster_checks(machine, config, pulumi_min_version=PULUMI_MIN_VERSION, domain=DOMAIN)  # type: ignore[arg-type]
    return next(check for check in found if check.name == CERTIFICATE)


def test_without_a_brought_certificate_a_warning_says_the_nodes_must_trust_the_platform_ca_for_the_registry() -> None:
    check = certificate({}, EXISTING_CLUSTER)
    assert check.ok
    assert f"must trust the platform CA for registry.{DOMAIN}, or every deploy fails" in check.advice
    assert "blueprint:tlsCertificate" in check.advice
    assert f"/etc/containerd/certs.d/registry.{DOMAIN}/hosts.toml" in check.advice


def test_a_brought_certificate_for_the_domain_passes_naming_what_trusts_it() -> None:
    ca = issuer("Acme Private Root")
    check = certificate({"certs/wildcard-tls": answer(certificate_pem([f"*.{DOMAIN}"], by=ca), ca_pem=ca.pem)})
    assert check.ok
    assert not check.advice
    assert "issued under CN=Acme Private Root, of its ca.crt, which blueprint trusts" in check.found


def test_a_self_signed_certificate_without_a_ca_crt_fails_since_nothing_trusts_it() -> None:
    check = certificate({"certs/wildcard-tls": answer(certificate_pem([f"*.{DOMAIN}"]))})
    assert not check.ok
    assert "does not chain to the public roots, and the Secret has no ca.crt" in check.found


def test_a_certificate_its_ca_crt_did_not_issue_fails() -> None:
    other = issuer("Someone Else's CA")
    check = certificate({"certs/wildcard-tls": answer(certificate_pem([f"*.{DOMAIN}"], by=issuer()), ca_pem=other.pem)})
    assert not check.ok
    assert "does not chain to its ca.crt" in check.found


def test_a_chain_through_an_intermediate_in_tls_crt_passes_naming_the_root() -> None:
    root = issuer("Acme Root")
    intermediate = issuer("Acme Issuing CA", parent=root)
    check = certificate(
        {"certs/wildcard-tls": answer(certificate_pem([f"*.{DOMAIN}"], by=intermediate, chain=[intermediate]), ca_pem=root.pem)}
    )
    assert check.ok, check.found
    assert "issued under CN=Acme Root" in check.found


def test_a_tls_crt_without_its_intermediate_fails_as_the_nodes_would_refuse_it() -> None:
    root = issuer("Acme Root")
    leaf = certificate_pem([f"*.{DOMAIN}"], by=issuer("Acme Issuing CA", parent=root))
    check = certificate({"certs/wildcard-tls": answer(leaf, ca_pem=root.pem)})
    assert not check.ok
    assert "any intermediate after the certificate in tls.crt" in check.fix + check.found


def test_a_ca_made_by_openssls_defaults_without_key_usage_is_trusted() -> None:
    """OpenSSL and Go, which call the gateway, accept a CA with no keyUsage and a leaf with no authorityKeyIdentifier."""
    ca = issuer(key_usage=False)
    check = certificate({"certs/wildcard-tls": answer(certificate_pem([f"*.{DOMAIN}"], by=ca), ca_pem=ca.pem)})
    assert check.ok, check.found


def test_a_missing_secret_fails_with_the_command_that_makes_it() -> None:
    check = certificate({})
    assert not check.ok
    assert "cannot be read: Error from server (NotFound)" in check.found
    assert f"kubectl --context {CONTEXT} create secret tls wildcard-tls --namespace certs" in check.fix


def test_a_secret_not_of_type_tls_fails_naming_its_type() -> None:
    check = certificate({"certs/wildcard-tls": answer(certificate_pem([f"*.{DOMAIN}"]), kind="Opaque")})
    assert not check.ok
    assert "of type Opaque, not kubernetes.io/tls" in check.found


def test_a_certificate_for_other_names_fails_listing_the_names_it_has() -> None:
    check = certificate({"certs/wildcard-tls": answer(certificate_pem(["*.other.example.org"]))})
    assert not check.ok
    assert f"does not cover *.{DOMAIN} (its DNS names: *.other.example.org)" in check.found


def test_an_expired_certificate_fails_saying_when_it_expired() -> None:
    expired = certificate_pem([f"*.{DOMAIN}"], not_after=NOW - datetime.timedelta(days=2))
    check = certificate({"certs/wildcard-tls": answer(expired)})
    assert not check.ok
    assert f"expired on {NOW - datetime.timedelta(days=2):%Y-%m-%d}" in check.found


def test_no_part_of_the_secret_is_printed() -> None:
    pem = certificate_pem(["*.other.example.org"])
    said = answer(pem)
    check = certificate({"certs/wildcard-tls": said})
    assert said.split()[1][:40] not in check.found + check.fix
    assert "BEGIN" not in check.found + check.fix
