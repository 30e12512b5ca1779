"""The linters and the type checker the project is configured with (pyproject.toml) pass."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from stacks.config import PROJECT_DIR


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *command], cwd=PROJECT_DIR, capture_output=True, text=True, timeout=300, check=False)


def test_ruff_finds_nothing() -> None:
    done = run("ruff", "check", "--output-format", "concise", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_code_is_ruff_formatted() -> None:
    done = run("ruff", "format", "--check", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_strict_finds_nothing() -> None:
    done = run("mypy")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_follows_every_kubernetes_api_our_code_names() -> None:
    """mypy skips the API groups of pulumi_kubernetes that nothing of ours uses (for speed): a group
    our code names must be followed, or its classes would be Any to mypy, and nothing checked."""
    config = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text())["tool"]["mypy"]
    followed = [
        pattern
        for override in config["overrides"]
        if override.get("follow_imports") == "normal"
        for pattern in ([override["module"]] if isinstance(override["module"], str) else override["module"])
    ]
    spec = importlib.util.find_spec("pulumi_kubernetes")
    assert spec is not None
    assert spec.origin is not None
    package = Path(spec.origin).parent
    ours = [PROJECT_DIR / name for name in config["files"]]
    texts = [path.read_text() for top in ours for path in ([top] if top.suffix == ".py" else top.rglob("*.py"))]
    roots = {"pulumi_kubernetes"} | {alias for text in texts for alias in re.findall(r"import pulumi_kubernetes as (\w+)", text)}
    named: set[str] = set()
    for text in texts:
        for match in re.finditer(rf"(?<![\w.])(?:{'|'.join(sorted(roots))})((?:\.\w+)+)", text):
            parts = match.group(1).split(".")[1:]
            for end in range(1, len(parts) + 1):  # each module (and package) the name goes through
                where = package.joinpath(*parts[:end])
                if where.with_suffix(".py").is_file() or (where / "__init__.py").is_file():
                    named.add(".".join(["pulumi_kubernetes", *parts[:end]]))
    assert "pulumi_kubernetes.core.v1" in named  # the scan sees our code

    def follows(module: str) -> bool:
        return any(module == pattern or (pattern.endswith(".*") and f"{module}.".startswith(pattern[:-1])) for pattern in followed)

    assert sorted(module for module in named if not follows(module)) == []
