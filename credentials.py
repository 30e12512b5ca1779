"""Every credential the platform generates: one catalogue, for the stacks and for `blueprint secrets`.

Pure data (no Pulumi import): phase2 and phase3 mirror each entry that has an OpenBao `path` into
OpenBao's KV v2 engine at `secret/<path>` (`providers/openbao_kv.py`, as the `blueprint` user), the
value under `key`, and `blueprint secrets` lists them all and shows one (`--show NAME`).

The layout under `secret/`: one area per service (`postgres/`, `redis`, `minio/`, `gitlab/`, `tls/`,
`ci/`), then the thing. The six paths written before this catalogue existed (`postgres/gitlab`,
`postgres/openbao`, `redis`, `minio/gitlab`, `minio/runner-cache`, `gitlab/root`,
`gitlab/bootstrap/admin_token`) are kept as they were, with the same keys, so that scripts reading
them keep working.

Three credentials are NOT in OpenBao: the ones that open OpenBao itself. Its seal key would sit
inside the vault it unseals (useless there: a sealed vault gives nothing back); the `admin`
password would be readable by `blueprint` (its policy reads every path under `secret/`), which
could then log in as `admin`; and `blueprint`'s own password is what logs in to read the rest.
They live only in their host files (0600) under `<dataDir>/platform/secrets/`.

`origins` name the resources of the offline plan (`<type> <name>`) whose value the entry holds:
the test that compares the catalogue with the plans reads them (tests/test_credentials.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

KV_MOUNT = "secret"
"""The KV v2 mount every entry is written to (components/openbao.py KV_MOUNT)."""
SECRETS_SUBDIR = "platform/secrets"
"""Where the host files are, under the data folder."""


@dataclass(frozen=True, kw_only=True)
class Credential:
    name: str
    """Stable kebab-case name: what `blueprint secrets --show` takes."""
    what: str
    """One line for a person."""
    stack: str
    """The phase stack that makes it (`dev` makes them all)."""
    path: str | None
    """Its KV path under `secret/`, or None when it is not in OpenBao (`not_in_openbao` says why)."""
    key: str
    """The key of that KV entry (or of nothing, for a host file alone) that holds the value."""
    file: str | None = None
    """Its host file's name under `<dataDir>/platform/secrets/`, when it has one."""
    not_in_openbao: str | None = None
    """Why it is kept out of OpenBao (only for entries without a path)."""
    origins: tuple[str, ...] = ()
    """The plan's resources (`<type> <name>`) whose value this is."""

    @property
    def location(self) -> str:
        """Where it is, for a person: `secret/<path>` (key), the host file, or the command that prints it."""
        if self.path is not None:
            return f"{KV_MOUNT}/{self.path} ({self.key})"
        if self.file is not None:
            return f"not in OpenBao: {SECRETS_SUBDIR}/{self.file}"
        return f"not in OpenBao: {KIND_KUBECONFIG_COMMAND}"


KIND_KUBECONFIG_COMMAND = "uv run blueprint kubeconfig"
"""What prints the one credential kind keeps (the cluster's admin kubeconfig)."""
HOST_SECRET = "pulumi-python:dynamic/blueprint:HostSecret"
RANDOM_PASSWORD = "random:index/randomPassword:RandomPassword"

PLATFORM: tuple[Credential, ...] = (
    Credential(
        name="kind-admin-kubeconfig",
        what="the kind cluster's admin kubeconfig (cluster-admin)",
        stack="phase1",
        path=None,
        key="",
        not_in_openbao="it is root on the cluster OpenBao runs in, and kind itself keeps it",
        origins=("command:local:Command kind-cluster",),
    ),
    Credential(
        name="postgres-gitlab-password",
        what="PostgreSQL password of role gitlab (GitLab's database)",
        stack="phase2",
        path="postgres/gitlab",
        key="password",
        origins=(f"{RANDOM_PASSWORD} postgres-gitlab-password",),
    ),
    Credential(
        name="postgres-openbao-password",
        what="PostgreSQL password of role openbao (OpenBao's storage)",
        stack="phase2",
        path="postgres/openbao",
        key="password",
        origins=(f"{RANDOM_PASSWORD} postgres-openbao-password",),
    ),
    Credential(
        name="redis-password",
        what="Redis (Valkey) password",
        stack="phase2",
        path="redis",
        key="password",
        origins=(f"{RANDOM_PASSWORD} redis-password",),
    ),
    Credential(
        name="minio-root-user",
        what="MinIO's root user name (MinIO administration by hand)",
        stack="phase2",
        path="minio/root",
        key="user",
        file="minio-root-user",
        origins=(f"{HOST_SECRET} minio-root-user",),
    ),
    Credential(
        name="minio-root-password",
        what="MinIO's root password",
        stack="phase2",
        path="minio/root",
        key="password",
        file="minio-root-password",
        origins=(f"{HOST_SECRET} minio-root-password",),
    ),
    Credential(
        name="minio-gitlab-secret-key",
        what="secret key of MinIO user gitlab (GitLab's buckets)",
        stack="phase2",
        path="minio/gitlab",
        key="secretKey",
        file="minio-user-gitlab",
        origins=(f"{HOST_SECRET} minio-user-gitlab",),
    ),
    Credential(
        name="minio-runner-cache-secret-key",
        what="secret key of MinIO user runner-cache (the Runners' cache bucket)",
        stack="phase2",
        path="minio/runner-cache",
        key="secretKey",
        file="minio-user-runner-cache",
        origins=(f"{HOST_SECRET} minio-user-runner-cache",),
    ),
    Credential(
        name="gitlab-root-password",
        what="GitLab root's password",
        stack="phase2",
        path="gitlab/root",
        key="password",
        file="gitlab-root-password",
        origins=(f"{HOST_SECRET} gitlab-root-password",),
    ),
    Credential(
        name="gitlab-admin-token",
        what="GitLab root's personal access token (glpat-...; its file keeps it without the prefix)",
        stack="phase2",
        path="gitlab/bootstrap/admin_token",
        key="token",
        file="gitlab-admin-token",
        origins=(f"{HOST_SECRET} gitlab-admin-token-value", "pulumi-python:dynamic/gitlab:AdminToken gitlab-admin-token"),
    ),
    Credential(
        name="gitlab-glab-token",
        what="glab's personal access token of GitLab root (api scope, 30 days, made anew by GitLab on renewal; its file keeps it whole)",
        stack="phase2",
        path="gitlab/glab/token",
        key="token",
        file="gitlab-glab-token",
        origins=("pulumi-python:dynamic/gitlab:GlabToken gitlab-glab-token",),
    ),
    Credential(
        name="gitlab-rails-secrets",
        what="GitLab's rails secrets (secrets.yml: the keys of its encrypted columns)",
        stack="phase2",
        path="gitlab/rails-secrets",
        key="secrets.yml",
        file="gitlab-rails-secrets.yml",
        origins=(f"{HOST_SECRET} gitlab-rails-secrets",),
    ),
    Credential(
        name="gitlab-ssh-host-keys",
        what="GitLab SSH's host keys (JSON: file name -> key)",
        stack="phase2",
        path="gitlab/ssh-host-keys",
        key="hostKeys",
        file="gitlab-ssh-host-keys.json",
        origins=(f"{HOST_SECRET} gitlab-ssh-host-keys",),
    ),
    Credential(
        name="platform-ca-key",
        what="the platform CA's private key (PEM)",
        stack="phase2",
        path="tls/ca",
        key="privateKey",
        file="platform-ca-name-constrained.key",
        origins=(f"{HOST_SECRET} tls-ca-key",),
    ),
    Credential(
        name="gateway-tls-key",
        what="private key of the gateway's wildcard TLS certificate (PEM)",
        stack="phase2",
        path="tls/wildcard",
        key="privateKey",
        origins=("tls:index/privateKey:PrivateKey tls-wildcard-key",),
    ),
    Credential(
        name="openbao-tls-key",
        what="private key of OpenBao's TLS certificate, for openbao.<domain> (PEM)",
        stack="phase2",
        path="tls/openbao",
        key="privateKey",
        origins=("tls:index/privateKey:PrivateKey tls-openbao-key",),
    ),
    Credential(
        name="runner-token",
        what="authentication token (glrt-...) of the default Runner",
        stack="phase2",
        path="gitlab/runners/default",
        key="token",
        origins=("pulumi-python:dynamic/gitlab:Runner runner-registration",),
    ),
    Credential(
        name="image-build-runner-token",
        what="authentication token (glrt-...) of the image-build Runner",
        stack="phase2",
        path="gitlab/runners/image-build",
        key="token",
        origins=("pulumi-python:dynamic/gitlab:Runner image-build-runner-registration",),
    ),
    Credential(
        name="ci-deploy-kubeconfig",
        what="CI's deploy kubeconfig (account ci-deployer, namespace apps; its token under key token)",
        stack="phase2",
        path="ci/deploy-kubeconfig",
        key="kubeconfig",
        origins=("pulumi-python:dynamic/blueprint:DeployKubeconfig ci-access-kubeconfig",),
    ),
    Credential(
        name="openbao-seal-key",
        what="OpenBao's static seal key (opens OpenBao's storage)",
        stack="phase2",
        path=None,
        key="",
        file="openbao-seal-key",
        not_in_openbao="a seal key inside the vault it unseals opens nothing",
        origins=(f"{HOST_SECRET} openbao-seal-key",),
    ),
    Credential(
        name="openbao-admin-password",
        what="password of OpenBao's user admin (every path, sudo)",
        stack="phase2",
        path=None,
        key="",
        file="openbao-admin-password",
        not_in_openbao="user blueprint reads all of secret/, and would become admin with it",
        origins=(f"{HOST_SECRET} openbao-admin-password",),
    ),
    Credential(
        name="openbao-blueprint-password",
        what="password of OpenBao's user blueprint (reads and writes secret/)",
        stack="phase2",
        path=None,
        key="",
        file="openbao-blueprint-password",
        not_in_openbao="it is the login that reads OpenBao: it must be had before OpenBao answers",
        origins=(f"{HOST_SECRET} openbao-writer-password",),
    ),
)

DEPLOY_TOKEN_SUFFIX = "-deploy-token"
"""No platform entry's name ends with it, so a project's deploy token never takes a platform name."""


def deploy_token(project: str) -> Credential:
    """The entry of the deploy token phase3 makes for `project`, a project of the apps manifest that
    builds an image (components/gitlab_projects.py: the cluster pulls that image with it).
    """
    return Credential(
        name=f"{project}{DEPLOY_TOKEN_SUFFIX}",
        what=f"the {project} project's deploy token (read_registry: the cluster pulls its image with it)",
        stack="phase3",
        path=f"gitlab/deploy-tokens/{project}",
        key="token",
        origins=(f"pulumi-python:dynamic/gitlab:DeployToken apps-{project}-deploy-token",),
    )


def catalogue(building: Sequence[str]) -> tuple[Credential, ...]:
    """Every credential: the platform's, then a deploy token for each project of `building` (the
    apps manifest's projects that build an image, so the list follows the manifest a user edits).
    """
    return (*PLATFORM, *(deploy_token(project) for project in building))


def in_stack(stack: str, building: Sequence[str]) -> tuple[Credential, ...]:
    """The entries `stack` makes (`dev`: all of them)."""
    return tuple(credential for credential in catalogue(building) if stack == "dev" or credential.stack == stack)
