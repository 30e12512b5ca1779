"""Every upgrade of a stack's data from one blueprint release to the next: MIGRATIONS.

Two records say which release last brought a stack up. Its output `blueprintVersion`: the engine
writes a stack's outputs at the end of an `up`, once every export resolved (an `up` that fails after
that merges them in), and every `pulumi destroy` deletes them. And `.blueprint-release` beside its
data (stacks/release_record.py), which a destroy that keeps the data keeps, written early: by the
claim of the folder, and by `bring_up_to_date` before anything else of the `up`. Before anything is
registered, the program reads both back: none (a new platform): nothing to do; the newer of them
newer than this checkout (versions.BLUEPRINT): refused, nothing changed; the older of them older:
the migrations past it run in version order (a preview only names them), and the `up` goes on.

A Migration upgrades what the engine does not hold: data and host-side layout (a moved folder, a
changed file format). It cannot change state (the engine holds it through the `up`; outputs are
read-only): a resource's new name or parent is an alias in the program, and a dynamic provider's
module path never moves (state pickles it). Each comes with a CHANGELOG line and bumps
versions.BLUEPRINT to its `version` (none beyond it); nothing else upgrades. It must be idempotent
and do nothing where there is nothing to upgrade (after an `up` that failed, the next runs it
again); for what it cannot upgrade it raises a pulumi.RunError naming the fix.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pulumi

import versions
from stacks import outputs, runtime
from stacks.config.paths import folder_owner
from stacks.release_record import ReleaseRecords, record_file

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
    """The phases the stack runs (`dev`: all three): a migration of one phase's data acts where it runs."""
    recorded: str
    """The release that last brought the stack up: the older of its two records."""
    outputs: Mapping[str, Any]
    """The stack's outputs from its last `up`, secret ones left out; none after a destroy that kept the data."""
    folder: str | None
    """The host folder beside whose data the release is recorded (`record_folder`), or None (phase3)."""


@dataclass(frozen=True, kw_only=True)
class Migration:
    """One upgrade, to release `version`, of data that an earlier release wrote."""

    version: str
    """The release it upgrades to: it runs in an `up` of that release or a later one, over a stack an
    earlier one recorded."""
    summary: str
    """One line: what it changes (a preview names it; its CHANGELOG line says the same)."""
    run: Callable[[MigrationContext], None]
    """Does it: idempotent, and nothing where there is nothing to upgrade."""

    def __post_init__(self) -> None:
        parse(self.version)


MIGRATIONS: tuple[Migration, ...] = ()
"""Every migration, oldest first. Empty since 0.1.0, the first release: nothing before it is upgraded."""


def pending(recorded: str, current: str) -> tuple[Migration, ...]:
    """The migrations an `up` of release `current` runs over a stack `recorded` last brought up, in
    version order (the table's order among those to one version); a ValueError for a malformed version.
    """
    after, upto = parse(recorded), parse(current)
    return tuple(sorted((m for m in MIGRATIONS if after < parse(m.version) <= upto), key=lambda m: parse(m.version)))


def refusal(stack: str, recorded: object, *, record: str | None = None) -> str | None:
    """Why this checkout must not act on `stack`, which release `recorded` last brought up (as its
    state says, or the file `record` beside its data): a newer release, or no version at all; None
    for this release or an older one. What the program and the CLI's pre-flight both say.
    """
    try:
        newer = parse(recorded) > parse(versions.BLUEPRINT)
    except ValueError:
        if record is not None:
            return (
                f"{record}, beside stack {stack}'s data, records {recorded!r:.60}, which is not a blueprint version (X.Y.Z), so "
                f"blueprint cannot tell what that data needs; nothing was changed. Something other than blueprint wrote it: "
                f"write the release that last brought the stack up into it (one line, X.Y.Z)"
            )
        return (
            f"stack {stack} records {outputs.BLUEPRINT_VERSION} {recorded!r:.60}, which is not a blueprint version (X.Y.Z), so "
            f"blueprint cannot tell what its state and data need; nothing was changed. Something other than blueprint wrote "
            f"it: set it to the release that last brought the stack up (`pulumi stack export -s {stack}`, in the root "
            f"stack's outputs, then `pulumi stack import -s {stack}`)"
        )
    if not newer:
        return None
    where = "" if record is None else f" (so says {record}, beside its data)"
    return (
        f"stack {stack} was last brought up by blueprint {recorded}{where}, newer than this checkout ({versions.BLUEPRINT}), "
        f"which cannot know what {recorded} changed in its state and data; nothing was changed. Update this checkout "
        f"(`git pull`), or run the checkout that brought the stack up"
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


def record_folder(phases: tuple[str, ...], inputs: Mapping[str, Any]) -> str | None:
    """The host folder whose release record a stack that runs `phases` reads (`inputs`: its upstream's
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
    itself) and from beside its data (`record_folder`; `inputs`: its upstream's outputs), then refuse,
    run the pending migrations, or (a preview) name them: the module docstring says which when.
    """
    reference = pulumi.StackReference(outputs.stack_name(pulumi.get_project(), stack))
    last: dict[str, Any] = dict(await reference.outputs.future() or {})
    folder = record_folder(phases, inputs)
    records = runtime.current().release_records
    owner = folder_owner(stack)
    data = _data_record(stack, records, folder, owner)
    found: dict[str | None, Any] = {None: last[outputs.BLUEPRINT_VERSION]} if outputs.BLUEPRINT_VERSION in last else {}
    if folder is not None and data is not None:
        found[str(record_file(folder))] = data
    for where, recorded in found.items():
        if problem := refusal(stack, recorded, record=where):
            raise pulumi.RunError(problem)
    oldest = min(found.values(), key=parse) if found else None
    due = pending(oldest, versions.BLUEPRINT) if oldest is not None else ()
    if pulumi.runtime.is_dry_run():
        if due:
            pulumi.log.warn(
                f"stack {stack} was last brought up by blueprint {oldest}: its `up` first migrates it to {versions.BLUEPRINT}: "
                + "; ".join(f"({migration.version}) {migration.summary}" for migration in due)
            )
        return
    if due:
        secret = set(await reference.secret_output_names.future() or [])
        shown = {key: value for key, value in last.items() if key not in secret}
        context = MigrationContext(stack=stack, phases=phases, recorded=str(oldest), outputs=shown, folder=folder)
        for migration in due:
            migration.run(context)
            pulumi.log.info(f"stack {stack}: migrated to blueprint {migration.version}: {migration.summary}")
    # Recorded beside the data before anything of this release touches it: an older checkout is refused from now on.
    if folder is not None and data != versions.BLUEPRINT:
        records.write(folder, owner, versions.BLUEPRINT)


def _data_record(stack: str, records: ReleaseRecords, folder: str | None, owner: str) -> str | None:
    if folder is None:
        return None
    try:
        return records.read(folder, owner)
    except OSError as error:
        raise pulumi.RunError(
            f"stack {stack} reads the release that last brought it up from {record_file(folder)}, which it cannot read "
            f"({error.strerror or type(error).__name__}); nothing was changed. Give it back to your user, readable "
            f"(one line, X.Y.Z: the release that last brought the stack up)"
        ) from None
