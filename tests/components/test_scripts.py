"""Each registered script stands alone (`components/scripts.py`): the library of every shell function
it calls is written in front of it, found in its text rather than listed by hand."""

from __future__ import annotations

import re

import pytest

from components.scripts import calls, libraries
from tests.plans import planned
from tests.test_shell import PLANS, plan_scripts


def test_every_library_function_a_registered_script_names_is_defined_in_its_text() -> None:
    """Named anywhere but in a comment counts: looser than `calls`, so a call it misses still fails here."""
    missing = set()
    for stack, config in PLANS:
        for resource in planned(stack, **config).resources:
            for key, text in plan_scripts(resource):
                code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
                for function in libraries():
                    if re.search(rf"(?<![\w$-]){function}(?![\w=-])", code) and f"\n{function}() {{" not in f"\n{text}":
                        missing.add((resource["name"], key, function))
    assert missing == set()


@pytest.mark.parametrize(
    ("text", "called"),
    [
        ('x=$(quoted "$y")', True),
        ('  quoted "$y" >&2', True),
        ('if true; then quoted "$y"; fi', True),
        ("# quoted, as a word of a comment", False),
        ('echo "the paths are quoted"', False),
        ("quoted_name=1", False),
        ('printf %s "$quoted"', False),
    ],
)
def test_a_function_is_found_where_it_is_called_and_nowhere_else(text: str, called: bool) -> None:
    assert calls(text, "quoted") is called
