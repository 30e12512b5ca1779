"""Run a recorded command's script as pulumi-command does, cut short anywhere: killed (SIGKILL to its
whole process group, as a Ctrl-C of `pulumi up` may leave it) right after its k-th call of an
outside tool. A script must then be finished by running it again, or refuse and say why.

Usage: `wrap_tools` once, `run` the script uncut to count its calls (`calls`), then once per k.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.plans import script_environment

TOOLS = ("mkdir", "rm", "rmdir", "find", "chmod", "ls", "cat", "mv", "docker", "kind", "kubectl", "mktemp")
"""The outside tools the scripts call, counted: after each, the script may be cut short."""


FUNCTIONS = ".counted-functions.sh"
"""In the wrappers' folder: the same wrappers as functions of the script's own shell (see `run`)."""


def _count(counter: Path) -> str:
    """A shell function counting one call in `counter` (the shell's own `read`, no process) and
    killing the script's process group (its own: `kill 0`) at the CRASH_AT-th; it fails under no `set -e` (a count
    without a newline) and writes under `set -C` (`>|`)."""
    file = shlex.quote(str(counter))
    return (
        f"__crash_count() {{ __crash_n=0; read -r __crash_n 2>/dev/null < {file} || :; __crash_n=$((__crash_n + 1)); "
        f"echo $__crash_n >| {file}; "
        'if [ -n "${CRASH_AT:-}" ] && [ "$__crash_n" = "$CRASH_AT" ]; then kill -9 0; fi; }\n'
    )


def wrap_tools(folder: Path, counter: Path, real: Mapping[str, Path] = {}) -> Path:
    """A folder of wrappers, one per tool of TOOLS (the one in `real`, else the one on PATH), each
    counting its call in `counter` and killing the script's process group at the CRASH_AT-th."""
    folder.mkdir(parents=True, exist_ok=True)
    functions = [_count(counter)]
    for tool in TOOLS:
        target = str(real[tool]) if tool in real else shutil.which(tool)
        if target is None:
            continue
        # In an `if`: a script's `set -e` stops no call before it is counted, as it stops no wrapper.
        call = f'if {shlex.quote(target)} "$@"; then __crash_s=0; else __crash_s=$?; fi; __crash_count'
        (folder / tool).write_text(f"#!/bin/sh\n{_count(counter)}{call}\nexit $__crash_s\n")
        (folder / tool).chmod(0o755)
        if (body := _SHELL_BODIES.get(Path(target))) is not None:
            # A tool that is a shell script of ours runs in a subshell of the script's own shell, as a
            # fresh sh would run it (no option set, the names it reads unset), with two processes fewer
            # a call: no sh of its own, and the counted tools it calls through their functions rather
            # than their wrappers (each still counted once, at the same point: the cuts are the same).
            functions.append(f"__crash_{tool}() (\n  unset IFS {' '.join(_BODY_NAMES)}; set +aCefuvx\n{body})\n")
            call = f'if __crash_{tool} "$@"; then __crash_s=0; else __crash_s=$?; fi; __crash_count'
        functions.append(f"{tool}() {{ {call}; return $__crash_s; }}\n")
    (folder / FUNCTIONS).write_text("".join(functions))
    return folder


def run(
    command: Mapping[str, Any], key: str, tools: Path, counter: Path, crash_at: int | None, env: Mapping[str, str] = {}
) -> subprocess.CompletedProcess[str]:
    """Run the script `key` of the recorded `command` (`/bin/sh -c`, the recorded environment over
    ours, the recorded stdin) in a process group of its own, cut short after call `crash_at`.

    The script's own shell (and its subshells) calls each tool through a function that counts it as
    the wrapper would, without a process of its own; what runs a tool otherwise (another program,
    `command`, `exec`) finds the wrapper first on PATH: every call is counted once either way."""
    counter.write_text("0")
    inputs = command["inputs"]
    environment = script_environment(inputs, env)
    environment["PATH"] = f"{tools}:{environment['PATH']}"
    if crash_at is not None:
        environment["CRASH_AT"] = str(crash_at)
    # A session and process group of its own (setsid(2) in the child before /bin/sh starts, as
    # `setsid -w` would do with a process more), which the script's every process is in.
    return subprocess.run(
        ["/bin/sh", "-c", (tools / FUNCTIONS).read_text() + inputs[key]],
        start_new_session=True,
        input=inputs.get("stdin", ""),
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


Left = tuple[tuple[str, int, int, int, bytes | str | None], ...] | None


def left(folder: Path) -> Left:
    """All that a cut-short script left in `folder` and that a script run over it can read: each path
    in it with its type and mode, owner and group, and a file's bytes or a link's target (None: no
    folder). Two cuts that left the same run the next script alike: it runs once for both."""
    if not folder.exists() and not folder.is_symlink():
        return None
    paths = [folder]
    for root, folders, files in os.walk(folder):  # into no link
        paths += [Path(root, name) for name in folders + files]
    found = []
    for path in sorted(paths):
        status = path.lstat()
        if path.is_symlink():
            content: bytes | str | None = os.readlink(path)
        elif stat.S_ISREG(status.st_mode):
            content = path.read_bytes()
        else:
            content = None
        found.append((str(path.relative_to(folder)), status.st_mode, status.st_uid, status.st_gid, content))
    return tuple(found)


def calls(counter: Path) -> int:
    """How many outside tools the last `run` called."""
    return int(counter.read_text() or 0)


DOCKER = r"""# `docker run --rm ... -v <host>:<target>[:ro] --entrypoint <tool> <image> <args>`, done on the host.
[ "$1" = run ] || exit 1
shift
while [ $# -gt 0 ]; do
  case "$1" in
    --rm) shift ;;
    -v) volume=${2%:ro}; source=${volume%:*}; target=${volume##*:}; shift 2 ;;
    --entrypoint) entry=$2; shift 2 ;;
    -*) shift 2 ;;
    *) shift; break ;;  # the image
  esac
done
if [ "$entry" = sh ]; then
  # The claim's `sh -c 'chown -R "$0" <target> && chmod "$1" <target>' <uid:gid> <mode>`: done by root
  # only (else left undone, as by a container that did not run: the next up asks again).
  # Who runs it is the test's user, written in when the test makes this docker (not asked each call).
  [ __EUID__ = 0 ] || exit 0
  chown -R "$3" "$source" && chmod "$4" "$source"
  exit
fi
# Any other tool (the wipe's find): its arguments with the container's paths made the host's.
for arg do
  shift
  case "$arg" in "$target"*) arg=$source${arg#"$target"} ;; esac
  set -- "$@" "$arg"
done
__EXEC__"$entry" "$@"
"""
_BODY_NAMES = ("volume", "source", "target", "entry", "arg")
"""The names DOCKER sets before it reads them: none of the script's reaches it in the script's own shell."""

_SHELL_BODIES: dict[Path, str] = {}
"""The body of each docker `docker_that_does_the_work` made, by its path: `wrap_tools` runs it in a
subshell of the script's own shell (see there)."""


def docker_that_does_the_work(folder: Path) -> Path:
    """A folder holding a `docker` that does on the host what the scripts' one-shot containers do."""
    folder.mkdir(parents=True, exist_ok=True)
    body = DOCKER.replace("__EUID__", str(os.geteuid()))
    (folder / "docker").write_text("#!/bin/sh\n" + body.replace("__EXEC__", "exec "))
    (folder / "docker").chmod(0o755)
    # In a subshell, its last command's status is the subshell's, as `exec` gives the process's.
    _SHELL_BODIES[folder / "docker"] = body.replace("__EXEC__", "")
    return folder / "docker"
