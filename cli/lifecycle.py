"""What a destroy does to each resource and each host folder, read from a plan.

`pulumi destroy` works from recorded state: for each resource it calls the provider's delete,
unless an option says otherwise. What really happens to the thing behind the resource is one of:

- **delete**: the provider deletes it (a Kubernetes object, a Helm release, a file a command removes);
- **retain**: Pulumi leaves it where it is (`retainOnDelete`, `protect`), or its delete script
  keeps it on purpose (a host folder with `preserveData=true`);
- **forget**: the resource only leaves Pulumi's state, on purpose: a component or provider has
  nothing to delete; a read (`Resource.get`) is external, never deleted; a resource `deletedWith` another goes with it;
  and some dynamic resources describe something that lives inside data whose fate is decided
  elsewhere (a secret in OpenBao's storage, a token in GitLab's database, a file in the data folder).

Host folders are claimed by `components/host_folder.py` commands: their delete script keeps or
wipes the folder, as the PRESERVE_DATA recorded at the last `up` (or by a destroy) says. On an
existing cluster the data is in claims instead: each claim and each namespace holding one (marked
DATA_LABEL) is kept by `retainOnDelete`, and CloudNativePG's claim, which its Cluster owns, by the
step that releases it first (RELEASED_CLAIM, with PRESERVE_DATA); a destroy records both the same way.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import PurePosixPath
from typing import Any

from cli.plan import STACK_REFERENCE_TYPE, STACK_TYPE, Plan
from components.host_folder import CONFIG_PYTHON, PRESERVE_DATA, keeps_data
from components.host_folder import claimed_folder as host_folder_of
from components.image_cache import mirror_cache_folder
from components.markers import DATA_LABEL, RELEASED_CLAIM
from stacks.config import PROJECT_DIR

COMMAND = "command:local:Command"
KV_SECRET = "pulumi-python:dynamic/openbao:KvSecret"
CLAIM = "kubernetes:core/v1:PersistentVolumeClaim"
NAMESPACE = "kubernetes:core/v1:Namespace"
KIND_CLUSTER_NAME = "kind-cluster"
"""The kind cluster's own command in phase1's state."""

DELETE_LEAVES: dict[str, str] = {
    "pulumi-python:dynamic/blueprint:HostSecret": "its file stays in its host folder, which is kept or wiped",
    "pulumi-python:dynamic/openbao:Init": "the vault and its keys file stay with the data, which is kept or wiped",
    KV_SECRET: "the secret stays in OpenBao's storage, which is kept or wiped with the data",
    "pulumi-python:dynamic/gitlab:AdminToken": "the token stays in GitLab's database, which is kept or wiped with the data",
    "pulumi-python:dynamic/gitlab:ProjectSync": "the commits stay in the project's repository",
    "pulumi-python:dynamic/gitlab:SmokePipeline": "a finished pipeline is history",
    "pulumi-python:dynamic/blueprint:DeployKubeconfig": "its token expires by itself, and is void once its ServiceAccount is deleted",
}
"""Dynamic resource types whose delete deliberately does nothing, and what becomes of the thing."""
REVOKED_ON_DELETE: dict[str, str] = {
    "pulumi-python:dynamic/gitlab:GlabToken": "glab's token is revoked with this stack: a credential, no user data, data kept or not",
}
"""GitLab credentials whose delete revokes them: deleted by every destroy that reaches GitLab, since
no user data is in them (and forgotten, like GitLab's objects, when GitLab's data goes or GitLab is gone)."""


def claimed_folder(resource: Mapping[str, Any]) -> str | None:
    """The host folder `resource` (from a plan or a state) claims, if it is a host-folder command."""
    return host_folder_of(dict(resource.get("inputs") or {})) if resource["type"] == COMMAND else None


def holds_data(resource: Mapping[str, Any]) -> bool:
    """A claim of the platform's data on an existing cluster, or a namespace holding one (DATA_LABEL):
    kept or deleted as preserveData says, through its `retainOnDelete`.
    """
    metadata = (resource.get("inputs") or {}).get("metadata")
    labels = metadata.get("labels") if isinstance(metadata, dict) else None
    return resource["type"] in (CLAIM, NAMESPACE) and isinstance(labels, dict) and DATA_LABEL in labels


def released_claim(command_inputs: Mapping[str, Any]) -> str | None:
    """The claim a recorded release step of CloudNativePG's (components/postgres.py) releases, or None."""
    environment = command_inputs.get("environment")
    return str(environment[RELEASED_CLAIM]) if isinstance(environment, dict) and RELEASED_CLAIM in environment else None


def _data_fate(resource: Mapping[str, Any]) -> tuple[str, str] | None:
    """The fate of what holds data on an existing cluster (`holds_data`, `released_claim`), or None."""
    if holds_data(resource):
        if resource["type"] == NAMESPACE:
            if resource["retainOnDelete"]:
                return "retain", "preserveData=true: kept, since it holds kept claims (a namespace's delete deletes every claim in it)"
            return "delete", "preserveData=false: deleted, with every claim in it"
        if resource["retainOnDelete"]:
            return "retain", "preserveData=true: the claim stays, and the volume bound to it, for the next `up` to take over"
        return "delete", "preserveData=false: the claim goes, and its volume as its StorageClass's reclaimPolicy says"
    claim = released_claim(resource.get("inputs") or {}) if resource["type"] == COMMAND else None
    if claim is None:
        return None
    if keeps_data(resource["inputs"]):
        return "retain", (
            f"preserveData=true: its delete releases claim {claim} from the Postgres Cluster before the Cluster goes, "
            "so the claim and its volume stay for the next Cluster to adopt"
        )
    return "delete", f"preserveData=false: claim {claim} goes with the Postgres Cluster that owns it, and its volume with it"


def fate(resource: Mapping[str, Any], by_urn: Mapping[str, Mapping[str, Any]]) -> tuple[str, str]:
    """What `pulumi destroy` does to `resource`: ("delete" | "retain" | "forget", why)."""
    type_ = resource["type"]
    if not resource["custom"] or type_ == STACK_TYPE:
        return "forget", "a component: nothing of its own to delete"
    if type_.startswith("pulumi:providers:"):
        return "forget", "a provider: nothing to delete"
    if type_ == STACK_REFERENCE_TYPE:
        return "forget", "a read of a stack's last outputs"
    if resource.get("read"):
        return "forget", "a read of an object blueprint did not make: Pulumi never deletes it"
    if resource["protect"]:
        return "retain", "protected: the destroy stops here until it is unprotected"
    if data_fate := _data_fate(resource):
        return data_fate
    if resource["retainOnDelete"]:
        return "retain", "retainOnDelete: left where it is"
    target = resource["deletedWith"]
    if target in by_urn and fate(by_urn[target], by_urn)[0] == "delete":
        return "forget", f"deleted with {by_urn[target]['name']}"
    if type_ == KV_SECRET and (resource.get("inputs") or {}).get("delete_on_destroy"):
        return "delete", "what it holds is revoked with this stack (an OpenBao that cannot answer leaves it, with a warning)"
    if type_ in REVOKED_ON_DELETE:
        return "delete", REVOKED_ON_DELETE[type_]
    if type_ in DELETE_LEAVES:
        return "forget", DELETE_LEAVES[type_]
    if type_ == COMMAND:
        script = resource["inputs"].get("delete")
        if script in (None, "", "true"):
            return "forget", "its delete does nothing"
        if keeps_data(resource["inputs"]):
            return "retain", "preserveData=true: the folder is kept"
    return "delete", ""


def strings_in(value: Any) -> Iterator[str]:
    """Every string among `value`'s nested mappings and lists."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item)


def host_paths(resource: Mapping[str, Any]) -> set[str]:
    """Every absolute path among `resource`'s input values (files and folders it reads or writes)."""
    return {text.rstrip("/") or "/" for text in strings_in(resource["inputs"]) if text.startswith("/") and "\n" not in text}


def is_under(path: str, folder: str) -> bool:
    return path == folder or PurePosixPath(folder) in PurePosixPath(path).parents


def folders(result: Plan) -> list[dict[str, str]]:
    """Each host folder the plan's stack claims, and the secrets folder inside, with its fate; and the
    image cache, which every destroy keeps.
    """
    claims = {folder: resource for resource in result.resources if (folder := claimed_folder(resource))}
    keys = {
        str(PurePosixPath(path).parent)
        for resource in result.resources
        if resource["type"] in ("pulumi-python:dynamic/blueprint:HostSecret", "pulumi-python:dynamic/openbao:Init")
        for path in host_paths(resource)
    }
    listed = []
    for path in sorted(set(claims) | keys):
        owners = [folder for folder in claims if is_under(path, folder)]
        if not owners:
            continue  # claimed by an upstream stack: its own destroy view shows it
        keep = keeps_data(claims[max(owners, key=len)]["inputs"])
        listed.append({"path": path, "destroy": "keep" if keep else "wipe"})
    # Whatever preserveData says: it holds public images only (`uv run blueprint destroy --wipe-cache` wipes it).
    caches = {
        folder for resource in result.resources if resource["type"] == COMMAND and (folder := mirror_cache_folder(resource["inputs"]))
    }
    listed += [{"path": folder, "destroy": "keep"} for folder in sorted(caches)]
    return listed


def destroy_view(result: Plan) -> Plan:
    """`result` with each resource's `destroy` fate, and the fate of each host folder."""
    by_urn = {resource["urn"]: resource for resource in result.resources}
    fates = {urn: fate(resource, by_urn) for urn, resource in by_urn.items()}
    resources = [{**resource, "destroy": fates[resource["urn"]][0]} for resource in result.resources]
    reasons = {urn: why for urn, (_, why) in fates.items()}
    return replace(result, resources=resources, folders=folders(result), destroy_reasons=reasons)


# What lives where, for a destroy that cannot reach it. The same rules read a plan's resources and
# a stack's recorded state (`pulumi stack export`): both name a resource's provider as `<urn>::<id>`.


def _provider_type(resource: Mapping[str, Any]) -> str:
    provider = str(resource.get("provider") or "")
    return provider.rsplit("::", 1)[0].split("::")[2].split("$")[-1] if provider else ""


def lives_in_cluster(resource: Mapping[str, Any]) -> bool:
    """Made through a Kubernetes provider: it exists only as long as the kind cluster does."""
    return _provider_type(resource) == "pulumi:providers:kubernetes"


def lives_in_gitlab(resource: Mapping[str, Any]) -> bool:
    """An object in GitLab's database that its delete removes through GitLab's API."""
    type_ = str(resource["type"])
    return bool(resource.get("custom")) and type_.startswith("pulumi-python:dynamic/gitlab:") and type_ not in DELETE_LEAVES


def forget(deployment: Mapping[str, Any], urns: set[str]) -> dict[str, Any]:
    """`deployment` (the `deployment` part of `pulumi stack export`) without the resources `urns`:
    removed from state only, as `pulumi state delete` does, with every reference to them dropped
    from what stays (dependencies, property dependencies, deletedWith, replaceWith), and a provider
    that nothing uses any more dropped too. A resource that is the parent of one that stays cannot
    be forgotten. A state with pending operations is not edited at all (`pending_operations`).
    """
    resources = list(deployment.get("resources") or [])
    gone = set(urns)
    for resource in resources:
        if resource.get("parent") in gone and resource["urn"] not in gone:
            raise ValueError(f"cannot forget {resource['parent']}: {resource['urn']} is its child")
    users: dict[str, list[str]] = {}
    for resource in resources:
        users.setdefault(str(resource.get("provider") or "").rsplit("::", 1)[0], []).append(resource["urn"])
    gone |= {
        provider["urn"]
        for provider in resources
        if str(provider["type"]).startswith("pulumi:providers:") and users.get(provider["urn"]) and gone >= set(users[provider["urn"]])
    }
    kept = []
    for resource in resources:
        if resource["urn"] in gone:
            continue
        resource = dict(resource)
        if resource.get("dependencies"):
            resource["dependencies"] = [urn for urn in resource["dependencies"] if urn not in gone]
        if resource.get("propertyDependencies"):
            resource["propertyDependencies"] = {
                key: [urn for urn in deps if urn not in gone] for key, deps in resource["propertyDependencies"].items()
            }
        for option in ("deletedWith", "replaceWith"):
            if resource.get(option) in gone:
                resource.pop(option)
        kept.append(resource)
    return {**deployment, "resources": kept}


def plan_destroy(
    state: Mapping[str, Any],
    *,
    keep: bool,
    cluster_is_gone: bool,
    gitlab_reachable: bool,
    gitlab_data_goes: bool,
    cluster_gone_for_good: bool,
) -> dict[str, str]:
    """The resources of a stack's `state` to forget rather than delete, each with why.

    `cluster_is_gone`: kind no longer lists the kind cluster, or the user said it is gone.
    `gitlab_reachable`: GitLab can answer. `gitlab_data_goes`: this destroy wipes GitLab's database
    (deleting its objects one by one first would be pointless, and impossible while GitLab itself
    is taken down). `cluster_gone_for_good`: the user said Docker and the cluster are gone.
    """
    reasons: dict[str, str] = {}
    for resource in state.get("resources") or []:
        urn = str(resource["urn"])
        if cluster_is_gone and lives_in_cluster(resource):
            reasons[urn] = "it lived in the kind cluster, which is gone"
        elif cluster_is_gone and resource["type"] == KV_SECRET:
            # Its delete would wait for that OpenBao, then warn of an entry nobody can reach any more.
            reasons[urn] = "it was in OpenBao, which lived in the kind cluster, which is gone"
        elif lives_in_gitlab(resource) and not (keep and resource.get("retainOnDelete")):
            if gitlab_data_goes:
                reasons[urn] = "it lives in GitLab's database, which this destroy wipes"
            elif not gitlab_reachable:
                reasons[urn] = "it lived in GitLab's database, and that GitLab is gone"
        elif cluster_gone_for_good and resource["type"] == COMMAND and urn.endswith(f"::{KIND_CLUSTER_NAME}"):
            reasons[urn] = "you said Docker and the cluster are gone (--cluster-gone)"
    return reasons


def without_stale_creates(stack: str, deployment: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """`deployment` without its stale pending CREATEs, and what to say of them (None: there was none).

    A pending CREATE is what an interrupted run leaves of a create it cannot tell succeeded, and
    Pulumi never clears one itself (every run carries a base snapshot's pending CREATEs over:
    pulumi/pulumi pkg/backend/snapshot.go). One whose URN the state records is stale only when a
    later run re-made that same thing: the recorded resource has the operation's inputs and is not
    `pendingReplacement`. Kept, it would refuse every destroy for good; dropped, nothing is lost.
    Any other is an interrupted replacement (`_interrupted_replacements`), kept.
    """
    stale = [op for op in deployment.get("pending_operations") or [] if _is_stale(op, deployment)]
    if not stale:
        return dict(deployment), None
    kept = [op for op in deployment.get("pending_operations") or [] if op not in stale]
    cleaned = {key: value for key, value in deployment.items() if key != "pending_operations"}
    if kept:
        cleaned["pending_operations"] = kept
    names = ", ".join(sorted({_operation_urn(op).rsplit("::", 1)[-1] for op in stale}))
    return cleaned, (
        f"   {stack}: dropped the stale pending CREATE of {names}, which an interrupted run left: a later run made it, "
        "and the state records it"
    )


def _recorded(deployment: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {resource["urn"]: resource for resource in deployment.get("resources") or []}


def _is_stale(operation: Mapping[str, Any], deployment: Mapping[str, Any]) -> bool:
    recorded = _recorded(deployment).get(_operation_urn(operation))
    return (
        operation.get("type") == "creating"
        and recorded is not None
        and not recorded.get("pendingReplacement")
        and (recorded.get("inputs") or {}) == ((operation.get("resource") or {}).get("inputs") or {})
    )


def _interrupted_replacements(deployment: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The pending CREATEs of a replacement: the new resource under the URN of the old one, which the
    state keeps (marked `pendingReplacement` when the old goes first: pkg/resource/deploy/step_generator.go)
    while the create runs (pkg/backend/snapshot.go marks OpCreateReplacement's `step.New()` pending).
    """
    recorded = _recorded(deployment)
    return [op for op in deployment.get("pending_operations") or [] if op.get("type") == "creating" and _operation_urn(op) in recorded]


def _operation_urn(operation: Mapping[str, Any]) -> str:
    return str((operation.get("resource") or {}).get("urn", "?"))


def _names(operations: Sequence[Mapping[str, Any]], with_type: bool = False) -> str:
    said = {(f"{op.get('type', '?')} " if with_type else "") + _operation_urn(op).rsplit("::", 1)[-1] for op in operations}
    return ", ".join(sorted(said))


def pending_operations(stack: str, deployment: Mapping[str, Any], finish: str = "uv run blueprint up") -> str | None:
    """Why `deployment` must not be edited, or None. An interrupted run leaves pending operations
    (a create Pulumi cannot tell succeeded); `pulumi stack import` silently drops them, which would
    lose the one record of, say, a half-made cluster. Stale CREATEs are dropped first (`without_stale_creates`).
    `finish` is the command that finishes an interrupted replacement from where this one is refused.
    """
    operations = deployment.get("pending_operations") or []
    if not operations:
        return None
    quoted = shlex.quote(stack)
    if replacements := _interrupted_replacements(deployment):
        # The next `up` replaces again: its create adopts or re-makes what the interrupted one made.
        return (
            f"an interrupted run left {stack}'s state with an interrupted replacement of {_names(replacements)}: "
            "what its create was making may exist, and only that pending create records it. "
            f"`{finish}` finishes it (the create adopts or re-makes what the interrupted one made); then run this again. "
            f"`pulumi refresh -s {quoted} --clear-pending-creates` only if you know it made nothing "
            f'(in a shell that ran `eval "$(uv run blueprint env)"`)'
        )
    return (
        f"an interrupted run left pending operations in {stack}'s state ({_names(operations, with_type=True)}). "
        "Resolve them first, in a shell that "
        f'ran `eval "$(uv run blueprint env)"`: `pulumi refresh -s {quoted}` asks, for each, whether to clear it '
        f"or import what it made; or, without asking, `pulumi refresh -s {quoted} --clear-pending-creates` if it made "
        "nothing, `--import-pending-creates <urn> --import-pending-creates <id>` (the flag takes one value each time: the "
        "URN above, then the ID of what it made) if it did; then run this again"
    )


def inner_owners(owner: str, stacks: Sequence[str]) -> str:
    """INNER_OWNERS of the folder `owner` (`<project>/<stack>@<checkout id>`) claims: `stacks` of the
    same project and checkout, one per line (`components/host_folder.py`).
    """
    project, _, claim = owner.partition("/")
    checkout = claim.partition("@")[2]
    return "\n".join(f"{project}/{stack}@{checkout}" for stack in stacks)


def record_preserve_data(deployment: Mapping[str, Any], keep: bool) -> dict[str, Any]:
    """`deployment` as an `up` with `preserveData=keep` would have recorded it: what a destroy does
    with the data is decided there (the host folders' PRESERVE_DATA, which their recorded delete
    script reads, `retainOnDelete` on the objects in GitLab's database and, on an existing cluster, on
    the claims and their namespaces, the PRESERVE_DATA of CloudNativePG's release step, phase3's
    OpenBao entries, the stack's own `preserveData` output), and nothing else changes: no script text, whatever release
    recorded it, and no change the user has not brought up yet.
    """
    value = "true" if keep else "false"
    recorded = []
    for resource in deployment.get("resources") or []:
        resource = dict(resource)
        if claimed_folder(resource):
            # The outputs are what the delete runs with; the inputs, what the next diff compares.
            for part in ("inputs", "outputs"):
                fields = dict(resource.get(part) or {})
                fields["environment"] = {**_this_checkouts(dict(fields.get("environment") or {})), PRESERVE_DATA: value}
                resource[part] = fields
        elif lives_in_gitlab(resource) or holds_data(resource):
            resource["retainOnDelete"] = keep
        elif resource["type"] == COMMAND and released_claim(resource.get("inputs") or {}):
            for part in ("inputs", "outputs"):
                fields = dict(resource.get(part) or {})
                fields["environment"] = {**dict(fields.get("environment") or {}), PRESERVE_DATA: value}
                resource[part] = fields
        elif resource["type"] == KV_SECRET and "delete_on_destroy" in (resource.get("outputs") or {}):
            # phase3's entries (`stacks.phase3`): what they hold is revoked with the data, kept with it.
            resource["inputs"] = {**(resource.get("inputs") or {}), "delete_on_destroy": not keep}
            resource["outputs"] = {**(resource.get("outputs") or {}), "delete_on_destroy": not keep}
        elif resource["type"] == STACK_TYPE and "preserveData" in (resource.get("outputs") or {}):
            resource["outputs"] = {**resource["outputs"], "preserveData": keep}
        recorded.append(resource)
    return {**deployment, "resources": recorded}


def _this_checkouts(environment: dict[str, Any]) -> dict[str, Any]:
    """A host folder's recorded environment, with the stack file and Python its delete reads this
    checkout's: an `up` from a checkout since moved or deleted recorded its own, which are gone.
    """
    if environment.get("STACK_FILE"):
        environment["STACK_FILE"] = str(PROJECT_DIR / PurePosixPath(environment["STACK_FILE"]).name)
    if environment.get("CONFIG_PYTHON"):
        environment["CONFIG_PYTHON"] = CONFIG_PYTHON
    return environment
