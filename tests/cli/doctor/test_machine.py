"""The machine the doctor runs on, as `RealMachine` answers for it, and the OS family it detects."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from cli.doctor import machine
from cli.doctor.machine import RealMachine, end_runs, in_own_group, run_argv
from tests.cli.doctor.fakes import (
    doctor_output,
    on,
)
from tests.cli.hanging import hanging, left_running
from tests.cli.test_os_family import UBUNTU_24_04


def test_real_machine_run_of_a_missing_binary_gives_127() -> None:
    code, output = RealMachine().run(["blueprint-doctor-no-such-binary"], timeout=5)
    assert code == 127
    assert "not found" in output


def test_real_machine_sees_a_port_held_by_a_listener() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert not RealMachine().port_free(port)


def test_doctor_names_the_system_and_the_family_it_detected() -> None:
    _, output = doctor_output(["--phase", "1"], on(UBUNTU_24_04))
    assert output.splitlines()[0] == "system: Ubuntu 24.04.3 LTS (Debian/Ubuntu family)"


def test_a_tool_that_prints_bytes_that_are_not_utf8_is_read_not_a_crash(tmp_path: Path) -> None:
    """A kubectl (or a package manager) printing a Latin-1 byte: the doctor reads the rest, no UnicodeDecodeError."""
    tool = tmp_path / "kubectl"
    tool.write_bytes(b"#!/bin/sh\nprintf 'Client Version: v1.30.1\\n\\377 caf\\351\\n'\n")
    tool.chmod(0o755)
    assert run_argv([str(tool), "version", "--client"], 10, merged=True) == (0, "Client Version: v1.30.1\n\ufffd caf\ufffd\n")


def test_a_command_past_its_timeout_is_killed_with_every_process_it_started(tmp_path: Path) -> None:
    # A kubectl (or pulumi) that hangs, as a wrapper whose own child holds the pipe: past the
    # timeout the test gives (1 s against a wait on a FIFO no one writes to), nothing of it is left.
    with hanging(tmp_path, "kubectl") as folder:
        code, said = run_argv([str(folder / "bin" / "kubectl"), "get", "pods"], 1, merged=True)
        assert (code, said.endswith("did not answer within 1s")) == (124, True)
        assert not left_running(folder)


def test_a_command_still_running_as_blueprint_exits_is_killed(tmp_path: Path) -> None:
    """What a verify check left running past its own timeout (its thread abandoned) ends with the process:
    a `cat` blocked on a FIFO, whose open by the test says it runs, is killed by the exit hook."""
    import os
    import signal
    import threading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    ended: list[object] = []
    waiting = threading.Thread(target=lambda: ended.append(in_own_group(["cat", str(fifo)], 3600)), daemon=True)
    waiting.start()
    writer = os.open(fifo, os.O_WRONLY)  # returns once `cat` has opened it
    try:
        while not machine._RUNNING and waiting.is_alive():  # its thread records it just after it starts
            waiting.join(0.01)
        end_runs()
        waiting.join(60)
    finally:
        os.close(writer)
    assert [getattr(done, "returncode", None) for done in ended] == [-signal.SIGKILL]
    assert not machine._RUNNING


def test_a_command_already_reaped_is_not_signalled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Between `communicate()` reaping a command and its thread forgetting it, its pid is free again
    (another process's group may take it): `end_runs` then signals nothing."""
    import os
    import subprocess
    import threading

    reaped, release = threading.Event(), threading.Event()
    communicate = subprocess.Popen.communicate

    def reap_then_linger(self: Any, *args: Any, **kwargs: Any) -> Any:
        said = communicate(self, *args, **kwargs)
        reaped.set()
        release.wait(60)
        return said

    signalled: list[int] = []
    monkeypatch.setattr(subprocess.Popen, "communicate", reap_then_linger)
    monkeypatch.setattr(os, "killpg", lambda pgid, _signal: signalled.append(pgid))
    ran = threading.Thread(target=in_own_group, args=(["true"], 60), daemon=True)
    ran.start()
    try:
        assert reaped.wait(60)
        assert machine._RUNNING  # still recorded: the window the rule is for
        assert end_runs() == 0
    finally:
        release.set()
        ran.join(60)
    assert signalled == []


def test_run_apart_keeps_a_warning_on_stderr_out_of_what_a_command_that_succeeds_said() -> None:
    said = RealMachine().run_apart(["sh", "-c", "echo 'WARNING: config' >&2; echo 'HTTP/1.1 200 OK'"], 10)
    assert said == (0, "HTTP/1.1 200 OK\n")
