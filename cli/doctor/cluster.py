"""`blueprint doctor` on an existing cluster (`blueprint:cluster=existing`): what phase2 and phase3 need of
the cluster of `blueprint:kubeContext`, asked of it with the user's `kubectl` before anything exists,
each check with its fix.

The context is in the kubeconfig and answers; its Kubernetes is recent enough; the StorageClass the
claims get exists; the user may create what blueprint installs cluster-wide; no other Gateway API
bundle or CloudNativePG sits where blueprint's go; the cluster's admission admits the image builds'
pod; and, a warning only, some sign the cluster provisions load balancers. Nothing is created: the
pod and namespace are tried with a server-side dry run, which runs admission and stores nothing
(https://kubernetes.io/docs/reference/using-api/api-concepts/#dry-run).
"""

from __future__ import annotations

import json
import re
import shlex
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import versions
from cli.doctor.certificate import certificate_check
from cli.doctor.checks import KUBECTL_SKEW, Check, kubectl_version_in
from cli.doctor.install import KUBECTL, download_fix
from cli.doctor.machine import Machine, first_line
from components import brought_tls
from providers.kubectl import kubectl_argv

if TYPE_CHECKING:  # the config and the components import pulumi, which `blueprint --help` should not wait for
    from stacks.config.cluster import ClusterConfig

CONTEXT = "cluster context"
API = "cluster API"
VERSION = "Kubernetes version"
STORAGE = "StorageClass"
PERMISSIONS = "cluster-wide permissions"
NAMESPACED_PERMISSIONS = "port-forward and exec permissions"
GATEWAY = "Gateway API CRDs"
CNPG = "CloudNativePG"
NAMESPACES = "namespaces"
BUILDS = "image-build pods"
LOAD_BALANCER = "load balancer"
NETWORK_POLICY = "NetworkPolicy enforcement"

MIN_KUBERNETES = (1, 30)
"""The oldest Kubernetes blueprint runs on: its admission policies are admissionregistration.k8s.io/v1
ValidatingAdmissionPolicies (components/pod_security.py, components/ci_access.py), GA in 1.30
(https://kubernetes.io/blog/2024/04/24/validating-admission-policy-ga/), as is the `appArmorProfile`
field the image builds' container sets (https://kubernetes.io/docs/tutorials/security/apparmor/)."""
TESTED_KUBERNETES = ((1, 33), (1, 35))
"""GitLab 19's tested range of Kubernetes (versions.py, beside KIND_NODE_IMAGE): outside it, a warning."""

CLUSTER_WIDE = (
    "namespaces",
    "customresourcedefinitions.apiextensions.k8s.io",
    "clusterroles.rbac.authorization.k8s.io",
    "clusterrolebindings.rbac.authorization.k8s.io",
    "validatingadmissionpolicies.admissionregistration.k8s.io",
    "validatingadmissionpolicybindings.admissionregistration.k8s.io",
    "validatingwebhookconfigurations.admissionregistration.k8s.io",
    "mutatingwebhookconfigurations.admissionregistration.k8s.io",
)
"""What phase2 creates outside any namespace: its namespaces and admission policies, and the charts'
CRDs, cluster roles and bindings, and CloudNativePG's webhook configurations."""

GATEWAY_CRD = "gateways.gateway.networking.k8s.io"
BUNDLE_VERSION = "gateway.networking.k8s.io/bundle-version"
CHANNEL = "gateway.networking.k8s.io/channel"
"""The annotations every Gateway API CRD carries (kubernetes-sigs/gateway-api config/crd)."""

CNPG_CRD = "clusters.postgresql.cnpg.io"
CNPG_RELEASE = ("cnpg", "cnpg-system")
"""blueprint's own CloudNativePG: the Helm release and namespace components/postgres.py installs it as,
which Helm writes on what it installs (meta.helm.sh/release-name, meta.helm.sh/release-namespace)."""
HELM_RELEASE = ("meta.helm.sh/release-name", "meta.helm.sh/release-namespace")

BUILD_NAMESPACE = "gitlab-runner-image-build"
"""The image-build runner's namespace (components/runner.py), labelled Pod Security `privileged`."""
AUTOPILOT = re.compile(r"GKE Warden|autogke-|Autopilot")
"""What GKE Autopilot's admission (GKE Warden) says when it refuses a pod: its webhook's message names
the constraint (`denied by autogke-...`) and "not allowed in Autopilot"."""
POD_SECURITY_REFUSAL = "violates PodSecurity"
"""Pod Security admission's refusal (k8s.io/pod-security-admission): `violates PodSecurity "baseline:latest"`."""

LOAD_BALANCER_PROVIDERS = {
    "gce": "Google Cloud",
    "aws": "AWS",
    "azure": "Azure",
    "digitalocean": "DigitalOcean",
    "linode": "Linode",
    "hcloud": "Hetzner Cloud",
    "openstack": "OpenStack",
    "k3s": "k3s (its ServiceLB)",
}
"""Node `spec.providerID` schemes (`<provider>://<id>`, the Node API reference) of cloud controllers that
provision a LoadBalancer Service's address themselves."""
LOAD_BALANCER_CRDS = {"ipaddresspools.metallb.io": "MetalLB", "ciliumloadbalancerippools.cilium.io": "Cilium's LB IPAM"}
"""CRDs of in-cluster load balancers: with a pool configured, they give LoadBalancer Services an address."""

_TIMEOUT = 30
_GIT_VERSION = re.compile(r'"gitVersion"\s*:\s*"(v?(\d+)\.(\d+)\.(\d+)[^"]*)"')


def _kubectl(machine: Machine, context: str, *args: str) -> tuple[int, str]:
    """`kubectl` against `context`, a request timing out before the call does (`REQUEST_TIMEOUT`)."""
    return machine.run(kubectl_argv(context, *args), timeout=_TIMEOUT)


def _json(output: str) -> Any:
    """The JSON document kubectl printed, past any warning an exec credential plugin wrote before it; None if none."""
    start = output.find("{")
    try:
        return json.JSONDecoder().raw_decode(output[start:])[0] if start >= 0 else None
    except ValueError:
        return None


def _default_domain() -> str:
    from stacks.config.schema import default_string

    return default_string("domain")


def _set_key(stack: str, key: str, example: str) -> str:
    from stacks.config.schema import ways_to_set

    return ways_to_set(stack, key, example)


def cluster_checks(machine: Machine, cluster: ClusterConfig, *, stack: str = "phase1", domain: str = "") -> list[Check]:
    """Every check of the existing cluster `cluster` names, with `kubectl`; `stack` is the one whose
    config sets `blueprint:kubeContext` and the rest, for the fixes; `domain` the platform's ("": the default). A check that cannot be made
    (no kubectl, no answer) stops the ones after it: they would say the same.
    """
    context = cluster.kube_context
    if machine.which("kubectl") is None:
        fix = download_fix(machine, KUBECTL, "https://kubernetes.io/docs/tasks/tools/")
        missing = Check(name=KUBECTL, ok=False, found="no `kubectl` on PATH: the existing cluster is checked with it", fix=fix)
        return [missing, _unchecked(CONTEXT, "kubectl is missing (above)", "install kubectl (above), then run the doctor again")]
    found = _context_check(machine, context, stack)
    if not found.ok:
        return [found]
    answer = _api_check(machine, context)
    if not isinstance(answer, tuple):
        return [found, answer]
    api, server = answer
    crds = _crds(machine, context)
    return [
        found,
        api,
        _kubectl_check(machine, server),
        _version_check(server),
        _storage_check(machine, cluster, stack),
        _permissions_check(machine, context),
        _namespaced_permissions_check(machine, context, cluster.tls_certificate),
        _namespaces_check(machine, context),
        _gateway_check(machine, context, crds),
        _cnpg_check(machine, context, crds),
        _builds_check(machine, context),
        _load_balancer_check(machine, cluster, crds, stack),
        _network_policy_check(machine, context),
        certificate_check(
            lambda *args: _kubectl(machine, context, *args),
            cluster,
            domain=domain or _default_domain(),
            set_key=lambda key, example: _set_key(stack, key, example),
        ),
    ]


def _unchecked(name: str, why: str, fix: str) -> Check:
    return Check(name=name, ok=False, found=f"not checked: {why}", fix=fix)


def _context_check(machine: Machine, context: str, stack: str) -> Check:
    code, output = machine.run(["kubectl", "config", "get-contexts", "-o", "name"], timeout=_TIMEOUT)
    contexts = output.split() if code == 0 else []
    if context in contexts:
        return Check(name=CONTEXT, ok=True, found=f"{context}, in your kubeconfig")
    where = f"KUBECONFIG={machine.environ()['KUBECONFIG']}" if machine.environ().get("KUBECONFIG") else "~/.kube/config"
    has = f"it has {', '.join(contexts)}" if contexts else "it has none"
    if code != 0:
        has = f"`kubectl config get-contexts` failed: {first_line(output)}"
    return Check(
        name=CONTEXT,
        ok=False,
        found=f"no context {context!r} in your kubeconfig ({where}): {has}",
        fix=f"add the cluster's context to your kubeconfig (your cloud's CLI writes it: `gcloud container clusters get-credentials`, "
        f"`aws eks update-kubeconfig`, `az aks get-credentials`), or name one it has: {_set_key(stack, 'kubeContext', '<context>')}",
    )


def _api_check(machine: Machine, context: str) -> tuple[Check, tuple[int, int, int, str]] | Check:
    """Whether the API server of `context` answers, and then its version (major, minor, patch, as it says it)."""
    code, output = _kubectl(machine, context, "get", "--raw", "/version")
    match = _GIT_VERSION.search(output) if code == 0 else None
    if match is None:
        return Check(
            name=API,
            ok=False,
            found=f"the API server of {context} does not answer: {first_line(output)}",
            fix=f"make it reachable from this machine (the cluster running, a VPN, the credentials of the context: "
            f"`kubectl --context {shlex.quote(context)} get --raw /version` says what is wrong), then run the doctor again",
        )
    server = (int(match.group(2)), int(match.group(3)), int(match.group(4)), match.group(1))
    return Check(name=API, ok=True, found=f"{context} answers: Kubernetes {server[3]}"), server


def _version_check(server: tuple[int, int, int, str]) -> Check:
    major, minor, _, said = server
    low, high = TESTED_KUBERNETES
    tested = f"GitLab 19 is tested on {low[0]}.{low[1]} to {high[0]}.{high[1]}"
    if (major, minor) < MIN_KUBERNETES:
        return Check(
            name=VERSION,
            ok=False,
            found=f"{said}, older than {MIN_KUBERNETES[0]}.{MIN_KUBERNETES[1]}: blueprint's admission policies "
            "(ValidatingAdmissionPolicy, admissionregistration.k8s.io/v1) need it",
            fix=f"upgrade the cluster to Kubernetes {low[0]}.{low[1]} or later ({tested}), or use another cluster",
        )
    if low <= (major, minor) <= high:
        return Check(name=VERSION, ok=True, found=f"{said}: {tested}")
    return Check(
        name=VERSION,
        ok=True,
        found=f"{said}: blueprint runs on {MIN_KUBERNETES[0]}.{MIN_KUBERNETES[1]} and later, but {tested}",
        advice=f"if GitLab misbehaves, a cluster on {low[0]}.{low[1]} to {high[0]}.{high[1]} is the tested one",
    )


def _kubectl_check(machine: Machine, server: tuple[int, int, int, str]) -> Check:
    """The user's kubectl, within the supported skew of this cluster's API server (a warning when not)."""
    _, output = machine.run(["kubectl", "version", "--client"], timeout=10)
    client = kubectl_version_in(output)
    if client is None:
        return Check(name=KUBECTL, ok=True, found=f"its version unknown: {first_line(output)}")
    shown = "v{}.{}.{}".format(*client)
    major, minor = server[:2]
    if client[0] == major and abs(client[1] - minor) <= KUBECTL_SKEW:
        return Check(name=KUBECTL, ok=True, found=shown)
    supported = f"v{major}.{minor - KUBECTL_SKEW} to v{major}.{minor + KUBECTL_SKEW}"
    return Check(
        name=KUBECTL,
        ok=True,
        found=f"{shown}, outside kubectl's supported version skew of the cluster's {server[3]} ({supported}); it may still work",
        advice=f"install a kubectl from {supported} (https://kubernetes.io/docs/tasks/tools/) and put it first on your PATH",
    )


def _storage_check(machine: Machine, cluster: ClusterConfig, stack: str) -> Check:
    code, output = _kubectl(machine, cluster.kube_context, "get", "storageclasses", "-o", "json")
    listed = _json(output) if code == 0 else None
    if not isinstance(listed, dict):
        return _unchecked(STORAGE, f"`kubectl get storageclasses` failed: {first_line(output)}", "run it to see why, then the doctor again")
    classes = {item["metadata"]["name"]: item for item in listed.get("items", [])}
    names = ", ".join(classes) or "none"

    def shown(name: str) -> str:
        item = classes[name]
        return f"{name} ({item.get('provisioner')}, reclaimPolicy {item.get('reclaimPolicy', 'Delete')})"

    wanted = cluster.storage_class
    if wanted:
        if wanted in classes:
            return Check(name=STORAGE, ok=True, found=f"{shown(wanted)}, as blueprint:storageClass names")
        return Check(
            name=STORAGE,
            ok=False,
            found=f"no StorageClass {wanted!r} (blueprint:storageClass); the cluster has {names}",
            fix=f"name one it has, or none for the cluster's default: {_set_key(stack, 'storageClass', '<class>')}",
        )
    from components.existing_cluster import DEFAULT_CLASS_ANNOTATIONS, default_storage_class  # phase1's rule

    if (default := default_storage_class(listed)) is not None:
        return Check(name=STORAGE, ok=True, found=f"{shown(default)}, the cluster's default (blueprint:storageClass is empty)")
    patch = json.dumps({"metadata": {"annotations": {DEFAULT_CLASS_ANNOTATIONS[0]: "true"}}}, separators=(",", ":"))
    mark = f"kubectl --context {shlex.quote(cluster.kube_context)} patch storageclass <class> -p {shlex.quote(patch)}"
    return Check(
        name=STORAGE,
        ok=False,
        found=f"blueprint:storageClass is empty and the cluster has no default StorageClass; it has {names}",
        fix=f"name one: {_set_key(stack, 'storageClass', '<class>')}; or make one the default: `{mark}`",
    )


def _permissions_check(machine: Machine, context: str) -> Check:
    """A SelfSubjectAccessReview per kind of object (`kubectl auth can-i`, which prints yes or no)."""
    denied: list[str] = []
    unknown: list[str] = []
    for resource in CLUSTER_WIDE:
        # --all-namespaces: asked as the objects are made, outside any namespace (a RoleBinding's grant does not count).
        _, output = _kubectl(machine, context, "auth", "can-i", "create", resource, "--all-namespaces")
        answer = _can_i(output)
        if answer is False:
            denied.append(resource)
        elif answer is None:
            unknown.append(f"{resource} ({first_line(output)})")
    if not denied and not unknown:
        return Check(
            name=PERMISSIONS, ok=True, found=f"your user may create {len(CLUSTER_WIDE)} kinds of cluster-wide objects blueprint makes"
        )
    parts = [f"your user may not create {', '.join(denied)}"] if denied else []
    parts += [f"could not ask about {', '.join(unknown)}"] if unknown else []
    said = "; ".join(parts)
    return Check(
        name=PERMISSIONS,
        ok=False,
        found=f"{said}: phase2 installs operators, their CRDs and admission policies",
        fix=f"use a context whose user is the cluster's admin, or ask the cluster's admins for these rights (cluster-admin is "
        f"simplest); `kubectl --context {shlex.quote(context)} auth can-i create <resource> --all-namespaces` asks one",
    )


def _can_i(output: str) -> bool | None:
    """What `kubectl auth can-i` answered: yes, no (with or without its reason), or None: no answer."""
    lines = [line.strip() for line in output.splitlines()]
    if "yes" in lines:
        return True
    return False if any(line == "no" or line.startswith("no - ") for line in lines) else None


def _namespaced_permissions_check(machine: Machine, context: str, tls_certificate: str) -> Check:
    """The rights `up` uses in phase2's namespaces from this machine (stacks/exposure.py `laptop_rights`),
    which no cluster-wide kind above implies: a custom ClusterRole without them would pass the check
    above and fail half-way through `up`. Asked in each namespace, which need not exist yet. With a
    brought certificate, also the ReferenceGrant phase2 makes in its Secret's namespace, one of the user's.
    """
    from stacks.exposure import laptop_rights

    grant = (brought_tls.REFERENCE_GRANTS, brought_tls.split(tls_certificate)[0]) if tls_certificate else None
    denied: list[str] = []
    for resource, namespace in (*laptop_rights(), *([grant] if grant else [])):
        _, output = _kubectl(machine, context, "auth", "can-i", "create", resource, "--namespace", namespace)
        answer = _can_i(output)
        if answer is not True:
            denied.append(f"{resource} in {namespace}" + ("" if answer is False else f" (no answer: {first_line(output)})"))
    namespaces = " and ".join(sorted({namespace for _, namespace in laptop_rights()}))
    if not denied:
        granted = f", and create the ReferenceGrant in {grant[1]}" if grant else ""
        return Check(name=NAMESPACED_PERMISSIONS, ok=True, found=f"your user may port-forward to and exec into phase2's pods{granted}")
    beside = ", and a ReferenceGrant beside your certificate" if grant else ""
    return Check(
        name=NAMESPACED_PERMISSIONS,
        ok=False,
        found=f"your user may not create {', '.join(denied)}: `up` reaches OpenBao and GitLab through port-forwards, "
        f"and makes GitLab's token in its toolbox pod{beside}",
        fix=f"ask the cluster's admins for `create` on pods/portforward and pods/exec in namespaces {namespaces} (a "
        "ClusterRole bound cluster-wide, as the namespaces do not exist yet)"
        + (f", and `create` on {grant[0]} in namespace {grant[1]}" if grant else "")
        + f", or use the admin's context; `kubectl --context {shlex.quote(context)} auth can-i create pods/portforward "
        "--namespace gitlab` asks one",
    )


def _crds(machine: Machine, context: str) -> list[str] | None:
    """The names of the cluster's CRDs, or None when they cannot be listed."""
    code, output = _kubectl(machine, context, "get", "customresourcedefinitions", "-o", "name")
    if code != 0:
        return None
    return [line.strip().rpartition("/")[2] for line in output.splitlines() if line.strip().startswith("customresourcedefinition")]


def _annotations(machine: Machine, context: str, crd: str) -> Mapping[str, str] | None:
    code, output = _kubectl(machine, context, "get", "customresourcedefinition", crd, "-o", "json")
    found = _json(output) if code == 0 else None
    return found.get("metadata", {}).get("annotations", {}) if isinstance(found, dict) else None


def _gateway_check(machine: Machine, context: str, crds: Sequence[str] | None) -> Check:
    from components.gateway_crds import GatewayCrdsArgs

    ours = f"{versions.GATEWAY_API_BUNDLE_VERSION} {GatewayCrdsArgs().channel}"
    if crds is None:
        return _unchecked(GATEWAY, "the cluster's CRDs cannot be listed", f"`kubectl --context {shlex.quote(context)} get crd` says why")
    if GATEWAY_CRD not in crds:
        return Check(name=GATEWAY, ok=True, found=f"none yet: phase2 installs Gateway API {ours}")
    annotations = _annotations(machine, context, GATEWAY_CRD) or {}
    theirs = f"{annotations.get(BUNDLE_VERSION, '(no bundle version)')} {annotations.get(CHANNEL, '(no channel)')}"
    if theirs == ours:
        return Check(name=GATEWAY, ok=True, found=f"Gateway API {theirs}, the bundle blueprint installs")
    return Check(
        name=GATEWAY,
        ok=False,
        found=f"Gateway API {theirs} is installed; blueprint installs {ours} (GitLab's SSH route needs TCPRoute v1alpha2), "
        "and applying it over another bundle changes the Gateway API under everything else on the cluster",
        fix="use a cluster without Gateway API CRDs, or with this bundle; or, when nothing on the cluster uses the ones there, "
        f"remove them (a cloud that installs them: turn its Gateway API off), then run the doctor again: "
        f"`kubectl --context {shlex.quote(context)} get crd -o name | grep gateway.networking.k8s.io` lists them",
    )


def _namespaces_check(machine: Machine, context: str) -> Check:
    """phase1's own refusal (components/existing_cluster.py), on the namespaces phase2 makes, asked now."""
    from cli import backend
    from components import existing_cluster
    from stacks.config import paths
    from stacks.phase2 import namespaces

    code, output = _kubectl(machine, context, *existing_cluster.NAMESPACES_ARGS.split())
    listed = _json(output) if code == 0 else None
    if not isinstance(listed, dict):
        return _unchecked(
            NAMESPACES, "the cluster's namespaces cannot be listed", f"`kubectl --context {shlex.quote(context)} get namespaces` says why"
        )
    owner = paths.read_checkout_id(paths.CHECKOUT_ID_FILE) or ""
    if foreign := existing_cluster.foreign_namespaces(listed, namespaces(), owner):
        found, fix = existing_cluster.foreign_refusal(context, foreign, owner)
        if not owner and backend.is_users(machine.environ()):
            # A second operator's new checkout: its id is the one phase1 recorded, taken by the next `up` (cli/backend.py).
            fix = (
                f"if the platform's phase1 is on the backend PULUMI_BACKEND_URL names ({backend.shown(backend.url(machine.environ()))}), "
                f"this checkout has no id yet: `uv run blueprint up` takes the one recorded there, then checks again. Else: {fix}"
            )
        return Check(name=NAMESPACES, ok=False, found=found, fix=fix)
    return Check(name=NAMESPACES, ok=True, found="none of phase2's is someone else's")


def _cnpg_check(machine: Machine, context: str, crds: Sequence[str] | None) -> Check:
    if crds is None:
        return _unchecked(CNPG, "the cluster's CRDs cannot be listed", f"`kubectl --context {shlex.quote(context)} get crd` says why")
    if CNPG_CRD not in crds:
        return Check(name=CNPG, ok=True, found=f"none yet: phase2 installs its operator (chart {versions.CNPG_CHART_VERSION})")
    annotations = _annotations(machine, context, CNPG_CRD) or {}
    release = tuple(annotations.get(key, "") for key in HELM_RELEASE)
    if release == CNPG_RELEASE:
        return Check(name=CNPG, ok=True, found=f"blueprint's own (Helm release {release[0]} in {release[1]})")
    by = f"Helm release {release[0]} in namespace {release[1]}" if all(release) else "something other than Helm"
    uninstall = f"`helm uninstall {release[0]} -n {release[1]}`" if all(release) else "what installed it"
    return Check(
        name=CNPG,
        ok=False,
        found=f"a CloudNativePG is installed ({CNPG_CRD}, by {by}): phase2 installs its own operator, and two operators "
        "would both manage the same PostgreSQL clusters (and Helm refuses CRDs it did not install)",
        fix=f"use a cluster without CloudNativePG; or, when none of its PostgreSQL clusters is needed, remove it ({uninstall}, "
        f"then its CRDs, which deletes every cluster they hold: `kubectl --context {shlex.quote(context)} get crd -o name | grep cnpg.io`)",
    )


def trial_build_pod() -> dict[str, Any]:
    """A pod as the image-build runner makes one (components/runner.py `_build_container_context`):
    BuildKit's rootless image, non-root, seccomp and AppArmor Unconfined, privilege escalation allowed.
    """
    from components.runner import BUILDKIT_USER

    context = {
        "allowPrivilegeEscalation": True,
        "runAsUser": BUILDKIT_USER,
        "runAsGroup": BUILDKIT_USER,
        "runAsNonRoot": True,
        "seccompProfile": {"type": "Unconfined"},
        "appArmorProfile": {"type": "Unconfined"},
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "blueprint-doctor-build-", "labels": {"app.kubernetes.io/managed-by": "blueprint-doctor"}},
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "build", "image": versions.BUILDKIT_IMAGE, "securityContext": context}],
        },
    }


def trial_namespace() -> dict[str, Any]:
    """A namespace labelled as the image builds' is (Pod Security `privileged`)."""
    from components.pod_security import pod_security_labels

    labels = pod_security_labels("privileged")
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"generateName": "blueprint-doctor-", "labels": labels}}


def _dry_run(machine: Machine, context: str, document: Mapping[str, Any], *namespace: str) -> tuple[int, str]:
    """`kubectl create --dry-run=server` of `document`: admission runs, nothing is stored."""
    with tempfile.TemporaryDirectory(prefix="blueprint-doctor-") as folder:
        path = Path(folder, "trial.json")
        path.write_text(json.dumps(document))
        return _kubectl(machine, context, "create", "--dry-run=server", "-o", "name", *namespace, "-f", str(path))


def _builds_check(machine: Machine, context: str) -> Check:
    code, output = _dry_run(machine, context, trial_namespace())
    if code != 0:
        return _refused(context, f"a namespace labelled Pod Security `privileged`, as {BUILD_NAMESPACE} is", output)
    code, output = _dry_run(machine, context, trial_build_pod(), "--namespace", "default")
    if code == 0:
        return Check(name=BUILDS, ok=True, found="admitted (tried with a server-side dry run): seccomp and AppArmor Unconfined")
    if "cannot create resource" in output:
        return Check(
            name=BUILDS,
            ok=True,
            found=f"not tried: your user may not create pods in namespace default ({first_line(output)})",
            advice="if the apps' image builds are refused, the job's log says by which policy",
        )
    if POD_SECURITY_REFUSAL in output and not AUTOPILOT.search(output):
        # Pod Security refused it in `default`, before any webhook ran; blueprint's own namespace is `privileged`.
        return Check(
            name=BUILDS,
            ok=True,
            found=f"namespace default's Pod Security level refuses it ({first_line(output)}); {BUILD_NAMESPACE} is labelled "
            "privileged, which admits it there, but the policies after Pod Security were not tried",
            advice=f"if the apps' image builds are refused, the job's log says by which policy: it must let pods in {BUILD_NAMESPACE} "
            "run with seccomp and AppArmor Unconfined",
        )
    return _refused(context, "a pod like the image builds' (seccomp and AppArmor Unconfined, for rootless BuildKit)", output)


def _refused(context: str, what: str, output: str) -> Check:
    said = " ".join(line.strip() for line in output.strip().splitlines())[:600]
    if AUTOPILOT.search(output):
        return Check(
            name=BUILDS,
            ok=False,
            found=f"GKE Autopilot refuses {what}: {said}",
            fix="Autopilot does not run such pods; use a GKE Standard cluster (or another cluster that allows them) for the platform",
        )
    return Check(
        name=BUILDS,
        ok=False,
        found=f"the cluster's admission refuses {what}: {said}",
        fix=f"ask the cluster's admins to let pods in namespace {BUILD_NAMESPACE} run with seccomp and AppArmor Unconfined and "
        "privilege escalation (rootless BuildKit needs them), or use another cluster; the message names the policy",
    )


def _load_balancer_check(machine: Machine, cluster: ClusterConfig, crds: Sequence[str] | None, stack: str) -> Check:
    """A warning, never a failure: no API says whether a LoadBalancer Service will get an address."""
    from stacks.config.cluster import NODE_PORT

    if cluster.exposure == NODE_PORT:
        return Check(name=LOAD_BALANCER, ok=True, found="not needed: blueprint:exposure is nodePort")
    context = cluster.kube_context
    class_name = str(cluster.gateway_service.get("loadBalancerClass") or "")
    # Only LoadBalancer Services may have a class (the API server refuses it on others).
    chosen = f'@.spec.loadBalancerClass=="{class_name}"' if class_name else '@.spec.type=="LoadBalancer"'
    path = f'{{range .items[?({chosen})]}}{{.metadata.namespace}}/{{.metadata.name}} {{.status.loadBalancer.ingress[*].ip}}{{.status.loadBalancer.ingress[*].hostname}}{{"\\n"}}{{end}}'  # noqa: E501
    code, output = _kubectl(machine, context, "get", "services", "--all-namespaces", "-o", f"jsonpath={path}")
    served = [line.split()[0] for line in output.splitlines() if code == 0 and len(line.split()) > 1]
    if class_name:
        from cli.doctor.load_balancer_class import class_check

        return class_check(LOAD_BALANCER, class_name, served, crds, stack)
    if served:
        return Check(name=LOAD_BALANCER, ok=True, found=f"the cluster gives LoadBalancer Services an address (Service {served[0]} has one)")
    code, output = _kubectl(machine, context, "get", "nodes", "-o", "jsonpath={.items[*].spec.providerID}")
    schemes = {provider.partition("://")[0] for provider in output.split()} if code == 0 else set()
    if known := sorted(LOAD_BALANCER_PROVIDERS[scheme] for scheme in schemes if scheme in LOAD_BALANCER_PROVIDERS):
        return Check(name=LOAD_BALANCER, ok=True, found=f"the nodes run on {', '.join(known)}, whose controller provisions load balancers")
    if pools := sorted(name for crd, name in LOAD_BALANCER_CRDS.items() if crd in (crds or ())):
        return Check(name=LOAD_BALANCER, ok=True, found=f"{', '.join(pools)} is installed (with an address pool, it provisions them)")
    return Check(
        name=LOAD_BALANCER,
        ok=True,
        found="no sign the cluster provisions load balancers (no LoadBalancer Service with an address, no cloud provider on the "
        "nodes, no MetalLB or Cilium LB IPAM)",
        advice="if it cannot, `up` waits for the gateway's address until it times out: install one (MetalLB, for example), or "
        f"reach the gateway on the nodes' ports instead: {_set_key(stack, 'exposure', NODE_PORT)}",
    )


def _network_policy_check(machine: Machine, context: str) -> Check:
    """A warning, never a failure: whether some plugin enforces the Runners' NetworkPolicies (cli/doctor/network_policy.py)."""
    from cli.doctor.network_policy import enforcer

    code, output = _kubectl(machine, context, "get", "daemonsets", "--all-namespaces", "-o", "json")
    daemonsets = _json(output) if code == 0 else None
    code, output = _kubectl(machine, context, "get", "nodes", "-o", "jsonpath={.items[*].spec.providerID}")
    schemes = {provider.partition("://")[0] for provider in output.split()} if code == 0 else set()
    if found := enforcer(daemonsets, schemes):
        return Check(name=NETWORK_POLICY, ok=True, found=f"{found} enforces the CI jobs' NetworkPolicies")
    return Check(
        name=NETWORK_POLICY,
        ok=True,
        found="no sign of a network plugin that enforces NetworkPolicy"
        + ("" if daemonsets is not None else " (the DaemonSets could not be listed)"),
        advice="without one, the CI jobs' egress policies are stored and do nothing: a job can reach Postgres, OpenBao and "
        "Valkey. Turn enforcement on (EKS: the VPC CNI's enableNetworkPolicy; GKE: Dataplane V2 or network policy "
        "enforcement; AKS: a network policy engine), or install a plugin that enforces it (Calico, Cilium)",
    )
