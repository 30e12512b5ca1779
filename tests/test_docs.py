"""The user's documentation (README.md, docs/, the apps' and charts' READMEs, the CLI's help) stands on
its own and says only what the code does: it points at nothing outside this repository, every link
and repository path it gives leads somewhere, and every `blueprint` command it shows is one the real
CLI parser takes. The README's own claims are tests/test_readme.py's.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from cli.main import parser

ROOT = Path(__file__).resolve().parent.parent
USER_DOCS = sorted([ROOT / "README.md", ROOT / "apps" / "README.md", ROOT / "charts" / "README.md", *(ROOT / "docs").rglob("*.md")])
"""Every page a user reads."""

OUTSIDE = re.compile(r"\.\./shared|shared/docs|shared/conformance|DESIGN\.md|house-style|pulumi-mechanics|(?<!infra/data/)shared/")
"""What points outside the repository: the design notes and reference pages next to the checkout,
which a user of this repository does not have. `infra/data/shared/` is the default data folder
(Pulumi.yaml, `dataDir`), a path inside this checkout, and may be named."""

FENCE = re.compile(r"^ *```[^\n]*\n(.*?)^ *```", re.MULTILINE | re.DOTALL)
SPAN = re.compile(r"`([^`]+)`")
COMMAND = re.compile(r"(?:(?<=^)|(?<=[\s;&|(]))(?:uv run )?blueprint (?=[a-z-])")
"""Where a `blueprint` command starts: at the start of a line or span, or after a shell separator
(`&&`, `;`, `|`, `$(`); `blueprint:<key>` (a setting) and `blueprint/<role>` (a label) do not match."""
END = re.compile(r"&&|\|\||[;|)`]|\s#")
"""Where it ends: the next shell separator, the end of a `$(...)`, or a comment."""

COMMENT = re.compile(r"(?:^|\s)#.*")
"""A shell comment in a code block (the docs put no `#` inside quotes)."""

PLACEHOLDERS = {"<stack>": "phase1"}
"""A placeholder a page uses in a command, and a valid value to check it with."""

NOT_COMMANDS = re.compile(r"^blueprint (name-constrained )?CA \(")
"""Spans that begin with the word blueprint but name something else: the CA certificate's subject."""


def shown_commands(text: str) -> list[str]:
    """Every `blueprint ...` or `uv run blueprint ...` command line in a page's code blocks and
    inline code, as a shell would read it: `\\`-continuations joined, comments dropped."""
    found: list[str] = []
    pieces: list[str] = []
    for block in FENCE.findall(text):
        pieces += [COMMENT.sub("", line) for line in block.replace("\\\n", " ").splitlines()]
    prose = FENCE.sub("", text)
    pieces += [span.replace("\n", " ") for span in SPAN.findall(prose)]
    for piece in pieces:
        if NOT_COMMANDS.match(piece.strip()):
            continue
        for start in COMMAND.finditer(piece):
            rest = piece[start.start() :]
            end = END.search(rest)
            command = (rest[: end.start()] if end else rest).strip()
            found.append(command)
    return found


def parse_error(command: str, tree: argparse.ArgumentParser) -> str | None:
    """What the real parser (`tree`, built by cli.main's parser(), one for every command: parsing changes
    nothing in it) says of `command`, or None when it takes it."""
    for placeholder, value in PLACEHOLDERS.items():
        command = command.replace(placeholder, value)
    if re.search(r"<[^>]+>", command):
        return f"a placeholder with no value to check it with (add it to PLACEHOLDERS): {command}"
    words = shlex.split(command)
    words = words[2:] if words[:2] == ["uv", "run"] else words
    assert words[0] == "blueprint", command
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        try:
            tree.parse_args(words[1:])
        except SystemExit as exit_:
            return stderr.getvalue().strip().splitlines()[-1] if exit_.code else "prints help instead of running"
    return None


@pytest.mark.parametrize("page", USER_DOCS, ids=lambda page: str(page.relative_to(ROOT)))
def test_no_user_page_points_outside_the_repository(page: Path) -> None:
    found = [
        f"{page.name}:{number}: {line.strip()}" for number, line in enumerate(page.read_text().splitlines(), 1) if OUTSIDE.search(line)
    ]
    assert not found, "\n".join(found)


def test_no_cli_text_points_outside_the_repository() -> None:
    # The help every command prints, and every message in the CLI's source.
    tree = parser()
    [commands] = [action for action in tree._actions if isinstance(action, argparse._SubParsersAction)]
    helps = {f"blueprint {name} --help": sub.format_help() for name, sub in commands.choices.items()}
    helps["blueprint --help"] = tree.format_help()
    helps |= {str(path.relative_to(ROOT)): path.read_text() for path in sorted((ROOT / "cli").rglob("*.py"))}
    found = [f"{where}: {line.strip()}" for where, text in helps.items() for line in text.splitlines() if OUTSIDE.search(line)]
    assert not found, "\n".join(found)


def test_every_blueprint_command_the_docs_show_parses() -> None:
    shown = {(str(page.relative_to(ROOT)), command) for page in USER_DOCS for command in shown_commands(page.read_text())}
    # The extraction itself: the README's own first command, and one inside `eval "$(...)"`, are found.
    assert ("README.md", "uv run blueprint up") in shown
    assert ("README.md", "uv run blueprint env") in shown
    tree = parser()
    failed = sorted(f"{page}: `{command}`: {error}" for page, command in shown if (error := parse_error(command, tree)))
    assert not failed, "\n".join(failed)


def test_the_readme_says_how_to_run_the_dev_stack_which_no_blueprint_command_drives() -> None:
    tree = parser()
    for command in ("up", "preview", "destroy"):
        with contextlib.redirect_stderr(io.StringIO()), pytest.raises(SystemExit):
            tree.parse_args([command, "--stack", "dev"])  # if this ever parses, the README's dev section must say so
    env = 'eval "$(uv run blueprint env)"'
    blocks = [[COMMENT.sub("", line).strip() for line in block.splitlines()] for block in FENCE.findall((ROOT / "README.md").read_text())]
    # Running it: its doctor, then the passphrase, then the up.
    runs = [lines for lines in blocks if "pulumi up -s dev" in lines and "uv run blueprint doctor --stack dev" in lines]
    assert runs, "README.md has no code block that runs the dev stack: its doctor, the passphrase, `pulumi up -s dev`"
    for lines in runs:
        assert env in lines, lines
        assert lines.index(env) < lines.index("pulumi up -s dev"), lines
    # Taking it down: a destroy does what the last up recorded, so the up that records the choice comes first.
    downs = ["\n".join(lines) for lines in blocks if any("pulumi destroy -s dev" in line for line in lines)]
    assert downs, "README.md has no code block that takes the dev stack down"
    for block in downs:
        assert env in block, block
        assert "pulumi up -s dev" in block, block
        assert block.index(env) < block.index("pulumi up -s dev") < block.index("pulumi destroy -s dev"), block


def test_ci_runs_exactly_the_test_command_the_readme_gives() -> None:
    # What a user runs on a fresh machine is what CI runs: the README's test command, as it is.
    readme = [COMMENT.sub("", line).strip() for block in FENCE.findall((ROOT / "README.md").read_text()) for line in block.splitlines()]
    ci = [COMMENT.sub("", line).strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    readme_tests = [line for line in readme if "pytest" in line]
    assert "uv run pytest" in readme_tests, readme_tests
    assert [line for line in ci if "pytest" in line] == ["uv run pytest"]


def test_the_contributing_layout_names_every_module() -> None:
    """docs/contributing.md's "Layout": every module of the program is there, a top-level one as
    `<name>.py`, a package's in that package's entry."""
    page = (ROOT / "docs" / "contributing.md").read_text()
    layout = page.split("## Layout", 1)[1].split("```", 2)[1]
    entries: dict[str, str] = {}
    for line in layout.splitlines():
        if line and not line[0].isspace():
            current, _, text = line.partition(" ")
            entries[current] = text
        elif line.strip():
            entries[current] += " " + line.strip()
    missing = [path.name for path in ROOT.glob("*.py") if path.name not in entries]
    for package in ("stacks", "components", "providers", "cli"):
        words = set(re.findall(r"\w+", entries.get(f"{package}/", "")))
        missing += [f"{package}/{path.name}" for path in (ROOT / package).glob("*.py") if path.stem not in words | {"__init__"}]
    assert sorted(missing) == []


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
"""A Markdown link, and its target."""


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings, as GitHub makes them: lowercase, punctuation dropped, spaces
    as hyphens, a repeated heading's with `-1`, `-2`, ..."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6} (.+)$", FENCE.sub("", page.read_text()), re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return found


def test_every_link_in_the_docs_leads_to_a_page_and_heading_that_exist() -> None:
    broken = []
    for page in USER_DOCS:
        for target in LINK.findall(FENCE.sub("", page.read_text())):
            if re.match(r"[a-z]+:", target):
                continue  # a web address: not a page of this repository
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists() or (anchor and anchor not in anchors(linked)):
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


def test_every_repository_path_the_docs_name_exists() -> None:
    """A word of inline code whose first part is a file or folder of this repository names a path in
    it (`components/host_folder.py`, `apps/apps_manifest.yaml`), which must exist; a placeholder
    (`apps/<name>/`) names none. The README's are tests/test_readme.py's."""
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    tops = {path.split("/", 1)[0] for path in tracked} - {".pulumi-state"}  # the state folder's files are the user's
    missing = []
    for page in (page for page in USER_DOCS if page != ROOT / "README.md"):
        for span in set(SPAN.findall(FENCE.sub("", page.read_text()))):
            for word in (word.strip("(),;:") for word in span.split()):
                is_path = re.fullmatch(r"[\w.-]+(/[\w.-]+)*/?", word) and ("/" in word or "." in word)
                if is_path and word.split("/", 1)[0] in tops and not (ROOT / word).exists():
                    missing.append(f"{page.relative_to(ROOT)}: {word}")
    assert missing == []


UPGRADES_FROM_BEFORE = re.compile(
    r"\b(earlier|older|previous|pre-release)\b[^.]{0,30}\b(blueprint|version|layout|commit|marker|vault|CA)\b|Shamir",
    re.IGNORECASE,
)
"""A sentence about upgrading what a blueprint before the first release left: 0.1.0 upgrades nothing."""


@pytest.mark.parametrize(
    "page", [ROOT / "README.md", *sorted((ROOT / "docs" / "guide").glob("*.md"))], ids=lambda page: str(page.relative_to(ROOT))
)
def test_no_users_page_speaks_of_an_earlier_blueprint(page: Path) -> None:
    found = [line.strip() for line in page.read_text().splitlines() if UPGRADES_FROM_BEFORE.search(line)]
    assert found == []


def test_the_guides_kubectl_versions_are_the_clusters() -> None:
    """The bring-up page's supported kubectl versions follow versions.py's node image, as the doctor's check does."""
    from cli.doctor.checks import KUBECTL_SKEW
    from cli.doctor.install import KUBECTL_VERSION

    major, minor = (int(part) for part in KUBECTL_VERSION.removeprefix("v").split(".")[:2])
    text = " ".join((ROOT / "docs" / "guide" / "bring-up.md").read_text().split())
    supported = f"so v{major}.{minor - KUBECTL_SKEW} to v{major}.{minor + KUBECTL_SKEW}"
    assert f"the cluster's Kubernetes, v{major}.{minor} (the node image's), {supported}" in text
    assert f"installs the pinned {KUBECTL_VERSION} into" in text


def test_each_check_the_troubleshooting_table_names_is_a_check_of_verifys_table() -> None:
    """A row links to the verify check that detects its failure (issue 25 item 7): by a name verify.md's table gives."""
    verify_rows = (ROOT / "docs/guide/verify.md").read_text().split("\n## The checks, and the fix for each failure\n", 1)[1]
    checks = {row.split("|")[1].strip() for row in verify_rows.splitlines() if row.startswith("| ") and not row.startswith("| check ")}
    named = re.findall(r"\[verify: ([^\]]+)\]\(verify\.md#([^)]+)\)", (ROOT / "docs/guide/troubleshooting.md").read_text())
    assert len(named) >= 20
    assert sorted({name for name, _ in named} - checks) == []
    assert {anchor for _, anchor in named} == {"the-checks-and-the-fix-for-each-failure"}
