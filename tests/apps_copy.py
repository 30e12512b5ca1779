"""apps/ copied as the sync sees it, for tests that need a checkout's apps of their own."""

from __future__ import annotations

import shutil
from pathlib import Path

from apps_manifest import APPS_DIR, folder_files, load_manifest


def copy_apps(apps: Path) -> None:
    """apps/ as the sync sees it (each project's files that git would commit, and the manifest),
    whatever else a checkout holds there (a .venv, its links)."""
    apps.mkdir(parents=True)
    shutil.copy2(APPS_DIR / "apps_manifest.yaml", apps / "apps_manifest.yaml")
    for project in load_manifest():
        for path in folder_files(project.folder, project.name).paths:
            target = apps / project.name / path.relative_to(project.folder)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
