"""A generated secret that lives with the data, not with the stack.

pulumi-random values exist only in Pulumi state, so a `destroy` + `up` generates new ones; that is
fine for a password the platform re-applies (CloudNativePG re-sets role passwords from their
Secrets), and wrong for one the preserved data depends on (MinIO's root credentials encrypt its IAM
data; GitLab's rails secrets encrypt database columns). `HostSecret` generates such a value once, in
a 0600 file under the data folder, and reads it back on every run. The folder's lifecycle
(`preserveData`) decides when the value is gone, never a stack's.
"""

from __future__ import annotations

import os
import secrets
import string
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, ResourceProvider, UpdateResult

PROVIDER_VERSION = "1"
"""Bump when the provider's behaviour changes (it is pickled by reference)."""

INPUTS = ("path", "length", "provider_version")
ALPHABET = string.ascii_letters + string.digits
"""Letters and digits: safe in URLs, YAML, INI files and shell words alike."""


def generate(length: int) -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(length))


def ensure(path: Path, length: int) -> str:
    """The value in `path`, generated and written (0600, atomically) when the file is missing."""
    if path.exists():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    value = generate(length)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "w") as handle:
            handle.write(value + "\n")
        # link, not replace: if another run wrote the file meanwhile, keep its value.
        os.link(temporary, path)
    except FileExistsError:
        return path.read_text().strip()
    finally:
        Path(temporary).unlink(missing_ok=True)
    return value


class HostSecretProvider(ResourceProvider):
    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        failures = []
        if not Path(str(news.get("path"))).is_absolute():
            failures.append(CheckFailure("path", f"expected an absolute path, got {news.get('path')!r}"))
        length = news.get("length")
        if not isinstance(length, int | float) or int(length) < 16:
            failures.append(CheckFailure("length", f"expected an integer >= 16, got {length!r}"))
        return CheckResult(news, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [key for key in INPUTS if olds.get(key) != news.get(key)]
        return DiffResult(changes=bool(changed), replaces=[], delete_before_replace=False)

    def _outs(self, props: dict[str, Any]) -> dict[str, Any]:
        value = ensure(Path(str(props["path"])), int(props["length"]))
        return {**{key: props.get(key) for key in INPUTS}, "value": value}

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=str(props["path"]), outs=self._outs(props))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=self._outs(news))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        path = Path(str(props.get("path")))
        if not path.exists():
            return ReadResult(None, {})  # the data was wiped: refresh drops it, `up` generates anew
        return ReadResult(id_, {**props, "value": path.read_text().strip()})

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing: the file goes with the data folder (see the module docstring)."""


@dataclass(frozen=True, kw_only=True)
class HostSecretArgs:
    path: pulumi.Input[str]
    """Absolute path of the 0600 file under the data folder."""
    length: int = 40


class HostSecret(pulumi.dynamic.Resource, module="blueprint", name="HostSecret"):
    """A random letters-and-digits value kept in a file under the data folder."""

    value: pulumi.Output[str]
    """The value (secret)."""

    def __init__(self, name: str, args: HostSecretArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        props = {"path": args.path, "length": args.length, "provider_version": PROVIDER_VERSION, "value": None}
        secret = pulumi.ResourceOptions(additional_secret_outputs=["value"])
        super().__init__(HostSecretProvider(), name, props, pulumi.ResourceOptions.merge(opts, secret))
