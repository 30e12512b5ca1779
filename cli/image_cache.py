"""The image cache (`components/image_cache.py`) as the commands see it: which folder it is, what it
holds, whether its mirrors run (`blueprint status`), and its removal (`blueprint destroy --wipe-cache`).

Docker is asked through a `DockerRun` (argv -> exit code and output), so the tests give a fake.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.image_cache import CACHE_LABEL, CACHE_MARKER, OWNER_LABEL
from stacks import outputs

DockerRun = Callable[[Sequence[str]], tuple[int, str]]
"""Run a `docker ...` argv: its exit code and its output; 127 when there is no docker."""

GIB = 1 << 30
MIB = 1 << 20
WIPE_TIMEOUT = 1800
"""Seconds the one-shot container that removes what the user cannot may take (as the data folder's wipe)."""


def docker_run(argv: Sequence[str], timeout: float = 20) -> tuple[int, str]:
    """The real `DockerRun`: never an exception for a missing or silent docker."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        return 127, f"{argv[0]}: command not found"
    except subprocess.TimeoutExpired:
        return 124, f"`{shlex.join(argv)}` did not answer within {timeout:g}s"
    except OSError as error:
        return 126, f"{argv[0]}: {error}"
    return done.returncode, done.stdout if done.returncode == 0 else (done.stderr or done.stdout)


class CacheConfigError(Exception):
    """phase1's config names no usable image cache folder: the message says which value and the fix."""


def cache_folder(phase1: Mapping[str, Any] | None, config: Mapping[str, str]) -> Path | None:
    """The image cache folder: the one phase1's last `up` recorded (its output imageCacheDir), else the one
    phase1's `config` (full keys, as `stack_config` gives them) names; None when the cache is off.
    """
    recorded = str((phase1 or {}).get(outputs.IMAGE_CACHE_DIR) or "")
    if recorded:
        return Path(recorded)
    if str(config.get("blueprint:imageCache", "true")).lower() != "true":
        return None
    from stacks.config import PROJECT_DIR, absolute_data_dir, image_cache_dir, image_cache_dir_problem, ways_to_set

    value = str(config.get("blueprint:imageCacheDir", ""))
    data_dir = absolute_data_dir(config.get("blueprint:dataDir", "infra/data/shared"), PROJECT_DIR)
    if problem := image_cache_dir_problem(value, PROJECT_DIR, data_dir):
        raise CacheConfigError(f"blueprint:imageCacheDir {value!r}: {problem}; fix: {ways_to_set('phase1', 'imageCacheDir', '<folder>')}")
    return image_cache_dir(value)


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
        f"in its checkout, `pulumi destroy -s dev` for a dev stack), or, if they are nobody's, `{remove}`; then run "
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
        states[name] = "down (no such container)" if status is None else "up" if status.startswith("Up") else f"down ({status})"
    return states


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
        return [*lines, "  mirrors: none (phase1's last `up` ran none)"]
    containers = {registry: str(endpoint).rsplit(":", 1)[0] for registry, endpoint in sorted(mirrors.items())}
    states = mirror_states(list(containers.values()), run)
    for registry, container in containers.items():
        state = "unknown (Docker does not answer)" if states is None else states[container]
        lines.append(f"  mirror of {registry} ({container}): {state}")
    return lines


@dataclass(frozen=True)
class Wiped:
    """What a wipe of the cache did: `ok`, and what to tell the user."""

    ok: bool
    said: str


def _left(folder: Path) -> list[Path]:
    return [path for path in folder.iterdir() if path.name != CACHE_MARKER] if folder.is_dir() else []


def _mounts_inside(folder: Path) -> list[str]:
    """Folders inside `folder` on another filesystem: nothing is removed from them."""
    device = folder.stat().st_dev
    found = []
    for root, dirs, _ in os.walk(folder):
        for name in list(dirs):
            path = os.path.join(root, name)
            try:
                if os.lstat(path).st_dev != device:
                    found.append(path)
                    dirs.remove(name)
            except OSError:
                continue
    return found


def wipe(folder: Path, run: DockerRun, image: str, measure: Callable[[Path], tuple[int, bool]] = size_on_disk) -> Wiped:
    """Remove the image cache `folder`, which has its `CACHE_MARKER` and which no container uses (the caller
    checked). What the user cannot remove goes through a one-shot container of `image`, which the
    machine already has (as the data folder's wipe does); the marker goes last, so a wipe that stops
    half-way can be run again.
    """
    by_hand = f"sudo rm -rf {shlex.quote(str(folder))}"
    if folder.is_symlink() or not folder.is_dir():
        return Wiped(False, f"not removing {folder}: it is not a folder (a link, or a file); remove it yourself if it is yours: {by_hand}")
    if mounts := _mounts_inside(folder):
        return Wiped(
            False,
            f"not removing the image cache {folder}: another filesystem is mounted inside it ({', '.join(mounts)}), and "
            "blueprint removes nothing from one; unmount it (`sudo umount <that folder>`), then run the destroy again",
        )
    before, _ = measure(folder)
    for path in _left(folder):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    if _left(folder):
        # Files of another uid (a mirror Docker ran as root): removed as root, in a container.
        argv = ["docker", "run", "--rm", "--network", "none", "--user", "0", "--pull", "never", "--volume", f"{folder}:/blueprint-cache"]
        argv += ["--entrypoint", "find", image, "/blueprint-cache", "-mindepth", "1", "-xdev", "!", "-path"]
        argv += [f"/blueprint-cache/{CACHE_MARKER}", "-delete"]
        run(argv)
    if _left(folder):
        after, _ = measure(folder)
        return Wiped(
            False,
            f"could not remove all of the image cache {folder} ({shown_size(after)} left: files of another user, and Docker "
            f"could not remove them with its image {image}); remove it by hand: {by_hand}",
        )
    (folder / CACHE_MARKER).unlink(missing_ok=True)
    try:
        folder.rmdir()
    except OSError as error:
        return Wiped(True, f"emptied the image cache {folder}, freeing {shown_size(before)}, and left the folder itself ({error.strerror})")
    return Wiped(True, f"removed the image cache {folder}, freeing {shown_size(before)}")
