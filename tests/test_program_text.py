"""What the program says to its users (its messages and help, its config descriptions, its scripts'
echoes, the stack files' comments) and the pages they read (README.md, CHANGELOG.md, docs/) name each
command as a user runs it on a fresh machine: `uv run blueprint <verb>` (a bare `blueprint` is found
only inside the project's environment), and a plain `pulumi config set` only after
`eval "$(uv run blueprint env)"`, which gives it blueprint's passphrase and Pulumi CLI; a page shows
the edit of the stack file before it."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from pathlib import Path

import yaml

from cli.main import VERBS
from providers.http import PLAIN_PULUMI
from stacks.config import PROJECT_DIR
from stacks.config.schema import ENV_STEP
from tests.python_source import nodes

PROGRAM = ("cli", "stacks", "providers", "components")
"""The folders of the program's own code (apps/ holds the sample apps, not blueprint's)."""
BARE = re.compile(rf"(?<!uv run )\bblueprint (?:{'|'.join(VERBS)})\b")
PAGES = sorted([PROJECT_DIR / "README.md", PROJECT_DIR / "CHANGELOG.md", *(PROJECT_DIR / "docs").rglob("*.md")])
"""The pages a user reads (docs/reference/ is generated, by the program: held to the same rules)."""
PLAIN = re.compile(r"\bpulumi (?:destroy|up|refresh|cancel|stack (?:export|import)|state) [^`']*-s\b")
"""A plain `pulumi` command on a stack, which needs the env step as much as `pulumi config set` does."""
NAMED = {"ENV_STEP": ENV_STEP, "PLAIN_PULUMI": PLAIN_PULUMI}
"""The constants that name the env step, as an f-string field: read as their text."""
FENCE = re.compile(r"^ *```(\w*)[^\n]*\n(.*?)^ *```", re.MULTILINE | re.DOTALL)


def strings(source: str, name: str) -> Iterator[tuple[str, str]]:
    """(where, text) for every string of the module `name`, whose code is `source`, a user may read: each literal, and each f-string
    with its fields as `{}` (one that is `ENV_STEP` or `PLAIN_PULUMI`, as what it says). Not the docstrings, nor any
    string that is a statement of its own (an attribute's docstring): those are for its readers."""
    walked = nodes(source)
    for_readers = {id(node.value) for node in walked if isinstance(node, ast.Expr)}
    inside = {id(part) for node in walked if isinstance(node, ast.JoinedStr) for part in node.values}
    for node in walked:
        if id(node) in for_readers or id(node) in inside:
            continue
        if isinstance(node, ast.JoinedStr):
            text = "".join(
                str(part.value)
                if isinstance(part, ast.Constant)
                else NAMED[part.value.id]
                if isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name) and part.value.id in NAMED
                else "{}"
                for part in node.values
            )
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        yield f"{name}:{node.lineno}", text


@functools.cache
def program_strings() -> tuple[tuple[str, str], ...]:
    """strings() of every module of the program, read once a process (three rules read them)."""
    return tuple(
        found
        for folder in PROGRAM
        for path in sorted((PROJECT_DIR / folder).rglob("*.py"))
        for found in strings(path.read_text(), str(path.relative_to(PROJECT_DIR)))
    )


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


def echoed_lines() -> Iterator[tuple[str, str]]:
    """(where, text) for every command of the program's shell scripts, as it echoes it: an escaped
    quote or dollar inside its double quotes read as the character the user sees."""
    for path in sorted(path for folder in PROGRAM for path in (PROJECT_DIR / folder).rglob("*.sh")):
        for where, line in script_lines(path):
            yield where, line.replace('\\"', '"').replace("\\$", "$")


def descriptions() -> Iterator[tuple[str, str]]:
    for key, spec in yaml.safe_load((PROJECT_DIR / "Pulumi.yaml").read_text())["config"].items():
        yield f"Pulumi.yaml {key}", str(spec.get("description", ""))


def unprepared(unit: str) -> bool:
    """Whether `unit` shows `pulumi config set` with no env step before it."""
    return "pulumi config set" in unit and ENV_STEP not in unit.split("pulumi config set", 1)[0]


def test_every_blueprint_command_the_program_shows_is_run_with_uv_run() -> None:
    shown = [*program_strings(), *descriptions()]
    bare = [(where, span) for where, text in shown for span in re.findall(r"`[^`]*`", text) if BARE.search(span)]
    bare += [(where, text.strip()) for where, text in echoed_lines() if BARE.search(text)]
    assert bare == []


def test_the_program_shows_pulumi_config_set_only_after_blueprint_env() -> None:
    """Before the first up, `pulumi` is not on the shell's PATH, or creates the stack with a passphrase
    of its own that blueprint cannot decrypt."""
    found = [(where, text.strip()) for where, text in (*program_strings(), *echoed_lines()) if unprepared(text)]
    assert found == []


def unprepared_command(text: str) -> bool:
    """Whether `text`, one message, shows a plain `pulumi <verb> -s <stack>` and nowhere the env step."""
    return bool(PLAIN.search(text)) and ENV_STEP not in text


def test_every_plain_pulumi_command_the_program_shows_comes_with_the_env_step() -> None:
    """A fresh shell has no `pulumi` on its PATH, and no passphrase: Pulumi would prompt for one the
    user never chose."""
    shown = (*program_strings(), *echoed_lines())
    assert [(where, text[:80]) for where, text in shown if unprepared_command(text)] == []


def test_the_checks_here_find_a_bare_command_and_an_unprepared_pulumi() -> None:
    source = (
        '"""`blueprint up` in a docstring is for its readers."""\n'
        'A = f"run `blueprint doctor --fix` for {x}"\n'
        'B = "fix: `pulumi config set -s phase1 blueprint:headlamp true`"\n'
        'C = f"then `{ENV_STEP}`, then `pulumi config set -s phase1 blueprint:headlamp true`"\n'
        'D = f"run `pulumi up -s {stack}` again"\n'
        'E = f"run `pulumi refresh -s {stack}` ({PLAIN_PULUMI})"\n'
    )
    found = [text for _, text in strings(source, "messages.py")]
    assert [text for text in found if unprepared_command(text)] == ["run `pulumi up -s {}` again"]
    assert [text for text in found if any(BARE.search(span) for span in re.findall(r"`[^`]*`", text))] == [
        "run `blueprint doctor --fix` for {}"
    ]
    assert [text for text in found if unprepared(text)] == ["fix: `pulumi config set -s phase1 blueprint:headlamp true`"]


def page_units(text: str) -> Iterator[tuple[str, str]]:
    """(kind, text) for each piece of a page a reader takes as one: a fenced block (its info string
    the kind: `sh`, `mermaid`, ...), and each paragraph of the prose around them ("prose")."""
    yield from ((match[1], match[2]) for match in FENCE.finditer(text))
    yield from (("prose", paragraph) for paragraph in re.split(r"\n\s*\n", FENCE.sub("", text)))


def shown_in(text: str) -> Iterator[str]:
    """What a reader may copy from a page into a shell: each inline code span of the prose, and each
    line of a shell block without its comment (a diagram's labels and a layout are no commands)."""
    for kind, unit in page_units(text):
        if kind == "prose":
            yield from re.findall(r"`[^`]+`", unit)
        elif kind in ("sh", "shell", "bash"):
            yield from (re.sub(r"(?:^|\s)#.*", "", line).strip() for line in unit.splitlines())


def read_by_users() -> Iterator[tuple[str, str]]:
    """(where, unit) for each unit of every page, and each stack file, whose comments a user reads."""
    for path in [*PAGES, *sorted(PROJECT_DIR.glob("Pulumi.*.yaml"))]:
        text = path.read_text()
        for unit in [unit for _, unit in page_units(text)] if path.suffix == ".md" else [text]:
            yield str(path.relative_to(PROJECT_DIR)), unit


def edit_not_first(text: str) -> bool:
    """Whether a page shows `pulumi config set` before the edit of the stack file's `config: {}`."""
    return "pulumi config set" in text and "config: {}" not in text.split("pulumi config set", 1)[0]


def test_every_blueprint_command_a_page_shows_is_run_with_uv_run() -> None:
    shown = [(str(page.relative_to(PROJECT_DIR)), text) for page in PAGES for text in shown_in(page.read_text())]
    assert ("README.md", "uv run blueprint up") in shown
    assert [(where, text) for where, text in shown if BARE.search(text)] == []


def test_a_page_shows_pulumi_config_set_only_after_blueprint_env() -> None:
    assert [(where, unit.strip()) for where, unit in read_by_users() if unprepared(unit)] == []


def test_a_page_shows_the_stack_files_edit_before_pulumi_config_set() -> None:
    """The first way to set a key needs nothing: the stack file's shipped `config: {}` replaced."""
    assert [str(page.relative_to(PROJECT_DIR)) for page in PAGES if edit_not_first(page.read_text())] == []


def test_the_page_checks_find_a_bare_command_an_unprepared_pulumi_and_no_edit_first() -> None:
    page = (
        "Run `blueprint up`, or `uv run blueprint preview`.\n\n"
        "```sh\nblueprint doctor   # not `uv run blueprint doctor`\n```\n\n"
        "```mermaid\nflowchart LR\n  a[blueprint up] --> b\n```\n\n"
        "Then `pulumi config set -s phase1 blueprint:headlamp true`.\n"
    )
    assert sorted(text for text in shown_in(page) if BARE.search(text)) == ["`blueprint up`", "blueprint doctor"]
    assert [unit.strip() for _, unit in page_units(page) if unprepared(unit)] == [
        "Then `pulumi config set -s phase1 blueprint:headlamp true`."
    ]
    assert edit_not_first(page)
    assert not edit_not_first("Replace `config: {}`.\n\n" + f"`{ENV_STEP}`, then `pulumi config set`.")
