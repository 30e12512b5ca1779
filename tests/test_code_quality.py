"""The linters and the type checker the project is configured with (pyproject.toml) pass."""

from __future__ import annotations

import subprocess
import sys

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
