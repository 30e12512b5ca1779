"""The offline plan's stand-ins for what only a real provider, checkout or platform could know.

Deterministic, so that a plan is the same on every run and in every checkout: the outputs a
provider computes (an id, a command's stdout, a password, a certificate) and the runtime that the
program runs with in the plan (stacks/runtime.py).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import pulumi
import yaml

from components.engine import DOCKER
from stacks.layout_record import LayoutRecords
from stacks.runtime import Platform, Runtime

CHECKOUT_ID = "offline-plan"
"""The checkout id the plan gives the program, which reads and writes no id file in the plan: a
plan is the same in every checkout."""


class StandInPlatform:
    """What phase3 calls GitLab and OpenBao with in the plan, which reads no file of phase2's and calls nothing."""

    def admin_token(self, _inputs: Mapping[str, Any]) -> pulumi.Input[str]:
        return pulumi.Output.secret("glpat-offline-plan")

    def writer_password(self, _inputs: Mapping[str, Any]) -> pulumi.Input[str]:
        return pulumi.Output.secret("offline-plan")

    def preflight(self, _inputs: Mapping[str, Any]) -> None:
        """Nothing to check: the plan calls nothing."""


PLATFORM: Platform = StandInPlatform()


class StandInEngine:
    """The engine the plan runs kind on, which asks the machine nothing: the one configured, else Docker
    (so a plan is the same on every machine), and never a refused one.
    """

    def chosen(self, configured: str) -> str:
        return configured or DOCKER

    def refusal(self, _engine: str) -> str | None:
        return None


_DESTROYING: ContextVar[bool] = ContextVar("destroying", default=False)


@contextmanager
def destroying_runs(destroying: bool) -> Iterator[None]:
    """Inside the block, with `destroying`, the plan runs each program as `blueprint destroy` runs phase2's."""
    token = _DESTROYING.set(destroying)
    try:
        yield
    finally:
        _DESTROYING.reset(token)


def runtime(secret_keys: Iterable[str], layout_records: LayoutRecords | None = None) -> Runtime:
    """The runtime the plan runs the program with: its checkout id and platform, every secret
    config key's value a stand-in, since the plan cannot decrypt it, and `layout_records` (None:
    none, a new platform) for the records beside the data, since the plan reads no host folder;
    destroying inside `destroying_runs(True)`.
    """
    records = layout_records or RecordedLayout()
    return Runtime(
        checkout_id=CHECKOUT_ID,
        stand_in_keys=frozenset(secret_keys),
        platform=PLATFORM,
        layout_records=records,
        engine=StandInEngine(),
        destroying=_DESTROYING.get(),
    )


class RecordedLayout:
    """The layout record beside a planned stack's data, whatever its folder: `layout` (None:
    none), and what the program records there (stacks/layout_record.py).
    """

    def __init__(self, layout: str | None = None) -> None:
        self.layout = layout

    def read(self, folder: str, owner: str) -> str | None:
        return self.layout

    def write(self, folder: str, owner: str, record: str) -> None:
        self.layout = record

    def unfinished_wipe(self, folder: str) -> str | None:
        """None: the plan reads no host folder (a test that wants the host's answer plans with
        stacks.layout_record.HOST).
        """
        return None


KIND_CLUSTER = ("command:local:Command", "kind-cluster")
"""The type and name of the command that makes the kind cluster and prints its kubeconfig (the
KindCluster "kind" of stacks/phase1.py, whose command components/kind_cluster.py names `<name>-cluster`)."""


def kubeconfig(inputs: Mapping[str, Any]) -> str:
    """What `kind get kubeconfig` prints for the cluster the KIND_CLUSTER command with these inputs
    creates (fake credentials).
    """
    kind = yaml.safe_load(inputs.get("stdin") or "{}") or {}
    port = kind.get("networking", {}).get("apiServerPort", 6443)
    from stacks.outputs import kind_context

    context = kind_context((inputs.get("environment") or {}).get("KIND_CLUSTER_NAME", "kind"))
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": context,
                    "cluster": {"server": f"https://127.0.0.1:{int(port)}", "certificate-authority-data": "c3RhbmQtaW4="},
                }
            ],
            "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
            "current-context": context,
            "users": [{"name": context, "user": {"client-certificate-data": "c3RhbmQtaW4=", "client-key-data": "c3RhbmQtaW4="}}],
        },
        sort_keys=False,
    )


EXISTING_CLUSTER_UID = "0ff11e00-5a70-4d1e-8000-000000000000"
"""The UID of kube-system on the stand-in existing cluster (a fixed, well-formed UUID)."""
EXISTING_CLUSTER_VERSION = "v1.33.2"
EXISTING_DEFAULT_CLASS = "standard"
"""The stand-in cluster's default StorageClass; a class `blueprint:storageClass` names exists there too."""
EXISTING_API_SERVER = ("10.96.0.1", 443)
EXISTING_NAMESPACES: dict[str, dict[str, str]] = {"default": {}, "kube-system": {}}
"""The stand-in cluster's namespaces, by name, with their labels: none of phase2's."""


def existing_cluster_answer(command: str, environment: Mapping[str, str]) -> dict[str, str] | None:
    """What kubectl answers a read of components/existing_cluster.py on the stand-in cluster of the
    context in `environment` (any context: the plan has no kubeconfig), or None for another command.
    """
    from components import existing_cluster
    from stacks.config.schema import raw_config

    context = environment.get("KUBE_CONTEXT", "")
    if command == existing_cluster.KUBECONFIG_COMMAND:
        return {"stdout": _context_kubeconfig(context), "stderr": ""}
    if command == existing_cluster.BROUGHT_COMMAND:
        return {"stdout": brought_secret(raw_config().get("domain", "")), "stderr": ""}
    if command == existing_cluster.NAMESPACES_COMMAND:
        items = [{"metadata": {"name": name, "labels": labels}} for name, labels in EXISTING_NAMESPACES.items()]
        return {"stdout": json.dumps({"kind": "List", "items": items}), "stderr": ""}
    read = next((name for name, text in existing_cluster.READS.items() if text == command), None)
    if read is None:
        return None
    named = raw_config().get("storageClass", "")
    classes = [
        {"metadata": {"name": EXISTING_DEFAULT_CLASS, "annotations": {existing_cluster.DEFAULT_CLASS_ANNOTATIONS[0]: "true"}}},
        *([{"metadata": {"name": named}}] if named and named != EXISTING_DEFAULT_CLASS else []),
    ]
    address, port = EXISTING_API_SERVER
    answers = {
        "identity": EXISTING_CLUSTER_UID,
        "version": json.dumps({"major": "1", "minor": "33", "gitVersion": EXISTING_CLUSTER_VERSION}),
        "storageClasses": json.dumps({"kind": "List", "items": classes}),
        "apiServer": json.dumps({"items": [{"endpoints": [{"addresses": [address]}], "ports": [{"name": "https", "port": port}]}]}),
    }
    return {"stdout": answers[read], "stderr": ""}


@functools.cache
def _brought_ca() -> tuple[str, Any]:
    """The stand-in cluster's private CA: its PEM and key, the same on every run (a fixed key, fixed dates,
    a deterministic signature), since phase1 publishes it and a plan must not change by itself.
    """
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.derive_private_key(0x5EED, ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "stand-in for the brought certificate's CA")])
    cert = (
        x509.CertificateBuilder(subject_name=name, issuer_name=name, public_key=key.public_key(), serial_number=1)
        .not_valid_before(datetime.datetime(2025, 1, 1, tzinfo=datetime.UTC))
        .not_valid_after(datetime.datetime(2125, 1, 1, tzinfo=datetime.UTC))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256(), ecdsa_deterministic=True)
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode(), key


BROUGHT_CA_PEM = _brought_ca()[0]
"""The `ca.crt` of the stand-in cluster's brought Secret (blueprint:tlsCertificate)."""


def brought_secret(domain: str) -> str:
    """What kubectl answers components/brought_tls.py READ_ARGS on the stand-in cluster: a kubernetes.io/tls
    Secret whose certificate covers `*.<domain>` for a year from now (made here: the plan has no cluster),
    issued by its CA.
    """
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import NameOID

    from components.brought_tls import TLS_TYPE

    ca_pem, key = _brought_ca()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"*.{domain}")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder(
            subject_name=name,
            issuer_name=x509.load_pem_x509_certificate(ca_pem.encode()).subject,
            public_key=key.public_key(),
            serial_number=2,
        )
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(f"*.{domain}")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    encoded = (base64.b64encode(pem).decode() for pem in (cert.public_bytes(serialization.Encoding.PEM), ca_pem.encode()))
    return " ".join((TLS_TYPE, *encoded))


def _context_kubeconfig(context: str) -> str:
    """What `kubectl config view --raw --minify --flatten --context <context>` prints on the stand-in (fake credentials)."""
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": context, "cluster": {"server": "https://203.0.113.10:443", "certificate-authority-data": "c3RhbmQtaW4="}}
            ],
            "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
            "current-context": context,
            "users": [{"name": context, "user": {"token": "stand-in"}}],
        },
        sort_keys=False,
    )


ENVOY_SERVICE_READ = ("kubernetes:core/v1:Service", "gitlab-envoy-service")
"""phase2's read of Envoy's Service on an existing cluster (stacks/node_access.py `runner_host_aliases`)."""
ENVOY_CLUSTER_IP = "10.96.0.20"
"""The stand-in cluster's ClusterIP of Envoy's Service."""

GITLAB_NUMBERED = tuple(f"pulumi-python:dynamic/gitlab:{kind}" for kind in ("Group", "Project", "Runner", "DeployToken"))
"""Our dynamic GitLab resources whose id is GitLab's number for the object."""


def resource_id(typ: str, name: str) -> str:
    """GitLab's ids are numbers (programs pass them on as ints); other ids are `<name>-id`."""
    if typ in GITLAB_NUMBERED:
        return str(int(hashlib.sha256(name.encode()).hexdigest()[:6], 16))
    return f"{name}-id"


def _pem(kind: str, name: str) -> str:
    return f"-----BEGIN {kind}-----\nstand-in for {name}\n-----END {kind}-----\n"


def provider_outputs(typ: str, name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Outputs that only a real provider could know, for the types the program uses."""
    if typ == "command:local:Command":
        return {"stdout": kubeconfig(inputs) if (typ, name) == KIND_CLUSTER else "", "stderr": ""}
    if (typ, name) == ENVOY_SERVICE_READ:
        return {"spec": {"clusterIP": ENVOY_CLUSTER_IP, "type": "LoadBalancer"}}
    if typ == "pulumi-python:dynamic/blueprint:DeployKubeconfig":
        user = {"name": "ci-deployer", "user": {"token": f"stand-in-token-{name}"}}
        return {"kubeconfig": yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "users": [user]}), "expires_at": 1_893_456_000}
    if typ == "kubernetes:helm.sh/v3:Release":
        return {
            "status": {
                "status": "deployed",
                "name": inputs.get("name"),
                "namespace": inputs.get("namespace"),
                "version": inputs.get("version"),
            }
        }
    if typ == "random:index/randomPassword:RandomPassword":
        return {"result": f"stand-in-password-{name}", "bcryptHash": f"stand-in-hash-{name}"}
    if typ == "tls:index/privateKey:PrivateKey":
        return {
            "privateKeyPem": _pem("PRIVATE KEY", name),
            "privateKeyPemPkcs8": _pem("PRIVATE KEY", name),
            "publicKeyPem": _pem("PUBLIC KEY", name),
        }
    if typ == "tls:index/certRequest:CertRequest":
        return {"certRequestPem": _pem("CERTIFICATE REQUEST", name)}
    if typ == "tls:index/locallySignedCert:LocallySignedCert":
        return {"certPem": _pem("CERTIFICATE", name)}
    if typ == "pulumi-python:dynamic/blueprint:CaCertificate":
        return {"cert_pem": _pem("CERTIFICATE", name)}
    if typ == "pulumi-python:dynamic/blueprint:HostSecret":
        if inputs.get("kind") == "ssh-host-keys":
            files = [f"ssh_host_{kind}_key{suffix}" for kind in ("rsa", "ecdsa", "ed25519") for suffix in ("", ".pub")]
            return {"value": json.dumps({file: f"stand-in-secret-{name}-{file}" for file in files})}
        if inputs.get("kind") == "ca-key":
            return {"value": _pem("EC PRIVATE KEY", name)}
        return {"value": f"stand-in-secret-{name}"}
    if typ == "pulumi-python:dynamic/gitlab:AdminToken":
        return {}
    if typ == "pulumi-python:dynamic/gitlab:ProjectSync":
        # A commit id that follows the files, as the real one does.
        digest = hashlib.sha1(json.dumps(inputs.get("files") or {}, sort_keys=True).encode(), usedforsecurity=False)
        return {"commit": digest.hexdigest(), "changed": []}
    if typ == "pulumi-python:dynamic/gitlab:SmokePipeline":
        return {"pipeline_id": 1, "status": "success", "web_url": f"https://gitlab.example/{name}/-/pipelines/1"}
    if typ == "pulumi-python:dynamic/gitlab:Group":
        return {"full_path": inputs.get("path"), "web_url": f"{inputs.get('gitlab_url')}/groups/{inputs.get('path')}"}
    if typ == "pulumi-python:dynamic/gitlab:Project":
        full_path = f"{inputs.get('namespace')}/{inputs.get('path')}"
        return {"full_path": full_path, "web_url": f"{inputs.get('gitlab_url')}/{full_path}"}
    if typ == "pulumi-python:dynamic/gitlab:DeployToken":
        return {"username": f"gitlab+deploy-token-{resource_id(typ, name)}"}
    if typ == "pulumi-python:dynamic/gitlab:Runner":
        return {"authentication_token": f"glrt-stand-in-{name}"}
    return {}
