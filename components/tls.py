"""The platform's own CA and its wildcard certificate, and the Secrets that carry them.

The CA (`providers/ca_certificate.py`) may sign names under `<domain>` only: users trust it
system-wide, so its certificate carries X.509 name constraints. pulumi-tls mints the certificate for
`*.<domain>` and `<domain>`. The CA's private key is
generated once into the data folder (`providers/host_secret.py`), like the other secrets that must
outlive a stack: after a destroy and a new `up` the CA certificate is issued again with the same
subject and key, so the copy a user already trusts still verifies the new certificates. The certificate and key go
into one `kubernetes.io/tls` Secret per name the platform's listeners look up: GitLab chart 10.x's
Gateway listeners take fixed, un-prefixed names in its namespace (`gitlab-on-kind.md` section 2),
and the old blueprint's names are kept beside them. The CA certificate (public) goes into a Secret
for `global.certificates.customCAs` and into a file on the host for users to trust.

With a certificate the user brings (`brought`, components/brought_tls.py) the gateway serves that
instead: no listener Secret is made, a ReferenceGrant lets the Gateway refer to the user's Secret, and
what verifies the gateway's names is its CA or the public roots: in the cluster (`gateway_ca_pem`) its
CA or the images' own roots, on this machine (`gateway_ca_file`) its CA or this machine's bundle.
The platform CA stays for what the platform alone serves (OpenBao's certificate).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s
import pulumi_tls as tls
from pulumi_command import local

from components import brought_tls
from providers.ca_certificate import CaCertificate, CaCertificateArgs
from providers.host_secret import HostSecret, HostSecretArgs

LISTENER_SECRETS = (
    "gitlab-wildcard-tls",
    "gitlab-tls",
    "registry-tls",
    "kas-tls",
    "pages-tls",
    "minio-tls",
    "kas-workspaces-tls",
)
"""The old blueprint's names and the ones chart 10.x's Gateway listeners reference by default."""
CA_SECRET = "blueprint-ca"
CA_SECRET_KEY = "ca.crt"

CA_VALIDITY_HOURS = 10 * 365 * 24
CERT_VALIDITY_HOURS = 825 * 24
"""825 days: the longest validity Apple platforms accept for a TLS server certificate."""
EARLY_RENEWAL_HOURS = 30 * 24
"""A month before expiry, the next `up` issues a new certificate."""

WRITE_CA_SCRIPT = 'umask go-w && mkdir -p "$(dirname "$CA_FILE")" && cat > "$CA_FILE"'


@dataclass(frozen=True, kw_only=True)
class TlsArgs:
    domain: str
    namespace: pulumi.Input[str]
    """Namespace of the Secrets (GitLab's)."""
    ca_file: str
    """Host path the CA certificate is written to."""
    ca_folder: pulumi.Resource
    """What creates the folder of `ca_file`."""
    ca_key_file: str
    """Host path of the CA's private key (0600, under the data folder)."""
    brought: brought_tls.Brought | None = None
    """The certificate the user brings for the gateway (None: the platform CA's wildcard)."""
    gateway_api: tuple[pulumi.Resource, ...] = ()
    """What installs the Gateway API CRDs: the brought certificate's ReferenceGrant is one of their kinds."""


CA_KEY_FILE = "platform-ca-name-constrained.key"
"""The CA key's file in the secrets folder."""


COMMON_NAME_MAX = 64
"""X.509's bound on a common name (RFC 5280, ub-common-name)."""


def ca_common_name(domain: str) -> str:
    """The CA's name, which says what it may sign; without the domain when that would be too long
    for a common name.
    """
    named = f"blueprint name-constrained CA ({domain})"
    return named if len(named) <= COMMON_NAME_MAX else "blueprint name-constrained CA"


def dns_names(domain: str) -> list[str]:
    return [f"*.{domain}", domain]


def openbao_server_name(domain: str) -> str:
    """The name OpenBao's certificate is for, and the host checks it against: the CA signs names
    under the domain alone, so not the in-cluster Service's name.
    """
    return f"openbao.{domain}"


def _leaf(
    name: str, names: list[str], ca_key_pem: pulumi.Input[str], ca_cert_pem: pulumi.Input[str], child: pulumi.ResourceOptions
) -> tuple[tls.LocallySignedCert, tls.PrivateKey]:
    """A server certificate the CA signs for `names` (the first its common name), and its key."""
    key = tls.PrivateKey(f"{name}-key", algorithm="ECDSA", ecdsa_curve="P256", opts=child)
    request = tls.CertRequest(
        f"{name}-request",
        private_key_pem=key.private_key_pem,
        subject=tls.CertRequestSubjectArgs(common_name=names[0], organization="blueprint"),
        dns_names=names,
        opts=child,
    )
    cert = tls.LocallySignedCert(
        name,
        cert_request_pem=request.cert_request_pem,
        ca_private_key_pem=ca_key_pem,
        ca_cert_pem=ca_cert_pem,
        validity_period_hours=CERT_VALIDITY_HOURS,
        early_renewal_hours=EARLY_RENEWAL_HOURS,
        allowed_uses=["digital_signature", "key_encipherment", "server_auth"],
        opts=child,
    )
    return cert, key


class Tls(pulumi.ComponentResource):
    """CA, wildcard certificate, listener Secrets, CA Secret and CA file."""

    ca_cert_pem: pulumi.Output[str]
    """The CA certificate, PEM (public)."""
    ca_key_pem: pulumi.Output[str]
    """The CA's private key, PEM (secret): mirrored into OpenBao (credentials.py)."""
    wildcard_key_pem: pulumi.Output[str]
    """The wildcard certificate's private key, PEM (secret): mirrored into OpenBao (credentials.py)."""
    openbao_cert_pem: pulumi.Output[str]
    """OpenBao's certificate for `openbao_server_name(domain)`, then the CA's, PEM (public)."""
    openbao_key_pem: pulumi.Output[str]
    """Its private key, PEM (secret)."""
    ca_file: pulumi.Output[str]
    """Where the CA certificate is on the host (written before this output resolves)."""
    secrets: list[pulumi.Resource]
    """The listener Secrets (or the brought one's ReferenceGrant) and the CA Secret: what reads them waits for these."""
    gateway_ca_pem: pulumi.Output[str] | None
    """What the cluster's clients of the names the gateway serves (the Runners, their jobs) must trust,
    PEM (public); None for a brought certificate without `ca.crt`: their images' system roots verify
    it, and this machine's bundle (`gateway_ca_file`) stays out of the cluster, where each certifi
    release or operator would roll the Runners."""
    gateway_ca_file: pulumi.Output[str]
    """Where that is on the host (written before this output resolves)."""

    def __init__(self, name: str, args: TlsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("blueprint:index:Tls", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        ca_key = HostSecret(
            f"{name}-ca-key",
            HostSecretArgs(path=args.ca_key_file, kind="ca-key"),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[args.ca_folder])),
        )
        ca = CaCertificate(
            f"{name}-ca",
            CaCertificateArgs(
                private_key_pem=ca_key.value,
                domain=args.domain,
                common_name=ca_common_name(args.domain),
                organization="blueprint",
                validity_hours=CA_VALIDITY_HOURS,
            ),
            opts=child,
        )
        cert, key = _leaf(f"{name}-wildcard", dns_names(args.domain), ca_key.value, ca.cert_pem, child)
        # OpenBao's own: its key is in no other namespace, and the host checks the name (components/openbao.py).
        openbao_cert, openbao_key = _leaf(f"{name}-openbao", [openbao_server_name(args.domain)], ca_key.value, ca.cert_pem, child)
        # The chain (certificate, then CA) lets clients that do not hold the CA yet still verify it.
        chain = pulumi.Output.concat(cert.cert_pem, ca.cert_pem)
        self.secrets = _served(name, args, chain, key.private_key_pem, child)
        brought_ca = {brought_tls.TRUST_KEY: args.brought.ca_pem} if args.brought and args.brought.ca_pem else {}
        ca_secret = k8s.core.v1.Secret(
            f"{name}-ca-secret",
            metadata={"name": CA_SECRET, "namespace": args.namespace},
            string_data={CA_SECRET_KEY: ca.cert_pem, **brought_ca},
            opts=child,
        )
        self.secrets.append(ca_secret)
        ca_file = _written(f"{name}-ca-file", ca.cert_pem, args.ca_file, args.ca_folder, child)
        self.ca_cert_pem = ca.cert_pem
        self.ca_key_pem = ca_key.value
        self.wildcard_key_pem = pulumi.Output.secret(key.private_key_pem)
        self.openbao_cert_pem = pulumi.Output.concat(openbao_cert.cert_pem, ca.cert_pem)
        self.openbao_key_pem = pulumi.Output.secret(openbao_key.private_key_pem)
        # Resolves once the file is written: what reads the file (the token seeding, the GitLab
        # provider) depends on the command through this output.
        self.ca_file = ca_file.stdout.apply(lambda _: args.ca_file)
        self.gateway_ca_pem, self.gateway_ca_file = self.ca_cert_pem, self.ca_file
        if args.brought:
            trust = brought_tls.trust_pem(args.brought)
            path = f"{os.path.dirname(args.ca_file)}/{brought_tls.TRUST_KEY}"
            written = _written(f"{name}-gateway-ca-file", trust, path, args.ca_folder, child)
            self.gateway_ca_pem = pulumi.Output.from_input(args.brought.ca_pem) if args.brought.ca_pem else None
            self.gateway_ca_file = written.stdout.apply(lambda _: path)
        # The public ones: the keys are secrets, and a component's outputs are kept in the state as given.
        self.register_outputs(
            {
                "ca_cert_pem": self.ca_cert_pem,
                "ca_file": self.ca_file,
                "openbao_cert_pem": self.openbao_cert_pem,
                "gateway_ca_pem": self.gateway_ca_pem,
                "gateway_ca_file": self.gateway_ca_file,
            }
        )


def _served(
    name: str, args: TlsArgs, chain: pulumi.Input[str], key_pem: pulumi.Input[str], child: pulumi.ResourceOptions
) -> list[pulumi.Resource]:
    """What the gateway's listeners serve: the wildcard under each name they look up, or, for a brought
    certificate, the grant that lets the Gateway (GitLab's namespace) refer to the user's Secret.
    """
    if args.brought:
        grant = brought_tls.reference_grant(
            args.brought, gateway_namespace=args.namespace, labels={"app.kubernetes.io/managed-by": "blueprint"}
        )
        return [
            k8s.apiextensions.CustomResource(
                f"{name}-brought-reference-grant",
                api_version=grant["apiVersion"],
                kind=grant["kind"],
                metadata=grant["metadata"],
                spec=grant["spec"],
                opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=list(args.gateway_api))),
            )
        ]
    return [
        k8s.core.v1.Secret(
            f"{name}-{secret_name}",
            metadata={"name": secret_name, "namespace": args.namespace},
            type="kubernetes.io/tls",
            string_data={"tls.crt": chain, "tls.key": key_pem},
            opts=child,
        )
        for secret_name in LISTENER_SECRETS
    ]


def _written(name: str, pem: pulumi.Input[str], path: str, folder: pulumi.Resource, child: pulumi.ResourceOptions) -> local.Command:
    """`pem` written to the host file `path`, in the folder `folder` makes."""
    return local.Command(
        name,
        create=WRITE_CA_SCRIPT,
        update=WRITE_CA_SCRIPT,
        delete='rm -f "$CA_FILE"',
        stdin=pem,
        environment={"CA_FILE": path},
        opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[folder])),
    )
