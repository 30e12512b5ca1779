"""phase1's data folder as the commands see it: where its config puts it, and its removal by a
`destroy --wipe-data` once no stack holds it any more (an earlier destroy kept it, with preserveData).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import versions
from cli.lifecycle import inner_owners
from components.host_folder import DELETE_SCRIPT, PRESERVE_DATA, SCRIPT_ENVIRONMENT
from components.markers import CLUSTER_MARKER, LEASES_FOLDER, OWNER_MARKER, read_marker
from shown import shown
from stacks import outputs
from stacks.config import PROJECT_DIR, ConfigError
from stacks.config.paths import CHECKOUT_ID_FILE, absolute_data_dir, data_dir_problem
from stacks.layout_record import claimed_by

if TYPE_CHECKING:
    from cli.teardown import World

PHASE1_OF = "blueprint/phase1@"
"""The owner phase1 writes into its data folder, but the checkout's id (stacks.config.paths.folder_owner)."""
OVER_PHASE1 = outputs.stacks_over("phase1")
"""The stacks whose folders belong in phase1's data folder (phase2), as `stacks.phase1` records them for its wipe."""


def configured_folder(config: Mapping[str, str]) -> Path:
    """phase1's data folder as its config names it."""
    return absolute_data_dir(config["blueprint:dataDir"], PROJECT_DIR)


def _phase1_here(world: World) -> str | None:
    """The owner phase1 of this checkout writes into its data folder; None when it never ran a stack."""
    checkout = world.checkout_id()
    return None if checkout is None else f"{PHASE1_OF}{checkout}"


def wipe_refused(config: Mapping[str, str], world: World, up: Collection[str], *, cluster_gone: bool = False) -> str | None:
    """Why this checkout must not remove phase1's data folder, which no stack holds any more, or None,
    with what to run. It may only when the folder's owner file names phase1 of this checkout (its id:
    the same stack of another checkout is another owner), no stack `up` has a lease on a cluster over
    it (another stack's lease is stale), and no cluster blueprint made over it still runs
    (`cluster_gone`: the user said Docker and it are gone for good). `cli/teardown.py` asks before
    anything is destroyed, so a refused `--wipe-data` is finished by running it again; and asks
    again, here, right before the wipe.
    """
    from cli.teardown import START_DOCKER  # here: cli.teardown imports this module

    folder = configured_folder(config)
    if not (folder / OWNER_MARKER).is_file():
        return None  # nothing of blueprint's there: nothing to remove
    if problem := data_dir_problem(folder, PROJECT_DIR):
        return problem
    try:
        owner = _phase1_here(world)
    except ConfigError as error:
        return str(error)
    claimed = read_marker(folder / OWNER_MARKER)
    names = f"its {OWNER_MARKER} names {shown(claimed or '<unreadable>')}"
    if owner is None:
        return (
            f"{names}, and this checkout has no id (.pulumi-state/blueprint-checkout-id), so it claimed no folder{_lost_id(claimed, owner)}"
        )
    if not claimed_by(str(folder), owner):
        return f"{names}, not this checkout's phase1 ({owner}){_lost_id(claimed, owner)}"
    # As the cluster's delete script reads leases: regular files, not links, not dotfiles (drafts).
    leases = (folder / LEASES_FOLDER).glob("[!.]*") if (folder / LEASES_FOLDER).is_dir() else []
    held = sorted(path for path in leases if path.is_file() and not path.is_symlink())
    # A lease is named after its stack (components/kind_cluster.py): one whose stack is not up is stale.
    if stale := [path for path in held if path.name not in {f"blueprint_{stack}" for stack in up}]:
        removes = " && ".join(f"rm -- {shlex.quote(str(path))}" for path in stale)
        left, them = ", ".join(path.name for path in stale), "it" if len(stale) == 1 else "them"
        return f"a stack that is not up left its lease on the cluster in it ({left}): remove {them} (`{removes}`)"
    if held:  # a stack's state removed by hand: phase1's (this folder's) while phase2 stays up
        stack = held[0].name.removeprefix("blueprint_")
        destroy = f"uv run blueprint destroy --phase {stack.removeprefix('phase')} --wipe-data"
        return f"{stack} still runs on a cluster over it: destroy it first (`{destroy}`)"
    cluster_name = read_marker(folder / CLUSTER_MARKER) or ""
    running = world.cluster(cluster_name).status if cluster_name else "gone"
    if running == "running":
        return (
            f"the kind cluster {cluster_name} blueprint made over it still runs, and phase1, which made it, is not up: "
            "unless another checkout's platform runs on a cluster of that name, delete it "
            f"(`kind delete cluster --name {shlex.quote(cluster_name)}`)"
        )
    if running == "unknown" and not cluster_gone:
        return (
            f"whether the kind cluster {cluster_name} over it still runs cannot be told. {START_DOCKER}, then run this again; "
            "if Docker and the cluster are gone for good, `uv run blueprint destroy --wipe-data --cluster-gone` says so"
        )
    return None


def _lost_id(claimed: str | None, here: str | None) -> str:
    """When `claimed` (what the folder's owner file says) names phase1 of a checkout whose id this one
    does not hold (`here`: None when it has none), the way back, should that checkout be this one
    with its .pulumi-state/ lost: a clause to end a message with; else "".
    """
    checkout = (claimed or "").removeprefix(PHASE1_OF)
    # Only an id as the program writes it goes into a command: what a file holds is never pasted raw.
    if claimed == here or checkout == claimed or not re.fullmatch(r"[0-9a-f]{16}", checkout):
        return ""
    folder, file = shlex.quote(str(CHECKOUT_ID_FILE.parent)), shlex.quote(str(CHECKOUT_ID_FILE))
    write = f"mkdir -p {folder} && printf '%s\\n' {checkout} > {file}"
    return f"; if it is this checkout's own, and its .pulumi-state/ was lost, write its id back (`{write}`), and it is again"


def _say_kept(say: Callable[[str], None], folder: Path, world: World) -> None:
    """The data folder kept, without `--wipe-data`: with the destroy that removes it, or whose it is.
    Never with an `rm -rf`, which crosses a filesystem mounted inside, and may take the data another
    checkout's platform runs on.
    """
    try:
        here = _phase1_here(world)
    except ConfigError:
        here = None
    if here is not None and claimed_by(str(folder), here):
        say(
            f"== the data folder {folder} is kept: no stack of this checkout holds it any more; "
            "`uv run blueprint destroy --wipe-data` removes it"
        )
        return
    claimed = read_marker(folder / OWNER_MARKER)
    who = shown(claimed) if claimed else "another stack or checkout"
    say(
        f"== the data folder {folder} is kept: it belongs to {who}, not to this checkout's phase1; only its own destroy "
        f"removes it{_lost_id(claimed, here)}"
    )


def unowned_data(
    say: Callable[[str], None], config: Mapping[str, str], world: World, up: Collection[str], *, wipe: bool, cluster_gone: bool = False
) -> int:
    """phase1's data folder when phase1's stack is gone (destroyed earlier with its data kept): no
    stack holds it any more. It is removed here, as phase1's destroy would have, only when the user
    said `--wipe-data` (and yes) and `wipe_refused` finds nothing (`up`: the stacks still up): each run of it tries the wipe
    again, whose own refusals say what to fix. Otherwise it is kept, and said so (`_say_kept`); with
    why, when the wipe was refused.
    """
    folder = configured_folder(config)
    if not (folder / OWNER_MARKER).is_file():
        return 0  # nothing of blueprint's there
    if not wipe:
        _say_kept(say, folder, world)
        return 0
    if problem := wipe_refused(config, world, up, cluster_gone=cluster_gone):
        say(f"== the data folder {folder} is kept, and not removed: {problem}; run the destroy again once that is fixed")
        return 1
    done = world.wipe_folder(str(folder), str(_phase1_here(world)))
    if done.returncode != 0:
        # The wipe says why, and names the destroy that finishes it: never an `rm -rf`, which would
        # cross a filesystem mounted inside, or take folders another stack claimed.
        say(done.stderr.strip())
        return 1
    if folder.exists():  # a mount point, or in a folder the user cannot write: emptied, and the wipe says so
        note = done.stderr.strip().removeprefix("blueprint: ") or "emptied it, and left it in place"
        say(f"== the data folder {folder}: no stack holds it any more; {note}")
        return 0
    say(f"== the data folder {folder}: no stack holds it any more; removed it")
    return 0


def wipe_folder(folder: str, owner: str) -> subprocess.CompletedProcess[str]:
    marker = os.path.join(folder, OWNER_MARKER)
    if not os.path.exists(marker):
        return subprocess.CompletedProcess([], 0, "", "")
    # As phase1's own wipe has it: the folders of the stacks over it go with it.
    inner = inner_owners(owner, OVER_PHASE1)
    # No stack file to read again: `--wipe-data` said to wipe, and no stack records this folder any more.
    env = {**os.environ, **SCRIPT_ENVIRONMENT, "FOLDER": folder, "OWNER": owner, "INNER_OWNERS": inner, PRESERVE_DATA: "false"}
    env |= {"STACK_FILE": "", "CONFIG_PYTHON": ""}
    env["WIPE_IMAGE"] = versions.KIND_NODE_IMAGE
    from cli.image_cache import engine_of
    from components.engine import for_engine
    from stacks.config.schema import stack_config

    # phase1's engine: the one its config means here (phase1 is gone, and its outputs with it).
    engine = engine_of(None, lambda: stack_config("phase1")[0])
    from cli.doctor.machine import in_own_group

    # Its own process group: killing the shell alone would leave a `find -delete` running.
    done = in_own_group(["/bin/sh", "-c", for_engine(DELETE_SCRIPT, engine)], WIPE_SECONDS, env=env)
    if done is None:
        slow = (
            f"blueprint: removing {folder} took more than 30 minutes, and was stopped half-way (a one-shot container it "
            f"started may still be removing files: `{engine} ps`); run the same destroy again to go on "
            "(`uv run blueprint destroy --wipe-data`)"
        )
        return subprocess.CompletedProcess([], 1, "", slow)
    return done


WIPE_SECONDS = 1800
"""How long a wipe of the data folder may take before blueprint stops it."""
