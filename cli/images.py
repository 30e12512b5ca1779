"""`blueprint images`: every image the platform pins, its registry, who pulls it, and whether the image
cache (components/image_cache.py) holds it, read from the offline plans of phase1, phase2 and phase3.

An image is pulled by one of three:

- `containerd`, a kind node's: every pod's image, CI jobs' images included. It goes through the cache
  when phase1's plan runs a mirror of the image's registry (the nodes' hosts.toml files);
- `buildkit`, the pipeline's rootless BuildKit in a CI job: an app Dockerfile's `FROM`. It resolves
  images itself, not through containerd: only through the Docker Hub mirror the image-build runner
  hands it (components/runner.py DOCKER_HUB_MIRROR_VARIABLE), so any other registry is not cached;
- `docker`, the host's Docker: the kind node image and the mirrors' own image. Never cached: they
  stay in Docker's own image store instead.

Where they come from, read generically from each plan's resource inputs: `image`/`imageName` strings
and `{registry, repository, tag}` blocks (pod specs, CloudNativePG's Cluster, Helm values), the
runner's TOML config (`image`, `helper_image`, `allowed_images`), `*IMAGE` variables of host commands
and the kind config they feed, the files phase3 pushes (CI YAML, Dockerfiles, charts' values.yaml),
and, for each Helm release, the images its chart pulls that the plan does not show
(versions.CHART_DEFAULT_IMAGES). On an existing cluster (phase1's plan exports `clusterType`) there is no cache.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

import versions
from cli.lifecycle import strings_in
from cli.plan import SECRET, UNKNOWN, Plan
from components.image_cache import NOT_MIRRORED, mirror_cache_folder
from components.runner import DOCKER_HUB_MIRROR_VARIABLE
from stacks import STACK_PHASES, outputs

CONTAINERD, BUILDKIT, DOCKER = "containerd", "buildkit", "docker"
PULLERS = {
    CONTAINERD: "a kind node's containerd",
    BUILDKIT: "BuildKit in a CI job (a Dockerfile's FROM)",
    DOCKER: "the host's Docker",
}
"""Who pulls an image, each by its own route to the registry."""

DOCKER_HUB = "docker.io"
IMAGE_KEYS = frozenset({"image", "imageName"})
"""Keys whose string value is an image reference: a container's `image`, CloudNativePG's `imageName`,
Helm values of either form."""
RUNNER_IMAGE_KEYS = frozenset({"image", "helper_image"})
"""Keys of the runner's TOML config naming an image (gitlab-runner docs, [runners.kubernetes])."""
RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
CHART_TYPE = "kubernetes:helm.sh/v4:Chart"
COMMAND_PREFIX = "command:"
NOT_AN_IMAGE = ("", SECRET, UNKNOWN)


@dataclass
class Image:
    """One image as one puller fetches it, with every place the plans name it."""

    ref: str
    puller: str
    registry: str
    cached: bool
    sources: list[str] = field(default_factory=list)

    @property
    def pin(self) -> str:
        """`digest` (the cached image is the one tested, whatever the tag does later), `tag`, or
        `none` (a chart default whose tag the chart chooses and blueprint does not know).
        """
        if "@sha256:" in self.ref:
            return "digest"
        return "tag" if _tag(self.ref) else "none"

    def to_dict(self) -> dict[str, Any]:
        return {
            "image": self.ref,
            "registry": self.registry,
            "pulledBy": self.puller,
            "cached": self.cached,
            "pin": self.pin,
            "sources": self.sources,
        }


@dataclass(frozen=True)
class Found:
    """An image reference as one resource or file names it."""

    ref: str
    puller: str
    source: str


def registry_of(ref: str) -> str:
    """The registry an image reference pulls from, as Docker and containerd read it: the first path
    component when it looks like a host (a dot or a port, or `localhost`), else Docker Hub
    (`alpine:3.22` is docker.io/library/alpine:3.22; distribution/reference normalize.go).
    """
    first, slash, _ = ref.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        return DOCKER_HUB if first in ("index.docker.io", "registry-1.docker.io") else first
    return DOCKER_HUB


def is_cached(registry: str, puller: str, mirrored: Mapping[str, frozenset[str]]) -> bool:
    """Whether `puller` fetches from `registry` through the cache: `mirrored` maps each puller to the
    registries the cache serves it (the host's Docker: none).
    """
    return registry in mirrored.get(puller, frozenset())


def mirrored_registries(plans: Iterable[Plan]) -> dict[str, frozenset[str]]:
    """Per puller, the registries the plans' image cache serves: the nodes every registry phase1 runs
    a mirror of; BuildKit Docker Hub, when a runner's config hands its jobs the Docker Hub mirror.
    """
    nodes: set[str] = set()
    buildkit: set[str] = set()
    for result in plans:
        for resource in result.resources:
            inputs = resource.get("inputs") or {}
            if resource["type"].startswith(COMMAND_PREFIX) and mirror_cache_folder(inputs):
                nodes.add(str(inputs["environment"]["REGISTRY"]))
            if re.search(rf"{DOCKER_HUB_MIRROR_VARIABLE}=[^\"\s]", json.dumps(inputs)):
                buildkit.add(DOCKER_HUB)
    return {CONTAINERD: frozenset(nodes), BUILDKIT: frozenset(buildkit & nodes), DOCKER: frozenset()}


def _usable(value: object) -> bool:
    return isinstance(value, str) and value not in NOT_AN_IMAGE and "$" not in value and "{{" not in value


def _values_images(values: object) -> Iterator[tuple[str, bool]]:
    """Image references in Helm values or a chart's values.yaml: `image`/`imageName` strings, and
    `image: {registry, repository, tag, digest}` blocks, each as (reference, True). A block with a tag
    and no repository gives (tag, False): the chart's default repository applies, which the plan
    does not show.
    """
    if isinstance(values, Mapping):
        for key, value in values.items():
            if key in IMAGE_KEYS and _usable(value):
                yield str(value), True
            elif key == "image" and isinstance(value, Mapping):
                repository, tag = value.get("repository"), value.get("tag")
                if _usable(repository):
                    registry = f"{value['registry']}/" if _usable(value.get("registry")) else ""
                    ref = f"{registry}{repository}" + (f":{tag}" if _usable(tag) else "")
                    yield ref + (f"@{value['digest']}" if _usable(value.get("digest")) else ""), True
                elif _usable(tag) and not repository:
                    yield str(tag), False
            else:
                yield from _values_images(value)
    elif isinstance(values, list):
        for item in values:
            yield from _values_images(item)


def _toml_images(text: str) -> Iterator[str]:
    """The images a runner's TOML config names (`image`, `helper_image`, `allowed_images`)."""
    try:
        document: object = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return

    def walk(value: object) -> Iterator[str]:
        if isinstance(value, Mapping):
            for key, item in value.items():
                if key in RUNNER_IMAGE_KEYS and _usable(item):
                    yield str(item)
                elif key == "allowed_images" and isinstance(item, list):
                    yield from (str(name) for name in item if _usable(name) and "*" not in str(name))
                else:
                    yield from walk(item)
        elif isinstance(value, list):
            for item in value:
                yield from walk(item)

    yield from walk(document)


def dockerfile_images(text: str) -> list[str]:
    """The base images a Dockerfile's `FROM` lines pull: not `scratch`, not an earlier stage, with
    `ARG` defaults filled in (a FROM still naming an unset argument is left out).
    """
    args: dict[str, str] = {}
    stages: set[str] = set()
    found = []
    for line in re.sub(r"\\\n", " ", text).splitlines():
        words = line.split()
        if len(words) < 2 or words[0].startswith("#"):
            continue
        instruction = words[0].upper()
        if instruction == "ARG":
            name, equals, default = words[1].partition("=")
            if equals:
                args[name] = default.strip("\"'")
        elif instruction == "FROM":
            rest = [word for word in words[1:] if not word.startswith("--")]
            if not rest:
                continue
            ref = _expand(rest[0], args)
            if len(rest) >= 3 and rest[1].upper() == "AS":
                stages.add(rest[2].lower())
            if ref.lower() != "scratch" and ref.lower() not in stages and _usable(ref):
                found.append(ref)
    return found


def _expand(text: str, variables: Mapping[str, str]) -> str:
    """`text` with each `$NAME` or `${NAME}` that `variables` sets replaced by its value."""
    return re.sub(r"\$\{?(\w+)\}?", lambda match: variables.get(match.group(1), match.group(0)), text)


def ci_images(text: str, path: str = ".gitlab-ci.yml") -> list[str]:
    """The images a GitLab CI file names: `image` and `services` (a string, or `name:`) of every job
    and of `default`, with `$VARIABLES` filled in from the file's own `variables` (the job's over the
    file's), and every variable whose name ends in IMAGE. References still naming a variable the file
    does not set (`$CI_REGISTRY_IMAGE`: GitLab's own registry) are left out.
    """
    document = _pushed_yaml(path, text)
    if not isinstance(document, Mapping):
        return []
    # Each part type-checked before use: a file of another shape (`variables: a`) lists no image from it.
    said = document.get("variables")
    top = {str(k): str(v) for k, v in (said if isinstance(said, Mapping) else {}).items() if isinstance(v, (str, int))}
    found = [value for name, value in top.items() if name.upper().endswith("IMAGE") and _usable(value)]
    for job in document.values():
        if not isinstance(job, Mapping):
            continue
        own = dict(job.get("variables") or {}) if isinstance(job.get("variables"), Mapping) else {}
        variables = {**top, **{str(k): str(v) for k, v in own.items()}}
        services = job.get("services")
        named = [job.get("image"), *(services if isinstance(services, list) else [])]
        for entry in named:
            ref = entry.get("name") if isinstance(entry, Mapping) else entry
            if isinstance(ref, str):
                for _ in range(3):  # a variable naming a variable
                    ref = _expand(ref, variables)
                if _usable(ref):
                    found.append(ref)
    return list(dict.fromkeys(found))


def _pushed_yaml(path: str, text: str) -> Any:
    """A YAML file phase3 pushes (a chart's values, a CI file), read as safely as every YAML file a
    user edits (`yaml_files`: bounded size, nesting and aliases), or None when it is not YAML PyYAML
    reads (a chart's templates, GitLab's `!reference` tags): its images are then not listed.
    """
    from yaml_files import CHART_VALUES_MAX_BYTES, YamlFileError, load_text

    try:
        return load_text(text, path, pulumi_rules=False, max_bytes=CHART_VALUES_MAX_BYTES)
    except YamlFileError:
        return None


def file_images(path: str, text: str) -> list[tuple[str, str]]:
    """(image, puller) of one file phase3 pushes: a Dockerfile's FROM (BuildKit), a CI file's images,
    a chart's values.yaml images (containerd).
    """
    name = path.rsplit("/", 1)[-1]
    if name == "Dockerfile" or name.startswith("Dockerfile.") or name.endswith(".Dockerfile"):
        return [(ref, BUILDKIT) for ref in dockerfile_images(text)]
    if name == "values.yaml":
        return [(ref, CONTAINERD) for ref, full in _values_images(_pushed_yaml(path, text)) if full]
    if name.endswith((".yml", ".yaml")) and (name == ".gitlab-ci.yml" or "/templates/" in f"/{path}"):
        return [(ref, CONTAINERD) for ref in ci_images(text, path)]
    return []


def _resource_images(stack: str, resource: Mapping[str, Any]) -> Iterator[Found]:
    name, type_, inputs = resource["name"], resource["type"], resource.get("inputs") or {}
    where = f"{stack} {name}"
    if type_.startswith(COMMAND_PREFIX):
        # A host command runs its images with the host's Docker (`docker run`, kind's node image).
        for key, value in dict(inputs.get("environment") or {}).items():
            if key.upper().endswith("IMAGE") and _usable(value):
                yield Found(str(value), DOCKER, where)
        stdin = inputs.get("stdin")
        if isinstance(stdin, str) and "image" in stdin:
            try:
                document = yaml.safe_load(stdin)
            except yaml.YAMLError:
                document = None
            yield from (Found(ref, DOCKER, where) for ref, full in _values_images(document) if full)
        return
    if type_ == RELEASE_TYPE:
        chart = str(inputs.get("chart", ""))
        defaults = versions.CHART_DEFAULT_IMAGES.get(chart)
        if defaults is None:
            yield Found(f"(every image of the {chart} chart: versions.CHART_DEFAULT_IMAGES has none)", CONTAINERD, where)
        for ref in defaults or ():
            yield Found(ref, CONTAINERD, f"{where} (chart default)")
        for ref, full in _values_images(inputs.get("values")):
            if not full:  # a tag for the chart's default repository
                ref = next((image for image in defaults or () if _tag(image) == ref), f"(the {chart} chart's default image):{ref}")
            yield Found(ref, CONTAINERD, where)
        for text in strings_in(inputs.get("values")):
            if "[[runners]]" in text:
                yield from (Found(ref, CONTAINERD, f"{where} (runner config)") for ref in _toml_images(text))
        return
    files = inputs.get("files")
    if isinstance(files, Mapping):
        for path, text in files.items():
            if isinstance(text, str):
                yield from (Found(ref, puller, f"{where} {path}") for ref, puller in file_images(str(path), text))
    for ref, full in _values_images({key: value for key, value in inputs.items() if key != "files"}):
        if full:
            yield Found(ref, CONTAINERD, where)


def _tag(ref: str) -> str:
    """The tag of an image reference ('' when it has none)."""
    name = ref.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else ""


def images(plans: Iterable[Plan]) -> list[Image]:
    """Every image the plans pull, once per puller, sorted by registry then reference."""
    plans = list(plans)
    mirrored = mirrored_registries(plans)
    listed: dict[tuple[str, str], Image] = {}
    for result in plans:
        for resource in result.resources:
            for found in _resource_images(result.stack, resource):
                registry = registry_of(found.ref) if not found.ref.startswith("(") else "?"
                image = listed.setdefault(
                    (found.ref, found.puller),
                    Image(found.ref, found.puller, registry, is_cached(registry, found.puller, mirrored)),
                )
                if found.source not in image.sources:
                    image.sources.append(found.source)
    return sorted(listed.values(), key=lambda image: (image.registry, image.ref, image.puller))


def oci_charts(plans: Iterable[Plan]) -> list[dict[str, Any]]:
    """Charts Helm pulls from an OCI registry on the host (not images, and not through the cache)."""
    found = []
    for result in plans:
        for resource in result.resources:
            chart = str((resource.get("inputs") or {}).get("chart", ""))
            if resource["type"] in (CHART_TYPE, RELEASE_TYPE) and chart.startswith("oci://"):
                version = (resource.get("inputs") or {}).get("version")
                ref = chart.removeprefix("oci://") + (f":{version}" if version else "")
                found.append(
                    {
                        "chart": ref,
                        "registry": registry_of(ref),
                        "pulledBy": "helm",
                        "cached": False,
                        "source": f"{result.stack} {resource['name']}",
                    }
                )
    return found


def plans() -> list[Plan]:
    """The offline plans of the phase stacks (dev runs the same phases, so the same images), with the user's
    stack files.
    """
    from cli.plan import plan

    return [plan(stack) for stack in STACK_PHASES["dev"]]


def to_json(results: list[Plan]) -> str:
    listed = images(results)
    document = {
        "images": [image.to_dict() for image in listed],
        "charts": oci_charts(results),
        "mirrored": {puller: sorted(registries) for puller, registries in mirrored_registries(results).items()},
        "notMirrored": NOT_MIRRORED,
    }
    if on_existing_cluster(results):  # said only there: the default document stays as it was
        document["imageCache"] = NO_IMAGE_CACHE
    return json.dumps(document, indent=2) + "\n"


def to_text(results: list[Plan]) -> str:
    listed = images(results)
    mirrored = mirrored_registries(results)
    rows = [("REGISTRY", "CACHED", "PULLED BY", "PIN")]
    rows += [(image.registry, "cached" if image.cached else "NOT cached", image.puller, image.pin) for image in listed]
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    indent = " " * (sum(widths) + 2 * len(widths))

    def columns(row: tuple[str, ...]) -> str:
        return "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) + "  "

    lines = [columns(rows[0]) + "IMAGE, and where the plans name it"]
    for row, image in zip(rows[1:], listed, strict=True):
        lines += [columns(row) + image.ref, f"{indent}from {', '.join(image.sources)}"]
    counted = f"{len(listed)} images from {len({image.registry for image in listed})} registries."
    if on_existing_cluster(results):
        lines += ["", counted, NO_IMAGE_CACHE, PIN_LEGEND]
        return "\n".join(lines + _chart_lines(results)) + "\n"
    nodes = ", ".join(sorted(mirrored[CONTAINERD])) or "no registry (blueprint:imageCache is off)"
    lines += [
        "",
        f"{counted} The cache mirrors {nodes} for the "
        f"nodes' containerd, and {', '.join(sorted(mirrored[BUILDKIT])) or 'no registry'} for BuildKit in CI.",
    ]
    for registry, why in NOT_MIRRORED.items():
        lines.append(f"{registry}: no mirror ({why}); what the nodes need from it is pulled from {registry} itself")
    for puller, who in PULLERS.items():
        missed = sum(not image.cached for image in listed if image.puller == puller)
        lines.append(f"{puller}: {who}; {missed} of its {sum(image.puller == puller for image in listed)} images not through the cache")
    lines.append("the host's Docker keeps its images in its own image store, which no destroy empties")
    lines.append(PIN_LEGEND)
    return "\n".join(lines + _chart_lines(results)) + "\n"


PIN_LEGEND = "PIN: digest (tag and digest), tag, or none (a chart default: the chart chooses the tag)"
NO_CACHE_ON_EXISTING = (
    "blueprint:cluster is existing: the image cache runs beside a kind cluster alone, and the cluster's nodes pull every "
    "image from its registry themselves"
)
"""Why there is no image cache on an existing cluster: `blueprint images` and `blueprint status` say it."""
NO_IMAGE_CACHE = f"no image cache: {NO_CACHE_ON_EXISTING}"


def _chart_lines(results: list[Plan]) -> list[str]:
    return [
        f"chart {chart['chart']} (from {chart['source']}): pulled by Helm on the host, not through the cache"
        for chart in oci_charts(results)
    ]


def on_existing_cluster(results: Iterable[Plan]) -> bool:
    """Whether phase1's plan among `results` puts the platform on an existing cluster, as its outputs say."""
    return any(
        result.stack == "phase1" and outputs.on_existing({key: value for key, (value, _) in result.raw_outputs.items()})
        for result in results
    )


def run(as_json: bool) -> int:
    """`blueprint images [--json]`: plan the phase stacks offline, print what they pull."""
    import logging
    import sys

    from cli.plan import ProgramFailed

    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(message)s", stream=sys.stderr)
    try:
        results = plans()
    except ProgramFailed as failed:
        return failed.say()
    sys.stdout.write(to_json(results) if as_json else to_text(results))
    return 0
