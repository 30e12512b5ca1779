"""The one way blueprint runs `kubectl` against a context of the user's kubeconfig (KUBECONFIG, or
~/.kube/config: its merge rules, its credentials and exec plugins), from the doctor, phase1's reads,
the providers' port-forwards and kubeconfigs, and the end-of-`up` report alike. Nothing here runs
at import (the providers' host imports it).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

REQUEST_TIMEOUT = "20s"
"""kubectl's `--request-timeout` on a read: a cluster that does not answer is said in kubectl's own
words before the caller's own timeout (30 s and more) ends the process without any."""
CONTEXT_KUBECONFIG_ARGV = ("kubectl", "config", "view", "--raw", "--minify", "--flatten", "--context")
"""The context's kubeconfig alone, credentials inline, once its name is appended: with --minify, kubectl
makes --context the current one and drops every other (kubectl pkg/cmd/config/view.go `Run`; `MinifyConfig`
refuses a context it cannot find); --flatten inlines the files it names (certificates), so the text
stands alone."""
FROM_ENVIRONMENT = "$KUBE_CONTEXT"
"""The context of a command a pulumi-command invoke runs (`in_shell`): taken from its environment, so that
the command's text, which Pulumi shows, never holds it."""


def kubectl_argv(context: str, *args: str, namespace: str = "", timeout: str | None = REQUEST_TIMEOUT) -> list[str]:
    """`kubectl --context <context> [--request-timeout=<timeout>] [--namespace <namespace>] <args>`. None for
    `timeout`: a stream (a port-forward) or a command said to the user, which must not be cut short.
    """
    return [
        "kubectl", "--context", context, *([f"--request-timeout={timeout}"] if timeout else []),
        *(["--namespace", namespace] if namespace else []), *args,
    ]  # fmt: skip


def context_kubeconfig_argv(context: str) -> list[str]:
    """The command that prints `context`'s kubeconfig alone (`CONTEXT_KUBECONFIG_ARGV`)."""
    return [*CONTEXT_KUBECONFIG_ARGV, context]


def in_shell(argv: Sequence[str]) -> str:
    """`argv` as a POSIX shell command, its FROM_ENVIRONMENT word left for the shell to expand."""
    return " ".join(f'"{word}"' if word == FROM_ENVIRONMENT else shlex.quote(word) for word in argv)
