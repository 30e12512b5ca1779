"""phase1's data folder as the commands see it: where its config puts it, and its removal by a
`destroy --wipe-data` once no stack holds it any more (an earlier destroy kept it, with preserveData).
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from cli.lifecycle import inner_owners
from stacks import outputs

if TYPE_CHECKING:
    from cli.teardown import World

OVER_PHASE1 = outputs.stacks_over("phase1")
"""The stacks whose folders belong in phase1's data folder (phase2), as `stacks.phase1` records them for its wipe."""


def configured_folder(config: Mapping[str, str]) -> Path:
    """phase1's data folder as its config names it."""
    from stacks.config import PROJECT_DIR
    from stacks.config.paths import absolute_data_dir

    return absolute_data_dir(config.get("blueprint:dataDir", "infra/data/shared"), PROJECT_DIR)


def wipe_refused(config: Mapping[str, str], world: World) -> str | None:
    """Why this checkout must not remove phase1's data folder, which no stack holds any more, or None.
    It may only when the folder's owner file names phase1 of this checkout (its id: the same stack of
    another checkout is another owner), no stack has a lease on a cluster over it, and no cluster
    blueprint made over it still runs. `cli/teardown.py` asks before anything is destroyed, so a
    refused `--wipe-data` is finished by running it again; and asks again, here, right before the wipe.
    """
    from components.host_folder import LEASES_FOLDER, OWNER_MARKER
    from components.kind_cluster import CLUSTER_MARKER
    from stacks.config import PROJECT_DIR, ConfigError
    from stacks.config.paths import data_dir_problem

    folder = configured_folder(config)
    if not (folder / OWNER_MARKER).is_file():
        return None  # nothing of blueprint's there: nothing to remove
    # As the cluster's delete script reads leases: regular files, not links, not dotfiles (drafts).
    leases = (folder / LEASES_FOLDER).glob("[!.]*") if (folder / LEASES_FOLDER).is_dir() else []
    users = sorted(path.name for path in leases if path.is_file() and not path.is_symlink())
    cluster_name = (folder / CLUSTER_MARKER).read_text().strip() if (folder / CLUSTER_MARKER).is_file() else ""
    running = world.cluster(cluster_name).status if cluster_name else "gone"
    try:
        checkout = world.checkout_id()
    except ConfigError as error:
        return str(error)
    owner = f"blueprint/phase1@{checkout}"
    try:
        claimed = (folder / OWNER_MARKER).read_text(errors="replace").strip()
    except OSError as error:
        claimed = f"<unreadable: {error.strerror}>"
    return (
        data_dir_problem(folder, PROJECT_DIR)
        or ("this checkout never ran a stack, so it claimed no folder" if checkout is None else None)
        or (f"its {OWNER_MARKER} names {claimed[:80]!r}, not this checkout's phase1 ({owner})" if claimed != owner else None)
        or (f"a platform still runs on a cluster over it ({', '.join(users)})" if users else None)
        or (f"the kind cluster {cluster_name} blueprint made over it still runs" if running == "running" else None)
        or (f"whether the kind cluster {cluster_name} over it still runs cannot be told (start Docker)" if running == "unknown" else None)
    )


def unowned_data(say: Callable[[str], None], config: Mapping[str, str], world: World, *, wipe: bool) -> int:
    """phase1's data folder when phase1's stack is gone (destroyed earlier with its data kept): no
    stack holds it any more. It is removed here, as phase1's destroy would have, only when the user
    said `--wipe-data` (and yes), from a checkout that still had a stack of that platform or that
    started this wipe, and `wipe_refused` finds nothing. Otherwise it is kept, and said so: with the
    command that removes it when the user did not ask for the wipe; with why, when it was refused.
    """
    from components.host_folder import OWNER_MARKER

    folder = configured_folder(config)
    if not (folder / OWNER_MARKER).is_file():
        return 0  # nothing of blueprint's there
    kept = f"== the data folder {folder} is kept: no stack of this checkout holds it any more"
    if not wipe:
        say(f"{kept}; if it is yours and you want it gone:")
        say(f"  sudo rm -rf {shlex.quote(str(folder))}")
        return 0
    if problem := wipe_refused(config, world):
        say(f"{kept}, and not removed: {problem}; run the destroy again once that is fixed")
        return 1
    done = world.wipe_folder(str(folder), f"blueprint/phase1@{world.checkout_id()}")
    if done.returncode != 0:
        # The wipe says why, and gives `sudo rm -rf` only where removing the folder by hand is the fix
        # (never after a refusal: a filesystem mounted inside, or folders another stack claimed).
        say(done.stderr.strip())
        return 1
    if folder.exists():  # a mount point, or in a folder the user cannot write: emptied, and the wipe says so
        note = done.stderr.strip().removeprefix("blueprint: ") or "emptied it, and left it in place"
        say(f"== the data folder {folder}: no stack holds it any more; {note}")
        return 0
    say(f"== the data folder {folder}: no stack holds it any more; removed it")
    return 0


def wipe_folder(folder: str, owner: str) -> subprocess.CompletedProcess[str]:
    import os

    import versions
    from components.host_folder import DELETE_SCRIPT, OWNER_MARKER, PRESERVE_DATA, SCRIPT_ENVIRONMENT

    marker = os.path.join(folder, OWNER_MARKER)
    if not os.path.exists(marker):
        return subprocess.CompletedProcess([], 0, "", "")
    # As phase1's own wipe has it: the folders of the stacks over it go with it.
    inner = inner_owners(owner, OVER_PHASE1)
    env = {**os.environ, **SCRIPT_ENVIRONMENT, "FOLDER": folder, "OWNER": owner, "INNER_OWNERS": inner, PRESERVE_DATA: "false"}
    env["WIPE_IMAGE"] = versions.KIND_NODE_IMAGE
    try:
        done = subprocess.run(["/bin/sh", "-c", DELETE_SCRIPT], env=env, capture_output=True, text=True, check=False, timeout=1800)
    except subprocess.TimeoutExpired:
        slow = f"blueprint: removing {folder} took more than 30 minutes; remove it by hand:\n  sudo rm -rf {shlex.quote(folder)}"
        return subprocess.CompletedProcess([], 1, "", slow)
    return done
