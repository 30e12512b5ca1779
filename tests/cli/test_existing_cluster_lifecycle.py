"""A platform on an existing cluster, across `up` and `destroy`: never moved to another cluster, nor
between kind and an existing cluster, under a running phase2 (cli/cluster_change.py); a cluster said
gone only when its context shows it (cli/teardown.py); its identity asked of kubectl
(cli/cluster_identity.py). Fakes for Pulumi, kind and kubectl; no cluster here.
"""

from __future__ import annotations

import dataclasses
import io
import subprocess
from pathlib import Path

import pytest

from cli import phases
from cli.cluster_change import make_way_for_a_new_cluster
from cli.cluster_identity import Identity, cluster_identity
from cli.phases import Context
from cli.stack_runner import StackFailed
from cli.stand_ins import EXISTING_CLUSTER_UID
from cli.teardown import World, destroy
from stacks import PHASE_STACKS, outputs
from stacks.config.schema import stack_config
from stacks.runtime import DESTROYING
from tests.cli.teardown_fakes import FakePulumi, all_stacks, run_destroy, world
from tests.plans import fake_command, planned

EXISTING = {"cluster": "existing", "kubeContext": "prod", "domain": "platform.example.com"}


def configured(pulumi: FakePulumi, identity: Identity | None = None, /, **config: str) -> World:
    """The fake world with phase1's config `config` (`world`'s own `cluster` is kind's answer, not the key)."""
    full = {**stack_config("phase1")[0], **{f"blueprint:{key}": value for key, value in config.items()}}
    return dataclasses.replace(world(pulumi, identity=identity)[0], phase1_config=lambda: full)


def on_existing(**changed: str) -> tuple[FakePulumi, World]:
    """The phase stacks up on the existing cluster of context `prod`; phase1's config now with `changed`."""
    pulumi = FakePulumi(all_stacks(**EXISTING))
    pulumi.stack_outputs = {stack: planned(stack, **EXISTING).raw_outputs for stack in pulumi.states}
    return pulumi, configured(pulumi, None, **{**EXISTING, **changed})


def test_a_context_that_now_reaches_another_cluster_is_refused_before_anything_changes() -> None:
    pulumi, moved = on_existing(kubeContext="other")
    out: list[str] = []
    assert make_way_for_a_new_cluster(pulumi, out.append, "all", world=moved) == 1
    said = "\n".join(out)
    assert pulumi.calls == []
    assert "kubeContext other" in said, said
    assert "uid-of-other" in said, said
    assert "context prod" in said, said
    assert EXISTING_CLUSTER_UID in said, said
    assert "`uv run blueprint destroy`" in said, said
    assert "point blueprint:kubeContext back at prod" in said, said


def test_the_same_context_reaching_a_recreated_cluster_is_refused_too() -> None:
    pulumi, _ = on_existing()
    recreated = configured(pulumi, Identity("answered", uid="a-new-uid"), **EXISTING)
    out: list[str] = []
    assert make_way_for_a_new_cluster(pulumi, out.append, "1", world=recreated) == 1
    assert "a-new-uid" in "\n".join(out)
    assert pulumi.calls == []


def test_a_context_that_does_not_answer_stops_the_up_with_the_command_that_shows_why() -> None:
    pulumi, _ = on_existing()
    silent = configured(pulumi, Identity("unknown", detail="i/o timeout"), **EXISTING)
    out: list[str] = []
    assert make_way_for_a_new_cluster(pulumi, out.append, "all", world=silent) == 1
    assert "i/o timeout" in "\n".join(out)
    assert "kubectl --context prod get namespace kube-system" in "\n".join(out)


def test_the_platforms_own_cluster_lets_the_up_through() -> None:
    pulumi, same = on_existing()
    assert make_way_for_a_new_cluster(pulumi, print, "all", world=same) == 0
    assert pulumi.calls == []


def test_a_running_kind_platform_switched_to_an_existing_cluster_is_refused_up_front() -> None:
    pulumi = FakePulumi(all_stacks())
    out: list[str] = []
    switched = configured(pulumi, None, **EXISTING)
    assert make_way_for_a_new_cluster(pulumi, out.append, "all", world=switched) == 1
    said = "\n".join(out)
    assert pulumi.calls == []
    assert "`uv run blueprint destroy`" in said, said
    assert "then switch" in said, said


def test_a_running_existing_platform_switched_to_kind_is_refused_up_front() -> None:
    pulumi, switched = on_existing(cluster="kind", kubeContext="")
    out: list[str] = []
    assert make_way_for_a_new_cluster(pulumi, out.append, "all", world=switched) == 1
    said = "\n".join(out)
    assert pulumi.calls == []
    assert "`uv run blueprint destroy`" in said, said
    assert "then switch" in said, said


def test_cluster_gone_on_an_existing_cluster_that_still_answers_is_refused() -> None:
    pulumi, same = on_existing()
    code, said = run_destroy(pulumi, True, world=same, cluster_gone=True)
    assert code == 1
    assert pulumi.calls == []
    assert "still reaches the platform's cluster" in said
    assert "without --cluster-gone" in said


def test_cluster_gone_on_an_existing_cluster_that_does_not_answer_is_refused_as_unknown() -> None:
    pulumi, _ = on_existing()
    silent = configured(pulumi, Identity("unknown", detail="dial tcp: i/o timeout"), **EXISTING)
    code, said = run_destroy(pulumi, True, world=silent, cluster_gone=True)
    assert code == 1
    assert pulumi.calls == []
    assert "cannot tell whether" in said
    assert "dial tcp: i/o timeout" in said
    assert "kubectl config delete-context prod" in said


@pytest.mark.parametrize("now", [Identity("no-context"), Identity("answered", uid="another-cluster")])
def test_cluster_gone_is_believed_when_the_context_shows_the_cluster_gone(now: Identity) -> None:
    pulumi, _ = on_existing()
    gone = configured(pulumi, now, **EXISTING)
    code, said = run_destroy(pulumi, True, world=gone, cluster_gone=True)
    assert code == 0, said
    assert ("destroy", "phase2") in pulumi.calls


def kubectl(bin_dir: Path, contexts: str, uid_exit: int = 0) -> None:
    fails = 'echo "Unable to connect to the server: dial tcp 10.0.0.1:443: i/o timeout" >&2; exit 1\n'
    body = 'if [ "$1" = config ]; then printf "%s\\n" ' + contexts + "; exit 0; fi\n" + (fails if uid_exit else 'printf "%s" "uid-1"\n')
    fake_command(bin_dir, "kubectl", body)


@pytest.mark.parametrize(
    ("contexts", "uid_exit", "expected"),
    [
        ("prod staging", 0, Identity("answered", uid="uid-1")),
        ("staging", 0, Identity("no-context", detail="your kubeconfig has no context prod")),
        ('""', 0, Identity("no-context", detail="your kubeconfig has no context prod")),
    ],
)
def test_the_identity_is_the_kube_system_uid_or_a_context_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, contexts: str, uid_exit: int, expected: Identity
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    kubectl(tmp_path, contexts, uid_exit)
    assert cluster_identity("prod") == expected


def test_a_cluster_that_does_not_answer_is_unknown_with_what_kubectl_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    kubectl(tmp_path, "prod", uid_exit=1)
    found = cluster_identity("prod")
    assert found.status == "unknown"
    assert "i/o timeout" in found.detail


def test_a_kubectl_that_times_out_is_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    kubectl(tmp_path, "prod")

    def hangs(*args: object, **kwargs: object) -> subprocess.CompletedProcess[str]:
        raise subprocess.TimeoutExpired("kubectl", 40)

    assert cluster_identity("prod", run=hangs).status == "unknown"


def test_up_of_phase2_alone_is_refused_when_its_context_now_reaches_a_recreated_cluster() -> None:
    pulumi, _ = on_existing()
    recreated = configured(pulumi, Identity("answered", uid="a-new-uid"), **EXISTING)
    out = io.StringIO()
    assert phases.up(Context(runner=pulumi, out=out, world=recreated), "2") == 1
    assert "the context prod now reaches another cluster (kube-system UID a-new-uid)" in out.getvalue()
    assert "uv run blueprint destroy --cluster-gone" in out.getvalue()
    assert ("up", "phase2") not in pulumi.calls


def test_an_empty_kube_context_is_left_to_the_configs_own_check() -> None:
    pulumi, emptied = on_existing(kubeContext="")
    assert make_way_for_a_new_cluster(pulumi, print, "all", world=emptied) == 0


def test_phase2s_destroy_on_an_existing_cluster_runs_its_program_for_the_contexts_kubeconfig_now() -> None:
    """Without the program, Pulumi deletes with the kubeconfig phase2's state keeps from its last `up`: an
    embedded token expired since (OpenShift's 24 h `oc login`) fails the destroy although the user's is fresh."""
    pulumi, same = on_existing()
    code, said = run_destroy(pulumi, False, world=same)
    assert code == 0, said
    assert pulumi.ran_program == ["phase2"]


def test_a_context_that_now_reaches_another_cluster_destroys_phase2_with_its_recorded_credential() -> None:
    """The program's kubeconfig would send phase2's deletes to whatever the context reaches now."""
    pulumi, _ = on_existing()
    moved = configured(pulumi, Identity("answered", uid="another-cluster"), **EXISTING)
    code, said = run_destroy(pulumi, False, world=moved)
    assert code == 0, said
    assert ("destroy", "phase2") in pulumi.calls
    assert pulumi.ran_program == []
    assert "the context prod does not reach the platform's cluster now (kube-system UID another-cluster)" in said


def test_on_kind_no_destroy_runs_its_program() -> None:
    pulumi = FakePulumi(all_stacks())
    code, said = run_destroy(pulumi, False)
    assert code == 0, said
    assert ("destroy", "phase2") in pulumi.calls
    assert pulumi.ran_program == []


def test_the_program_phase2s_destroy_runs_knows_it_runs_for_a_destroy() -> None:
    """So it skips what only an `up` needs, and refuses nothing a destroy from the state would do (stacks/program.py)."""
    pulumi, same = on_existing()
    run_destroy(pulumi, False, world=same)
    assert ("phase2", {DESTROYING: "1"}) in pulumi.envs


@pytest.mark.parametrize(
    ("stack", "release", "by"), [("phase1", "0.0.9", "blueprint 0.0.9"), ("phase2", None, "a blueprint that recorded no release")]
)
def test_a_platform_another_release_brought_up_destroys_phase2_from_its_state_saying_why(stack: str, release: str | None, by: str) -> None:
    """The program of this release may not read what an older one recorded: the state alone can be destroyed."""
    pulumi, same = on_existing()
    pulumi.stack_outputs[stack][outputs.BLUEPRINT_VERSION] = (release, False)
    code, said = run_destroy(pulumi, False, world=same)
    assert code == 0, said
    assert ("destroy", "phase2") in pulumi.calls
    assert pulumi.ran_program == []
    assert f"phase2: destroyed from its state, with the credential its last `up` recorded: {by} brought {stack} up" in said


def test_a_wipe_that_stopped_half_way_destroys_phase2_from_its_state_saying_why() -> None:
    pulumi, same = on_existing()
    stopped = dataclasses.replace(same, unfinished_wipe=lambda folder: f"a destroy that removes {folder} stopped half-way")
    code, said = run_destroy(pulumi, False, world=stopped)
    assert code == 0, said
    assert pulumi.ran_program == []
    assert "phase2: destroyed from its state, with the credential its last `up` recorded: a wipe of " in said


def test_a_program_that_fails_before_deleting_anything_falls_back_once_to_the_state() -> None:
    pulumi, same = on_existing()
    pulumi.program_fails = "error: chart oci://docker.io/envoyproxy/gateway-crds-helm: failed to pull"
    code, said = run_destroy(pulumi, False, world=same)
    assert code == 0, said
    assert [call for call in pulumi.calls if call == ("destroy", "phase2")] == [("destroy", "phase2")] * 2
    assert pulumi.states["phase2"]["deployment"]["resources"] == []
    assert "phase2: running its program failed before it deleted anything: destroying it from its state" in said


def test_a_program_that_fails_after_deleting_is_not_retried_and_says_what_to_run() -> None:
    pulumi, same = on_existing()
    pulumi.program_fails = "error: the cluster refused a delete"
    pulumi.deleted_before_failing = 3
    out: list[str] = []
    with pytest.raises(StackFailed):
        destroy(pulumi, out.append, PHASE_STACKS["all"], False, world=same)
    said = "\n".join(out)
    assert pulumi.calls.count(("destroy", "phase2")) == 1
    assert "phase2: running its program failed after it deleted 3 resources" in said
    assert "uv run blueprint destroy" in said
