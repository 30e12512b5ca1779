"""GitLab Runner: registered through the runner API, installed with the gitlab-runner chart.

- Registration tokens are disabled in GitLab 19: the runner is an instance runner created through
  the runner API with the admin token, or, over a preserved GitLab, ours adopted with a new token
  (`providers/gitlab_runner.py`). The chart gets its `glrt-` authentication token from a Secret
  (keys `runner-token`, and `runner-registration-token` empty, which some chart versions still
  read). `unregisterRunners` is off: Pulumi owns the runner's life, not the chart; with
  preserveData a destroy leaves it in GitLab, for the next `up` to adopt.
- Kubernetes executor; the manager and every job on the nodes labelled for the runner; RBAC is
  the list the runner's Kubernetes executor docs give (pods, exec, attach, logs, secrets,
  services, events) in its own namespace, not the chart's default `*` on `*`.
- Our CA: the manager trusts it (`certsSecretName`, key `<gitlab host>.crt`) and hands it to jobs
  as `CI_SERVER_TLS_CA_FILE`.
- Image builds without kaniko: rootless BuildKit runs in the job's build container and needs
  seccomp and AppArmor relaxed for that container only (`Unconfined`: it creates user
  namespaces and mounts), not `privileged`. On a single-user laptop the jobs are the user's own
  code; the runner nodes are separate kind nodes, and nothing else runs there.
- The runner cache is MinIO's `runner-cache` bucket.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

import versions
from providers.gitlab_api import Connection
from providers.gitlab_runner import GitLabRunner, GitLabRunnerArgs

RBAC_RULES = [
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "delete", "get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["pods/exec", "pods/attach"], "verbs": ["create", "delete", "get", "patch"]},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get", "list"]},
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create", "delete", "get", "update"]},
    {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["services"], "verbs": ["create", "get"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["list", "watch"]},
]
"""What the Kubernetes executor needs (gitlab-runner docs/executors/kubernetes, 19.1)."""


@dataclass(frozen=True, kw_only=True)
class RunnerArgs:
    namespace: str = "gitlab-runner"
    gitlab_url: str
    gitlab_host: str
    token: pulumi.Input[str]
    """The admin token (secret), to create or adopt the runner."""
    ca_file: pulumi.Input[str]
    """The CA file on this machine that signs GitLab's certificate."""
    ca_pem: pulumi.Input[str]
    owner: str
    """`<pulumi project>/<stack>`: the runner's description names it, which makes the runner ours."""
    preserve_data: bool
    """Leave the runner in GitLab's database on destroy, which preserveData keeps."""
    node_label_key: str
    node_label: str
    s3_host: str
    """MinIO's in-cluster host:port, for the cache."""
    s3_access_key: pulumi.Input[str]
    s3_secret_key: pulumi.Input[str]
    concurrent: int = 4


def runner_config(args: RunnerArgs) -> str:
    """The runner's config.toml (`runners.config`, rendered by the chart with `tpl`)."""
    return f"""\
[[runners]]
  [runners.kubernetes]
    namespace = "{{{{.Release.Namespace}}}}"
    image = "{versions.JOB_DEFAULT_IMAGE}"
    privileged = false
    [runners.kubernetes.node_selector]
      "{args.node_label_key}" = "{args.node_label}"
    [runners.kubernetes.build_container_security_context.seccomp_profile]
      type = "Unconfined"
    [runners.kubernetes.build_container_security_context.app_armor_profile]
      type = "Unconfined"
  [runners.cache]
    Type = "s3"
    Shared = true
    [runners.cache.s3]
      ServerAddress = "{args.s3_host}"
      BucketName = "runner-cache"
      BucketLocation = "us-east-1"
      Insecure = true
"""


def runner_values(args: RunnerArgs, *, token_secret: str, certs_secret: str, cache_secret: str) -> dict[str, Any]:
    return {
        "gitlabUrl": f"{args.gitlab_url}/",
        "unregisterRunners": False,
        "concurrent": args.concurrent,
        "checkInterval": 3,
        "certsSecretName": certs_secret,
        "rbac": {"create": True, "rules": RBAC_RULES},
        "nodeSelector": {args.node_label_key: args.node_label},
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
        "runners": {"secret": token_secret, "cache": {"secretName": cache_secret}, "config": runner_config(args)},
    }


class Runner(pulumi.ComponentResource):
    """An instance runner; pass the Kubernetes provider in `opts`."""

    runner_id: pulumi.Output[str]
    """The runner's id, known once its chart is deployed: what waits for it waits for the Runner."""

    def __init__(self, name: str, args: RunnerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("blueprint:index:Runner", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        registered = GitLabRunner(
            f"{name}-registration",
            GitLabRunnerArgs(
                connection=Connection(args.gitlab_url, args.token, args.ca_file),
                description=f"{args.owner}: Kubernetes executor on the runner nodes",
                tag_list=("kubernetes", "blueprint"),
            ),
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=args.preserve_data),
        )
        namespace = k8s.core.v1.Namespace(f"{name}-namespace", metadata=k8s.meta.v1.ObjectMetaArgs(name=args.namespace), opts=child)

        def secret(suffix: str, data: dict[str, pulumi.Input[str]]) -> k8s.core.v1.Secret:
            return k8s.core.v1.Secret(
                f"{name}-{suffix}",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=f"gitlab-runner-{suffix}", namespace=namespace.metadata.name),
                string_data=data,
                opts=child,
            )

        token = secret("token", {"runner-token": registered.authentication_token, "runner-registration-token": ""})
        certs = secret("certs", {f"{args.gitlab_host}.crt": args.ca_pem})
        cache = secret("cache", {"accesskey": args.s3_access_key, "secretkey": args.s3_secret_key})
        release = k8s.helm.v3.Release(
            f"{name}-chart",
            k8s.helm.v3.ReleaseArgs(
                name="gitlab-runner",
                chart="gitlab-runner",
                version=versions.GITLAB_RUNNER_CHART_VERSION,
                repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=versions.GITLAB_CHART_REPO),
                namespace=namespace.metadata.name,
                values=runner_values(
                    args, token_secret="gitlab-runner-token", certs_secret="gitlab-runner-certs", cache_secret="gitlab-runner-cache"
                ),
            ),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[token, certs, cache])),
        )
        self.runner_id = pulumi.Output.all(registered.id, release.status).apply(lambda values: str(values[0]))
        self.register_outputs({"runner_id": self.runner_id})
