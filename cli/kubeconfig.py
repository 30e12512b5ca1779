"""`blueprint kubeconfig`: the admin kubeconfig of a stack's kind cluster, as kind gives it, printed
or written to a file of its own (mode 0600, never over another cluster's credentials). On an existing
cluster it names the user's own context instead: blueprint makes no credential there.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TextIO

from cli.stack_runner import StackRunner
from components.engine import KIND_PROVIDER, PODMAN
from stacks import outputs
from stacks.config.schema import ENV_STEP

KIND_TIMEOUT = 60
"""Seconds `kind get kubeconfig` may take (it lists the nodes and reads one file from one of them)."""


class KubeconfigError(Exception):
    """An expected condition that stops `blueprint kubeconfig`; the message names it and its fix."""


def _bring_up(stack: str) -> str:
    return f"{ENV_STEP} && pulumi up -s dev" if stack == "dev" else f"uv run blueprint up --phase {stack.removeprefix('phase')}"


def kubeconfig_cluster(runner: StackRunner, stack: str) -> tuple[str, str]:
    """The name of the kind cluster `stack` made, and where that name comes from: the stack's output
    `clusterName` when the stack is up, else what its config would name it.
    """
    values = runner.outputs(stack)
    if values and values.get(outputs.CLUSTER_NAME):
        return str(values[outputs.CLUSTER_NAME]), f"stack {stack}'s output {outputs.CLUSTER_NAME}"
    from stacks.config import NAMESPACE
    from stacks.config.schema import stack_config

    config, secret = stack_config(stack)
    key = f"{NAMESPACE}:clusterName"
    if key in secret:
        # Its stand-in would be Pulumi.yaml's default: another stack's cluster, maybe.
        raise KubeconfigError(
            f"stack {stack} is not up, and its {key} is a secret in Pulumi.{stack}.yaml, which blueprint reads only through a "
            f"stack that is up: bring it up first (`{_bring_up(stack)}`), or run `kind get clusters` and "
            f"`kind get kubeconfig --name <cluster>` yourself"
        )
    return config[key], f"stack {stack} is not up: the name its config gives ({key}, Pulumi.{stack}.yaml or Pulumi.yaml's default)"


def existing_context(runner: StackRunner, stack: str) -> str | None:
    """The context of the existing cluster `stack` is on (its outputs when up, else its config); None on kind."""
    values = runner.outputs(stack)
    if values:
        return outputs.kube_context(values) if outputs.on_existing(values) else None
    from stacks.config import NAMESPACE
    from stacks.config.cluster import EXISTING
    from stacks.config.schema import stack_config

    config, _ = stack_config(stack)
    return str(config.get(f"{NAMESPACE}:kubeContext") or "") if config.get(f"{NAMESPACE}:cluster") == EXISTING else None


def kind_kubeconfig(cluster: str, stack: str) -> str:
    """The admin kubeconfig of the kind cluster `cluster`, as `kind get kubeconfig` prints it (its
    server is the host's end of the pinned apiServerPort), or a KubeconfigError with the fix.
    """
    argv = ["kind", "get", "kubeconfig", "--name", cluster]
    command = shlex.join(argv)
    kind = shutil.which("kind")
    if kind is None:
        raise KubeconfigError(
            "blueprint kubeconfig asks kind for the cluster's kubeconfig, and there is no `kind` on PATH; "
            "fix: `uv run blueprint doctor --fix` installs it as ~/.local/share/blueprint/bin/kind, where blueprint finds it"
        )
    from cli.image_cache import kind_environment

    env = kind_environment()
    try:
        done = subprocess.run(
            [kind, *argv[1:]], capture_output=True, text=True, errors="replace", timeout=KIND_TIMEOUT, check=False, env=env
        )
    except subprocess.TimeoutExpired:
        engine = "podman" if env.get(KIND_PROVIDER) == PODMAN else "docker"
        raise KubeconfigError(f"`{command}` did not answer within {KIND_TIMEOUT}s: check `{engine} info`, then run again") from None
    except OSError as error:
        raise KubeconfigError(f"`{command}` could not run: {error}; fix: `uv run blueprint doctor --fix` installs kind") from None
    if done.returncode == 0 and done.stdout.strip():
        return done.stdout
    said = " ".join((done.stderr or done.stdout or "").split())[-500:] or f"exit {done.returncode}, nothing printed"
    # kind found no node labelled for the cluster: Docker answered, the cluster is not there
    # (kubernetes-sigs/kind pkg/cluster/internal/kubeconfig/kubeconfig.go, `get`).
    if "could not locate any control plane nodes" in said:
        raise KubeconfigError(
            f"kind has no cluster named {cluster} (`kind get clusters` lists the ones there are): stack {stack} is not up; "
            f"fix: bring it up with `{_bring_up(stack)}`, then run this again"
        )
    # Else ask the engine itself (Docker, or phase1's Podman), as `blueprint doctor` does, for its fix on this OS.
    from cli.doctor.docker import DOCKER_CLI, docker_checks
    from cli.doctor.machine import RealMachine
    from cli.doctor.podman import PODMAN_CLI, podman_checks

    podman = env.get(KIND_PROVIDER) == PODMAN
    failed = next((check for check in (podman_checks if podman else docker_checks)(RealMachine()) if not check.ok), None)
    if failed is not None:
        where = {DOCKER_CLI: "the Docker CLI", PODMAN_CLI: "the Podman CLI"}.get(failed.name, "Podman" if podman else "Docker")
        raise KubeconfigError(f"`{command}` failed, and {where} does not answer ({failed.found}); fix: {failed.fix}, then run this again")
    raise KubeconfigError(f"`{command}` failed: {said}")


def _others_in_kubeconfig(path: Path, cluster: str) -> list[str] | None:
    """What writing over the regular file `path` would lose: the names of the clusters, contexts and
    users it holds besides kind's `kind-<cluster>` ([] for an empty file or a kubeconfig of that
    cluster alone), or None when it is not a kubeconfig (`kind: Config`) at all.
    """
    from yaml_files import YamlFileError, load_text

    try:
        text = path.read_text()
        # As kubectl reads it (YAML 1.1), bounded as every YAML file a user edits: 20,000 nested lists are no kubeconfig.
        document = load_text(text, str(path), pulumi_rules=False) if text.strip() else {"kind": "Config"}
    except (OSError, UnicodeDecodeError, YamlFileError):
        return None
    if not isinstance(document, dict) or document.get("kind") != "Config":
        return None
    lists = [document.get(key) or [] for key in ("clusters", "contexts", "users")]
    entries = [entry for listed in lists if isinstance(listed, list) for entry in listed]
    if not all(isinstance(listed, list) for listed in lists) or not all(
        isinstance(entry, dict) and isinstance(entry.get("name"), str) for entry in entries
    ):
        return None  # not what kubectl reads as a kubeconfig: nothing here can tell what writing over it loses
    return sorted({entry["name"] for entry in entries} - {outputs.kind_context(cluster)})


def write_kubeconfig(path: Path, text: str, cluster: str) -> None:
    """Write `text` to `path`, mode 0600 from its first byte: a new file beside it, renamed over it.
    Refuses a folder, a link, a file that is not a kubeconfig, and a kubeconfig that holds any other
    cluster than kind's `kind-<cluster>` (writing over it would lose their credentials).
    """
    if path.is_symlink():
        raise KubeconfigError(f"--output {path} is a symbolic link; give the path of a file (blueprint does not write through links)")
    if path.is_dir():
        raise KubeconfigError(f"--output {path} is a folder; give the path of a file in it, such as {path / 'kubeconfig'}")
    if path.exists():
        others = _others_in_kubeconfig(path, cluster) if path.is_file() else None
        if others is None:
            raise KubeconfigError(
                f"--output {path} exists and is not a kubeconfig; blueprint writes over a kubeconfig only: give another path"
            )
        if others:
            raise KubeconfigError(
                f"--output {path} holds other clusters, contexts or users ({', '.join(others)}), which writing over it would "
                f"lose; give another path (kubectl reads several: KUBECONFIG=<that path>:{shlex.quote(str(path))})"
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    # mkstemp creates the file 0600 whatever the umask; the rename then replaces any older one at once.
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def kubeconfig(runner: StackRunner, stack: str, output: str | None, out: TextIO, note: TextIO) -> int:
    """`blueprint kubeconfig`: the admin (cluster-admin) kubeconfig of `stack`'s kind cluster, printed
    on `out`, or written to the file `output`; what it is and where its name came from goes to `note`.
    """
    context = existing_context(runner, stack)
    if context is not None:
        # blueprint makes no credential for a cluster it did not make: the user's own context is the way in.
        shown = shlex.quote(context) if context else "<blueprint:kubeContext>"
        written = f"; nothing was written to {output}" if output is not None else ""
        note.write(
            f"stack {stack} is on an existing cluster: blueprint makes no kubeconfig for it, your own context is the way in "
            f"(`kubectl --context {shown} get nodes`){written}\n"
        )
        return 0
    try:
        cluster, source = kubeconfig_cluster(runner, stack)
        text = kind_kubeconfig(cluster, stack)
        if output is None:
            out.write(text)
            note.write(f"the admin kubeconfig of kind cluster {cluster} ({source}); it is cluster-admin: keep it private\n")
            return 0
        path = Path(output).expanduser().absolute()
        try:
            write_kubeconfig(path, text, cluster)
        except OSError as error:
            raise KubeconfigError(f"cannot write --output {output}: {error.strerror or error}; give a path you can write to") from None
    except KubeconfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    out.write(
        f"wrote the admin kubeconfig of kind cluster {cluster} ({source}) to {path}, mode 0600: it is cluster-admin, keep it private.\n"
        f"Use it: KUBECONFIG={shlex.quote(str(path))} kubectl get nodes\n"
    )
    return 0
