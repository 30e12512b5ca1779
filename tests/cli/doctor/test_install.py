"""`--fix` installs only a download that matches the SHA-256 versions.py pins for it, into the user's
home, and runs no installer script; an archive is unpacked into its folder alone."""

from __future__ import annotations

import contextlib
import importlib.metadata
import io
import os
import stat
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

import versions
from cli.doctor import install
from tests.cli.doctor.fakes import (
    KIND_URL,
    SYSTEM_PATH,
    FakeMachine,
    doctor_output,
    serve_releases,
    without,
)

PULUMI_BIN = ".local/share/blueprint/pulumi/bin"
TOOLS_BIN = ".local/share/blueprint/bin"
"""Where `--fix` installs Pulumi (with its bundled plugins), and kind and kubectl: blueprint's own folders."""


def test_the_pulumi_cli_fix_installs_the_sdks_version() -> None:
    assert importlib.metadata.version("pulumi") == versions.PULUMI_VERSION


def test_run_fix_installs_each_download_once_it_matches_its_pinned_sha256_and_checks_again(tmp_path: Path) -> None:
    fake = serve_releases(without(FakeMachine(home_dir=tmp_path), "kind", "pulumi"))
    code, output = doctor_output(["--fix"], fake)
    kind = tmp_path / ".local/share/blueprint/bin/kind"
    assert kind.read_bytes() == fake.served[KIND_URL]
    assert stat.S_IMODE(kind.stat().st_mode) == 0o755
    assert (tmp_path / PULUMI_BIN / "pulumi").read_bytes() == b"#!/bin/sh\necho v3.272.0\n"
    first, again = output.split("checking again:")
    assert "FAIL  kind" in first
    assert "PASS  kind" in again
    assert "PASS  Pulumi CLI" in again
    assert code == 0, output


def test_fix_installs_pulumi_into_blueprints_own_folder_and_leaves_pulumis_own_alone(tmp_path: Path) -> None:
    """~/.pulumi/bin is where Pulumi's installer put the user's own Pulumi: theirs, never overwritten."""
    users = tmp_path / ".pulumi/bin/pulumi"
    users.parent.mkdir(parents=True)
    users.write_text("#!/bin/sh\necho v3.120.0\n")
    fake = serve_releases(FakeMachine(home_dir=tmp_path))
    fake.outputs["pulumi"] = (0, "v3.120.0\n")  # the user's, older than blueprint needs
    code, output = doctor_output(["--fix"], fake)
    assert (tmp_path / PULUMI_BIN / "pulumi").read_bytes() == b"#!/bin/sh\necho v3.272.0\n"
    assert (tmp_path / PULUMI_BIN / "pulumi-language-python").is_file()  # its bundled plugins, beside it
    assert users.read_text() == "#!/bin/sh\necho v3.120.0\n"
    assert sorted(path.name for path in (tmp_path / ".pulumi").iterdir()) == ["bin"]
    assert code == 0, output


@pytest.mark.parametrize("umask", [0o000, 0o002, 0o077], ids=oct)
def test_fix_makes_blueprints_folders_for_their_user_alone_to_write_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    """They go first on every PATH blueprint sets (cli/tools_path.py `tools_on_path`)."""
    fake = serve_releases(without(FakeMachine(home_dir=tmp_path), "kind", "pulumi"))
    old = os.umask(umask)
    try:
        code, output = doctor_output(["--fix"], fake)
    finally:
        os.umask(old)
    for folder in (".local", ".local/share", ".local/share/blueprint", TOOLS_BIN, ".local/share/blueprint/pulumi", PULUMI_BIN):
        assert stat.S_IMODE((tmp_path / folder).stat().st_mode) == 0o755, folder
    assert code == 0, output


def test_fix_installs_nothing_under_a_folder_other_users_may_write_in_and_says_how_to_stop_it(tmp_path: Path) -> None:
    """Whoever may write in ~/.local/share may rename blueprint's folder away and put theirs in its place."""
    share = tmp_path / ".local/share"
    share.mkdir(parents=True)
    share.chmod(0o777)
    fake = serve_releases(without(FakeMachine(home_dir=tmp_path), "kind"))
    code, output = doctor_output(["--fix"], fake)
    assert code == 1
    assert f"other users may write in {share} (`chmod o-w -- {share}` stops that)" in output
    assert "Nothing was installed" in output
    assert not (tmp_path / TOOLS_BIN / "kind").exists()


def test_fix_installs_nothing_into_a_tools_folder_other_users_may_write_in(tmp_path: Path) -> None:
    """Anyone may have put a `kubectl` (or a `docker`) there: blueprint would not run it, nor what `--fix` adds."""
    tools = tmp_path / TOOLS_BIN
    tools.mkdir(parents=True)
    tools.chmod(0o777)
    fake = serve_releases(without(FakeMachine(home_dir=tmp_path, env={"PATH": f"{tools}:{SYSTEM_PATH}"}), "kind"))
    code, output = doctor_output(["--fix"], fake)
    assert code == 1
    assert f"failed: {tools} is not yours alone (other users may write in it)" in output
    assert f"Remove it (`rm -rf -- {tools}`: it holds only what `--fix` installs)" in output
    assert list(tools.iterdir()) == []


def test_fix_says_once_that_each_file_must_match_the_sha256_blueprint_pins_not_its_servers(tmp_path: Path) -> None:
    fake = serve_releases(without(FakeMachine(home_dir=tmp_path), "kind", "kubectl"))
    _, output = doctor_output(["--fix"], fake)
    said = (
        "(each file must have the SHA-256 this blueprint pins for it in versions.py, not the one its server says: "
        "a file damaged on the way, or swapped where it is published, is refused)"
    )
    assert output.count(said) == 1, output


def test_run_fix_runs_no_installer_script(tmp_path: Path) -> None:
    """Piping an installer into `sh` runs whatever the server sends, unchecked."""
    fake = serve_releases(without(FakeMachine(home_dir=tmp_path), "kind", "kubectl", "pulumi"))
    doctor_output(["--fix"], fake)
    assert [call for call in fake.calls if call[0] in ("sh", "bash", "curl", "chmod")] == []
    assert all(url.endswith(".tar.gz") or url.rsplit("/", 1)[1] in ("kind-linux-amd64", "kubectl") for url in fake.downloads)


def test_a_download_that_does_not_match_its_pinned_sha256_stops_the_fix_and_installs_nothing(tmp_path: Path) -> None:
    fake = serve_releases(without(FakeMachine(home_dir=tmp_path), "kind", "pulumi"), tampered=install.KIND)
    code, output = doctor_output(["--fix"], fake)
    assert code == 1
    assert f"stopped: {KIND_URL} does not match the SHA-256 blueprint pins for it (versions.py KIND_SHA256)" in output
    assert "Nothing was installed" in output
    assert not (tmp_path / ".local").exists()
    assert not any("pulumi" in url for url in fake.downloads)  # stopped: the next install is not tried


def test_a_pulumi_tarball_that_does_not_match_leaves_the_installed_pulumi_alone(tmp_path: Path) -> None:
    installed = tmp_path / PULUMI_BIN / "pulumi"
    installed.parent.mkdir(parents=True)
    installed.write_text("the old one")
    fake = serve_releases(FakeMachine(home_dir=tmp_path), tampered=install.PULUMI)
    fake.outputs["pulumi"] = (0, "v3.120.0\n")
    code, output = doctor_output(["--fix"], fake)
    assert code == 1
    assert "does not match the SHA-256 blueprint pins for it (versions.py PULUMI_SHA256)" in output
    assert installed.read_text() == "the old one"
    assert sorted(path.name for path in installed.parent.parent.iterdir()) == ["bin"]


@pytest.fixture
def python_3_11_2(monkeypatch: pytest.MonkeyPatch) -> None:
    """tarfile as Python before 3.11.4 has it (Debian 12 ships 3.11.2): no `data_filter`, and no
    `filter` argument to extract (PEP 706)."""
    monkeypatch.delattr(tarfile, "data_filter")
    for name in ("extractall", "extract"):
        original = getattr(tarfile.TarFile, name)

        def without_filter(self: tarfile.TarFile, *args: object, _original: Callable[..., None] = original, **kwargs: object) -> None:
            if "filter" in kwargs:
                raise TypeError(f"{_original.__name__}() got an unexpected keyword argument 'filter'")
            _original(self, *args, **kwargs)

        monkeypatch.setattr(tarfile.TarFile, name, without_filter)


@pytest.mark.usefixtures("python_3_11_2")
def test_fix_installs_pulumi_on_a_python_without_tarfiles_data_filter(tmp_path: Path) -> None:
    fake = serve_releases(without(FakeMachine(home_dir=tmp_path), "pulumi"))
    code, output = doctor_output(["--fix"], fake)
    installed = tmp_path / PULUMI_BIN / "pulumi"
    assert installed.read_bytes() == b"#!/bin/sh\necho v3.272.0\n", output
    assert stat.S_IMODE(installed.stat().st_mode) == 0o755
    assert code == 0, output


def _archive(*members: tuple[tarfile.TarInfo, bytes]) -> tarfile.TarFile:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for member, data in members:
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data) if member.isreg() else None)
    buffer.seek(0)
    return tarfile.open(fileobj=buffer)


def _member(name: str, kind: bytes = tarfile.REGTYPE, linkname: str = "") -> tarfile.TarInfo:
    member = tarfile.TarInfo(name)
    member.type, member.linkname, member.mode = kind, linkname, 0o755
    return member


def _escapes(outside: Path) -> dict[str, tuple[tuple[tarfile.TarInfo, bytes], ...]]:
    """Archives whose members would write `outside/evil` (or into `outside/victim`) if unpacked naively."""
    return {
        "dot-dot": ((_member("pulumi/../../outside/evil"), b"x"),),
        "absolute": ((_member(f"{outside}/evil"), b"x"),),
        "through-a-symlink": ((_member("pulumi/link", tarfile.SYMTYPE, str(outside)), b""), (_member("pulumi/link/evil"), b"x")),
        "through-a-hard-link": ((_member("pulumi/hard", tarfile.LNKTYPE, str(outside / "victim")), b""), (_member("pulumi/hard"), b"x")),
    }


@pytest.mark.parametrize("kind", ["dot-dot", "absolute", "through-a-symlink", "through-a-hard-link"])
@pytest.mark.parametrize("python", ["with-data-filter", "3.11.2"])
def test_unpacking_a_download_writes_nothing_outside_its_folder(
    tmp_path: Path, request: pytest.FixtureRequest, kind: str, python: str
) -> None:
    if python == "3.11.2":
        request.getfixturevalue("python_3_11_2")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_text("mine")
    folder = tmp_path / "unpacked" / "here"
    with contextlib.suppress(tarfile.TarError):  # refused or not, what counts is that nothing got out
        install.unpack(_archive(*_escapes(outside)[kind]), folder)
    assert sorted(path.name for path in outside.iterdir()) == ["victim"]
    assert (outside / "victim").read_text() == "mine"
    assert not (tmp_path / "unpacked" / "outside").exists()


@pytest.mark.usefixtures("python_3_11_2")
@pytest.mark.parametrize(
    "member",
    [_member("pulumi/link", tarfile.SYMTYPE, "pulumi"), _member("pulumi/fifo", tarfile.FIFOTYPE), _member("pulumi/dev", tarfile.CHRTYPE)],
    ids=["symlink", "fifo", "device"],
)
def test_unpacking_without_the_data_filter_takes_plain_files_and_folders_only(tmp_path: Path, member: tarfile.TarInfo) -> None:
    with pytest.raises(tarfile.TarError, match="not a plain file or folder"):
        install.unpack(_archive((member, b"")), tmp_path / "unpacked")


@pytest.mark.usefixtures("python_3_11_2")
def test_unpacking_without_the_data_filter_keeps_no_setuid_bit(tmp_path: Path) -> None:
    member = _member("pulumi/pulumi")
    member.mode = 0o4777
    install.unpack(_archive((member, b"#!/bin/sh\n")), tmp_path / "unpacked")
    assert stat.S_IMODE((tmp_path / "unpacked" / "pulumi" / "pulumi").stat().st_mode) == 0o755
