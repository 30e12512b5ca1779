"""The schema: Pulumi.yaml declares every key once, a stack file's value reaches the program as
Pulumi passes it, and the configuration reference says which stack reads each key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stacks.config import PROJECT_DIR
from stacks.config.schema import declared_keys, default_string, stack_config, stacks_reading


def test_every_declared_key_has_type_default_and_description() -> None:
    for key, spec in declared_keys().items():
        assert {"type", "default", "description"} <= set(spec), key


@pytest.mark.parametrize(
    ("written", "passed"),
    [("yes", "yes"), ("on", "on"), ("True", "true"), ("2.0", "2"), ("1e3", "1000"), ("", ""), ("'007'", "007")],
)
def test_a_stack_file_value_reaches_the_program_as_pulumi_passes_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, written: str, passed: str
) -> None:
    monkeypatch.setattr("stacks.config.schema.STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.phase1.yaml").write_text(f"config:\n  blueprint:headlamp: {written}\n")
    assert stack_config("phase1")[0]["blueprint:headlamp"] == passed


def test_a_stack_file_key_without_a_namespace_is_the_projects_as_pulumi_reads_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("stacks.config.schema.STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.phase1.yaml").write_text("config:\n  gitlabNodes: 2\n")
    assert stack_config("phase1")[0]["blueprint:gitlabNodes"] == "2"


def test_default_strings_are_what_pulumi_passes() -> None:
    assert (default_string("preserveData"), default_string("gitlabNodes")) == ("false", "3")


def reference_configuration_rows() -> dict[str, tuple[str, str]]:
    """docs/reference/configuration.md's table: each key -> (read by, default)."""
    text = (PROJECT_DIR / "docs" / "reference" / "configuration.md").read_text()
    table = text[text.index("| Key | Type | Default | Read by |") :].split("\n\n", 1)[0]
    rows: dict[str, tuple[str, str]] = {}
    for line in table.splitlines()[2:]:
        key, _type, default, read_by = (cell.strip() for cell in line.strip("|").split("|"))
        name = re.sub(r"^\[`(\w+)`\]\(#\w+\)$", r"\1", key)
        rows[name] = (read_by, "" if default == "empty" else default.strip("`"))
    return rows


def test_the_configuration_reference_says_which_stack_reads_each_key_and_its_default() -> None:
    rows = reference_configuration_rows()
    assert set(rows) == set(declared_keys())
    for key, (read_by, default) in rows.items():
        assert read_by == ", ".join([*stacks_reading(key), "dev"]), key
        assert default == default_string(key), key


@pytest.mark.parametrize(
    ("written", "read"), [("10:00", "10:00"), ("0o10", "8"), ("010", "8"), ("1_0", "10"), ("0x1F", "31"), ("09", "9"), ("-5", "-5")]
)
def test_a_stack_file_number_is_read_as_gos_yaml_reads_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, written: str, read: str) -> None:
    monkeypatch.setattr("stacks.config.schema.STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.phase3.yaml").write_text(f"config:\n  blueprint:pipelineTimeout: {written}\n")
    assert stack_config("phase3")[0]["blueprint:pipelineTimeout"] == read
