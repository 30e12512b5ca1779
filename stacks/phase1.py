"""phase1: the kind cluster, its data folder and, optionally, Headlamp; on an existing cluster, the data
folder and what phase1 reads of the cluster (components/existing_cluster.py), nothing on it.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi_command import local

import versions
from components import engine, image_cache, kind_cluster
from components.kind_cluster import KindCluster, KindClusterArgs
from stacks import outputs, runtime
from stacks.config.paths import folder_owner, this_checkout
from stacks.config.phases import Phase1Config, load_phase1
from stacks.migrations import layout


def cluster_args(
    config: Phase1Config,
    *,
    owner: str,
    data_layout: str,
    inner_owners: tuple[str, ...] = (),
    stack_file: str = "",
    container_engine: str | None = None,
) -> KindClusterArgs:
    """The kind cluster phase1's config describes (the CLI derives the cluster's identity from it), on
    `container_engine`, or, None, the engine the config means where this runs (components/engine.py).
    """
    return KindClusterArgs(
        engine=container_engine or runtime.current().engine.chosen(config.cluster.container_engine),
        stack_file=stack_file,
        cluster_name=config.cluster_name,
        gitlab_nodes=config.gitlab_nodes,
        runner_nodes=config.runner_nodes,
        data_dir=config.data_dir,
        preserve_data=config.preserve_data,
        http_port=config.ports.http,
        https_port=config.ports.https,
        ssh_port=config.ports.ssh,
        openbao_port=config.ports.openbao,
        api_server_port=config.ports.api_server,
        image_cache_dir=config.image_cache_dir,
        owner=owner,
        data_layout=data_layout,
        inner_owners=inner_owners,
    )


KIND_KUBECONFIG = 'kind get kubeconfig --name "$KIND_CLUSTER_NAME" || true'
"""The command `kind_kubeconfig` runs, the cluster's name in its environment. `|| true`: a failed kind
(not on PATH, Docker stopped, no such cluster) becomes the RunError that says what to check, not a
failed invoke with its traceback."""


def engine_of(inputs: Mapping[str, Any]) -> str:
    """The container engine phase1 runs kind on, from its outputs (only a non-Docker phase1 exports it)."""
    return str(inputs.get(outputs.CONTAINER_ENGINE, engine.DOCKER))


def kind_kubeconfig(cluster_name: str, container_engine: str = engine.DOCKER) -> pulumi.Output[str]:
    """The admin kubeconfig of phase1's kind cluster `cluster_name` (secret), as kind prints it on
    this run: how a stack that does not run phase1 gets it, since no stack exports it.

    An invoke (pulumi-command's `local.run`), so it is asked on every preview and up, and kept
    nowhere but in the config of the provider that takes it. For one cluster it is the same text on
    every run: kind prints the `admin.conf` kubeadm wrote on the control-plane node when the cluster
    was made, with its server set to the host's end of the pinned `apiServerPort`
    (kubernetes-sigs/kind pkg/cluster/internal/kubeconfig/kubeconfig.go, `get`). So a provider that
    takes it sees no diff until the cluster is replaced; and the cluster's own command prints it with
    the same `kind get kubeconfig`.
    """
    # Nothing is logged (pulumi-command logs stdout unless told not to: provider/pkg/provider/local/logging.go):
    # stdout is the kubeconfig; what kind says on stderr goes into the error below.
    environment = {"KIND_CLUSTER_NAME": cluster_name, **engine.kind_environment(container_engine)}
    ran = local.run_output(command=KIND_KUBECONFIG, environment=environment, logging=local.Logging.NONE)

    def checked(result: local.RunResult) -> str:
        if not result.stdout.strip():
            said = (result.stderr or "").strip()[-500:] or "it printed nothing"
            command = f"kind get kubeconfig --name {shlex.quote(cluster_name)}"
            raise pulumi.RunError(
                f"phase2 reads the admin kubeconfig of phase1's kind cluster {cluster_name} from kind, and `{command}` "
                f"gave none: {said}. {engine.LABELS[container_engine]} must run and kind be on PATH (`uv run blueprint doctor` checks "
                f"both), and "
                f"`kind get clusters` must list {cluster_name}."
            )
        return result.stdout

    return pulumi.Output.secret(ran.apply(checked))


def cluster_kubeconfig(inputs: Mapping[str, Any]) -> tuple[pulumi.Input[str], dict[str, Any]]:
    """The admin kubeconfig of the cluster phase1's outputs `inputs` describe (secret), for phase2's
    provider, and that provider's arguments that go with it. kind's: in `dev`, its cluster command's,
    in this same graph; in a phase2 stack, kind's answer on this run (`kind_kubeconfig`). An existing
    cluster's: its context's, as kubectl resolves it on this run (components/existing_cluster.py), with
    the context named, and upserts on: a namespace or claim a destroy kept (preserveData) is taken
    over by the next `up`, where pulumi-kubernetes (>= 4.29) would refuse it as AlreadyExists
    (pulumi_kubernetes Provider `upsert_existing_objects`; docs/design/decisions.md). A namespace of
    phase2's name that is not blueprint's is refused first (`existing`), never taken over.
    """
    if outputs.on_existing(inputs):
        from components.existing_cluster import context_kubeconfig

        context = str(inputs[outputs.KUBE_CONTEXT])
        return context_kubeconfig(context), {"context": context, "upsert_existing_objects": True}
    name = str(inputs[outputs.CLUSTER_NAME])
    return inputs[outputs.KUBECONFIG] if outputs.KUBECONFIG in inputs else kind_kubeconfig(name, engine_of(inputs)), {}


ROOTFUL_FIX = (
    "run Podman rootful: on Linux, the root service (`sudo systemctl enable --now podman.socket`, then "
    "`export CONTAINER_HOST=unix:///run/podman/podman.sock` with that socket made yours, docs/guide/podman.md); on macOS, "
    "`podman machine stop`, `podman machine set --rootful`, `podman machine start`; or use Docker (blueprint:containerEngine: docker)"
)
"""The fix for a rootless Podman: said by phase1 and by the doctor."""


def preserve_data_file(stack: str) -> str:
    """The stack file whose `blueprint:preserveData` decides what a destroy of `stack` does with the
    data: its own (phase1, dev), or that of the stack it takes preserveData from (phase2's: phase1's,
    where `blueprint destroy --preserve-data` and `--wipe-data` set it too).
    """
    from stacks.config import PROJECT_DIR
    from stacks.config.schema import stack_reads

    while not stack_reads(stack, "blueprint:preserveData") and stack in outputs.UPSTREAM_STACK:
        stack = outputs.UPSTREAM_STACK[stack]
    # Where Pulumi keeps it, beside Pulumi.yaml (never a test's stand-in folder: the plan stays the same).
    return str(PROJECT_DIR / f"Pulumi.{stack}.yaml")


def deploy(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Build phase1 from the stack's config; phase1 has no upstream, so `inputs` is empty."""
    config = load_phase1()
    # The stacks that claim folders in this data folder: phase2 over phase1 (`dev` claims its own as itself).
    inner_owners = tuple(folder_owner(stack) for stack in outputs.stacks_over(pulumi.get_stack()))
    if config.cluster.existing:
        return existing(config, inner_owners)  # no container engine on this machine is asked: none is needed
    container_engine = runtime.current().engine.chosen(config.cluster.container_engine)
    # Before anything is registered: kind on a rootless engine would fail half-way through the `up`.
    if refusal := runtime.current().engine.refusal(container_engine):
        raise pulumi.RunError(f"blueprint:containerEngine: {container_engine} here runs rootless, and {refusal}; {ROOTFUL_FIX}")
    args = cluster_args(
        config,
        owner=folder_owner(),
        data_layout=layout(pulumi.get_stack()),
        inner_owners=inner_owners,
        stack_file=preserve_data_file(pulumi.get_stack()),
        container_engine=container_engine,
    )
    cluster = KindCluster("kind", args)
    in_stack: dict[str, Any] = {}
    if config.headlamp:
        # Imported here: pulumi_kubernetes' helm module is costly to load, and only Headlamp needs it.
        import pulumi_kubernetes as k8s

        from components.headlamp import Headlamp, HeadlampArgs

        # The same identity as the stack exports, through an input the cluster command echoes: known in
        # every preview, and a dependency on the cluster. A plain value would leave the provider out of
        # what the engine deletes before a delete-first replacement of the cluster (pulumi/pulumi
        # step_generator.go `calculateDependentReplacements`, pulumi-kubernetes `DiffConfig`), and the
        # release's own delete would then fail, on every run, on a cluster already gone.
        identity = cluster.cluster.triggers.apply(lambda _: cluster.cluster_id)
        provider = k8s.Provider("kind-kubernetes", kubeconfig=cluster.kubeconfig, cluster_identifier=identity)
        # Not `deleted_with` the cluster: when the cluster's delete refuses (phase2 still on it), the
        # engine would already have dropped the release from state, and the next `up` could not
        # install it again over the one still in the cluster. Helm uninstalls it first, quickly.
        headlamp = Headlamp("headlamp", HeadlampArgs(admin=config.headlamp_admin), opts=pulumi.ResourceOptions(providers=[provider]))
        in_stack[outputs.HEADLAMP_DASHBOARD] = headlamp
    return {
        outputs.CLUSTER_NAME: config.cluster_name,
        outputs.CLUSTER_ID: cluster.cluster_id,
        outputs.DATA_DIR: str(config.data_dir),
        outputs.NODE_DATA_PATH: kind_cluster.NODE_DATA_PATH,
        outputs.VOLUMES_NODE_PATH: f"{kind_cluster.NODE_DATA_PATH}/{kind_cluster.VOLUMES_SUBDIR}",
        outputs.REGISTRY_HOSTS_DIR: str(config.data_dir / kind_cluster.REGISTRY_HOSTS_SUBDIR),
        outputs.PRESERVE_DATA: config.preserve_data,
        outputs.DOMAIN: config.domain,
        outputs.HTTP_PORT: config.ports.http,
        outputs.HTTPS_PORT: config.ports.https,
        outputs.SSH_PORT: config.ports.ssh,
        outputs.OPENBAO_PORT: config.ports.openbao,
        outputs.API_SERVER_PORT: config.ports.api_server,
        outputs.GATEWAY_HTTP_NODE_PORT: kind_cluster.NODE_PORTS.gateway_http,
        outputs.GATEWAY_HTTPS_NODE_PORT: kind_cluster.NODE_PORTS.gateway_https,
        outputs.GATEWAY_SSH_NODE_PORT: kind_cluster.NODE_PORTS.gateway_ssh,
        outputs.OPENBAO_NODE_PORT: kind_cluster.NODE_PORTS.openbao,
        outputs.NODE_LABEL_KEY: kind_cluster.NODE_LABEL_KEY,
        outputs.GITLAB_NODE_LABEL: kind_cluster.GITLAB_NODE_LABEL,
        outputs.RUNNER_NODE_LABEL: kind_cluster.RUNNER_NODE_LABEL,
        outputs.HEADLAMP: config.headlamp,
        outputs.IMAGE_CACHE_DIR: str(config.image_cache_dir or ""),
        outputs.IMAGE_MIRRORS: image_cache.mirrors(config.cluster_name) if config.image_cache_dir else {},
        **in_stack,
        outputs.DATA_FOLDER_CLAIM: cluster.data_folder,
        **({outputs.IMAGE_CACHE_JOINED: cluster.image_cache_joined} if cluster.image_cache_joined else {}),
        **({outputs.CONTAINER_ENGINE: container_engine} if container_engine != engine.DOCKER else {}),
        outputs.CLUSTER: cluster.cluster,
        outputs.KUBECONFIG: cluster.kubeconfig,
    }


def existing(config: Phase1Config, inner_owners: tuple[str, ...]) -> dict[str, Any]:
    """phase1 on an existing cluster: the data folder (on this machine: the platform's secrets) and
    what phase1 reads of the cluster, nothing on it. Every output of a kind phase1 is there too, so
    the references keep their shape; the kind-only ones hold nothing (stacks/outputs.py).
    """
    from components import existing_cluster
    from components.host_folder import HostFolderArgs, host_folder
    from stacks.phase2 import namespaces

    cluster = config.cluster
    # Before anything is registered: phase2's provider upserts, so a namespace of its name that is not
    # blueprint's would be taken over, and deleted by a destroy (docs/design/decisions.md, 48).
    existing_cluster.refuse_foreign_namespaces(cluster.kube_context, namespaces(), this_checkout())
    data_folder = host_folder(
        "data-folder",
        HostFolderArgs(
            path=str(config.data_dir),
            owner=folder_owner(),
            preserve=config.preserve_data,
            # Nothing a pod owns is ever in it (no node mounts it): the wipe's fallback container never runs.
            wipe_image=versions.KIND_NODE_IMAGE,
            layout=layout(pulumi.get_stack()),
            inner_owners=inner_owners,
            stack_file=preserve_data_file(pulumi.get_stack()),
        ),
    )
    facts = existing_cluster.read(cluster.kube_context, cluster.storage_class)
    brought: dict[str, Any] = {}
    if cluster.tls_certificate:
        read = existing_cluster.brought(cluster.kube_context, cluster.tls_certificate, config.domain)
        brought = {outputs.TLS_CERTIFICATE: cluster.tls_certificate, outputs.TLS_CERTIFICATE_CA: read.apply(lambda secret: secret.ca_pem)}
    kind_only: dict[str, Any] = {key: 0 for key in KIND_PORTS} | {key: "" for key in KIND_PLACES}
    return {
        outputs.CLUSTER_NAME: "",  # kind's alone: the context is KUBE_CONTEXT
        outputs.CLUSTER_ID: facts.apply(lambda read: read.identity),
        outputs.DATA_DIR: str(config.data_dir),
        outputs.PRESERVE_DATA: config.preserve_data,
        outputs.DOMAIN: config.domain,
        **kind_only,
        outputs.HEADLAMP: False,
        outputs.IMAGE_MIRRORS: {},
        outputs.CLUSTER_TYPE: cluster.cluster,
        outputs.KUBE_CONTEXT: cluster.kube_context,
        outputs.KUBERNETES_VERSION: facts.apply(lambda read: read.version),
        outputs.STORAGE_CLASS: cluster.storage_class,
        outputs.STORAGE_CLASS_USED: facts.apply(lambda read: read.storage_class),
        outputs.EXPOSURE: cluster.exposure,
        outputs.GITLAB_NODE_SELECTOR: dict(cluster.gitlab_node_selector),
        outputs.JOB_NODE_SELECTOR: dict(cluster.job_node_selector),
        outputs.API_SERVER_ENDPOINTS: facts.apply(lambda read: read.api_server),
        outputs.GATEWAY_SERVICE: dict(cluster.gateway_service),
        outputs.DATA_FOLDER_CLAIM: data_folder,
        **brought,
    }


KIND_PORTS = (
    outputs.HTTP_PORT, outputs.HTTPS_PORT, outputs.SSH_PORT, outputs.OPENBAO_PORT, outputs.API_SERVER_PORT,
    outputs.GATEWAY_HTTP_NODE_PORT, outputs.GATEWAY_HTTPS_NODE_PORT, outputs.GATEWAY_SSH_NODE_PORT, outputs.OPENBAO_NODE_PORT,
)  # fmt: skip
"""phase1's outputs that are ports of kind's: 0 on an existing cluster."""
KIND_PLACES = (
    outputs.NODE_DATA_PATH, outputs.VOLUMES_NODE_PATH, outputs.REGISTRY_HOSTS_DIR, outputs.NODE_LABEL_KEY, outputs.GITLAB_NODE_LABEL,
    outputs.RUNNER_NODE_LABEL, outputs.IMAGE_CACHE_DIR,
)  # fmt: skip
"""phase1's outputs that are folders and node labels of kind's: "" on an existing cluster."""
