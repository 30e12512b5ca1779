"""Which cluster a kubeconfig context reaches now: the UID of its namespace `kube-system`, what phase1
records as an existing cluster's `clusterId` (components/existing_cluster.py reads the same), asked
with the user's `kubectl` before anything changes. `blueprint up` refuses a context that now reaches
another cluster than the platform's (cli/cluster_change.py); `blueprint destroy --cluster-gone` is
believed only when the platform's cluster is shown gone (cli/teardown.py).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

TIMEOUT = 40
"""Seconds a kubectl call may take: its own --request-timeout (30s) comes first."""


@dataclass(frozen=True)
class Identity:
    status: Literal["answered", "no-context", "unknown"]
    """answered: the cluster gave its kube-system UID; no-context: the kubeconfig has no such context;
    unknown: nobody can tell (no kubectl, a cluster that does not answer, a refused read)."""
    uid: str = ""
    detail: str = ""
    """Why it is unknown: what kubectl said, in one line."""


def identity_command(context: str) -> str:
    """The command that shows which cluster `context` reaches, to say to the user."""
    return f"kubectl --context {shlex.quote(context)} get namespace kube-system -o jsonpath={{.metadata.uid}}"


def _last_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in (done.stderr or done.stdout or "").strip().splitlines() if line.strip()]
    return lines[-1][-300:] if lines else f"exit {done.returncode}"


def cluster_identity(context: str, run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run) -> Identity:
    """The kube-system UID of the cluster `context` reaches, as the user's kubectl resolves it now."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return Identity("unknown", detail="kubectl is not on PATH")
    listed = _kubectl(run, kubectl, ["config", "get-contexts", "-o", "name"])
    if isinstance(listed, Identity):
        return listed
    if context not in listed.split():
        return Identity("no-context", detail=f"your kubeconfig has no context {context}")
    read = ["--context", context, "--request-timeout=30s", "get", "namespace", "kube-system", "-o", "jsonpath={.metadata.uid}"]
    uid = _kubectl(run, kubectl, read)
    if isinstance(uid, Identity):
        return uid
    if not uid.strip():
        return Identity("unknown", detail=f"`kubectl {shlex.join(read)}` printed nothing")
    return Identity("answered", uid=uid.strip())


def _kubectl(run: Callable[..., subprocess.CompletedProcess[str]], kubectl: str, argv: list[str]) -> str | Identity:
    """What `kubectl argv` printed, or the unknown Identity that says why it failed."""
    try:
        done = run([kubectl, *argv], capture_output=True, text=True, errors="replace", timeout=TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return Identity("unknown", detail=f"`kubectl {shlex.join(argv)}` failed: {error}")
    if done.returncode != 0:
        return Identity("unknown", detail=f"`kubectl {shlex.join(argv)}` failed: {_last_line(done)}")
    return done.stdout
