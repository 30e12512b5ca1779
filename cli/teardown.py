"""`blueprint destroy` on every route, and a cluster change under a running platform.

Pulumi deletes what a stack's state records through the providers that made it, so a destroy
needs what those providers talk to. When that is gone, this module decides per resource, from
what can be known, and says so:

- **The kind cluster** is asked of kind. Listed: it runs. Not listed while kind answers: it is
  gone, and what lived in it (everything made through a Kubernetes provider) is forgotten, since it
  went with the cluster. kind cannot answer (Docker stopped, kind missing): nobody can tell, so the
  destroy stops with the fix; only the user can say the cluster is gone for good
  (`--cluster-gone`, when Docker itself is gone), and then the kind cluster's own command is
  forgotten too.
- **GitLab's objects** (the Runner, phase3's group, projects, variables, tokens) live in GitLab's
  database. They are forgotten when that database goes anyway (this destroy wipes the data) or is
  out of reach for good (the cluster is gone, or phase2 is no longer up); with the data kept they
  are retained, to be adopted by the next `up`. Otherwise GitLab must answer: they are deleted
  through its API.
- **preserveData** is phase1's config (`--preserve-data`/`--wipe-data` set it first). Before
  anything is destroyed it is recorded in the state of every stack that exists
  (`record_preserve_data`), so no two stacks disagree, and never by an `up`: an `up` would also
  apply any other pending change, and cannot run at all once the cluster is gone.

Stacks are destroyed dependants first. A stack is not destroyed from under one that depends on it
(phase2 needs phase1's cluster, phase3 needs phase2's GitLab), except phase3 over preserved data.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from cli.lifecycle import forget, lives_in_cluster, lives_in_gitlab, record_preserve_data
from stacks import outputs

ORDER = ("phase1", "phase2", "phase3")
KIND_CLUSTER_TYPE = "command:local:Command"
KIND_CLUSTER_NAME = "kind-cluster"


@dataclass(frozen=True)
class ClusterState:
    status: Literal["running", "gone", "unknown"]
    detail: str = ""
    """Why the state is unknown: what kind said, in one line."""


def cluster_state(name: str, run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run) -> ClusterState:
    """Ask kind whether the cluster `name` exists. Only a listing from a kind that answered says
    "gone": a kind that fails (Docker stopped) or is missing says nothing about the cluster.
    """
    if shutil.which("kind") is None:
        return ClusterState("unknown", "kind is not on PATH")
    try:
        done = run(["kind", "get", "clusters"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return ClusterState("unknown", f"`kind get clusters` failed: {error}")
    if done.returncode != 0:
        lines = [line for line in (done.stderr or done.stdout).strip().splitlines() if line.strip()]
        return ClusterState("unknown", f"`kind get clusters` failed: {lines[-1] if lines else f'exit {done.returncode}'}")
    return ClusterState("running" if name in done.stdout.split() else "gone")


class Teardown(Protocol):
    """What the destroy routes need of Pulumi and of the machine (the tests give fakes)."""

    def outputs(self, stack: str) -> dict[str, Any] | None: ...
    def export_state(self, stack: str) -> dict[str, Any]:
        """`pulumi stack export --show-secrets`: {"version": ..., "deployment": {...}}."""
        ...

    def import_state(self, stack: str, state: dict[str, Any]) -> None: ...
    def destroy(self, stack: str, on_output: Callable[[str], None], env: Mapping[str, str]) -> None: ...
    def set_config(self, stack: str, key: str, value: str) -> None: ...


@dataclass(frozen=True, kw_only=True)
class World:
    """What is true outside Pulumi's state, asked when a command needs it (the tests give fakes)."""

    cluster: Callable[[str], ClusterState] = cluster_state
    gitlab_answers: Callable[[Mapping[str, Any]], bool] = lambda phase2: _gitlab_answers(phase2)
    phase1_config: Callable[[], Mapping[str, str]] = lambda: _phase1_config()
    wipe_folder: Callable[[str, str], subprocess.CompletedProcess[str]] = lambda folder, owner: _wipe_folder(folder, owner)


class Refused(Exception):
    """The destroy cannot go on without the user: the message says why and what to do."""


def _say_forgotten(say: Callable[[str], None], stack: str, reasons: Mapping[str, str]) -> None:
    by_reason: dict[str, list[str]] = {}
    for urn, why in reasons.items():
        by_reason.setdefault(why, []).append(urn.rsplit("::", 1)[-1])
    for why, names in by_reason.items():
        shown = ", ".join(sorted(names)[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        say(f"   {stack}: removing {len(names)} resource(s) from Pulumi's state only, because {why}: {shown}")


def plan_destroy(
    state: Mapping[str, Any],
    *,
    keep: bool,
    cluster: ClusterState,
    gitlab_reachable: bool,
    gitlab_data_goes: bool,
    cluster_gone_for_good: bool,
) -> dict[str, str]:
    """The resources of a stack's `state` to forget rather than delete, each with why.

    `gitlab_reachable`: GitLab can answer. `gitlab_data_goes`: this destroy wipes GitLab's database
    (deleting its objects one by one first would be pointless, and impossible while GitLab itself
    is taken down). `cluster_gone_for_good`: the user said Docker and the cluster are gone.
    """
    reasons: dict[str, str] = {}
    for resource in state.get("resources") or []:
        urn = str(resource["urn"])
        if cluster.status == "gone" and lives_in_cluster(resource):
            reasons[urn] = "it lived in the kind cluster, which is gone"
        elif lives_in_gitlab(resource) and not (keep and resource.get("retainOnDelete")):
            if gitlab_data_goes:
                reasons[urn] = "it lives in GitLab's database, which this destroy wipes"
            elif not gitlab_reachable:
                reasons[urn] = "it lived in GitLab's database, and that GitLab is gone"
        elif cluster_gone_for_good and resource["type"] == KIND_CLUSTER_TYPE and urn.endswith(f"::{KIND_CLUSTER_NAME}"):
            reasons[urn] = "you said Docker and the cluster are gone (--cluster-gone)"
    return reasons


def destroy(
    runner: Teardown,
    say: Callable[[str], None],
    phase_stacks: tuple[str, ...],
    preserve: bool | None,
    *,
    cluster_gone: bool = False,
    world: World | None = None,
) -> int:
    """Destroy `phase_stacks` (in reverse order), keeping or wiping the data as `preserve` says
    (None: as phase1's config says). Returns an exit code; every refusal is said with its fix.
    """
    world = world or World()
    existing = {stack: values for stack in ORDER if (values := runner.outputs(stack)) is not None}
    targets = [stack for stack in reversed(phase_stacks) if stack in existing]
    config = world.phase1_config()
    keep = preserve if preserve is not None else str(config.get("blueprint:preserveData", "false")).lower() == "true"
    name = str((existing.get("phase1") or {}).get(outputs.CLUSTER_NAME) or config.get("blueprint:clusterName", "blueprint"))
    try:
        _refuse_orphans(existing, targets, keep)
        needs_cluster = bool({"phase1", "phase2"} & set(targets)) or ("phase3" in targets and not keep)
        cluster = ClusterState("gone", "--cluster-gone") if cluster_gone else ClusterState("running")
        if needs_cluster and not cluster_gone:
            cluster = world.cluster(name)
        if cluster.status == "unknown":
            raise Refused(
                f"cannot tell whether the kind cluster {name} still exists ({cluster.detail}), so nothing is destroyed: "
                "resources that still exist would be forgotten. Start Docker (`sudo systemctl start docker`, or open Docker "
                "Desktop) and install kind if it is missing (`uv run blueprint doctor --fix`), then run this again. If Docker "
                "and the cluster are gone for good, `uv run blueprint destroy --cluster-gone` removes what lived in the "
                "cluster from Pulumi's state instead."
            )
        wiped_gitlab = not keep and "phase2" in targets
        gitlab_up = cluster.status == "running" and "phase2" in existing
        if "phase3" in targets and not keep and gitlab_up and not wiped_gitlab and not world.gitlab_answers(existing["phase2"]):
            raise Refused(
                f"GitLab at {existing['phase2'].get(outputs.GITLAB_URL)} does not answer, and phase3's projects can only be "
                "deleted through it. Bring it back (`uv run blueprint up --phase 2`; `kubectl -n gitlab get pods` shows what "
                "is wrong), or destroy everything with `uv run blueprint destroy --wipe-data`, which wipes GitLab's data too."
            )
    except Refused as refused:
        say(f"blueprint: {refused}")
        return 1

    if preserve is not None:
        runner.set_config("phase1", "blueprint:preserveData", str(preserve).lower())
    # Every stack's state says the same before anything is destroyed: a destroy that stops half-way
    # leaves no two stacks disagreeing about the data.
    say(f"== preserveData={str(keep).lower()}: {'every piece of data stays' if keep else 'the data is removed'}; recorded in each stack")
    states = {}
    for stack in existing:
        exported = runner.export_state(stack)
        recorded = record_preserve_data(exported.get("deployment") or {}, keep)
        _import_if_changed(runner, stack, exported, recorded)
        states[stack] = ({**exported, "deployment": recorded}, recorded)
    for stack in reversed(ORDER):
        if stack not in phase_stacks:
            continue
        if stack not in existing:
            say(f"== {stack}: not up, nothing to destroy")
            continue
        exported, state = states[stack]
        if stack == "phase3" and keep:
            # Its group and projects live in GitLab's preserved database: keeping the stack's state
            # lets the next `up` find them as they are (and run the apps again on the new cluster).
            say("== phase3: kept (preserveData=true): its projects stay in GitLab's data")
            continue
        reasons = plan_destroy(
            state,
            keep=keep,
            cluster=cluster,
            gitlab_reachable=gitlab_up,
            gitlab_data_goes=wiped_gitlab,
            cluster_gone_for_good=cluster_gone,
        )
        if reasons:
            state = forget(state, set(reasons))
            _say_forgotten(say, stack, reasons)
        _import_if_changed(runner, stack, exported, state)
        say(f"== {stack}: pulumi destroy")
        runner.destroy(stack, say, {})
    if not keep and "phase1" not in existing and "phase1" in phase_stacks:
        return _wipe_unowned_data(say, config, world)
    return 0


def _import_if_changed(runner: Teardown, stack: str, exported: Mapping[str, Any], state: Mapping[str, Any]) -> None:
    if state != (exported.get("deployment") or {}):
        runner.import_state(stack, {**exported, "deployment": dict(state)})


def _refuse_orphans(existing: Mapping[str, Any], targets: list[str], keep: bool) -> None:
    """A stack is not destroyed while a stack that depends on it stays up (phase3 may, over kept data)."""
    if "phase1" in targets and "phase2" in existing and "phase2" not in targets:
        raise Refused(
            "phase2 is up on phase1's cluster, and would be left pointing at a cluster that is gone: "
            "destroy it first (`uv run blueprint destroy --phase 2`), or everything (`uv run blueprint destroy`)"
        )
    if "phase2" in targets and "phase3" in existing and "phase3" not in targets and not keep:
        raise Refused(
            "phase3 is up on phase2's GitLab, whose data this destroy wipes: destroy it first "
            "(`uv run blueprint destroy --phase 3`), or everything (`uv run blueprint destroy --wipe-data`); "
            "or keep the data (`--preserve-data`), and phase3 with it"
        )


def _wipe_unowned_data(say: Callable[[str], None], config: Mapping[str, str], world: World) -> int:
    """With phase1 gone (destroyed earlier with its data kept), no stack holds the data folder any
    more: wiping the data means removing it here, as phase1's destroy would have, if it is ours.
    """
    from stacks.config import PROJECT_DIR, absolute_data_dir

    folder = str(absolute_data_dir(config.get("blueprint:dataDir", "infra/data/shared"), PROJECT_DIR))
    done = world.wipe_folder(folder, "blueprint/phase1")
    if done.returncode != 0:
        say(f"blueprint: {done.stderr.strip()}")
        return 1
    if done.stdout.strip():
        say(done.stdout.strip())
    return 0


def _wipe_folder(folder: str, owner: str) -> subprocess.CompletedProcess[str]:
    import os

    import versions
    from components.host_folder import OWNER_MARKER, WIPE_SCRIPT

    marker = os.path.join(folder, OWNER_MARKER)
    if not os.path.exists(marker):
        return subprocess.CompletedProcess([], 0, "", "")
    env = {**os.environ, "FOLDER": folder, "OWNER": owner, "WIPE_IMAGE": versions.KIND_NODE_IMAGE}
    try:
        done = subprocess.run(["/bin/sh", "-c", WIPE_SCRIPT], env=env, capture_output=True, text=True, check=False, timeout=1800)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(
            [], 1, "", f"removing {folder} took more than 30 minutes; remove it by hand: sudo rm -rf '{folder}'"
        )
    stdout = f"== the data folder {folder}: no stack holds it any more; removed it" if done.returncode == 0 else ""
    return subprocess.CompletedProcess(done.args, done.returncode, stdout, done.stderr)


def _phase1_config() -> Mapping[str, str]:
    from cli.plan import stack_config

    return stack_config("phase1")[0]


def _gitlab_answers(phase2: Mapping[str, Any]) -> bool:
    import os

    import requests

    ca = str(phase2.get(outputs.CA_CERT_FILE))
    try:
        response = requests.get(
            f"{phase2.get(outputs.GITLAB_URL)}/api/v4/version",
            headers={"PRIVATE-TOKEN": str(phase2.get(outputs.ADMIN_TOKEN))},
            verify=ca if os.path.exists(ca) else True,
            timeout=15,
        )
    except (requests.RequestException, OSError):
        return False
    return response.status_code == 200


def make_way_for_a_new_cluster(
    runner: Teardown,
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
    planned = planned_cluster_id(world.phase1_config())
    if phase2 is None or recorded is None or planned is None or recorded == planned:
        return 0
    if phase != "all":
        say(
            "blueprint: phase1's new settings replace the kind cluster, and phase2 runs on it. `uv run blueprint up` "
            "applies the change: it takes phase2 down first, keeping its data, and brings it back on the new cluster."
        )
        return 1
    name = str((phase1 or {}).get(outputs.CLUSTER_NAME))
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
    exported = runner.export_state("phase2")
    state = exported.get("deployment") or {}
    reasons = plan_destroy(state, keep=True, cluster=cluster, gitlab_reachable=False, gitlab_data_goes=False, cluster_gone_for_good=False)
    for resource in state.get("resources") or []:
        if claimed_folder_of_state(resource):
            reasons[str(resource["urn"])] = "the platform's data stays for the new cluster"
        elif lives_in_gitlab(resource):
            reasons[str(resource["urn"])] = "it lives in GitLab's database, which stays for the new cluster"
    _say_forgotten(say, "phase2", reasons)
    _import_if_changed(runner, "phase2", exported, forget(state, set(reasons)))
    say("== phase2: pulumi destroy")
    runner.destroy("phase2", say, {})
    return 0


def claimed_folder_of_state(resource: Mapping[str, Any]) -> str | None:
    from cli.lifecycle import claimed_folder

    return claimed_folder({"type": resource["type"], "inputs": resource.get("inputs") or {}})


def planned_cluster_id(config: Mapping[str, str]) -> str | None:
    """The cluster identity phase1's config gives now; None when the config is invalid (the `up` says so)."""
    from components.kind_cluster import cluster_id
    from stacks.config import NAMESPACE, ConfigError, parse_phase1
    from stacks.phase1 import cluster_args

    prefix = f"{NAMESPACE}:"
    try:
        parsed = parse_phase1({key.removeprefix(prefix): value for key, value in config.items() if key.startswith(prefix)})
    except ConfigError:
        return None
    return cluster_id(cluster_args(parsed, owner="blueprint/phase1"))
