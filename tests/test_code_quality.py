"""The linters and the type checker the project is configured with (pyproject.toml) pass."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from stacks.config import PROJECT_DIR
from tests import early_mypy


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *command], cwd=PROJECT_DIR, capture_output=True, text=True, timeout=300, check=False)


def test_ruff_finds_nothing() -> None:
    done = run("ruff", "check", "--output-format", "concise", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_code_is_ruff_formatted() -> None:
    done = run("ruff", "format", "--check", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_strict_finds_nothing(request: pytest.FixtureRequest) -> None:
    done = early_mypy.result(request.config) or run("mypy")
    assert done.returncode == 0, done.stdout + done.stderr


def _held_modules(texts: list[str], roots: set[str], package: Path) -> set[str]:
    """The pulumi_kubernetes modules and packages our code holds by a name of its own:
    `from pulumi_kubernetes.core import v1`, `import pulumi_kubernetes.core.v1 as v1`, `v1 = k8s.core.v1`."""
    alias = "|".join(sorted(roots))
    held = [
        [*match.group(1).split(".")[1:], name]
        for text in texts
        for match in re.finditer(r"^\s*from pulumi_kubernetes((?:\.\w+)*) import \(?([\w, \n]+)", text, re.MULTILINE)
        for name in re.findall(r"(\w+)(?: as \w+)?", match.group(2))
    ]
    held += [
        (match.group(1) or match.group(2)).split(".")[1:]
        for text in texts
        for match in re.finditer(rf"^\s*(?:import pulumi_kubernetes((?:\.\w+)+) as|\w+ *= *(?:{alias})((?:\.\w+)+)$)", text, re.MULTILINE)
    ]
    modules = set()  # a package is named `<package>.*`: all of it must be followed, as mypy's patterns say
    for parts in held:
        where, name = package.joinpath(*parts), ".".join(["pulumi_kubernetes", *parts])
        module = where.with_suffix(".py")  # core/v1/Pod.py is the module of class Pod: the package's name Pod is the class
        if (where / "__init__.py").is_file():
            modules.add(f"{name}.*")
        elif module.is_file() and not re.search(rf"^class {parts[-1]}\b", module.read_text(), re.MULTILINE):
            modules.add(name)
    return modules


def test_mypy_follows_every_kubernetes_api_our_code_names() -> None:
    """mypy skips the modules of pulumi_kubernetes that nothing of ours uses (for speed): a module our
    code names, or that defines a class our code names (`k8s.core.v1.ServicePortArgs` is in
    core/v1/_inputs.py), must be followed, or its classes would be Any to mypy, and nothing checked."""
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
    references = [
        match.group(1).split(".")[1:]
        for text in texts
        for match in re.finditer(rf"(?<![\w.])(?:{'|'.join(sorted(roots))})((?:\.\w+)+)", text)
    ]
    references += [  # from pulumi_kubernetes.core.v1 import Namespace, ...
        [*match.group(1).split(".")[1:], name]
        for text in texts
        for match in re.finditer(r"^from pulumi_kubernetes((?:\.\w+)+) import \(?([\w, \n]+)", text, re.MULTILINE)
        for name in re.findall(r"\w+", match.group(2))
    ]
    named: set[str] = set()
    for parts in references:
        for end in range(1, len(parts) + 1):  # each module (and package) the name goes through
            where = package.joinpath(*parts[:end])
            if where.with_suffix(".py").is_file() or (where / "__init__.py").is_file():
                named.add(".".join(["pulumi_kubernetes", *parts[:end]]))
            elif (folder := package.joinpath(*parts[: end - 1])).is_dir():  # a class: the module that defines it
                defining = re.compile(rf"^class {parts[end - 1]}\b", re.MULTILINE)
                modules = [path for path in sorted(folder.glob("*.py")) if defining.search(path.read_text())]
                named.update(
                    ".".join(["pulumi_kubernetes", *parts[: end - 1], *[path.stem][: path.stem != "__init__"]]) for path in modules
                )
                break
    assert "pulumi_kubernetes.core.v1" in named  # the scan sees our code
    assert "pulumi_kubernetes.core.v1._inputs" in named  # and the modules of the classes it names
    assert "pulumi_kubernetes.rbac.v1.ClusterRoleBinding" in named  # and what it imports by name

    def follows(module: str) -> bool:
        return any(module == pattern or (pattern.endswith(".*") and f"{module}.".startswith(pattern[:-1])) for pattern in followed)

    assert sorted(module for module in named if not follows(module)) == []
    held = [module for module in _held_modules(texts, roots, package) if not follows(module.replace(".*", ".\0"))]
    assert held == [], (
        f"{sorted(held)}: our code holds these pulumi_kubernetes modules by a name of its own, so this test cannot see which "
        "of their classes it uses: name each class (`k8s.<group>.<version>.<Class>` or "
        "`from pulumi_kubernetes.<group>.<version> import <Class>`), or follow all of the module in pyproject.toml"
    )
