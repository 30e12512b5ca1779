"""`blueprint destroy` on every route (a cluster change under a running platform: cli/cluster_change.py).

Pulumi deletes what a stack's state records through the providers that made it, so a destroy
needs what those providers talk to. When that is gone, the destroy decides per resource, from what
can be known (`lifecycle.plan_destroy`), and says so:

- **The kind cluster** is asked of kind. Not listed while kind answers: what lived in it is
  forgotten. kind cannot answer (Docker stopped): the destroy stops with the fix, unless the user
  says `--cluster-gone`, which forgets the cluster's own command too.
- **GitLab's objects** live in GitLab's database: forgotten when it goes anyway (a wipe) or is out
  of reach for good; retained with the data kept, for the next `up` to adopt; otherwise deleted
  through GitLab's API.
- **preserveData** (`--preserve-data`/`--wipe-data` set it first) is recorded in the state of every
  stack that exists before anything is destroyed (`record_preserve_data`), never by an `up`.

Stacks are destroyed dependants first, and never from under one that depends on it (phase2 needs
phase1's cluster, phase3 needs phase2's GitLab), except phase3 over preserved data.
Why: docs/design/decisions.md, entry 14.
"""

from __future__ import annotations

import dataclasses
import shlex
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cli import data_folder, image_cache
from cli.cluster_identity import Identity, cluster_identity, identity_command
from cli.destroy_program import destroy_stack, program_blocker
from cli.lifecycle import forget, pending_operations, plan_destroy, record_preserve_data, without_stale_creates
from cli.stack_runner import StackRunner
from stacks import STACK_PHASES, outputs
from stacks.config.cluster import EXISTING

START_DOCKER = (
    "Start Docker (`sudo systemctl start docker`, or open Docker Desktop) and install kind if it is missing "
    "(`uv run blueprint doctor --fix`)"
)
"""What lets kind answer whether a cluster exists (`cluster_state`)."""


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
        env = image_cache.kind_environment()
        done = run(["kind", "get", "clusters"], capture_output=True, text=True, errors="replace", timeout=60, check=False, env=env)
    except (OSError, subprocess.TimeoutExpired) as error:
        return ClusterState("unknown", f"`kind get clusters` failed: {error}")
    if done.returncode != 0:
        lines = [line for line in (done.stderr or done.stdout).strip().splitlines() if line.strip()]
        return ClusterState("unknown", f"`kind get clusters` failed: {lines[-1] if lines else f'exit {done.returncode}'}")
    return ClusterState("running" if name in done.stdout.split() else "gone")


@dataclass(frozen=True, kw_only=True)
class World:
    """What is true outside Pulumi's state, asked when a command needs it (the tests give fakes)."""

    cluster: Callable[[str], ClusterState] = cluster_state
    gitlab_answers: Callable[[Mapping[str, Any]], bool] = lambda phase2: _gitlab_answers(phase2)
    phase1_config: Callable[[], Mapping[str, str]] = lambda: _phase1_config()
    dev_cluster_names: Callable[[], list[str]] = lambda: _dev_cluster_names()
    """The kind cluster dev's config names, as a list: empty when its stack file cannot be read."""
    wipe_folder: Callable[[str, str], subprocess.CompletedProcess[str]] = lambda folder, owner: data_folder.wipe_folder(folder, owner)
    checkout_id: Callable[[], str | None] = lambda: _checkout_id()
    """This checkout's id (`stacks.config.paths.read_checkout_id`): None when no stack of it ever ran."""
    docker: image_cache.DockerRun = lambda argv: image_cache.docker_run(argv)
    """Run a `docker ...` argv: its exit code and output."""
    wipe_cache: Callable[[Path], image_cache.Wiped] = lambda folder: image_cache.wipe_with_node_image(folder)
    """Remove the image cache folder (`cli.image_cache.wipe`)."""
    identity: Callable[[str], Identity] = lambda context: cluster_identity(context)
    """Which cluster a kubeconfig context reaches now (`cli.cluster_identity`)."""
    unfinished_wipe: Callable[[str], str | None] = lambda folder: _unfinished_wipe(folder)
    """Why a wipe of the host folder stopped half-way, or None (`stacks.layout_record.HOST`)."""


class Refused(Exception):
    """The destroy cannot go on without the user: the message says why and what to do."""


def say_forgotten(say: Callable[[str], None], stack: str, reasons: Mapping[str, str]) -> None:
    by_reason: dict[str, list[str]] = {}
    for urn, why in reasons.items():
        by_reason.setdefault(why, []).append(urn.rsplit("::", 1)[-1])
    for why, names in by_reason.items():
        shown = ", ".join(sorted(names)[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        say(f"   {stack}: removing {len(names)} resource(s) from Pulumi's state only, because {why}: {shown}")


def import_if_changed(runner: StackRunner, stack: str, exported: Mapping[str, Any], state: Mapping[str, Any]) -> None:
    if state != (exported.get("deployment") or {}):
        runner.import_state(stack, {**exported, "deployment": dict(state)})


def destroy(
    runner: StackRunner,
    say: Callable[[str], None],
    phase_stacks: tuple[str, ...],
    preserve: bool | None,
    *,
    cluster_gone: bool = False,
    wipe_cache: bool = False,
    world: World | None = None,
    confirm: Callable[[str], bool] = lambda question: True,
) -> int:
    """Destroy `phase_stacks` (in reverse order), keeping or wiping the data as `preserve` says
    (None: as phase1's config says, when the last `up` recorded the same), once `confirm` says yes.
    The image cache stays whatever `preserve` says; `wipe_cache` removes it too, once phase1's destroy
    (which stops its mirrors) succeeded. Returns an exit code; every refusal is said with its fix.
    Stacks a newer release brought up were refused before (`cli.phases.newer_release`).
    """
    world = world or World()
    try:
        route = _route(runner, say, world, phase_stacks, preserve, cluster_gone=cluster_gone, wipe_cache=wipe_cache)
    except (Refused, image_cache.WipeRefused) as refused:
        say(f"blueprint: {refused}")
        return 1
    if not (route.targets or route.unowned_wipe or route.cache):
        return _nothing_up(runner, say, route, world)
    if route.apps_only and route.keep:
        say("== phase3: nothing to destroy: with preserveData=true its objects stay in GitLab; --wipe-data deletes them")
        return 0
    if not _confirmed(say, route, confirm):
        return 1
    states = _record_preserve_data(runner, say, route)
    if states is None:
        return 1
    _destroy_in_reverse(runner, say, route, states, world)
    code = _unowned_data_folder(say, route, world)
    return max(code, _image_cache_after(say, route, world))


@dataclass(frozen=True, kw_only=True)
class _Route:
    """What one destroy works from, read and checked before anything is touched."""

    phase_stacks: tuple[str, ...]
    preserve: bool | None
    """`--preserve-data` (True) or `--wipe-data` (False); None: phase1's config says."""
    existing: dict[str, dict[str, Any]]
    """The outputs of every stack that is up."""
    targets: list[str]
    """The stacks of `phase_stacks` that are up, dependants first."""
    config: Mapping[str, str]
    """phase1's config."""
    keep: bool
    """The data stays (preserveData)."""
    cluster: ClusterState
    cluster_gone: bool
    """The user said Docker and the cluster are gone for good (`--cluster-gone`)."""
    unowned_wipe: bool
    """This destroy removes the data folder no stack holds any more (`cli/data_folder.py`)."""
    wipe_cache: bool
    cache: Path | None = None
    """The image cache folder `--wipe-cache` removes after phase1's destroy."""

    @property
    def apps_only(self) -> bool:
        return self.phase_stacks == ("phase3",)

    @property
    def destroyed(self) -> list[str]:
        return [stack for stack in self.targets if not (stack == "phase3" and self.keep)]

    @property
    def wiped_gitlab(self) -> bool:
        return not self.keep and "phase2" in self.targets

    @property
    def gitlab_up(self) -> bool:
        return self.cluster.status == "running" and "phase2" in self.existing


def _route(
    runner: StackRunner,
    say: Callable[[str], None],
    world: World,
    phase_stacks: tuple[str, ...],
    preserve: bool | None,
    *,
    cluster_gone: bool,
    wipe_cache: bool,
) -> _Route:
    """The refusals, up front: `Refused` (or the cache's `WipeRefused`) when the destroy cannot go on
    without the user; else the route it takes.
    """
    existing = {stack: values for stack in STACK_PHASES["dev"] if (values := runner.outputs(stack)) is not None}
    targets = [stack for stack in reversed(phase_stacks) if stack in existing]
    config = world.phase1_config()
    configured = str(config["blueprint:preserveData"]).lower() == "true"
    keep = preserve if preserve is not None else configured
    if wipe_cache:
        refuse_cache_wipe_without_phase1(phase_stacks)
    _refuse_a_guess(existing, preserve, configured)
    _refuse_orphans(existing, targets, keep)
    unowned_wipe = _wipes_unowned_data(phase_stacks, preserve, existing, targets, config)
    # The folder's own checks, before anything is destroyed: once the last stack is gone, nothing
    # would prove any more that this checkout may finish the wipe.
    if unowned_wipe and (problem := data_folder.wipe_refused(config, world, existing, cluster_gone=cluster_gone)):
        raise Refused(
            f"the data folder {data_folder.configured_folder(config)} is not removed: {problem}. Nothing was destroyed; "
            "run this again once that is fixed"
        )
    route = _Route(
        phase_stacks=phase_stacks,
        preserve=preserve,
        existing=existing,
        targets=targets,
        config=config,
        keep=keep,
        cluster=_cluster(world, existing, targets, config, keep, cluster_gone=cluster_gone),
        cluster_gone=cluster_gone,
        unowned_wipe=unowned_wipe,
        wipe_cache=wipe_cache,
    )
    _refuse_phase3_without_gitlab(route, world)
    if not wipe_cache:
        return route
    engine = image_cache.engine_of(existing.get("phase1"), lambda: config)
    docker, said = image_cache.on_engine(world.docker, engine), image_cache.said_on(engine)
    cache = image_cache.folder_to_wipe(lambda text: say(said(text)), existing.get("phase1"), config, docker, world.checkout_id)
    return dataclasses.replace(route, cache=cache)


def _refuse_orphans(existing: Mapping[str, Any], targets: list[str], keep: bool) -> None:
    """A stack is not destroyed while a stack that depends on it stays up (phase3 may, over kept data)."""
    if "phase1" in targets and "phase2" in existing and "phase2" not in targets:
        raise Refused(
            "phase2 is up on phase1's cluster, and would be left pointing at a cluster that is gone: "
            "destroy it first (`uv run blueprint destroy --phase 2`), or everything (`uv run blueprint destroy`)"
        )
    if {"phase1", "phase2"} & set(targets) and "phase3" in existing and "phase3" not in targets and not keep:
        raise Refused(
            "phase3's projects live in GitLab's data, which this destroy wipes: destroy phase3 first "
            "(`uv run blueprint destroy --phase 3 --wipe-data`), or everything (`uv run blueprint destroy --wipe-data`); "
            "or keep the data (`--preserve-data`), and phase3 with it"
        )


def refuse_cache_wipe_without_phase1(phase_stacks: tuple[str, ...]) -> None:
    """`--wipe-cache` goes with the destroy of phase1, which stops the mirrors that store into the cache."""
    if "phase1" not in phase_stacks:
        shown = "phase " + " and ".join(stack.removeprefix("phase") for stack in phase_stacks)
        raise Refused(
            f"--wipe-cache removes the image cache, which phase1's registry mirrors store into, so it goes with phase1's "
            f"destroy only, and this destroy ({shown}) keeps phase1 up; nothing was destroyed. Run `uv run blueprint destroy "
            "--wipe-cache` (everything), or this destroy without --wipe-cache"
        )


def _refuse_a_guess(existing: Mapping[str, Mapping[str, Any]], preserve: bool | None, configured: bool) -> None:
    """Without a flag, phase1's config decides preserveData only when the last `up` recorded the same."""
    recorded = next(
        (bool(existing[s][outputs.PRESERVE_DATA]) for s in ("phase1", "phase2") if outputs.PRESERVE_DATA in existing.get(s, {})), None
    )
    if preserve is None and recorded is not None and recorded != configured:
        # A checkout or a stash can revert Pulumi.phase1.yaml: never guess which of the two is meant.
        raise Refused(
            f"phase1's config says preserveData={str(configured).lower()}, but the last `up` recorded "
            f"{str(recorded).lower()}: say which you mean, with `--preserve-data` or `--wipe-data`"
        )


def _wipes_unowned_data(
    phase_stacks: tuple[str, ...], preserve: bool | None, existing: Mapping[str, Any], targets: list[str], config: Mapping[str, str]
) -> bool:
    """Whether this destroy removes the data folder no stack holds any more, kept by an earlier
    preserveData destroy: only on `--wipe-data`, with a stack of that platform left or the folder
    claimed, and only by the checkout whose phase1 claimed it (`data_folder.wipe_refused`). So a wipe
    the wipe script refused after the last stack went is tried again by running the destroy again.
    """
    from components.markers import OWNER_MARKER

    unowned_wipe = (
        "phase1" in phase_stacks
        and "phase1" not in existing
        and preserve is False
        and (bool(existing) or (data_folder.configured_folder(config) / OWNER_MARKER).is_file())
    )
    if unowned_wipe and "phase3" in existing and "phase3" not in targets:
        raise Refused(
            "phase3's projects live in GitLab's data, inside the data folder this would remove: destroy phase3 too "
            "(`uv run blueprint destroy --wipe-data`)"
        )
    return unowned_wipe


def _cluster(
    world: World, existing: Mapping[str, Any], targets: list[str], config: Mapping[str, str], keep: bool, *, cluster_gone: bool
) -> ClusterState:
    """The kind cluster, asked of kind when the destroy needs it; `Refused` when nobody can tell, or
    when `--cluster-gone` says gone and kind still lists it. An existing cluster is running unless
    `--cluster-gone` says it is gone and its context shows it (`existing_cluster_not_gone`).
    """
    if outputs.on_existing(existing.get("phase1") or {}) or config.get("blueprint:cluster") == EXISTING:
        # Not kind's: nothing asks kind, and the stacks reach the cluster through its context; none deletes it.
        if not cluster_gone:
            return ClusterState("running")
        if problem := existing_cluster_not_gone(world, existing.get("phase1") or {}):
            raise Refused(problem)
        return ClusterState("gone", "--cluster-gone")
    name = str((existing.get("phase1") or {}).get(outputs.CLUSTER_NAME) or config["blueprint:clusterName"])
    needs_cluster = bool({"phase1", "phase2"} & set(targets)) or ("phase3" in targets and not keep)
    cluster = world.cluster(name) if needs_cluster or cluster_gone else ClusterState("running")
    if cluster_gone:
        if cluster.status == "running":
            raise Refused(f"kind still lists the cluster {name}: it is not gone. Run `uv run blueprint destroy` without --cluster-gone")
        cluster = ClusterState("gone", "--cluster-gone")
    if cluster.status == "unknown":
        raise Refused(
            f"cannot tell whether the kind cluster {name} still exists ({cluster.detail}), so nothing is destroyed: "
            f"resources that still exist would be forgotten. {START_DOCKER}, then run this again. If Docker "
            "and the cluster are gone for good, `uv run blueprint destroy --cluster-gone` removes what lived in the "
            "cluster from Pulumi's state instead."
        )
    return cluster


def existing_cluster_not_gone(world: World, phase1: Mapping[str, Any]) -> str | None:
    """Why `--cluster-gone` is not believed of the existing cluster phase1 recorded (None: it is gone):
    only a context gone from the kubeconfig, or one that now reaches another cluster (another kube-system
    UID), shows it gone. A cluster that does not answer may still run the platform (a VPN down, an
    expired credential): forgetting it would leave its Helm releases and claims behind, unknown to Pulumi.
    """
    recorded, context = phase1.get(outputs.CLUSTER_ID), outputs.kube_context(phase1)
    if recorded is None or not context or not outputs.on_existing(phase1):
        return None  # phase1 is not up (or up on kind, the config now saying existing): nothing of that cluster is in any state
    now = world.identity(context)
    if now.status == "no-context" or (now.status == "answered" and now.uid != recorded):
        return None
    if now.status == "answered":
        return (
            f"the context {context} still reaches the platform's cluster (kube-system UID {recorded}): it is not gone. "
            "Run `uv run blueprint destroy` without --cluster-gone"
        )
    return (
        f"cannot tell whether the platform's cluster (context {context}, kube-system UID {recorded}) is gone ({now.detail}), "
        "so nothing is destroyed: a cluster that does not answer now (a VPN down, an expired credential) may still run the "
        "platform, and --cluster-gone would forget it while its Helm releases and claims live on. Make "
        f"`{identity_command(context)}` answer, then run `uv run blueprint destroy`; if the cluster is deleted for good, "
        f"remove its context (`kubectl config delete-context {shlex.quote(context)}`), and --cluster-gone is accepted"
    )


def _refuse_phase3_without_gitlab(route: _Route, world: World) -> None:
    """phase3's projects are deleted through GitLab's API, unless this destroy wipes GitLab's data."""
    # Over kept data its projects stay; with GitLab's data wiped, or GitLab gone, they are forgotten.
    through_gitlab = not route.keep and route.gitlab_up and not route.wiped_gitlab
    if "phase3" in route.targets and through_gitlab and not world.gitlab_answers(route.existing["phase2"]):
        # A brought certificate's new issuing CA reaches the CA file GitLab is called with through phase1's read alone.
        brought = outputs.TLS_CERTIFICATE in (route.existing.get("phase1") or {})
        again = "`uv run blueprint up --phase 1`, then `uv run blueprint up --phase 2`" if brought else "`uv run blueprint up --phase 2`"
        raise Refused(
            f"GitLab at {route.existing['phase2'].get(outputs.GITLAB_URL)} does not answer, and phase3's projects can only be "
            f"deleted through it. Bring it back ({again}; `kubectl -n gitlab get pods` shows what "
            "is wrong), or destroy everything with `uv run blueprint destroy --wipe-data`, which wipes GitLab's data too."
        )


def _confirmed(say: Callable[[str], None], route: _Route, confirm: Callable[[str], bool]) -> bool:
    """The user says yes to what goes (the data, the image cache) before anything does."""
    destroyed, cache = route.destroyed, route.cache
    if not (destroyed or route.unowned_wipe or cache):
        return True
    data_goes = route.unowned_wipe or (not route.keep and bool({"phase1", "phase2"} & set(route.targets)))
    fate = "REMOVING the platform's data (GitLab, Postgres, OpenBao and its keys, the CA's key)" if data_goes else "keeping the data"
    question = f"Destroy {', '.join(destroyed) or 'what is left'}, {fate}?"
    if destroyed == ["phase3"] and not data_goes and route.gitlab_up:
        question = "Destroy phase3, deleting its projects from GitLab (the platform, its group and its data stay)?"
    elif destroyed == ["phase3"] and not data_goes:
        question = "Destroy phase3, forgetting its projects (GitLab is not up: they stay in GitLab's kept data)?"
    if cache and not (destroyed or route.unowned_wipe):
        question = f"Remove the image cache {cache} (the images the next `up` would otherwise not download again)?"
    elif cache:
        question = f"{question.removesuffix('?')}, and REMOVING the image cache {cache}?"
    if not confirm(question):
        say(f"blueprint: {question} Nothing was destroyed: answer yes in a terminal, or run with --yes.")
        return False
    return True


States = dict[str, tuple[dict[str, Any], dict[str, Any]]]
"""Per stack: its export, and its deployment, with preserveData recorded."""


def _record_preserve_data(runner: StackRunner, say: Callable[[str], None], route: _Route) -> States | None:
    """Before anything is destroyed, every stack whose data is at stake records the same choice, so a
    destroy that stops half-way leaves no two stacks disagreeing. Only phase3 alone is its own
    business: deleting the apps says nothing about the platform's data. None, said, when a state
    holds pending operations.
    """
    scope = [stack for stack in route.existing if stack == "phase3" or not route.apps_only]
    exports = {stack: runner.export_state(stack) for stack in scope}
    cleaned = {stack: without_stale_creates(stack, exported.get("deployment") or {}) for stack, exported in exports.items()}
    for stack, (deployment, _) in cleaned.items():
        if problem := pending_operations(stack, deployment):
            say(f"blueprint: {problem}")
            return None
    for _, dropped in cleaned.values():
        if dropped:
            say(dropped)
    if route.preserve is not None and not route.apps_only:
        runner.set_config("phase1", "blueprint:preserveData", str(route.preserve).lower())
    if {"phase1", "phase2"} & set(route.destroyed):  # said of the platform's data only when its stacks go
        say(f"== preserveData={str(route.keep).lower()}: {'every piece of data stays' if route.keep else 'the data is removed'}")
    states = {}
    for stack, exported in exports.items():
        recorded_state = record_preserve_data(cleaned[stack][0], route.keep)
        import_if_changed(runner, stack, exported, recorded_state)
        states[stack] = ({**exported, "deployment": recorded_state}, recorded_state)
    return states


def _destroy_in_reverse(runner: StackRunner, say: Callable[[str], None], route: _Route, states: States, world: World) -> None:
    """Each stack, dependants first: what is gone is forgotten (removed from its state alone, and
    said), and Pulumi destroys the rest.
    """
    for stack in reversed(STACK_PHASES["dev"]):
        if stack not in route.phase_stacks:
            continue
        if stack not in route.existing:
            say(f"== {stack}: not up, nothing to destroy")
            continue
        exported, state = states[stack]
        if stack == "phase3" and route.keep:
            # Its projects live in GitLab's preserved database: keeping the stack's state
            # lets the next `up` find them as they are (and run the apps again on the new cluster).
            say("== phase3: kept (preserveData=true): its projects stay in GitLab's data")
            continue
        reasons = plan_destroy(
            state,
            keep=route.keep,
            cluster_is_gone=route.cluster.status == "gone",
            gitlab_reachable=route.gitlab_up,
            gitlab_data_goes=route.wiped_gitlab,
            cluster_gone_for_good=route.cluster_gone,
        )
        if reasons:
            state = forget(state, set(reasons))
            say_forgotten(say, stack, reasons)
        import_if_changed(runner, stack, exported, state)
        say(f"== {stack}: pulumi destroy")
        blocker = program_blocker(
            stack,
            route.existing,
            cluster_running=route.cluster.status == "running",
            identity=world.identity,
            unfinished_wipe=world.unfinished_wipe,
        )
        destroy_stack(runner, say, stack, state, program_reason=blocker)


def _nothing_up(runner: StackRunner, say: Callable[[str], None], route: _Route, world: World) -> int:
    """No stack of the selection is up (`StackRunner.outputs`): nothing is destroyed, and nothing recorded.
    What is said of the data is what was done with it: the data folder is kept, said when blueprint's is
    there. With no phase stack up, `dev` is asked too (this command never destroys it: README, "The `dev`
    stack"), and a kind cluster of a configured name (phase1's, dev's) that no stack records is named, with
    its fix, as the state cannot say whose it is. Why: docs/design/decisions.md, entry 46.
    """
    from components.markers import OWNER_MARKER

    selected = route.phase_stacks
    dev = None if route.existing else runner.outputs("dev")
    if route.existing:
        names = " and ".join(selected)
        say(f"== {names} {'is' if len(selected) == 1 else 'are'} not up (no resource in Pulumi's state): nothing was destroyed")
    else:
        say("== nothing is up: no phase stack (phase1–3) of this checkout records a resource in Pulumi's state, so nothing was destroyed")
    if dev is not None:
        say(
            "== dev is up: blueprint does not drive it; take it down with `pulumi destroy -s dev`, after "
            '`eval "$(uv run blueprint env)"` (README.md, "The `dev` stack", says how its data is kept or wiped)'
        )
    if "phase1" not in selected:
        return 0
    folder = data_folder.configured_folder(route.config)
    if not (folder / OWNER_MARKER).is_file():
        say(f"== the data folder {folder} holds nothing of blueprint's: nothing to keep or remove")
    if not route.existing:
        _clusters_no_stack_records(say, world, route.config, dev)
    return _unowned_data_folder(say, route, world)


def _clusters_no_stack_records(say: Callable[[str], None], world: World, config: Mapping[str, str], dev: Mapping[str, Any] | None) -> None:
    """Each kind cluster of a name phase1's or dev's config gives, that kind lists and no stack records."""
    names = dict.fromkeys([str(config["blueprint:clusterName"]), *world.dev_cluster_names()])
    if dev is not None:
        names.pop(str(dev.get(outputs.CLUSTER_NAME)), None)
    for name in names:
        if world.cluster(name).status == "running":
            say(
                f"== kind still lists a cluster {name}, which no stack of this checkout records: unless another checkout's "
                f"platform runs on it, delete it (`kind delete cluster --name {shlex.quote(name)}`)"
            )


def _unowned_data_folder(say: Callable[[str], None], route: _Route, world: World) -> int:
    """With phase1's stack gone before this destroy: its data folder, which no stack holds any more."""
    if "phase1" in route.phase_stacks and "phase1" not in route.existing:
        still_up = [stack for stack in route.existing if stack not in route.destroyed]
        return data_folder.unowned_data(say, route.config, world, still_up, wipe=route.unowned_wipe, cluster_gone=route.cluster_gone)
    return 0


def _image_cache_after(say: Callable[[str], None], route: _Route, world: World) -> int:
    """After phase1's destroy, which stopped its mirrors: the image cache removed (`--wipe-cache`), or said kept."""
    if route.cache is not None:
        engine = image_cache.engine_of(route.existing.get("phase1"), lambda: route.config)
        docker, said = image_cache.on_engine(world.docker, engine), image_cache.said_on(engine)
        return image_cache.wipe_after_destroy(lambda text: say(said(text)), route.cache, docker, world.wipe_cache)
    if not route.wipe_cache and "phase1" in route.destroyed:
        image_cache.say_kept(say, route.existing["phase1"])
    return 0


def _unfinished_wipe(folder: str) -> str | None:
    from stacks.layout_record import HOST

    return HOST.unfinished_wipe(folder)


def _checkout_id() -> str | None:
    from stacks.config.paths import read_checkout_id

    return read_checkout_id()


def _phase1_config() -> Mapping[str, str]:
    from stacks.config.schema import stack_config

    return stack_config("phase1")[0]


def _dev_cluster_names() -> list[str]:
    from stacks.config import ConfigError
    from stacks.config.schema import stack_config

    try:
        return [str(stack_config("dev")[0]["blueprint:clusterName"])]
    except ConfigError:  # said by whatever runs dev; this destroy is of the phase stacks
        return []


def _gitlab_answers(phase2: Mapping[str, Any]) -> bool:
    """Whether GitLab answers its API with the admin token, read from its file: what `blueprint
    status` asks it. Without that file nobody can tell: `Refused`, naming the file and the fix.
    """
    from cli.report import admin_token
    from cli.status import probe

    try:
        token = {"PRIVATE-TOKEN": admin_token(phase2)}
    except outputs.SecretFileUnavailable as error:
        raise Refused(f"cannot ask GitLab whether it answers, for want of its admin token: {error}") from None
    # On an existing cluster, through the port-forward phase2 names (providers/cluster_access.py).
    via = {"forward": phase2[outputs.GITLAB_FORWARD]} if phase2.get(outputs.GITLAB_FORWARD) else {}
    answer = probe(f"{phase2.get(outputs.GITLAB_URL)}/api/v4/version", str(outputs.gateway_ca_file(phase2)), token, timeout=15, **via)
    return answer.startswith("ok")
