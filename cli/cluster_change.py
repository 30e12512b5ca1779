"""A cluster change under a running platform: when phase1's config now replaces the kind cluster,
phase2 goes first, keeping all of its data, and the `up` that follows brings it back on the new
cluster (before phase1's `up`, from cli/phases.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cli.cluster_identity import identity_command
from cli.data_folder import configured_folder
from cli.lifecycle import forget, pending_operations, plan_destroy, record_preserve_data, without_stale_creates
from cli.stack_runner import StackRunner
from cli.teardown import ClusterState, World, import_if_changed, say_forgotten
from stacks import outputs
from stacks.config.cluster import EXISTING, KIND


def make_way_for_a_new_cluster(
    runner: StackRunner,
    say: Callable[[str], None],
    phase: str,
    *,
    world: World | None = None,
    confirm: Callable[[str], bool] = lambda question: True,
) -> int:
    """Before phase1's `up`: when phase1's config now replaces the kind cluster (a new identity)
    while phase2 runs on it, take phase2 down first, keeping all of its data, so the `up` that
    follows brings it back on the new cluster (phase3 stays: its objects live in the kept data).
    Only a whole `up` can do that; `--phase 1` is refused with the command that does. GitLab is
    down until phase2 is back (its first start takes 10 to 30 minutes), so the user says yes first.
    """
    world = world or World()
    phase1, phase2 = runner.outputs("phase1"), runner.outputs("phase2")
    recorded = (phase1 or {}).get(outputs.CLUSTER_ID)
    if phase1 is None or phase2 is None or recorded is None:
        return 0
    config = world.phase1_config()
    context = str(config.get("blueprint:kubeContext") or "")
    if problem := switched_cluster(phase1, config) or another_existing_cluster(phase1, context, world):
        say(f"blueprint: {problem}")
        return 1
    planned = planned_cluster_id(config)
    if planned is None or recorded == planned:
        return 0
    moved = str(configured_folder(config))
    if moved != str(phase1.get(outputs.DATA_DIR)):
        # A platform over a new folder is a new platform: nothing of this one's data would follow.
        say(
            f"blueprint: blueprint:dataDir changed from {phase1.get(outputs.DATA_DIR)} to {moved} while the platform "
            "runs over the old folder; over the new one, a new, empty platform would come up and phase3's projects would "
            "be lost to it. Put the old value back, or first `uv run blueprint destroy` (with --preserve-data to keep "
            "the old folder as it is), then change dataDir and `uv run blueprint up`."
        )
        return 1
    if phase != "all":
        say(
            "blueprint: phase1's new settings replace the kind cluster, and phase2 runs on it. `uv run blueprint up` "
            "applies the change: it takes phase2 down first, keeping its data, and brings it back on the new cluster."
        )
        return 1
    name = str(phase1.get(outputs.CLUSTER_NAME))
    cluster = world.cluster(name)
    if cluster.status == "unknown":
        say(f"blueprint: cannot tell whether the kind cluster {name} runs ({cluster.detail}); start Docker and run this again.")
        return 1
    question = (
        f"phase1's new settings replace the kind cluster {name}: phase2 goes first, keeping its data, and comes back on the "
        "new cluster (GitLab is down until then). Go on?"
    )
    if not confirm(question):
        say(f"blueprint: {question} Not without a yes: run `uv run blueprint up` in a terminal, or with --yes.")
        return 1
    say("== phase1's new settings replace the kind cluster: phase2 goes first, keeping its data, and comes back on the new cluster")
    return _take_phase2_down(runner, say, cluster)


def phase2_moved(runner: StackRunner, say: Callable[[str], None], *, world: World | None = None) -> int:
    """Before `up --phase 2` on an existing cluster: 1, said, when phase1's recorded context now reaches
    another cluster than the one phase2 runs on (recreated, or the context repointed).
    """
    phase1, phase2 = runner.outputs("phase1"), runner.outputs("phase2")
    if phase1 is None or phase2 is None:
        return 0
    if problem := another_existing_cluster(phase1, outputs.kube_context(phase1), world or World()):
        say(f"blueprint: {problem}")
        return 1
    return 0


def switched_cluster(phase1: Mapping[str, Any], config: Mapping[str, str]) -> str | None:
    """Why an `up` stops when `blueprint:cluster` now switches the running platform between a kind
    cluster and an existing one (None: it does not). Its data does not follow (a kind platform's is
    in the host's data folder, an existing cluster's in claims there), and phase1 would delete the
    kind cluster from under phase2 (its lease refuses, late in the run).
    """
    was, now = outputs.on_existing(phase1), config.get("blueprint:cluster") == EXISTING
    if was == now:
        return None
    context = outputs.kube_context(phase1)
    runs_on = f"the existing cluster of context {context}" if was else f"the kind cluster {phase1.get(outputs.CLUSTER_NAME)}"
    return (
        f"blueprint:cluster is now {EXISTING if now else KIND}, but the platform runs on {runs_on}, and phase2 is up there: "
        "blueprint does not move a running platform between a kind cluster and an existing one (its data does not follow). "
        f"Nothing was changed. Destroy it first, then switch: put blueprint:cluster back to {EXISTING if was else KIND}, "
        "run `uv run blueprint destroy` (with --preserve-data to keep its data where it is), then set blueprint:cluster "
        "again and `uv run blueprint up`, which brings a new, empty platform up"
    )


def another_existing_cluster(phase1: Mapping[str, Any], context: str, world: World) -> str | None:
    """Why an `up` stops when the context it goes through (`blueprint:kubeContext`; phase1's recorded one
    for `--phase 2`) now reaches another cluster than the one the platform runs on (another kube-system
    UID; None: the same, or not on an existing cluster). phase2's provider is keyed on the cluster's
    identity: its next `up` would create everything on the new cluster, then delete it all from the
    old one, claims and namespaces included, whatever preserveData says.
    """
    if not outputs.on_existing(phase1) or not context:
        return None  # no context: the config's own check says so, naming the key
    recorded, was = str(phase1.get(outputs.CLUSTER_ID)), outputs.kube_context(phase1)
    now = world.identity(context)
    if now.status == "answered" and now.uid == recorded:
        return None
    platform = f"the platform runs on the cluster of context {was} (kube-system UID {recorded}), and phase2 is up there"
    if now.status != "answered":
        return (
            f"cannot tell which cluster the context {context} reaches ({now.detail or now.status}); {platform}. Nothing was "
            f"changed: make `{identity_command(context)}` answer, then run this again"
        )
    moved = f"blueprint:kubeContext {context} now reaches" if context != was else f"the context {context} now reaches"
    back = f"point blueprint:kubeContext back at {was}" if context != was else f"point the context {was} back at it"
    return (
        f"{moved} another cluster (kube-system UID {now.uid}) than the platform's: {platform}. An `up` would move the whole "
        "platform: create it on the new cluster, then delete it from the old one, its claims and namespaces with it. Nothing "
        f"was changed. If the platform's cluster is still there, {back}; or take the platform off it first, `uv run blueprint "
        "destroy` (its claims and namespaces there kept or deleted as blueprint:preserveData says: they do not follow), then "
        "`uv run blueprint up`. If it is gone for good, `uv run blueprint destroy --cluster-gone` forgets what lived in it"
    )


def _take_phase2_down(runner: StackRunner, say: Callable[[str], None], cluster: ClusterState) -> int:
    """phase2's destroy, every piece of its data kept; 1, said, when its state holds pending operations."""
    exported = runner.export_state("phase2")
    state, dropped = without_stale_creates("phase2", exported.get("deployment") or {})
    # Not a whole `up`: that would come back here; phase2's alone finishes it on the cluster it runs on.
    if problem := pending_operations("phase2", state, finish="uv run blueprint up --phase 2"):
        say(f"blueprint: {problem}")
        return 1
    if dropped:
        say(dropped)
    # Recorded, not forgotten: if this destroy stops half-way, a later `--wipe-data` can still record
    # the wipe of the platform folder, and the Runner is kept in GitLab's database for the way back.
    state = record_preserve_data(state, keep=True)
    reasons = plan_destroy(
        state,
        keep=True,
        cluster_is_gone=cluster.status == "gone",
        gitlab_reachable=False,
        gitlab_data_goes=False,
        cluster_gone_for_good=False,
    )
    say_forgotten(say, "phase2", reasons)
    import_if_changed(runner, "phase2", exported, forget(state, set(reasons)))
    say("== phase2: pulumi destroy")
    runner.destroy("phase2", say, {})
    return 0


def planned_cluster_id(config: Mapping[str, str]) -> str | None:
    """The kind cluster's identity phase1's config gives now; None when the config is invalid (the `up`
    says so), and for an existing cluster, which no config change replaces.
    """
    from components.kind_cluster import cluster_id
    from stacks.config import NAMESPACE, ConfigError
    from stacks.config.phases import parse_phase1
    from stacks.migrations import layout
    from stacks.phase1 import cluster_args

    prefix = f"{NAMESPACE}:"
    try:
        parsed = parse_phase1({key.removeprefix(prefix): value for key, value in config.items() if key.startswith(prefix)})
    except ConfigError:
        return None
    if parsed.cluster.existing:
        return None  # read from the cluster, never derived from the config: blueprint never replaces it
    return cluster_id(cluster_args(parsed, owner="blueprint/phase1", data_layout=layout("phase1")))
