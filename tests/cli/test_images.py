"""`blueprint images`: complete against the plans (found again here by a walk that knows nothing of
their shapes), and every image the nodes or BuildKit pull comes through the image cache."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import versions
from cli import images
from cli.images import BUILDKIT, CONTAINERD, DOCKER, Image
from cli.main import main
from cli.plan import Plan
from components.image_cache import MIRRORED_REGISTRIES
from stacks import STACK_PHASES
from tests.plans import planned

IMAGE_KEY = re.compile(r"(^|_)image(name)?$", re.IGNORECASE)
LINE_IMAGE = re.compile(r"""(?im)^[ \t]*(?:-[ \t]*)?(?:[a-z_]*_)?image(?:name)?[ \t]*[:=][ \t]*["']?([^\s"'#]+)""")
ALLOWED_IMAGES = re.compile(r"(?m)^\s*allowed_images\s*=\s*\[([^\]]*)\]")
FROM = re.compile(r"(?m)^[ \t]*FROM[ \t]+(?:--\S+[ \t]+)*(\S+)")
VALUES_BLOCK = re.compile(r"""(?m)^[ \t]*repository:[ \t]*["']?([^\s"']+)["']?[ \t]*\n[ \t]*tag:[ \t]*["']?([^\s"']+)""")


def phase_plans() -> list[Plan]:
    return [planned(stack) for stack in STACK_PHASES["dev"]]


@functools.cache
def listed() -> tuple[Image, ...]:
    """`blueprint images`' list of the plans, made once a process: six rules read it (read-only), and
    listing reads every file phase3 pushes."""
    return tuple(images.images(phase_plans()))


def _usable(ref: str) -> bool:
    return bool(ref) and "$" not in ref and "{{" not in ref and not ref.startswith("[")


def every_image_string(value: Any) -> Iterator[str]:
    """Any value under a key named image, imageName or *_IMAGE, and, in any text, an `image: x`,
    `image = "x"` or `*_IMAGE: x` line, an `allowed_images` list, a FROM line, a values.yaml
    repository-and-tag pair."""
    if isinstance(value, dict):
        for key, item in value.items():
            if IMAGE_KEY.search(str(key)) and isinstance(item, str):
                yield item
            yield from every_image_string(item)
    elif isinstance(value, list):
        for item in value:
            yield from every_image_string(item)
    elif isinstance(value, str):
        yield from LINE_IMAGE.findall(value)
        for names in ALLOWED_IMAGES.findall(value):
            yield from re.findall(r'"([^"]+)"', names)
        yield from FROM.findall(value)
        yield from (f"{repository}:{tag}" for repository, tag in VALUES_BLOCK.findall(value))


def tags_of_chart_values(value: Any) -> Iterator[str]:
    """The tags of `image: {tag: ...}` blocks without a repository (the chart's own repository)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "image" and isinstance(item, dict) and "tag" in item and not item.get("repository"):
                yield str(item["tag"])
            yield from tags_of_chart_values(item)
    elif isinstance(value, list):
        for item in value:
            yield from tags_of_chart_values(item)


def test_blueprint_images_lists_every_image_the_plans_name() -> None:
    refs = {image.ref for image in listed()}
    missing = {
        f"{result.stack} {resource['name']}: {ref}"
        for result in phase_plans()
        for resource in result.resources
        for ref in every_image_string(resource["inputs"])
        if _usable(ref) and ref not in refs
    }
    assert not missing, f"`blueprint images` leaves out: {sorted(missing)}"


def test_blueprint_images_lists_the_image_of_every_tag_a_chart_release_sets() -> None:
    by_source = {(source.split(" (")[0], image.ref) for image in listed() for source in image.sources}
    missing = [
        f"{result.stack} {resource['name']}: tag {tag}"
        for result in phase_plans()
        for resource in result.resources
        if resource["type"] == images.RELEASE_TYPE
        for tag in tags_of_chart_values(resource["inputs"].get("values"))
        if not any(
            where == f"{result.stack} {resource['name']}" and ref.endswith(f":{tag}") and not ref.startswith("(")
            for where, ref in by_source
        )
    ]
    assert not missing, f"no listed image carries these charts' tags: {missing}"


def test_every_chart_release_has_its_default_images_listed() -> None:
    refs = {image.ref for image in listed()}
    charts = {resource["inputs"]["chart"] for result in phase_plans() for resource in result.find(images.RELEASE_TYPE)}
    assert charts, "the plans install no chart: this test checks nothing"
    unknown = sorted(charts - set(versions.CHART_DEFAULT_IMAGES))
    assert not unknown, f"versions.CHART_DEFAULT_IMAGES has no entry for the charts {unknown}"
    missing = sorted(ref for chart in charts for ref in versions.CHART_DEFAULT_IMAGES[chart] if ref not in refs)
    assert not missing, f"`blueprint images` leaves out the chart defaults {missing}"


def test_every_image_the_nodes_or_buildkit_pull_comes_from_a_mirrored_registry() -> None:
    pulled = [image for image in listed() if image.puller in (CONTAINERD, BUILDKIT)]
    assert {image.puller for image in pulled} == {CONTAINERD, BUILDKIT}
    bypassing = [
        f"{image.ref} (registry {image.registry}, pulled by {image.puller}, from {', '.join(image.sources)})"
        for image in pulled
        if image.registry not in MIRRORED_REGISTRIES or not image.cached
    ]
    assert not bypassing, f"pulled around the image cache: {bypassing}"


def test_the_host_dockers_images_are_listed_as_not_cached() -> None:
    host = {image.ref: image.cached for image in listed() if image.puller == DOCKER}
    assert {versions.KIND_NODE_IMAGE, versions.REGISTRY_MIRROR_IMAGE} <= set(host), host
    assert not any(host.values()), host


def synced_files(files: dict[str, str]) -> Plan:
    """A phase3 plan pushing `files` to a project, as the apps' ProjectSync does."""
    resource = {"type": "pulumi-python:dynamic/gitlab:ProjectSync", "name": "apps-example-sync", "inputs": {"files": files}}
    return Plan("blueprint", "phase3", [resource], {})


def test_a_dockerfile_from_another_registry_than_docker_hub_is_not_cached() -> None:
    dockerfile = "FROM ghcr.io/example/base:1.0 AS base\nFROM python:3.12.12-slim\nCOPY --from=base /app /app\n"
    found = {image.ref: image for image in images.images([*phase_plans(), synced_files({"Dockerfile": dockerfile})])}
    assert (found["ghcr.io/example/base:1.0"].puller, found["ghcr.io/example/base:1.0"].cached) == (BUILDKIT, False)
    assert (found["python:3.12.12-slim"].puller, found["python:3.12.12-slim"].cached) == (BUILDKIT, True)


def test_a_dockerfile_pulls_its_from_images_but_not_its_stages_or_scratch() -> None:
    dockerfile = (
        "# FROM commented:out\nARG BASE=alpine:3.22\n"
        "FROM --platform=$BUILDPLATFORM golang:1.25 AS build\nFROM ${BASE} AS run\n"
        "FROM build AS test\nFROM scratch\nFROM $UNSET\n"
    )
    assert images.dockerfile_images(dockerfile) == ["golang:1.25", "alpine:3.22"]


def test_a_ci_jobs_image_is_read_through_the_variables_that_name_it() -> None:
    ci = (
        "variables:\n  TOOLS_IMAGE: alpine/k8s:1.34.5\n  UNUSED_IMAGE: quay.io/example/unused:1\n"
        "lint:\n  image: $TOOLS_IMAGE\n  services: [{name: 'docker.io/library/postgres:17'}]\n"
        "build:\n  variables: {BASE: ghcr.io/example/builder}\n  image: {name: '${BASE}:2'}\n"
        "deploy:\n  image: $CI_REGISTRY_IMAGE/app\n"
    )
    assert images.ci_images(ci) == [
        "alpine/k8s:1.34.5",
        "quay.io/example/unused:1",
        "docker.io/library/postgres:17",
        "ghcr.io/example/builder:2",
    ]


def test_a_values_file_whose_aliases_would_expand_a_billion_fold_lists_nothing_at_once() -> None:
    laughs = "".join(f"{name}: &{name} [{', '.join([f'*{chr(ord(name) - 1)}'] * 9)}]\n" for name in "bcdefghi")
    values = "a: &a [{image: 'redis:8'}]\n" + laughs
    assert images.file_images("apps/guestbook/chart/values.yaml", values) == []


def test_a_values_file_naming_an_image_through_an_alias_lists_it() -> None:
    values = "main:\n  image: &image ghcr.io/example/app:1\nsidecar:\n  image: *image\n"
    assert images.file_images("apps/guestbook/chart/values.yaml", values) == [("ghcr.io/example/app:1", CONTAINERD)] * 2


@pytest.mark.parametrize(
    ("ref", "registry"),
    [
        ("alpine:3.22", "docker.io"),
        ("moby/buildkit:v0.24.0-rootless", "docker.io"),
        ("docker.io/valkey/valkey:9.1.1", "docker.io"),
        ("index.docker.io/library/redis:8", "docker.io"),
        ("quay.io/minio/mc:RELEASE.2025-08-13T08-35-41Z", "quay.io"),
        ("localhost:5000/app", "localhost:5000"),
        ("registry.gitlab.com/gitlab-org/gitlab-runner", "registry.gitlab.com"),
    ],
)
def test_an_images_registry_is_its_first_component_when_that_is_a_host_else_docker_hub(ref: str, registry: str) -> None:
    assert images.registry_of(ref) == registry


def test_with_the_image_cache_off_no_image_is_listed_as_cached() -> None:
    off = [planned("phase1", imageCache="false"), planned("phase2", imageCache="false")]
    cached = [image.ref for image in images.images(off) if image.cached]
    assert not cached, f"listed as cached with blueprint:imageCache=false: {cached}"


@pytest.fixture
def offline_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command plans through the test suite's cache of plans."""
    monkeypatch.setattr(images, "plans", phase_plans)


@pytest.mark.usefixtures("offline_plans")
def test_images_json_gives_each_image_its_registry_puller_cache_pin_and_sources(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["images", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert set(document) == {"images", "charts", "mirrored", "notMirrored"}
    assert document["images"], "no image listed"
    for entry in document["images"]:
        assert set(entry) == {"image", "registry", "pulledBy", "cached", "pin", "sources"}, entry
        assert entry["pulledBy"] in (CONTAINERD, BUILDKIT, DOCKER), entry
        assert isinstance(entry["cached"], bool), entry
        assert entry["pin"] in ("digest", "tag", "none"), entry
        assert entry["sources"], entry
    postgres = next(entry for entry in document["images"] if entry["image"] == versions.POSTGRES_IMAGE)
    assert postgres == {
        "image": versions.POSTGRES_IMAGE,
        "registry": "ghcr.io",
        "pulledBy": CONTAINERD,
        "cached": True,
        "pin": "digest",
        "sources": ["phase2 postgres-cluster"],
    }
    assert document["mirrored"] == {CONTAINERD: sorted(MIRRORED_REGISTRIES), BUILDKIT: ["docker.io"], DOCKER: []}
    assert [chart["chart"] for chart in document["charts"]] == [
        f"{versions.GATEWAY_CRDS_CHART.removeprefix('oci://')}:{versions.GATEWAY_CRDS_CHART_VERSION}"
    ]


@pytest.mark.usefixtures("offline_plans")
def test_images_text_names_each_images_registry_and_whether_it_is_cached(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["images"]) == 0
    lines = capsys.readouterr().out.splitlines()
    kind_node = next(line for line in lines if line.endswith(versions.KIND_NODE_IMAGE))
    assert kind_node.split()[:4] == ["docker.io", "NOT", "cached", DOCKER]
    minio = next(line for line in lines if line.endswith(versions.MINIO_IMAGE))
    assert minio.split()[:4] == ["quay.io", "cached", CONTAINERD, "digest"]
    assert lines[lines.index(minio) + 1].split() == ["from", "phase2", "minio-server"]


def test_images_says_which_config_value_is_wrong_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("stacks.config.schema.STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.phase1.yaml").write_text("config:\n  blueprint:gitlabNodes: many\n")
    assert main(["images"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "blueprint:gitlabNodes" in captured.err, captured.err
    assert "many" in captured.err, captured.err
    assert "Traceback" not in captured.err, captured.err


@pytest.mark.usefixtures("offline_plans")
def test_images_says_registry_k8s_io_has_no_mirror_and_why(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["images"]) == 0
    text = capsys.readouterr().out
    line = next(line for line in text.splitlines() if line.startswith("registry.k8s.io: no mirror"))
    assert "f215e513" in line
    assert "pulled from registry.k8s.io itself" in line
    assert main(["images", "--json"]) == 0
    assert "f215e513" in json.loads(capsys.readouterr().out)["notMirrored"]["registry.k8s.io"]


def test_buildkit_the_one_image_ci_runs_unconfined_is_pinned_by_digest() -> None:
    buildkit = [image for image in listed() if image.ref == versions.BUILDKIT_IMAGE]
    assert buildkit, "BuildKit is not listed"
    assert {image.pin for image in buildkit} == {"digest"}


@pytest.mark.parametrize(
    "text",
    ["bad-job: {services: 5}\n", "variables: [1, 2]\n", "variables: a\n", "job: {image: alpine:3, services: {a: b}}\n"],
    ids=["services-a-number", "variables-a-list", "variables-a-text", "services-a-mapping"],
)
def test_a_ci_file_of_another_shape_lists_no_image_from_that_part(text: str) -> None:
    """An app's CI file is the user's: a part of an unexpected shape is skipped, never a traceback."""
    assert images.ci_images(text) in ([], ["alpine:3"])


def test_on_an_existing_cluster_the_list_says_there_is_no_image_cache() -> None:
    """phase1's plan exports `clusterType: existing` there (stacks/outputs.py CLUSTER_TYPE)."""
    existing = Plan(project="blueprint", stack="phase1", resources=[], outputs={}, raw_outputs={"clusterType": ("existing", False)})
    results = [existing, *phase_plans()[1:]]
    text = images.to_text(results)
    assert "no image cache: blueprint:cluster is existing" in text
    assert "The cache mirrors" not in text
    assert json.loads(images.to_json(results))["imageCache"] == images.NO_IMAGE_CACHE


def test_on_kind_the_list_says_what_the_cache_mirrors() -> None:
    text = images.to_text(phase_plans())
    assert "The cache mirrors" in text
    assert "no image cache" not in text
    assert "imageCache" not in json.loads(images.to_json(phase_plans()))
