"""The schema: Pulumi.yaml declares every key once, a stack file's value reaches the program as
Pulumi passes it, and the configuration reference says which stack reads each key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stacks.config import PROJECT_DIR
from stacks.config.cluster import EXISTING_ONLY
from stacks.config.schema import declared_keys, default_string, fix_hint, stack_config, stacks_reading


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
        # `dev` is kind's alone: it refuses an existing cluster, and with kind an existing cluster's keys.
        readers = (
            ", ".join(stacks_reading(key)) + " (existing cluster)" if key in EXISTING_ONLY else ", ".join([*stacks_reading(key), "dev"])
        )
        assert read_by == readers, key
        assert default == default_string(key), key


@pytest.mark.parametrize(
    ("written", "read"), [("10:00", "10:00"), ("0o10", "8"), ("010", "8"), ("1_0", "10"), ("0x1F", "31"), ("09", "9"), ("-5", "-5")]
)
def test_a_stack_file_number_is_read_as_gos_yaml_reads_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, written: str, read: str) -> None:
    monkeypatch.setattr("stacks.config.schema.STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.phase3.yaml").write_text(f"config:\n  blueprint:pipelineTimeout: {written}\n")
    assert stack_config("phase3")[0]["blueprint:pipelineTimeout"] == read


ENV = '`eval "$(uv run blueprint env)"`'


def test_the_fix_for_a_setting_shows_the_stack_file_first_and_pulumi_only_after_blueprint_env() -> None:
    """Before the first up, a plain `pulumi config set` finds no Pulumi on the shell's PATH, or creates the
    stack with a passphrase of its own, which blueprint cannot decrypt: the file needs neither."""
    fix = fix_hint("phase1", "httpsPort", "<free port>")
    assert fix.startswith(
        "fix: in Pulumi.phase1.yaml, replace `config: {}` with `config:` and the line `  blueprint:httpsPort: <free port>`"
    )
    assert f"or with Pulumi: {ENV}, then `pulumi config set -s phase1 blueprint:httpsPort <free port>`" in fix


@pytest.mark.parametrize("stack", ["phase1", "phase3", "dev"])
def test_the_stack_file_edit_a_fix_shows_gives_the_program_the_value(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, stack: str) -> None:
    """Done as it says, on the stack file as it is committed (`config: {}`, or lines already)."""
    monkeypatch.setattr("stacks.config.schema.STACK_FILES_DIR", tmp_path)
    fix = fix_hint(stack, "domain", "example.org")
    line = fix.split("the line `", 1)[1].split("`", 1)[0]
    shipped = (PROJECT_DIR / f"Pulumi.{stack}.yaml").read_text()
    edited = shipped.replace("config: {}", "config:\n" + line) if "config: {}" in shipped else shipped.rstrip("\n") + "\n" + line
    (tmp_path / f"Pulumi.{stack}.yaml").write_text(edited + "\n")
    assert stack_config(stack)[0]["blueprint:domain"] == "example.org"


def test_the_openbao_port_is_described_by_who_calls_it_not_by_an_unseal_step_blueprint_has_none_of() -> None:
    """OpenBao unseals itself with its static key: nothing on the host unseals it."""
    from providers.openbao_init import OpenBaoInit

    described = " ".join(declared_keys()["openbaoPort"]["description"].split())
    assert "unseal" not in described
    assert OpenBaoInit.__name__ in described
    assert "phase3's pre-flight" in described
    assert "`uv run blueprint secrets`" in described
