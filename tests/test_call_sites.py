"""What the program builds in one place only, where ruff's banned-api cannot tell a call from a type
annotation (pyproject.toml bans the rest: time.sleep, time.monotonic, requests.get and the like).

A `requests.Session` built anywhere but providers/http.py would take a proxy and a CA bundle from
the environment and follow redirects with its credential; an `argparse.ArgumentParser` anywhere but
cli/main.py would declare flags outside the one command tree docs/reference/cli.md is generated from.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType

import pytest

from stacks.config import PROJECT_DIR
from tests.python_source import nodes
from tests.test_shape import program_files

ONLY_HERE = {
    "requests.Session": "providers/http.py",
    "requests.sessions.Session": "providers/http.py",
    "argparse.ArgumentParser": "cli/main.py",
}


def _imported(source: str) -> dict[str, str]:
    """Each name a module binds by an import -> the dotted name it stands for."""
    names: dict[str, str] = {}
    for node in nodes(source):
        if isinstance(node, ast.Import):
            names.update(
                {alias.asname or alias.name.split(".")[0]: alias.name if alias.asname else alias.name.split(".")[0] for alias in node.names}
            )
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.update({alias.asname or alias.name: f"{node.module}.{alias.name}" for alias in node.names})
    return names


def _dotted(node: ast.expr, names: dict[str, str]) -> str | None:
    """What a call's callee names, with its first part resolved through the module's imports."""
    if isinstance(node, ast.Name):
        return names.get(node.id, node.id)
    if isinstance(node, ast.Attribute) and (owner := _dotted(node.value, names)) is not None:
        return f"{owner}.{node.attr}"
    return None


def called(source: str) -> Iterator[str]:
    """The dotted name of every callee in `source` that names one."""
    names = _imported(source)
    for node in nodes(source):
        if isinstance(node, ast.Call) and (name := _dotted(node.func, names)) is not None:
            yield name


@functools.cache
def sites(root: Path) -> Mapping[str, frozenset[str]]:
    """Each of ONLY_HERE's callees -> the program's modules that call it (read once a process: one
    test a callee reads it; read-only)."""
    found: dict[str, set[str]] = {name: set() for name in ONLY_HERE}
    for path in program_files(root):
        for name in set(called(path.read_text())) & set(ONLY_HERE):
            found[name].add(str(path.relative_to(root)))
    return MappingProxyType({name: frozenset(modules) for name, modules in found.items()})


@pytest.mark.parametrize("callee", ["requests.Session", "argparse.ArgumentParser"])
def test_the_program_builds_it_in_one_module_only(callee: str) -> None:
    assert sites(PROJECT_DIR)[callee] == {ONLY_HERE[callee]}


@pytest.mark.parametrize(
    "source",
    [
        "import requests\nrequests.Session()\n",
        "from requests import Session\nSession()\n",
        "import requests as r\nr.sessions.Session()\n",
    ],
)
def test_a_session_built_however_it_is_imported_is_found(source: str) -> None:
    assert set(called(source)) & set(ONLY_HERE)


def http_calls_outside_the_session(source: str) -> list[str]:
    """Each call in `source` that could send a request past providers/http.py's session: any callable
    of `requests` (`requests.post`, `requests.api.request`, `requests.session()`...), and an hvac client
    not handed a session (hvac makes a bare `requests.Session` of its own then: hvac/adapters.py)."""
    names = _imported(source)
    found = []
    for node in nodes(source):
        if not isinstance(node, ast.Call) or (name := _dotted(node.func, names)) is None:
            continue
        if name.startswith("requests.") and not name.startswith("requests.exceptions."):
            found.append(name)
        elif name == "hvac.Client" and "session" not in {keyword.arg for keyword in node.keywords}:
            found.append(f"{name} without session=")
    return found


def test_no_provider_sends_a_request_but_through_a_session_of_providers_http() -> None:
    """A bare call would take a proxy from the environment (which would see the token or password it carries)."""
    outside = {
        str(path.relative_to(PROJECT_DIR)): calls
        for path in (PROJECT_DIR / "providers").glob("*.py")
        if path.name != "http.py" and (calls := http_calls_outside_the_session(path.read_text()))
    }
    assert outside == {}


@pytest.mark.parametrize(
    "source",
    [
        "import requests\nrequests.post('http://127.0.0.1:8200/v1/auth/token/revoke-self')\n",
        "from requests import api\napi.request('POST', 'http://x')\n",
        "import requests\nrequests.session().get('http://x')\n",
        "import hvac\nhvac.Client(url='http://x')\n",
    ],
)
def test_a_bare_request_however_it_is_written_is_found(source: str) -> None:
    assert http_calls_outside_the_session(source)


def decoded_strictly(source: str) -> list[int]:
    """The lines of `source` that run a process with `text=True` and no `errors=`: a tool that prints a
    byte that is not UTF-8 (a kubectl's, a package manager's) would end the command in a UnicodeDecodeError."""
    return [
        node.lineno
        for node in nodes(source)
        if isinstance(node, ast.Call)
        and any(keyword.arg == "text" and isinstance(keyword.value, ast.Constant) and keyword.value.value for keyword in node.keywords)
        and "errors" not in {keyword.arg for keyword in node.keywords}
    ]


def test_the_commands_read_what_a_tool_prints_whatever_its_bytes() -> None:
    strict = {
        str(path.relative_to(PROJECT_DIR)): lines
        for path in [*program_files(PROJECT_DIR / "cli"), PROJECT_DIR / "git_trust.py"]
        if (lines := decoded_strictly(path.read_text()))
    }
    assert strict == {}


def test_a_process_run_as_text_without_errors_is_found() -> None:
    assert decoded_strictly("import subprocess\nsubprocess.run(['kubectl'], capture_output=True, text=True)\n") == [2]


LOOP_HOPS = frozenset({"run_in_executor", "to_thread", "run_coroutine_threadsafe"})
"""What hands a call from the event loop to a thread: in a plan that call runs inline on the loop's
own thread (cli/quick_plan.py `_Inline`), so one that waited on the loop would wait forever."""


def hops(source: str) -> list[str]:
    """Each call of LOOP_HOPS in `source`, on whatever it is called (a loop from a call included)."""
    names = _imported(source)
    found = []
    for node in nodes(source):
        if isinstance(node, ast.Call):
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else _dotted(node.func, names) or ""
            if callee.rsplit(".", 1)[-1] in LOOP_HOPS:
                found.append(callee)
    return found


def test_the_program_hands_no_call_from_its_event_loop_to_a_thread() -> None:
    found = {str(path.relative_to(PROJECT_DIR)): calls for path in program_files(PROJECT_DIR) if (calls := hops(path.read_text()))}
    assert found == {}


@pytest.mark.parametrize(
    "source",
    [
        "import asyncio\nasyncio.get_running_loop().run_in_executor(None, print)\n",
        "from asyncio import to_thread\nto_thread(print)\n",
        "import asyncio as a\na.run_coroutine_threadsafe(c, loop)\n",
    ],
)
def test_a_hop_to_a_thread_however_it_is_written_is_found(source: str) -> None:
    assert hops(source)
