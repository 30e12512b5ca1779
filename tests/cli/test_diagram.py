"""docs/design/architecture.md is drawn from the offline plans: the kind nodes and what runs on each,
the laptop's ports and names and what answers them, where data lives and which phase owns each; no
Pulumi type name; the README shows the traffic alone, drawn from the same plans; and both committed
drawings are what `blueprint diagram` would write today."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path, PurePosixPath

import pytest

from cli.diagram import BEGIN, END, README, architecture, render_document, run, traffic_diagram
from cli.diagram.drawing import drawing
from cli.plan import Plan
from stacks import STACK_PHASES
from stacks.config import PROJECT_DIR
from tests.plans import kind_config_of, planned

MERMAID_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
MERMAID_KEYWORDS = {"end", "subgraph", "graph", "flowchart", "direction", "style", "classDef", "class", "click", "linkStyle"}
NODE = re.compile(r'^ +(\w+)\["(.*)"\]$')


@pytest.fixture(scope="module")
def plans() -> list[Plan]:
    return [planned(stack) for stack in STACK_PHASES["dev"]]


@pytest.fixture(scope="module")
def diagram(plans: list[Plan]) -> str:
    return drawing(architecture(plans))


@pytest.fixture(scope="module")
def document(plans: list[Plan]) -> str:
    return render_document(plans)


def by_stack(plans: list[Plan], stack: str) -> Plan:
    return next(result for result in plans if result.stack == stack)


def node_labels(diagram: str) -> dict[str, str]:
    return {m[1]: m[2] for line in diagram.splitlines() if (m := NODE.match(line))}


def enclosing(diagram: str) -> dict[str, list[str]]:
    """Each node's subgraph titles, outermost first."""
    stack: list[str] = []
    inside: dict[str, list[str]] = {}
    for line in diagram.splitlines():
        if m := re.match(r'^ *subgraph \w+\["(.*)"\]$', line):
            stack.append(m[1])
        elif line.strip() == "end":
            stack.pop()
        elif m := NODE.match(line):
            inside[m[1]] = list(stack)
    return inside


def ids_labelled(diagram: str, first_line: str) -> list[str]:
    return [node for node, label in node_labels(diagram).items() if label.split("<br/>")[0] == first_line]


def data_folder(plans: list[Plan]) -> PurePosixPath:
    return PurePosixPath(by_stack(plans, "phase1").outputs["dataDir"]["value"])


def test_every_node_group_of_the_kind_config_is_drawn_with_its_node_count(plans: list[Plan], diagram: str) -> None:
    nodes = kind_config_of(by_stack(plans, "phase1"))["nodes"]
    titles = re.findall(r'^ {4}subgraph \w+\["(.*)"\]$', diagram, re.MULTILINE)
    for role_label in {(node["role"], tuple(sorted((node.get("labels") or {}).items()))) for node in nodes}:
        role, labels = role_label
        count = sum(1 for node in nodes if (node["role"], tuple(sorted((node.get("labels") or {}).items()))) == role_label)
        wanted = [f"{key}={value}" for key, value in labels] or ["control plane"]
        matching = [t for t in titles if all(w in t for w in wanted) and t.endswith(f": {count} node{'s' if count != 1 else ''}")]
        assert len(matching) == 1, (role_label, count, titles)


def test_the_node_groups_follow_the_config_not_a_table(plans: list[Plan]) -> None:
    two_gitlab_nodes = [planned("phase1", gitlabNodes="2"), *plans[1:]]
    assert 'gitlab workers (blueprint/role=gitlab): 2 nodes"]' in drawing(architecture(two_gitlab_nodes))


def test_each_workload_is_drawn_in_the_node_group_its_node_selector_picks(plans: list[Plan], diagram: str) -> None:
    inside = enclosing(diagram)
    gitlab = ids_labelled(diagram, "gitlab") + [n for n, label in node_labels(diagram).items() if label.startswith("gateway ")]
    runners = ids_labelled(diagram, "gitlab-runner") + ids_labelled(diagram, "CI jobs")
    assert len(gitlab) == 2, node_labels(diagram)
    assert len(runners) == 4, node_labels(diagram)
    for node in gitlab:
        assert "blueprint/role=gitlab" in inside[node][-1], (node, inside[node])
    for node in runners:
        assert "blueprint/role=runner" in inside[node][-1], (node, inside[node])


def test_a_workload_without_a_node_selector_is_drawn_on_any_worker(diagram: str) -> None:
    inside = enclosing(diagram)
    for name in ("postgresql-cnpg", "openbao", "minio", "valkey", "guestbook"):
        (node,) = ids_labelled(diagram, name)
        assert inside[node][-1] == "on any worker (no nodeSelector)", (name, inside[node])


def test_every_port_mapping_and_the_api_server_reach_something(plans: list[Plan], diagram: str) -> None:
    config = kind_config_of(by_stack(plans, "phase1"))
    labels = node_labels(diagram)
    mapped = [(m["listenAddress"], m["hostPort"]) for node in config["nodes"] for m in node.get("extraPortMappings", [])]
    mapped.append((config["networking"]["apiServerAddress"], config["networking"]["apiServerPort"]))
    assert len(mapped) == 5
    for address, port in mapped:
        (node,) = [n for n, label in labels.items() if label == f"{address}:{port}"]
        assert re.search(rf"^  {node} -->", diagram, re.MULTILINE), f"{address}:{port} leads nowhere"


def test_the_ssh_port_reaches_gitlab_shell_through_the_gateway(plans: list[Plan], diagram: str, document: str) -> None:
    ssh_port = by_stack(plans, "phase1").outputs["sshPort"]["value"]
    labels = node_labels(diagram)
    (port,) = [n for n, label in labels.items() if label == f"127.0.0.1:{ssh_port}"]
    (gateway,) = [n for n, label in labels.items() if label.startswith("gateway ")]
    (gitlab,) = ids_labelled(diagram, "gitlab")
    assert re.search(rf'^  {port} -->\|"NodePort \d+ → :22"\| {gateway}$', diagram, re.MULTILINE)
    assert f'  {gateway} -->|"SSH :22"| {gitlab}\n' in diagram
    assert "gitlab: Git over SSH (gitlab-shell)" in document


def test_every_name_of_the_hosts_line_is_routed_by_the_gateway_to_what_serves_it(plans: list[Plan], diagram: str, document: str) -> None:
    corefile = by_stack(plans, "phase2").one("kubernetes:core/v1:ConfigMapPatch", "cluster-dns-corefile")["inputs"]["data"]["Corefile"]
    names = re.findall(r"rewrite name exact (\S+) ", corefile)
    assert {"gitlab.local.example.net", "registry.local.example.net", "kas.local.example.net", "guestbook.local.example.net"} <= set(names)
    (gateway,) = [n for n, label in node_labels(diagram).items() if label.startswith("gateway ")]
    for name in names:
        assert re.search(rf'^  {gateway} -->\|"{re.escape(name)}"\| \w+$', diagram, re.MULTILINE), name
        row = next(line for line in document.splitlines() if line.startswith(f"| {name} |"))
        assert "nothing the plans show" not in row, row


def test_a_name_routed_by_an_httproute_of_the_plans_is_drawn_to_the_workload_behind_it(plans: list[Plan]) -> None:
    phase2 = by_stack(plans, "phase2")
    corefile = phase2.one("kubernetes:core/v1:ConfigMapPatch", "cluster-dns-corefile")
    rewrite = "    rewrite name exact web.local.example.net gitlab-envoy.gitlab.svc.cluster.local answer auto\n"
    extra = [
        {**corefile, "inputs": {**corefile["inputs"], "data": {"Corefile": rewrite + corefile["inputs"]["data"]["Corefile"]}}},
        {**corefile, "urn": "web", "type": "kubernetes:apps/v1:Deployment", "inputs": {"metadata": {"name": "web", "namespace": "web"}}},
        {
            **corefile,
            "urn": "web-route",
            "type": "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute",
            "inputs": {
                "kind": "HTTPRoute",
                "metadata": {"name": "web", "namespace": "web"},
                "spec": {"hostnames": ["web.local.example.net"], "rules": [{"backendRefs": [{"name": "web", "port": 80}]}]},
            },
        },
    ]
    resources = [r for r in phase2.resources if r is not corefile] + extra
    with_route = [plans[0], dataclasses.replace(phase2, resources=resources), plans[2]]
    (gateway,) = [n for n, label in node_labels(drawing(architecture(with_route))).items() if label.startswith("gateway ")]
    (web,) = ids_labelled(drawing(architecture(with_route)), "web")
    assert f'  {gateway} -->|"web.local.example.net"| {web}\n' in drawing(architecture(with_route))


def test_every_volume_folder_is_drawn_next_to_its_workload(plans: list[Plan], diagram: str, document: str) -> None:
    labels = node_labels(diagram)
    volumes = by_stack(plans, "phase2").find("kubernetes:core/v1:PersistentVolume")
    assert len(volumes) == 4
    for volume in volumes:
        node_path = volume["inputs"]["spec"]["hostPath"]["path"]
        # The nodes mount <dataDir>/volumes at /var/lib/blueprint/volumes (phase1's kind config).
        relative = "volumes/" + node_path.removeprefix("/var/lib/blueprint/volumes/")
        (node,) = [n for n, label in labels.items() if label.startswith(f"{relative}/<br/>")]
        assert re.search(rf"^  \w+ --- {node}$", diagram, re.MULTILINE), relative
        assert f"| `{relative}` |" in document


def test_every_secret_file_and_the_ca_certificate_are_listed(plans: list[Plan], document: str) -> None:
    root = data_folder(plans)
    phase2 = by_stack(plans, "phase2")
    files = [r["inputs"]["path"] for r in phase2.find("pulumi-python:dynamic/blueprint:HostSecret")]
    files.append(phase2.outputs["caCertFile"]["value"])
    assert len(files) > 10
    for path in files:
        assert f"| `{PurePosixPath(path).relative_to(root)}` |" in document, path


def test_the_nodes_mounts_are_drawn_and_the_secrets_folder_is_not_mounted(plans: list[Plan], diagram: str) -> None:
    mounts = [mount for node in kind_config_of(by_stack(plans, "phase1"))["nodes"] for mount in node["extraMounts"]]
    assert mounts
    for mount in mounts:
        assert f'cluster -.-|"mounts at {mount["containerPath"]}"|' in diagram
    assert not any("secrets" in line for line in diagram.splitlines() if line.startswith("  cluster "))


def test_every_drawn_box_says_which_phase_owns_it(diagram: str) -> None:
    inside = enclosing(diagram)
    boxes = {
        node: label
        for node, label in node_labels(diagram).items()
        if inside[node][:1] and inside[node][0].startswith(("kind cluster", "data folder"))
    }
    boxes.pop("api")  # the API server is kind's own
    assert len(boxes) > 20
    for node, label in boxes.items():
        assert re.search(r"\bphase[123]\b", label.rsplit("<br/>", 1)[-1]), (node, label)


def test_no_pulumi_type_name_in_the_document(plans: list[Plan], document: str) -> None:
    types = {resource["type"] for result in plans for resource in result.resources}
    for type_ in types:
        assert type_ not in document, type_
        if type_.split(":", 1)[0] in ("pulumi", "pulumi-python", "command", "random", "tls"):
            short = re.split(r"[:/]", type_)[-1]
            # A provider's type ends in its package's name (`kubernetes`, a word the drawing may use): look for `... provider`.
            short = f"{short} provider" if type_.startswith("pulumi:providers:") else short
            assert not re.search(rf"\b{re.escape(short)}\b", document), (type_, short)
    assert "pulumi:providers" not in document
    assert "KvSecret" not in document


def test_the_document_names_no_path_of_this_checkout(document: str) -> None:
    assert str(PROJECT_DIR) not in document


def test_drawing_reuses_the_plans_it_is_given_and_runs_no_program(plans: list[Plan], monkeypatch: pytest.MonkeyPatch) -> None:
    """What makes drawing cheap: it reads the plans, never plans again (no wall-clock margin: a busy laptop is no failure)."""

    def planned_again(*_: object, **__: object) -> None:
        raise AssertionError("the drawing ran the program again")

    monkeypatch.setattr("cli.plan._plan", planned_again)
    monkeypatch.setattr("cli.plan._run", planned_again)
    architecture(plans)
    render_document(plans)


def test_the_diagram_is_deterministic(plans: list[Plan], diagram: str) -> None:
    assert drawing(architecture(plans)) == diagram
    assert render_document(plans) == render_document(plans)


def test_node_and_subgraph_ids_are_mermaid_safe(diagram: str) -> None:
    ids = re.findall(r"^ +(\w+)\[", diagram, re.MULTILINE) + re.findall(r"^ *subgraph (\S+)\[", diagram, re.MULTILINE)
    assert ids
    for node in ids:
        assert MERMAID_ID.match(node), node
        assert node not in MERMAID_KEYWORDS
    assert len(ids) == len(set(ids))


@pytest.fixture
def cached_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    """`run` plans through the suite's cache: the same plans, planned once."""
    monkeypatch.setattr("cli.plan.plan", lambda stack, **_: planned(stack))


@pytest.mark.usefixtures("cached_plans")
def test_committed_architecture_document_is_up_to_date() -> None:
    assert run(check=True) == 0, "docs/design/architecture.md or the README's traffic diagram is stale: run `uv run blueprint diagram`"


@pytest.mark.usefixtures("cached_plans")
def test_check_fails_on_a_stale_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stale = tmp_path / "architecture.md"
    stale.write_text("# Architecture\n\nDrawn by hand.\n")
    assert run(output=stale, check=True) == 1
    assert "uv run blueprint diagram" in capsys.readouterr().err


@pytest.mark.usefixtures("cached_plans")
def test_written_document_passes_the_check(tmp_path: Path, plans: list[Plan]) -> None:
    written, readme = tmp_path / "docs" / "design" / "architecture.md", readme_with_markers(tmp_path)
    assert run(output=written, readme=readme) == 0
    assert written.read_text() == render_document(plans)
    assert run(output=written, readme=readme, check=True) == 0


def test_the_committed_diagram_draws_the_defaults_whatever_the_stack_files_say(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("stacks.config.schema.STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.phase1.yaml").write_text("config:\n  blueprint:headlamp: true\n  blueprint:gitlabNodes: 5\n")
    assert run(check=True) == 0, capsys.readouterr().err


def test_every_image_cache_mirror_phase1_starts_is_drawn(plans: list[Plan], diagram: str) -> None:
    from components.image_cache import MIRRORED_REGISTRIES, mirror_container

    cluster = architecture(plans).cluster
    for registry in MIRRORED_REGISTRIES:
        assert f"{mirror_container(cluster, registry)}<br/>mirror of {registry} · phase1" in diagram
    assert "cluster -.->" in diagram


def test_without_the_image_cache_no_mirror_is_drawn() -> None:
    assert "mirror of" not in drawing(architecture([planned("phase1", imageCache="false")]))


# --- the README's traffic diagram ------------------------------------------------------------------


def readme_with_markers(folder: Path, between: str = "") -> Path:
    """A README of the test's own: a first paragraph, then the markers, `between` them."""
    readme = folder / "README.md"
    readme.write_text(f"# blueprint\n\nA platform.\n\n{BEGIN}\n{between}{END}\n\n## The two commands\n")
    return readme


@pytest.fixture(scope="module")
def traffic(plans: list[Plan]) -> str:
    return traffic_diagram(plans)


def test_the_traffic_diagram_is_small_enough_for_the_readme(traffic: str) -> None:
    assert traffic.startswith("flowchart LR\n")
    assert len(traffic.splitlines()) <= 25, traffic


def test_the_traffic_diagram_draws_each_laptop_port_to_what_answers_it(plans: list[Plan], traffic: str) -> None:
    config = kind_config_of(by_stack(plans, "phase1"))
    labels = node_labels(traffic)
    mapped = {m["hostPort"]: m["containerPort"] for node in config["nodes"] for m in node.get("extraPortMappings", [])}
    assert len(mapped) == 4
    for host_port, node_port in mapped.items():
        (port,) = [n for n, label in labels.items() if label == f":{host_port}"]
        assert re.search(rf'^  {port} -->\|"NodePort {node_port}"\| \w+$', traffic, re.MULTILINE), host_port
    (api_port,) = [n for n, label in labels.items() if label == f":{config['networking']['apiServerPort']}"]
    assert f"  {api_port} --> api\n" in traffic
    assert labels["api"] == "Kubernetes API server"


def test_the_traffic_diagram_draws_openbaos_port_to_openbao(plans: list[Plan], traffic: str) -> None:
    openbao_port = by_stack(plans, "phase1").outputs["openbaoPort"]["value"]
    labels = node_labels(traffic)
    (port,) = [n for n, label in labels.items() if label == f":{openbao_port}"]
    (openbao,) = ids_labelled(traffic, "openbao")
    assert re.search(rf'^  {port} -->\|"NodePort \d+"\| {openbao}$', traffic, re.MULTILINE)


def test_the_traffic_diagram_routes_every_name_of_the_hosts_line_through_the_gateway(plans: list[Plan], traffic: str) -> None:
    corefile = by_stack(plans, "phase2").one("kubernetes:core/v1:ConfigMapPatch", "cluster-dns-corefile")["inputs"]["data"]["Corefile"]
    names = re.findall(r"rewrite name exact (\S+) ", corefile)
    (gateway,) = [n for n, label in node_labels(traffic).items() if label.startswith("gateway ")]
    routed = [host for label in re.findall(rf'^  {gateway} -->\|"(.*)"\| \w+$', traffic, re.MULTILINE) for host in label.split("<br/>")]
    assert sorted(routed) == sorted([*(name.removesuffix("local.example.net") for name in names), "SSH :22"])
    (gitlab,) = ids_labelled(traffic, "gitlab")
    assert f'  {gateway} -->|"gitlab.<br/>registry.<br/>kas."| {gitlab}\n' in traffic


def test_the_traffic_diagram_draws_headlamp_when_it_is_on() -> None:
    assert "headlamp" not in traffic_diagram([planned("dev")])
    with_headlamp = traffic_diagram([planned("dev", headlamp="true")])
    (gateway,) = [n for n, label in node_labels(with_headlamp).items() if label.startswith("gateway ")]
    (headlamp,) = ids_labelled(with_headlamp, "headlamp")
    assert f'  {gateway} -->|"headlamp."| {headlamp}\n' in with_headlamp
    assert len(with_headlamp.splitlines()) <= 25, with_headlamp


def test_the_traffic_diagram_ids_are_mermaid_safe(traffic: str) -> None:
    ids = re.findall(r"^ +(\w+)\[", traffic, re.MULTILINE)
    assert ids
    for node in ids:
        assert MERMAID_ID.match(node), node
        assert node not in MERMAID_KEYWORDS
    assert len(ids) == len(set(ids))


def test_the_architecture_page_shows_the_traffic_diagram_too(document: str, traffic: str) -> None:
    assert f"```mermaid\n{traffic}```\n" in document


def test_the_committed_readme_shows_the_current_traffic_diagram_between_its_markers(traffic: str) -> None:
    # Where in the README it stands is tests/test_readme.py's.
    assert f"{BEGIN}\n```mermaid\n{traffic}```\n{END}\n" in README.read_text()


@pytest.mark.usefixtures("cached_plans")
def test_written_readme_gets_the_traffic_diagram_between_its_markers_and_nothing_else_changes(tmp_path: Path, traffic: str) -> None:
    readme = readme_with_markers(tmp_path, between="an old drawing\n")
    assert run(output=tmp_path / "architecture.md", readme=readme) == 0
    assert readme.read_text() == f"# blueprint\n\nA platform.\n\n{BEGIN}\n```mermaid\n{traffic}```\n{END}\n\n## The two commands\n"


@pytest.mark.usefixtures("cached_plans")
def test_check_fails_on_a_stale_readme_traffic_diagram_naming_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    written = tmp_path / "architecture.md"
    assert run(output=written, readme=readme_with_markers(tmp_path)) == 0
    readme_with_markers(tmp_path, between="```mermaid\nflowchart LR\n  a --> b\n```\n")
    capsys.readouterr()
    assert run(output=written, readme=tmp_path / "README.md", check=True) == 1
    err = capsys.readouterr().err
    assert f"the traffic diagram in {tmp_path / 'README.md'} is out of date with the program: run `uv run blueprint diagram`" in err
    assert str(written) not in err, "the page itself is current"


@pytest.mark.usefixtures("cached_plans")
@pytest.mark.parametrize("check", [True, False], ids=["check", "write"])
def test_a_readme_without_the_markers_is_reported_as_such(tmp_path: Path, capsys: pytest.CaptureFixture[str], check: bool) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# blueprint\n\nA platform.\n")
    assert run(output=tmp_path / "architecture.md", readme=readme, check=check) == 1
    assert f"{readme} has no traffic diagram markers: put the lines `{BEGIN}` and `{END}`" in capsys.readouterr().err
    assert readme.read_text() == "# blueprint\n\nA platform.\n"
    assert not (tmp_path / "architecture.md").exists(), "nothing is written while a page cannot be made"


def test_the_document_says_what_the_apps_may_reach_with_the_ranges_the_internet_rule_excepts(document: str) -> None:
    section = document.split("## What CI pods may reach", 1)[1].split("\n## ", 1)[0]
    assert "| apps | every pod | nothing | phase2 |" in section
    from components.runner_egress import NOT_PUBLIC

    assert f"0.0.0.0/0 except {', '.join(NOT_PUBLIC)}: any port" in section


def test_the_document_says_what_each_runner_pod_may_reach_and_what_enforces_it(document: str) -> None:
    section = document.split("## What CI pods may reach", 1)[1].split("\n## ", 1)[0]
    assert "kindnetd" in section
    for namespace in ("gitlab-runner", "gitlab-runner-image-build"):
        assert f"| {namespace} | every pod | nothing | phase2 |" in section
        assert f"| {namespace} | blueprint/ci-role=job |" in section
