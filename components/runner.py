"""GitLab Runner: a runner of the platform's group, registered through the runner API, installed
with the gitlab-runner chart. phase2 runs two: the default one, and one for image builds.

- A group runner (`providers/gitlab_runner.py`): it takes the jobs of the `blueprint-apps` group's
  projects and of no other; created with the admin token, or, over a preserved GitLab, ours adopted
  with a new token. The chart reads its `glrt-` token from a Secret (`runner-token`, and an empty
  `runner-registration-token`, which some chart versions still read).
- The default runner takes every untagged job, in namespace `gitlab-runner` (Pod Security
  `baseline`): job containers without privilege escalation, seccomp `RuntimeDefault`, no
  ServiceAccount token. The image-build runner takes only jobs tagged `IMAGE_BUILD_TAG`, in
  `gitlab-runner-image-build` (`privileged`), and runs rootless BuildKit's image alone; its build
  container has seccomp and AppArmor `Unconfined` and may escalate privileges (BuildKit maps its
  user namespace with the setuid `newuidmap`); its helper and init containers stay confined. It is
  `ref_protected`; an admission policy narrows its namespace to that relaxation. Jobs have limits
  (JOB_RESOURCES), egress `runner_egress`'s; a new token restarts the manager (`secrets_digest`).
- The manager runs at `restricted`, with the executor's RBAC list in its namespace; it trusts our CA
  (none: its image's roots) and hands it to jobs as `CI_SERVER_TLS_CA_FILE`. The cache is MinIO's `runner-cache` bucket.

The config keys are gitlab-runner 19.1's (common/config.go at tag v19.1.0). Why each of these:
docs/design/decisions.md, entries 26, 27, 28 and 44.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

import versions
from components.digests import keyed_digest
from components.image_cache import job_mirror_endpoints
from components.pod_security import one_relaxed_container_policy, pod_security_labels
from components.runner_egress import JOB, MANAGER, ROLE_LABEL, Peer, RunnerEgress, RunnerEgressArgs
from components.storage import as_input
from providers.cluster_access import Target
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

IMAGE_BUILD_TAG = "blueprint-image-build"
"""The tag of the jobs that build images (the pipeline's `build-image`): only the image-build runner takes them."""
DEFAULT_NAMESPACE = "gitlab-runner"
IMAGE_BUILD_NAMESPACE = "gitlab-runner-image-build"
BUILD_CONTAINER = "build"
"""The name gitlab-runner gives a job pod's build container (executors/kubernetes `buildContainerName`)."""
SECRETS_DIGEST_ANNOTATION = "blueprint/secrets-hmac-sha256"
"""On the manager's pod: a keyed digest of what the chart reads once, at start (the runner token,
the cache keys, the CA), so that a new token (a re-registered runner) restarts the manager."""

JOB_RESOURCES = {
    "cpu_request": "100m",
    "cpu_limit": "2",
    "memory_request": "128Mi",
    "memory_limit": "1Gi",
    "helper_cpu_request": "50m",
    "helper_cpu_limit": "500m",
    "helper_memory_request": "64Mi",
    "helper_memory_limit": "256Mi",
    "service_cpu_request": "50m",
    "service_cpu_limit": "1",
    "service_memory_request": "64Mi",
    "service_memory_limit": "512Mi",
}
"""Every job's requests and limits, per container (gitlab-runner docs/executors/kubernetes: the
`[runners.kubernetes]` keys): one job cannot take the laptop. No `*_overwrite_max_allowed` is set, so
a job cannot raise them (KUBERNETES_CPU_LIMIT and friends are then ignored)."""
IMAGE_BUILD_RESOURCES = JOB_RESOURCES | {"cpu_request": "500m", "memory_request": "512Mi", "memory_limit": "2Gi"}
"""An image build's: BuildKit unpacks and compresses layers in memory."""


def registration(*, image_builds: bool) -> dict[str, Any]:
    """How GitLab registers each of the two runners, the design `blueprint verify` compares the live
    ones with: the image-build runner takes only IMAGE_BUILD_TAG's jobs, and as its build container is
    unconfined, only protected branches' and tags' (what Maintainers pushed), never any branch's.
    """
    return {
        "tag_list": (IMAGE_BUILD_TAG,) if image_builds else ("kubernetes", "blueprint"),
        "run_untagged": not image_builds,
        "access_level": "ref_protected" if image_builds else "not_protected",
    }


def runner_description(owner: str, *, image_builds: bool) -> str:
    """The description of `owner`'s runner (`<pulumi project>/<stack>`), the default one or the
    image-build one: what makes a runner ours, and how phase3's pre-flight finds the image-build one.
    """
    what = "image builds" if image_builds else "Kubernetes executor"
    return f"{owner}: {what} on the runner nodes"


NO_SERVICES = "no service container runs on this runner"
"""The image-build runner's only `allowed_services` entry, which no image reference can match (it
has spaces): no service image but the runner's own (BuildKit, which gitlab-runner 19.1 always lets
through, executors/kubernetes `verifyAllowedImages`), and that one confined. An empty list would
allow every service: gitlab-runner 19.1 checks an allowlist only when it is not empty
(common/allowed_images.go `VerifyAllowedImage`: "by default allow to override the image name")."""
BUILDKIT_USER = 1000
"""The uid and gid rootless BuildKit runs as (moby/buildkit Dockerfile, `rootless` stage:
`USER 1000:1000`). The image-build runner's build container runs as it whatever the job asks: a
`run_as_user` in the container's context wins over the job's `image: kubernetes: user`
(executors/kubernetes `pickSecurityContextID`), so `allowed_users`/`allowed_groups`, which only
vet the job's choice, would add nothing."""

MANAGER_SECURITY_CONTEXT = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": False,
    "runAsNonRoot": True,
    "privileged": False,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}
"""The manager's container: the chart's default (docs/install/kubernetes.md, values.yaml), and seccomp."""
MANAGER_POD_SECURITY_CONTEXT = {"runAsUser": 100, "fsGroup": 65533, "runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
"""The manager's pod: the chart's default user (100, the image's `gitlab-runner`), and seccomp."""


@dataclass(frozen=True, kw_only=True)
class HostAliases:
    """Names that a runner's pods resolve to one address, ahead of DNS: the manager's through the
    chart's `hostAliases` (the pod's), the jobs' through `[[runners.kubernetes.host_aliases]]`
    (gitlab-runner common/config.go `KubernetesHostAliases`: `ip`, `hostnames`).
    """

    address: pulumi.Input[str]
    """Envoy's Service's ClusterIP: kube-proxy sends it to Envoy's pods, which the egress policies
    allow, whatever the load balancer in front (an AWS one has a hostname, and no in-cluster shortcut)."""
    names: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class RunnerArgs:
    image_builds: bool = False
    """The image-build runner: it takes only jobs tagged IMAGE_BUILD_TAG, and their build container
    runs with seccomp and AppArmor `Unconfined`. Otherwise the default runner: every untagged job,
    confined (see the module docstring)."""
    namespace: str = ""
    """Where its manager and jobs run; by default `gitlab-runner`, or `gitlab-runner-image-build`."""
    gitlab_url: str
    gitlab_host: str
    token: pulumi.Input[str]
    """The admin token (secret), to create or adopt the runner."""
    ca_file: pulumi.Input[str]
    """The CA file on this machine that signs GitLab's certificate."""
    ca_pem: pulumi.Input[str] | None
    """The CA the manager and its jobs trust for GitLab (the certs Secret); None: their images' system
    roots (a brought certificate without `ca.crt`), and no certs Secret."""
    group_id: pulumi.Input[str]
    """The id of the group whose projects it serves (phase2's `blueprint-apps`)."""
    owner: str
    """`<pulumi project>/<stack>`: the runner's description names it, which makes the runner ours."""
    preserve_data: bool
    """Leave the runner in GitLab's database on destroy, which preserveData keeps."""
    node_selector: dict[str, str]
    """Where its manager and jobs run: the nodes phase1 labels for CI (kind), or `blueprint:jobNodeSelector`
    (an existing cluster); {}: any node, and no node selector anywhere."""
    api_server: tuple[tuple[str, int], ...] = ()
    """(address, port) of each of the API server's endpoints, which the manager and the deploy job
    may reach (an existing cluster: phase1 reads them); (): kind's, on its Docker network."""
    gitlab_forward: Target | None = None
    """On an existing cluster, Envoy's Service, which the registration reaches GitLab through (providers/cluster_access.py)."""
    host_aliases: HostAliases | None = None
    """On an existing cluster, the platform's names at Envoy's Service, in the manager's and the jobs'
    /etc/hosts; None on kind, whose CoreDNS resolves them (components/cluster_dns.py)."""
    s3_host: str
    """MinIO's in-cluster host:port, for the cache."""
    s3_access_key: pulumi.Input[str]
    s3_secret_key: pulumi.Input[str]
    concurrent: int = 4
    gitlab_peer: Peer
    """GitLab's web and registry endpoints as its pods may reach them (Envoy's pods)."""
    minio_peer: Peer
    """MinIO's S3 endpoint as its pods may reach it (the cache)."""
    docker_hub_mirror: str = ""
    """`<host>:<port>` of the image cache's Docker Hub mirror (plain HTTP), or "" for none: the
    image-build runner's jobs hand it to BuildKit, which pulls base images itself, not through the
    node's containerd (whose hosts.toml files send it to the mirror anyway)."""

    @property
    def kube_namespace(self) -> str:
        return self.namespace or (IMAGE_BUILD_NAMESPACE if self.image_builds else DEFAULT_NAMESPACE)

    @property
    def description(self) -> str:
        """Exactly ours: it names the owner, and which of the two runners it is."""
        return runner_description(self.owner, image_builds=self.image_builds)

    @property
    def tags(self) -> tuple[str, ...]:
        return tuple(registration(image_builds=self.image_builds)["tag_list"])


def _image_build_limits(args: RunnerArgs) -> str:
    """What the image-build runner runs at all: BuildKit, and no service container. Any job author
    can write the tag, so the runner, not the tag, decides what gets the relaxed build container:
    `allowed_images` is exactly the pipeline's BuildKit image, and so is the runner's default image
    (gitlab-runner lets its default and helper images through whatever the allowlist says:
    common/allowed_images.go, executors/kubernetes `verifyAllowedImages`). A job's script still
    runs in that image, unconfined: what the job runs is its author's code.
    """
    if not args.image_builds:
        return ""
    return f"""\
    allowed_images = ["{versions.BUILDKIT_IMAGE}"]
    allowed_services = ["{NO_SERVICES}"]
"""


DOCKER_HUB_MIRROR_VARIABLE = "BLUEPRINT_DOCKER_HUB_MIRROR"
"""The job variable that names the image cache's Docker Hub mirror to the pipeline's BuildKit
(apps/shared-code/templates/pipeline.yml writes it into buildkitd.toml)."""


def _job_environment(args: RunnerArgs) -> str:
    if not (args.image_builds and args.docker_hub_mirror):
        return ""
    return f'  environment = ["{DOCKER_HUB_MIRROR_VARIABLE}={args.docker_hub_mirror}"]\n'


def _build_container_context(args: RunnerArgs) -> str:
    if not args.image_builds:
        return ""
    return f"""\
    [runners.kubernetes.build_container_security_context]
      allow_privilege_escalation = true
      run_as_user = {BUILDKIT_USER}
      run_as_group = {BUILDKIT_USER}
      run_as_non_root = true
      [runners.kubernetes.build_container_security_context.seccomp_profile]
        type = "Unconfined"
      [runners.kubernetes.build_container_security_context.app_armor_profile]
        type = "Unconfined"
"""


def _node_selector(args: RunnerArgs) -> str:
    """The jobs' node selector table, or nothing when they may run on any node."""
    if not args.node_selector:
        return ""
    entries = "".join(f"      {json.dumps(key)} = {json.dumps(value)}\n" for key, value in args.node_selector.items())
    return f"    [runners.kubernetes.node_selector]\n{entries}"


def _resources(args: RunnerArgs) -> str:
    resources = IMAGE_BUILD_RESOURCES if args.image_builds else JOB_RESOURCES
    return "".join(f'    {key} = "{value}"\n' for key, value in resources.items())


def _host_aliases(args: RunnerArgs, address: str) -> str:
    if args.host_aliases is None:
        return ""
    names = json.dumps(list(args.host_aliases.names))
    return f"    [[runners.kubernetes.host_aliases]]\n      ip = {json.dumps(address)}\n      hostnames = {names}\n"


def runner_config(args: RunnerArgs, address: str = "") -> str:
    """The runner's config.toml (`runners.config`, rendered by the chart with `tpl`); `address`: the
    host aliases' (`args.host_aliases`), once known.
    """
    image = versions.BUILDKIT_IMAGE if args.image_builds else versions.JOB_DEFAULT_IMAGE
    return f"""\
[[runners]]
{_job_environment(args)}\
  [runners.kubernetes]
    namespace = "{{{{.Release.Namespace}}}}"
    image = "{image}"
    privileged = false
    allow_privilege_escalation = false
    automount_service_account_token = false
{_resources(args)}\
{_image_build_limits(args)}\
    [runners.kubernetes.pod_labels]
      "{ROLE_LABEL}" = "{JOB}"
{_node_selector(args)}\
    [runners.kubernetes.pod_security_context.seccomp_profile]
      type = "RuntimeDefault"
{_build_container_context(args)}\
{_host_aliases(args, address)}\
  [runners.cache]
    Type = "s3"
    Shared = true
    [runners.cache.s3]
      ServerAddress = "{args.s3_host}"
      BucketName = "runner-cache"
      BucketLocation = "us-east-1"
      Insecure = true
"""


def secrets_digest(token: str, access_key: str, secret_key: str, ca_pem: str) -> str:
    """HMAC-SHA256 of what the manager reads once at start, keyed with its runner token: it changes
    with any of them, and, keyed, tells nothing of them to whoever reads the pod, nor lets anyone
    without the token test a guess at the cache keys; so it can be a plain value (a secret one would
    hide the release's whole values in every diff).
    """
    return keyed_digest(token, [access_key, secret_key, ca_pem])


def runner_values(
    args: RunnerArgs, *, token_secret: str, certs_secret: str, cache_secret: str, secrets_digest: pulumi.Input[str] = ""
) -> dict[str, Any]:
    aliases = args.host_aliases
    config: pulumi.Input[str] = runner_config(args)
    if aliases is not None:
        config = pulumi.Output.from_input(aliases.address).apply(lambda address: runner_config(args, address))
    return {
        "gitlabUrl": f"{args.gitlab_url}/",
        # Pulumi owns the runner's life, not the chart: with preserveData a destroy leaves it in GitLab, for the next `up` to adopt.
        "unregisterRunners": False,
        "concurrent": args.concurrent,
        "checkInterval": 3,
        **({"certsSecretName": certs_secret} if certs_secret else {}),
        "rbac": {"create": True, "rules": RBAC_RULES},
        **({"nodeSelector": dict(args.node_selector)} if args.node_selector else {}),
        "securityContext": MANAGER_SECURITY_CONTEXT,
        "podSecurityContext": MANAGER_POD_SECURITY_CONTEXT,
        "podLabels": {ROLE_LABEL: MANAGER},
        "podAnnotations": {SECRETS_DIGEST_ANNOTATION: secrets_digest},
        **({"hostAliases": [{"ip": aliases.address, "hostnames": list(aliases.names)}]} if aliases is not None else {}),
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
        "runners": {"secret": token_secret, "cache": {"secretName": cache_secret}, "config": config},
    }


class Runner(pulumi.ComponentResource):
    """A runner of the group, in its own namespace; pass the Kubernetes provider in `opts`."""

    runner_id: pulumi.Output[str]
    """The runner's id, known once its chart is deployed: what waits for it waits for the Runner."""
    token: pulumi.Output[str]
    """Its authentication token (secret), as registered: mirrored into OpenBao (credentials.py)."""

    def __init__(self, name: str, args: RunnerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("blueprint:index:Runner", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        registered = GitLabRunner(
            f"{name}-registration",
            GitLabRunnerArgs(
                connection=Connection(args.gitlab_url, args.token, args.ca_file, args.gitlab_forward),
                group_id=args.group_id,
                description=args.description,
                tag_list=args.tags,
                run_untagged=registration(image_builds=args.image_builds)["run_untagged"],
                access_level=registration(image_builds=args.image_builds)["access_level"],
            ),
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=args.preserve_data),
        )
        # The strictest Pod Security level its jobs pass: job images often run as root, which
        # `restricted` refuses (`baseline`); an image build's Unconfined seccomp and AppArmor pass
        # only `privileged`.
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=args.kube_namespace, labels=pod_security_labels("privileged" if args.image_builds else "baseline")
            ),
            opts=child,
        )

        def secret(suffix: str, data: dict[str, pulumi.Input[str]]) -> k8s.core.v1.Secret:
            return k8s.core.v1.Secret(
                f"{name}-{suffix}",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=f"gitlab-runner-{suffix}", namespace=namespace.metadata.name),
                string_data=data,
                opts=child,
            )

        # What must hold before any of its pods runs: the image-build namespace's admission policy, and the egress policies.
        before_pods: list[pulumi.Resource] = [_image_build_admission(name, args.kube_namespace, child)] if args.image_builds else []
        before_pods += RunnerEgress(
            f"{name}-egress",
            RunnerEgressArgs(
                namespace=namespace.metadata.name,
                gitlab=args.gitlab_peer,
                minio=args.minio_peer,
                jobs_reach_api=not args.image_builds,
                api_server=args.api_server,
                jobs_pull_images=args.image_builds,
                mirrors=tuple(job_mirror_endpoints({"docker.io": args.docker_hub_mirror} if args.image_builds else {})),
            ),
            opts=child,
        ).policies
        token = secret("token", {"runner-token": registered.authentication_token, "runner-registration-token": ""})
        certs = [secret("certs", {f"{args.gitlab_host}.crt": args.ca_pem})] if args.ca_pem is not None else []
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
                    args,
                    token_secret="gitlab-runner-token",
                    certs_secret="gitlab-runner-certs" if certs else "",
                    cache_secret="gitlab-runner-cache",
                    secrets_digest=pulumi.Output.unsecret(
                        pulumi.Output.all(registered.authentication_token, args.s3_access_key, args.s3_secret_key, args.ca_pem or "").apply(
                            lambda values: secrets_digest(*(str(value) for value in values))
                        )
                    ),
                ),
            ),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[token, *certs, cache, *before_pods])),
        )
        self.runner_id = pulumi.Output.all(registered.id, release.status).apply(lambda values: str(values[0]))
        self.token = registered.authentication_token
        self.register_outputs({"runner_id": self.runner_id})


def _image_build_admission(name: str, namespace: str, child: pulumi.ResourceOptions) -> pulumi.Resource:
    """The image-build namespace's `privileged` Pod Security level, narrowed: a policy that allows its
    pods exactly the build container's relaxation (BuildKit's image, unconfined, as `runner_config`
    sets it) and nothing else `baseline` refuses.
    """
    policy_name = f"blueprint-{namespace}-pods"
    variables, validations = one_relaxed_container_policy(namespace=namespace, container=BUILD_CONTAINER, image=versions.BUILDKIT_IMAGE)
    policy = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
        f"{name}-pod-policy",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=policy_name),
        spec=as_input(
            {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                    "resourceRules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE", "UPDATE"],
                            "resources": ["pods", "pods/ephemeralcontainers"],
                        }
                    ],
                },
                "variables": variables,
                "validations": validations,
            }
        ),
        opts=child,
    )
    return k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
        f"{name}-pod-policy-binding",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=policy_name),
        spec=as_input({"policyName": policy.metadata.name, "validationActions": ["Deny"]}),
        opts=child,
    )
