"""phase1's kubeconfig context comes from one function, `outputs.kube_context`: the command line reads
it there alone, so no site defaults it its own way (`kind-None`, "", the string "None")."""

from __future__ import annotations

import ast
from pathlib import Path

from stacks import outputs
from stacks.config import PROJECT_DIR
from stacks.config.cluster import EXISTING
from tests.python_source import parse
from tests.test_shape import program_files


def test_the_context_is_kinds_on_kind_and_the_recorded_one_on_an_existing_cluster() -> None:
    assert outputs.kube_context({outputs.CLUSTER_NAME: "blueprint"}) == "kind-blueprint"
    existing = {outputs.CLUSTER_TYPE: EXISTING, outputs.CLUSTER_NAME: "", outputs.KUBE_CONTEXT: "prod"}
    assert outputs.kube_context(existing) == "prod"


def test_a_phase1_not_up_names_no_context() -> None:
    assert outputs.kube_context({}) == ""
    assert outputs.kube_context({outputs.CLUSTER_TYPE: EXISTING}) == ""


def _spellings(path: Path) -> list[str]:
    """Where `path` reads KUBE_CONTEXT itself, or spells kind's `kind-<name>` in an f-string."""
    found = []
    for node in ast.walk(parse(path.read_text())):
        reads = (isinstance(node, ast.Attribute) and node.attr == "KUBE_CONTEXT") or (
            isinstance(node, ast.Name) and node.id == "KUBE_CONTEXT"
        )
        first = node.values[0] if isinstance(node, ast.JoinedStr) and node.values else None
        kind = isinstance(first, ast.Constant) and str(first.value).startswith("kind-")
        if reads or kind:
            found.append(f"{path.relative_to(PROJECT_DIR)}:{getattr(node, 'lineno', '?')}")
    return found


def test_the_command_line_reads_phase1s_context_through_the_one_function() -> None:
    spelled = [site for path in program_files(PROJECT_DIR / "cli") for site in _spellings(path)]
    assert spelled == []
