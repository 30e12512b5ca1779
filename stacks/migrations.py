"""Every upgrade of a stack's data from one blueprint release to the next: MIGRATIONS.

Two records say where a stack stands. Its output `blueprintVersion`, the release that last brought it
up (written at the end of an `up`; every `pulumi destroy` deletes it). And `.blueprint-layout` beside
its data (stacks/layout_record.py), which a destroy that keeps the data keeps: the release of the last
migration of the stack's phases that shaped that data, written by the claim of the folder and after
each migration `bring_up_to_date` runs. A release that migrates nothing of a stack's data leaves it
as it was, so an older checkout still runs over that data. Before anything is registered, the program
reads both back: a release or a layout newer than this checkout (versions.BLUEPRINT) is refused,
nothing changed; else the migrations of the stack's phases past the data's layout (past the state's
release where the data has no record: phase3) run in version order (a preview names them).

A Migration upgrades what the engine does not hold: data and host-side layout (a moved folder, a
changed file format); never state (a new name or parent is an alias; a dynamic provider's module path
never moves). Each comes with a CHANGELOG line and bumps versions.BLUEPRINT to its `version` (none
beyond it). It is idempotent and does nothing where there is nothing to upgrade (a failed `up` runs it
again); for what it cannot upgrade it raises a pulumi.RunError naming the fix. One that must not run
under a running platform says `needs_stack_down`: refused while the stack is up.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pulumi

import versions
from stacks import STACK_PHASES, outputs, runtime
from stacks.config.paths import folder_owner
from stacks.config.schema import ENV_STEP
from stacks.layout_record import LayoutRecords, layout_file

Version = tuple[int, int, int]
_VERSION = re.compile(r"(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})")


def parse(text: object) -> Version:
    """`X.Y.Z` (plain integers of at most four digits) as a comparable tuple; a ValueError for anything else."""
    match = _VERSION.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"{text!r:.60} is not a blueprint version (X.Y.Z)")
    return int(match[1]), int(match[2]), int(match[3])


@dataclass(frozen=True, kw_only=True)
class MigrationContext:
    """What a migration is given about the stack it upgrades."""

    stack: str
    phases: tuple[str, ...]
    """The phases the stack runs (`dev`: all three): a migration of several phases' data acts on those it runs."""
    layout: str
    """The layout the migrations start from: the record beside the stack's data, or, where there is
    none (phase3), the release its state records."""
    outputs: Mapping[str, Any]
    """The stack's outputs from its last `up`, secret ones left out; none after a destroy that kept the data."""
    folder: str | None
    """The host folder beside whose data the layout is recorded (`layout_folder`), or None (phase3)."""


PHASES = STACK_PHASES["dev"]
"""Every phase, in order."""


@dataclass(frozen=True, kw_only=True)
class Migration:
    """One upgrade, to release `version`, of data that an earlier release wrote."""

    version: str
    """The release it upgrades to: it runs in an `up` of that release or a later one, over a stack an
    earlier one recorded."""
    summary: str
    """One line: what it changes (a preview names it; its CHANGELOG line says the same)."""
    phases: tuple[str, ...]
    """The phases whose data it migrates: it runs, and its version is recorded beside the data, only
    in a stack that runs one of them (dev: any)."""
    run: Callable[[MigrationContext], None]
    """Does it: idempotent, and nothing where there is nothing to upgrade."""
    needs_stack_down: bool = False
    """It must not run under the previous release's running platform: refused while the stack is up
    (its state has outputs), naming the destroy that keeps the data; it runs in the `up` after that.
    Set it too when the same release replaces the kind cluster: dev cannot take its platform down
    half-way, so its users could not go back over data migrated under it (components/kind_cluster_down.sh).
    Never for phase3, whose stack a destroy that keeps the data keeps up."""

    def __post_init__(self) -> None:
        parse(self.version)
        if not self.phases or not set(self.phases) <= set(PHASES):
            raise ValueError(f"a migration names the phases whose data it migrates, of {PHASES}; got {self.phases!r}")
        if self.needs_stack_down and "phase3" in self.phases:
            raise ValueError("a migration of phase3's data cannot need its stack down: a destroy that keeps the data keeps it up")


BASE_LAYOUT = "0.1.0"
"""The layout of data no migration shaped: that of 0.1.0, the first release. No release before it left
data to upgrade, so every migration is to a later one; until the first, every release lays data out
as 0.1.0 did, and no checkout from 0.1.0 on is refused over it."""

MIGRATIONS: tuple[Migration, ...] = ()
"""Every migration, oldest first. Empty since 0.1.0, the first release: nothing before it is upgraded."""


def _of(phases: tuple[str, ...]) -> list[Migration]:
    """The migrations of the data of a stack that runs `phases`."""
    return [migration for migration in MIGRATIONS if set(migration.phases) & set(phases)]


def layout(phases: tuple[str, ...]) -> str:
    """The layout this checkout leaves the data of a stack that runs `phases` in, once its migrations
    ran: the newest version of a migration of one of them, else BASE_LAYOUT. What the claim of its
    folders records beside them.
    """
    return max((migration.version for migration in _of(phases)), key=parse, default=BASE_LAYOUT)


def pending(since: str, current: str, phases: tuple[str, ...]) -> tuple[Migration, ...]:
    """The migrations an `up` of release `current` runs over the data of a stack that runs `phases`,
    laid out as release `since` left it, in version order (the table's order among those to one
    version); a ValueError for a malformed version.
    """
    after, upto = parse(since), parse(current)
    return tuple(sorted((m for m in _of(phases) if after < parse(m.version) <= upto), key=lambda m: parse(m.version)))


def _newer(recorded: object) -> bool | None:
    """Whether `recorded` is a release newer than this checkout; None when it is no version."""
    try:
        return parse(recorded) > parse(versions.BLUEPRINT)
    except ValueError:
        return None


def refusal(stack: str, recorded: object) -> str | None:
    """Why this checkout must not act on `stack`, whose state says release `recorded` last brought it
    up: a newer release, or no version at all; None for this release or an older one. What the
    program and the CLI's pre-flight both say.
    """
    newer = _newer(recorded)
    if newer is None:
        return (
            f"stack {stack} records {outputs.BLUEPRINT_VERSION} {recorded!r:.60}, which is not a blueprint version (X.Y.Z), so "
            f"blueprint cannot tell what its state and data need; nothing was changed. Something other than blueprint wrote "
            f"it: set it to the release that last brought the stack up (`pulumi stack export -s {stack}`, in the root "
            f"stack's outputs, then `pulumi stack import -s {stack}`)"
        )
    if not newer:
        return None
    return (
        f"stack {stack} was last brought up by blueprint {recorded}, newer than this checkout ({versions.BLUEPRINT}), "
        f"which cannot know what {recorded} changed in its state and data; nothing was changed. Update this checkout "
        f"(`git pull`), or run the checkout that brought the stack up"
    )


def layout_refusal(stack: str, laid_out: object, record: str) -> str | None:
    """Why this checkout must not act on `stack`, whose data the file `record` says release `laid_out`
    laid out: a newer release migrated it, or no version at all; None for a layout this checkout knows.
    """
    newer = _newer(laid_out)
    if newer is None:
        return (
            f"{record}, beside stack {stack}'s data, records {laid_out!r:.60}, which is not a blueprint version (X.Y.Z), so "
            f"blueprint cannot tell how that data is laid out; nothing was changed. Something other than blueprint wrote it: "
            f"write into it the release of the last migration that ran over that data (one line, X.Y.Z; CHANGELOG.md "
            f"names each), or {BASE_LAYOUT} if none did"
        )
    if not newer:
        return None
    return (
        f"stack {stack}'s data was migrated by blueprint {laid_out} (so says {record}), newer than this checkout "
        f"({versions.BLUEPRINT}), which cannot know how {laid_out} laid it out; nothing was changed. Update this "
        f"checkout (`git pull`), or run the checkout that migrated it"
    )


def newer_stack(outputs_of: Callable[[str], Mapping[str, Any] | None]) -> str | None:
    """The `refusal` of the first phase stack whose outputs (`outputs_of`: None when it is not up)
    record another release than this checkout may act on, or None: what `blueprint up`, `preview` and
    `destroy` check before they change anything (the export, import and destroy of a cluster change
    or of a destroy act on state the program never sees).
    """
    for stack in outputs.EXPORTS:
        recorded = (outputs_of(stack) or {}).get(outputs.BLUEPRINT_VERSION)
        if recorded is not None and (problem := refusal(stack, recorded)):
            return problem
    return None


def behind(stack: str, upstream: str, release: object) -> str | None:
    """Why `stack` must not read the outputs of `upstream`, which release `release` left (None: none
    recorded), when that is an older one than this checkout's (`refusal` says a newer one); or None.
    """
    if release is not None and parse(release) == parse(versions.BLUEPRINT):
        return None
    by = f"blueprint {release}" if release is not None else "a blueprint that recorded no release"
    return (
        f"stack {stack} reads the outputs of stack {upstream}, which {by} brought up, not this checkout ({versions.BLUEPRINT}): "
        f"bring {upstream} up with this release first (`uv run blueprint up`)"
    )


def layout_folder(phases: tuple[str, ...], inputs: Mapping[str, Any]) -> str | None:
    """The host folder whose layout record a stack that runs `phases` reads (`inputs`: its upstream's
    outputs): the data folder where phase1 runs (phase1, dev), else phase2's platform folder; none for
    phase3, whose state a destroy that keeps the data keeps too.
    """
    if "phase1" in phases:
        from stacks.config.phases import load_phase1

        return str(load_phase1().data_dir)
    if "phase2" in phases:
        from stacks.phase2 import Folders

        return Folders.of(inputs).host
    return None


async def bring_up_to_date(stack: str, phases: tuple[str, ...], inputs: Mapping[str, Any]) -> None:
    """Read back the release that last brought `stack` up, from its state (a StackReference to
    itself), and its data's layout, from beside its data (`layout_folder`; `inputs`: its upstream's
    outputs), then refuse, run the pending migrations, or (a preview) name them: the module docstring
    says which when.
    """
    reference = pulumi.StackReference(outputs.stack_name(pulumi.get_project(), stack))
    last: dict[str, Any] = dict(await reference.outputs.future() or {})
    if outputs.BLUEPRINT_VERSION in last and (problem := refusal(stack, last[outputs.BLUEPRINT_VERSION])):
        raise pulumi.RunError(problem)
    folder = layout_folder(phases, inputs)
    records = runtime.current().layout_records
    owner = folder_owner(stack)
    data = _data_layout(stack, records, folder, owner)
    since = data if data is not None else last.get(outputs.BLUEPRINT_VERSION)
    due = pending(since, versions.BLUEPRINT, phases) if since is not None else ()
    if last and (down := next((migration for migration in due if migration.needs_stack_down), None)):
        raise pulumi.RunError(_stack_down(stack, phases, down, last.get(outputs.BLUEPRINT_VERSION)))
    if pulumi.runtime.is_dry_run():
        if due:
            pulumi.log.warn(
                f"stack {stack}'s data is laid out as blueprint {since} left it: its `up` first migrates it: "
                + "; ".join(f"({migration.version}) {migration.summary}" for migration in due)
            )
        return
    if not due:
        return
    secret = set(await reference.secret_output_names.future() or [])
    shown = {key: value for key, value in last.items() if key not in secret}
    context = MigrationContext(stack=stack, phases=phases, layout=str(since), outputs=shown, folder=folder)
    for migration in due:
        migration.run(context)
        pulumi.log.info(f"stack {stack}: migrated to blueprint {migration.version}: {migration.summary}")
        # Recorded as soon as it ran, before the next migration or anything of this release touches the
        # data: from now on an older checkout, which cannot read that layout, is refused over it.
        if folder is not None:
            records.write(folder, owner, migration.version)


def _stack_down(stack: str, phases: tuple[str, ...], migration: Migration, release: object) -> str:
    """Why `migration` does not run over `stack`, which is up, and how to take it down keeping the data."""
    if phases == (stack,):
        way = "Take it down keeping the data (`uv run blueprint destroy --preserve-data`), then bring it up (`uv run blueprint up`)"
    else:  # dev: only an `up` records preserveData for its destroy, and this checkout's `up` is refused
        way = (
            f"Take it down keeping the data, from the checkout that brought it up (blueprint {release}): `{ENV_STEP} && "
            f"pulumi config set -s {stack} blueprint:preserveData true && pulumi up -s {stack} && "
            f"pulumi destroy -s {stack}`; then run `pulumi up -s {stack}` from this one"
        )
    return (
        f"stack {stack} is up, and blueprint {migration.version}'s migration of its data ({migration.summary}) must not run "
        f"under its running platform; nothing was changed. {way}"
    )


def _data_layout(stack: str, records: LayoutRecords, folder: str | None, owner: str) -> str | None:
    """The layout record beside `stack`'s data (None: none, or no folder), refused when it cannot be
    read, is no version or is newer than this checkout.
    """
    if folder is None:
        return None
    record = layout_file(folder)
    try:
        laid_out = records.read(folder, owner)
    except OSError as error:
        raise pulumi.RunError(
            f"stack {stack} reads its data's layout from {record}, which it cannot read "
            f"({error.strerror or type(error).__name__}); nothing was changed. Give it back to your user, readable "
            f"(one line, X.Y.Z: the release of the last migration that ran over that data, or {BASE_LAYOUT})"
        ) from None
    if laid_out is not None and (problem := layout_refusal(stack, laid_out, str(record))):
        raise pulumi.RunError(problem)
    return laid_out
