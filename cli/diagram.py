"""`blueprint diagram`: the architecture diagram, drawn from the offline plans so it never drifts.

docs/architecture.md is generated, never edited by hand: a hand-drawn diagram goes stale the day a
component gains a dependency, while one drawn from the plan shows what `pulumi up` really orders.
`--check` (run by the test suite) fails when the committed file is not what the program would give.

The picture is one subgraph per phase (stack). Its nodes are the component resources, plus the
custom resources that no component owns (providers, KV writes, the stack reference), grouped by
type so the picture stays readable. An edge A -> B says something inside B waits for something
inside A: a `dependsOn` or the provider it is created with. Containment is not a dependency, so a
component and a component nested in it get a dotted "contains" line instead. Between phases, one
edge per stack reference: a phase reads the outputs of the one before it.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cli.plan import STACK_REFERENCE_TYPE, STACK_TYPE, Plan, ProgramFailed, plan
from stacks.config import PROJECT_DIR, defaults_only

PHASES = ("phase1", "phase2", "phase3")
DEFAULT_OUTPUT = PROJECT_DIR / "docs" / "architecture.md"
COMMAND = "uv run blueprint diagram"


def mermaid_id(text: str) -> str:
    """A Mermaid-safe node id for `text` (a URN): letters, digits and underscores only, starting
    with a letter, so no URN character (`:`, `$`, `/`, `-`) can end the id or start an arrow.
    """
    cleaned = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")
    return cleaned if cleaned[:1].isalpha() else f"n_{cleaned}"


def _label(text: str) -> str:
    """`text` as a quoted Mermaid label (a quote would end it)."""
    return '"' + text.replace('"', "#quot;") + '"'


def _short_type(type_: str) -> str:
    """`blueprint:index:Postgres` -> `Postgres`; `pulumi:providers:kubernetes` -> `kubernetes provider`."""
    if type_.startswith("pulumi:providers:"):
        return f"{type_.removeprefix('pulumi:providers:')} provider"
    return re.split(r"[:/]", type_)[-1]


def _resource_label(type_: str, name: str) -> str:
    """`Postgres postgres`; a provider named after its package is just `kubernetes provider`."""
    short = _short_type(type_)
    return short if type_ == f"pulumi:providers:{name}" else f"{short} {name}"


@dataclass
class _Node:
    key: str
    """What the id is derived from: the component's URN, or the phase and type of a group."""
    label: str
    members: set[str] = field(default_factory=set)
    """URNs of the resources inside the node: the component (or grouped resources) and every descendant."""
    component: str | None = None
    """The component's URN, for a component node."""
    id: str = field(init=False)
    """The Mermaid id: derived from `key`."""

    def __post_init__(self) -> None:
        self.id = mermaid_id(self.key)


def _disambiguate(nodes: Sequence[_Node]) -> None:
    """Keys that differ only in punctuation (`a-b`, `a_b`) give one id: suffix those with a hash of the key."""
    seen: dict[str, int] = {}
    for node in nodes:
        seen[node.id] = seen.get(node.id, 0) + 1
    for node in nodes:
        if seen[node.id] > 1:
            node.id = f"{node.id}_{hashlib.sha256(node.key.encode()).hexdigest()[:8]}"


@dataclass
class _Phase:
    stack: str
    id: str
    nodes: list[_Node]
    edges: list[tuple[str, str]]
    contains: list[tuple[str, str]]
    references: list[str]
    """The upstream stacks this phase reads through a StackReference."""
    components: int
    resources: int


def _is_component(resource: Mapping[str, Any]) -> bool:
    return not resource["custom"] and resource["type"] != STACK_TYPE


def _ancestors(urn: str, parents: Mapping[str, str | None]) -> Iterable[str]:
    """`urn` and its parents up to the stack root."""
    current: str | None = urn
    while current is not None and current in parents:
        yield current
        current = parents[current]


def _phase(result: Plan) -> _Phase:
    by_urn = {r["urn"]: r for r in result.resources}
    parents = {urn: r["parent"] for urn, r in by_urn.items()}
    stack_urn = next((r["urn"] for r in result.resources if r["type"] == STACK_TYPE), f"stack {result.stack}")

    components: dict[str, _Node] = {}
    for urn, resource in sorted(by_urn.items()):
        if _is_component(resource):
            components[urn] = _Node(urn, _resource_label(resource["type"], resource["name"]), component=urn)
    # Custom resources no component owns are drawn one node per type (`unowned`: type -> those right
    # under the stack), each with its own descendants (`followers`).
    unowned: dict[str, list[str]] = {}
    followers: dict[str, list[str]] = {}
    for urn, resource in sorted(by_urn.items()):
        chain = list(_ancestors(urn, parents))
        for ancestor in chain:
            if ancestor in components:
                components[ancestor].members.add(urn)
        if resource["custom"] and not any(ancestor in components for ancestor in chain):
            top = next(ancestor for ancestor in reversed(chain) if ancestor != stack_urn)
            if top == urn:
                unowned.setdefault(resource["type"], []).append(urn)
            else:
                followers.setdefault(top, []).append(urn)
    groups = []
    for type_, tops in sorted(unowned.items()):
        label = _resource_label(type_, by_urn[tops[0]]["name"]) if len(tops) == 1 else f"{len(tops)} × {_short_type(type_)}"
        members = {*tops, *(urn for top in tops for urn in followers.get(top, []))}
        groups.append(_Node(f"{result.stack} {type_}", label, members))

    nodes = [*components.values(), *groups]
    _disambiguate(nodes)
    inside: dict[str, list[_Node]] = {}
    for node in nodes:
        for urn in node.members:
            inside.setdefault(urn, []).append(node)
    nested = {
        (outer.id, inner.id)
        for inner in components.values()
        for outer in components.values()
        if outer is not inner and inner.component in outer.members
    }

    edges: set[tuple[str, str]] = set()
    for urn, resource in by_urn.items():
        provider = resource["provider"].rsplit("::", 1)[0] if resource["provider"] else None
        for needed in {*resource["dependsOn"], *([provider] if provider else [])}:
            for before in inside.get(needed, []):
                for after in inside.get(urn, []):
                    pair = (before.id, after.id)
                    if before is not after and pair not in nested and pair[::-1] not in nested:
                        edges.add(pair)

    references = sorted(
        {str(r["inputs"].get("name", "")).rsplit("/", 1)[-1] for r in result.resources if r["type"] == STACK_REFERENCE_TYPE} - {""}
    )
    return _Phase(
        stack=result.stack,
        id=mermaid_id(stack_urn),
        nodes=sorted(nodes, key=lambda n: n.id),
        edges=sorted(edges),
        contains=sorted(nested),
        references=references,
        components=len(components),
        resources=len(result.resources),
    )


def mermaid(plans: Sequence[Plan]) -> str:
    """A Mermaid `flowchart LR` of `plans`, one subgraph per phase, in the order given."""
    phases = [_phase(result) for result in plans]
    subgraph = {phase.stack: phase.id for phase in phases}
    lines = ["flowchart LR"]
    for phase in phases:
        lines.append(f"  subgraph {phase.id}[{_label(phase.stack)}]")
        lines += [f"    {node.id}[{_label(node.label)}]" for node in phase.nodes]
        lines.append("  end")
    for phase in phases:
        lines += [f"  {outer} -.-|contains| {inner}" for outer, inner in phase.contains]
        lines += [f"  {before} --> {after}" for before, after in phase.edges]
    for phase in phases:
        lines += [f"  {subgraph[upstream]} -->|stack reference| {phase.id}" for upstream in phase.references if upstream in subgraph]
    return "\n".join(lines) + "\n"


def render_document(plans: Sequence[Plan]) -> str:
    """docs/architecture.md: the diagram of `plans` and how big each phase is."""
    phases = [_phase(result) for result in plans]
    stacks = ", ".join(result.stack for result in plans)
    table = ["| phase | components | resources |", "|---|---:|---:|"]
    table += [f"| {phase.stack} | {phase.components} | {phase.resources} |" for phase in phases]
    return "\n".join(
        [
            "# Architecture",
            "",
            f"Generated by `{COMMAND}` from the offline plans of {stacks}; never edit it by hand,",
            "regenerate it. Each box is a component, or the custom resources of one type that no component owns; an arrow",
            "A --> B means something in B waits for something in A (a dependency, or the provider it is created with).",
            "",
            "```mermaid",
            mermaid(plans).rstrip("\n"),
            "```",
            "",
            *table,
            "",
        ]
    )


def run(argv: list[str] | None = None) -> int:
    """`blueprint diagram [--output PATH] [--check]`: write the document, or check it is current."""
    parser = argparse.ArgumentParser(prog="blueprint diagram", description="Write docs/architecture.md from the offline plans.")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help=f"where to write (default {DEFAULT_OUTPUT})")
    parser.add_argument("--check", action="store_true", help="exit 1 when the file differs from what would be generated")
    args = parser.parse_args(argv)
    output: Path = args.output
    try:
        # The project's architecture, not this checkout's settings: the stack files are not read.
        with defaults_only():
            document = render_document([plan(stack) for stack in PHASES])
    except ProgramFailed as failed:
        print(f"error: a phase does not plan, so there is nothing to draw: {failed.cause}", file=sys.stderr)
        return 1
    if args.check:
        current = output.read_text() if output.exists() else None
        if current != document:
            state = "is missing" if current is None else "is out of date with the program"
            print(f"{output} {state}: run `{COMMAND}` and commit the result.", file=sys.stderr)
            return 1
        print(f"{output} is up to date.")
        return 0
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(document)
    print(f"wrote {output}")
    return 0
