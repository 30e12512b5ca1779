"""The shell scripts the components run, kept as `.sh` files in this folder and read at plan time.

A script's whole text becomes its command's input (a `local.Command`'s `create`, `update` or
`delete`): the plan shows it, and Pulumi's state records it, so a `delete` runs the text recorded
then, never a file that may have changed since. Values reach a script as environment variables,
never inside its text.

Names: `<module>_<what>.sh` is a script of `components/<module>.py`; `lib_<function>.sh` defines
a shell function that scripts share, written in front of each script that calls it (`uses`), so
every registered script stands alone. All are POSIX sh (`.shellcheckrc`), and the suite runs
shellcheck over them and over every script text of every plan (`tests/test_shell.py`).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

FOLDER = Path(__file__).parent


@cache
def script(name: str, *, uses: tuple[str, ...] = ()) -> str:
    """The text of the script `name` (`<module>_<what>.sh`), after the text of each library in
    `uses` (`lib_<function>.sh`): one script that needs nothing beside it.
    """
    return "".join((FOLDER / file).read_text() for file in (*uses, name))
