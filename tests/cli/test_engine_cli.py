"""The commands on Podman: `status`, `cache prune` and the destroy's cache wipe ask phase1's engine,
and say it in its name (cli/image_cache.py `engine_of`, `on_engine`, `said_on`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from cli import image_cache, status
from components.engine import PODMAN
from stacks import outputs

PHASE1 = {
    outputs.IMAGE_MIRRORS: {"docker.io": "blueprint-mirror-docker-io:5000", "quay.io": "blueprint-mirror-quay-io:5000"},
    outputs.CONTAINER_ENGINE: PODMAN,
}


def test_the_engine_of_a_phase1_that_is_up_is_the_one_it_recorded() -> None:
    assert image_cache.engine_of(PHASE1, lambda: {}) == PODMAN
    assert image_cache.engine_of({}, lambda: {"blueprint:containerEngine": PODMAN}) == "docker"  # up on Docker: no output


def test_the_engine_of_a_phase1_that_is_down_is_the_one_its_config_names() -> None:
    assert image_cache.engine_of(None, lambda: {"blueprint:containerEngine": PODMAN}) == PODMAN


def test_status_asks_podman_of_the_mirrors_and_says_podmans_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    asked: list[list[str]] = []

    def podman(argv: Sequence[str], timeout: float = 20) -> tuple[int, str]:
        asked.append(list(argv))
        return 0, "blueprint-mirror-docker-io\tUp 3 hours\nblueprint-mirror-quay-io\tExited (2) 5 minutes ago\n"

    monkeypatch.setattr(image_cache, "docker_run", podman)
    lines = status._image_cache_status({**PHASE1, outputs.IMAGE_CACHE_DIR: str(folder)})
    assert asked == [["podman", "ps", "--all", "--format", "{{.Names}}\t{{.Status}}"]]
    assert "`podman start blueprint-mirror-quay-io` starts it" in lines[-1]
    assert "mirror of docker.io (blueprint-mirror-docker-io): up" in lines[1]


def test_a_message_about_docker_says_podman_and_leaves_docker_hub_as_it_is() -> None:
    said = image_cache.said_on(PODMAN)
    assert said("Docker does not answer: `docker start x` (docker.io)") == "Podman does not answer: `podman start x` (docker.io)"


def test_blueprint_kubeconfig_asks_kind_on_phase1s_podman(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """kind finds a cluster on its own engine alone: without the provider, it would look on Docker."""
    from cli import kubeconfig
    from stacks.config import schema
    from tests.plans import fake_command

    fake_command(tmp_path, "kind", 'echo "provider: ${KIND_EXPERIMENTAL_PROVIDER:-none}"\n')
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.setattr(schema, "stack_config", lambda stack: ({"blueprint:containerEngine": PODMAN}, set()))
    assert kubeconfig.kind_kubeconfig("blueprint", "phase1").strip() == "provider: podman"


def test_a_kind_provider_exported_in_the_shell_does_not_move_a_docker_platforms_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Podman user's `export KIND_EXPERIMENTAL_PROVIDER=podman` would make kind put the cluster on
    Podman while the mirrors, the wipe and `status` use Docker: blueprint's engine wins, in the
    CLI's own kind commands and in everything Pulumi runs (kind reads "" as unset: detect)."""
    from cli import stack_runner
    from components.engine import KIND_PROVIDER
    from stacks.config import schema

    monkeypatch.setenv(KIND_PROVIDER, PODMAN)
    monkeypatch.setattr(schema, "stack_config", lambda stack: ({"blueprint:containerEngine": "docker"}, set()))
    assert image_cache.kind_environment().get(KIND_PROVIDER, "") == ""
    assert {**os.environ, **stack_runner.pulumi_environment(create=False)}[KIND_PROVIDER] == ""


def test_a_docker_provider_exported_in_the_shell_does_not_move_a_podman_platforms_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    from components.engine import KIND_PROVIDER
    from stacks.config import schema

    monkeypatch.setenv(KIND_PROVIDER, "docker")
    monkeypatch.setattr(schema, "stack_config", lambda stack: ({"blueprint:containerEngine": PODMAN}, set()))
    assert image_cache.kind_environment()[KIND_PROVIDER] == PODMAN
