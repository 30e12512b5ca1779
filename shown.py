"""How a message shows a value it names: quoted, and cut to a readable length with its length said.

A refusal names the value it refuses, never prints it whole: an input can be any length (a
10,000-character path, a 100,000-character `--config` value), and the message must stay readable.
"""

from __future__ import annotations


def shown(value: object, limit: int = 80) -> str:
    """`value` as Python's repr quotes it (a `str` of a path or a text; anything else as `str` gives it),
    cut after `limit` characters of it, with its whole length: `'abc'… (10000 characters)`.
    """
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}… ({len(text)} characters)"


PATH_LIMIT = 200
"""How much of a path `shown` gives (`shown(path, PATH_LIMIT)`): a user must recognise a path of their
own whole, and a home folder's path is longer than most values; a longer one is cut all the same."""
