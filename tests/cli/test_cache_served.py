"""Whether the image cache served the bring-up's pulls: a recorded catalog of each mirror
(tests/cli/recorded/mirror-catalog.json, pages shaped as distribution's registry/handlers/catalog.go
writes them, cut to a few repositories) and the cluster's pods (tests/cli/recorded/pods.json, with
the pods below), through what `up` runs at its end, into verify's `bring_up`."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from cli import cache_served, timings
from cli.verify import verify
from cli.verify.report import SCHEMA, to_table
from stacks import outputs
from tests.cli.doctor.fakes import FakeMachine
from tests.cli.verify.platforms import CURL_TIMED_OUT, EXISTING, NodeCurl, http_answer, no_laptop_network, platform_on

RECORDED = Path(__file__).parent / "recorded"
MIRRORS = {"docker.io": "172.16.0.2:5000", "quay.io": "172.16.0.3:5000", "registry.gitlab.com": "172.16.0.5:5000"}
PHASE1: dict[str, Any] = {outputs.CLUSTER_NAME: "blueprint", outputs.IMAGE_MIRRORS: MIRRORS}
MORE_PODS = [
    {"spec": {"containers": [{"image": "docker.io/valkey/valkey:8.1"}], "initContainers": [{"image": "alpine:3.22"}]}},
    {"spec": {"containers": [{"image": "docker.io/kindest/kindnetd:v20250512-df8de77b"}]}},  # in kind's node image
    {"spec": {"containers": [{"image": "registry.gitlab.com/gitlab-org/build/cng/kubectl:v17.9.2@sha256:" + "0" * 64}]}},
]


def _pods() -> str:
    listed = json.loads((RECORDED / "pods.json").read_text())
    return json.dumps({**listed, "items": [*listed["items"], *MORE_PODS]})


def _node(registries: tuple[str, ...] = ("docker.io", "registry.gitlab.com")) -> NodeCurl:
    """The cluster's node, which curls the mirrors of `registries` as recorded (their pages, with the
    `Link` to the next); any other mirror (quay.io's) does not answer it."""
    pages = json.loads((RECORDED / "mirror-catalog.json").read_text())
    return NodeCurl(
        curled={
            f"http://{MIRRORS[registry]}{page['url']}": http_answer(200, json.dumps(page["body"]), page["link"])
            for registry in registries
            for page in pages[registry]
        }
    )


def _get(node: NodeCurl | None = None) -> cache_served.Get:
    asking = node or _node()
    return cache_served.from_node(lambda argv: asking.run(argv, timeout=cache_served.EXEC_SECONDS), "blueprint")


def _after_up(state: Path, phase1: dict[str, Any] = PHASE1, pods: tuple[int, str] | None = None) -> str | None:
    return cache_served.after_up(phase1, state, lambda: pods or (0, _pods()), _get())


def test_the_mirrors_catalogs_say_which_pulls_they_served() -> None:
    node = _node()
    images = cache_served.pod_images(_pods())
    assert isinstance(images, list)
    record = cache_served.reading(images, MIRRORS, _get(node))
    assert record == {
        "images": 7,
        "in_cache": 6,
        "not_in_cache": ["registry.gitlab.com/gitlab-org/build/cng/kubectl"],
        "not_mirrored": 1,  # registry.k8s.io's coredns
    }
    # Both pages of registry.gitlab.com's catalog, the second as its Link header names it.
    assert (
        "blueprint-control-plane",
        "http://172.16.0.5:5000/v2/_catalog?last=gitlab-org%2Fbuild%2Fcng%2Fgitlab-toolbox-ee&n=100",
    ) in node.curls


def test_a_mirror_whose_catalog_does_not_answer_is_said_unread() -> None:
    record = cache_served.reading(["quay.io/jetstack/cert-manager-controller:v1.18.2", "alpine"], MIRRORS, _get())
    assert record["unread"] == [
        "quay.io: its /v2/_catalog did not answer (curl: (7) Failed to connect to 172.30.0.10 port 5000 after 2 ms: "
        "Could not connect to server (asked from blueprint-control-plane))"
    ]
    assert (record["images"], record["in_cache"]) == (1, 1)


def test_an_up_records_it_beside_its_timings_and_says_it_in_one_line(tmp_path: Path) -> None:
    said = _after_up(tmp_path)
    assert said == (
        "image cache: its mirrors hold 6 of the 7 repositories the pods pull through them "
        "(pulled past them: registry.gitlab.com/gitlab-org/build/cng/kubectl)"
    )
    assert json.loads((tmp_path / "blueprint-timings" / "image-cache.json").read_text())["in_cache"] == 6


def test_verify_reports_whether_the_cache_served_the_last_bring_up(tmp_path: Path) -> None:
    _after_up(tmp_path)
    (tmp_path / "blueprint-timings" / "phase1.json").write_text(json.dumps({"stack": "phase1", "total_seconds": 9, "steps": []}))
    when = datetime.datetime(2025, 1, 1, tzinfo=datetime.UTC)
    _, document = verify(platform_on(FakeMachine()), phase="1", when=when, state_dir=tmp_path)
    jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).validate(document)
    assert document["bring_up"]["image_cache"]["not_in_cache"] == ["registry.gitlab.com/gitlab-org/build/cng/kubectl"]
    assert "last bring-up: image cache: its mirrors hold 6 of the 7" in to_table(document)


def test_without_an_image_cache_nothing_is_read_or_recorded(tmp_path: Path) -> None:
    _after_up(tmp_path)
    assert _after_up(tmp_path, EXISTING) is None
    assert _after_up(tmp_path, {**PHASE1, outputs.IMAGE_MIRRORS: {}}) is None
    assert not (tmp_path / "blueprint-timings" / "image-cache.json").exists()
    assert "image_cache" not in (timings.measured(tmp_path, ["phase1"]) or {})


def test_a_cluster_that_lists_no_pods_is_said_unread_and_the_up_goes_on(tmp_path: Path) -> None:
    said = _after_up(tmp_path, pods=(1, "The connection to the server 127.0.0.1:6443 was refused"))
    assert said is not None
    assert "unread: the pods: kubectl could not list them (The connection to the server 127.0.0.1:6443 was refused)" in said


def test_a_reading_that_fails_unforeseen_is_one_line_and_the_up_still_succeeds(monkeypatch: pytest.MonkeyPatch) -> None:
    from cli import commands

    monkeypatch.setattr(cache_served, "after_up", lambda *_: (_ for _ in ()).throw(RuntimeError("a bug")))
    assert commands._cache_served(PHASE1) == "image cache: whether it served the pulls could not be read (RuntimeError)"


@pytest.mark.parametrize("answer", [CURL_TIMED_OUT, http_answer(503, '{"errors": [{"code": "UNAVAILABLE"}]}')])
def test_a_catalog_the_node_gets_no_page_of_is_said_unread(answer: tuple[int, str]) -> None:
    node = _node()
    node.curled[f"http://{MIRRORS['docker.io']}/v2/_catalog?n=100"] = answer
    record = cache_served.reading(["alpine"], MIRRORS, _get(node))
    said = "curl: (28) Connection timed out after 5002 milliseconds (asked from blueprint-control-plane)" if answer[0] else "HTTP 503"
    assert record["unread"] == [f"docker.io: its /v2/_catalog did not answer ({said})"]


def test_an_up_reads_the_mirrors_from_a_node_not_from_this_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cli import commands
    from stacks.config import paths

    no_laptop_network(monkeypatch)
    monkeypatch.setattr(paths, "LOCAL_STATE_DIR", tmp_path)
    node = _node()
    node.outputs["kubectl --context"] = (0, _pods())
    said = commands._cache_served(PHASE1, node)
    assert said is not None
    assert said.startswith("image cache: its mirrors hold 6 of the 7 repositories")
    assert {asked for asked, _ in node.curls} == {"blueprint-control-plane"}


def test_a_mirror_is_read_from_the_last_status_line_curl_prints_after_a_warning_and_a_100_continue() -> None:
    said = (
        "WARNING: Error loading config file: permission denied\nHTTP/1.1 100 Continue\r\n\r\n" + http_answer(200, '{"repositories": []}')[1]
    )
    status, body, _ = cache_served.from_node(lambda argv: (0, said), "blueprint")("http://172.16.0.2:5000/v2/_catalog")
    assert (status, body) == (200, {"repositories": []})
