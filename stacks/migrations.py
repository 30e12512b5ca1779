"""Every upgrade of a stack's data from one blueprint release to the next: MIGRATIONS.

Two records say where a stack stands. Its output `blueprintVersion`, the release that last brought it
up (written at the end of an `up`; every `pulumi destroy` deletes it). And the layout record beside its
data (stacks/layout_record.py), which a destroy that keeps the data keeps. Before anything is
registered, the program reads both back: a release or a layout newer than this checkout
(versions.BLUEPRINT) is refused, nothing changed; else the migrations of the stack's phases past the
data's layout (past the state's release where the data has no record: phase3) run in version order (a
preview names them). Each version's migrations run between two records: `X.Y.Z migrating` before, so
an older checkout is refused over data they may have half changed and the next `up` runs them again;
`X.Y.Z` once they returned.

A Migration upgrades what the engine does not hold: data and host-side layout (a moved folder, a
changed file format); never state (a new name or parent is an alias; a dynamic provider's module path
never moves). Each comes with a CHANGELOG line and bumps versions.BLUEPRINT to its `version` (none
beyond it). It is idempotent and does nothing where there is nothing to upgrade (a failed `up` runs it
again); for what it cannot upgrade it raises a pulumi.RunError naming the fix. One that must not run
under a running platform tells "up" by the stack's cluster lease or resources, never by its outputs
(a first `up` that failed left pods and no outputs).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pulumi

import versions
from stacks import STACK_PHASES, outputs, runtime
from stacks.config.paths import folder_owner
from stacks.config.schema import ENV_STEP
from stacks.layout_record import BASE_LAYOUT, LayoutRecords, layout_file, migrating, unfinished

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
    """The stack (`dev` runs every phase: a migration of several phases' data acts on those it runs)."""
    folder: str | None
    """The host folder beside whose data the layout is recorded, or None (phase3)."""
    layout: str
    """The layout the migrations start from: the record beside the stack's data (`X.Y.Z migrating`
    when X.Y.Z's migration stopped half-way), or, where there is none (phase3), the release its state
    records."""


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

    def __post_init__(self) -> None:
        parse(self.version)
        every = STACK_PHASES["dev"]
        if not self.phases or not set(self.phases) <= set(every):
            raise ValueError(f"a migration names the phases whose data it migrates, of {every}; got {self.phases!r}")


MIGRATIONS: tuple[Migration, ...] = ()
"""Every migration, oldest first. Empty since 0.1.0, the first release: nothing before it is upgraded."""


def _of(stack: str) -> list[Migration]:
    """The migrations of the data of `stack`: those of a phase it runs."""
    return [migration for migration in MIGRATIONS if set(migration.phases) & set(STACK_PHASES[stack])]


def layout(stack: str) -> str:
    """The layout this checkout leaves `stack`'s data in, once its migrations ran: the newest version
    of a migration of one of its phases, else BASE_LAYOUT. What the claim of its folders records.
    """
    return max((migration.version for migration in _of(stack)), key=parse, default=BASE_LAYOUT)


def pending(since: str, current: str, stack: str, *, again: bool = False) -> tuple[Migration, ...]:
    """The migrations an `up` of release `current` runs over `stack`'s data, laid out as release
    `since` left it (`again`: those to `since` too, which stopped half-way), in version order (the
    table's order among those to one version); a ValueError for a malformed version.
    """
    after, upto = parse(since), parse(current)
    due = [m for m in _of(stack) if after < parse(m.version) <= upto or (again and parse(m.version) == after)]
    return tuple(sorted(due, key=lambda m: parse(m.version)))


def _stopped(record: str) -> str | None:
    """The version whose migrations `record` says stopped half-way (`X.Y.Z migrating`), or None."""
    version = unfinished(record)
    return version if version is not None and _VERSION.fullmatch(version) else None


def _newer(recorded: object) -> bool | None:
    """Whether `recorded` is a release newer than this checkout; None when it is no version."""
    try:
        return parse(recorded) > parse(versions.BLUEPRINT)
    except ValueError:
        return None


def _refusal(recorded: object, *, record: str, subject: str, fix: str, stopped: bool = False) -> str | None:
    """Why this checkout must not act on `subject`, which `record` says release `recorded` shaped last
    (`stopped`: its migration stopped half-way): a newer release, or no version at all (`fix`: what to
    write instead); None for this release or an older one.
    """
    newer = _newer(recorded)
    if newer is None:
        return (
            f"{record} records {recorded!r:.60}, which is not a blueprint version (X.Y.Z), so blueprint cannot tell which "
            f"release shaped {subject}; nothing was changed. Something other than blueprint wrote it: {fix}"
        )
    if not newer:
        return None
    half = f" (its migration of {subject} stopped half-way)" if stopped else ""
    return (
        f"{record} records blueprint {recorded}{half}, newer than this checkout ({versions.BLUEPRINT}), which cannot know "
        f"what {recorded} changed in {subject}; nothing was changed. Update this checkout (`git pull`), or run "
        f"blueprint {recorded}'s checkout"
    )


def refusal(stack: str, recorded: object) -> str | None:
    """Why this checkout must not act on `stack`, whose state says release `recorded` last brought it
    up (`_refusal`). What the program and the CLI's pre-flight both say.
    """
    return _refusal(
        recorded,
        record=f"stack {stack}'s {outputs.BLUEPRINT_VERSION}",
        subject="its state and data",
        fix=f"set it to the release that last brought the stack up (in a shell that ran `{ENV_STEP}`: "
        f"`pulumi stack export -s {stack}`, in the root "
        f"stack's outputs, then `pulumi stack import -s {stack}`)",
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


async def bring_up_to_date(stack: str, folder: str | None) -> None:
    """Read back the release that last brought `stack` up, from its state (a StackReference to
    itself), and its data's layout, from beside its data in `folder` (None: phase3, none), then
    refuse, run the pending migrations, or (a preview) name them: the module docstring says which when.
    """
    reference = pulumi.StackReference(outputs.stack_name(pulumi.get_project(), stack))
    release = dict(await reference.outputs.future() or {}).get(outputs.BLUEPRINT_VERSION)
    if release is not None and (problem := refusal(stack, release)):
        raise pulumi.RunError(problem)
    records = runtime.current().layout_records
    owner = folder_owner(stack)
    data = _data_layout(stack, records, folder, owner)
    since = data if data is not None else release
    if since is None:
        return  # a new stack: nothing to migrate
    stopped = _stopped(since)
    due = pending(stopped or since, versions.BLUEPRINT, stack, again=stopped is not None)
    if not due:
        return
    if pulumi.runtime.is_dry_run():
        state = f"was left half-way through blueprint {stopped}'s migration" if stopped else f"is laid out as blueprint {since} left it"
        listed = "; ".join(f"({migration.version}) {migration.summary}" for migration in due)
        pulumi.log.warn(f"stack {stack}'s data {state}: its `up` first migrates it: {listed}")
        return
    context = MigrationContext(stack=stack, folder=folder, layout=str(since))
    for version, group in itertools.groupby(due, key=lambda migration: migration.version):
        # Recorded before and after: from the first change on, an older checkout, which cannot read what
        # this version does, is refused over the data; and one cut short runs again in the next `up`.
        if folder is not None:
            records.write(folder, owner, migrating(version))
        for migration in group:
            migration.run(context)
            pulumi.log.info(f"stack {stack}: migrated to blueprint {version}: {migration.summary}")
        if folder is not None:
            records.write(folder, owner, version)


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
    if laid_out is None:
        return None
    stopped = _stopped(laid_out)
    problem = _refusal(
        stopped or laid_out,
        record=f"{record}, beside stack {stack}'s data,",
        subject="that data",
        fix=f"write into it the release of the last migration that ran over that data (one line, X.Y.Z; CHANGELOG.md "
        f"names each), or {BASE_LAYOUT} if none did",
        stopped=stopped is not None,
    )
    if problem:
        raise pulumi.RunError(problem)
    return laid_out
