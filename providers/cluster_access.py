"""Calls from this machine to the platform on an existing cluster, through the Kubernetes API.

On kind, OpenBao and GitLab answer on 127.0.0.1 (phase1's host ports). On an existing cluster
nothing is published on this machine, and `*.<domain>` may not resolve yet (its DNS record is the
user's to make, after `up`): the providers reach a Service through `kubectl port-forward` instead,
with the context `blueprint:kubeContext` names and the user's kubeconfig (KUBECONFIG, or
~/.kube/config), so its credentials and exec plugins work as kubectl's own. TLS stays end to end:
the session still asks for the service's own name (SNI) and checks its certificate against the
platform CA (providers/http.py `session`). Why a port-forward and not the API server's service
proxy: docs/design/decisions.md, the entry on laptop calls on an existing cluster.

A resource says where to forward with a `Target` in its properties (`TARGET_KEY`, present on an
existing cluster alone). A forward starts at the first request that needs it, and stops with its
session, or with the process (`weakref.finalize`); on Linux kubectl also dies with the process that
started it when that one is killed outright (SIGKILL runs no finalizer): `_dies_with_its_parent`.
Nothing here runs at import.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import signal
import subprocess
import sys
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import IO, Any

from providers.kubectl import kubectl_argv

TARGET_KEY = "forward"
"""The property that holds a resource's `Target`, wired (`Target.wire`)."""
CONTEXT_KEY = "kube_context"
"""The property that names the existing cluster's context, for the providers that run kubectl."""
FORWARDING = re.compile(r"^Forwarding from 127\.0\.0\.1:(\d+) -> \d+")
"""kubectl's first line once it listens (kubectl pkg/cmd/portforward, client-go tools/portforward
`getListener`: "Forwarding from %s -> %d"), the local port the kernel picked for ":<port>"."""
START_SECONDS = 30.0
"""How long kubectl may take to say it listens: it resolves the Service, its pod, and authenticates."""
SAID_AT_MOST = 500
"""What of kubectl's stderr an error quotes, at most (its end)."""


class ForwardError(Exception):
    """kubectl did not forward (no such context, no ready pod, no right to `pods/portforward`)."""


@dataclass(frozen=True, kw_only=True)
class Target:
    """A Service port of an existing cluster, as `kubectl port-forward svc/<service> :<port>` reaches it."""

    context: str
    namespace: str
    service: str
    port: int

    def wire(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def of(wired: Mapping[str, Any]) -> Target:
        return Target(
            context=str(wired["context"]), namespace=str(wired["namespace"]), service=str(wired["service"]), port=int(wired["port"])
        )

    def argv(self) -> list[str]:
        """The kubectl command: loopback alone, a port the kernel picks (`:<port>`)."""
        forward = ["port-forward", "--address", "127.0.0.1", f"svc/{self.service}", f":{self.port}"]
        return kubectl_argv(self.context, *forward, namespace=self.namespace, timeout=None)  # a stream: no request timeout

    def __str__(self) -> str:
        return f"service {self.namespace}/{self.service} port {self.port} of context {self.context}"


def target_of(props: Mapping[str, Any], key: str = TARGET_KEY) -> Target | None:
    """The `Target` a resource's properties (or a stack's outputs) name under `key`, or None (kind:
    the service is on 127.0.0.1).
    """
    wired = props.get(key)
    return Target.of(wired) if isinstance(wired, Mapping) else None


class Forward:
    """One running `kubectl port-forward` of `target`: its local port, and `stop`."""

    def __init__(self, target: Target, *, start_seconds: float = START_SECONDS) -> None:
        self.target = target
        try:
            self._process = subprocess.Popen(
                target.argv(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
                preexec_fn=_dies_with_its_parent(),
            )
        except OSError as error:
            raise ForwardError(f"{target} cannot be forwarded: kubectl does not run ({error.strerror}); install kubectl") from None
        self._stderr: list[str] = []
        self._stop = weakref.finalize(self, _ended, self._process)
        threading.Thread(target=_drain, args=(self._process.stderr, self._stderr), daemon=True).start()
        self.port = self._listening(start_seconds)

    def _listening(self, start_seconds: float) -> int:
        """The local port kubectl says it forwards from; its stdout drained from then on (a line per connection)."""
        found: list[int] = []
        ready = threading.Event()

        def read(stream: IO[str]) -> None:
            for line in stream:
                if not found and (match := FORWARDING.match(line)):
                    found.append(int(match.group(1)))
                    ready.set()
            ready.set()  # kubectl ended

        assert self._process.stdout is not None
        threading.Thread(target=read, args=(self._process.stdout,), daemon=True).start()
        if not ready.wait(start_seconds) or not found:
            self.stop()
            raise ForwardError(f"kubectl port-forward of {self.target} failed: {self.said()}")
        return found[0]

    def said(self) -> str:
        """The end of what kubectl said on stderr, once it ended (or a note that it said nothing)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=2)
        text = "".join(self._stderr).strip()
        return text[-SAID_AT_MOST:] or "kubectl said nothing within the time it has to start"

    @property
    def running(self) -> bool:
        return self._process.poll() is None

    def stop(self) -> None:
        self._stop()


PR_SET_PDEATHSIG = 1
"""prctl(2)'s option: the signal the calling process gets when its parent thread ends (linux/prctl.h)."""


def _dies_with_its_parent() -> Callable[[], None] | None:
    """On Linux, what a child runs before kubectl, so that kubectl gets SIGTERM when this process ends, even
    SIGKILLed: else an authenticated tunnel into the cluster would stay open on 127.0.0.1 for any local user.
    Elsewhere None (docs/reference/credentials.md says so). The kernel signals at the end of the parent
    *thread* (prctl(2)): the provider host's gRPC worker threads live as long as it does. prctl is looked
    up here, before the fork; the child only calls it, and ends if its parent already went.
    """
    if sys.platform != "linux":
        return None
    prctl, parent = ctypes.CDLL(None, use_errno=True).prctl, os.getpid()

    def in_the_child() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent ended between the fork and the prctl
            os._exit(1)

    return in_the_child


def _drain(stream: IO[str] | None, into: list[str]) -> None:
    # `_ended` closes the pipe once kubectl ended, maybe while this thread still reads it: that ends it too.
    with contextlib.suppress(ValueError, OSError):
        for line in stream or ():
            into.append(line)
            del into[:-20]


def _ended(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    # The reading threads end at the pipes' end of file; the pipes are ours to close.
    for stream in (process.stdout, process.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream and stream.close()


@contextlib.contextmanager
def forwarded(target: Target, *, start_seconds: float = START_SECONDS) -> Iterator[int]:
    """The local port of a port-forward to `target` for the `with` block, stopped after it."""
    forward = Forward(target, start_seconds=start_seconds)
    try:
        yield forward.port
    finally:
        forward.stop()


class Forwards:
    """The forward a session's requests go through: started at the first request, started again when
    kubectl ended, stopped with `close`. kubectl does not end when its pod does (kubernetes/kubernetes#67059,
    kubernetes/kubectl#686): the session's adapter closes the forward on a failed connection
    (providers/http.py `_through`), so the next request resolves the Service's pod again.
    """

    def __init__(self, target: Target, start: Callable[[Target], Forward] = Forward) -> None:
        self.target, self._start = target, start
        self._forward: Forward | None = None
        self._lock = threading.Lock()

    def port(self) -> int:
        with self._lock:
            if self._forward is None or not self._forward.running:
                self._forward = self._start(self.target)
            return self._forward.port

    def close(self) -> None:
        with self._lock:
            if self._forward is not None:
                self._forward.stop()
            self._forward = None


def existing_props(*, forward: Target | None = None, kube_context: str = "") -> dict[str, Any]:
    """The properties that say how a provider reaches an existing cluster: none at all on kind, so kind's
    resources keep exactly the inputs they had.
    """
    return {**({TARGET_KEY: forward.wire()} if forward else {}), **({CONTEXT_KEY: kube_context} if kube_context else {})}
