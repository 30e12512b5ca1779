"""Whether git reads this checkout: since git 2.35.2 (CVE-2022-24765) it refuses a repository another
user owns, unless `safe.directory` names it ("detected dubious ownership in repository at '<path>'",
git setup.c `die_upon_dubious_ownership`, which `ensure_valid_ownership` decides). blueprint asks git
which files of apps/ each project pushes (`apps_manifest.folder_files`), so a checkout git refuses
would fail every check of those files for this one reason: it is said once, with its fix, instead.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

_DUBIOUS = re.compile(r"detected dubious ownership in repository at '(?P<path>.*)'")
_SAFE_DIRECTORY = "git config --global --add safe.directory "


def _owner(uid: int) -> str:
    try:
        import pwd  # not on Windows
    except ImportError:
        return f"uid {uid}"
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:  # a uid the password database does not know (a container's, a mounted disk's)
        return f"uid {uid}"


def _whose(path: str) -> str:
    """Who owns `path`, as against who runs this, in a few words."""
    try:
        uid = os.stat(path).st_uid
    except OSError:
        return "git finds that it is not yours"
    mine = os.getuid()
    if uid == mine:  # its .git, or a filesystem that records no owner (a Windows drive under WSL2)
        return "git finds that it is not yours (its .git, or a filesystem that records no owner)"
    return f"it belongs to {_owner(uid)}, and you are {_owner(mine)}"


def git_refusal(folder: Path) -> str | None:
    """Why git refuses to read the checkout `folder` is in, with the fix, when it refuses it as another
    user's; None when git reads it, when `folder` is in no git checkout, or when there is no git.
    """
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "--git-dir"],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=60,
            check=False,
            env={**os.environ, "LC_ALL": "C", "LANGUAGE": ""},  # its messages in English, which is read here
        )
    except (OSError, subprocess.SubprocessError):
        return None
    found = _DUBIOUS.search(done.stderr)
    if done.returncode == 0 or found is None:
        return None
    where = found.group("path")
    # git's own command names the path it checked, quoted for the shell (`sq_quote_buf_pretty`).
    lines = (line.strip() for line in done.stderr.splitlines())
    command = next((line for line in lines if line.startswith(_SAFE_DIRECTORY)), _SAFE_DIRECTORY + shlex.quote(where))
    return (
        f"git refuses to read this checkout, {where}: {_whose(where)}, and git reads only your own repositories unless told "
        f'otherwise ("detected dubious ownership"), so no project\'s files can be listed. If you trust its owner (git runs '
        f"what a repository's config says), `{command}`; or clone it again as yourself"
    )
