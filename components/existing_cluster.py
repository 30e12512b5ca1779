"""An existing cluster (`blueprint:cluster=existing`): read, never made nor deleted.

phase1 reads it through `kubectl` on every preview and up, as invokes (pulumi-command's `local.run`):
nothing is created, so no destroy can delete anything of it. kubectl runs with the user's kubeconfig
(KUBECONFIG, or ~/.kube/config: its merge rules, its credentials and exec plugins) and the context
`blueprint:kubeContext` names. What phase1 publishes of it (`Facts`) is what phase2 needs: the
cluster's identity (the UID of `kube-system`), its version, the StorageClass the claims get, and
where the API server answers pods. A phase2 stack resolves the same context's kubeconfig on each run
(`context_kubeconfig`), as it asks kind for kind's: no stack exports a kubeconfig.
"""

from __future__ import annotations

import datetime
import json
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi_command import local

from components import brought_tls
from components.markers import NAMESPACE_OWNER_LABEL
from providers.kubectl import FROM_ENVIRONMENT, context_kubeconfig_argv, in_shell, kubectl_argv

KUBECTL = in_shell(kubectl_argv(FROM_ENVIRONMENT))
"""Every read: the context from the environment (never in the command's text), a bounded wait."""
READ_ARGS = {
    "identity": 'get namespace kube-system -o "jsonpath={.metadata.uid}"',
    "version": "get --raw /version",
    "storageClasses": "get storageclasses -o json",
    "apiServer": "get endpointslices --namespace default --selector kubernetes.io/service-name=kubernetes -o json",
}
"""What phase1 reads, by name: kubectl's arguments after KUBECTL."""
READS = {name: f"{KUBECTL} {args} || true" for name, args in READ_ARGS.items()}
"""The commands, by name. `|| true`: a failed kubectl (no such context, a cluster that does not answer)
becomes the RunError that says what to check (`facts`), not a failed invoke and its traceback."""
KUBECONFIG_COMMAND = f"{in_shell(context_kubeconfig_argv(FROM_ENVIRONMENT))} || true"
"""The context's kubeconfig alone, credentials inline (providers/kubectl.py `CONTEXT_KUBECONFIG_ARGV`)."""
NAMESPACES_ARGS = "get namespaces -o json"
NAMESPACES_COMMAND = f"{KUBECTL} {NAMESPACES_ARGS} || true"
"""The cluster's namespaces: read at once (a synchronous invoke), so that a refusal comes before phase1
registers anything (`refuse_foreign_namespaces`)."""
DEFAULT_CLASS_ANNOTATIONS = ("storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class")
"""What marks the default StorageClass (https://kubernetes.io/docs/tasks/administer-cluster/change-default-storage-class/)."""


@dataclass(frozen=True, kw_only=True)
class Facts:
    """What phase1 read of the cluster on this run."""

    identity: str
    """The UID of namespace kube-system."""
    version: str
    """The API server's gitVersion (v1.33.2, v1.33.2-gke.1240000)."""
    storage_class: str
    """The StorageClass the claims get: the one named, or the cluster's default."""
    api_server: list[dict[str, Any]]
    """{"address", "port"} of each endpoint of the Service default/kubernetes, sorted."""


class ClusterUnreadable(pulumi.RunError):
    """The existing cluster cannot be read, or lacks what blueprint needs; the message says what to check."""


def _run(command: str, context: str) -> pulumi.Output[local.RunResult]:
    # Nothing logged: the kubeconfig is a credential, and the reads are said by what phase1 exports.
    return local.run_output(command=command, environment={"KUBE_CONTEXT": context}, logging=local.Logging.NONE)


def read(context: str, storage_class: str) -> pulumi.Output[Facts]:
    """The cluster of `context`, read on this run; `storage_class` ("": the default) must exist."""
    ran = {name: _run(command, context) for name, command in READS.items()}
    return pulumi.Output.all(**ran).apply(
        lambda results: facts(context, storage_class, {name: (result.stdout, result.stderr or "") for name, result in results.items()})
    )


def context_kubeconfig(context: str) -> pulumi.Output[str]:
    """The kubeconfig of `context` alone (secret), as kubectl resolves it on this run."""

    def checked(result: local.RunResult) -> str:
        if not result.stdout.strip():
            raise ClusterUnreadable(
                f"phase2 goes onto the cluster of context {context}, and `kubectl config view --minify --context "
                f"{shlex.quote(context)}` gave no kubeconfig: {_said(result.stderr or '')}. Check that `kubectl config "
                "get-contexts` lists it, with KUBECONFIG as blueprint runs (or ~/.kube/config when unset)."
            )
        return result.stdout

    return pulumi.Output.secret(_run(KUBECONFIG_COMMAND, context).apply(checked))


BROUGHT_COMMAND = f"{KUBECTL} {brought_tls.READ_ARGS} || true"
"""The read of the Secret `blueprint:tlsCertificate` names (components/brought_tls.py)."""


def brought(context: str, ref: str, domain: str) -> pulumi.Output[brought_tls.Brought]:
    """The Secret `ref` (`<namespace>/<name>`) on the cluster of `context`, read on this run: a
    ClusterUnreadable unless it is a kubernetes.io/tls Secret whose certificate covers `*.<domain>` now.
    """
    namespace, name = brought_tls.split(ref)
    environment = {"KUBE_CONTEXT": context, "SECRET_NAMESPACE": namespace, "SECRET_NAME": name}
    ran = local.run_output(command=BROUGHT_COMMAND, environment=environment, logging=local.Logging.NONE)

    def checked(result: local.RunResult) -> brought_tls.Brought:
        try:
            _kind, cert_pem, ca_pem = brought_tls.read_answer(result.stdout)
            problem = brought_tls.certificate_problem(cert_pem, domain, datetime.datetime.now(datetime.UTC), ca_pem)
        except ValueError as error:
            problem = f"{error}: {_said(result.stderr or '')}" if not result.stdout.strip() else str(error)
        if problem:
            raise ClusterUnreadable(
                f"blueprint:tlsCertificate names the Secret {ref}, which the gateway is to serve, and on the cluster of context "
                f"{context} {problem}. Check it with `kubectl --context {shlex.quote(context)} get secret -n {shlex.quote(namespace)} "
                f"{shlex.quote(name)}`, or empty the key to serve the platform CA's certificate."
            )
        return brought_tls.Brought(namespace=namespace, name=name, ca_pem=ca_pem)

    return ran.apply(checked)


def _said(stderr: str) -> str:
    return stderr.strip()[-500:] or "it said nothing"


def _unreadable(context: str, args: str, said: str) -> ClusterUnreadable:
    quoted = shlex.quote(context)
    return ClusterUnreadable(
        f"phase1 reads the cluster of context {context} (blueprint:kubeContext), and `kubectl --context {quoted} "
        f"{args}` failed: {_said(said)}. Check that `kubectl config get-contexts {quoted}` lists it "
        f"(with KUBECONFIG as blueprint runs, or ~/.kube/config when unset) and that `kubectl --context {quoted} "
        "get nodes` answers."
    )


def refuse_foreign_namespaces(context: str, names: Sequence[str], owner: str) -> None:
    """A ClusterUnreadable when the cluster of `context` holds one of `names` (the namespaces phase2
    makes) that is not blueprint's (`foreign_namespaces`): phase2's provider upserts, so it would take
    it over, and a destroy delete it with whatever the cluster's other users keep there.
    """
    result = local.run(command=NAMESPACES_COMMAND, environment={"KUBE_CONTEXT": context}, logging=local.Logging.NONE)
    try:
        listed = json.loads(result.stdout)
    except ValueError:
        listed = None
    if not isinstance(listed, dict):
        raise _unreadable(context, NAMESPACES_ARGS, result.stderr or result.stdout)
    if foreign := foreign_namespaces(listed, names, owner):
        found, fix = foreign_refusal(context, foreign, owner)
        raise ClusterUnreadable(f"{found}. {fix}.")


def foreign_namespaces(listed: Mapping[str, Any], names: Iterable[str], owner: str) -> list[str]:
    """Those of `names` that `listed` (`kubectl get namespaces -o json`) holds without the label
    NAMESPACE_OWNER_LABEL=`owner` ("": this checkout never ran, so none is its): someone else's,
    or another checkout's. One a destroy of this checkout's platform kept carries it: not foreign.
    """
    labels = {
        str(metadata.get("name", "")): metadata.get("labels") or {}
        for item in listed.get("items") or []
        if isinstance(item, dict) and isinstance(metadata := item.get("metadata") or {}, dict)
    }
    return sorted(name for name in set(names) if name in labels and (not owner or labels[name].get(NAMESPACE_OWNER_LABEL) != owner))


def foreign_refusal(context: str, foreign: Sequence[str], owner: str) -> tuple[str, str]:
    """What phase1 and the doctor say of the namespaces `foreign_namespaces` found, and the fix."""
    quoted, first = shlex.quote(context), shlex.quote(foreign[0])
    label = f"{NAMESPACE_OWNER_LABEL}={owner or '<this checkout id>'}"
    found = (
        f"the cluster of context {context} already has the namespace{'s' if len(foreign) > 1 else ''} {', '.join(foreign)}, "
        f"which phase2 makes, without blueprint's label {label}: phase2 would take them over, and a destroy would "
        "delete them with everything in them"
    )
    fix = (
        f"Choose another cluster (blueprint:kubeContext), or remove or rename them (`kubectl --context {quoted} get all -n "
        f"{first}` shows what one holds). Only if one is this platform's, kept by a destroy made from another checkout: "
        f"`kubectl --context {quoted} label namespace {first} {label}`"
    )
    return found, fix


def facts(context: str, storage_class: str, answers: Mapping[str, tuple[str, str]]) -> Facts:
    """What the answers of READS (name -> stdout, stderr) say of the cluster, or a ClusterUnreadable."""
    parsed: dict[str, Any] = {}
    for name, args in READ_ARGS.items():
        stdout, stderr = answers[name]
        try:
            parsed[name] = stdout.strip() if name == "identity" else json.loads(stdout)
        except ValueError:
            parsed[name] = None
        if not parsed[name]:
            raise _unreadable(context, args, stderr or stdout)
    return Facts(
        identity=parsed["identity"],
        version=str(parsed["version"].get("gitVersion", "")),
        storage_class=_storage_class(context, storage_class, parsed["storageClasses"]),
        api_server=endpoints(parsed["apiServer"]),
    )


def _storage_class(context: str, named: str, listed: Mapping[str, Any]) -> str:
    """The class named, which must exist, or the cluster's default: the newest when several say so, the
    one Kubernetes gives a claim that names none (kubernetes.io/docs/concepts/storage/storage-classes).
    """
    classes = [item for item in listed.get("items") or [] if isinstance(item, dict)]
    names = sorted(str((item.get("metadata") or {}).get("name", "")) for item in classes)
    if named:
        if named in names:
            return named
        raise ClusterUnreadable(
            f"blueprint:storageClass = {named!r}: the cluster of context {context} has no such StorageClass (it has: "
            f"{', '.join(names) or 'none'}); name one of them, or leave blueprint:storageClass empty for the default"
        )
    if (default := default_storage_class(listed)) is None:
        raise ClusterUnreadable(
            f"the cluster of context {context} has no default StorageClass, and blueprint:storageClass names none: set "
            f"blueprint:storageClass to one of its classes ({', '.join(names) or 'it has none: install a provisioner first'})"
        )
    return default


def default_storage_class(listed: Mapping[str, Any]) -> str | None:
    """The cluster's default StorageClass of `listed` (`kubectl get storageclasses -o json`), or None: the
    newest of those annotated default, as Kubernetes gives a claim that names none. phase1's rule, and
    the doctor's (cli/doctor/cluster.py).
    """
    classes = [item for item in listed.get("items") or [] if isinstance(item, dict)]
    defaults = [
        item
        for item in classes
        if any(((item.get("metadata") or {}).get("annotations") or {}).get(key) == "true" for key in DEFAULT_CLASS_ANNOTATIONS)
    ]
    if not defaults:
        return None
    newest = max(defaults, key=lambda item: str((item.get("metadata") or {}).get("creationTimestamp", "")))
    return str(newest["metadata"]["name"])


def endpoints(listed: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each address and port of the EndpointSlices `listed` (of the Service default/kubernetes), sorted:
    what phase1 records, and what `blueprint status` compares the live ones with.
    """
    found: set[tuple[str, int]] = set()
    for item in listed.get("items") or []:
        ports = [int(port["port"]) for port in item.get("ports") or [] if isinstance(port, dict) and "port" in port]
        for endpoint in item.get("endpoints") or []:
            for address in endpoint.get("addresses") or []:
                found.update((str(address), port) for port in ports)
    return [{"address": address, "port": port} for address, port in sorted(found)]
