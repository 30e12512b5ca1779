"""Waiting for OpenBao's StatefulSet to roll out, and reading its pod when it does not.

The release does not wait for its pod (components/openbao.py says why), so `OpenBaoInit` waits for
the StatefulSet (`kubectl rollout status`) before it asks OpenBao anything: after a change of the
release the old pod would otherwise answer for the new one. That wait has a budget of its own,
`rollout_seconds` (the first pull of OpenBao's image can take minutes on a laptop). A rollout that
times out behind a pod of the earlier revision that is not Ready is named, with the `kubectl delete
pod` that lets it go on (`stuck_pod`); the provider never deletes it itself. The kubeconfig comes
from `kind get kubeconfig` at the moment of use (providers/kind_access.py).
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

from providers.kind_access import KindAccessError, cluster_kubeconfig
from providers.openbao_errors import OpenBaoInitError, kubectl, timeout_error


def stuck_pod(props: dict[str, Any]) -> str:
    """Why the rollout cannot go on by itself, with the command that lets it, or "" (nothing known).

    It cannot when the pod runs an earlier revision of the StatefulSet than its `updateRevision`, is
    not Ready, and the StatefulSet's pod management policy is OrderedReady (the chart's default):
    the controller then waits for that pod to become Ready before it replaces it, which a pod that
    crashes never does (kubernetes/kubernetes#67250; pkg/controller/statefulset/stateful_set_control.go
    `processReplica`, `!isRunningAndReady(...) && monotonic`). Deleting the pod is safe here: the
    StatefulSet makes it again, from the new revision, over the same storage.
    """
    namespace, pod, statefulset = str(props["namespace"]), str(props["pod"]), str(props["statefulset"])
    try:
        with cluster_kubeconfig(props) as kubeconfig:
            objects = []
            for name in (f"statefulset/{statefulset}", f"pod/{pod}"):
                command = ["kubectl", "--kubeconfig", kubeconfig, "-n", namespace, "get", name, "-o", "json"]
                done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
                objects.append(json.loads(done.stdout) if done.returncode == 0 else {})
    except (KindAccessError, OSError, subprocess.SubprocessError, ValueError):
        return ""
    sts, running = objects
    if not isinstance(sts, dict) or not isinstance(running, dict):
        return ""
    update = (sts.get("status") or {}).get("updateRevision")
    revision = ((running.get("metadata") or {}).get("labels") or {}).get("controller-revision-hash")
    policy = (sts.get("spec") or {}).get("podManagementPolicy") or "OrderedReady"  # the API's default
    conditions = (running.get("status") or {}).get("conditions") or []
    ready = any(isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    if not update or not revision or revision == update or ready or policy != "OrderedReady":
        return ""
    return (
        f" Its pod {pod} still runs the StatefulSet's earlier revision ({revision}, not {update}) and is not Ready: with the "
        f"pod management policy OrderedReady the StatefulSet replaces no pod until it is Ready, so the new revision never "
        f"starts (kubernetes/kubernetes#67250). Delete that pod; the StatefulSet makes it again from the new revision, over "
        f"the same storage (its log, should the new one not start either: {kubectl(props, namespace, 'logs', pod)}):\n"
        f"  {kubectl(props, namespace, 'delete', 'pod', pod)}\n  uv run blueprint up"
    )


def server_log(props: dict[str, Any]) -> str:
    """The OpenBao pod's recent log (this and the previous container), or "" when it cannot be had.
    The kubeconfig comes from `kind get kubeconfig` at the moment of use, like providers/gitlab_token.py.
    """
    try:
        with cluster_kubeconfig(props) as kubeconfig:
            logs = []
            for previous in ("--previous=true", "--previous=false"):
                command = ["kubectl", "--kubeconfig", kubeconfig, "-n", str(props["namespace"]), "logs", str(props["pod"])]
                done = subprocess.run([*command, previous, "--tail=200"], capture_output=True, text=True, timeout=60, check=False)
                logs.append(done.stdout if done.returncode == 0 else "")
            return "\n".join(logs)
    except (KindAccessError, OSError, subprocess.SubprocessError):
        return ""


def wait_for_rollout(props: dict[str, Any]) -> None:
    """Until the StatefulSet runs its current pod template, Ready (which, by the chart's probe here,
    means "answers"); then the pod that answers is the one the release describes. Within
    `rollout_seconds`, a budget of its own: the first pull of the image may take most of it.
    """
    namespace, statefulset = str(props["namespace"]), str(props["statefulset"])
    seconds = max(1, int(float(props["rollout_seconds"])))
    try:
        with cluster_kubeconfig(props) as kubeconfig:
            command = ["kubectl", "--kubeconfig", kubeconfig, "-n", namespace, "rollout", "status", f"statefulset/{statefulset}"]
            done = subprocess.run([*command, f"--timeout={seconds}s"], capture_output=True, text=True, timeout=seconds + 60, check=False)
    except KindAccessError as error:
        raise OpenBaoInitError(f"cannot wait for OpenBao's pod: {error}. Is Docker running? (`uv run blueprint doctor`)") from None
    except FileNotFoundError as error:
        raise OpenBaoInitError(
            f"cannot wait for OpenBao's pod: {error.filename} is not on PATH (`uv run blueprint doctor --fix` installs it)"
        ) from None
    except subprocess.TimeoutExpired:
        raise timeout_error(props, "its StatefulSet did not roll out", server_log(props), seconds, stuck_pod(props)) from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip()[-300:]
        raise timeout_error(props, f"its StatefulSet did not roll out: {said}", server_log(props), seconds, stuck_pod(props))
