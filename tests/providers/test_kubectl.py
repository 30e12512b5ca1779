"""One way to run kubectl against a context (providers/kubectl.py): every caller builds its command there,
so the doctor, phase1's reads, the providers and the report agree on the flags and the timeout."""

from __future__ import annotations

import re
import shlex

from cli.doctor import cluster
from components import existing_cluster
from providers.cluster_access import Target
from providers.kubectl import FROM_ENVIRONMENT, REQUEST_TIMEOUT, context_kubeconfig_argv
from stacks.config import PROJECT_DIR
from tests.cli.doctor.fake_kubectl import ClusterMachine

SPELLED = re.compile(r"""["']kubectl["'],\s*["'](?:--context|config["'],\s*["']view)["']""")
"""A kubectl command with a context, or a context's kubeconfig, spelled as an argv of its own."""
SAID_ONLY = {"kubectl.py", "openbao_errors.py"}
"""The helper; and OpenBao's recovery steps, commands said to the user alone (in kubectl's short `-n`, as
the guides quote them), which blueprint never runs."""


def test_no_module_spells_a_kubectl_command_with_a_context_but_the_helper() -> None:
    spelled = [
        str(path.relative_to(PROJECT_DIR))
        for folder in ("cli", "components", "providers", "stacks")
        for path in sorted((PROJECT_DIR / folder).rglob("*.py"))
        if path.name not in SAID_ONLY and SPELLED.search(path.read_text())
    ]
    assert spelled == []


def test_phase1s_reads_and_the_doctor_give_up_on_a_silent_cluster_after_the_same_time() -> None:
    machine = ClusterMachine()
    cluster._kubectl(machine, "team-cluster", "get", "--raw", "/version")
    assert f"--request-timeout={REQUEST_TIMEOUT}" in machine.calls[-1]
    assert f"--request-timeout={REQUEST_TIMEOUT}" in shlex.split(existing_cluster.KUBECTL)


def test_phase2s_provider_and_the_providers_read_the_same_kubeconfig_of_the_context() -> None:
    """phase2's provider gets it through an invoke, the providers that run kubectl (kind_access) directly."""
    assert shlex.split(existing_cluster.KUBECONFIG_COMMAND.removesuffix(" || true")) == context_kubeconfig_argv(FROM_ENVIRONMENT)


def test_an_invokes_command_text_holds_no_context_only_its_environment_variable() -> None:
    assert existing_cluster.KUBECONFIG_COMMAND == 'kubectl config view --raw --minify --flatten --context "$KUBE_CONTEXT" || true'


def test_a_port_forward_has_no_request_timeout_since_it_is_a_stream() -> None:
    argv = Target(context="team", namespace="openbao", service="openbao", port=8200).argv()
    assert not any(word.startswith("--request-timeout") for word in argv)
    assert argv[:5] == ["kubectl", "--context", "team", "--namespace", "openbao"]
