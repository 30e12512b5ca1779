"""Shell is kept as shell: every script the program runs passes shellcheck, holds no value in its
text, reads no name its command does not pass, and none of any length hides in a Python string
(`components/scripts.py`)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from cli.plan import RUN_TOKEN, Plan
from providers.deploy_kubeconfig import ADDED_ENVIRONMENT
from stacks.config import PROJECT_DIR
from tests.plans import COMMAND, planned
from tests.python_source import parse

SHELLCHECK = Path(sys.executable).parent / "shellcheck"
PLANS: tuple[tuple[str, dict[str, str]], ...] = (
    *((stack, {}) for stack in ("phase1", "phase2", "phase3", "dev")),
    ("dev", {"imageCache": "false"}),
    ("dev", {"headlamp": "true", "preserveData": "true"}),
    *((stack, {"cluster": "existing", "kubeContext": "ctx"}) for stack in ("phase1", "phase2")),
)
"""Every stack as it comes (preserveData=false: the wipes), dev, which holds every component, in
the configurations that change which scripts it registers, and the phases that read an existing
cluster (their invokes)."""
SKIPPED_FOLDERS = {".git", ".venv", ".pulumi-state", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
PROGRAM = ("cli", "stacks", "components", "providers")
"""The program's packages; its top-level modules too."""
CI_TEMPLATES = PROJECT_DIR / "apps" / "shared-code" / "templates"
SHELL_LINE = re.compile(r"^\s*(fi|done|esac)\s*($|[;|&<>#)])|(^|;)\s*(then|do)\s*$", re.MULTILINE)
"""A line only shell has: `fi`, `done` or `esac` ending a block, or `then` or `do` ending a line."""
MAX_SCRIPT_LINES = 20


def shell_files() -> Iterator[Path]:
    """Every `.sh` file of the project, and every file whose first line runs a shell (`.ci/run`)."""
    for folder, folders, files in os.walk(PROJECT_DIR):
        folders[:] = sorted(name for name in folders if name not in SKIPPED_FOLDERS)
        for name in sorted(files):
            path = Path(folder) / name
            if name.endswith(".sh"):
                yield path
            elif "." not in name and os.access(path, os.X_OK):
                with path.open("rb") as file:
                    first = file.readline()
                if re.match(rb"#!\s*\S*(/|env\s+)(sh|bash|dash)\s*$", first):
                    yield path


def sh_c_texts(value: Any) -> Iterator[str]:
    """The script of every `[<shell>, "-c", <script>, ...]` inside `value` (a pod's command, say)."""
    if isinstance(value, Mapping):
        for item in value.values():
            yield from sh_c_texts(item)
    elif isinstance(value, list):
        for index, item in enumerate(value[:-2]):
            if isinstance(item, str) and Path(item).name in ("sh", "bash", "dash") and value[index + 1] == "-c":
                yield str(value[index + 2])
        for item in value:
            yield from sh_c_texts(item)


def plan_scripts(resource: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(label, script) of every shell script `resource` registers."""
    inputs = resource.get("inputs") or {}
    if resource["type"] == COMMAND:
        yield from ((key, str(inputs[key])) for key in ("create", "update", "delete") if isinstance(inputs.get(key), str))
    elif resource["type"].endswith(":DeployKubeconfig"):
        yield "script", str(inputs["script"])
    yield from (("sh-c", text) for text in sh_c_texts(inputs))


def invoke_scripts(result: Plan) -> Iterator[tuple[str, str]]:
    """(label, script) of every command `result`'s program runs as an invoke (`local.run`), on every
    preview and up."""
    yield from ((f"invoke{index}", str(invoke["command"])) for index, invoke in enumerate(result.invokes) if invoke["token"] == RUN_TOKEN)


def ci_job_scripts() -> Iterator[tuple[str, str]]:
    """(label, script) of every job of the apps' CI templates: its lines, as the runner runs them in
    one shell (YAML anchors resolved); `after_script` runs in a shell of its own."""

    def lines(value: Any) -> Iterator[str]:
        if isinstance(value, list):
            for item in value:
                yield from lines(item)
        elif value is not None:
            yield str(value)

    for template in sorted(CI_TEMPLATES.glob("*.yml")):
        for job, body in (yaml.safe_load(template.read_text()) or {}).items():
            if isinstance(body, dict) and "script" in body:
                yield f"{template.stem}.{job}", "\n".join(lines([body.get("before_script"), body["script"]])) + "\n"
                if body.get("after_script"):
                    yield f"{template.stem}.{job}.after", "\n".join(lines(body["after_script"])) + "\n"


def test_shellcheck_finds_nothing_in_any_script_the_program_runs(tmp_path: Path) -> None:
    """The `.sh` files, every script the plans register (PLANS), and the apps' CI jobs: POSIX sh, as
    /bin/sh runs them (`components/.shellcheckrc`)."""
    (tmp_path / ".shellcheckrc").write_text("shell=sh\n")
    texts: dict[str, str] = {}
    for stack, config in PLANS:
        result = planned(stack, **config)
        for resource in result.resources:
            for key, text in plan_scripts(resource):
                texts.setdefault(text, f"{stack}.{resource['name']}.{key}")
        texts.update({text: f"{stack}.{label}" for label, text in invoke_scripts(result)})
    texts.update({text: f"ci.{label}" for label, text in ci_job_scripts()})
    for text, label in texts.items():
        (tmp_path / f"{label}.sh").write_text(text)
    files = [*shell_files(), *sorted(tmp_path.glob("*.sh"))]
    assert any("kind create cluster" in text for text in texts), "the plans' scripts were not found"
    assert any(label.startswith("phase2.invoke") for label in texts.values()), "phase2's invoke was not found"
    assert PROJECT_DIR / "components" / "host_folder_delete.sh" in files, "the .sh files were not found"
    done = subprocess.run([str(SHELLCHECK), *map(str, files)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


MAKES = re.compile(r"\bmkdir\b|\bmktemp\b|>>?\s*\"?\$")
"""What makes a file or folder: `mkdir`, `mktemp`, or output into a path a variable holds."""


def test_every_script_that_makes_a_file_on_the_host_keeps_others_from_writing_in_it() -> None:
    """pulumi-command runs a script with the user's umask (000 on a shared machine): one that makes a
    file or folder sets one of at least 022 first (`umask go-w`), or another user could swap what it
    holds (a registry's hosts.toml the nodes read, a claimed folder). Not a pod's script: its
    container's umask is the image's."""
    loose = set()
    for stack, config in PLANS:
        result = planned(stack, **config)
        host = [
            (resource["name"], key, text)
            for resource in result.resources
            if resource["type"] == COMMAND or resource["type"].endswith(":DeployKubeconfig")
            for key, text in plan_scripts(resource)
            if key != "sh-c"
        ]
        for name, key, text in [*host, *(("invoke", label, text) for label, text in invoke_scripts(result))]:
            if MAKES.search(text) and not re.search(r"(^|&&|;)\s*umask go-w\b", text, re.MULTILINE):
                loose.add((stack, name, key))
    assert loose == set()


FROM_THE_USERS_ENVIRONMENT = {
    "KIND_EXPERIMENTAL_DOCKER_NETWORK": "kind reads it from the user's shell to pick its Docker network; the image "
    "cache's mirrors must join the same one (components/lib_kind_network.sh)",
}
"""The names a script reads on purpose from the user's environment, each with why: pulumi-command
runs a script with the user's environment below its own, so any other name a script reads and its
command does not pass is one a stray `export` in the user's shell decides."""
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SET = re.compile(r"(?:^|[\s;&|(])([A-Za-z_]\w*)=|\bfor\s+([A-Za-z_]\w*)\s+in\b|\bread\s+(?:-r\s+)?([A-Za-z_][\w ]*)")
"""A name the script sets itself: `name=...`, `for name in`, `read [-r] name...`."""


def names_read(text: str) -> set[str]:
    """Every `$NAME` and `${NAME...}` `text` expands: outside comments and single quotes (text
    another program reads: a Go template, awk, a container's `sh -c`), inside double quotes and
    command substitutions."""
    found: set[str] = set()
    modes, index = ["code"], 0
    while index < len(text):
        char, mode = text[index], modes[-1]
        step = 1
        if char == "\\":
            step = 2
        elif mode == "quoted" and char == '"':
            modes.pop()
        elif mode != "quoted" and char == "#" and (index == 0 or text[index - 1] in " \t\n;"):
            step = (text.find("\n", index) % (len(text) + 1)) - index  # to the line's end (or the text's)
        elif mode != "quoted" and char == "'":
            step = (text.find("'", index + 1) % (len(text) + 1)) + 1 - index
        elif mode != "quoted" and char == '"':
            modes.append("quoted")
        elif mode == "substitution" and char == ")":
            modes.pop()
        elif char == "$" and text[index + 1 : index + 2] == "(":
            modes.append("substitution")
            step = 2
        elif char == "$":
            braces = 2 if text.startswith("{#", index + 1) else 1 if text.startswith("{", index + 1) else 0  # ${NAME}, ${#NAME}
            if name := NAME.match(text, index + 1 + braces):
                found.add(name.group())
        index += step
    return found


def names_set(text: str) -> set[str]:
    return {name for match in SET.finditer(text) for group in match.groups() if group for name in group.split()}


def test_every_name_a_script_reads_is_passed_by_its_command() -> None:
    """pulumi-command (and DeployKubeconfig) run a script with the user's environment below the
    command's: a name read and not passed (PARENT_OWNER, say) is decided by the user's shell."""
    unpassed = set()
    for stack, config in PLANS:
        for resource in planned(stack, **config).resources:
            inputs = resource.get("inputs") or {}
            passed = set(inputs.get("environment") or {}) | set(FROM_THE_USERS_ENVIRONMENT)
            if resource["type"].endswith(":DeployKubeconfig"):
                passed |= set(ADDED_ENVIRONMENT)  # what providers/deploy_kubeconfig.py adds
            elif resource["type"] != COMMAND:
                continue
            for key, text in plan_scripts(resource):
                for name in names_read(text) - names_set(text) - passed:
                    unpassed.add((stack, resource["name"], key, name))
    assert unpassed == set()


def test_the_check_finds_the_names_a_script_reads_and_not_those_another_program_reads() -> None:
    text = """set -eu
x=$(printf '%s' "$FOLDER" | awk '{ print $5 }')  # not $IN_A_COMMENT
for item in ${LIST:-}; do echo "$item ${#OTHER} $(cat "$DEEP")"; done
docker inspect -f '{{range $name, $_ := .Networks}}{{$name}}{{end}}' "$CONTAINER"
while read -r sub mode; do echo "$sub $mode"; done
"""
    assert names_read(text) - names_set(text) == {"FOLDER", "LIST", "OTHER", "DEEP", "CONTAINER"}


def test_script_texts_hold_no_values() -> None:
    """Values reach a script through its environment: another name, folder and domain register
    the very same scripts."""

    def scripts(**config: str) -> dict[str, str]:
        return {f"{r['type']} {r['name']} {key}": text for r in planned("dev", **config).resources for key, text in plan_scripts(r)}

    assert scripts() == scripts(clusterName="lab", dataDir="/tmp/elsewhere", domain="other.example.net", imageCacheDir="/tmp/images")


def test_invoke_commands_hold_no_values() -> None:
    """As a script: the command phase2 runs on every preview and up reads the cluster's name from its
    environment, so another name, folder and domain run the very same command."""

    def commands(**config: str) -> list[str]:
        return [text for _, text in invoke_scripts(planned("phase2", **config))]

    assert commands(), "phase2 runs `kind get kubeconfig` as an invoke"
    assert commands() == commands(clusterName="lab", dataDir="/tmp/elsewhere", domain="other.example.net")


def long_shell_strings(source: str) -> Iterator[int]:
    """The line of every string in `source` (a docstring aside) of more than MAX_SCRIPT_LINES lines
    that reads as shell; an f-string's fields count as text."""
    skipped: set[int] = set()  # docstrings, and the pieces of f-strings
    strings: list[tuple[ast.expr, str]] = []
    for node in ast.walk(parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            skipped.add(id(node.value))
        elif isinstance(node, ast.JoinedStr):
            skipped.update(id(value) for value in node.values)
            strings.append((node, "".join(str(value.value) if isinstance(value, ast.Constant) else "{}" for value in node.values)))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            strings.append((node, node.value))
    for node, text in strings:
        if id(node) not in skipped and len(text.splitlines()) > MAX_SCRIPT_LINES and SHELL_LINE.search(text):
            yield node.lineno


def test_no_python_string_holds_a_shell_script_of_more_than_20_lines() -> None:
    """Scripts live in `.sh` files (components/scripts.py), where shellcheck and editors see them."""
    modules = [*PROJECT_DIR.glob("*.py"), *(path for package in PROGRAM for path in sorted((PROJECT_DIR / package).rglob("*.py")))]
    found = [f"{module.relative_to(PROJECT_DIR)}:{line}" for module in modules for line in long_shell_strings(module.read_text())]
    assert found == [], "move these scripts to .sh files (components/scripts.py)"


def test_the_check_tells_a_long_script_from_a_docstring_and_yaml() -> None:
    body = "set -eu\n" + "".join(f'if [ -n "${{V{index}:-}}" ]; then\n  echo {index}\nfi\n' for index in range(7))
    yaml_text = "".join(f"job{index}:\n  script: [true]\n  done: false\n" for index in range(8))
    source = f"SCRIPT = f{body!r}\nSCRIPT\n{body!r}\nVALUES = {yaml_text!r}\n"
    assert list(long_shell_strings(source)) == [1]
