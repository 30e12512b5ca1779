"""apps/ copied as the sync sees it, for tests that need a checkout's apps of their own."""

from __future__ import annotations

import shutil
from functools import cache
from pathlib import Path

from apps_manifest import APPS_DIR, folder_files, load_manifest


@cache
def _synced_files() -> tuple[tuple[Path, Path], ...]:
    """Each file of the checkout's apps/ the sync pushes, with its path under apps/: listed once a
    run (git lists each project's folder; no test changes the checkout's own apps/)."""
    return tuple(
        (path, Path(project.name) / path.relative_to(project.folder))
        for project in load_manifest()
        for path in folder_files(project.folder, project.name).paths
    )


def copy_apps(apps: Path) -> None:
    """apps/ as the sync sees it (each project's files that git would commit, and the manifest),
    whatever else a checkout holds there (a .venv, its links)."""
    apps.mkdir(parents=True)
    shutil.copy2(APPS_DIR / "apps_manifest.yaml", apps / "apps_manifest.yaml")
    files = _synced_files()
    for folder in sorted({relative.parent for _, relative in files}):
        (apps / folder).mkdir(parents=True, exist_ok=True)
    for path, relative in files:
        shutil.copy2(path, apps / relative)
