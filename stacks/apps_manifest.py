"""`apps/apps_manifest.yaml`: which GitLab projects phase3 makes, read and checked before anything
is registered. A malformed manifest is refused with the entry and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import yaml

from stacks.config import PROJECT_DIR

APPS_DIR = PROJECT_DIR / "apps"
MANIFEST = APPS_DIR / "apps_manifest.yaml"
SHARED_CODE = "shared-code"
KEYS = {"name", "deploy", "chart", "build", "host", "needs"}


class ManifestError(pulumi.RunError):
    """apps/apps_manifest.yaml is malformed; the message names the entry and the fix."""


@dataclass(frozen=True, kw_only=True)
class AppProject:
    name: str
    deploy: bool
    chart: str | None
    """The chart's folder relative to the project, when it deploys."""
    build: bool
    host: str | None
    """The first label of the name it answers at, if any."""
    needs: tuple[str, ...] = ()
    """Deploying projects whose smoke pipeline must be green before this one's sources are pushed."""

    @property
    def folder(self) -> Path:
        return APPS_DIR / self.name


def parse_manifest(document: Any, apps_dir: Path = APPS_DIR) -> list[AppProject]:
    """The projects, in order; every problem reported at once."""
    where = "apps/apps_manifest.yaml"
    if not isinstance(document, dict) or set(document) != {"projects"} or not isinstance(document["projects"], list):
        raise ManifestError(f"{where}: expected one key, `projects`, holding a list of projects")
    problems: list[str] = []
    projects: list[AppProject] = []
    seen: set[str] = set()
    for index, entry in enumerate(document["projects"]):
        label = f"{where}: projects[{index}]"
        if not isinstance(entry, dict):
            problems.append(f"{label}: expected a mapping with name, deploy, chart, build, host")
            continue
        name = entry.get("name")
        label = f"{label} ({name!r})"
        unknown = sorted(set(entry) - KEYS)
        if unknown:
            problems.append(f"{label}: unknown key(s) {', '.join(unknown)}; valid keys are {', '.join(sorted(KEYS))}")
        if not isinstance(name, str) or not name:
            problems.append(f"{label}: `name` must be the project's path, a non-empty string")
            continue
        if name in seen:
            problems.append(f"{label}: the name {name!r} is used twice; give each project its own")
        seen.add(name)
        if not (apps_dir / name).is_dir():
            problems.append(f"{label}: apps/{name}/ does not exist; create it or remove the entry")
        deploy, build = entry.get("deploy", False), entry.get("build", False)
        if not isinstance(deploy, bool) or not isinstance(build, bool):
            problems.append(f"{label}: `deploy` and `build` must be true or false")
        chart = entry.get("chart")
        if deploy and not (isinstance(chart, str) and (apps_dir / name / chart / "Chart.yaml").is_file()):
            problems.append(f"{label}: deploys, so `chart` must name its chart folder (apps/{name}/<chart>/Chart.yaml)")
        if build and not (apps_dir / name / "Dockerfile").is_file():
            problems.append(f"{label}: builds, so apps/{name}/Dockerfile must exist")
        host = entry.get("host")
        if host is not None and not (isinstance(host, str) and host.replace("-", "").isalnum() and host.islower()):
            problems.append(f"{label}: `host` must be one lowercase DNS label, such as guestbook")
        needs = entry.get("needs", [])
        if not (isinstance(needs, list) and all(isinstance(need, str) for need in needs)):
            problems.append(f"{label}: `needs` must be a list of project names")
            needs = []
        projects.append(AppProject(name=name, deploy=bool(deploy), chart=chart, build=bool(build), host=host, needs=tuple(needs)))
    deploying = {project.name for project in projects if project.deploy}
    for project in projects:
        for need in project.needs:
            if need not in deploying or need == project.name:
                problems.append(f"{where}: {project.name!r} needs {need!r}, which is not another deploying project of the manifest")
    if projects and projects[0].name != SHARED_CODE:
        problems.append(f"{where}: {SHARED_CODE!r} must come first (the others include its CI templates); it is {projects[0].name!r}")
    if SHARED_CODE not in seen:
        problems.append(f"{where}: the {SHARED_CODE!r} project, whose templates every pipeline includes, is missing")
    if problems:
        raise ManifestError("invalid apps manifest:\n  " + "\n  ".join(problems))
    return projects


def load_manifest(path: Path = MANIFEST) -> list[AppProject]:
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise ManifestError(f"{path}: cannot be read as YAML ({error})") from error
    return parse_manifest(document, path.parent)
