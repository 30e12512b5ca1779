"""A wildcard certificate the user brings (`blueprint:tlsCertificate=<namespace>/<name>`) on an existing
cluster: phase1 reads the Secret (never its key) and publishes its CA; the gateway's every TLS listener
refers to it across namespaces through a ReferenceGrant, and no platform-CA certificate is served; what
calls GitLab, its registry and the apps trusts the brought certificate's CA, and OpenBao keeps the
platform CA (components/brought_tls.py)."""

from __future__ import annotations

import base64
import datetime
from typing import Any

import pytest

from cli import stand_ins
from cli.plan import RUN_TOKEN, ProgramFailed, plan
from components import brought_tls, existing_cluster
from components import tls as tls_component
from components.gitlab_gateway import CHART_TLS_LISTENERS
from stacks import outputs, preflight
from stacks.config.names import is_dns_subdomain
from tests.plans import COMMAND, planned
from tests.tls_certificates import certificate_pem, issuer

DOMAIN = "platform.example.com"
EXISTING = {"cluster": "existing", "kubeContext": "gke_acme_europe-west1_prod", "domain": DOMAIN}
BROUGHT = {**EXISTING, "tlsCertificate": "certs/wildcard-tls"}
BROUGHT_REF = {"kind": "Secret", "name": "wildcard-tls", "namespace": "certs"}
SECRET = "kubernetes:core/v1:Secret"


def inputs_of(stack: str, type_: str, name: str) -> dict[str, Any]:
    return dict(planned(stack, **BROUGHT).one(type_, name)["inputs"])


def test_phase1_reads_the_brought_secrets_type_certificate_and_ca_never_its_key() -> None:
    (read,) = [invoke for invoke in planned("phase1", **BROUGHT).invokes if invoke["command"] == existing_cluster.BROUGHT_COMMAND]
    assert read["token"] == RUN_TOKEN
    assert read["environment"] == {"KUBE_CONTEXT": EXISTING["kubeContext"], "SECRET_NAMESPACE": "certs", "SECRET_NAME": "wildcard-tls"}
    assert "tls\\.crt" in read["command"]
    assert "ca\\.crt" in read["command"]
    assert "tls\\.key" not in read["command"]
    assert "-o json" not in read["command"]
    assert "-o yaml" not in read["command"]


def test_phase1_publishes_the_brought_secret_and_its_ca() -> None:
    value = {key: output["value"] for key, output in planned("phase1", **BROUGHT).outputs.items()}
    assert value[outputs.TLS_CERTIFICATE] == "certs/wildcard-tls"
    assert value[outputs.TLS_CERTIFICATE_CA] == stand_ins.BROUGHT_CA_PEM


def test_without_the_key_phase1_publishes_nothing_of_a_brought_certificate() -> None:
    assert not set(outputs.PHASE1_BROUGHT) & set(planned("phase1", **EXISTING).outputs)


def test_phase1_refuses_a_brought_certificate_for_another_domain_before_phase2(monkeypatch: pytest.MonkeyPatch) -> None:
    other = " ".join((brought_tls.TLS_TYPE, base64.b64encode(certificate_pem(["*.other.example.org"]).encode()).decode()))
    monkeypatch.setattr(stand_ins, "brought_secret", lambda _domain: other)
    with pytest.raises(ProgramFailed) as failed:
        plan("phase1", {f"blueprint:{key}": value for key, value in BROUGHT.items()})
    said = str(failed.value)
    assert "blueprint:tlsCertificate names the Secret certs/wildcard-tls" in said
    assert f"does not cover *.{DOMAIN} (its DNS names: *.other.example.org)" in said
    assert "BEGIN CERTIFICATE" not in said


def test_phase1_refuses_a_self_signed_certificate_that_nothing_trusts_before_phase2(monkeypatch: pytest.MonkeyPatch) -> None:
    """phase2 would otherwise fail at GitLab's token, with x509, far from the cause."""
    self_signed = " ".join((brought_tls.TLS_TYPE, base64.b64encode(certificate_pem([f"*.{DOMAIN}"]).encode()).decode()))
    monkeypatch.setattr(stand_ins, "brought_secret", lambda _domain: self_signed)
    with pytest.raises(ProgramFailed) as failed:
        plan("phase1", {f"blueprint:{key}": value for key, value in BROUGHT.items()})
    assert "does not chain to the public roots, and the Secret has no ca.crt" in str(failed.value)


def test_every_tls_listener_of_the_chart_serves_the_brought_secret() -> None:
    listeners = inputs_of("phase2", "kubernetes:helm.sh/v3:Release", "gitlab-chart")["values"]["gatewayApiResources"]["gateway"][
        "listeners"
    ]
    assert set(listeners) == set(CHART_TLS_LISTENERS)
    assert {"gitlab-web", "registry-web", "kas-web"} <= set(listeners)
    for listener in listeners.values():
        assert listener["tls"] == {"mode": "Terminate", "certificateRefs": [BROUGHT_REF]}


def test_the_apps_listener_serves_the_brought_secret() -> None:
    (apps,) = inputs_of("phase2", "kubernetes:gateway.networking.k8s.io/v1:GatewayPatch", "gitlab-apps-listener")["spec"]["listeners"]
    assert apps["tls"]["certificateRefs"] == [BROUGHT_REF]


def test_a_reference_grant_lets_gitlabs_gateways_refer_to_the_brought_secret_alone() -> None:
    grant = inputs_of("phase2", "kubernetes:gateway.networking.k8s.io/v1beta1:ReferenceGrant", "tls-brought-reference-grant")
    assert grant["metadata"]["namespace"] == "certs"
    assert grant["spec"] == {
        "from": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": "gitlab"}],
        "to": [{"group": "", "kind": "Secret", "name": "wildcard-tls"}],
    }


def test_with_a_brought_certificate_no_listener_secret_of_the_platform_ca_is_made() -> None:
    names = {resource["inputs"]["metadata"]["name"] for resource in planned("phase2", **BROUGHT).find(SECRET)}
    assert not names & set(tls_component.LISTENER_SECRETS)
    assert set(tls_component.LISTENER_SECRETS) <= {r["inputs"]["metadata"]["name"] for r in planned("phase2", **EXISTING).find(SECRET)}


def test_gitlabs_pods_trust_the_brought_certificates_ca_beside_the_platform_ca() -> None:
    secret = inputs_of("phase2", SECRET, "tls-ca-secret")
    assert set(secret["stringData"]) == {tls_component.CA_SECRET_KEY, brought_tls.TRUST_KEY}


def test_the_brought_certificates_ca_is_written_beside_the_platform_ca_for_this_machines_calls() -> None:
    written = inputs_of("phase2", COMMAND, "tls-gateway-ca-file")
    assert written["stdin"] == stand_ins.BROUGHT_CA_PEM
    assert written["environment"]["CA_FILE"].endswith(f"/platform/{brought_tls.TRUST_KEY}")


def test_gitlab_and_the_runners_are_called_trusting_the_brought_ca_and_openbao_the_platform_ca() -> None:
    result = planned("phase2", **BROUGHT)
    gateway_ca = result.outputs[outputs.GATEWAY_CA_FILE]["value"]
    platform_ca = result.outputs[outputs.CA_CERT_FILE]["value"]
    assert gateway_ca.endswith(brought_tls.TRUST_KEY)
    assert gateway_ca != platform_ca
    trusted = {r["name"]: r["inputs"]["ca_file"] for r in result.resources if "ca_file" in (r.get("inputs") or {})}
    for name in ("gitlab-admin-token", "gitlab-glab-token", "apps-group", "runner-registration", "image-build-runner-registration"):
        assert trusted[name] == gateway_ca, name
    assert {ca for name, ca in trusted.items() if name.startswith("openbao-")} == {platform_ca}


def test_phase3_calls_gitlab_trusting_the_brought_ca_and_openbao_the_platform_ca() -> None:
    result = planned("phase3", **BROUGHT)
    trusted = {r["type"]: r["inputs"]["ca_file"] for r in result.resources if "ca_file" in (r.get("inputs") or {})}
    gitlab = {ca for typ, ca in trusted.items() if typ.startswith("pulumi-python:dynamic/gitlab:")}
    openbao = {ca for typ, ca in trusted.items() if typ.startswith("pulumi-python:dynamic/openbao:")}
    assert len(gitlab) == 1
    assert next(iter(gitlab)).endswith(brought_tls.TRUST_KEY)
    assert len(openbao) == 1
    assert next(iter(openbao)).endswith("/platform/ca.crt")


def test_phase3s_preflight_checks_gitlab_and_the_registry_against_the_brought_ca() -> None:
    phase2 = {key: value for key, (value, _secret) in planned("phase2", **BROUGHT).raw_outputs.items()}
    platform = preflight.from_outputs(phase2)
    assert platform.gateway_ca_file == phase2[outputs.GATEWAY_CA_FILE]
    assert platform.ca_file == phase2[outputs.CA_CERT_FILE]


def test_a_certificate_past_its_end_or_before_its_start_does_not_serve() -> None:
    now = datetime.datetime.now(datetime.UTC)
    expired = certificate_pem([f"*.{DOMAIN}"], not_after=now - datetime.timedelta(hours=1))
    assert "expired" in (brought_tls.certificate_problem(expired, DOMAIN, now) or "")
    assert "valid from" in (
        brought_tls.certificate_problem(certificate_pem([f"*.{DOMAIN}"]), DOMAIN, now - datetime.timedelta(days=500)) or ""
    )
    ca = issuer()
    assert brought_tls.certificate_problem(certificate_pem([f"*.{DOMAIN.upper()}"], by=ca), DOMAIN, now, ca.pem) is None


def test_the_reference_grant_waits_for_the_gateway_api_crds_that_define_it() -> None:
    grant = planned("phase2", **BROUGHT).one("kubernetes:gateway.networking.k8s.io/v1beta1:ReferenceGrant", "tls-brought-reference-grant")
    assert any(urn.endswith("$kubernetes:helm.sh/v4:Chart::gateway-crds-chart") for urn in grant["dependsOn"])


@pytest.mark.parametrize("cut_at", [".", "-"])
def test_the_reference_grant_of_a_long_secret_name_is_a_valid_name(cut_at: str) -> None:
    """The grant's name is the Secret's, prefixed and cut to 253: the cut must not end in '-' or '.', which the API refuses."""
    name = "a" * 234 + cut_at + "b" * 18  # 253 characters, its 235th a '.' or '-'
    grant = brought_tls.reference_grant(brought_tls.Brought(namespace="certs", name=name, ca_pem=""), gateway_namespace="gitlab", labels={})
    assert is_dns_subdomain(grant["metadata"]["name"])


@pytest.fixture(scope="module")
def without_ca() -> Any:
    """phase2's plan where the brought Secret has no `ca.crt` (a public certificate), as phase1 publishes it: planned once."""
    phase1 = planned("phase1", **BROUGHT)  # a copy of the cached plan: phase1 read no ca.crt
    phase1.raw_outputs[outputs.TLS_CERTIFICATE_CA] = ("", False)
    return plan("phase2", {f"blueprint:{key}": value for key, value in BROUGHT.items()}, planned_upstream={"phase1": phase1})


def test_without_ca_crt_the_runners_trust_their_images_roots_not_this_machines_bundle(without_ca: Any) -> None:
    bundle = brought_tls.public_roots()
    for release in ("runner-chart", "image-build-runner-chart"):
        assert "certsSecretName" not in without_ca.one("kubernetes:helm.sh/v3:Release", release)["inputs"]["values"], release
    names = {resource["name"] for resource in without_ca.find(SECRET)}
    assert not {"runner-certs", "image-build-runner-certs"} & names
    assert all(bundle not in str(resource.get("inputs")) for resource in without_ca.resources if resource["type"] != COMMAND)


def test_without_ca_crt_this_machines_calls_still_trust_its_public_roots(without_ca: Any) -> None:
    written = without_ca.one(COMMAND, "tls-gateway-ca-file")["inputs"]
    assert written["stdin"] == brought_tls.public_roots()


def test_with_ca_crt_the_runners_trust_the_brought_ca() -> None:
    certs = inputs_of("phase2", SECRET, "runner-certs")
    assert list(certs["stringData"]) == [f"gitlab.{DOMAIN}.crt"]
    assert inputs_of("phase2", "kubernetes:helm.sh/v3:Release", "runner-chart")["values"]["certsSecretName"] == "gitlab-runner-certs"
