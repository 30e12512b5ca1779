"""`apps/apps_manifest.yaml`: which GitLab projects phase3 makes, read and checked before anything
is registered. A malformed manifest is refused with every bad entry, its value and the fix.

The model (`AppProject`) lives here, beside neither the phases nor the components: phase2 reads the
manifest for the apps' names, phase3 for its projects, and `components/gitlab_projects.py` builds
them, so all three import it from here.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shlex
import subprocess
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, TypeGuard

import pulumi

from git_trust import git_environment, git_refusal
from shown import SHOWN_AT_MOST
from shown import shown as quoted

APPS_DIR = Path(__file__).resolve().parent / "apps"
MANIFEST = APPS_DIR / "apps_manifest.yaml"
"""Read when the manifest is loaded, not when this module is: tests point it at a manifest of their own."""
SHARED_CODE = "shared-code"
PIPELINE_TEMPLATE = "templates/pipeline.yml"
"""shared-code's template that every other project's pipeline includes."""
SHARED_CODE_PIPELINE = "templates/shared-code.yml"
"""shared-code's own pipeline."""
SHARED_TEMPLATES = (PIPELINE_TEMPLATE, SHARED_CODE_PIPELINE)
KEYS = {"name", "deploy", "chart", "build", "host", "needs"}
WHERE = "apps/apps_manifest.yaml"
NAME_MAX = 53
"""A project's name is its Helm release's too (`helm upgrade --install "$CI_PROJECT_NAME"`, in the
pipeline template), and Helm takes release names of at most 53 characters."""
GITLAB_RESERVED = frozenset(
    {"badges", "blame", "blob", "builds", "commits", "create", "edit", "files", "new", "preview", "raw", "refs", "tree", "update", "wikis"}
)
"""Project paths GitLab refuses, since its routes use them (gitlab lib/gitlab/path_regex.rb,
PROJECT_WILDCARD_ROUTES; those that are DNS labels)."""
PLATFORM_HOSTS = ("gitlab", "registry", "kas")
"""The platform's own names under the domain (GitLab, its registry, KAS): no app may answer at one."""
HEADLAMP_HOST = "headlamp"
"""Headlamp's name under the domain, served through the gateway when phase1 installs it (only the
laptop calls it: it is in neither the cluster's nor the nodes' names)."""
RESERVED_HOSTS = (*PLATFORM_HOSTS, HEADLAMP_HOST)
"""The names no app may answer at: the platform's, and Headlamp's whether or not it is installed (the
manifest is read without phase1's config, and an app there would take the dashboard's name)."""

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
"""A DNS-1123 label: what a project's name must be (its folder under apps/, its GitLab path, its Helm
release) and what a host must be (it goes into CoreDNS's Corefile and the gateway's routes)."""
LABEL_RULE = "a DNS-1123 label: lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters"


class ManifestError(pulumi.RunError):
    """apps/apps_manifest.yaml is malformed; the message names each bad entry, its value and the fix."""


@dataclass(frozen=True, kw_only=True)
class AppProject:
    name: str
    deploy: bool
    chart: str | None
    """The chart's folder relative to the project, when it deploys."""
    build: bool
    host: str | None
    """The first label of the name it answers at, if any."""
    needs: tuple[str, ...] = ()
    """Deploying projects whose smoke pipeline must be green before this one's sources are pushed."""
    folder: Path
    """apps/<name>/, whose files the project's branch holds."""


def is_label(text: object) -> TypeGuard[str]:
    return isinstance(text, str) and _DNS_LABEL.fullmatch(text) is not None


def _chart_problem(chart: object, folder: Path, pushed: set[Path] | None) -> str | None:
    """Why `chart` cannot be the chart folder of the project in `folder`, whose `pushed` files are
    what its repository will hold (None: not read), or None.
    """
    if not isinstance(chart, str) or not chart:
        return "must name its chart folder, relative to the project's folder, such as chart"
    path = PurePosixPath(chart)
    if path.is_absolute() or ".." in path.parts or "\\" in chart:
        return "must be a folder inside the project's own folder, without '..', such as chart"
    # The pipeline finds the chart in the repository: among the files pushed, not merely on disk.
    if (
        pushed is not None
        and folder / chart / "Chart.yaml" not in pushed
        and Path(os.path.normpath(folder / chart / "Chart.yaml")) not in pushed
    ):
        return "holds no Chart.yaml among the files pushed (none there, or one .gitignore keeps home); put the chart there"
    return None


IGNORED = frozenset({".git", "__pycache__", ".pytest_cache", ".DS_Store"})
"""Never pushed, whatever git says: a `.git` folder (a nested clone's, with its remotes' credentials)
and what Python and macOS leave behind."""


FILE_CAP = 2 * 1024 * 1024
"""The most bytes a file of apps/<name>/ may hold (2 MiB: a real package-lock.json or a retina
screenshot fits; a video, a build's output or a dependency folder does not). Each file goes into the
sync's inputs, and again into its outputs, in the plan and in Pulumi's state (a binary one as
base64, a third bigger), and the state is written whole after every step of an `up`
(pulumi/pulumi#10668). The sample apps' biggest file is 13 KB. Decision 47 says why."""
PROJECT_CAP = 4 * FILE_CAP
"""The most bytes the files of one apps/<name>/ may hold together (8 MiB per project; the biggest
sample app holds 22 KB): at most about 21.3 MiB of phase3's (or dev's) state per project (8 MiB in
the inputs and again in the outputs, base64 a third bigger), as FILE_CAP says."""
BIGGER_ASSETS = (
    "fetch what is bigger when the image is built or the pipeline runs (in the Dockerfile or the CI, from a package or container registry)"
)
"""Where an asset over the caps belongs: said in every refusal of one, and in docs/guide/inner-loop.md."""
NAMED = 5
"""How many files over FILE_CAP a refusal names one by one; the rest it counts, so that 300 of them
make a few lines, not 300."""


def size_text(size: int) -> str:
    """`size` bytes as read at a glance: 60 MiB, 2.7 MiB, 900 KiB, 12 bytes; rounded up, so that a size
    over a cap never reads as the cap itself.
    """
    for unit, scale in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if size >= scale:
            return f"{math.ceil(size * 10 / scale) / 10:.1f}".removesuffix(".0") + f" {unit}"
    return f"{size} bytes"


_UNSHOWABLE = frozenset({"Cc", "Cf", "Zl", "Zp"})
"""Unicode's control (C0, DEL, C1), format (the bidi controls U+200E/F, U+202A-E, U+2066-9, which
turn a name around in a terminal) and line and paragraph separators (U+2028/9, where `splitlines`
breaks a message): a name holding one cannot be shown as it is."""


def _control_characters(text: str) -> list[str]:
    """The characters of `text` a name cannot show (_UNSHOWABLE), each once, as repr shows them."""
    return [repr(char) for char in dict.fromkeys(text) if unicodedata.category(char) in _UNSHOWABLE]


@dataclass(frozen=True, kw_only=True)
class _Listing:
    """What git (or, outside a work tree, the folder itself) says a project folder holds."""

    candidates: list[Path]
    tracked: frozenset[Path]
    """Those git has committed: .gitignore alone does not keep them home."""
    in_git: bool
    """Whether the folder is in a git work tree, where .gitignore is read."""
    problems: list[str]


def _walk(folder: Path, shown: str) -> _Listing:
    """Every file and link of `folder` (in no git work tree), and a problem for each folder that cannot be read."""
    candidates: list[Path] = []
    problems: list[str] = []

    def unreadable(error: OSError) -> None:
        relative = Path(str(error.filename)).relative_to(folder).as_posix()
        problems.append(f"{shown}/{relative}/ cannot be read ({error.strerror}); make it readable (`chmod u+rx`), or remove it")

    for root, folders, files in os.walk(folder, onerror=unreadable):
        candidates += [Path(root, name) for name in files]
        candidates += [Path(root, name) for name in folders if os.path.islink(os.path.join(root, name))]
    return _Listing(candidates=candidates, tracked=frozenset(), in_git=False, problems=problems)


_listed: dict[tuple[Path, str], _Listing] | None = None
"""Within `listed_once`, what was listed of each folder."""


@contextlib.contextmanager
def listed_once() -> Iterator[None]:
    """Within it, each folder is listed once: a plan of dev reads the manifest four times and pushes
    every project, which asked git 20 times for its 4 apps folders (a sixth of the plan's CPU).
    """
    global _listed
    outer = _listed
    _listed = {} if outer is None else outer
    try:
        yield
    finally:
        _listed = outer


def _listing(folder: Path, shown: str) -> _Listing:
    if _listed is None:
        return _listed_now(folder, shown)
    if (folder, shown) not in _listed:
        _listed[folder, shown] = _listed_now(folder, shown)
    return _listed[folder, shown]


def _listed_now(folder: Path, shown: str) -> _Listing:
    """What git would commit of `folder` (tracked, or untracked and not ignored), or, outside a git
    work tree, every file; a folder git cannot open is a problem (git only warns, and leaves it out).
    """
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), "ls-files", "-z", "-t", "--cached", "--others", "--exclude-standard", "--", "."],
            capture_output=True,
            timeout=60,
            check=False,
            env=git_environment(folder.parent.parent),  # the project folder's: no repository above it (git_trust.py)
        )
        said = done.stderr.decode(errors="replace").strip()
    except (OSError, subprocess.SubprocessError) as error:  # no git at all
        done, said = None, str(error)
    project = folder.resolve().parent.parent
    in_work_tree = any(
        (parent / ".git").exists() for parent in (folder.resolve(), *folder.resolve().parents) if parent.is_relative_to(project)
    )
    if done is not None and done.returncode == 0:
        # `-t` tags each name: `? ` untracked, any other letter committed.
        listed = [(entry[:1], folder / os.fsdecode(entry[2:])) for entry in done.stdout.split(b"\0") if entry]
        problems = [
            f"{shown}/: a folder in it cannot be read (git: {line.removeprefix('warning: ')}); "
            "make it readable (`chmod u+rx`), or remove it"
            for line in said.splitlines()
            if "could not open directory" in line
        ]
        tracked = frozenset(path for tag, path in listed if tag != b"?")
        return _Listing(candidates=[path for _, path in listed], tracked=tracked, in_git=True, problems=problems)
    if (done is not None and "not a git repository" in said) or (done is None and not in_work_tree):
        return _walk(folder, shown)
    # In a git work tree, what .gitignore keeps home cannot be told without git: push nothing.
    first = said.splitlines()[0] if said else "it failed"
    problem = f"{shown}/: git cannot list the files to push ({first}); fix that (is git installed? does it trust this checkout?)"
    return _Listing(candidates=[], tracked=frozenset(), in_git=True, problems=[problem])


def _keep_home(subject: str, shown: str, listing: _Listing, paths: list[Path]) -> str:
    """How to keep `subject` (`apps/<name>/...`, made of these `paths`) from being pushed, as the folder's case needs."""
    if not listing.in_git:
        return f"remove {subject} from {shown}/ (outside a git checkout every file is pushed: no .gitignore is read)"
    if listing.tracked.intersection(paths):
        return f"list {subject} in a .gitignore and untrack it (`git rm -r --cached -- {shlex.quote(subject)}`)"
    return f"list {subject} in a .gitignore"


def _path_problem(path: Path, relative: str, shown: str, inside: str) -> str | int | None:
    """What is wrong with `path` (`relative` to the folder `inside`): a problem; else its size when it is a file to push, or None."""
    target = os.path.realpath(path)  # never raises, even on a loop of links
    if any("\udc80" <= char <= "\udcff" for char in relative):  # what os.fsdecode makes of bytes that are not UTF-8
        return f"{shown}/{relative!r}: its name is not UTF-8 text, which GitLab's API takes; rename it"
    if controls := _control_characters(relative):
        kinds = "a control, line-breaking or invisible formatting character"
        return f"{shown}/{relative!r}: its name holds {kinds} ({', '.join(controls)}); rename it"
    if path.is_symlink() and os.path.commonpath([inside, target]) != inside:
        return (
            f"{shown}/{relative} is a link that leads outside {shown}/, and the project's files are pushed to GitLab; "
            "copy what it should hold into the folder, or remove the link"
        )
    if path.is_symlink() and not path.is_file():
        what = "a link to a folder, which the sync does not follow (it pushes files)" if path.is_dir() else "a link that leads nowhere"
        return f"{shown}/{relative} is {what}; copy what it should hold into the folder, or remove the link"
    if path.is_dir() and not path.is_symlink():
        nested = "a git repository of its own (a clone or a submodule), whose files are not pushed"
        return f"{shown}/{relative} is {nested}; copy them in, or remove it"
    if not path.is_file():
        return None  # a FIFO, a socket: nothing to push
    size = path.stat().st_size  # FileNotFoundError when it went since: the caller leaves it out
    if not os.access(path, os.R_OK):
        return f"{shown}/{relative} cannot be read; make it readable (`chmod u+r`), or remove it"
    return size


def _over_cap_problems(shown: str, folder: Path, over: dict[Path, int], listing: _Listing) -> list[str]:
    """The refusal of the files over FILE_CAP: the NAMED biggest, each with its fix, then the rest counted."""
    ordered = sorted(over, key=lambda path: (-over[path], path))
    why = f"over the cap of {size_text(FILE_CAP)} a file (every file pushed goes into Pulumi's state)"
    problems = [
        f"{shown}/{path.relative_to(folder).as_posix()} is {size_text(over[path])}, {why}; "
        f"{_keep_home(f'{shown}/{path.relative_to(folder).as_posix()}', shown, listing, [path])}, or {BIGGER_ASSETS}"
        for path in ordered[:NAMED]
    ]
    if rest := ordered[NAMED:]:
        folders = _by_top_folder(folder, {path: over[path] for path in rest})
        where = ", ".join(f"{count:,} in {name}" for name, (_, count, _) in list(folders.items())[:3])
        total = size_text(sum(over[path] for path in rest))
        more = f"and {len(rest):,} more files over the cap of {size_text(FILE_CAP)} a file ({total} together; {where})"
        problems.append(f"{shown}: {more}; the same goes for them")
    return problems


def _by_top_folder(folder: Path, sizes: dict[Path, int]) -> dict[str, tuple[int, int, list[Path]]]:
    """`sizes` summed by what holds them at the top of `folder` (a folder, as `name/`, or the file
    itself): its bytes, its count of files and the files; the biggest first.
    """
    groups: dict[str, tuple[int, int, list[Path]]] = {}
    for path, size in sizes.items():
        parts = path.relative_to(folder).parts
        name = f"{parts[0]}/" if len(parts) > 1 else parts[0]
        bytes_, count, paths = groups.get(name, (0, 0, []))
        groups[name] = (bytes_ + size, count + 1, [*paths, path])
    return dict(sorted(groups.items(), key=lambda item: (-item[1][0], item[0])))


def _total_problem(shown: str, folder: Path, sizes: dict[Path, int], listing: _Listing) -> str | None:
    """Why the files of `folder` (`shown` as apps/<name>), of these `sizes` (every file it would push,
    over FILE_CAP or not), are too much together, or None.
    """
    total = sum(sizes.values())
    if total <= PROJECT_CAP:
        return None
    groups = list(_by_top_folder(folder, sizes).items())
    named = ", ".join(
        f"{name} ({size_text(bytes_)} in {count:,} files)" if name.endswith("/") else f"{name} ({size_text(bytes_)})"
        for name, (bytes_, count, _) in groups[:3]
    )
    biggest, (_, _, paths) = groups[0]
    return (
        f"{shown}: its files come to {size_text(total)}, over the cap of {size_text(PROJECT_CAP)} a project "
        f"(they go into Pulumi's state); the biggest: {named}; {_keep_home(f'{shown}/{biggest}', shown, listing, paths)}, "
        f"or {BIGGER_ASSETS}"
    )


@dataclass(frozen=True)
class ProjectFiles:
    """What a project's branch holds of its folder, and what stops the sync from pushing it."""

    paths: list[Path]
    """The files to push: what git would commit from the folder (tracked, or untracked and not
    ignored, by git's own ignore rules: a `.venv`, a cache, a `.env` stays home), or, when the folder
    is in no git work tree, every file; never one under IGNORED, nor a `.pyc`."""
    problems: list[str]


def folder_files(folder: Path, shown: str) -> ProjectFiles:
    """The files of `folder` (`shown` as `apps/<name>`) its project's branch holds, and a problem for
    each that the sync could not push as it should: a link that leads outside the folder (the sync
    pushes what a file link leads to: one to the platform's secrets or to ~/.ssh would put them in
    GitLab), a file or folder that cannot be read or whose name is not UTF-8 (the sync would stop
    half-way, its projects made), a name with a control character (a newline: every message and
    listing would show it broken), files over FILE_CAP (the biggest named) or files over PROJECT_CAP
    together (sizes are stat'ed, no file is read), a git repository of its own inside (git lists it
    as one entry, not its files), and a git that cannot say what it ignores in a git work tree. A
    file gone since it was listed is left out.
    """
    listing = _listing(folder, shown)
    problems = list(listing.problems)
    inside = os.path.realpath(folder)
    sizes: dict[Path, int] = {}
    for path in listing.candidates:
        relative = path.relative_to(folder).as_posix()
        if IGNORED & set(path.relative_to(folder).parts) or path.suffix == ".pyc":
            continue
        try:
            found = _path_problem(path, relative, shown, inside)
        except FileNotFoundError:
            continue  # gone since it was listed: nothing to push
        except OSError as error:  # a folder of its path without search permission, say
            fix = "make it and its folders readable (`chmod u+rx`), or remove it"
            found = f"{shown}/{relative} cannot be read ({error.strerror or error}); {fix}"
        if isinstance(found, str):
            problems.append(found)
        elif found is not None:
            sizes[path] = found
    problems += _over_cap_problems(shown, folder, {path: size for path, size in sizes.items() if size > FILE_CAP}, listing)
    if problem := _total_problem(shown, folder, sizes, listing):
        problems.append(problem)
    return ProjectFiles(paths=sorted(path for path, size in sizes.items() if size <= FILE_CAP), problems=problems)


def _cycle(projects: list[AppProject]) -> list[str] | None:
    """A loop in `needs` (as the names that go round it), or None."""
    by_name = {project.name: project for project in projects}
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> list[str] | None:
        if name in path:
            return [*path[path.index(name) :], name]
        if name in done or name not in by_name:
            return None
        for need in by_name[name].needs:
            if found := visit(need, (*path, name)):
                return found
        done.add(name)
        return None

    for project in projects:
        if found := visit(project.name, ()):
            return found
    return None


def _entry_problems(entry: dict[str, Any], label: str, apps_dir: Path, *, folders: bool, files: bool) -> list[str]:
    """What is wrong with one well-named entry's keys other than `name` and `needs`; its folder only
    with `folders` (phase3 pushes it), and its files (`folder_files`, and which of them are pushed)
    only with `files` too (git can list them).
    """
    name = str(entry["name"])
    folder = apps_dir / name
    problems = []
    unknown = sorted(str(key) for key in set(entry) - KEYS)
    if unknown:
        named = ", ".join(key if len(key) <= SHOWN_AT_MOST else quoted(key) for key in unknown)
        problems.append(f"{label}: unknown key(s) {named}; valid keys are {', '.join(sorted(KEYS))}")
    pushed = _pushed_files(label, name, apps_dir, problems, files=files) if folders else None
    missing = [template for template in SHARED_TEMPLATES if pushed is not None and folder / template not in pushed]
    if name == SHARED_CODE and folder.is_dir() and missing:
        problems.append(f"{label}: every pipeline includes {', '.join(missing)}, which is not among its files pushed; put it back")
    if name == SHARED_CODE and entry.get("needs"):
        problems.append(
            f"{label}: `needs: {quoted(entry['needs'])}`: {SHARED_CODE} goes first, since every pipeline includes its templates; remove it"
        )
    problems += _flag_problems(entry, label, folder, pushed)
    return problems


def _pushed_files(label: str, name: str, apps_dir: Path, problems: list[str], *, files: bool) -> set[Path] | None:
    """The files apps/<name>/ pushes (None: not listed, without `files`); what keeps it from being
    pushed goes into `problems`.
    """
    folder = apps_dir / name
    if not folder.is_dir():
        problems.append(f"{label}: apps/{name}/ does not exist; create it or remove the entry")
    elif apps_dir.resolve() not in folder.resolve().parents:
        problems.append(f"{label}: apps/{name}/ leads outside apps/ (a link); make it a folder of its own")
    elif not files:
        return None
    else:
        found = folder_files(folder, f"apps/{name}")
        problems += [f"{label}: {problem}" for problem in found.problems]
        return set(found.paths)
    return set()


def _flag_problems(entry: dict[str, Any], label: str, folder: Path, pushed: set[Path] | None) -> list[str]:
    """What is wrong with an entry's deploy, build, chart and host (against its `pushed` files: None, not read)."""
    name = str(entry["name"])
    problems = []
    for flag in ("deploy", "build"):
        if not isinstance(entry.get(flag, False), bool):
            problems.append(f"{label}: `{flag}: {quoted(entry[flag])}` must be true or false")
    chart_problem = _chart_problem(entry.get("chart"), folder, pushed)
    if entry.get("deploy") is True and chart_problem:
        problems.append(f"{label}: deploys, so `chart` ({quoted(entry.get('chart'))}) {chart_problem}")
    elif entry.get("deploy") is not True and entry.get("chart") is not None:
        # Its pipeline would deploy the chart regardless: it deploys whatever project names one.
        problems.append(f"{label}: `chart: {quoted(entry['chart'])}` is for a project that deploys; set `deploy: true`, or remove `chart`")
    if entry.get("build") is True and pushed is not None and folder / "Dockerfile" not in pushed:
        problems.append(f"{label}: builds, so apps/{name}/Dockerfile must be among its files pushed; add it, or set `build: false`")
    host = entry.get("host")
    if host is not None and not is_label(host):
        problems.append(f"{label}: `host: {quoted(host)}` must be {LABEL_RULE}, such as guestbook")
    elif host is not None and entry.get("deploy") is not True:
        answers = "is for a project that deploys (nothing would answer there)"
        problems.append(f"{label}: `host: {quoted(host)}` {answers}; set `deploy: true`, or remove `host`")
    elif host in RESERVED_HOSTS:
        problems.append(
            f"{label}: `host: {quoted(host)}` is the platform's own ({', '.join(RESERVED_HOSTS)} are); choose another, such as {name}"
        )
    return problems


def parse_manifest(document: Any, apps_dir: Path = APPS_DIR, *, files: bool = True) -> list[AppProject]:
    """The projects, in order; every problem reported at once. Without `files`, the manifest alone:
    what needs only its names and hosts (phase2, the doctor, `secrets`, `status`) is not refused for
    a project's folder or files, which only phase3 pushes.
    """
    if not isinstance(document, dict) or set(document) != {"projects"} or not isinstance(document["projects"], list):
        raise ManifestError(f"{WHERE}: expected one key, `projects`, holding a list of projects; see the comment at its top")
    problems: list[str] = []
    refusal = git_refusal(apps_dir) if files else None
    if refusal:  # said once, the files left unchecked: every check of them would fail for it
        problems.append(f"{WHERE}: {refusal}")
    projects: list[AppProject] = []
    seen: set[str] = set()
    hosts: dict[str, str] = {}
    for index, entry in enumerate(document["projects"]):
        label = f"{WHERE}: projects[{index}]"
        if not isinstance(entry, dict):
            problems.append(f"{label}: {quoted(entry)} is not a project; give a mapping with name, deploy, chart, build, host, needs")
            continue
        name = entry.get("name")
        label = f"{label} ({quoted(name)})"
        if not is_label(name) or len(name) > NAME_MAX or name in GITLAB_RESERVED:
            rule = f"{LABEL_RULE.replace('at most 63', f'at most {NAME_MAX}')} (it is the app's Helm release too)"
            if is_label(name) and name in GITLAB_RESERVED:
                rule = f"none of the paths GitLab keeps for itself ({', '.join(sorted(GITLAB_RESERVED))})"
            problems.append(f"{label}: `name` ({quoted(name)}) must be {rule}; it names the folder apps/<name>/ and the GitLab project")
            continue
        if name in seen:
            problems.append(f"{label}: the name {quoted(name)} is used twice; give each project its own")
        seen.add(name)
        problems += _entry_problems(entry, label, apps_dir, folders=files, files=files and refusal is None)
        host = entry.get("host")
        if is_label(host) and hosts.setdefault(host, name) != name:
            problems.append(f"{label}: `host: {quoted(host)}` is {quoted(hosts[host])}'s too; give each project its own host")
        needs = entry.get("needs", [])
        if not (isinstance(needs, list) and all(isinstance(need, str) for need in needs)):
            problems.append(f"{label}: `needs: {quoted(needs)}` must be a list of project names, such as [redis]")
            needs = []
        projects.append(
            AppProject(
                name=name,
                deploy=entry.get("deploy") is True,
                chart=entry.get("chart") if isinstance(entry.get("chart"), str) else None,
                build=entry.get("build") is True,
                host=host if is_label(host) else None,
                needs=tuple(needs),
                folder=apps_dir / name,
            )
        )
    deploying = {project.name for project in projects if project.deploy}
    for project in projects:
        for need in project.needs:
            if need not in deploying or need == project.name:
                problems.append(
                    f"{WHERE}: {quoted(project.name)} needs {quoted(need)}, which is not another deploying project of the manifest; "
                    f"name one of {sorted(deploying - {project.name}) or 'none'}, or remove it"
                )
    if cycle := _cycle(projects):
        problems.append(f"{WHERE}: `needs` goes round in a circle: {' -> '.join(cycle)}; remove one of these needs")
    if projects and projects[0].name != SHARED_CODE:
        problems.append(f"{WHERE}: {SHARED_CODE!r} must come first (the others include its CI templates); it is {quoted(projects[0].name)}")
    if SHARED_CODE not in seen:
        problems.append(f"{WHERE}: the {SHARED_CODE!r} project, whose templates every pipeline includes, is missing; put it back first")
    if problems:
        raise ManifestError("invalid apps manifest:\n  " + "\n  ".join(problems))
    return projects


def host_names(domain: str, projects: list[AppProject]) -> tuple[str, ...]:
    """Every name the platform answers at: its own, then each app's."""
    return tuple(f"{host}.{domain}" for host in (*PLATFORM_HOSTS, *(project.host for project in projects if project.host)))


def load_manifest(path: Path | None = None, *, files: bool = True) -> list[AppProject]:
    """The projects of the manifest at `path` (MANIFEST by default), read as the stack files are
    (`yaml_files`), or a ManifestError naming the file; its projects' files checked with `files`
    (`parse_manifest`).
    """
    from yaml_files import YamlFileError, load_file

    try:
        document = load_file(path or MANIFEST, missing="phase2 and phase3 read it; restore it: `git checkout -- apps/apps_manifest.yaml`")
    except YamlFileError as error:
        raise ManifestError(str(error)) from None
    return parse_manifest(document, (path or MANIFEST).parent, files=files)
