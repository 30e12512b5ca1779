"""One pass over everything a stack reads, before anything exists.

A stack is refused, with every problem at once, when any key it is given is wrong (no namespace, a
misspelt namespace or key, a key set on a stack that does not read it), when any
value of a phase it runs is wrong, or, when it runs phase2 or phase3, when `apps/apps_manifest.yaml`
is. The program runs it first, before its first resource (even before it reads its upstream
stack); `blueprint plan`, `up`, `preview` and `doctor` run the same pass first, over every stack
they select, from the stack files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from pathlib import Path

from stacks import STACK_PHASES
from stacks.config import PROJECT_DIR, ConfigError
from stacks.config.phases import key_problems, value_problems
from stacks.config.schema import keys_set_on, stack_config


def problems(
    stack: str,
    values: Mapping[str, str],
    *,
    set_keys: Set[str],
    secret_keys: Set[str],
    project_dir: Path = PROJECT_DIR,
    given: Set[str] = frozenset(),
    stand_ins: Set[str] = frozenset(),
) -> list[str]:
    """Everything wrong with the config `stack` is given: `values` are the config Pulumi passes it
    (full keys, Pulumi.yaml's defaults included), `set_keys` those the stack sets itself, `given`
    those of them that came from the command line (`--config`). The manifest's are `manifest_problems`.
    """
    found = key_problems(stack, values, set_keys=set_keys, secret_keys=secret_keys, given=given)
    found += value_problems(stack, values, secret_keys=secret_keys, project_dir=project_dir, given=given, stand_ins=stand_ins)
    return found


def reads_manifest(stack: str) -> bool:
    """Whether `stack` reads `apps/apps_manifest.yaml` (it runs phase2, for the apps' names, or phase3)."""
    return bool({"phase2", "phase3"} & set(STACK_PHASES[stack]))


def pushes_apps(stack: str) -> bool:
    """Whether `stack` pushes the apps' files (it runs phase3): phase2 reads only the manifest's names."""
    return "phase3" in STACK_PHASES[stack]


def manifest_problems(manifest: Path | None = None, *, files: bool = True) -> list[str]:
    """Everything wrong with the apps manifest (`apps_manifest.MANIFEST` by default), and with
    `files`, the folders and files it names.
    """
    from apps_manifest import ManifestError, load_manifest

    try:
        load_manifest(manifest, files=files)
    except ManifestError as error:
        return str(error).removeprefix("invalid apps manifest:\n  ").split("\n  ")
    return []


def message(problems_by_stack: Mapping[str, Sequence[str]], manifest: Sequence[str] = (), readers: Sequence[str] = ()) -> str:
    """All problems: each stack's config's under its name, then the apps manifest's (`manifest`) under
    its own, with the stacks that read it (`readers`): it is no one stack's, and a problem of it is said
    once, however many stacks read it. Then that nothing was changed.
    """
    lines = [""]
    said: set[str] = set()
    sections = [(f"stack {stack}:", found) for stack, found in problems_by_stack.items()]
    sections.append((f"the apps manifest (read by {' and '.join(readers)}):", manifest))
    for heading, found in sections:
        new = [problem for problem in dict.fromkeys(found) if problem not in said]
        said.update(new)
        if new:
            lines.append(heading)
            lines += [f"  {problem}" for problem in new]
    lines[0] = f"{len(said)} problem{'s' if len(said) != 1 else ''} in what blueprint reads; nothing was created or changed:"
    return "\n".join(lines)


def check_stack_files(stacks: Sequence[str], overrides: Mapping[str, Mapping[str, str]] = {}) -> str | None:
    """The problems of every stack in `stacks`, read from its stack file (and `overrides`, by stack:
    what `--config` gives it), and of the apps manifest when one of them reads it, as one message;
    None when there is none. What `blueprint plan`, `up`, `preview` and `doctor` say first.
    """
    found: dict[str, list[str]] = {}
    for stack in stacks:
        given = overrides.get(stack, {})
        try:
            values, secret = stack_config(stack, given)
            set_keys = keys_set_on(stack, values) | set(given)
            # A secret of the stack file is a stand-in here (the CLI cannot decrypt it); the program checks the real one.
            found[stack] = problems(stack, values, set_keys=set_keys, secret_keys=set(secret), given=set(given), stand_ins=set(secret))
        except ConfigError as error:  # a stack file that is not YAML, or not a mapping
            found[stack] = [str(error)]
    readers = [stack for stack in stacks if reads_manifest(stack)]
    manifest = manifest_problems(files=any(pushes_apps(stack) for stack in readers)) if readers else []
    return message(found, manifest, readers) if any(found.values()) or manifest else None


def check_running_stack(stack: str) -> None:
    """Refuse the running program's stack, before its first resource, when anything it reads is wrong."""
    from stacks.config import NAMESPACE
    from stacks.config.schema import passed_config, passed_secret_keys, stand_in_keys

    values = passed_config()
    stand_ins = {f"{NAMESPACE}:{key}" for key in stand_in_keys()}
    found = problems(stack, values, set_keys=keys_set_on(stack, values), secret_keys=passed_secret_keys(), stand_ins=stand_ins)
    manifest = manifest_problems(files=pushes_apps(stack)) if reads_manifest(stack) else []
    if found or manifest:
        raise ConfigError(message({stack: found}, manifest, [stack]))
