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
- **GitLab's objects** (phase2's group and Runners, phase3's projects, variables, tokens) live in GitLab's
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

import shlex
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from cli.lifecycle import (
    COMMAND,
    KV_SECRET,
    forget,
    inner_owners,
    lives_in_cluster,
    lives_in_gitlab,
    pending_operations,
    record_preserve_data,
)
from providers.host_secret import WIPING_MARKER
from stacks import outputs

ORDER = ("phase1", "phase2", "phase3")
KIND_CLUSTER_NAME = "kind-cluster"
OVER_PHASE1 = outputs.stacks_over("phase1")
"""The stacks whose folders belong in phase1's data folder (phase2), as `stacks.phase1` records them for its wipe."""


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
        """`pulumi stack export` (secrets stay ciphertext): {"version": ..., "deployment": {...}}."""
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
    checkout_id: Callable[[], str | None] = lambda: _checkout_id()
    """This checkout's id (`stacks.config.read_checkout_id`): None when no stack of it ever ran."""
    docker: Callable[[Sequence[str]], tuple[int, str]] = lambda argv: _docker(argv)
    """Run a `docker ...` argv: its exit code and output (`cli.image_cache.DockerRun`)."""
    wipe_cache: Callable[[Path], Any] = lambda folder: _wipe_cache_folder(folder)
    """Remove the image cache folder (`cli.image_cache.wipe`): a `Wiped`."""


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
        elif cluster.status == "gone" and resource["type"] == KV_SECRET:
            # Its delete would wait for that OpenBao, then warn of an entry nobody can reach any more.
            reasons[urn] = "it was in OpenBao, which lived in the kind cluster, which is gone"
        elif lives_in_gitlab(resource) and not (keep and resource.get("retainOnDelete")):
            if gitlab_data_goes:
                reasons[urn] = "it lives in GitLab's database, which this destroy wipes"
            elif not gitlab_reachable:
                reasons[urn] = "it lived in GitLab's database, and that GitLab is gone"
        elif cluster_gone_for_good and resource["type"] == COMMAND and urn.endswith(f"::{KIND_CLUSTER_NAME}"):
            reasons[urn] = "you said Docker and the cluster are gone (--cluster-gone)"
    return reasons


def destroy(
    runner: Teardown,
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
    """
    world = world or World()
    existing = {stack: values for stack in ORDER if (values := runner.outputs(stack)) is not None}
    targets = [stack for stack in reversed(phase_stacks) if stack in existing]
    config = world.phase1_config()
    configured = str(config.get("blueprint:preserveData", "false")).lower() == "true"
    keep = preserve if preserve is not None else configured
    name = str((existing.get("phase1") or {}).get(outputs.CLUSTER_NAME) or config.get("blueprint:clusterName", "blueprint"))
    try:
        if wipe_cache:
            _refuse_cache_wipe_without_phase1(phase_stacks)
        recorded = next(
            (bool(existing[s][outputs.PRESERVE_DATA]) for s in ("phase1", "phase2") if outputs.PRESERVE_DATA in existing.get(s, {})), None
        )
        if preserve is None and recorded is not None and recorded != configured:
            # A checkout or a stash can revert Pulumi.phase1.yaml: never guess which of the two is meant.
            raise Refused(
                f"phase1's config says preserveData={str(configured).lower()}, but the last `up` recorded "
                f"{str(recorded).lower()}: say which you mean, with `--preserve-data` or `--wipe-data`"
            )
        _refuse_orphans(existing, targets, keep)
        # The data folder no stack holds any more, kept by an earlier preserveData destroy: removed only
        # on `--wipe-data`, and only by a checkout that still had a stack of that platform, or that
        # started removing it (see `_unowned_data` for the rest of the proof).
        unowned_wipe = (
            "phase1" in phase_stacks
            and "phase1" not in existing
            and preserve is False
            and (bool(existing) or (_data_folder(config) / WIPING_MARKER).exists())
        )
        if unowned_wipe and "phase3" in existing and "phase3" not in targets:
            raise Refused(
                "phase3's projects live in GitLab's data, inside the data folder this would remove: destroy phase3 too "
                "(`uv run blueprint destroy --wipe-data`)"
            )
        needs_cluster = bool({"phase1", "phase2"} & set(targets)) or ("phase3" in targets and not keep)
        cluster = world.cluster(name) if needs_cluster or cluster_gone else ClusterState("running")
        if cluster_gone:
            if cluster.status == "running":
                raise Refused(f"kind still lists the cluster {name}: it is not gone. Run `uv run blueprint destroy` without --cluster-gone")
            cluster = ClusterState("gone", "--cluster-gone")
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
        cache = _cache_to_wipe(say, existing, config, world) if wipe_cache else None
    except Refused as refused:
        say(f"blueprint: {refused}")
        return 1
    if phase_stacks == ("phase3",) and keep:
        say("== phase3: nothing to destroy: with preserveData=true its objects stay in GitLab; --wipe-data deletes them")
        return 0
    destroyed = [stack for stack in targets if not (stack == "phase3" and keep)]
    data_goes = unowned_wipe or (not keep and bool({"phase1", "phase2"} & set(targets)))
    if destroyed or unowned_wipe or cache:
        fate = "REMOVING the platform's data (GitLab, Postgres, OpenBao and its keys, the CA's key)" if data_goes else "keeping the data"
        question = f"Destroy {', '.join(destroyed) or 'what is left'}, {fate}?"
        if destroyed == ["phase3"] and not data_goes:
            question = "Destroy phase3, deleting its projects from GitLab (the platform, its group and its data stay)?"
        if cache and not (destroyed or unowned_wipe):
            question = f"Remove the image cache {cache} (the images the next `up` would otherwise not download again)?"
        elif cache:
            question = f"{question.removesuffix('?')}, and REMOVING the image cache {cache}?"
        if not confirm(question):
            say(f"blueprint: {question} Nothing was destroyed: answer yes in a terminal, or run with --yes.")
            return 1

    # Before anything is destroyed, every stack whose data is at stake records the same choice, so a
    # destroy that stops half-way leaves no two stacks disagreeing. Only phase3 alone is its own
    # business: deleting the apps says nothing about the platform's data.
    apps_only = phase_stacks == ("phase3",)
    scope = [stack for stack in existing if stack == "phase3" or not apps_only]
    exports = {stack: runner.export_state(stack) for stack in scope}
    for stack, exported in exports.items():
        if problem := pending_operations(stack, exported.get("deployment") or {}):
            say(f"blueprint: {problem}")
            return 1
    if preserve is not None and not apps_only:
        runner.set_config("phase1", "blueprint:preserveData", str(preserve).lower())
    if not apps_only:
        say(f"== preserveData={str(keep).lower()}: {'every piece of data stays' if keep else 'the data is removed'}")
    states = {}
    for stack, exported in exports.items():
        recorded_state = record_preserve_data(exported.get("deployment") or {}, keep)
        _import_if_changed(runner, stack, exported, recorded_state)
        states[stack] = ({**exported, "deployment": recorded_state}, recorded_state)
    for stack in reversed(ORDER):
        if stack not in phase_stacks:
            continue
        if stack not in existing:
            say(f"== {stack}: not up, nothing to destroy")
            continue
        exported, state = states[stack]
        if stack == "phase3" and keep:
            # Its projects live in GitLab's preserved database: keeping the stack's state
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
    code = _unowned_data(say, config, world, wipe=unowned_wipe) if "phase1" in phase_stacks and "phase1" not in existing else 0
    if cache is not None:
        return max(code, _wipe_cache(say, cache, world))
    if not wipe_cache and "phase1" in destroyed:
        _say_cache_kept(say, existing["phase1"])
    return code


def _refuse_cache_wipe_without_phase1(phase_stacks: tuple[str, ...]) -> None:
    """`--wipe-cache` goes with the destroy of phase1, which stops the mirrors that store into the cache."""
    if "phase1" not in phase_stacks:
        shown = "phase " + " and ".join(stack.removeprefix("phase") for stack in phase_stacks)
        raise Refused(
            f"--wipe-cache removes the image cache, which phase1's registry mirrors store into, so it goes with phase1's "
            f"destroy only, and this destroy ({shown}) keeps phase1 up; nothing was destroyed. Run `uv run blueprint destroy "
            "--wipe-cache` (everything), or this destroy without --wipe-cache"
        )


def _cache_to_wipe(say: Callable[[str], None], existing: Mapping[str, Any], config: Mapping[str, str], world: World) -> Path | None:
    """The image cache folder `--wipe-cache` removes after the destroy, checked before anything is
    destroyed; None, said, when there is nothing to wipe; `Refused` when it must not be removed.
    """
    from cli import image_cache
    from components.image_cache import CACHE_MARKER, MIRRORED_REGISTRIES
    from stacks.config import ways_to_set

    try:
        folder = image_cache.cache_folder(existing.get("phase1"), config)
    except image_cache.CacheConfigError as error:
        raise Refused(f"--wipe-cache: {error}") from None
    if folder is None:
        # Turned off since: the folder it stored into stays, and is still removed when it is a cache.
        try:
            folder = image_cache.cache_folder(None, {**config, "blueprint:imageCache": "true"})
        except image_cache.CacheConfigError:
            folder = None
        if folder is None or not (folder / CACHE_MARKER).is_file():
            say("== image cache: off (blueprint:imageCache=false): nothing to wipe")
            return None
        say(f"== image cache: off (blueprint:imageCache=false), but {folder} still holds what it cached: removing it")
    if not folder.exists():
        say(f"== image cache: {folder} does not exist: nothing to wipe")
        return None
    if not (folder / CACHE_MARKER).is_file():
        raise Refused(
            f"--wipe-cache: {folder} has no {CACHE_MARKER}, so it is not an image cache blueprint made, and blueprint removes "
            f"nothing from it; nothing was destroyed. If blueprint:imageCacheDir names the wrong folder, "
            f"{ways_to_set('phase1', 'imageCacheDir', '<the cache folder>')}; if the folder is yours and you want it gone: "
            f"rm -rf {shlex.quote(str(folder))}. Or destroy without --wipe-cache"
        )
    users = image_cache.cache_users(folder, world.docker)
    if users is None:
        raise Refused(
            f"--wipe-cache: Docker does not answer, so whether another platform's mirrors still store into the image cache "
            f"{folder} cannot be told; nothing was destroyed. Start Docker and run this again, or destroy without --wipe-cache "
            "(the cache is kept). With Docker gone for good, no mirror runs: remove what blueprint stored there yourself: "
            + " ".join(
                [
                    "rm -rf",
                    *(shlex.quote(str(folder / registry)) for registry in MIRRORED_REGISTRIES),
                    shlex.quote(str(folder / CACHE_MARKER)),
                ]
            )
        )
    # phase1's own mirrors (its owner label: this checkout's phase1, whether or not its last outputs list them,
    # as after an up that failed) store into it until its destroy removes them; any other is another platform's.
    owner = f"blueprint/phase1@{world.checkout_id()}"
    if others := [(name, by) for name, by in users if by != owner]:
        refused = image_cache.refusal_for_users(folder, others).replace("not removing", "--wipe-cache: not removing", 1)
        raise Refused(f"{refused} (nothing was destroyed)")
    return folder


def _wipe_cache(say: Callable[[str], None], folder: Path, world: World) -> int:
    """After phase1's destroy: remove the image cache `folder`, once no container stores into it."""
    from cli import image_cache
    from components.image_cache import CACHE_MARKER

    users = image_cache.cache_users(folder, world.docker)
    if users is None:
        say(
            f"blueprint: the image cache {folder} is kept: Docker does not answer, so whether a mirror still stores into it "
            "cannot be told; start Docker and run `uv run blueprint destroy --wipe-cache` again"
        )
        return 1
    if users:
        say(f"blueprint: {image_cache.refusal_for_users(folder, users)}")
        return 1
    if not (folder / CACHE_MARKER).is_file():
        say(f"== image cache: {folder} is gone already: nothing to wipe")
        return 0
    wiped = world.wipe_cache(folder)
    say(f"== {wiped.said}" if wiped.ok else f"blueprint: {wiped.said}")
    return 0 if wiped.ok else 1


def _say_cache_kept(say: Callable[[str], None], phase1: Mapping[str, Any]) -> None:
    """After phase1's destroy: where the image cache stays, and how to remove it."""
    from cli import image_cache

    folder = str(phase1.get(outputs.IMAGE_CACHE_DIR) or "")
    if folder and Path(folder).is_dir():
        size, complete = image_cache.size_on_disk(Path(folder))
        held = f"{'at least ' if not complete else ''}{image_cache.shown_size(size)}"
        say(f"== the image cache {folder} ({held}) is kept for the next `up`: `uv run blueprint destroy --wipe-cache` removes it")


def _docker(argv: Sequence[str]) -> tuple[int, str]:
    from cli.image_cache import docker_run

    return docker_run(argv)


def _wipe_cache_folder(folder: Path) -> Any:
    import versions
    from cli.image_cache import WIPE_TIMEOUT, docker_run, wipe

    # The kind node image, as the data folder's wipe: the machine has it, and it has `find`.
    return wipe(folder, lambda argv: docker_run(argv, WIPE_TIMEOUT), versions.KIND_NODE_IMAGE)


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
    if {"phase1", "phase2"} & set(targets) and "phase3" in existing and "phase3" not in targets and not keep:
        raise Refused(
            "phase3's projects live in GitLab's data, which this destroy wipes: destroy phase3 first "
            "(`uv run blueprint destroy --phase 3 --wipe-data`), or everything (`uv run blueprint destroy --wipe-data`); "
            "or keep the data (`--preserve-data`), and phase3 with it"
        )


def _unowned_data(say: Callable[[str], None], config: Mapping[str, str], world: World, *, wipe: bool) -> int:
    """phase1's data folder when phase1's stack is gone (destroyed earlier with its data kept): no
    stack holds it any more. It is removed here, as phase1's destroy would have, only when all of
    this holds: the user said `--wipe-data` (and yes), from a checkout that still had a stack of that
    platform or that started this wipe; the folder's owner file names phase1 of this checkout (its
    id: the same stack of another checkout is another owner); no stack has a lease on a cluster over
    it, and no cluster blueprint made over it still runs. Otherwise it is kept, and said so with the
    command that removes it.
    """
    from components.host_folder import LEASES_FOLDER, OWNER_MARKER
    from components.kind_cluster import CLUSTER_MARKER
    from stacks.config import PROJECT_DIR, ConfigError, data_dir_problem

    folder = _data_folder(config)
    if not (folder / OWNER_MARKER).is_file():
        return 0  # nothing of blueprint's there
    kept = f"== the data folder {folder} is kept: no stack of this checkout holds it any more"
    remove = f"if it is yours and you want it gone: sudo rm -rf {shlex.quote(str(folder))}"
    if not wipe:
        say(f"{kept}; {remove}")
        return 0
    # As the cluster's delete script reads leases: regular files, not links, not dotfiles (drafts).
    leases = (folder / LEASES_FOLDER).glob("[!.]*") if (folder / LEASES_FOLDER).is_dir() else []
    users = sorted(path.name for path in leases if path.is_file() and not path.is_symlink())
    cluster_name = (folder / CLUSTER_MARKER).read_text().strip() if (folder / CLUSTER_MARKER).is_file() else ""
    running = world.cluster(cluster_name).status if cluster_name else "gone"
    try:
        checkout = world.checkout_id()
    except ConfigError as error:
        say(f"{kept}, and not removed: {error}; {remove}")
        return 1
    owner = f"blueprint/phase1@{checkout}"
    try:
        claimed = (folder / OWNER_MARKER).read_text(errors="replace").strip()
    except OSError as error:
        claimed = f"<unreadable: {error.strerror}>"
    problem = (
        data_dir_problem(folder, PROJECT_DIR)
        or ("this checkout never ran a stack, so it claimed no folder" if checkout is None else None)
        or (f"its {OWNER_MARKER} names {claimed[:80]!r}, not this checkout's phase1 ({owner})" if claimed != owner else None)
        or (f"a platform still runs on a cluster over it ({', '.join(users)})" if users else None)
        or (f"the kind cluster {cluster_name} blueprint made over it still runs" if running == "running" else None)
        or (f"whether the kind cluster {cluster_name} over it still runs cannot be told (start Docker)" if running == "unknown" else None)
    )
    if problem:
        say(f"{kept}, and not removed: {problem}; {remove}")
        return 1
    done = world.wipe_folder(str(folder), owner)
    if done.returncode != 0:
        say(f"{done.stderr.strip()}; {remove}")
        return 1
    if folder.exists():  # a mount point, or in a folder the user cannot write: emptied, and the wipe says so
        note = done.stderr.strip().removeprefix("blueprint: ") or "emptied it, and left it in place"
        say(f"== the data folder {folder}: no stack holds it any more; {note}")
        return 0
    say(f"== the data folder {folder}: no stack holds it any more; removed it")
    return 0


def _wipe_folder(folder: str, owner: str) -> subprocess.CompletedProcess[str]:
    import os

    import versions
    from components.host_folder import OWNER_MARKER, SCRIPT_ENVIRONMENT, WIPE_SCRIPT

    marker = os.path.join(folder, OWNER_MARKER)
    if not os.path.exists(marker):
        return subprocess.CompletedProcess([], 0, "", "")
    # As phase1's own wipe has it: the folders of the stacks over it go with it.
    inner = inner_owners(owner, OVER_PHASE1)
    env = {**os.environ, **SCRIPT_ENVIRONMENT, "FOLDER": folder, "OWNER": owner, "INNER_OWNERS": inner}
    env["WIPE_IMAGE"] = versions.KIND_NODE_IMAGE
    try:
        done = subprocess.run(["/bin/sh", "-c", WIPE_SCRIPT], env=env, capture_output=True, text=True, check=False, timeout=1800)
    except subprocess.TimeoutExpired:
        slow = f"removing {folder} took more than 30 minutes; remove it by hand: sudo rm -rf {shlex.quote(folder)}"
        return subprocess.CompletedProcess([], 1, "", slow)
    return done


def _checkout_id() -> str | None:
    from stacks.config import read_checkout_id

    return read_checkout_id()


def _phase1_config() -> Mapping[str, str]:
    from stacks.config import stack_config

    return stack_config("phase1")[0]


def _gitlab_answers(phase2: Mapping[str, Any]) -> bool:
    """Whether GitLab answers its API with the admin token, read from its file: what `blueprint
    status` asks it. Without that file nobody can tell: `Refused`, naming the file and the fix.
    """
    from cli.commands import admin_token, probe

    try:
        token = {"PRIVATE-TOKEN": admin_token(phase2)}
    except outputs.SecretFileUnavailable as error:
        raise Refused(f"cannot ask GitLab whether it answers, for want of its admin token: {error}") from None
    answer = probe(f"{phase2.get(outputs.GITLAB_URL)}/api/v4/version", str(phase2.get(outputs.CA_CERT_FILE)), token, timeout=15)
    return answer.startswith("ok")


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
    config = world.phase1_config()
    moved = str(_data_folder(config))
    if moved != str((phase1 or {}).get(outputs.DATA_DIR)):
        # A platform over a new folder is a new platform: nothing of this one's data would follow.
        say(
            f"blueprint: blueprint:dataDir changed from {(phase1 or {}).get(outputs.DATA_DIR)} to {moved} while the platform "
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
    if problem := pending_operations("phase2", state):
        say(f"blueprint: {problem}")
        return 1
    # Recorded, not forgotten: if this destroy stops half-way, a later `--wipe-data` can still record
    # the wipe of the platform folder, and the Runner is kept in GitLab's database for the way back.
    state = record_preserve_data(state, keep=True)
    reasons = plan_destroy(state, keep=True, cluster=cluster, gitlab_reachable=False, gitlab_data_goes=False, cluster_gone_for_good=False)
    _say_forgotten(say, "phase2", reasons)
    _import_if_changed(runner, "phase2", exported, forget(state, set(reasons)))
    say("== phase2: pulumi destroy")
    runner.destroy("phase2", say, {})
    return 0


def _data_folder(config: Mapping[str, str]) -> Path:
    """phase1's data folder as its config names it."""
    from stacks.config import PROJECT_DIR, absolute_data_dir

    return absolute_data_dir(config.get("blueprint:dataDir", "infra/data/shared"), PROJECT_DIR)


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
