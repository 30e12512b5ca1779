"""The shell scripts the components run, kept as `.sh` files in this folder and read at plan time.

A script's whole text becomes its command's input (a `local.Command`'s `create`, `update` or
`delete`): the plan shows it, and Pulumi's state records it, so a `delete` runs the text recorded
then, never a file that may have changed since. Values reach a script as environment variables,
never inside its text.

Names: `<module>_<what>.sh` is a script of `components/<module>.py`; `lib_<function>.sh` defines
the shell function `<function>`, which scripts share: it is written in front of each script that
calls it (found in the script's text, not listed by hand), so every registered script stands
alone. All are POSIX sh (`.shellcheckrc`), and the suite runs shellcheck over them and over every
script text of every plan (`tests/test_shell.py`).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

FOLDER = Path(__file__).parent


def libraries() -> dict[str, str]:
    """Each shell function of a `lib_<function>.sh`, with that file's text."""
    return {path.stem.removeprefix("lib_"): path.read_text() for path in sorted(FOLDER.glob("lib_*.sh"))}


def calls(text: str, function: str) -> bool:
    """Whether `text` names `function` as a command (a comment aside): at a line's start, or after
    `$(`, `;`, `|`, `&`, `!`, `(`, `then`, `do`, `else`.
    """
    code = "\n".join(line.split(" #", 1)[0] for line in text.splitlines() if not line.lstrip().startswith("#"))
    return re.search(rf"(^|\$\(|[;|&!(]|\b(then|do|else))\s*{re.escape(function)}(?=$|[\s;)|&])", code, re.MULTILINE) is not None


@cache
def script(name: str) -> str:
    """The text of the script `name` (`<module>_<what>.sh`), after the text of each library whose
    function it calls, or a library before it calls: one script that needs nothing beside it.
    """
    body = (FOLDER / name).read_text()
    found = libraries()
    needed: list[str] = []
    todo = [body]
    while todo:
        text = todo.pop()
        for function, library in found.items():
            if function not in needed and calls(text, function):
                needed.append(function)
                todo.append(library)
    # In a fixed order, so a script's text (and the plan) changes only with its own or a library's;
    # any order works, as a library only defines its function.
    return "".join(found[function] for function in sorted(needed, reverse=True)) + body
