"""docs/architecture.md is drawn from the offline plans: every component is in it, its arrows are the
plan's real dependencies, and the committed file is what `blueprint diagram` would write today."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cli.diagram import PHASES, mermaid, mermaid_id, render_document, run
from cli.plan import STACK_TYPE, Plan
from tests.plans import planned

MERMAID_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
MERMAID_KEYWORDS = {"end", "subgraph", "graph", "flowchart", "direction", "style", "classDef", "class", "click", "linkStyle"}


@pytest.fixture(scope="module")
def plans() -> list[Plan]:
    return [planned(stack) for stack in PHASES]


@pytest.fixture(scope="module")
def diagram(plans: list[Plan]) -> str:
    return mermaid(plans)


def node_labels(diagram: str) -> dict[str, str]:
    return dict(re.findall(r'^ {4}(\S+)\["([^"]*)"\]$', diagram, re.MULTILINE))


def component_id(result: Plan, type_: str, name: str) -> str:
    return mermaid_id(result.one(type_, name)["urn"])


def test_every_component_of_every_phase_is_a_node(plans: list[Plan], diagram: str) -> None:
    labels = node_labels(diagram)
    for result in plans:
        for resource in result.resources:
            if not resource["custom"] and resource["type"] != STACK_TYPE:
                node = mermaid_id(resource["urn"])
                assert labels.get(node) == f"{resource['type'].rsplit(':', 1)[-1]} {resource['name']}", resource["urn"]


def test_postgres_comes_before_openbao_which_stores_its_data_there(plans: list[Plan], diagram: str) -> None:
    phase2 = plans[PHASES.index("phase2")]
    postgres = component_id(phase2, "blueprint:index:Postgres", "postgres")
    openbao = component_id(phase2, "blueprint:index:OpenBao", "openbao")
    assert f"  {postgres} --> {openbao}\n" in diagram


def test_each_phase_reads_the_previous_through_a_stack_reference(plans: list[Plan], diagram: str) -> None:
    stacks = [mermaid_id(result.one(STACK_TYPE, f"blueprint-{result.stack}")["urn"]) for result in plans]
    for before, after in zip(stacks, stacks[1:], strict=False):
        assert f"  {before} -->|stack reference| {after}\n" in diagram


def test_no_component_depends_on_itself(diagram: str) -> None:
    for before, after in re.findall(r"^ {2}(\S+) --> (\S+)$", diagram, re.MULTILINE):
        assert before != after


def test_the_diagram_is_deterministic(plans: list[Plan], diagram: str) -> None:
    assert mermaid(plans) == diagram
    assert render_document(plans) == render_document(plans)


def test_node_and_subgraph_ids_are_mermaid_safe(diagram: str) -> None:
    ids = re.findall(r"^ {4}(\S+)\[", diagram, re.MULTILINE) + re.findall(r"^ {2}subgraph (\S+)\[", diagram, re.MULTILINE)
    assert ids
    for node in ids:
        assert MERMAID_ID.match(node), node
        assert node not in MERMAID_KEYWORDS
    assert len(ids) == len(set(ids))


@pytest.fixture
def cached_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    """`run` plans through the suite's cache: the same plans, planned once."""
    monkeypatch.setattr("cli.diagram.plan", lambda stack: planned(stack))


@pytest.mark.usefixtures("cached_plans")
def test_committed_architecture_document_is_up_to_date() -> None:
    assert run(["--check"]) == 0, "docs/architecture.md is stale: run `uv run blueprint diagram`"


@pytest.mark.usefixtures("cached_plans")
def test_check_fails_on_a_stale_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stale = tmp_path / "architecture.md"
    stale.write_text("# Architecture\n\nDrawn by hand.\n")
    assert run(["--output", str(stale), "--check"]) == 1
    assert "uv run blueprint diagram" in capsys.readouterr().err


@pytest.mark.usefixtures("cached_plans")
def test_written_document_passes_the_check(tmp_path: Path, plans: list[Plan]) -> None:
    written = tmp_path / "docs" / "architecture.md"
    assert run(["--output", str(written)]) == 0
    assert written.read_text() == render_document(plans)
    assert run(["--output", str(written), "--check"]) == 0


def test_the_committed_diagram_draws_the_defaults_whatever_the_stack_files_say(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("stacks.config.STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.phase1.yaml").write_text("config:\n  blueprint:headlamp: true\n  blueprint:gitlabNodes: 5\n")
    assert run(["--check"]) == 0, capsys.readouterr().err
