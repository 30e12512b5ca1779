"""The container engine (components/engine.py): detected as kind detects it, Docker's plan as it was,
Podman's scripts run against a fake `podman` (tests/fake_podman.py), rootless Podman refused."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from cli import stand_ins
from components import engine, scripts
from components.engine import DOCKER, PODMAN, PODMAN_FORMS, ROOTLESS_REASON, chosen, for_engine, rootless_refusal
from components.image_cache import mirror_subnet
from stacks import outputs
from tests.fake_podman import FAKE_PODMAN
from tests.plans import COMMAND, fake_command, planned, run_script

PODMAN_VERSION = (0, "podman version 5.8.2\n")
DOCKER_VERSION = (0, "Docker version 29.1.3, build f52814d\n")


def machine(**answers: tuple[int, str]) -> engine.Run:
    """A machine whose commands answer by `<argv[0]> <argv[1]>` (`-v`: the CLI is there), else not found."""

    def run(argv: list[str]) -> tuple[int, str]:
        return answers.get(f"{argv[0]}_{argv[1].lstrip('-')}", (127, f"{argv[0]}: not found"))

    return run


def test_an_empty_engine_is_docker_when_docker_is_there_even_beside_podman() -> None:
    assert chosen("", machine(docker_v=DOCKER_VERSION, podman_v=PODMAN_VERSION)) == DOCKER


def test_an_empty_engine_is_podman_when_only_podman_is_there() -> None:
    assert chosen("", machine(podman_v=PODMAN_VERSION)) == PODMAN


def test_podmans_docker_shim_counts_as_podman_as_kind_counts_it() -> None:
    """podman-docker's `docker` prints Podman's version: kind's docker test (a "Docker version" line) fails on it."""
    assert chosen("", machine(docker_v=PODMAN_VERSION, podman_v=PODMAN_VERSION)) == PODMAN


def test_a_configured_engine_is_taken_as_it_is() -> None:
    assert chosen(PODMAN, machine(docker_v=DOCKER_VERSION)) == PODMAN


def test_rootless_podman_is_refused_with_the_reason() -> None:
    assert rootless_refusal(PODMAN, machine(podman_info=(0, "true\n"))) == ROOTLESS_REASON
    assert rootless_refusal(PODMAN, machine(podman_info=(0, "false\n"))) is None
    assert rootless_refusal(DOCKER, machine(podman_info=(0, "true\n"))) is None


def test_dockers_script_text_is_the_file_as_written() -> None:
    text = scripts.script("image_cache_mirror_up.sh")
    assert for_engine(text, DOCKER) is text


def test_every_podman_form_replaces_a_text_some_docker_script_has() -> None:
    """A Docker script edited apart from its Podman form would leave the Docker text in Podman's dialect."""
    texts = [path.read_text() for path in scripts.FOLDER.glob("*.sh")]
    for docker in PODMAN_FORMS:
        assert any(docker in text for text in texts), docker


@pytest.mark.parametrize("name", ["image_cache_mirror_up.sh", "image_cache_network.sh", "host_folder_delete.sh", "postgres_adopt.sh"])
def test_podmans_scripts_call_no_docker(name: str) -> None:
    text = for_engine(scripts.script(name), PODMAN)
    assert not re.search(r"(?<![\w.-])docker(?![\w.-])", text)
    assert "Docker does not answer" not in text


# -- the plans -------------------------------------------------------------------------------------


def test_a_default_plan_names_no_engine() -> None:
    result = planned("phase1")
    assert engine.KIND_PROVIDER not in result.one(COMMAND, "kind-cluster")["inputs"]["environment"]
    assert outputs.CONTAINER_ENGINE not in result.outputs


def test_kind_runs_on_podman_when_the_config_says_podman() -> None:
    cluster = planned("phase1", containerEngine="podman").one(COMMAND, "kind-cluster")
    assert cluster["inputs"]["environment"][engine.KIND_PROVIDER] == "podman"


def test_another_engine_replaces_the_cluster() -> None:
    """kind finds a cluster on its own engine alone: the old cluster's delete runs on the old engine first."""
    docker = planned("phase1").one(COMMAND, "kind-cluster")["inputs"]["triggers"]
    podman = planned("phase1", containerEngine="podman").one(COMMAND, "kind-cluster")["inputs"]["triggers"]
    assert docker != podman
    assert planned("phase1").outputs[outputs.CLUSTER_ID] != planned("phase1", containerEngine="podman").outputs[outputs.CLUSTER_ID]


def test_phase2_asks_kind_for_the_kubeconfig_on_phase1s_engine() -> None:
    """phase2 reads the admin kubeconfig with `kind get kubeconfig`, which finds the cluster on its own engine alone."""
    invokes = [invoke for invoke in planned("phase2", containerEngine="podman").invokes if "kind get kubeconfig" in str(invoke["command"])]
    assert [invoke["environment"][engine.KIND_PROVIDER] for invoke in invokes] == ["podman"]
    default = [invoke for invoke in planned("phase2").invokes if "kind get kubeconfig" in str(invoke["command"])]
    assert engine.KIND_PROVIDER not in default[0]["environment"]


def test_phase1_exports_its_engine_for_phase2_only_off_docker() -> None:
    assert planned("phase1", containerEngine="podman").outputs[outputs.CONTAINER_ENGINE]["value"] == "podman"


def test_every_container_the_dev_stack_runs_itself_runs_on_podman() -> None:
    """The mirrors, their network, the join, the host folders' fallback and Postgres' probe: no `docker` left."""
    result = planned("dev", containerEngine="podman")
    texts = [
        str(resource["inputs"].get(key, ""))
        for resource in result.resources
        if resource["type"] == COMMAND
        for key in ("create", "update", "delete")
    ]
    assert any("podman run" in text for text in texts)
    assert not [text for text in texts if re.search(r"(?<![\w.-])docker (run|network|inspect|ps|rm|info)", text)]


# -- the scripts against a fake podman ---------------------------------------------------------------


@pytest.fixture
def podman(tmp_path: Path) -> Path:
    folder = tmp_path / "bin"
    fake_command(folder, "podman", FAKE_PODMAN)
    fake_command(folder, "sleep", "exit 0\n")
    # No docker anywhere on this PATH's front: a script that still calls it fails.
    fake_command(folder, "docker", 'echo "docker called: $*" >&2; exit 127\n')
    return folder


def run_on_podman(command: dict[str, Any], script: str, podman: Path, **env: str) -> tuple[Any, list[str]]:
    calls = podman.parent / "calls"
    calls.unlink(missing_ok=True)
    done = run_script(command, script, path_prefix=podman, env={"CALLS": str(calls), **env})
    return done, calls.read_text().splitlines() if calls.exists() else []


def network_command() -> dict[str, Any]:
    return planned("phase1", containerEngine="podman").one(COMMAND, "kind-image-cache-mirrors-network")


def test_podmans_mirrors_network_is_made_with_its_subnet_and_the_nodes_range(podman: Path) -> None:
    done, calls = run_on_podman(network_command(), "create", podman)
    assert done.returncode == 0, done.stderr
    create = next(call for call in calls if call.startswith("network create ")).split()
    subnet = mirror_subnet("blueprint")
    assert f"--subnet={subnet}" in create
    assert f"--ip-range={subnet[33]}-{subnet[62]}" in create


def test_a_rerun_keeps_the_podman_network_this_stack_made_reading_podmans_subnets(podman: Path) -> None:
    environment = network_command()["inputs"]["environment"]
    # What `podman network inspect -f '{{range .Subnets}}...'` prints for the network the create above makes.
    found = f"{environment['SUBNET']}={environment['IP_RANGE']} |{environment['OWNER']}"
    done, calls = run_on_podman(network_command(), "create", podman, NETWORK_FOUND=found)
    assert done.returncode == 0, done.stderr
    assert any(".Subnets" in call for call in calls)
    assert not [call for call in calls if call.startswith("network create")]


def test_a_podman_network_of_that_name_made_otherwise_is_refused(podman: Path) -> None:
    done, calls = run_on_podman(network_command(), "create", podman, NETWORK_FOUND="10.0.0.0/24=10.0.0.1-10.0.0.9 |")
    assert done.returncode == 1
    assert "a Podman network named blueprint-mirrors exists" in done.stderr
    assert "podman network rm blueprint-mirrors" in done.stderr


def test_the_nodes_join_the_mirrors_network_through_podman(podman: Path) -> None:
    command = planned("phase1", containerEngine="podman").one(COMMAND, "kind-image-cache-nodes-joined")
    done, calls = run_on_podman(command, "create", podman, NODES="blueprint-control-plane blueprint-worker")
    assert done.returncode == 0, done.stderr
    assert "network connect blueprint-mirrors blueprint-worker" in calls


def test_a_mirror_starts_on_rootful_podman_as_the_host_user(podman: Path, tmp_path: Path) -> None:
    command = next(
        resource for resource in planned("phase1", containerEngine="podman").resources if resource["name"] == "kind-image-cache-docker-io"
    )
    done, calls = run_on_podman(command, "create", podman, CACHE_DIR=str(tmp_path / "cache"))
    assert done.returncode == 0, done.stderr
    run = next(call for call in calls if call.startswith("run "))
    assert "--network=blueprint-mirrors" in run.split()
    assert "info -f {{.Host.Security.Rootless}}" in calls


# -- rootless refused before anything is registered ------------------------------------------------


def test_phase1_refuses_rootless_podman_before_registering_anything(monkeypatch: pytest.MonkeyPatch) -> None:
    import cli.plan
    from stacks.config import PROJECT_DIR
    from stacks.config.schema import stack_config

    monkeypatch.setattr(stand_ins.StandInEngine, "refusal", lambda self, engine: ROOTLESS_REASON if engine == PODMAN else None)
    config, secret_keys = stack_config("phase1")
    config = {**config, "blueprint:containerEngine": "podman"}
    with pytest.raises(cli.plan.ProgramFailed) as failed:
        cli.plan._run("phase1", config, secret_keys, PROJECT_DIR / "__main__.py", {})
    assert "rootless" in str(failed.value.cause)
    assert "podman machine set --rootful" in str(failed.value.cause)
    # The stack and the read of its own last outputs (stacks/migrations.py): nothing that makes anything.
    assert {resource["type"] for resource in failed.value.registered} <= {"pulumi:pulumi:Stack", "pulumi:pulumi:StackReference"}


def test_phase1_on_an_existing_cluster_asks_no_container_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """No engine is needed there: a laptop with rootless Podman (Fedora's default) is not refused,
    and no `docker -v` or `podman -v` runs."""
    import cli.plan
    from stacks.config import PROJECT_DIR
    from stacks.config.schema import stack_config

    def asked(*args: Any) -> None:
        raise AssertionError("phase1 on an existing cluster asked the container engine")

    monkeypatch.setattr(stand_ins.StandInEngine, "chosen", asked)
    monkeypatch.setattr(stand_ins.StandInEngine, "refusal", asked)
    config, secret_keys = stack_config("phase1")
    existing = {"blueprint:cluster": "existing", "blueprint:kubeContext": "ctx", "blueprint:domain": "platform.example.com"}
    cli.plan._run("phase1", {**config, **existing}, secret_keys, PROJECT_DIR / "__main__.py", {})


def test_the_podman_guide_says_kinds_own_detection_order_and_blueprints() -> None:
    """kind v0.31.0 pkg/cluster/provider.go `DetectNodeProvider` tries docker, then nerdctl, then podman;
    blueprint runs on no nerdctl, so with the key empty it takes Docker, else Podman, and tells kind so."""
    from stacks.config import PROJECT_DIR

    guide = " ".join((PROJECT_DIR / "docs/guide/podman.md").read_text().split())
    assert "Docker, then nerdctl, then Podman" in guide
    assert "Docker first, then Podman (kind" not in guide
    run = lambda argv: (0, "podman version 5.8.2") if argv[0] == "podman" else (127, "")  # noqa: E731
    assert engine.detected(run) == engine.PODMAN  # a nerdctl here changes nothing: blueprint never asks it
