"""The dynamic provider classes a release ships, by the path the engine records: kept forever.

The engine pickles each dynamic provider by reference, `module.qualname`, into its resources'
`__provider`; its provider host loads that recorded pickle to delete or refresh them, and `diff`
never compares `__provider`, so no `up` rewrites it unless the resource is updated. A recorded path
that no longer imports fails every destroy and refresh of the states that hold it, and nothing can
heal them (docs/contributing.md, "The rules every change keeps").
"""

from __future__ import annotations

import base64
import pickletools
from typing import Any

import dill
import pytest
from google.protobuf import json_format
from pulumi.dynamic import ResourceProvider
from pulumi.runtime._serialization import _deserialize

from cli import plan as plan_module

SHIPPED = frozenset(
    {
        "providers.ca_certificate.CaCertificateProvider",
        "providers.deploy_kubeconfig.DeployKubeconfigProvider",
        "providers.gitlab_deploy_token.DeployTokenProvider",
        "providers.gitlab_group.GroupProvider",
        "providers.gitlab_pipeline.SmokePipelineProvider",
        "providers.gitlab_project.ProjectProvider",
        "providers.gitlab_runner.RunnerProvider",
        "providers.gitlab_sync.GitLabSyncProvider",
        "providers.gitlab_token.GitLabTokenProvider",
        "providers.gitlab_token.GlabTokenProvider",
        "providers.gitlab_variable.VariableProvider",
        "providers.host_secret.HostSecretProvider",
        "providers.openbao_init.OpenBaoInitProvider",
        "providers.openbao_kv.OpenBaoKvProvider",
    }
)
"""Every `module.qualname` a released blueprint (0.1.0 on) records in `__provider`. Only ever add."""

RULE = (
    "a dynamic provider's class path, once released, is kept forever (states record it in `__provider`, and a "
    "destroy or refresh loads it from there). If the class moves, keep a module at the old path that re-exports "
    "it, and bump the provider's PROVIDER_VERSION, so that the next `up` updates its resources and rewrites "
    "their `__provider`"
)


def recorded_pickle(path: str) -> bytes:
    """`__provider` as a state records `path`: a by-reference pickle of an instance of the class
    (protocol 4: the module, the name, STACK_GLOBAL, NEWOBJ with no arguments)."""
    module, _, name = path.rpartition(".")
    text = b"".join(b"\x8c" + bytes([len(part)]) + part for part in (module.encode(), name.encode()))
    return b"\x80\x04" + text + b"\x93)\x81."


def paths_in(pickled: bytes) -> set[str]:
    """The `module.qualname` every global a pickle references names."""
    found, strings = set(), []
    for opcode, arg, _ in pickletools.genops(pickled):
        if isinstance(arg, str):
            strings.append(arg)
        if opcode.name == "STACK_GLOBAL":
            found.add(".".join(strings[-2:]))
        elif opcode.name == "GLOBAL":
            found.add(str(arg).replace(" ", "."))
    return found


@pytest.mark.parametrize("path", sorted(SHIPPED))
def test_a_shipped_provider_path_still_loads_as_the_provider_host_loads_it(path: str) -> None:
    assert paths_in(recorded_pickle(path)) == {path}
    try:
        # As pulumi/dynamic/__main__.py get_provider loads a recorded `__provider`.
        loaded = _deserialize(lambda: dill.loads(recorded_pickle(path)))
    except (ImportError, AttributeError) as error:
        pytest.fail(f"a state's {path} no longer loads ({type(error).__name__}: {error}): {RULE}")
    assert isinstance(loaded, ResourceProvider), f"{path} is no dynamic provider any more: {RULE}"


def test_every_provider_the_program_registers_is_in_the_shipped_list(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read from the pickles the dev stack's plan registers (it holds every phase's resources)."""
    registered: set[str] = set()
    original = plan_module._Recorder.RegisterResource

    def keep_provider(self: Any, request: Any) -> Any:
        provider = json_format.MessageToDict(request.object).get("__provider")
        if provider is not None:
            registered.update(paths_in(base64.b64decode(provider["value"])))  # a secret: {<sig>: <secret sig>, "value": ...}
        return original(self, request)

    monkeypatch.setattr(plan_module._Recorder, "RegisterResource", keep_provider)
    plan_module.plan("dev")
    assert registered, "the plan registered no dynamic resource"
    assert sorted(registered - SHIPPED) == [], f"add these to SHIPPED: {RULE}"
