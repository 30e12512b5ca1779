"""What the machine is, as the doctor's checks ask it: the `Machine` protocol, and `RealMachine`,
which answers for this one (the tests give a fake). Its OS family comes from cli/os_family.py.
"""

from __future__ import annotations

import atexit
import errno
import os
import platform
import re
import shlex
import shutil
import socket
import subprocess
import threading
from collections.abc import Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Protocol

from cli import os_family
from cli.os_family import OsFamily

_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


class Machine(Protocol):
    """What the checks may ask of the machine; `RealMachine` answers for this one."""

    @property
    def system(self) -> str:
        """One of linux, darwin, windows."""
        ...

    @property
    def machine(self) -> str:
        """The CPU architecture as uname says it: x86_64, arm64, aarch64..."""
        ...

    def which(self, name: str) -> str | None: ...

    def which_in(self, name: str, path: str) -> str | None:
        """The `name` first on `path` (a PATH value), as `which` finds it on the process's."""
        ...

    def run(self, argv: Sequence[str], timeout: float) -> tuple[int, str]:
        """Exit code and stdout+stderr; a missing binary is 127, never an exception."""
        ...

    def run_apart(self, argv: Sequence[str], timeout: float) -> tuple[int, str]:
        """As `run`, but stdout alone when it succeeds (stderr, else stdout, when it fails): for output
        that is parsed, which a CLI's warning on stderr (docker's, podman's) would otherwise lead.
        """
        ...

    def port_free(self, port: int) -> bool: ...

    def memory_bytes(self) -> int | None: ...

    def cpu_count(self) -> int | None:
        """The CPUs of this machine: what the CPU check falls back to when Docker does not answer."""
        ...

    def read_text(self, path: str) -> str | None: ...

    def home(self) -> Path: ...

    def resolve(self, name: str) -> str | None:
        """The address `name` resolves to on this machine, or None."""
        ...

    def environ(self) -> MutableMapping[str, str]:
        """The environment variables: WSL's WSL_DISTRO_NAME, sudo's SUDO_USER; PATH, which `which`
        and `run` search, and which the doctor puts the install folders on (cli/tools_path.py).
        """
        ...

    def exists(self, path: str) -> bool:
        """Whether `path` is there (a file or a folder)."""
        ...

    def free_bytes(self, path: str) -> int | None:
        """The bytes free to this user on the filesystem of the existing `path`; None when it cannot be read."""
        ...

    def used_bytes(self, path: str) -> int:
        """The bytes the files under the folder `path` take on disk (0 when it is not there)."""
        ...

    def writable(self, path: str) -> bool:
        """Whether this user may create and remove files in the existing folder `path`."""
        ...

    def cache_refusal(self, path: str) -> str | None:
        """Why the image cache's mirrors would refuse the folder `path` (`cli.image_cache.folder_refusal`), or None."""
        ...

    def uid(self) -> int | None:
        """The user id this runs as (0: root); None where there is none (Windows)."""
        ...

    def user_name(self) -> str | None:
        """The name of the user this runs as, from the password database (not $USER, which may be stale)."""
        ...

    def download(self, url: str, dest: Path) -> None:
        """Save what `url` serves (redirects followed) into `dest`; a `DownloadError` when it cannot."""
        ...


class DownloadError(Exception):
    """A file could not be downloaded; the message names the URL and why."""


class RealMachine:
    """The machine this runs on."""

    def __init__(self) -> None:
        self.system = platform.system().lower()
        self.machine = platform.machine().lower()

    def which(self, name: str) -> str | None:
        return shutil.which(name)

    def which_in(self, name: str, path: str) -> str | None:
        return shutil.which(name, path=path)

    def run(self, argv: Sequence[str], timeout: float) -> tuple[int, str]:
        return run_argv(argv, timeout, merged=True)

    def run_apart(self, argv: Sequence[str], timeout: float) -> tuple[int, str]:
        return run_argv(argv, timeout, merged=False)

    def port_free(self, port: int) -> bool:
        # No SO_REUSEADDR: with it, a bind can succeed next to a listener and hide it.
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError as error:
                if error.errno != errno.EACCES:
                    return error.errno != errno.EADDRINUSE
            else:
                return True
        # Ports below 1024 need root to bind on Linux, yet Docker binds them for us: EACCES says
        # nothing about use, so ask whether anything answers there instead.
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return False
        except OSError:
            return True

    def memory_bytes(self) -> int | None:
        # Docker's own figure first: under Docker Desktop that is the VM's size, which is what
        # the cluster gets, not the laptop's.
        code, output = self.run(["docker", "info", "--format", "{{.MemTotal}}"], timeout=20)
        if code == 0 and output.strip().isdigit():
            return int(output.strip())
        if self.system == "linux":
            match = re.search(r"^MemTotal:\s+(\d+)\s+kB", self.read_text("/proc/meminfo") or "", re.MULTILINE)
            return int(match.group(1)) * 1024 if match else None
        if self.system == "darwin":
            code, output = self.run(["sysctl", "-n", "hw.memsize"], timeout=5)
            return int(output.strip()) if code == 0 and output.strip().isdigit() else None
        return None

    def cpu_count(self) -> int | None:
        return os.cpu_count()

    def read_text(self, path: str) -> str | None:
        try:
            return Path(path).read_text()
        except OSError:
            return None

    def home(self) -> Path:
        return Path.home()

    def environ(self) -> MutableMapping[str, str]:
        return os.environ

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def free_bytes(self, path: str) -> int | None:
        try:
            return shutil.disk_usage(path).free
        except OSError:
            return None

    def used_bytes(self, path: str) -> int:
        from cli.image_cache import size_on_disk

        return size_on_disk(Path(path))[0] if os.path.isdir(path) else 0

    def writable(self, path: str) -> bool:
        return os.path.isdir(path) and os.access(path, os.W_OK | os.X_OK)

    def cache_refusal(self, path: str) -> str | None:
        from cli.image_cache import folder_refusal

        return folder_refusal(Path(path))

    def uid(self) -> int | None:
        return os.getuid() if hasattr(os, "getuid") else None

    def user_name(self) -> str | None:
        try:
            import pwd  # not on Windows
        except ImportError:
            return None
        try:
            return pwd.getpwuid(os.getuid()).pw_name
        except KeyError:  # a uid the password database does not know (a container's)
            return None

    def resolve(self, name: str) -> str | None:
        import socket

        try:
            return socket.gethostbyname(name)
        except OSError:
            return None

    def download(self, url: str, dest: Path) -> None:
        import requests  # not at import time: `--help` should not wait for it

        try:
            with requests.get(url, stream=True, timeout=(15, 120)) as response:
                response.raise_for_status()
                with dest.open("wb") as handle:
                    for chunk in response.iter_content(chunk_size=1 << 20):
                        handle.write(chunk)
        except (requests.RequestException, OSError) as error:
            raise DownloadError(f"cannot download {url}: {type(error).__name__}: {first_line(str(error))}") from None


_RUNNING: set[subprocess.Popen[str]] = set()
"""The processes `in_own_group` runs right now (`run_argv`'s and `pulumi`'s reads), from whichever
thread: what `end_runs` kills."""
_RUNS = threading.Lock()
_ENDED: list[bool] = []
"""Not empty once this process ends: `in_own_group` then starts nothing more."""


def end_runs(*, for_good: bool = False) -> int:
    """Kill every process `in_own_group` runs now, its group whole; how many. `blueprint verify` calls it
    once it gave up on a check (a check's thread cannot be stopped, and its kubectl would outlive it);
    at this process's exit (`for_good`) it also refuses any later start, from a thread still running.
    """
    import contextlib
    import signal

    with _RUNS:
        if for_good:
            _ENDED.append(True)
        # A returncode: `communicate()` reaped it (after its output ended) and its pid may be another
        # process's group now, before its thread forgets it; Popen.send_signal skips it alike.
        running = [process for process in _RUNNING if process.returncode is None]
    for process in running:  # the thread waiting on it reaps it
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    return len(running)


atexit.register(end_runs, for_good=True)


def run_argv(argv: Sequence[str], timeout: float, *, merged: bool) -> tuple[int, str]:
    """Run `argv`: its exit code and what it said; never an exception for a program that is missing,
    cannot start or does not answer (127, 126, 124). `merged`: stdout and stderr as one stream; else
    stdout when it succeeds, stderr (or stdout) when it fails. It runs as `in_own_group` runs it.
    """
    try:
        done = in_own_group(argv, timeout, merged=merged)
    except FileNotFoundError:
        return 127, f"{argv[0]}: command not found"
    except OSError as error:
        return 126, f"{argv[0]}: {error}"
    if done is None:
        return 124, f"`{shlex.join(argv)}` did not answer within {timeout:g}s"
    if merged or done.returncode == 0:
        return done.returncode, done.stdout
    return done.returncode, done.stderr or done.stdout


def in_own_group(
    argv: Sequence[str],
    timeout: float,
    *,
    merged: bool = False,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    stdin: int | None = None,
) -> subprocess.CompletedProcess[str] | None:
    """`argv` run to its end, or None once `timeout` passed. It runs in a process group (a session) of
    its own, which is killed whole when `timeout` passes, the caller is interrupted or `end_runs` is
    called: a wrapper script's children, or a CLI's plugins, would otherwise outlive it (and hold its
    pipes open, so the wait for its output would hang on them). Raises OSError when it cannot start
    (FileNotFoundError: no such program; once blueprint is ending, it starts nothing).
    """
    with _RUNS:
        if _ENDED:
            raise OSError("not started, blueprint is ending")
        process = subprocess.Popen(
            list(argv),
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merged else subprocess.PIPE,
            env=None if env is None else dict(env),
            cwd=cwd,
            text=True,
            errors="replace",
            start_new_session=True,
        )
        _RUNNING.add(process)
    with process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except BaseException as error:
            _kill_group(process)
            if isinstance(error, subprocess.TimeoutExpired):
                return None
            raise
        finally:
            with _RUNS:
                _RUNNING.discard(process)
    return subprocess.CompletedProcess(list(argv), process.returncode, stdout, stderr or "")


def _kill_group(process: subprocess.Popen[str]) -> None:
    """Kill `process` and every process of its group, and reap it."""
    import contextlib
    import signal

    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.kill()
    process.communicate()


def first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else "(no output)"


def release_arch(machine: Machine) -> str | None:
    return _ARCH.get(machine.machine.lower())


def machine_family(machine: Machine) -> OsFamily:
    """The OS family of `machine`, from its os-release, /proc/version and environment."""
    os_release = next((text for path in os_family.OS_RELEASE_FILES if (text := machine.read_text(path)) is not None), None)
    return os_family.detect(
        system=machine.system, os_release=os_release, proc_version=machine.read_text("/proc/version"), environ=machine.environ()
    )


def sudo_user(machine: Machine) -> str | None:
    """The user who ran this through sudo (root running it, SUDO_USER set), or None."""
    return machine.environ().get("SUDO_USER") if machine.uid() == 0 else None
