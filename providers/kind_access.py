"""The kind cluster's admin kubeconfig, for the providers that act inside the cluster.

It comes from `kind get kubeconfig` at the moment of use, on the engine blueprint chose for kind
(`ENGINE_KEY`; on an existing cluster, from `kubectl config view --raw --minify --flatten --context
<context>`: `cluster_kubeconfig`), and lives only for as long as the caller needs it: no cluster
credential passes through Pulumi's inputs, outputs or state, and none is left
on disk when the process is killed (a SIGKILL runs no `finally`). Where the system has anonymous
memory files (Linux, WSL: `memfd_create(2)`) it is one, which the kernel frees with the last
descriptor; the callers' `kubectl` opens it as `/proc/<pid>/fd/<n>`, which reads it from the start
each time. Elsewhere (macOS) it is a 0600 file in a 0700 folder of the user's own under the temporary
folder, named after the process, and the next use removes every file there whose process is gone.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from components.engine import DOCKER, kind_env
from providers.cluster_access import CONTEXT_KEY
from providers.kubectl import context_kubeconfig_argv

ENGINE_KEY = "container_engine"
"""The property that names kind's engine, on a provider that asks kind; absent on Docker (`engine_props`)."""

FOLDER_PREFIX = "blueprint-kubeconfigs-"
"""The private folder of the fallback, one per user (`<prefix><uid>` under the temporary folder)."""


class KindAccessError(Exception):
    """kind did not give the kubeconfig; the message says what it printed (`said`, with its exit status)."""

    def __init__(self, message: str, said: str = "", returncode: int | None = None) -> None:
        super().__init__(message)
        self.said, self.returncode = said, returncode


def engine_props(engine: str) -> dict[str, str]:
    """The properties that name kind's engine: none on Docker, so Docker's resources keep exactly the
    inputs they had; on Podman, the engine, which kind must be told (components/engine.py `kind_env`).
    """
    return {} if engine == DOCKER else {ENGINE_KEY: engine}


@contextlib.contextmanager
def admin_kubeconfig(cluster_name: str, engine: str = DOCKER) -> Iterator[str]:
    """A path that holds the cluster's admin kubeconfig while the `with` block runs, and nothing after."""
    with _holding(["kind", "get", "kubeconfig", "--name", cluster_name], env=kind_env(engine, os.environ)) as path:
        yield path


@contextlib.contextmanager
def cluster_kubeconfig(props: Mapping[str, Any]) -> Iterator[str]:
    """`admin_kubeconfig` of the cluster a resource's properties name: kind's (`kind_cluster_name`),
    or, with `kube_context` (an existing cluster), that context's alone as the user's kubeconfig
    (KUBECONFIG, or ~/.kube/config) resolves it now, its credentials inline (`--flatten`) and its
    exec plugins kept.
    """
    if context := str(props.get(CONTEXT_KEY) or ""):
        with _holding(context_kubeconfig_argv(context)) as path:
            yield path
    else:
        with admin_kubeconfig(str(props["kind_cluster_name"]), str(props.get(ENGINE_KEY) or DOCKER)) as path:
            yield path


@contextlib.contextmanager
def _holding(argv: list[str], env: Mapping[str, str] | None = None) -> Iterator[str]:
    """A path that holds what `argv` prints (run in `env`, else this process's) while the `with` block runs."""
    try:
        got = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, env=env)
    except OSError as error:
        raise KindAccessError(f"{argv[0]} does not run ({error.strerror}): install it") from None
    if got.returncode != 0 or not got.stdout.strip():
        said = got.stderr.strip()[-500:]
        raise KindAccessError(f"{' '.join(argv)} failed: {said}", said, got.returncode)
    if hasattr(os, "memfd_create") and Path(f"/proc/{os.getpid()}/fd").is_dir():
        with _in_memory(got.stdout) as path:
            yield path
    else:
        with _in_private_folder(got.stdout) as path:
            yield path


@contextlib.contextmanager
def _in_memory(text: str) -> Iterator[str]:
    descriptor = os.memfd_create("blueprint-kubeconfig", os.MFD_CLOEXEC)
    try:
        os.write(descriptor, text.encode())
        yield f"/proc/{os.getpid()}/fd/{descriptor}"
    finally:
        os.close(descriptor)


def private_folder() -> Path:
    """The user's own folder of the fallback: made 0700, and refused if it is a link or another user's."""
    folder = Path(tempfile.gettempdir()) / f"{FOLDER_PREFIX}{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    found = folder.lstat()
    if folder.is_symlink() or not folder.is_dir() or found.st_uid != os.getuid():
        raise KindAccessError(f"{folder} is not a folder of yours: remove it (`rm -r {folder}`), then run again")
    folder.chmod(0o700)
    return folder


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def _in_private_folder(text: str) -> Iterator[str]:
    folder = private_folder()
    for left in folder.glob("kubeconfig-*"):  # what a killed run left
        pid = left.name.split("-")[1]
        if not pid.isdigit() or not _alive(int(pid)):
            left.unlink(missing_ok=True)
    descriptor, name = tempfile.mkstemp(dir=folder, prefix=f"kubeconfig-{os.getpid()}-")
    try:
        with os.fdopen(descriptor, "w") as file:
            file.write(text)
        yield name
    finally:
        Path(name).unlink(missing_ok=True)
