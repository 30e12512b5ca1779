"""Every upgrade of a stack's state or data from one blueprint release to the next: MIGRATIONS.

Each stack exports the release that last brought it up (outputs.BLUEPRINT_VERSION). Before it
registers anything else, the program reads that record back through a StackReference to its own
stack (`bring_up_to_date`: the engine reads the stack's last checkpoint, whose outputs are those of
the last `up` that completed):
- no record (a new stack, or one no `up` completed): nothing to do;
- newer than this checkout (versions.BLUEPRINT): refused, nothing changed;
- older: the migrations past it, up to this release, run in version order (a preview only names
  them); the `up` then goes on and records this release.

The rule: every change that state or data of the previous release must be upgraded for (a moved or
reshaped data folder, a changed file format, a resource Pulumi cannot alias) is one Migration here,
with a CHANGELOG line, and bumps versions.BLUEPRINT to its `version` (none may be beyond it), so no
checkout that recorded the version before it misses it. Nothing else upgrades. A migration must be
idempotent, and do nothing where there is nothing to upgrade: when the `up` that ran it fails before
the new release is recorded, the next `up` runs it again. For what it cannot upgrade it raises a
pulumi.RunError naming the fix.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pulumi

import versions
from stacks import outputs

Version = tuple[int, int, int]
_VERSION = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)")


def parse(text: object) -> Version:
    """`X.Y.Z` (plain integers) as a comparable tuple; a ValueError for anything else."""
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
    """The release that last brought the stack up."""
    outputs: Mapping[str, Any]
    """The stack's outputs from that `up`, secret ones left out."""


@dataclass(frozen=True, kw_only=True)
class Migration:
    """One upgrade, to release `version`, of state or data that an earlier release wrote."""

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


async def bring_up_to_date(stack: str, phases: tuple[str, ...]) -> None:
    """Read what `stack`'s last `up` recorded, through a StackReference to itself, then refuse, run
    the pending migrations, or (a preview) name them: the module docstring says which when.
    """
    reference = pulumi.StackReference(outputs.stack_name(pulumi.get_project(), stack))
    last: dict[str, Any] = dict(await reference.outputs.future() or {})
    if outputs.BLUEPRINT_VERSION not in last:
        return
    recorded = last[outputs.BLUEPRINT_VERSION]
    try:
        newer = parse(recorded) > parse(versions.BLUEPRINT)
    except ValueError:
        raise pulumi.RunError(
            f"stack {stack} records {outputs.BLUEPRINT_VERSION} {recorded!r:.60}, which is not a blueprint version (X.Y.Z), so "
            f"blueprint cannot tell what its state and data need; nothing was changed. Something other than blueprint wrote "
            f"it: set it to the release that last brought the stack up (`pulumi stack export -s {stack}`, in the root "
            f"stack's outputs, then `pulumi stack import -s {stack}`)"
        ) from None
    if newer:
        raise pulumi.RunError(
            f"stack {stack} was last brought up by blueprint {recorded}, newer than this checkout ({versions.BLUEPRINT}), "
            f"which cannot know what {recorded} changed in its state and data; nothing was changed. Update this checkout "
            f"(`git pull`), or run the checkout that brought the stack up"
        )
    due = pending(recorded, versions.BLUEPRINT)
    if not due:
        return
    if pulumi.runtime.is_dry_run():
        pulumi.log.warn(
            f"stack {stack} was last brought up by blueprint {recorded}: its `up` first migrates it to {versions.BLUEPRINT}: "
            + "; ".join(f"({migration.version}) {migration.summary}" for migration in due)
        )
        return
    secret = set(await reference.secret_output_names.future() or [])
    context = MigrationContext(stack=stack, phases=phases, recorded=recorded, outputs={k: v for k, v in last.items() if k not in secret})
    for migration in due:
        migration.run(context)
        pulumi.log.info(f"stack {stack}: migrated to blueprint {migration.version}: {migration.summary}")
