"""The image cache (`components/image_cache.py`) as the commands see it: which folder it is, what it
holds, whether its mirrors run (`blueprint status`), and its removal (`blueprint destroy --wipe-cache`).

Docker is asked through a `DockerRun` (argv -> exit code and output), so the tests give a fake; on
Podman (`blueprint:containerEngine`), through `on_engine`, and what it says in Podman's words (`said_on`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shlex
import shutil
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli.doctor.needs import GIB, MIB
from components.image_cache import CACHE_LABEL, CACHE_MARKER, MIRRORED_REGISTRIES, OWNER_LABEL, mirror_container, mirror_urn
from stacks import outputs
from stacks.config.schema import ENV_STEP

DockerRun = Callable[[Sequence[str]], tuple[int, str]]
"""Run a `docker ...` argv: its exit code and its output; 127 when there is no docker."""

WIPE_TIMEOUT = 1800
"""Seconds the one-shot container that removes what the user cannot may take (as the data folder's wipe)."""


def engine_of(phase1: Mapping[str, Any] | None, config: Callable[[], Mapping[str, str]]) -> str:
    """The engine phase1's mirrors run on: the one its last `up` recorded (only a non-Docker one exports
    it), else the one its config means here (components/engine.py `chosen`).
    """
    from components.engine import DOCKER, chosen, run_host

    if phase1 is not None:
        return str(phase1.get(outputs.CONTAINER_ENGINE) or DOCKER)
    try:
        configured = str(config().get("blueprint:containerEngine") or "")
    except Exception:  # a stack file that cannot be read: the engine found here
        configured = ""
    return chosen(configured, run_host)


def kind_environment() -> dict[str, str]:
    """The environment a `kind` command of this checkout runs with: this process's, with phase1's engine
    (its config's, or the one found here) named for kind when it is not Docker, in place of any the
    user's shell exported (components/engine.py `kind_env`).
    """
    from components.engine import kind_env
    from stacks.config.schema import stack_config

    return kind_env(engine_of(None, lambda: stack_config("phase1")[0]), os.environ)


def on_engine(run: DockerRun, engine: str) -> DockerRun:
    """`run`, with each `docker ...` argv run as `<engine> ...` (the arguments blueprint gives are the same on both)."""
    return lambda argv: run([engine, *argv[1:]] if list(argv[:1]) == ["docker"] else argv)


def said_on(engine: str) -> Callable[[str], str]:
    """What a message about Docker says on `engine` (components/engine.py `for_engine`)."""
    from components.engine import for_engine

    return lambda text: for_engine(text, engine)


def docker_run(argv: Sequence[str], timeout: float = 20) -> tuple[int, str]:
    """The real `DockerRun`: never an exception for a missing or silent docker."""
    from cli.doctor.machine import run_argv

    return run_argv(argv, timeout, merged=False)


class CacheConfigError(Exception):
    """phase1's config names no usable image cache folder: the message says which value and the fix."""


def cache_folder(phase1: Mapping[str, Any] | None, config: Mapping[str, str]) -> Path | None:
    """The image cache folder: the one phase1's last `up` recorded (its output imageCacheDir), else the one
    phase1's `config` (full keys, as `stack_config` gives them) names; None when the cache is off.
    """
    recorded = str((phase1 or {}).get(outputs.IMAGE_CACHE_DIR) or "")
    if recorded:
        return Path(recorded)
    if str(config["blueprint:imageCache"]).lower() != "true":
        return None
    from shown import shown
    from stacks.config import PROJECT_DIR
    from stacks.config.paths import absolute_data_dir, image_cache_dir, image_cache_dir_problem
    from stacks.config.schema import ways_to_set

    value = str(config["blueprint:imageCacheDir"])
    data_dir = absolute_data_dir(config["blueprint:dataDir"], PROJECT_DIR)
    if problem := image_cache_dir_problem(value, PROJECT_DIR, data_dir):
        raise CacheConfigError(
            f"blueprint:imageCacheDir {shown(value)}: {problem}; fix: {ways_to_set('phase1', 'imageCacheDir', '<folder>')}"
        )
    return image_cache_dir(value)


def folder_refusal(folder: Path) -> str | None:
    """Why the mirrors would refuse `folder` as the image cache (components/image_cache.py
    MIRROR_UP_SCRIPT: a link, not the user's, or holding files without the cache's marker), or None.
    """
    if folder.is_symlink():
        return "is a link"
    try:
        if folder.stat().st_uid != os.getuid():
            return "is not yours"
        if not (folder / CACHE_MARKER).is_file() and any(folder.iterdir()):
            return "holds files blueprint did not write"
    except FileNotFoundError:
        return None  # the up makes it
    except OSError as error:
        return f"cannot be read ({error.strerror})"
    return None


def size_on_disk(folder: Path) -> tuple[int, bool]:
    """The bytes the files under `folder` take on disk (each file once, links not followed), and whether
    every entry could be read (False: the size is at least that).
    """
    seen: set[tuple[int, int]] = set()
    total, complete = 0, True

    def failed(error: OSError) -> None:
        nonlocal complete
        complete = False

    for root, dirs, files in os.walk(folder, onerror=failed):
        for name in [*dirs, *files]:
            try:
                info = os.lstat(os.path.join(root, name))
            except OSError:
                complete = False
                continue
            if (info.st_dev, info.st_ino) in seen:
                continue
            seen.add((info.st_dev, info.st_ino))
            blocks = getattr(info, "st_blocks", None)
            total += blocks * 512 if blocks is not None else info.st_size
    return total, complete


def shown_size(size: int) -> str:
    """`size` bytes in GiB (MiB below one GiB, KiB below one MiB)."""
    if size >= GIB:
        return f"{size / GIB:.1f} GiB"
    return f"{size / MIB:.0f} MiB" if size >= MIB else f"{size / 1024:.0f} KiB"


def cache_users(folder: Path, run: DockerRun) -> list[tuple[str, str]] | None:
    """Every container, running or not, labelled as storing into `folder` (`CACHE_LABEL`), with the owner
    its `OWNER_LABEL` names; None when Docker does not answer.
    """
    fields = "{{.Names}}\t{{.Label " + f'"{OWNER_LABEL}"' + "}}"
    code, said = run(["docker", "ps", "--all", "--filter", f"label={CACHE_LABEL}={folder}", "--format", fields])
    if code != 0:
        return None
    return [(name, owner) for line in said.splitlines() if line.strip() for name, _, owner in [line.partition("\t")]]


def refusal_for_users(folder: Path, users: Sequence[tuple[str, str]]) -> str:
    """Why `folder` is not removed while `users` (containers, with their owners) still store into it."""
    names = ", ".join(f"{name} ({owner or 'no owner label'})" for name, owner in users)
    remove = "docker rm --force " + " ".join(shlex.quote(name) for name, _ in users)
    return (
        f"not removing the image cache {folder}: these containers still store into it: {names}. They are another "
        "platform's mirrors (their owner is <project>/<stack>@<checkout id>): destroy that stack (`uv run blueprint destroy` "
        f"in its checkout, `{ENV_STEP} && pulumi destroy -s dev` for a dev stack), or, if they are nobody's, `{remove}`; then run "
        "`uv run blueprint destroy --wipe-cache` again"
    )


def mirror_states(containers: Sequence[str], run: DockerRun) -> dict[str, str] | None:
    """Each container of `containers`: "up", or "down" with what Docker says of it; None when Docker
    does not answer.
    """
    code, said = run(["docker", "ps", "--all", "--format", "{{.Names}}\t{{.Status}}"])
    if code != 0:
        return None
    found = {name: status for line in said.splitlines() for name, _, status in [line.partition("\t")]}
    states = {}
    for name in containers:
        status = found.get(name)
        if status is None:
            states[name] = "down (no such container)"  # status_lines adds how to start it anew
        elif status.startswith("Up"):
            states[name] = "up"
        elif status.startswith("Restarting"):
            # --restart=unless-stopped brings back a registry that exits at once: distribution v3.1.1 asks
            # its upstream's /v2/ as it starts and panics when that fails (registry/proxy/proxyauth.go
            # getAuthURLs, registry/handlers/app.go NewRegistryPullThroughCache), as on a bad config.
            states[name] = (
                f"restarting ({status}): the registry it mirrors was unreachable when it started, or its config is refused; "
                f"`docker logs {shlex.quote(name)}` says which"
            )
        else:
            states[name] = f"down ({status}): `docker start {shlex.quote(name)}` starts it"
    return states


def mirror_containers(phase1: Mapping[str, Any]) -> dict[str, str]:
    """Each registry phase1's last `up` mirrored -> its mirror's container: `mirror_container` of phase1's
    cluster, else the host of an endpoint that names one (without the final dot of a rooted DNS name;
    an address names none).
    """
    cluster = str(phase1.get(outputs.CLUSTER_NAME) or "")
    found = {
        registry: str(endpoint).rsplit(":", 1)[0].removesuffix(".")
        for registry, endpoint in (phase1.get(outputs.IMAGE_MIRRORS) or {}).items()
    }
    return {
        registry: mirror_container(cluster, registry) if cluster else host
        for registry, host in sorted(found.items())
        if cluster or not re.fullmatch(r"[\d.]+", host)
    }


def status_lines(
    phase1: Mapping[str, Any] | None, config: Callable[[], Mapping[str, str]], run: DockerRun, measure: Callable[[Path], tuple[int, bool]]
) -> list[str]:
    """`blueprint status`'s image cache section: the folder, its size on disk, and each mirror up or
    down, from phase1's outputs (None: phase1 is not up), else from its config.
    """
    try:
        folder = cache_folder(phase1, {} if phase1 and phase1.get(outputs.IMAGE_CACHE_DIR) else config())
    except CacheConfigError as error:
        return [f"image cache: unknown: {error}"]
    except Exception as error:  # a stack file that cannot be read: status says so, and goes on
        return [f"image cache: unknown: phase1's config cannot be read ({type(error).__name__}: {str(error).splitlines()[0]})"]
    if folder is None:
        return ["image cache: off (blueprint:imageCache=false)"]
    if not folder.is_dir():
        size = "not there (the next `uv run blueprint up` makes it)"
    else:
        used, complete = measure(folder)
        size = f"{'at least ' if not complete else ''}{shown_size(used)} on disk"
    lines = [f"image cache: {folder}, {size}"]
    mirrors = (phase1 or {}).get(outputs.IMAGE_MIRRORS) or {}
    if phase1 is None:
        return [*lines, "  mirrors: none (phase1 is not up)"]
    if not mirrors:
        # Outputs are those of phase1's last up that succeeded: one that failed may have started mirrors since.
        listed = f"docker ps --all --filter label={CACHE_LABEL}={shlex.quote(str(folder))}"
        return [*lines, f"  mirrors: none recorded (phase1's last successful `up` ran none; `{listed}` lists any that run)"]
    containers = mirror_containers(phase1)
    states = mirror_states(list(containers.values()), run)
    for registry, container in containers.items():
        state = "unknown (Docker does not answer)" if states is None else states[container]
        if state == "down (no such container)":
            # Removed outside blueprint: pulumi-command reads nothing back, so no `up` notices; a replace does.
            urn = mirror_urn("phase1", registry)
            replace = f"{ENV_STEP} && pulumi up -s phase1 --replace {shlex.quote(urn)}"
            state += f"; the nodes pull from {registry} itself until `{replace}` starts it anew"
        lines.append(f"  mirror of {registry} ({container}): {state}")
    return lines


@dataclass(frozen=True)
class Wiped:
    """What a wipe of the cache did: `ok`, and what to tell the user."""

    ok: bool
    said: str


def user_name(uid: int) -> str:
    """The login name of `uid`, else `uid <n>`."""
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _registry_folders(fd: int) -> list[str]:
    """The folders blueprint's mirrors store into in the cache folder open as `fd`: one per mirrored
    registry (its config.yml, `.config.*` drafts and storage/), real folders only, no link.
    """
    found = []
    for registry in MIRRORED_REGISTRIES:
        try:
            if stat.S_ISDIR(os.stat(registry, dir_fd=fd, follow_symlinks=False).st_mode):
                found.append(registry)
        except OSError:
            continue
    return found


def _mounts_inside(fd: int, names: Sequence[str]) -> list[str]:
    """Folders among `names` (in the folder open as `fd`), or inside them, on another filesystem:
    nothing is removed from them.
    """
    device = os.fstat(fd).st_dev
    found = []
    for name in names:
        try:
            if os.stat(name, dir_fd=fd, follow_symlinks=False).st_dev != device:
                found.append(name)
                continue
        except OSError:
            continue
        for root, dirs, _, root_fd in os.fwalk(name, dir_fd=fd):
            for inner in list(dirs):
                try:
                    if os.stat(inner, dir_fd=root_fd, follow_symlinks=False).st_dev != device:
                        found.append(os.path.join(root, inner))
                        dirs.remove(inner)
                except OSError:
                    continue
    return found


def _resolved_path(fd: int, folder: Path) -> str:
    """The path the folder open as `fd` has now: the kernel's (/proc/self/fd on Linux, which follows a
    rename), else `folder` with its links resolved (macOS).
    """
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return os.path.realpath(folder)


def _names(path: str, info: os.stat_result) -> bool:
    """Whether `path`, its last part not followed, is the file `info` describes."""
    try:
        now = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (info.st_dev, info.st_ino)


def wipe(folder: Path, run: DockerRun, image: str, measure: Callable[[Path], tuple[int, bool]] = size_on_disk) -> Wiped:
    """Remove the image cache `folder`, which has its `CACHE_MARKER` and which no container uses (the caller
    checked): only what blueprint writes there, each mirrored registry's folder, then the marker, then
    the folder if nothing else is left in it. The folder is opened once, not through a link, and must
    be the user's; everything is removed relative to that open folder, so a link another user swaps in
    for it (in a shared parent such as /tmp) leads nowhere. What the user cannot remove goes through a
    one-shot container of `image`, which the machine already has (as the data folder's wipe does); the
    marker goes last, so a wipe that stops half-way can be run again.
    """
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return Wiped(True, f"the image cache {folder} is gone already: nothing to wipe")
    except OSError as error:
        quoted = shlex.quote(str(folder))
        if error.errno not in (errno.ELOOP, errno.ENOTDIR):
            return Wiped(
                False,
                f"not removing the image cache {folder}: it cannot be opened ({error.strerror}); nothing was removed. If it "
                f"is yours: chmod u+rwx {quoted}, then run `uv run blueprint destroy --wipe-cache` again",
            )
        return Wiped(
            False, f"not removing {folder}: it is not a folder (a link, or a file); remove it yourself if it is yours: rm -f {quoted}"
        )
    try:
        return _wipe_open(folder, fd, run, image, measure)
    finally:
        os.close(fd)


def _wipe_open(folder: Path, fd: int, run: DockerRun, image: str, measure: Callable[[Path], tuple[int, bool]]) -> Wiped:
    info = os.fstat(fd)
    if info.st_uid != os.getuid():
        return Wiped(
            False,
            f"not removing the image cache {folder}: it belongs to {user_name(info.st_uid)}, not to you "
            f"({user_name(os.getuid())}), and blueprint removes only a cache folder of yours. If blueprint:imageCacheDir "
            "names a folder someone else made, set another one; if the folder is the cache, its owner removes it",
        )
    try:
        marked = stat.S_ISREG(os.stat(CACHE_MARKER, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        marked = False
    if not marked:
        return Wiped(
            False, f"not removing {folder}: it has no {CACHE_MARKER}, so it is not an image cache blueprint made; nothing was removed"
        )
    names = _registry_folders(fd)
    if mounts := _mounts_inside(fd, names):
        return Wiped(
            False,
            f"not removing the image cache {folder}: another filesystem is mounted inside it "
            f"({', '.join(str(folder / mount) for mount in mounts)}), and blueprint removes nothing from one; unmount it "
            "(`sudo umount <that folder>`), then run the destroy again",
        )
    before = sum(measure(folder / name)[0] for name in names)
    for name in names:
        shutil.rmtree(name, ignore_errors=True, dir_fd=fd)
    if left := _registry_folders(fd):
        # Files of another uid (a mirror Docker ran as root): removed as root, in a container. Docker
        # mounts by path: the path the open folder has now, checked to be it right before the run.
        path = _resolved_path(fd, folder)
        if not _names(path, info):
            return Wiped(
                False,
                f"not removing the rest of the image cache {folder}: the folder changed while it was being removed (its "
                f"path no longer names the folder blueprint opened), so Docker was not asked; look at it, then run "
                "`uv run blueprint destroy --wipe-cache` again",
            )
        argv = ["docker", "run", "--rm", "--network", "none", "--user", "0", "--pull", "never", "--volume", f"{path}:/blueprint-cache"]
        argv += ["--entrypoint", "find", image, *(f"/blueprint-cache/{name}" for name in left), "-xdev", "-delete"]
        run(argv)
    if left := _registry_folders(fd):
        after = sum(measure(folder / name)[0] for name in left)
        by_hand = "sudo rm -rf " + " ".join(shlex.quote(str(folder / name)) for name in left)
        return Wiped(
            False,
            f"could not remove all of the image cache {folder} ({shown_size(after)} left: files of another user, and Docker "
            f"could not remove them with its image {image}); remove them by hand: {by_hand}; then run "
            "`uv run blueprint destroy --wipe-cache` again",
        )
    freed = f"freeing {shown_size(before)}"
    if others := sorted(name for name in os.listdir(fd) if name != CACHE_MARKER):
        # The marker stays: the folder is still blueprint's cache (a .DS_Store that Finder left does not make
        # it the user's), so the next `up` may store into it again.
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        return Wiped(
            True, f"removed the image cache's mirror folders from {folder}, {freed}, and left {folder}: it holds other files ({shown})"
        )
    with contextlib.suppress(FileNotFoundError):
        os.unlink(CACHE_MARKER, dir_fd=fd)
    if not _names(str(folder), info):
        return Wiped(True, f"emptied the image cache {folder}, {freed}, and left the folder itself (its path no longer names it)")
    try:
        folder.rmdir()
    except OSError as error:
        return Wiped(True, f"emptied the image cache {folder}, {freed}, and left the folder itself ({error.strerror})")
    return Wiped(True, f"removed the image cache {folder}, {freed}")


# `blueprint destroy --wipe-cache`: the folder checked before anything is destroyed, removed after phase1's destroy.


class WipeRefused(Exception):
    """`--wipe-cache` must not remove the folder: the message says why and what to do."""


def folder_to_wipe(
    say: Callable[[str], None],
    phase1: Mapping[str, Any] | None,
    config: Mapping[str, str],
    run: DockerRun,
    checkout_id: Callable[[], str | None],
) -> Path | None:
    """The image cache folder `--wipe-cache` removes after the destroy, checked before anything is
    destroyed; None, said, when there is nothing to wipe; `WipeRefused` when it must not be removed.
    """
    from stacks.config.schema import ways_to_set

    try:
        folder = cache_folder(phase1, config)
    except CacheConfigError as error:
        raise WipeRefused(f"--wipe-cache: {error}") from None
    if folder is None:
        # Turned off since: the folder it stored into stays, and is still removed when it is a cache.
        try:
            folder = cache_folder(None, {**config, "blueprint:imageCache": "true"})
        except CacheConfigError:
            folder = None
        if folder is None or not (folder / CACHE_MARKER).is_file():
            say("== image cache: off (blueprint:imageCache=false): nothing to wipe")
            return None
        say(f"== image cache: off (blueprint:imageCache=false), but {folder} still holds what it cached: removing it")
    if not folder.exists():
        say(f"== image cache: {folder} does not exist: nothing to wipe")
        return None
    if not (folder / CACHE_MARKER).is_file():
        raise WipeRefused(
            f"--wipe-cache: {folder} has no {CACHE_MARKER}, so it is not an image cache blueprint made, and blueprint removes "
            f"nothing from it; nothing was destroyed. If blueprint:imageCacheDir names the wrong folder, "
            f"{ways_to_set('phase1', 'imageCacheDir', '<the cache folder>')}; if the folder is yours and you want it gone: "
            f"rm -rf {shlex.quote(str(folder))}. Or destroy without --wipe-cache"
        )
    users = cache_users(folder, run)
    if users is None:
        raise WipeRefused(
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
    owner = f"blueprint/phase1@{checkout_id()}"
    if others := [(name, by) for name, by in users if by != owner]:
        refused = refusal_for_users(folder, others).replace("not removing", "--wipe-cache: not removing", 1)
        raise WipeRefused(f"{refused} (nothing was destroyed)")
    return folder


def wipe_after_destroy(say: Callable[[str], None], folder: Path, run: DockerRun, remove: Callable[[Path], Wiped]) -> int:
    """After phase1's destroy: remove the image cache `folder`, once no container stores into it."""
    users = cache_users(folder, run)
    if users is None:
        say(
            f"blueprint: the image cache {folder} is kept: Docker does not answer, so whether a mirror still stores into it "
            "cannot be told; start Docker and run `uv run blueprint destroy --wipe-cache` again"
        )
        return 1
    if users:
        say(f"blueprint: {refusal_for_users(folder, users)}")
        return 1
    if not (folder / CACHE_MARKER).is_file():
        say(f"== image cache: {folder} is gone already: nothing to wipe")
        return 0
    wiped = remove(folder)
    say(f"== {wiped.said}" if wiped.ok else f"blueprint: {wiped.said}")
    return 0 if wiped.ok else 1


def say_kept(say: Callable[[str], None], phase1: Mapping[str, Any]) -> None:
    """After phase1's destroy: where the image cache stays, and how to remove it."""
    folder = str(phase1.get(outputs.IMAGE_CACHE_DIR) or "")
    if folder and Path(folder).is_dir():
        size, complete = size_on_disk(Path(folder))
        held = f"{'at least ' if not complete else ''}{shown_size(size)}"
        say(f"== the image cache {folder} ({held}) is kept for the next `up`: `uv run blueprint destroy --wipe-cache` removes it")


def wipe_with_node_image(folder: Path) -> Wiped:
    import versions

    # The kind node image, as the data folder's wipe: the machine has it, and it has `find`.
    from stacks.config.schema import stack_config

    engine = engine_of(None, lambda: stack_config("phase1")[0])
    return wipe(folder, on_engine(lambda argv: docker_run(argv, WIPE_TIMEOUT), engine), versions.KIND_NODE_IMAGE)


# `blueprint cache prune`: each running mirror's storage emptied now, rather than CACHE_TTL after each fetch.


def prune(
    phase1: Mapping[str, Any] | None, config: Callable[[], Mapping[str, str]], run: DockerRun, empty: DockerRun | None = None
) -> tuple[int, list[str]]:
    """Empty the storage of each running mirror of `phase1` (phase1's or dev's outputs), which then
    fetches again what the next pull asks for: the mirror is stopped, its storage emptied by a one-shot
    container of the mirror's image with the mirror's own mounts, user and nothing else (no network, no
    capability), given as long as a wipe (`empty`, WIPE_TIMEOUT), and only then started again, at its
    fixed address. A stopped mirror is left stopped; a container whose CACHE_LABEL names another folder
    is left alone. -> the exit code and what to tell the user.
    """
    try:
        folder = cache_folder(phase1, {} if phase1 and phase1.get(outputs.IMAGE_CACHE_DIR) else config())
    except CacheConfigError as error:
        return 1, [f"cannot prune the image cache: {error}"]
    if folder is None:
        return 0, ["the image cache is off (blueprint:imageCache=false): nothing to prune"]
    containers = mirror_containers(phase1 or {})
    if not containers:
        return 0, [f"no mirror runs (its stack is not up): nothing to prune; `uv run blueprint destroy --wipe-cache` removes {folder}"]
    results = [_prune_one(registry, container, folder, run, empty or run) for registry, container in containers.items()]
    return max(code for code, _ in results), [f"image cache {folder}:", *(line for _, line in results)]


def _prune_one(registry: str, container: str, folder: Path, run: DockerRun, empty: DockerRun) -> tuple[int, str]:
    fmt = f'{{{{index .Config.Labels "{CACHE_LABEL}"}}}}\t{{{{.Config.User}}}}\t{{{{.Config.Image}}}}\t{{{{.State.Running}}}}'
    code, said = run(["docker", "inspect", "-f", fmt, container])
    labelled, user, image, running = (said.strip().split("\t") + ["", "", "", ""])[:4]
    if code != 0 or labelled != str(folder):
        return 1, f"  {registry}: left as it is: {container} is not a mirror storing in {folder} ({said.strip()[:80] or 'none'})"
    if running != "true":
        return 0, f"  {registry}: left as it is: {container} is stopped (`docker start {shlex.quote(container)}` starts it)"
    run(["docker", "stop", container])
    emptier = f"{container}-prune"
    argv = ["docker", "run", "--rm", "--name", emptier, "--network", "none", "--pull", "never", "--volumes-from", container]
    argv += ["--user", user or "0", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--entrypoint", "find"]
    emptied, _ = empty([*argv, image, "/var/lib/registry", "-xdev", "-mindepth", "1", "-delete"])
    if emptied != 0:
        # Never started over storage still being emptied: the one-shot container goes first.
        run(["docker", "rm", "-f", emptier])
        return 1, (
            f"  {registry}: not emptied, and left stopped so that it serves nothing half-deleted; "
            f"`uv run blueprint cache prune` again, or `docker start {shlex.quote(container)}` to serve what is left"
        )
    started, _ = run(["docker", "start", container])
    if started != 0:
        quoted = shlex.quote(container)
        return 1, f"  {registry}: emptied, not started again; `docker logs {quoted}` says why, and `docker start {quoted}` starts it"
    return 0, f"  {registry}: emptied ({container} fetches again what the next pull asks for)"
