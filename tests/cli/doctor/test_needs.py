"""What the platform needs of Docker: the requests table, as the plans set them, and their sum per config."""

from __future__ import annotations

import re

from cli.doctor.needs import (
    CLUSTER_REQUESTS,
    HEADLAMP_REQUESTS,
    NODE_MEMORY_BYTES,
    NODE_OVERHEAD,
    PLATFORM_REQUESTS,
    default_needs,
    resources_needed,
)
from tests.cli.doctor.fakes import (
    MIB,
    NEEDS,
)
from tests.cli.test_os_family import BRING_UP


def test_the_memory_needed_grows_with_each_node() -> None:
    for gitlab_nodes in range(1, 8):
        for runner_nodes in range(1, 8):
            needed = resources_needed(gitlab_nodes=gitlab_nodes, runner_nodes=runner_nodes, headlamp=False).memory_bytes
            more_gitlab = resources_needed(gitlab_nodes=gitlab_nodes + 1, runner_nodes=runner_nodes, headlamp=False).memory_bytes
            more_runners = resources_needed(gitlab_nodes=gitlab_nodes, runner_nodes=runner_nodes + 1, headlamp=False).memory_bytes
            assert more_gitlab - needed == more_runners - needed == NODE_MEMORY_BYTES > 0


def test_the_memory_and_cpus_needed_count_headlamp_only_when_it_is_on() -> None:
    on = resources_needed(gitlab_nodes=3, runner_nodes=1, headlamp=True)
    assert on.memory_bytes > NEEDS.memory_bytes
    assert on.millicpus > NEEDS.millicpus


def test_the_bring_up_guide_states_what_the_default_config_needs_and_what_each_node_adds() -> None:
    # The README's own statement is tests/test_readme.py's.
    readme = BRING_UP.read_text()
    needs = default_needs()
    stated = re.findall(r"at least (\d+) CPUs and (\d+) GiB", readme)
    assert stated, "the sizing paragraph states it (the prerequisites table links to it)"
    assert set(stated) == {(str(needs.cpus), str(needs.gib))}
    assert f"{needs.nodes} nodes" in readme
    assert f"{NODE_MEMORY_BYTES // MIB} MiB more for each further node" in readme


def _requests_in(value: object) -> list[tuple[str, str]]:
    """Every (cpu, memory) a pod's `resources.requests` sets, anywhere in a plan's inputs."""
    if isinstance(value, list):
        return [found for item in value for found in _requests_in(item)]
    if not isinstance(value, dict):
        return []
    requests = value.get("resources", {}).get("requests", {}) if isinstance(value.get("resources"), dict) else {}
    own = [(str(requests["cpu"]), str(requests["memory"]))] if "cpu" in requests else []
    return own + [found for key, item in value.items() if key != "resources" for found in _requests_in(item)]


def test_doctors_table_has_every_request_blueprint_sets_as_the_plans_show_it() -> None:
    from tests.plans import planned

    plans = (planned("phase2"), planned("phase1", headlamp="true"))
    in_plans = sorted(found for plan in plans for resource in plan.resources for found in _requests_in(resource["inputs"]))
    tables = (*CLUSTER_REQUESTS, *PLATFORM_REQUESTS, *HEADLAMP_REQUESTS, *NODE_OVERHEAD)
    assert sorted((request.cpu, request.memory) for request in tables if request.ours) == in_plans
