"""OpenBao, the platform's vault: our own install of the openbao chart, sealed with a static key
blueprint generates, and configured by the server itself on its first start.

The seal key and the passwords of the userpass users `blueprint` and `admin` are generated into
0600 files before the server exists, and reach it as environment variables from a Secret, never
in the chart's values: the config names them (`current_key = "env://..."`, `eval_source = "env"`).
The `initialize` stanzas (`SELF_INIT`) mount KV v2 at `secret/` and make the policies and users;
`providers/openbao_init.py` checks the result, and applies the same requests through the API to a
vault initialised before a request changed. Storage is `postgresql` in the `openbao` database, its
URL, with the role's password, from a Secret as `BAO_PG_CONNECTION_URL`; the backend makes its table.

The release does not wait for the pod, and the readiness probe asks `sys/health`, so a sealed or
uninitialised server still lets it finish: `OpenBaoInit` waits (up to 10 minutes: a first image
pull is slow), reads the log when the pod never gets ready, and names a pod of an earlier revision
that holds the rollout up. Its `release_digest` input changes with whatever rolls the pod
(`configAnnotation` rolls it on a config change, `ENVIRONMENT_ANNOTATION` on a change of the Secrets
it reads its environment from), so it waits for the new pod, never checking the old one. The pod
fits Pod Security `restricted`; the API is a NodePort on the port phase1 maps to 127.0.0.1 (on an
existing cluster a ClusterIP Service, which the host reaches through a port-forward). Why:
docs/design/decisions.md, entries 3, 4 and 8.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

import versions
from components.digests import keyed_digest
from components.engine import DOCKER
from components.pod_security import pod_security_labels
from providers.cluster_access import Target
from providers.host_secret import HostSecret, HostSecretArgs
from providers.openbao_init import OpenBaoInit, OpenBaoInitArgs

RELEASE = "openbao"
PORT = 8200
KV_MOUNT = "secret"
STORAGE_TABLE = "openbao_kv_store"
"""The postgresql backend's table (its default `table`): all of OpenBao's storage, nothing else."""
WRITER_USER, WRITER_POLICY = "blueprint", "blueprint-writer"
ADMIN_USER, ADMIN_POLICY = "admin", "admin"
SEAL_KEY_ID = "blueprint-1"
"""The static seal's `current_key_id`: fixed, the key never changes (a rotation would add a `previous_key`)."""
SEAL_KEY_LENGTH = 32
"""The static seal takes a 32-character key as the raw 32-byte AES-256 key (go-kms-wrapping
wrappers/static/static.go `SetConfig`: 64 characters are hex, 44/43 base64, 32 raw). HostSecret's
passwords are letters and digits: about 190 bits of entropy."""
SEAL_KEY_ENV = "BLUEPRINT_SEAL_KEY"
WRITER_PASSWORD_ENV = "BLUEPRINT_WRITER_PASSWORD"
ADMIN_PASSWORD_ENV = "BLUEPRINT_ADMIN_PASSWORD"
"""The server's environment variables that carry the bootstrap secrets. None may contain what the
chart's start script substitutes in the config (HOST_IP, POD_IP, HOSTNAME, API_ADDR, TRANSIT_ADDR,
RAFT_ADDR: openbao-helm templates/_helpers.tpl `openbao.args`)."""
BOOTSTRAP_SECRET = f"{RELEASE}-bootstrap"
"""The Secret those variables come from: seal key and passwords, made from the files blueprint keeps."""
BOOTSTRAP_KEYS = {SEAL_KEY_ENV: "seal-key", WRITER_PASSWORD_ENV: "writer-password", ADMIN_PASSWORD_ENV: "admin-password"}
ENVIRONMENT_ANNOTATION = "blueprint/environment-hmac-sha256"
"""The pod annotation (the chart's `server.annotations`: values.yaml "Extra annotations to attach to
the server pods") that changes with the Secrets the server reads its environment from: a change
of either rolls the pod at once, never waiting for an unrelated restart (`environment_checksum`)."""

WRITER_DELETES = "gitlab/deploy-tokens/*"
"""The entries the writer may delete (metadata and every version: `DELETE <mount>/metadata/<path>`,
internal/builtin/logical/kv/path_metadata.go): phase3's deploy tokens, which its destroy under
preserveData=false revokes in GitLab and removes here (OpenBaoKv `delete_on_destroy`)."""
WRITER_POLICY_HCL = (
    f'path "{KV_MOUNT}/data/*" {{\n  capabilities = ["create", "read", "update"]\n}}\n'
    f'path "{KV_MOUNT}/metadata/{WRITER_DELETES}" {{\n  capabilities = ["delete"]\n}}\n'
)
"""What `OpenBaoKv` does and nothing more: read a secret's latest version, write a new one, and
delete phase3's deploy tokens on its destroy (providers/openbao_kv.py; it never lists, and deletes
nothing else)."""
ADMIN_POLICY_HCL = 'path "*" {\n  capabilities = ["create", "read", "update", "patch", "delete", "list", "sudo"]\n}\n'

TLS_SECRET = f"{RELEASE}-tls"
"""The Secret of OpenBao's certificate (for `openbao.<domain>`, from the platform CA) and key, which
the chart mounts at `/openbao/userconfig/<name>/` (templates/_helpers.tpl `openbao.mounts`, extraVolumes)."""
TLS_FOLDER = f"/openbao/userconfig/{TLS_SECRET}"
LISTENER = f"""\
listener "tcp" {{
  address = "[::]:8200"
  cluster_address = "[::]:8201"
  tls_cert_file = "{TLS_FOLDER}/tls.crt"
  tls_key_file = "{TLS_FOLDER}/tls.key"
}}
"""
"""TLS on the one API listener, the NodePort the host logs in through included: the host checks the
certificate against the platform CA and OpenBao's name before it sends a password (providers/openbao_api.py
`trusting`). No client in the cluster uses plain HTTP, so no second, plain listener
(website/content/docs/configuration/listener/tcp.mdx: `tls_cert_file`, `tls_key_file`)."""
STORAGE = """\
# The connection URL comes from BAO_PG_CONNECTION_URL.
storage "postgresql" {
}
"""


def _env(variable: str) -> dict[str, Any]:
    """A value the server reads from its environment during self-initialisation, or fails to start
    without (website/content/docs/concepts/profiles.mdx, the `env` source).
    """
    return {"eval_source": "env", "eval_type": "string", "env_var": variable, "require_present": True}


SelfInit = tuple[tuple[str, tuple[tuple[str, str, dict[str, Any]], ...]], ...]
"""(block, ((request, path, data), ...)), ...: `initialize` stanzas."""

SELF_INIT: SelfInit = (
    ("kv", (("mount-secret", f"sys/mounts/{KV_MOUNT}", {"type": "kv", "options": {"version": "2"}}),)),
    (
        "policies",
        (
            ("writer", f"sys/policies/acl/{WRITER_POLICY}", {"policy": WRITER_POLICY_HCL}),
            ("admin", f"sys/policies/acl/{ADMIN_POLICY}", {"policy": ADMIN_POLICY_HCL}),
        ),
    ),
    (
        "users",
        (
            ("userpass", "sys/auth/userpass", {"type": "userpass"}),
            (
                "writer",
                f"auth/userpass/users/{WRITER_USER}",
                # Short-lived: OpenBaoKv logs in for each call and revokes its token after it.
                {"password": _env(WRITER_PASSWORD_ENV), "token_policies": [WRITER_POLICY], "token_ttl": "15m", "token_max_ttl": "1h"},
            ),
            (
                "admin",
                f"auth/userpass/users/{ADMIN_USER}",
                # `bao login` keeps the token in ~/.vault-token: an hour, renewable up to a working day,
                # not OpenBao's default of 768 hours for a token with sudo on every path.
                {"password": _env(ADMIN_PASSWORD_ENV), "token_policies": [ADMIN_POLICY], "token_ttl": "1h", "token_max_ttl": "8h"},
            ),
        ),
    ),
)
"""The `initialize` stanzas, in order: (block, ((request, path, data), ...)); every request an
`update`. The server runs them once, on its first start over empty storage; `OpenBaoInit` applies
the same requests (`init_requests`) to a vault that exists already, so a later change here reaches
it too."""


def init_requests(self_init: SelfInit = SELF_INIT) -> list[dict[str, Any]]:
    """`SELF_INIT` as the requests `OpenBaoInit` applies, in order: {"path", "data"}, the passwords as
    the same `env` references (their values are a separate secret input).
    """
    return [{"path": path, "data": data} for _block, requests in self_init for _request, path, data in requests]


def _hcl(value: Any, indent: str) -> str:
    """`value` as an HCL expression (strings, numbers and booleans as JSON literals, which HCL reads alike)."""
    if isinstance(value, dict):
        inner = indent + "  "
        return "{\n" + "".join(f"{inner}{key} = {_hcl(item, inner)}\n" for key, item in value.items()) + indent + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_hcl(item, indent) for item in value) + "]"
    return json.dumps(value)


SEAL_HCL = f'seal "static" {{\n  current_key_id = "{SEAL_KEY_ID}"\n  current_key = "env://{SEAL_KEY_ENV}"\n}}\n'
"""The static seal (website/content/docs/configuration/seal/static.mdx): the key from the environment."""


def initialize_hcl(self_init: SelfInit = SELF_INIT) -> str:
    """The `initialize` stanzas of `self_init` (website/content/docs/configuration/self-init.mdx)."""
    blocks = []
    for block, requests in self_init:
        body = "".join(
            f'  request "{request}" {{\n    operation = "update"\n    path = "{path}"\n    data = {_hcl(data, "    ")}\n  }}\n'
            for request, path, data in requests
        )
        blocks.append(f'initialize "{block}" {{\n{body}}}\n')
    return "\n".join(blocks)


def server_config(*, listener: str = LISTENER, storage: str = STORAGE) -> str:
    """The whole server config; tests swap the listener and the storage, nothing else."""
    return f"ui = true\n\n{listener}\n{storage}\n{SEAL_HCL}\n{initialize_hcl()}"


def environment_checksum(bootstrap: dict[str, str], connection_url: str, tls: dict[str, str]) -> str:
    """An HMAC-SHA256 of the server's secret environment (bootstrap Secret, storage URL and the TLS
    Secret it reads its certificate from), keyed with the seal key: it changes with any of them, and
    tells nothing of any, even of a password a user chose by hand (without the key, no guess can be
    checked against it).
    """
    return keyed_digest(bootstrap[BOOTSTRAP_KEYS[SEAL_KEY_ENV]], {"bootstrap": bootstrap, "storage": connection_url, "tls": tls})


def release_digest(values: dict[str, Any]) -> str:
    """A digest of what the release deploys (chart, version, values): it changes whenever the pod may."""
    release = {"chart": "openbao", "version": versions.OPENBAO_CHART_VERSION, "values": values}
    return hashlib.sha256(json.dumps(release, sort_keys=True).encode()).hexdigest()


SERVER_CONFIG = server_config()


@dataclass(frozen=True, kw_only=True)
class OpenBaoArgs:
    namespace: str = "openbao"
    node_port: int | None
    """The NodePort phase1 maps from the host (kind), or None: a ClusterIP Service (an existing cluster)."""
    host_address: str
    """The API as the host reaches it, e.g. https://127.0.0.1:8200; on an existing cluster its in-cluster
    address, which `forward` reaches."""
    forward: Target | None = None
    """On an existing cluster, OpenBao's Service, which the host reaches through a port-forward
    (providers/cluster_access.py) rather than on 127.0.0.1; None on kind."""
    kube_context: str = ""
    """On an existing cluster, its context, for the kubectl calls of OpenBaoInit; "" on kind."""
    server_name: str
    """The name OpenBao's certificate is for (components/tls.py `openbao_server_name`)."""
    tls_cert_pem: pulumi.Input[str]
    """Its certificate, then the CA's, PEM."""
    tls_key_pem: pulumi.Input[str]
    """Its private key, PEM (secret)."""
    ca_cert_pem: pulumi.Input[str]
    """The platform CA's certificate, PEM: the pod's own `bao` checks the server with it."""
    ca_file: pulumi.Input[str]
    """Host path of the same certificate, which the host checks OpenBao's against (written before it resolves)."""
    postgres_host: pulumi.Input[str]
    postgres_namespace: str
    postgres_pod: str
    """Where OpenBao's storage lives, for the reset command a broken first start needs."""
    database: str
    role: str
    password: pulumi.Input[str]
    """The role's password (secret)."""
    database_ready: pulumi.Resource
    """OpenBao starts only once its database exists."""
    secrets_path: str
    """Host folder (under the data folder) of the seal key and the users' passwords, 0600 each."""
    secrets_folder: pulumi.Resource
    """What creates `secrets_path`."""
    kind_cluster_name: pulumi.Input[str]
    """For the kubectl commands an error prints, and the server's log an error quotes."""
    engine: str = DOCKER
    """The container engine kind runs on (components/engine.py), which `kind get kubeconfig` is told."""


def openbao_values(args: OpenBaoArgs, storage_secret: str, environment_digest: pulumi.Input[str]) -> dict[str, Any]:
    environment = [{"envName": "BAO_PG_CONNECTION_URL", "secretName": storage_secret, "secretKey": "connection-url"}]
    environment += [{"envName": env, "secretName": BOOTSTRAP_SECRET, "secretKey": key} for env, key in BOOTSTRAP_KEYS.items()]
    return {
        # HTTPS for the chart's probes, BAO_ADDR and port names (templates/_helpers.tpl `openbao.scheme`).
        "global": {"tlsDisable": False},
        "injector": {"enabled": False},
        "server": {
            "image": {"tag": versions.OPENBAO_IMAGE_TAG},
            # The server reads its environment once, at start: a changed Secret rolls the pod at once.
            "annotations": {ENVIRONMENT_ANNOTATION: environment_digest},
            # The chart's default, OnDelete, never rolls the pod and makes Helm skip waiting for it.
            "updateStrategyType": "RollingUpdate",
            # A checksum of the config on the pod: a change of the config alone rolls it too.
            "configAnnotation": True,
            "standalone": {"enabled": True, "config": SERVER_CONFIG},
            "dataStorage": {"enabled": False},
            "extraSecretEnvironmentVars": environment,
            # The pod's own `bao` (BAO_ADDR https://127.0.0.1:8200, the chart's) checks the server as the host does.
            "extraEnvironmentVars": {"BAO_CACERT": f"{TLS_FOLDER}/ca.crt", "BAO_TLS_SERVER_NAME": args.server_name},
            "extraVolumes": [{"type": "secret", "name": TLS_SECRET}],
            "readinessProbe": {"path": "/v1/sys/health?standbyok=true&sealedcode=204&uninitcode=204"},
            # kind: the NodePort phase1 maps to 127.0.0.1. An existing cluster: in the cluster alone (the host forwards).
            "service": {"type": "NodePort", "nodePort": args.node_port} if args.node_port is not None else {"type": "ClusterIP"},
            "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
            # No Kubernetes auth method here: its service account needs no cluster-wide TokenReview rights.
            "authDelegator": {"enabled": False},
            # The pod keeps the chart's default (non-root uid 100, RuntimeDefault seccomp:
            # templates/_helpers.tpl `server.statefulSet.securityContext.pod`); a container value
            # replaces the chart's, which only forbids privilege escalation.
            "statefulSet": {"securityContext": {"container": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}},
        },
    }


class OpenBao(pulumi.ComponentResource):
    """OpenBao, unsealed by its static key, self-initialised: KV v2 at `secret/`, users `blueprint` and `admin`."""

    address: pulumi.Output[str]
    """The API as the host reaches it."""
    cluster_address: pulumi.Output[str]
    """The API as pods reach it."""
    ca_file: pulumi.Output[str]
    """Host path of the platform CA's certificate, which OpenBao's comes from..."""
    server_name: str
    """... for this name: what a host client checks before it sends a password."""
    writer_username: str
    """The userpass user whose policy allows writing `secret/` and nothing else."""
    writer_password: pulumi.Output[str]
    """Its password (secret)."""
    admin_password_file: str
    """Host path of the admin user's password (0600); never stored in OpenBao itself."""
    writer_password_file: str
    """Host path of the writer's password (0600); never stored in OpenBao itself."""
    init: OpenBaoInit
    """The checked vault: what writes to it depends on this."""

    def __init__(self, name: str, args: OpenBaoArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("blueprint:index:OpenBao", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.writer_password_file = f"{args.secrets_path}/openbao-{WRITER_USER}-password"
        self.admin_password_file = f"{args.secrets_path}/openbao-{ADMIN_USER}-password"
        environment = self._bootstrap_secrets(name, args, child)
        namespace, digest_of_release, release = self._server(name, args, child, environment)
        self.init = self._init(name, args, child, environment, digest_of_release, release)
        self.address = pulumi.Output.from_input(args.host_address)
        self.cluster_address = pulumi.Output.concat("https://", RELEASE, ".", namespace.metadata.name, f".svc.cluster.local:{PORT}")
        self.ca_file = pulumi.Output.from_input(args.ca_file)
        self.server_name = args.server_name
        self.writer_username = WRITER_USER
        self.writer_password = environment[WRITER_PASSWORD_ENV]
        self.register_outputs(
            {
                "address": self.address,
                "cluster_address": self.cluster_address,
                "server_name": self.server_name,
                "writer_username": self.writer_username,
                "writer_password": self.writer_password,
                "admin_password_file": self.admin_password_file,
            }
        )

    def _bootstrap_secrets(self, name: str, args: OpenBaoArgs, child: pulumi.ResourceOptions) -> dict[str, pulumi.Output[str]]:
        """The seal key and the users' passwords, kept in the data folder: by the variable the server reads each from."""
        after_folder = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[args.secrets_folder]))
        seal_key = HostSecret(
            f"{name}-seal-key",
            HostSecretArgs(path=f"{args.secrets_path}/openbao-seal-key", kind="static-seal-key", length=SEAL_KEY_LENGTH),
            opts=after_folder,
        )
        writer_password = HostSecret(f"{name}-writer-password", HostSecretArgs(path=self.writer_password_file), opts=after_folder)
        admin_password = HostSecret(f"{name}-admin-password", HostSecretArgs(path=self.admin_password_file), opts=after_folder)
        return {
            SEAL_KEY_ENV: seal_key.value,
            WRITER_PASSWORD_ENV: writer_password.value,
            ADMIN_PASSWORD_ENV: admin_password.value,
        }

    def _server(
        self, name: str, args: OpenBaoArgs, child: pulumi.ResourceOptions, environment: dict[str, pulumi.Output[str]]
    ) -> tuple[k8s.core.v1.Namespace, pulumi.Output[str], k8s.helm.v3.Release]:
        """The namespace, the Secrets the server reads its environment from, and the chart's release."""
        # restricted: the chart's pod default (non-root, RuntimeDefault seccomp) and the container context set in openbao_values.
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace", metadata={"name": args.namespace, "labels": pod_security_labels("restricted")}, opts=child
        )
        connection_url = pulumi.Output.format(
            "postgres://{0}:{1}@{2}:5432/{3}?sslmode=require", args.role, args.password, args.postgres_host, args.database
        )
        storage = k8s.core.v1.Secret(
            f"{name}-storage",
            metadata={"name": f"{RELEASE}-storage", "namespace": namespace.metadata.name},
            string_data={"connection-url": connection_url},
            opts=child,
        )
        bootstrap_data = {key: environment[env] for env, key in BOOTSTRAP_KEYS.items()}  # HostSecret values, kept secret
        bootstrap = k8s.core.v1.Secret(
            f"{name}-bootstrap",
            metadata={"name": BOOTSTRAP_SECRET, "namespace": namespace.metadata.name},
            string_data=bootstrap_data,
            opts=child,
        )
        tls_data = {"tls.crt": args.tls_cert_pem, "tls.key": args.tls_key_pem, "ca.crt": args.ca_cert_pem}
        tls = k8s.core.v1.Secret(
            f"{name}-tls",
            metadata={"name": TLS_SECRET, "namespace": namespace.metadata.name},
            type="kubernetes.io/tls",
            string_data=tls_data,
            opts=child,
        )
        # Not secret: an HMAC keyed with the seal key tells nothing of what it digests (environment_checksum).
        every = pulumi.Output.all(pulumi.Output.all(**bootstrap_data), connection_url, pulumi.Output.all(**tls_data))
        digest = pulumi.Output.unsecret(every.apply(lambda every: environment_checksum(dict(every[0]), str(every[1]), dict(every[2]))))
        values = openbao_values(args, f"{RELEASE}-storage", digest)
        release = k8s.helm.v3.Release(
            f"{name}-chart",
            k8s.helm.v3.ReleaseArgs(
                name=RELEASE,
                chart="openbao",
                version=versions.OPENBAO_CHART_VERSION,
                repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=versions.OPENBAO_CHART_REPO),
                namespace=namespace.metadata.name,
                values=values,
                # OpenBaoInit waits for the server, and says why when it does not come (the module docstring).
                skip_await=True,
            ),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[storage, bootstrap, tls, args.database_ready])),
        )
        # Whatever rolls the pod changes the digest: the chart's values, the environment's digest among them.
        digest_of_release = digest.apply(
            lambda environment_digest: release_digest(openbao_values(args, f"{RELEASE}-storage", environment_digest))
        )
        return namespace, digest_of_release, release

    def _init(
        self,
        name: str,
        args: OpenBaoArgs,
        child: pulumi.ResourceOptions,
        environment: dict[str, pulumi.Output[str]],
        digest_of_release: pulumi.Output[str],
        release: k8s.helm.v3.Release,
    ) -> OpenBaoInit:
        """The check of the vault, and the requests self-initialisation cannot reach, once the release is up."""
        return OpenBaoInit(
            f"{name}-init",
            OpenBaoInitArgs(
                address=args.host_address,
                ca_file=args.ca_file,
                server_name=args.server_name,
                username=WRITER_USER,
                password=environment[WRITER_PASSWORD_ENV],
                password_file=self.writer_password_file,
                admin_username=ADMIN_USER,
                admin_password_file=self.admin_password_file,
                requests=init_requests(),
                # The passwords the requests name (`env`), never the seal key: the provider has no use for it.
                request_secrets={env: environment[env] for env in (WRITER_PASSWORD_ENV, ADMIN_PASSWORD_ENV)},
                release_digest=digest_of_release,
                mount=KV_MOUNT,
                seal_key_file=f"{args.secrets_path}/openbao-seal-key",
                kind_cluster_name=args.kind_cluster_name,
                engine=args.engine,
                forward=args.forward,
                kube_context=args.kube_context,
                namespace=args.namespace,
                pod=f"{RELEASE}-0",
                statefulset=RELEASE,
                postgres_namespace=args.postgres_namespace,
                postgres_pod=args.postgres_pod,
                database=args.database,
                table=STORAGE_TABLE,
            ),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[release])),
        )
