"""OpenBao rolled out, unsealed, active and configured as blueprint's config says, or exactly why not.

OpenBao initialises itself (components/openbao.py): its static seal key and its users' passwords
exist, in files under the data folder, before the server first starts. So `OpenBaoInit` never calls
`sys/init`, and its outputs hold no token and no key; killing it at any moment, or losing any
answer, loses nothing: the next run starts over from the same files. On every create and update it
waits for the StatefulSet's rollout (providers/openbao_rollout.py), then converges
(providers/openbao_converge.py): unsealed and active, the self-initialisation's requests applied
again, user `blueprint` logging in to KV v2 at `secret/`. What waiting cannot fix is refused at once
with the exact way out (providers/openbao_errors.py). `diff` also reports a change when the server
answers but is not as configured, so that the next `up` says why. Why this way:
docs/design/decisions.md, entries 3 and 8.

The passwords are secret inputs (the engine keeps the outputs of the same names secret too). The
provider keeps nothing on `self` and imports `requests` lazily: the engine's provider host imports
this module by reference (the resource pickles its provider with dill).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, ResourceProvider, UpdateResult

from components.engine import DOCKER
from providers.cluster_access import CONTEXT_KEY, TARGET_KEY, Target, existing_props
from providers.kind_access import ENGINE_KEY, engine_props
from providers.openbao_converge import converge, usable
from providers.openbao_errors import CONFIGURED_BEFORE

PROVIDER_VERSION = "1"
"""Bump when the provider's behaviour changes: the provider is pickled by reference, so only an
input change makes the engine call `update` with the new code."""

INPUTS = (
    "address", "ca_file", "server_name", "username", "password", "password_file", "admin_username", "admin_password_file",
    "requests", "request_secrets",
    "release_digest", "mount", "seal_key_file", "kind_cluster_name", "namespace", "pod", "statefulset",
    "postgres_namespace", "postgres_pod", "database", "table", "rollout_seconds", "wait_seconds", "http_timeout",
    "provider_version", TARGET_KEY, CONTEXT_KEY, ENGINE_KEY,
)  # fmt: skip
SECRET_OUTPUTS = ["password", "request_secrets"]

DEFAULTS = {"rollout_seconds": 600.0, "wait_seconds": 300.0, "http_timeout": 10.0}


class OpenBaoInitProvider(ResourceProvider):
    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        news = {**DEFAULTS, **{key: value for key, value in news.items() if value is not None}}
        failures = []
        for key in ("seal_key_file", "password_file", "admin_password_file"):
            if not Path(str(news.get(key))).is_absolute():
                failures.append(CheckFailure(key, f"expected an absolute path, got {news.get(key)!r}"))
        for key in ("rollout_seconds", "wait_seconds", "http_timeout"):
            if not isinstance(news.get(key), int | float) or float(news[key]) <= 0:
                failures.append(CheckFailure(key, f"expected a number of seconds above 0, got {news.get(key)!r}"))
        requests = news.get("requests")
        if not isinstance(requests, list) or not all(
            isinstance(request, dict) and isinstance(request.get("path"), str) and isinstance(request.get("data"), dict)
            for request in requests
        ):
            failures.append(CheckFailure("requests", "expected a list of {path, data} requests (components/openbao.py init_requests)"))
        return CheckResult(news, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [key for key in INPUTS if olds.get(key) != news.get(key)]
        if not changed and isinstance(news.get("address"), str) and usable({**DEFAULTS, **news}) is False:
            changed = ["usable"]  # not an input: the server answers but is not as configured; `update` says why
        return DiffResult(changes=bool(changed), replaces=[], delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=str(props["address"]), outs=_converged({**DEFAULTS, **props}))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        # Blueprint configured this vault before: a missing userpass was disabled by hand (no_userpass_error).
        outs = _converged({**DEFAULTS, **news, CONFIGURED_BEFORE: True})
        return UpdateResult(outs=outs)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """On refresh: nothing to read back, the vault's state lives in the vault (`diff` checks it)."""
        return ReadResult(id_, props)

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing to undo: the vault's storage, its seal key and passwords live with the platform's
        data, which `preserveData` keeps or wipes.
        """


def _converged(props: dict[str, Any]) -> dict[str, Any]:
    """The outputs, once OpenBao is usable as `props` say (or the error that says why it is not)."""
    converge(props)
    return {key: props.get(key) for key in INPUTS}


@dataclass(frozen=True, kw_only=True)
class OpenBaoInitArgs:
    address: pulumi.Input[str]
    """OpenBao's API as the host reaches it, e.g. https://127.0.0.1:8200."""
    ca_file: pulumi.Input[str]
    """Host path of the platform CA's certificate: what answers there must have OpenBao's certificate from it..."""
    server_name: str
    """... for this name (components/tls.py `openbao_server_name`), or it gets no password."""
    username: str
    """The userpass user that writes the platform's credentials."""
    password: pulumi.Input[str]
    """Its password (secret)."""
    password_file: str
    """Host path of that password, for the messages."""
    admin_username: str
    """The userpass user with the `admin` policy, as whom `requests` are applied."""
    admin_password_file: str
    """Host path of its password, for the messages."""
    requests: list[dict[str, Any]]
    """What self-initialisation does, in order ({path, data}; passwords as `env` references): applied
    to a vault that exists already too."""
    request_secrets: pulumi.Input[dict[str, pulumi.Input[str]]]
    """The values of the `env` references in `requests` (secret)."""
    release_digest: pulumi.Input[str]
    """Changes whenever the release may roll the pod: then this is an update, which waits for the rollout."""
    mount: str
    """Where KV v2 must be."""
    seal_key_file: str
    """Host path of the static seal key, checked before the wait and named in the messages."""
    kind_cluster_name: pulumi.Input[str]
    namespace: str
    pod: str
    statefulset: str
    """Where the server runs: the rollout to wait for, the log a timed-out run reads, and the reset commands."""
    postgres_namespace: str
    postgres_pod: str
    database: str
    table: str
    """Where OpenBao's storage is: its one table, the only thing a reset empties."""
    rollout_seconds: float = 600
    """How long the StatefulSet may take to roll out: the first pull of OpenBao's image can take minutes on a laptop."""
    wait_seconds: float = 300
    """How long every step after the rollout is tried again."""
    http_timeout: float = 10
    """How long one request waits for its answer."""
    forward: Target | None = None
    """On an existing cluster, OpenBao's Service, which `address` is reached through (a port-forward:
    providers/cluster_access.py); None on kind, where `address` is on 127.0.0.1."""
    kube_context: str = ""
    """On an existing cluster, its context, for the kubectl calls (rollout, log); "" on kind."""
    engine: str = DOCKER
    """The container engine kind runs on, which `kind get kubeconfig` must be told (providers/kind_access.py)."""


class OpenBaoInit(pulumi.dynamic.Resource, module="openbao", name="Init"):
    """OpenBao rolled out, unsealed, active, configured as blueprint's requests say; user `blueprint`
    logs in; KV v2 at `secret/`.
    """

    def __init__(self, name: str, args: OpenBaoInitArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        props: dict[str, Any] = {
            "address": args.address,
            "ca_file": args.ca_file,
            "server_name": args.server_name,
            "username": args.username,
            "password": pulumi.Output.secret(args.password),
            "password_file": args.password_file,
            "admin_username": args.admin_username,
            "admin_password_file": args.admin_password_file,
            "requests": args.requests,
            "request_secrets": pulumi.Output.secret(args.request_secrets),
            "release_digest": args.release_digest,
            "mount": args.mount,
            "seal_key_file": args.seal_key_file,
            "kind_cluster_name": args.kind_cluster_name,
            "namespace": args.namespace,
            "pod": args.pod,
            "statefulset": args.statefulset,
            "postgres_namespace": args.postgres_namespace,
            "postgres_pod": args.postgres_pod,
            "database": args.database,
            "table": args.table,
            "rollout_seconds": args.rollout_seconds,
            "wait_seconds": args.wait_seconds,
            "http_timeout": args.http_timeout,
            "provider_version": PROVIDER_VERSION,
            **existing_props(forward=args.forward, kube_context=args.kube_context),
            **engine_props(args.engine),
        }
        secret = pulumi.ResourceOptions(additional_secret_outputs=SECRET_OUTPUTS)
        super().__init__(OpenBaoInitProvider(), name, props, pulumi.ResourceOptions.merge(opts, secret))
