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
    named = {function: re.compile(rf"(?<![\w$-]){function}(?![\w=-])") for function in libraries()}
    undefined: dict[str, list[str]] = {}  # by script text: many resources of many plans run the same one

    def not_defined(text: str) -> list[str]:
        if text not in undefined:
            code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
            undefined[text] = [f for f, name in named.items() if name.search(code) and f"\n{f}() {{" not in f"\n{text}"]
        return undefined[text]

    missing = set()
    for stack, config in PLANS:
        for resource in planned(stack, **config).resources:
            for key, text in plan_scripts(resource):
                missing |= {(resource["name"], key, function) for function in not_defined(text)}
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
