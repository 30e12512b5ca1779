"""TLS: a CA, a wildcard certificate, and the Secrets the platform's listeners look up."""

from __future__ import annotations

import ast
import inspect

from components.tls import CA_KEY_FILE, CA_SECRET, LISTENER_SECRETS, Tls, ca_common_name
from stacks import outputs
from tests.plans import COMMAND, planned

CA_CERTIFICATE = "pulumi-python:dynamic/blueprint:CaCertificate"


def test_the_wildcard_certificate_covers_the_domain_and_its_subdomains() -> None:
    request = planned("dev", domain="lab.example.org").one("tls:index/certRequest:CertRequest", "tls-wildcard-request")
    assert request["inputs"]["dnsNames"] == ["*.lab.example.org", "lab.example.org"]


def test_it_is_signed_by_our_ca() -> None:
    result = planned("phase2")
    ca = result.one(CA_CERTIFICATE, "tls-ca")
    cert = result.one("tls:index/locallySignedCert:LocallySignedCert", "tls-wildcard")
    assert cert["inputs"]["caPrivateKeyPem"] == "[secret]"
    assert "stand-in for tls-ca" in cert["inputs"]["caCertPem"]
    assert ca["urn"] in cert["dependsOn"]


def test_the_ca_may_sign_only_names_under_the_domain() -> None:
    ca = planned("dev", domain="lab.example.org").one(CA_CERTIFICATE, "tls-ca")
    assert ca["inputs"]["domain"] == "lab.example.org"


def test_every_listener_secret_exists_in_gitlabs_namespace() -> None:
    result = planned("phase2")
    for name in ("gitlab-wildcard-tls", "registry-tls", "kas-tls", "minio-tls", "gitlab-tls"):
        assert name in LISTENER_SECRETS
    for name in LISTENER_SECRETS:
        inputs = result.one("kubernetes:core/v1:Secret", f"tls-{name}")["inputs"]
        assert (inputs["type"], inputs["metadata"]["name"], inputs["metadata"]["namespace"]) == (
            "kubernetes.io/tls",
            name,
            "gitlab",
        )
        assert inputs["stringData"] == {"tls.crt": "[secret]", "tls.key": "[secret]"}


def test_the_ca_is_an_output_a_secret_for_pods_and_a_file_to_trust() -> None:
    result = planned("phase2")
    assert result.outputs[outputs.CA_CERT_PEM]["secret"] is False
    assert "BEGIN CERTIFICATE" in result.outputs[outputs.CA_CERT_PEM]["value"]
    assert result.one("kubernetes:core/v1:Secret", "tls-ca-secret")["inputs"]["metadata"]["name"] == CA_SECRET
    ca_file = result.one(COMMAND, "tls-ca-file")["inputs"]
    assert ca_file["environment"]["CA_FILE"] == result.outputs[outputs.CA_CERT_FILE]["value"]
    assert "BEGIN CERTIFICATE" in ca_file["stdin"]


def test_the_ca_key_outlives_the_stack_in_the_data_folder() -> None:
    result = planned("phase2")
    data_dir = planned("phase1").outputs[outputs.DATA_DIR]["value"]
    key = result.one("pulumi-python:dynamic/blueprint:HostSecret", "tls-ca-key")
    assert (key["inputs"]["kind"], key["inputs"]["path"]) == ("ca-key", f"{data_dir}/platform/secrets/{CA_KEY_FILE}")
    assert result.one(CA_CERTIFICATE, "tls-ca")["inputs"]["private_key_pem"] == "[secret]"


def test_the_ca_is_named_for_what_it_may_sign() -> None:
    """A trust store shows it as a name-constrained CA, of its domain."""
    common_name = planned("phase2").one(CA_CERTIFICATE, "tls-ca")["inputs"]["common_name"]
    assert common_name == ca_common_name("local.example.net") == "blueprint name-constrained CA (local.example.net)"


def test_the_ca_name_leaves_the_domain_out_when_it_would_be_longer_than_a_certificate_name_holds() -> None:
    long_domain = "a" * 30 + "." + "b" * 26 + ".net"
    assert ca_common_name(long_domain) == "blueprint name-constrained CA"
    assert len(ca_common_name("x" * 29 + ".net")) <= 64


def test_the_component_registers_every_public_output() -> None:
    """House style 7: what a dependant may read of the component is in `register_outputs` (the keys stay out: secrets)."""
    tree = ast.parse(inspect.getsource(Tls))
    (call,) = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "register_outputs"]
    registered = {key.value for key in call.args[0].keys if isinstance(key, ast.Constant)}  # type: ignore[attr-defined]
    assert registered >= {"ca_cert_pem", "ca_file", "gateway_ca_pem", "gateway_ca_file", "openbao_cert_pem"}
