"""A fake `kubectl` for the doctor's checks of an existing cluster: `FakeCluster` answers each call the
checks make as kubectl prints it, and `ClusterMachine` is a FakeMachine whose `kubectl` asks it.

The outputs follow kubectl's: `config get-contexts -o name` one name a line; `get --raw /version` the
API server's version.Info JSON; `auth can-i` "yes", or "no" and exit 1 (kubectl pkg/cmd/auth/cani.go);
`get ... -o name` `<resource>.<group>/<name>` lines; a missing context `error: context "x" does not
exist`; an unanswered request "Unable to connect to the server: ...". A call the checks do not make
fails the test.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cli.doctor.cluster import BUNDLE_VERSION, CHANNEL, CNPG_CRD, GATEWAY_CRD, HELM_RELEASE
from components import brought_tls
from components.existing_cluster import DEFAULT_CLASS_ANNOTATIONS
from tests.cli.doctor.fakes import FakeMachine

CONTEXT = "prod"

GKE_STANDARD_RWO = {
    "metadata": {"name": "standard-rwo", "annotations": {DEFAULT_CLASS_ANNOTATIONS[0]: "true"}},
    "provisioner": "pd.csi.storage.gke.io",
    "reclaimPolicy": "Delete",
}
PREMIUM_RWO = {"metadata": {"name": "premium-rwo"}, "provisioner": "pd.csi.storage.gke.io", "reclaimPolicy": "Delete"}

AUTOPILOT_REFUSAL = (
    'Error from server (GKE Warden constraints violations): admission webhook "warden-validating.common-webhooks.networking.gke.io" '
    "denied the request: GKE Warden rejected the request because it violates one or more constraints.\n"
    'Violations details: {"[denied by autogke-disallow-unconfined-seccomp]":["container build uses seccomp profile Unconfined; '
    'not allowed in Autopilot."]}'
)
"""Shaped as GKE Warden's refusals are quoted in public issues (e.g. SigNoz/charts#310, lacework/helm-charts#191); the
constraint's name here is made up: only the wording ("GKE Warden", `autogke-`, "Autopilot") is relied on."""

KYVERNO_REFUSAL = (
    'Error from server: admission webhook "validate.kyverno.svc-fail" denied the request: \n\n'
    "policy Pod/default/blueprint-doctor-build-x for resource violation: \n\n"
    "restrict-seccomp:\n  check-seccomp: 'validation error: Use of custom Seccomp profiles is disallowed.'"
)

POD_SECURITY_REFUSAL = (
    'Error from server (Forbidden): pods "blueprint-doctor-build-x" is forbidden: violates PodSecurity "baseline:latest": '
    'seccompProfile (container "build" must not set securityContext.seccompProfile.type to "Unconfined")'
)


def daemonset(namespace: str, name: str, **args: list[str]) -> dict[str, Any]:
    """A DaemonSet as `kubectl get daemonsets -o json` lists it: its containers' args by container name."""
    containers = [{"name": container, "args": argv} for container, argv in args.items()]
    return {"metadata": {"namespace": namespace, "name": name}, "spec": {"template": {"spec": {"containers": containers}}}}


@dataclass
class FakeCluster:
    """What the cluster of context `CONTEXT` shows kubectl; by default one every check passes on (GKE Standard-like)."""

    contexts: tuple[str, ...] = (CONTEXT, "kind-blueprint")
    unreachable: str | None = None
    """What kubectl prints when the API server does not answer; None: it answers."""
    version: str = "v1.34.2-gke.1240000"
    storage_classes: list[dict[str, Any]] = field(default_factory=lambda: [GKE_STANDARD_RWO, PREMIUM_RWO])
    denied: set[str] = field(default_factory=set)
    """Resources `auth can-i create` says no to: cluster-wide kinds, or `<subresource> <namespace>`."""
    crds: dict[str, dict[str, str]] = field(default_factory=dict)
    """The CRDs there, each with its annotations."""
    namespaces: dict[str, dict[str, str]] = field(default_factory=lambda: {"default": {}, "kube-system": {}})
    """The namespaces there, each with its labels."""
    namespace_refusal: str | None = None
    pod_refusal: str | None = None
    load_balancers: list[str] = field(default_factory=list)
    """LoadBalancer Services, as `<namespace>/<name> <address>` (no address: pending)."""
    load_balancer_classes: dict[str, str] = field(default_factory=dict)
    """The `spec.loadBalancerClass` of those that have one, by `<namespace>/<name>`."""
    provider_ids: list[str] = field(default_factory=lambda: ["gce://project/europe-west1-b/gke-node-1"])
    daemonsets: list[dict[str, Any]] = field(default_factory=lambda: [daemonset("kube-system", "anetd")])
    """The DaemonSets there (by default GKE Dataplane V2's agent, which enforces NetworkPolicy)."""
    tried: list[dict[str, Any]] = field(default_factory=list)
    """The documents dry-run against it."""
    secrets: dict[str, str] = field(default_factory=dict)
    """What `get secret -o <components/brought_tls.py JSONPATH>` prints, by `<namespace>/<name>`."""

    def answer(self, argv: Sequence[str]) -> tuple[int, str]:
        if list(argv[1:3]) == ["config", "get-contexts"]:
            return 0, "".join(f"{name}\n" for name in self.contexts)
        assert argv[1] == "--context", argv
        assert argv[3].startswith("--request-timeout="), argv
        if argv[2] not in self.contexts:
            return 1, f'error: context "{argv[2]}" does not exist\n'
        if self.unreachable is not None:
            return 1, self.unreachable
        return self._request(list(argv[4:]))

    def _request(self, args: list[str]) -> tuple[int, str]:
        match args:
            case ["get", "--raw", "/version"]:
                major, minor = self.version.lstrip("v").split(".")[:2]
                return 0, json.dumps({"major": major, "minor": minor, "gitVersion": self.version, "platform": "linux/amd64"})
            case ["get", "storageclasses", "-o", "json"]:
                return 0, json.dumps({"apiVersion": "v1", "kind": "List", "items": self.storage_classes})
            case ["auth", "can-i", "create", resource, "--all-namespaces"]:
                return (1, "no\n") if resource in self.denied else (0, "yes\n")
            case ["auth", "can-i", "create", resource, "--namespace", namespace]:
                return (1, "no\n") if f"{resource} {namespace}" in self.denied else (0, "yes\n")
            case ["get", "namespaces", "-o", "json"]:
                items = [{"metadata": {"name": name, "labels": labels}} for name, labels in self.namespaces.items()]
                return 0, json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
            case ["get", "customresourcedefinitions", "-o", "name"]:
                return 0, "".join(f"customresourcedefinition.apiextensions.k8s.io/{name}\n" for name in self.crds)
            case ["get", "customresourcedefinition", name, "-o", "json"]:
                if name not in self.crds:
                    return 1, f'Error from server (NotFound): customresourcedefinitions.apiextensions.k8s.io "{name}" not found'
                return 0, json.dumps({"metadata": {"name": name, "annotations": self.crds[name]}})
            case ["create", "--dry-run=server", "-o", "name", *rest]:
                return self._dry_run(rest)
            case ["get", "services", "--all-namespaces", "-o", jsonpath] if jsonpath.startswith("jsonpath="):
                # The filter kubectl applies: a class, or type LoadBalancer (every Service here is one).
                wanted = re.search(r'@\.spec\.loadBalancerClass=="([^"]*)"', jsonpath)
                chosen = [s for s in self.load_balancers if not wanted or self.load_balancer_classes.get(s.split()[0]) == wanted[1]]
                return 0, "".join(f"{service}\n" for service in chosen)
            case ["get", "nodes", "-o", "jsonpath={.items[*].spec.providerID}"]:
                return 0, " ".join(self.provider_ids)
            case ["get", "daemonsets", "--all-namespaces", "-o", "json"]:
                return 0, json.dumps({"apiVersion": "v1", "kind": "List", "items": self.daemonsets})
            case ["get", "secret", "--namespace", namespace, name, "-o", brought_tls.JSONPATH]:
                if f"{namespace}/{name}" not in self.secrets:
                    return 1, f'Error from server (NotFound): secrets "{name}" not found\n'
                return 0, self.secrets[f"{namespace}/{name}"]
        raise AssertionError(f"the checks made a call the fake kubectl does not know: {args}")

    def _dry_run(self, rest: list[str]) -> tuple[int, str]:
        document = json.loads(Path(rest[rest.index("-f") + 1]).read_text())
        self.tried.append(document)
        refusal = self.namespace_refusal if document["kind"] == "Namespace" else self.pod_refusal
        return (1, refusal) if refusal else (0, f"{document['kind'].lower()}/{document['metadata']['generateName']}x7k2q\n")


@dataclass(frozen=True, kw_only=True)
class ClusterMachine(FakeMachine):
    """A FakeMachine whose kubectl talks to `cluster` (its `version --client` stays the machine's)."""

    cluster: FakeCluster = field(default_factory=FakeCluster)

    def run(self, argv: Sequence[str], timeout: float) -> tuple[int, str]:
        if argv[0] == "kubectl" and argv[1] != "version" and self.which("kubectl"):
            self.calls.append(list(argv))
            return self.cluster.answer(argv)
        return super().run(argv, timeout)


def gateway_crd(bundle: str, channel: str) -> dict[str, dict[str, str]]:
    return {GATEWAY_CRD: {BUNDLE_VERSION: bundle, CHANNEL: channel}}


def cnpg_crd(release: str = "", namespace: str = "") -> dict[str, dict[str, str]]:
    """CloudNativePG's Cluster CRD; with a release, as Helm installed it."""
    return {CNPG_CRD: dict(zip(HELM_RELEASE, (release, namespace), strict=True)) if release else {}}
