"""What installing blueprint brings: every package the program imports is one it declares, and the
only build is the editable install of `uv sync`, since blueprint runs from its checkout.

The imports are checked by deptry (pyproject.toml, [tool.deptry]), run as a user would; the builds
by the real build backend, hatchling from the dev group, called in a subprocess as a build frontend
calls it, offline.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from stacks.config import PROJECT_DIR

PYPROJECT = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text())
GUESTBOOK = PROJECT_DIR / "apps" / "guestbook"


def deptry(root: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """`deptry .` in `root`, as a user runs it, with the environment's installed packages."""
    return subprocess.run(
        [sys.executable, "-m", "deptry", "--no-ansi", *options, "."], cwd=root, capture_output=True, text=True, timeout=120, check=False
    )


def findings(done: subprocess.CompletedProcess[str]) -> set[tuple[str, str, str]]:
    """deptry's findings as (file, rule, package)."""
    return set(re.findall(r"^(\S+?):\d+:\d+: (DEP\d+) '([^']+)'", done.stdout + done.stderr, re.MULTILINE))


def copy_of_the_sources(target: Path) -> Path:
    """pyproject.toml and every .py file of the checkout, in the same layout: what deptry reads."""

    def not_sources(folder: str, names: list[str]) -> set[str]:
        return {n for n in names if n.startswith(".") or n == "infra" or (Path(folder, n).is_file() and not n.endswith(".py"))}

    shutil.copytree(PROJECT_DIR, target, ignore=not_sources)
    shutil.copy(PROJECT_DIR / "pyproject.toml", target / "pyproject.toml")
    return target


def program_modules() -> set[str]:
    """Every .py file of the program: the checkout's but those of tests/, apps/ (the apps' own
    images), the data folders of infra/ and hidden folders."""
    found = set()
    for folder, dirs, files in os.walk(PROJECT_DIR):
        top = Path(folder) == PROJECT_DIR
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__" and not (top and d in {"tests", "apps", "infra"})]
        found |= {str(Path(folder, name).relative_to(PROJECT_DIR)) for name in files if name.endswith(".py")}
    return found


@functools.cache
def deptry_of_the_checkout() -> subprocess.CompletedProcess[str]:
    """`deptry --verbose .` in the checkout, run once a process: two rules read it (read-only).
    `--verbose` lists the files deptry scans, and changes nothing of what it finds."""
    return deptry(PROJECT_DIR, "--verbose")


def test_the_dependency_check_reads_every_module_of_the_program() -> None:
    done = deptry_of_the_checkout()
    listed = done.stderr.split("Python files to scan for imports:\n", 1)[1].split("\n\nScanning ", 1)[0]
    assert set(listed.splitlines()) == program_modules()


def test_every_package_the_program_imports_is_a_declared_dependency() -> None:
    done = deptry_of_the_checkout()
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_import_the_program_does_not_declare_fails_the_dependency_check(tmp_path: Path) -> None:
    project = copy_of_the_sources(tmp_path / "blueprint")
    # attrs comes only through jsonschema (transitive), jsonschema is a dev dependency: neither is the
    # program's to import. The same imports in tests/ are fine.
    imports = "import attrs\nimport jsonschema\n"
    (project / "cli" / "undeclared.py").write_text(imports)
    (project / "tests" / "test_undeclared.py").write_text(imports)
    done = deptry(project)
    assert done.returncode != 0, done.stdout + done.stderr
    assert findings(done) == {("cli/undeclared.py", "DEP003", "attrs"), ("cli/undeclared.py", "DEP004", "jsonschema")}, done.stdout


def test_every_package_the_guestbook_imports_is_one_its_image_installs() -> None:
    # The guestbook is not the program: its image installs apps/guestbook/requirements.txt.
    done = deptry(GUESTBOOK)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_tests_run_the_guestbook_with_the_redis_client_its_image_installs() -> None:
    image = [line for line in (GUESTBOOK / "requirements.txt").read_text().splitlines() if line.startswith("redis")]
    assert image == [f"redis=={version('redis')}"], image


def build(hook: str, target: Path) -> subprocess.CompletedProcess[str]:
    """hatchling's PEP 517 hook `hook` (build_wheel, build_sdist, build_editable) into `target`,
    run from the checkout as a frontend runs it."""
    code = f"import sys, hatchling.build as backend; print(backend.{hook}(sys.argv[1]))"
    return subprocess.run(
        [sys.executable, "-c", code, str(target)], cwd=PROJECT_DIR, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_builds_here_use_the_backend_pyproject_requires() -> None:
    assert PYPROJECT["build-system"] == {"requires": [f"hatchling=={version('hatchling')}"], "build-backend": "hatchling.build"}


@pytest.mark.parametrize("hook", ["build_wheel", "build_sdist"])
def test_a_wheel_or_sdist_is_refused_with_one_sentence_saying_it_runs_from_its_checkout(hook: str, tmp_path: Path) -> None:
    done = build(hook, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    said = done.stderr.strip()
    assert "\n" not in said, said  # the sentence alone, no traceback
    assert "runs from its checkout" in said, said
    assert "`uv run blueprint up`" in said, said
    assert not list(tmp_path.iterdir())


def test_the_editable_install_puts_the_checkout_on_sys_path_with_the_blueprint_command(tmp_path: Path) -> None:
    done = build("build_editable", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    with zipfile.ZipFile(tmp_path / done.stdout.strip()) as wheel:
        pth = [name for name in wheel.namelist() if name.endswith(".pth")]
        assert [wheel.read(name).decode().split() for name in pth] == [[str(PROJECT_DIR)]], pth
        entry_points = next(name for name in wheel.namelist() if name.endswith(".dist-info/entry_points.txt"))
        assert "blueprint = cli.main:main" in wheel.read(entry_points).decode().splitlines()
        copied = [name for name in wheel.namelist() if name.endswith(".py")]
        assert not copied, f"a module copied into site-packages would shadow the checkout's: {copied}"


def test_the_installed_blueprint_command_runs_the_checkouts_program_from_any_folder(tmp_path: Path) -> None:
    command = Path(sys.executable).with_name("blueprint")  # what `uv sync` installed, `uv run blueprint` runs
    done = subprocess.run([command, "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: blueprint"), done.stdout


# The machines `uv sync` must set up from wheels alone (no compiler, no Rust): what the doctor installs
# tools for (cli/doctor/machine.py `_ARCH`), on Linux and macOS.
MACHINES = {
    "Linux x86_64": {"sys_platform": "linux", "platform_machine": "x86_64", "tag": ("linux", "x86_64")},
    "Linux arm64": {"sys_platform": "linux", "platform_machine": "aarch64", "tag": ("linux", "aarch64")},
    "macOS Intel": {"sys_platform": "darwin", "platform_machine": "x86_64", "tag": ("macosx", "x86_64")},
    "macOS Apple silicon": {"sys_platform": "darwin", "platform_machine": "arm64", "tag": ("macosx", "arm64")},
}


def _applies(marker: str | None, machine: dict[str, Any]) -> bool:
    """A lock edge's marker on `machine` (the `==`/`!=`/and/or markers uv writes; another applies)."""
    if not marker:
        return True
    names = {"sys_platform": machine["sys_platform"], "platform_machine": machine["platform_machine"]}
    try:
        return bool(eval(marker, {"__builtins__": {}}, names))  # noqa: S307 - the lock's own marker text
    except NameError:
        return True


def _fits(wheel: str, machine: dict[str, Any]) -> bool:
    python, abi, platforms = wheel.removesuffix(".whl").split("-")[-3:]
    if not ({"py3", "cp311"} & set(python.split(".")) or abi == "abi3"):
        return False
    system, arch = machine["tag"]
    return platforms == "any" or any(system in tag and (tag.endswith(arch) or tag.endswith("universal2")) for tag in platforms.split("."))


def test_every_runtime_package_installs_from_a_wheel_on_each_supported_machine() -> None:
    # cryptography 49 dropped Intel macOS wheels: without its 48.0.1 there, `uv sync` would need Rust.
    lock = tomllib.loads((PROJECT_DIR / "uv.lock").read_text())
    packages = {(package["name"], package["version"]): package for package in lock["package"]}
    missing = []
    for name, machine in MACHINES.items():
        seen: set[tuple[str, str]] = set()
        todo = [key for key in packages if key[0] == "blueprint"]
        while todo:
            key = todo.pop()
            if key in seen:
                continue
            seen.add(key)
            package = packages[key]
            if key[0] != "blueprint" and not any(_fits(wheel["url"].rsplit("/", 1)[-1], machine) for wheel in package.get("wheels", [])):
                missing.append(f"{key[0]}=={key[1]} on {name}")
            for edge in package.get("dependencies", []):
                if _applies(edge.get("marker"), machine):
                    versions = [edge["version"]] if "version" in edge else [v for (n, v) in packages if n == edge["name"]]
                    todo += [(edge["name"], version) for version in versions]
    assert missing == []
