"""How a message shows a value it names: quoted, and cut to a readable length with its length said.

A refusal names the value it refuses, never prints it whole: an input can be any length (a
10,000-character path, a 100,000-character `--config` value), and the message must stay readable.
"""

from __future__ import annotations

import os


def shown(value: object, limit: int = 80) -> str:
    """`value` quoted as Python's repr quotes it (a path as its text), cut after `limit` characters, with
    its whole length: `'abc'… (10000 characters)`. A value that is not text (a number, a list someone
    wrote into a state) is its repr, cut the same way.
    """
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        text = repr(value)
        return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"
    return repr(value) if len(value) <= limit else f"{value[:limit]!r}… ({len(value)} characters)"


PATH_LIMIT = 200
"""How much of a path `shown` gives (`shown(path, PATH_LIMIT)`): a user must recognise a path of their
own whole, and a home folder's path is longer than most values; a longer one is cut all the same."""
