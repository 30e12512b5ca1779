"""One way every message shows a value it names (shown.py): quoted, cut, its length said."""

from __future__ import annotations

from pathlib import Path

from shown import shown


def test_a_short_value_is_shown_whole_and_quoted() -> None:
    assert shown("blueprint.local") == "'blueprint.local'"


def test_a_long_value_is_cut_with_its_length() -> None:
    assert shown("a" * 10_000) == f"{'a' * 80!r}… (10000 characters)"


def test_a_path_is_shown_as_its_text() -> None:
    assert shown(Path("/home/me/.config")) == "'/home/me/.config'"


def test_a_value_that_is_not_text_is_its_repr_cut() -> None:
    assert shown([1] * 100, limit=10) == "[1, 1, 1, … (300 characters)"
