"""How a message shows a value it names: quoted, and cut to a readable length with its length said.

A refusal names the value it refuses, never prints it whole: an input can be any length (a
10,000-character path, a 100,000-character `--config` value, megabytes of text from a file), and the
message must stay readable. The value is cut before its repr is made.
"""

from __future__ import annotations

import os
import reprlib

SHOWN_AT_MOST = 80
"""The characters of a value a message shows: enough to recognise it, never a whole file's worth."""

PATH_LIMIT = 200
"""How much of a path `shown` gives (`shown(path, PATH_LIMIT)`): a user must recognise a path of their
own whole, and a home folder's path is longer than most values; a longer one is cut all the same."""


def _short(limit: int) -> reprlib.Repr:
    short = reprlib.Repr()
    short.maxstring = short.maxother = limit
    short.maxlist = short.maxtuple = short.maxdict = short.maxset = 8
    short.maxlevel = 3
    return short


def shown(value: object, limit: int = SHOWN_AT_MOST) -> str:
    """`value` as a message shows it: its repr (a path as its text, quoted), or for a longer one its
    first characters, an ellipsis and its length (`'aaaa…' (100000 characters)`). A value that is not
    text (a number, a list from a file) is its repr, cut the same way, without building it whole.
    """
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        text = _short(limit).repr(value)
        return text if len(text) <= limit else f"{text[: limit - 1]}…"
    if len(value) <= limit and len(text := repr(value)) <= limit:
        return text
    keep = limit - 3
    while len(start := repr(value[:keep])) > limit - 1:  # escapes (\x00) take several characters each
        keep = min(keep - 1, keep * (limit - 1) // len(start))
    return f"{start[:-1]}…{start[-1]} ({len(value)} characters)"
