"""Explain a failed phase in terms a user can act on.

Pulumi's own output ends with a wall of diagnostics; what a user needs is which phase and which
resource failed, and, when Kubernetes timed out waiting (a Helm release whose pods never became
Ready), *why*: the pods that are not Ready, what their containers wait for (an image that does not
exist, a crash loop, no node to schedule on) and their last events. The error text alone never says
that, so `gather` asks the cluster, and never raises: an explanation must not fail over a cluster
that is gone. Last, the command that resumes: every step is re-runnable, so resuming is safe.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stacks.config.schema import ENV_STEP

STACK_TYPE = "pulumi:pulumi:Stack"
GATHER_TIMEOUT = 60
"""Seconds for each kind/kubectl call: a cluster that hangs must not hang the explanation."""

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# An engine diagnostic header, `  kubernetes:helm.sh/v3:Release (gitlab-chart):`, alone on its line.
_DIAGNOSTIC = re.compile(r"^\s*(?P<type>[A-Za-z0-9_.-]+:[A-Za-z0-9_./-]*:[A-Za-z0-9_.$-]+) \((?P<name>[^()]+)\):\s*$", re.MULTILINE)
_URN = re.compile(r"urn:pulumi:[^\s\"'`]+")
_TIMEOUT = re.compile(
    r"context deadline exceeded|timed out waiting|\btime(?:d)?[ -]?out\b|deadline ?exceeded|"
    r"failed to become available within allocated timeout",
    re.IGNORECASE,
)
_NEVER = datetime.min.replace(tzinfo=UTC)

GITLAB_NAMESPACE = "gitlab"
GATEWAY = "gitlab-gw"
"""GitLab's Gateway (components/gitlab.py GATEWAY), in GITLAB_NAMESPACE, as are Envoy and its Service."""
GATEWAY_GATE = "gitlab-gateway-programmed"
"""The resource that waits for the Gateway to be Programmed (components/gitlab.py)."""
ENVOY_SERVICE = "gitlab-envoy"
ENVOY_CONTROLLER = "envoy-gateway"
"""Envoy Gateway's controller Deployment (gateway-helm templates/envoy-gateway-deployment.yaml)."""
LISTENER_SECRETS = ("gitlab-wildcard-tls", "gitlab-tls", "registry-tls", "kas-tls", "pages-tls", "minio-tls", "kas-workspaces-tls")
"""The Secrets the Gateway's listeners take their certificates from (components/tls.py LISTENER_SECRETS)."""
# What the GitLab clients say when GitLab's URL does not answer (providers/http.py `send`, gitlab_token.py),
# and what Envoy answers when it has no route or no backend yet.
_GITLAB_UNREACHABLE = re.compile(
    r"GitLab: [A-Z]+ /api/v4\S* failed \(no answer\): (?:nothing answers at |\S+ gave no answer within )|"
    r"the gateway answered \d+ for GitLab|did not accept the seeded admin token within \S+ \(no answer\)|"
    r"GitLab: [A-Z]+ /api/v4\S* failed \(HTTP 50[234]\)"
)
# What reaches GitLab through its Gateway: the gate, the release, the admin token, the group, the runners.
_THROUGH_GATEWAY = re.compile(rf"\((?:{GATEWAY_GATE}|gitlab-[a-z-]+|apps-group|[a-z-]*runner[a-z-]*)\)$")


@dataclass(frozen=True, kw_only=True)
class PodEvent:
    """One Kubernetes event of a pod, as `kubectl get events` shows it."""

    time: str
    """When it was last seen (an RFC 3339 timestamp), or "" when the event carries none."""
    type: str
    """Normal or Warning."""
    reason: str
    message: str
    count: int = 1


@dataclass(frozen=True, kw_only=True)
class PodReport:
    """A pod that is not Ready, and why."""

    namespace: str
    name: str
    phase: str
    """The pod's phase: Pending, Running, Failed, Unknown."""
    reasons: tuple[str, ...]
    """What holds it back: `Unschedulable: <scheduler message>`, `<container>: ImagePullBackOff (<message>)`, ..."""
    events: tuple[PodEvent, ...]
    """Its last events, oldest first."""


def _clean(text: str) -> str:
    return _ANSI.sub("", text)


def _type_and_name(urn: str) -> str | None:
    """`urn:pulumi:<stack>::<project>::<parent types>$<type>::<name>` -> `<type> (<name>)`."""
    parts = urn.rstrip(".,:;)]").split("::", 3)
    if len(parts) != 4 or not parts[3]:
        return None
    return f"{parts[2].rsplit('$', 1)[-1]} ({parts[3]})"


def failed_resource(error_text: str) -> str | None:
    """The resource that failed, as `type (name)`, from Pulumi's output: the first engine diagnostic
    that carries an error, else the first URN named. The stack itself is named only when nothing else
    is (then the program failed, not a resource), since Pulumi always adds an "update failed" for it.
    """
    text = _clean(error_text)
    headers = list(_DIAGNOSTIC.finditer(text))
    failing = []
    for i, header in enumerate(headers):
        body = text[header.end() : headers[i + 1].start() if i + 1 < len(headers) else len(text)]
        if re.search(r"^\s*error:", body, re.MULTILINE):
            failing.append(f"{header['type']} ({header['name'].strip()})")
    from_urns = [found for found in (_type_and_name(match.group()) for match in _URN.finditer(text)) if found]
    for candidate in [*failing, *from_urns]:
        if not candidate.startswith(f"{STACK_TYPE} "):
            return candidate
    return next(iter([*failing, *from_urns]), None)


def is_timeout(error_text: str) -> bool:
    """Whether Kubernetes (Helm, or pulumi-kubernetes' await logic) gave up waiting for readiness."""
    return _TIMEOUT.search(_clean(error_text)) is not None


def is_gateway_suspect(phase: str, error_text: str) -> bool:
    """Whether GitLab's Gateway may be why `phase` failed: GitLab's URL did not answer, or in phase 2
    the Programmed gate failed, or something that reaches GitLab gave up waiting.
    """
    text = _clean(error_text)
    if _GITLAB_UNREACHABLE.search(text):
        return True
    resource = failed_resource(text) or ""
    if resource.endswith(f"({GATEWAY_GATE})"):
        return True
    return phase == "2" and is_timeout(text) and _THROUGH_GATEWAY.search(resource) is not None


def gateway_help(kind_cluster_name: str | None = None) -> list[str]:
    """What to check when GitLab's Gateway is not Programmed, with the kubectl commands."""
    from stacks.outputs import kind_context

    kubectl = ["kubectl", *(["--context", kind_context(kind_cluster_name)] if kind_cluster_name else []), "-n", GITLAB_NAMESPACE]

    def command(*argv: str) -> str:
        return "      " + shlex.join([*kubectl, *argv])

    return [
        "",
        f"GitLab is reached through its Gateway {GITLAB_NAMESPACE}/{GATEWAY}; nothing can call GitLab before Envoy Gateway",
        "marks it Programmed (condition Programmed=True). What to check:",
        "  - its conditions: Programmed's reason says what is missing (AddressNotAssigned: no Envoy Service;",
        "    NoResources: no Envoy pod available), and each listener's ResolvedRefs and Programmed:",
        command("describe", "gateway", GATEWAY),
        "  - the Envoy pods: running, Ready, on the GitLab nodes:",
        command("get", "pods", "-o", "wide", "-l", f"gateway.envoyproxy.io/owning-gateway-name={GATEWAY}"),
        "  - the listener Secrets: a listener whose certificate Secret is missing is not Programmed:",
        command("get", "secrets", *LISTENER_SECRETS),
        f"  - the Service patch: {ENVOY_SERVICE} must exist with its NodePorts (a patched port that matches no",
        "    listener is there but answers nothing); Envoy Gateway's log says why one is missing:",
        command("get", "service", ENVOY_SERVICE),
        command("logs", f"deployment/{ENVOY_CONTROLLER}", "--tail=50"),
    ]


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _last_seen(event: Mapping[str, Any]) -> str:
    """When an event was last seen: kubelet events carry lastTimestamp; events.k8s.io ones (the
    scheduler's) only eventTime, and series.lastObservedTime once repeated.
    """
    series = event.get("series") or {}
    for value in (
        event.get("lastTimestamp"),
        series.get("lastObservedTime"),
        event.get("eventTime"),
        event.get("firstTimestamp"),
        (event.get("metadata") or {}).get("creationTimestamp"),
    ):
        if _parse_time(value) is not None:
            return str(value)
    return ""


def _pod_events(events: Mapping[str, Any], namespace: str, name: str, limit: int) -> tuple[PodEvent, ...]:
    mine = []
    for event in events.get("items") or []:
        involved = event.get("involvedObject") or {}
        if involved.get("kind") == "Pod" and involved.get("name") == name and involved.get("namespace") == namespace:
            mine.append(event)
    mine.sort(key=lambda event: _parse_time(_last_seen(event)) or _NEVER)  # stable: ties keep the API's order
    chosen = mine[-limit:] if limit > 0 else []
    return tuple(
        PodEvent(
            time=_last_seen(event),
            type=str(event.get("type") or ""),
            reason=str(event.get("reason") or ""),
            message=" ".join(str(event.get("message") or "").split()),
            count=int(event.get("count") or (event.get("series") or {}).get("count") or 1),
        )
        for event in chosen
    )


def _condition(pod: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind:
            return dict(condition)
    return {}


def _reasons(pod: Mapping[str, Any]) -> tuple[str, ...]:
    status = pod.get("status") or {}
    reasons = []
    scheduled = _condition(pod, "PodScheduled")
    if scheduled.get("status") == "False":
        reasons.append(f"{scheduled.get('reason') or 'NotScheduled'}: {scheduled.get('message') or 'no node can take the pod'}")
    for container in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]:
        state = container.get("state") or {}
        waiting, terminated = state.get("waiting"), state.get("terminated")
        if waiting and waiting.get("reason") not in (None, "PodInitializing", "ContainerCreating"):
            message = f" ({' '.join(str(waiting['message']).split())})" if waiting.get("message") else ""
            reasons.append(f"{container.get('name')}: {waiting['reason']}{message}")
        elif terminated and terminated.get("reason") != "Completed":
            reasons.append(f"{container.get('name')}: {terminated.get('reason') or 'Terminated'} (exit code {terminated.get('exitCode')})")
        elif state.get("running") and not container.get("ready"):
            reasons.append(f"{container.get('name')}: running, not ready (its readiness probe fails)")
    if not reasons and status.get("reason"):
        reasons.append(f"{status['reason']}: {status.get('message') or ''}".rstrip(": "))
    return tuple(reasons)


def not_ready_pods(pods: Mapping[str, Any], events: Mapping[str, Any], limit: int = 3) -> list[PodReport]:
    """The pods whose Ready condition is not True, except those that completed (Succeeded), sorted by
    namespace and name, each with what its containers wait for and its last `limit` events.
    """
    reports = []
    for pod in pods.get("items") or []:
        status = pod.get("status") or {}
        if status.get("phase") == "Succeeded" or _condition(pod, "Ready").get("status") == "True":
            continue
        metadata = pod.get("metadata") or {}
        namespace, name = str(metadata.get("namespace") or ""), str(metadata.get("name") or "")
        reports.append(
            PodReport(
                namespace=namespace,
                name=name,
                phase=str(status.get("phase") or "Unknown"),
                reasons=_reasons(pod),
                events=_pod_events(events, namespace, name, limit),
            )
        )
    return sorted(reports, key=lambda report: (report.namespace, report.name))


def _pod_lines(reports: Iterable[PodReport]) -> list[str]:
    lines = []
    for report in reports:
        lines.append(f"  {report.namespace}/{report.name}  ({report.phase})")
        lines += [f"    waiting on: {reason}" for reason in report.reasons]
        for event in report.events:
            repeated = f" (x{event.count})" if event.count > 1 else ""
            lines.append(f"    {event.time or '-'}  {event.type} {event.reason}{repeated}: {event.message}")
    return lines


def explain(
    phase: str,
    stack: str,
    error_text: str,
    pods: Mapping[str, Any] | None,
    events: Mapping[str, Any] | None,
    *,
    resume: str | None = None,
    kind_cluster_name: str | None = None,
) -> str:
    """What to tell the user when `phase` (its stack `stack`) failed with Pulumi's `error_text`; for a
    Kubernetes timeout, `pods` and `events` (`kubectl get ... -A -o json`, or None when the cluster
    could not be asked) say which pods held it up. `resume` is the command that resumes (an `up` of
    the phase unless said otherwise: a failed destroy resumes with the same destroy). When GitLab's
    Gateway may be the cause, what to check about it, with kubectl commands for `kind_cluster_name`.
    """
    resource = failed_resource(error_text)
    lines = [f"Phase {phase} (stack {stack}) failed" + (f" at {resource}." if resource else ".")]
    said = _errors(error_text)
    if said:
        lines += ["What Pulumi said:", *(f"  {line}" for line in said)]
    if is_timeout(error_text):
        lines.append("Kubernetes gave up waiting for it to become ready.")
        if pods is None:
            lines.append("The cluster could not be asked which pods are not Ready; look with `kubectl get pods -A`.")
        else:
            reports = not_ready_pods(pods, events or {})
            if reports:
                lines.append("Pods that are not Ready, with their last events:")
                lines += _pod_lines(reports)
            else:
                lines.append("Every pod is Ready by now: it may just have been slow; resuming will likely succeed.")
    if is_gateway_suspect(phase, error_text):
        lines += gateway_help(kind_cluster_name)
    lines += [
        "",
        "Fix the cause, then resume; every step is re-runnable, so it picks up where this one stopped:",
        f"  {resume or f'uv run blueprint up --phase {phase}'}",
    ]
    if resume is None or resume.startswith("uv run blueprint up"):
        lines.append(f"  (or with the Pulumi CLI, in a shell that ran `{ENV_STEP}`: pulumi up -s {stack})")
    return "\n".join(lines)


def _errors(error_text: str, most: int = 8) -> list[str]:
    """Pulumi's own error lines, the last `most` of them, each once: what failed, in Pulumi's words,
    whatever it was (a provider, the program, a plugin, the state); `cli.stack_runner.pulumi_errors`.
    """
    from cli.stack_runner import pulumi_errors

    return pulumi_errors(error_text, most)


def _run(argv: list[str], **options: Any) -> subprocess.CompletedProcess[str] | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=GATHER_TIMEOUT, check=False, **options)
    except (OSError, subprocess.SubprocessError):
        return None
    return done if done.returncode == 0 else None


def gather(kind_cluster_name: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """Every pod and event of the kind cluster `kind_cluster_name` (`kubectl get ... -A -o json`), or
    None when kind or kubectl is missing, the cluster is gone, or anything else fails: never raises.
    """
    kind, kubectl = shutil.which("kind"), shutil.which("kubectl")
    if not kind or not kubectl or not kind_cluster_name:
        return None
    from cli.image_cache import kind_environment

    kubeconfig = _run([kind, "get", "kubeconfig", "--name", kind_cluster_name], env=kind_environment())  # phase1's engine
    if kubeconfig is None:
        return None
    try:
        with tempfile.TemporaryDirectory(prefix="blueprint-explain-") as folder:
            path = Path(folder) / "kubeconfig"
            path.write_text(kubeconfig.stdout)
            path.chmod(0o600)  # it holds the cluster's admin credentials
            listed = [_run([kubectl, "--kubeconfig", str(path), "get", what, "-A", "-o", "json"]) for what in ("pods", "events")]
        documents = [json.loads(done.stdout) for done in listed if done is not None]
    except (OSError, ValueError):
        return None
    if len(documents) != 2 or not all(isinstance(document, dict) for document in documents):
        return None
    return documents[0], documents[1]
