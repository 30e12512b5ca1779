"""One way every message shows a value it names (shown.py): quoted, cut, its length said."""

from __future__ import annotations

from pathlib import Path

from shown import SHOWN_AT_MOST, shown


def test_a_short_value_is_shown_whole_and_quoted() -> None:
    assert shown("blueprint.local") == "'blueprint.local'"


def test_a_long_value_is_cut_with_its_length() -> None:
    assert shown("a" * 10_000) == "'" + "a" * 77 + "…' (10000 characters)"


def test_a_cut_counts_the_characters_shown_not_their_bytes() -> None:
    assert shown("é" * 1000) == "'" + "é" * 77 + "…' (1000 characters)"


def test_a_path_is_shown_as_its_text() -> None:
    assert shown(Path("/home/me/.config")) == "'/home/me/.config'"


def test_a_value_that_is_not_text_is_its_repr_cut() -> None:
    assert shown([1] * 100, limit=10) == "[1, 1, 1,…"


def test_a_value_is_cut_before_it_is_written_out() -> None:
    """A value from a file may be megabytes of text, or a list of thousands."""
    assert shown(["a" * 1_000_000] * 10_000).endswith("…")
    assert len(shown(["a" * 1_000_000] * 10_000)) <= SHOWN_AT_MOST
    assert shown({"k": list(range(1000))}) == "{'k': [0, 1, 2, 3, 4, 5, 6, 7, ...]}"
