"""The program stays a size a maintainer can hold in their head: modules of at most 600 lines,
functions of at most 80, shell scripts of at most 100, module docstrings of at most 20 lines (the
long reasoning lives in docs/design/decisions.md). What is over a limit today is named in
ALLOWED_OVER with the size it has: the list may only shrink. An entry that grows fails, and so does
one back under its limit (remove it, so it cannot grow back unseen).
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from stacks.config import PROJECT_DIR
from tests.python_source import parse

MODULE_LINES = 600
FUNCTION_LINES = 80
DOCSTRING_LINES = 20
SCRIPT_LINES = 100
"""A `.sh` file as written (components/scripts.py puts each library a script calls in front of it:
those count in their own files). Shell has one scope and no types: a script is read top to bottom,
holding in mind what each variable holds by then, so it stays at what one reading holds; a part
that stands alone (a check, a refusal) becomes a `lib_<function>.sh`."""

ALLOWED_OVER: Mapping[str, int] = {}
"""`path` (a module) or `path:qualified.name` (a function) -> the lines it has today. Empty since
0.1.0; at most 2 modules and 3 functions may ever be on it."""

SKIPPED = {".venv", ".git", "tests", "node_modules", ".pytest_cache", ".mypy_cache", ".ruff_cache"}


def program_files(root: Path, pattern: str = "*.py") -> list[Path]:
    """Every Python file (or other `pattern`) of the program (the tests are not the program)."""
    if root == PROJECT_DIR or PROJECT_DIR in root.parents:
        return list(_checkouts_files(root, pattern))
    return list(_walked(root, pattern))


@functools.cache
def _checkouts_files(root: Path, pattern: str) -> tuple[Path, ...]:
    """The checkout's files, listed once a process: a dozen rules list them, and no test changes them."""
    return _walked(root, pattern)


def _walked(root: Path, pattern: str) -> tuple[Path, ...]:
    """The skipped folders are never entered: walking .venv, .git and the caches cost more than the rest."""
    found = []
    for folder, folders, files in os.walk(root):
        folders[:] = [name for name in folders if name not in SKIPPED]
        found += [Path(folder, name) for name in files if name not in SKIPPED and fnmatch.fnmatchcase(name, pattern)]
    return tuple(sorted(found))


def _functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, int]]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = f"{prefix}{node.name}"
            if not isinstance(node, ast.ClassDef):
                yield name, (node.end_lineno or node.lineno) - node.lineno + 1
            yield from _functions(node, f"{name}.")
        elif not isinstance(node, ast.expr):  # an expression holds no statement, so no def: not walked (most of a tree)
            yield from _functions(node, prefix)


def sizes(root: Path) -> dict[str, tuple[int, int]]:
    """Every module and function of the program under `root` -> (its lines, its limit)."""
    found: dict[str, tuple[int, int]] = {}
    for path in program_files(root):
        source = path.read_text()
        where = str(path.relative_to(root))
        found[where] = (len(source.splitlines()), MODULE_LINES)
        for name, lines in _functions(parse(source)):
            found[f"{where}:{name}"] = (lines, FUNCTION_LINES)
    for path in program_files(root, "*.sh"):
        found[str(path.relative_to(root))] = (len(path.read_text().splitlines()), SCRIPT_LINES)
    return found


def problems(found: Mapping[str, tuple[int, int]], allowed: Mapping[str, int]) -> list[str]:
    """What breaks the limits or the allowlist's rule, one line each with the fix."""
    said = []
    for where, (lines, limit) in sorted(found.items()):
        if lines > limit and where not in allowed:
            said.append(f"{where} has {lines} lines, over {limit}: split it along its seams")
    for where, recorded in sorted(allowed.items()):
        lines, limit = found.get(where, (0, 0))
        if lines <= limit:
            said.append(f"{where} is no longer over {limit} lines: remove it from ALLOWED_OVER")
        elif lines > recorded:
            said.append(f"{where} grew to {lines} lines from the {recorded} ALLOWED_OVER records: shrink it")
    return said


def test_no_module_or_function_is_over_its_limit_unless_allowed_and_none_allowed_grows() -> None:
    assert problems(sizes(PROJECT_DIR), ALLOWED_OVER) == []


def test_the_allowlist_holds_at_most_two_modules_and_three_functions() -> None:
    functions = [where for where in ALLOWED_OVER if ":" in where]
    assert len(functions) <= 3
    assert len(ALLOWED_OVER) - len(functions) <= 2


def test_a_module_over_the_limit_fails_unless_allowed(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text("x = 1\n" * (MODULE_LINES + 1))
    assert problems(sizes(tmp_path), {}) == [f"big.py has {MODULE_LINES + 1} lines, over {MODULE_LINES}: split it along its seams"]
    assert problems(sizes(tmp_path), {"big.py": MODULE_LINES + 1}) == []


def test_a_shell_script_over_its_limit_fails(tmp_path: Path) -> None:
    (tmp_path / "long.sh").write_text("true\n" * (SCRIPT_LINES + 1))
    assert problems(sizes(tmp_path), {}) == [f"long.sh has {SCRIPT_LINES + 1} lines, over {SCRIPT_LINES}: split it along its seams"]


def test_an_allowed_function_that_grows_fails(tmp_path: Path) -> None:
    body = "".join(f"        x{i} = {i}\n" for i in range(FUNCTION_LINES))
    (tmp_path / "m.py").write_text(f"class C:\n    def long(self) -> None:\n{body}")
    lines = FUNCTION_LINES + 1
    assert sizes(tmp_path)["m.py:C.long"] == (lines, FUNCTION_LINES)
    assert problems(sizes(tmp_path), {"m.py:C.long": lines}) == []
    assert problems(sizes(tmp_path), {"m.py:C.long": lines - 1}) == [
        f"m.py:C.long grew to {lines} lines from the {lines - 1} ALLOWED_OVER records: shrink it"
    ]


def test_an_allowed_entry_back_under_its_limit_must_leave_the_list(tmp_path: Path) -> None:
    (tmp_path / "small.py").write_text("x = 1\n")
    assert problems(sizes(tmp_path), {"small.py": 700}) == [f"small.py is no longer over {MODULE_LINES} lines: remove it from ALLOWED_OVER"]


def test_every_module_docstring_is_at_most_twenty_lines() -> None:
    long = []
    for path in program_files(PROJECT_DIR):
        docstring = ast.get_docstring(parse(path.read_text()), clean=False)
        if docstring and len(docstring.splitlines()) > DOCSTRING_LINES:
            long.append(f"{path.relative_to(PROJECT_DIR)}: {len(docstring.splitlines())} lines")
    assert long == [], f"move the long reasoning to docs/design/decisions.md and link to it: {long}"
