"""Whether git reads this checkout, as blueprint asks it which files of apps/ each project pushes
(`apps_manifest.folder_files`): a checkout git refuses, or one git cannot be asked about (no git),
would fail every check of those files for this one reason, so it is said once, with its fix.

Since CVE-2022-24765 git refuses a repository another user owns unless `safe.directory` names it
(git setup.c `ensure_valid_ownership`). git 2.35.2 to 2.35.3, 2.36.0 to 2.36.1, 2.37.0 and the
backports 2.30.3 to 2.34.3 say "unsafe repository ('<path>' is owned by someone else)"; from 2.37.1
(and 2.30.5, 2.31.4, 2.32.3, 2.33.4, 2.34.4, 2.35.4, 2.36.2) "detected dubious ownership in
repository at '<path>'" (git setup.c at v2.37.0 and v2.37.1). Both are matched.

Every git call blueprint makes about the checkout runs with `git_environment`: GIT_CEILING_DIRECTORIES
at the project folder's parent, so git never looks above the project for a repository. A project
without a .git of its own (an unpacked tarball) inside someone else's repository (a .git planted in
a shared /tmp, the CVE's own case) is then in no repository, and its files are listed without git;
with a `safe.directory = *` of the user's, git would otherwise run that repository's core.fsmonitor
as the user. A project whose checkout is a folder of a bigger repository of the user's own is then
listed without git too: every file of apps/<name>/, .gitignore or not (the caps still hold).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

_REFUSED = re.compile(
    r"detected dubious ownership in repository at '(?P<path>.*)'|unsafe repository \('(?P<older>.*)' is owned by someone else\)"
)
_SAFE_DIRECTORY = "git config --global --add safe.directory "
ANSWER_SECONDS = 5
"""How long `git rev-parse` may take: it reads a few files; a git that takes longer stops the check
well within the 20 s a bad input's answer may take, instead of a listing per project waiting too."""


def git_environment(project: Path) -> dict[str, str]:
    """The environment of a git call about the checkout whose project folder is `project`: git's words
    in English (they are read here), and no repository above `project` looked for (the module's doc).
    """
    ceilings = [os.path.dirname(os.path.realpath(project)), *filter(None, [os.environ.get("GIT_CEILING_DIRECTORIES")])]
    return {**os.environ, "LC_ALL": "C", "LANGUAGE": "", "GIT_CEILING_DIRECTORIES": os.pathsep.join(ceilings)}


def _uid(path: Path) -> int | None:
    try:
        return path.stat().st_uid
    except OSError:
        return None


def _owner(uid: int) -> str:
    try:
        import pwd  # not on Windows
    except ImportError:
        return f"uid {uid}"
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:  # a uid the password database does not know (a container's, a mounted disk's)
        return f"uid {uid}"


def _whose(repository: Path) -> str:
    """Who owns `repository`'s .git (the folder itself when it has none: a bare one), as against who runs this."""
    git_dir = repository / ".git" if (repository / ".git").exists() else repository
    uid = _uid(git_dir)
    mine = os.getuid() if hasattr(os, "getuid") else None  # Windows has no uid: git compares its owners' SIDs there
    if uid is None or mine is None or uid == mine:  # a filesystem that records no owner (a Windows drive under WSL2)
        return f"git finds that {git_dir} is not yours (a filesystem that records no owner, or another user's)"
    return f"{git_dir} belongs to {_owner(uid)}, and you are {_owner(mine)}"


def _no_git(apps_dir: Path, error: OSError | subprocess.SubprocessError) -> str | None:
    """What a git that cannot be run (`error`) means for the checkout of `apps_dir`: nothing outside a
    repository (every file is pushed), else that what .gitignore keeps home cannot be told.
    """
    project = apps_dir.parent
    repository = next((folder for folder in (apps_dir, project) if (folder / ".git").exists()), None)
    if repository is None:
        return None
    if isinstance(error, subprocess.TimeoutExpired):
        said = f"`git rev-parse` did not answer within {ANSWER_SECONDS} s"
    else:
        said = f"git cannot be run ({error.strerror if isinstance(error, OSError) else error}): is it installed?"
    return (
        f"{said}, and this checkout is a git repository ({repository}/.git): blueprint asks git which files of apps/ each "
        "project pushes (what a .gitignore keeps home stays home), so no project's files can be listed; install git, "
        "or make it answer"
    )


def git_refusal(apps_dir: Path) -> str | None:
    """Why git cannot say which files of the checkout `apps_dir` is in are pushed, with the fix: it refuses
    the repository as another user's, or it cannot be run in one. None when git reads it, or when the
    project is in no repository (git_environment: none above the project folder is looked for).
    """
    try:
        done = subprocess.run(
            ["git", "-C", str(apps_dir), "rev-parse", "--git-dir"],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=ANSWER_SECONDS,
            check=False,
            env=git_environment(apps_dir.parent),
        )
    except (OSError, subprocess.SubprocessError) as error:
        return _no_git(apps_dir, error)
    found = _REFUSED.search(done.stderr)
    if done.returncode == 0 or found is None:
        return None
    where = Path(found.group("path") or found.group("older"))
    project = apps_dir.parent
    if os.path.realpath(where) != os.path.realpath(project):
        # Not the project's own repository (apps/.git, say, which someone else put there): trusting it would let
        # what its config says run as you.
        return (
            f"git refuses the repository at {where}, which holds apps/ but is not this project's folder, {project} "
            f"({_whose(where)}): remove {where / '.git'} if it should not be there, or move the project out of it; "
            "do not add it to safe.directory (git runs what a repository's config says)"
        )
    return (
        f"git refuses to read this checkout, {where}: {_whose(where)}, and git reads only your own repositories unless told "
        f'otherwise ("detected dubious ownership"), so no project\'s files can be listed. If you trust its owner (git runs '
        f"what a repository's config says), `{_SAFE_DIRECTORY}{shlex.quote(str(where))}`; or clone it again as yourself"
    )
