"""The files blueprint leaves in the host folders it claims, and the one rule they are read by.

The scripts (components/host_folder_*.sh, kind_cluster_*.sh) take the names from their environment
(SCRIPT_ENVIRONMENT of components/host_folder.py and kind_cluster.py) and read a marker with
`marker_of` (components/lib_marker_of.sh); the program (stacks/layout_record.py) and the CLI (cli/data_folder.py)
read one with `read_marker`, by the same rule: a regular file, never a link, never a FIFO, its first
MARKER_BYTES bytes, trailing newlines dropped (what the shell's `$(marker_of ...)` gives), compared
whole. Nothing here imports the rest of blueprint, so every layer may import it. A wipe's own marker
is the host secret provider's (providers/host_secret.py WIPING_MARKER), which reads it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

OWNER_MARKER = ".blueprint-owner"
"""File in an owned folder naming the owner, `<project>/<stack>@<checkout id>` (`stacks.config.paths.folder_owner`):
the same stack of another checkout is another owner."""
LAYOUT_MARKER = ".blueprint-layout"
"""File in an owned folder naming the layout of its data (stacks/layout_record.py): a record that outlives
the stack's state."""
CLUSTER_MARKER = ".blueprint-kind-cluster"
"""File in a data folder naming the kind cluster blueprint created over it: an existing cluster is
reused only when it is that one (components/kind_cluster.py)."""
LEASES_FOLDER = ".blueprint-on-cluster"
"""Folder, in a data folder, where each stack that keeps resources on the kind cluster over it holds
a file naming itself while it does (`components/kind_cluster.py`, `cluster_lease`)."""

DATA_LABEL = "blueprint/data"
"""On an existing cluster, the label of each claim of the platform's data, and of each namespace
holding one (value DATA_LABEL_VALUE): what a destroy with preserveData keeps (`retain_on_delete`), what
`blueprint destroy` finds in the state (cli/lifecycle.py), and what
`kubectl get namespaces,pvc -A -l blueprint/data` lists."""
DATA_LABEL_VALUE = "kept-with-preserveData"
NAMESPACE_OWNER_LABEL = "blueprint/owner"
"""On an existing cluster, the label of every namespace blueprint makes, valued with the checkout's id
(stacks.config.paths `this_checkout`): a namespace of that name without it is someone else's, which
phase1 and the doctor refuse to take over (components/existing_cluster.py `foreign_namespaces`); one
with it, a destroy with preserveData kept, is taken back. DATA_LABEL still marks, among them, those
that hold data."""
RELEASED_CLAIM = "RELEASED_CLAIM"
"""The environment variable of the step that releases CloudNativePG's claim from its Cluster before
the Cluster's delete (components/postgres.py): it names the claim, and tells the step in a plan or state."""

MARKER_BYTES = 512
"""Bytes of a marker read at most (components/lib_marker_of.sh reads as many)."""


def read_plain(path: Path, limit: int) -> bytes:
    """At most `limit` bytes of the regular file `path`: never through a link left at its name, never
    waiting on a FIFO; an OSError for anything else (a folder: IsADirectoryError).
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        if error.errno != errno.ELOOP:
            raise
        raise OSError(errno.ELOOP, "a link, not a file", str(path)) from None
    try:
        mode = os.fstat(descriptor).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        return os.read(descriptor, limit)
    finally:
        os.close(descriptor)


def read_marker(path: Path) -> str | None:
    """What the marker `path` says, by the module's rule; None when there is none to read (missing,
    a link, a FIFO, a folder, unreadable).
    """
    try:
        return read_plain(path, MARKER_BYTES).decode("utf-8", errors="replace").rstrip("\n")
    except OSError:
        return None
