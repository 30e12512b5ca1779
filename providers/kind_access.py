"""The kind cluster's admin kubeconfig, for the providers that act inside the cluster.

It comes from `kind get kubeconfig` at the moment of use and lives in a temporary file for as long
as the caller needs it: no cluster credential passes through Pulumi's inputs, outputs or state.
"""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
from collections.abc import Iterator


class KindAccessError(Exception):
    """kind did not give the kubeconfig; the message says what it printed."""


@contextlib.contextmanager
def admin_kubeconfig(cluster_name: str) -> Iterator[str]:
    """The path of a temporary file that holds the cluster's admin kubeconfig."""
    got = subprocess.run(["kind", "get", "kubeconfig", "--name", cluster_name], capture_output=True, text=True, timeout=60, check=False)
    if got.returncode != 0:
        raise KindAccessError(f"kind get kubeconfig --name {cluster_name} failed: {got.stderr.strip()[-500:]}")
    with tempfile.NamedTemporaryFile("w", prefix="blueprint-kubeconfig-") as kubeconfig:
        kubeconfig.write(got.stdout)
        kubeconfig.flush()
        yield kubeconfig.name
