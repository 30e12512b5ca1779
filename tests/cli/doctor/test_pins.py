"""The SHA-256s versions.py pins for the release files `doctor --fix` installs, as the doctor uses them:
a download is installed only when it has its pin, whatever its server publishes beside it, and a
file with no pin is not installed at all, with how to install it by hand."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

import versions
from cli.doctor import install
from cli.doctor.fixes import fix_plan
from tests.cli.doctor.fakes import ARCHES, KIND_URL, REAL_PINS, FakeMachine, checked, doctor_output, release_file, serve_releases, without

_MACHINE = {"amd64": "x86_64", "arm64": "aarch64"}
"""What `uname -m` says on Linux for each arch (macOS says arm64, which maps the same)."""

UNPINNED = {
    f"{install.PULUMI} 3.272.0 {system}/{arch}" for system in install.INSTALLS_ON for arch in ARCHES
}  # versions.py PULUMI_SHA256: no source had them
"""The release files versions.py has no SHA-256 for, each said there; `--fix` installs none of them."""


def _platforms() -> list[tuple[str, str, str]]:
    return [(tool, system, arch) for tool in install.VERSIONS for system in install.INSTALLS_ON for arch in ARCHES]


def test_every_pin_is_a_lowercase_sha256_of_a_system_and_arch_the_doctor_installs_on() -> None:
    for tool, pins in REAL_PINS.items():
        for key, digest in pins.items():
            version, platform = key.split(" ")
            system, arch = platform.split("/")
            assert (system in install.INSTALLS_ON, arch in ARCHES) == (True, True), f"{tool} {key}"
            assert re.fullmatch(r"[0-9a-f]{64}", digest), f"{tool} {key}: {digest!r}"


def test_every_pin_is_for_the_version_the_doctor_installs() -> None:
    """A bumped version leaves its old pins behind: they would pin no file `--fix` downloads."""
    assert {key.split(" ")[0] for pins in REAL_PINS.values() for key in pins} <= set(install.VERSIONS.values())


def test_kubectls_pins_are_for_the_node_images_kubernetes() -> None:
    assert install.KUBECTL_VERSION == "v1.35.0"
    assert set(versions.KUBECTL_SHA256) == {f"v1.35.0 {system}/{arch}" for system in install.INSTALLS_ON for arch in ARCHES}


@pytest.mark.usefixtures("real_pins")
@pytest.mark.parametrize(("tool", "system", "arch"), _platforms())
def test_every_platform_the_doctor_installs_on_has_a_pin_or_is_refused_with_how_to_install_by_hand(
    tool: str, system: str, arch: str
) -> None:
    fake = without(FakeMachine(system=system, machine=_MACHINE[arch]), {"kind": "kind", "kubectl": "kubectl"}.get(tool, "pulumi"))
    check = checked(fake)[tool]
    step = fix_plan([check], fake)[0]
    if f"{tool} {install.VERSIONS[tool]} {system}/{arch}" in UNPINNED:
        assert step.download is None
        assert f"install {tool} {install.VERSIONS[tool]} by hand (" in step.what
        assert f"this blueprint pins no SHA-256 for {install.downloads(fake, tool, arch).url}" in step.what
    else:
        assert step.download is not None
        assert step.download.sha256 == REAL_PINS[tool][f"{install.VERSIONS[tool]} {system}/{arch}"]
        assert f"check that its SHA-256 (`sha256sum`, or `shasum -a 256` on macOS) is {step.download.sha256}" in check.fix


@pytest.mark.usefixtures("real_pins")
def test_a_download_is_refused_when_its_bytes_are_not_its_pin_even_if_its_server_publishes_their_checksum(tmp_path: Path) -> None:
    """A release swapped where it is published comes with a checksum file that matches it: only the pin tells."""
    fake = serve_releases(without(FakeMachine(home_dir=tmp_path), "kind"))
    swapped = hashlib.sha256(release_file(install.KIND)).hexdigest()
    fake.served[f"{KIND_URL}.sha256sum"] = f"{swapped}  kind-linux-amd64\n".encode()
    code, output = doctor_output(["--fix"], fake)
    assert code == 1
    assert (
        f"stopped: {KIND_URL} does not match the SHA-256 blueprint pins for it (versions.py KIND_SHA256): "
        f"expected {versions.KIND_SHA256['v0.31.0 linux/amd64']}, got {swapped}. Nothing was installed."
    ) in output
    assert not (tmp_path / ".local/share/blueprint/bin/kind").exists()
    assert fake.downloads == [KIND_URL]  # nothing from beside it is read


@pytest.mark.usefixtures("real_pins")
def test_fix_installs_no_pulumi_without_a_pin_and_says_how_to_install_it_by_hand(tmp_path: Path) -> None:
    fake = serve_releases(without(FakeMachine(home_dir=tmp_path), "pulumi"))
    code, output = doctor_output(["--fix"], fake)
    url = "https://get.pulumi.com/releases/sdk/pulumi-v3.272.0-linux-x64.tar.gz"
    assert (
        "to do by hand: Pulumi CLI: install Pulumi CLI 3.272.0 by hand (https://www.pulumi.com/docs/iac/download-install/): "
        f"this blueprint pins no SHA-256 for {url} (versions.py PULUMI_SHA256), so `uv run blueprint doctor --fix` does not install it"
    ) in output
    assert fake.downloads == []
    assert not (tmp_path / ".local/share/blueprint/pulumi").exists()
    assert code == 1
