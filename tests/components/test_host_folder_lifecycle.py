"""phase1's data folder and phase2's folders inside it through whole lifecycles, with the recorded
scripts run for real and a `docker` that does what their one-shot containers do: at paths a shell
misreads easily, and cut short after any outside call (`tests/crash.py`), as a Ctrl-C of an `up` or
a `destroy` may leave them."""

from __future__ import annotations

import fcntl
import pickle
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest

import tests.plans
from cli.plan import ProgramFailed, plan
from components.host_folder import PRESERVE_DATA
from components.markers import LAYOUT_MARKER, OWNER_MARKER
from providers.host_secret import FINISHING_DESTROY, WIPING_MARKER, unfinished_wipe
from stacks import outputs
from stacks.layout_record import HOST
from tests import crash
from tests.plans import COMMAND, planned, run_script

ODD = ["with space", "a~b+c@d", "-dash start", "x y  two", "trailing "]
"""Folder names a shell splits, globs or reads as an option when a script forgets a quote."""


@pytest.fixture
def parent() -> Iterator[Path]:
    """A folder outside pytest's tmp (its paths are long and tidy: a shell misreads neither)."""
    folder = Path(tempfile.mkdtemp(prefix="blueprint lifecycle ", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


FOLDERS = ("kind-data-folder", "storage-platform-folder", "storage-volumes-folder")
STACKS = {"phase2": ("phase1", "phase2", "phase2"), "dev": ("dev", "dev", "dev")}
"""The stack of each of FOLDERS, up to phase2 (the phase stacks), or in dev."""


@cache
def _planned_folders(stack: str) -> tuple[Path, tuple[dict[str, Any], ...]]:
    """The planned data folder and the commands of `_folders` as planned (read once: no test changes them)."""
    planned_data = Path(planned(STACKS[stack][0]).outputs[outputs.DATA_DIR]["value"])
    return planned_data, tuple(planned(of).one(COMMAND, name) for of, name in zip(STACKS[stack], FOLDERS, strict=True))


def _folders(data: Path, stack: str = "phase2") -> list[dict[str, Any]]:
    """The claims of phase1's data folder, then of phase2's platform and volumes folders inside it
    (or dev's, for `stack` dev), moved to `data` as a plan with that dataDir records them: one
    plan serves every path, as a plan over another folder changes FOLDER alone (the scripts read the
    folder from FOLDER alone)."""
    planned_data, commands = _planned_folders(stack)
    moved = []
    for command in commands:
        environment = command["inputs"]["environment"]
        folder = data / Path(environment["FOLDER"]).relative_to(planned_data)
        moved.append({**command, "inputs": {**command["inputs"], "environment": {**environment, "FOLDER": str(folder)}}})
    return moved


T = TypeVar("T")

POSTGRES = Path("volumes", "platform", "postgres", "postgresql-cnpg-1", "pgdata", "PG_VERSION")
"""A file a pod wrote in its volume."""


def _up(data: Path, tools: Path, counter: Path) -> None:
    for command in _folders(data):
        done = crash.run(command, "create", tools, counter, None)
        assert done.returncode == 0, (command["name"], done.stderr)
    (data / POSTGRES).parent.mkdir()
    (data / POSTGRES).write_text("17\n")


@pytest.fixture
def tools(tmp_path: Path) -> tuple[Path, Path]:
    """The wrapped tools (docker doing its containers' work) and their call counter."""
    counter = tmp_path / "counter"
    return crash.wrap_tools(tmp_path / "tools", counter, {"docker": crash.docker_that_does_the_work(tmp_path / "docker")}), counter


def _docker(tools: tuple[Path, Path]) -> Path:
    """The folder of the docker doing its containers' work that `tools` wraps: for the runs no test
    cuts short, which need no count of their calls."""
    return tools[0].parent / "docker"


@pytest.mark.parametrize("name", ODD)
def test_the_folders_at_a_path_a_shell_misreads_are_claimed_updated_and_wiped_whole(
    parent: Path, tools: tuple[Path, Path], name: str
) -> None:
    data = parent / name / "data"
    _up(data, *tools)
    folders = _folders(data)
    for command in folders:
        done = run_script(command, "update", path_prefix=_docker(tools))
        assert done.returncode == 0, (command["name"], done.stderr)
    for command in reversed(folders):  # phase2's, then phase1's
        done = run_script(command, "delete", path_prefix=_docker(tools))
        assert done.returncode == 0, (command["name"], done.stderr)
    assert not data.exists()
    assert (parent / name).is_dir(), "nothing outside the data folder goes"


def _restore(data: Path, saved: Path | None) -> None:
    """`data` as `saved` holds it (nothing, for None): each cut starts from the same folders."""
    shutil.rmtree(data, ignore_errors=True)
    if saved is not None:
        shutil.copytree(saved, data, symlinks=True)


def _saved(parent: Path, data: Path) -> Path:
    saved = parent / "saved"
    shutil.copytree(data, saved, symlinks=True)
    return saved


def _made_once(store: Path, name: str, make: Callable[[Path], T]) -> T:
    """What `make(folder)` returns (pickled), and the folders it keeps in `folder`, made once in `store`
    by whichever worker asks first (under a lock; the others wait, then read it): each worker cuts its
    own folders short from these copies, none changes them."""
    done = store / name
    store.mkdir(parents=True, exist_ok=True)
    with (store / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (done / "made.pickle").exists():
            shutil.rmtree(done, ignore_errors=True)
            done.mkdir()
            made = done / "made.partial"
            made.write_bytes(pickle.dumps(make(done)))
            made.replace(done / "made.pickle")  # whole or not at all: a worker killed writing it leaves none
        return cast(T, pickle.loads((done / "made.pickle").read_bytes()))


def _store(folder: Path) -> Path:
    """Where `_made_once` keeps what it made: under xdist, a folder of this run its workers share
    (tests/conftest.py), else one of this module's own."""
    return tests.plans.SHARED_PLANS.parent / "lifecycle" if tests.plans.SHARED_PLANS else folder / "made once"


class Claims:
    """phase1's data folder claimed, then phase2's platform and volumes folders in it, each by one
    uncut run over what the one before left, at the data folder `data`: what each claim started
    from (kept aside), how many outside calls it made, and the platform up that the last one left
    (a pod's file written in its volume). The claims cut short start from the same folders, and the
    wipes cut short from that up. Made once a run (`_made_once`): each worker cuts its own `data`."""

    def __init__(self, folder: Path) -> None:
        counter = folder / "counter"
        self.tools = crash.wrap_tools(folder / "tools", counter, {"docker": crash.docker_that_does_the_work(folder / "docker")}), counter
        self.data = folder / "data"
        self.store = _store(folder)
        self.before: list[Path | None]
        self.calls: list[int]
        self.left: list[crash.Left]  # what each claim left, owners too (the copies in `before` are shared: read only)
        self.before, self.calls, self.left, self.up = _made_once(self.store, "claims", self._claimed)

    def _claimed(self, kept: Path) -> tuple[list[Path | None], list[int], list[crash.Left], Path]:
        before: list[Path | None] = [None]
        calls: list[int] = []
        left: list[crash.Left] = []
        for which, command in enumerate(_folders(self.data)):
            done = crash.run(command, "create", *self.tools, None)
            assert done.returncode == 0, (command["name"], done.stderr)
            calls.append(crash.calls(self.tools[1]))
            left.append(crash.left(self.data))
            before.append(shutil.copytree(self.data, kept / f"claimed {which}", symlinks=True))
        (self.data / POSTGRES).parent.mkdir()
        (self.data / POSTGRES).write_text("17\n")
        return before, calls, left, _saved(kept, self.data)


@pytest.fixture(scope="module")
def claims() -> Iterator[Callable[[], Claims]]:
    """`Claims`, made on first ask in a folder of its own, for every test of this module that asks."""
    folder = Path(tempfile.mkdtemp(prefix="blueprint lifecycle ", dir="/tmp"))
    made: list[Claims] = []

    def claimed() -> Claims:
        if not made:
            made.append(Claims(folder))
        return made[0]

    yield claimed
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("which", [0, 1, 2], ids=["data folder", "platform folder", "volumes folder"])
def test_a_claim_cut_short_anywhere_is_finished_by_the_next_up(claims: Callable[[], Claims], which: int) -> None:
    ups = claims()
    data, tools, command = ups.data, ups.tools, _folders(ups.data)[which]
    uncut = ups.left[which] or ()
    failures = []
    again: dict[crash.Left, tuple[subprocess.CompletedProcess[str], crash.Left]] = {}  # the next up runs once for each cut's leftovers
    for cut in range(1, ups.calls[which] + 1):
        _restore(data, ups.before[which])
        crash.run(command, "create", *tools, cut)
        if (left := crash.left(data)) not in again:
            again[left] = (crash.run(command, "create", *tools, None), crash.left(data))
        done, finished = again[left]
        # each path the uncut claim leaves, as it leaves it: its type, mode, owner and bytes
        found = {entry[0]: entry for entry in finished or ()}
        wrong = [entry[:4] for entry in uncut if found.get(entry[0]) != entry]
        if done.returncode != 0 or wrong:
            failures.append((cut, done.stderr, wrong))
    assert failures == []


class WipeCuts:
    """For each call the wipe of one folder makes, the data folder as that wipe cut short after it
    left it, made once a run (`_made_once`) and kept aside: every test of a half-done wipe restores
    each of them in turn. Cuts that left the same data folder (`crash.left`) are kept as one: a
    script run over it runs alike for each."""

    def __init__(self, base: Path, tools: tuple[Path, Path], which: int, saved: Path, store: Path) -> None:
        """`saved`: the platform up at `base / "data"`, kept aside (one up serves every folder's wipe)."""
        self.tools = tools
        self.data = base / "data"
        self.command = _folders(self.data)[which]
        self.left: list[tuple[list[int], Path | None]] = _made_once(store, f"wipe of {which}", lambda kept: self._cut(saved, kept))

    def _cut(self, saved: Path, kept: Path) -> list[tuple[list[int], Path | None]]:
        _restore(self.data, saved)
        crash.run(self.command, "delete", *self.tools, None)
        left: list[tuple[list[int], Path | None]] = []
        by_left: dict[crash.Left, list[int]] = {}
        for cut in range(1, crash.calls(self.tools[1]) + 1):
            _restore(self.data, saved)
            crash.run(self.command, "delete", *self.tools, cut)
            if (found := crash.left(self.data)) in by_left:
                by_left[found].append(cut)
                continue
            by_left[found] = [cut]
            copy = kept / f"cut {cut}"
            left.append((by_left[found], shutil.copytree(self.data, copy, symlinks=True) if self.data.exists() else None))
        return left


@pytest.fixture(scope="module")
def wipe_cuts(claims: Callable[[], Claims]) -> Callable[[int], WipeCuts]:
    """The cuts of the wipe of folder `which` (0: data, 1: platform, 2: volumes), made on first ask
    from the platform up of `claims`: the wipes cut short run once for every test of them, each test
    restoring its own copy."""
    made: dict[int, WipeCuts] = {}

    def cuts(which: int) -> WipeCuts:
        if which not in made:
            ups = claims()
            made[which] = WipeCuts(ups.data.parent, ups.tools, which, ups.up, ups.store)
        return made[which]

    return cuts


def _up_then_cuts(cuts: WipeCuts) -> Iterator[tuple[list[int], dict[str, Any], Path]]:
    """The platform up, then, for each call its wipe of one folder makes, that wipe cut short after
    it: (the cuts that left that data folder, the folder's command, the data folder)."""
    for at, left in cuts.left:
        _restore(cuts.data, left)
        yield at, cuts.command, cuts.data


@pytest.mark.parametrize("which", [0, 2], ids=["data folder", "volumes folder"])
def test_a_wipe_cut_short_anywhere_is_finished_by_the_next_destroy(wipe_cuts: Callable[[int], WipeCuts], which: int) -> None:
    failures = []
    for at, command, _ in _up_then_cuts(cuts := wipe_cuts(which)):
        again = crash.run(command, "delete", *cuts.tools, None)
        if again.returncode != 0 or Path(command["inputs"]["environment"]["FOLDER"]).exists():
            failures.append((at, again.stderr))
    assert failures == []


@pytest.mark.parametrize("which", [0, 2], ids=["data folder", "volumes folder"])
def test_an_up_never_takes_over_a_folder_whose_wipe_was_cut_short(wipe_cuts: Callable[[int], WipeCuts], which: int) -> None:
    """The program refuses the half-wiped folder before any claim runs (stacks/program.py), or the
    claim finds it whole, or wiped to nothing but blueprint's markers: never the data half gone."""
    failures = []
    for at, command, data in _up_then_cuts(cuts := wipe_cuts(which)):
        folder = Path(command["inputs"]["environment"]["FOLDER"])
        left = sorted(str(path.relative_to(folder)) for path in folder.rglob("*")) if folder.exists() else []
        whole = (data / POSTGRES).exists()
        refused = unfinished_wipe(folder) is not None
        taken = not refused and crash.run(command, "create", *cuts.tools, None).returncode == 0
        if taken and not whole and left not in ([], [OWNER_MARKER], sorted([OWNER_MARKER, LAYOUT_MARKER])):
            failures.append((at, left))
    assert failures == []


@pytest.mark.parametrize(("which", "stack"), [(0, "phase1"), (2, "phase2")], ids=["data folder", "volumes folder"])
def test_a_wipe_cut_short_is_refused_with_the_destroy_that_finishes_it(
    wipe_cuts: Callable[[int], WipeCuts], which: int, stack: str
) -> None:
    """Its wiping marker names the owner, whose destroy the refusal gives (`blueprint destroy` is the
    phase stacks', and destroys only phase2 and phase3 with `--phase 2`)."""
    said = []
    for _, command, _ in _up_then_cuts(wipe_cuts(which)):
        folder = Path(command["inputs"]["environment"]["FOLDER"])
        if (folder / WIPING_MARKER).exists():
            said.append(str(unfinished_wipe(folder)))
    assert said
    assert [text for text in said if f"`{FINISHING_DESTROY[stack]}`" not in text] == []


@pytest.mark.parametrize("which", [0, 1, 2], ids=["data folder", "platform folder", "volumes folder"])
def test_a_folder_whose_wipe_was_cut_short_is_never_said_kept(wipe_cuts: Callable[[int], WipeCuts], which: int) -> None:
    """The destroy run again with the data kept (`--preserve-data`) after a wipe that removed the
    secrets and not yet the databases: refused, with the wipe that finishes it, never "keeping"."""
    said_kept, refused = [], 0
    for at, command, _ in _up_then_cuts(cuts := wipe_cuts(which)):
        if not (Path(command["inputs"]["environment"]["FOLDER"]) / WIPING_MARKER).exists():
            continue
        kept = crash.run(command, "delete", *cuts.tools, None, env={PRESERVE_DATA: "true"})
        if kept.returncode == 0 or f"\n  {FINISHING_DESTROY['phase1' if which == 0 else 'phase2']}\n" not in kept.stderr:
            said_kept.append((at, kept.stderr))
        refused += 1
    assert said_kept == []
    assert refused, "no cut left the wipe half-way"


def test_an_object_a_pod_stored_under_a_markers_name_never_blocks_a_wipe(claims: Callable[[], Claims]) -> None:
    """MinIO keeps each object as a folder named after its key: an upload named `.blueprint-owner`
    into the platform's GitLab makes one under the volumes folder, which claims nothing."""
    ups = claims()
    data, tools = ups.data, ups.tools
    _restore(data, ups.up)
    upload = data / "volumes" / "platform" / "minio" / "minio-0" / "gitlab-uploads" / "@hashed" / "ab" / "cd" / "0123" / "f00d"
    (upload / OWNER_MARKER).mkdir(parents=True)  # the object `.../f00d/.blueprint-owner`
    (upload / OWNER_MARKER / "xl.meta").write_bytes(b"XL2 ")
    for command in reversed(_folders(data)):  # phase2's volumes, platform, then phase1's data folder
        done = run_script(command, "delete", path_prefix=_docker(tools))
        assert done.returncode == 0, (command["name"], done.stderr)
    assert not data.exists()


def _dev_wipe_cut_short(data: Path, tools: tuple[Path, Path]) -> dict[str, Any]:
    """dev up over `data`, then `pulumi destroy -s dev` cut short once its data folder's wipe began
    (phase2's platform folder wiped whole): the data folder's command."""
    claim, platform, _ = _folders(data, "dev")
    for command in (claim, platform):
        assert crash.run(command, "create", *tools, None).returncode == 0
    (data / "platform" / "secrets").mkdir(exist_ok=True)
    (data / "platform" / "secrets" / "openbao-keys").write_text("k\n")
    assert crash.run(platform, "delete", *tools, None).returncode == 0
    for cut in range(1, 40):
        crash.run(claim, "delete", *tools, cut)
        if (data / WIPING_MARKER).exists():
            return claim
    raise AssertionError("no cut left dev's wipe half-way")


@pytest.fixture(scope="module")
def dev_cut_short_once() -> Iterator[tuple[Path, Path, dict[str, Any], tuple[Path, Path]]]:
    """`_dev_wipe_cut_short`, run once for the tests of it: its data folder, a copy of what the cut
    left, the data folder's command, and the wrapped tools."""
    folder = Path(tempfile.mkdtemp(prefix="blueprint lifecycle ", dir="/tmp"))
    counter = folder / "counter"
    tools = crash.wrap_tools(folder / "tools", counter, {"docker": crash.docker_that_does_the_work(folder / "docker")})
    claim = _dev_wipe_cut_short(folder / "data", (tools, counter))
    yield folder / "data", _saved(folder, folder / "data"), claim, (tools, counter)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def dev_cut_short(
    dev_cut_short_once: tuple[Path, Path, dict[str, Any], tuple[Path, Path]],
) -> tuple[Path, dict[str, Any], tuple[Path, Path]]:
    """dev's data folder as its wipe cut short left it (restored from the copy for each test), its
    command and the wrapped tools."""
    data, saved, claim, tools = dev_cut_short_once
    _restore(data, saved)
    return data, claim, tools


DEV_DESTROY = 'eval "$(uv run blueprint env)" && pulumi destroy -s dev'


def test_devs_next_up_over_its_wipe_cut_short_is_refused_with_devs_own_destroy(
    dev_cut_short: tuple[Path, dict[str, Any], tuple[Path, Path]],
) -> None:
    """`blueprint destroy` destroys the phase stacks only: for dev it would finish nothing."""
    data, _, _ = dev_cut_short
    with pytest.raises(ProgramFailed) as refused:
        plan("dev", {"blueprint:dataDir": str(data)}, layout_records=HOST)
    assert f"a destroy that removes {data} stopped half-way" in str(refused.value)
    assert str(refused.value).endswith(f"`{DEV_DESTROY}`")


def test_devs_wipe_cut_short_is_never_said_kept_and_its_refusal_gives_devs_own_destroy(
    dev_cut_short: tuple[Path, dict[str, Any], tuple[Path, Path]],
) -> None:
    _, claim, tools = dev_cut_short
    kept = crash.run(claim, "delete", *tools, None, env={PRESERVE_DATA: "true"})
    assert kept.returncode == 1
    assert f"\n  {DEV_DESTROY}\n" in kept.stderr
