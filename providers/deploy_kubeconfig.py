"""The CI deploy account's kubeconfig, made again before its token expires.

A token from `kubectl create token` (the TokenRequest API) cannot be extended: it lives its
`--duration` and then every deploy fails with 401. Made by a plain `local.Command`, it would be
made again only when an input changed, and none does a year later. So `diff` reads the expiry
that `create` and `update` recorded from the token's own `exp` claim (the API server may grant
less than asked: kube-apiserver `--service-account-max-token-expiration`), and reports a change
once the token is within `renew_days` of it: the next `up` makes a new one, and phase3 hands it on
to CI. Until then a second `up` compares the same inputs and the same expiry: no change.

`script` (the component's shell, run with `/bin/sh -c`) prints the kubeconfig, with `environment`
and ADDED_ENVIRONMENT; the admin kubeconfig comes from `kind get kubeconfig` at that moment, held in
memory (providers/kind_access.py), and never passes through Pulumi. A token cannot be revoked by
itself, so each is bound to a Secret of its own (`kubectl create token --bound-object-kind=Secret`),
whose deletion voids it (kubernetes pkg/serviceaccount claims.go `Validate` checks the bound object).
Every run deletes the anchors of earlier runs but the state's (CI's token until phase3 hands on the
new one), so a token whose kubeconfig never reached the state (an answer lost) is void by the next run.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shlex
import subprocess
import time
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, ResourceProvider, UpdateResult

from components.engine import DOCKER
from providers.cluster_access import CONTEXT_KEY, existing_props
from providers.kind_access import ENGINE_KEY, KindAccessError, cluster_kubeconfig, engine_props

PROVIDER_VERSION = "1"
"""Bump when the provider's behaviour changes (it is pickled by reference)."""

INPUTS = (
    "kind_cluster_name", "namespace", "namespace_uid", "service_account_uid", "script", "environment", "renew_days", "provider_version",
    CONTEXT_KEY, ENGINE_KEY,
)  # fmt: skip
ADDED_ENVIRONMENT = ("KIND_CLUSTER_NAME", "NAMESPACE", "ANCHOR", "KEEP_ANCHOR", "ANCHOR_LABEL", "ADMIN_KUBECONFIG")
"""What `make` adds to the script's `environment`."""
ANCHOR_LABEL = "blueprint/deploy-token-of"
"""The label of the Secrets the tokens are bound to (value: the account), by which a later run finds them."""
DAY_SECONDS = 86400
SCRIPT_TIMEOUT_SECONDS = 120


class DeployKubeconfigError(Exception):
    """The kubeconfig could not be made; the message says why and what to do."""


def kubeconfig_token(kubeconfig: object) -> str:
    """The first user's token in `kubeconfig` ("" when it has none that can be read)."""
    import yaml

    try:
        return str(yaml.safe_load(str(kubeconfig))["users"][0]["user"]["token"])
    except (yaml.YAMLError, LookupError, TypeError):
        return ""


def expires_at(kubeconfig: object) -> int | None:
    """The `exp` claim (Unix seconds) of the first user's token in `kubeconfig`, or None when it has
    no token that can be read as a JWT (a service account token is one: RFC 7519, base64url parts).
    """
    try:
        payload = kubeconfig_token(kubeconfig).split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return int(claims["exp"])
    except (LookupError, TypeError, ValueError):
        return None


def renewal_due(olds: dict[str, Any], renew_days: float, now: float) -> bool:
    """Whether the recorded token expires within `renew_days` of `now` (or its expiry is unknown)."""
    expires = olds.get("expires_at")
    if not isinstance(expires, int | float):
        return True
    return float(expires) - now < renew_days * DAY_SECONDS


def make(props: dict[str, Any], keep: object = None) -> dict[str, Any]:
    """Run the script; the outputs: the inputs, the kubeconfig, its token's expiry and the anchor its
    token is bound to. `keep` is the anchor of the token the state recorded (CI holds it until phase3
    hands on the new one); every other anchor of an earlier run is deleted, voiding its token.
    """
    cluster, namespace = str(props["kind_cluster_name"]), str(props["namespace"])
    given = dict(props.get("environment") or {})
    anchor = f"{given.get('DEPLOYER', 'deployer')}-token-{secrets.token_hex(4)}"
    environment = {
        **os.environ, **given, "KIND_CLUSTER_NAME": cluster, "NAMESPACE": namespace,
        "ANCHOR": anchor, "KEEP_ANCHOR": str(keep or ""), "ANCHOR_LABEL": ANCHOR_LABEL,
    }  # fmt: skip
    try:
        with cluster_kubeconfig(props) as admin:
            done = subprocess.run(
                ["/bin/sh", "-c", str(props["script"])],
                env={**environment, "ADMIN_KUBECONFIG": admin},
                capture_output=True,
                text=True,
                timeout=SCRIPT_TIMEOUT_SECONDS,
                check=False,
            )
    except KindAccessError as error:
        done = subprocess.CompletedProcess([], error.returncode or 1, "", error.said)
    except subprocess.TimeoutExpired:
        raise DeployKubeconfigError(
            f"making the CI deploy kubeconfig for {namespace} on kind cluster {cluster} took over {SCRIPT_TIMEOUT_SECONDS}s; "
            f"check that the cluster answers (kubectl --context {shlex.quote(f'kind-{cluster}')} get nodes), then run `up` again"
        ) from None
    if done.returncode != 0:
        raise DeployKubeconfigError(
            f"making the CI deploy kubeconfig for {namespace} on kind cluster {cluster} failed (exit {done.returncode}): "
            f"{done.stderr.strip()[-600:] or '(no message)'}; check that the cluster runs (kind get clusters), then run `up` again"
        )
    expires = expires_at(done.stdout)
    if expires is None:
        raise DeployKubeconfigError(
            f"the CI deploy kubeconfig for {namespace} holds no token whose expiry can be read (`kubectl create token` "
            f"prints a JWT); run `up` again, and if it persists, check the kubectl on PATH"
        )
    return {**{key: props.get(key) for key in INPUTS}, "kubeconfig": done.stdout, "expires_at": expires, "anchor": anchor}


class DeployKubeconfigProvider(ResourceProvider):
    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [key for key in INPUTS if olds.get(key) != news.get(key)]
        due = renewal_due(olds, float(news.get("renew_days") or 0), time.time())
        return DiffResult(changes=bool(changed) or due, replaces=[], delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=f"{props['namespace']}/deploy-kubeconfig", outs=make(props))

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=make(news, keep=olds.get("anchor")))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        return ReadResult(id_, props)

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing: the token expires by itself, and is void once its ServiceAccount is deleted."""


@dataclass(frozen=True, kw_only=True)
class DeployKubeconfigArgs:
    kind_cluster_name: pulumi.Input[str]
    namespace: pulumi.Input[str]
    namespace_uid: pulumi.Input[str]
    """The namespace's uid: a new namespace (a new cluster) gets a new token at once."""
    service_account_uid: pulumi.Input[str]
    """The ServiceAccount's uid: its tokens die with it (they carry it), so a new account (deleted
    to revoke CI's access, then made again by `up`) gets a new token at once."""
    script: str
    """The shell that prints the kubeconfig (and nothing else) on stdout."""
    environment: dict[str, str]
    """What else `script` reads from its environment."""
    renew_days: int
    """Make a new token once the recorded one expires within this many days."""
    kube_context: str = ""
    """On an existing cluster, its context (providers/kind_access.py `cluster_kubeconfig`); "" on kind."""
    engine: str = DOCKER
    """The container engine kind runs on, which `kind get kubeconfig` must be told (providers/kind_access.py)."""


class DeployKubeconfig(pulumi.dynamic.Resource, module="blueprint", name="DeployKubeconfig"):
    """A kubeconfig whose token is made again before it expires."""

    kubeconfig: pulumi.Output[str]
    """The kubeconfig (secret)."""
    expires_at: pulumi.Output[int]
    """When its token expires, in Unix seconds."""

    def __init__(self, name: str, args: DeployKubeconfigArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        props = {
            "kind_cluster_name": args.kind_cluster_name,
            "namespace": args.namespace,
            "namespace_uid": args.namespace_uid,
            "service_account_uid": args.service_account_uid,
            "script": args.script,
            "environment": args.environment,
            "renew_days": args.renew_days,
            "provider_version": PROVIDER_VERSION,
            **existing_props(kube_context=args.kube_context),
            **engine_props(args.engine),
            "kubeconfig": None,
            "expires_at": None,
            "anchor": None,
        }
        secret = pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"])
        super().__init__(DeployKubeconfigProvider(), name, props, pulumi.ResourceOptions.merge(opts, secret))
