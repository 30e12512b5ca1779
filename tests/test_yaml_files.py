"""yaml_files, the one reader of the YAML files a user edits: bounded as Pulumi's parser (go-yaml v3)
is, and no stricter where a file is fine. The refusals themselves are rows of tests/test_bad_inputs.py."""

from __future__ import annotations

import pytest

from yaml_files import MAX_DEPTH, YamlFileError, load_text, shown


def test_aliases_that_go_yaml_takes_are_read() -> None:
    """go-yaml refuses a document only when nearly all of it (99% of up to 400,000 values) comes from aliases."""
    text = "base: &base {" + ", ".join(f"k{i}: {i}" for i in range(10)) + "}\n" + "".join(f"v{i}: *base\n" for i in range(200))
    document = load_text(text, "values.yaml")
    assert document["v199"] == document["base"]


def test_values_nested_as_deep_as_the_bound_are_read() -> None:
    depth = MAX_DEPTH - 1  # the document's own mapping is one level
    assert load_text("x: " + "[" * depth + "]" * depth + "\n", "deep.yaml") is not None
    with pytest.raises(YamlFileError, match=f"values nest more than {MAX_DEPTH} deep"):
        load_text("x: " + "[" * (depth + 1) + "]" * (depth + 1) + "\n", "deeper.yaml")


def test_a_shown_value_keeps_a_short_one_whole_and_cuts_a_long_one_with_its_length() -> None:
    assert shown("local.example.net") == "'local.example.net'"
    assert shown("é" * 1000) == "'" + "é" * 77 + "…' (1000 characters)"
