"""What the program says to its users (its messages and help, its config descriptions, its scripts'
echoes) names each command as a user runs it on a fresh machine: `uv run blueprint <verb>` (a bare
`blueprint` is found only inside the project's environment), and a plain `pulumi config set` only
after `eval "$(uv run blueprint env)"`, which gives it blueprint's passphrase and Pulumi CLI."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import yaml

from cli.main import VERBS
from stacks.config import PROJECT_DIR
from stacks.config.schema import ENV_STEP

PROGRAM = ("cli", "stacks", "providers", "components")
"""The folders of the program's own code (apps/ holds the sample apps, not blueprint's)."""
BARE = re.compile(rf"(?<!uv run )\bblueprint (?:{'|'.join(VERBS)})\b")


def strings(source: str, name: str) -> Iterator[tuple[str, str]]:
    """(where, text) for every string of the module `name`, whose code is `source`, a user may read: each literal, and each f-string
    with its fields as `{}` (one that is `ENV_STEP`, as that step). Not the docstrings, nor any
    string that is a statement of its own (an attribute's docstring): those are for its readers."""
    tree = ast.parse(source)
    for_readers = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    inside = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
    for node in ast.walk(tree):
        if id(node) in for_readers or id(node) in inside:
            continue
        if isinstance(node, ast.JoinedStr):
            text = "".join(
                str(part.value)
                if isinstance(part, ast.Constant)
                else ENV_STEP
                if isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name) and part.value.id == "ENV_STEP"
                else "{}"
                for part in node.values
            )
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        yield f"{name}:{node.lineno}", text


def program_strings() -> Iterator[tuple[str, str]]:
    for folder in PROGRAM:
        for path in sorted((PROJECT_DIR / folder).rglob("*.py")):
            yield from strings(path.read_text(), str(path.relative_to(PROJECT_DIR)))


def script_lines(path: Path) -> Iterator[tuple[str, str]]:
    """(where, text) for every command of a shell script, its continued lines joined, no comment."""
    number, pending = 0, ""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.lstrip().startswith("#"):
            continue
        pending += line
        if not line.endswith("\\"):
            yield f"{path.relative_to(PROJECT_DIR)}:{number}", pending
            pending = ""


def descriptions() -> Iterator[tuple[str, str]]:
    for key, spec in yaml.safe_load((PROJECT_DIR / "Pulumi.yaml").read_text())["config"].items():
        yield f"Pulumi.yaml {key}", str(spec.get("description", ""))


def test_every_blueprint_command_the_program_shows_is_run_with_uv_run() -> None:
    shown = [*program_strings(), *descriptions()]
    bare = [(where, span) for where, text in shown for span in re.findall(r"`[^`]*`", text) if BARE.search(span)]
    scripts = [line for folder in PROGRAM for path in sorted((PROJECT_DIR / folder).rglob("*.sh")) for line in script_lines(path)]
    bare += [(where, text.strip()) for where, text in scripts if BARE.search(text)]
    assert bare == []


def test_the_program_shows_pulumi_config_set_only_after_blueprint_env() -> None:
    """Before the first up, `pulumi` is not on the shell's PATH, or creates the stack with a passphrase
    of its own that blueprint cannot decrypt."""
    unprepared = [
        (where, text)
        for where, text in program_strings()
        if "pulumi config set" in text and ENV_STEP not in text.split("pulumi config set", 1)[0]
    ]
    for path in sorted(p for folder in PROGRAM for p in (PROJECT_DIR / folder).rglob("*.sh")):
        for where, line in script_lines(path):
            echoed = line.replace('\\"', '"').replace("\\$", "$")
            if "pulumi config set" in echoed and ENV_STEP not in echoed.split("pulumi config set", 1)[0]:
                unprepared.append((where, line.strip()))
    assert unprepared == []


def test_the_checks_here_find_a_bare_command_and_an_unprepared_pulumi() -> None:
    source = (
        '"""`blueprint up` in a docstring is for its readers."""\n'
        'A = f"run `blueprint doctor --fix` for {x}"\n'
        'B = "fix: `pulumi config set -s phase1 blueprint:headlamp true`"\n'
        'C = f"then `{ENV_STEP}`, then `pulumi config set -s phase1 blueprint:headlamp true`"\n'
    )
    found = [text for _, text in strings(source, "messages.py")]
    assert [text for text in found if any(BARE.search(span) for span in re.findall(r"`[^`]*`", text))] == [
        "run `blueprint doctor --fix` for {}"
    ]
    assert [text for text in found if "pulumi config set" in text and ENV_STEP not in text] == [
        "fix: `pulumi config set -s phase1 blueprint:headlamp true`"
    ]
