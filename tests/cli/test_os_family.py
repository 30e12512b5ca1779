"""The OS family blueprint detects, and the commands it gives each family: read from real os-release
files (python-distro/distro tests/resources/distros, and the archlinux image's), never guessed for a
family it does not know."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from cli import os_family, phases, report
from cli.os_family import Command, OsFamily, detect
from stacks import outputs

DEBIAN_13 = """\
PRETTY_NAME="Debian GNU/Linux 13 (trixie)"
NAME="Debian GNU/Linux"
VERSION_ID="13"
VERSION="13 (trixie)"
VERSION_CODENAME=trixie
DEBIAN_VERSION_FULL=13.1
ID=debian
HOME_URL="https://www.debian.org/"
SUPPORT_URL="https://www.debian.org/support"
BUG_REPORT_URL="https://bugs.debian.org/"
"""
UBUNTU_24_04 = """\
PRETTY_NAME="Ubuntu 24.04.3 LTS"
NAME="Ubuntu"
VERSION_ID="24.04"
VERSION="24.04.3 LTS (Noble Numbat)"
VERSION_CODENAME=noble
ID=ubuntu
ID_LIKE=debian
HOME_URL="https://www.ubuntu.com/"
SUPPORT_URL="https://help.ubuntu.com/"
BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"
PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"
UBUNTU_CODENAME=noble
LOGO=ubuntu-logo
"""
LINUX_MINT_22 = """\
NAME="Linux Mint"
VERSION="22 (Wilma)"
ID=linuxmint
ID_LIKE="ubuntu debian"
PRETTY_NAME="Linux Mint 22"
VERSION_ID="22"
VERSION_CODENAME=wilma
UBUNTU_CODENAME=noble
"""
FEDORA_42 = """\
NAME="Fedora Linux"
VERSION="42 (Forty Two)"
ID=fedora
VERSION_ID=42
VERSION_CODENAME=""
PLATFORM_ID="platform:f42"
PRETTY_NAME="Fedora Linux 42 (Forty Two)"
ANSI_COLOR="0;38;2;60;110;180"
LOGO=fedora-logo-icon
CPE_NAME="cpe:/o:fedoraproject:fedora:42"
DEFAULT_HOSTNAME="fedora"
HOME_URL="https://fedoraproject.org/"
DOCUMENTATION_URL="https://docs.fedoraproject.org/en-US/fedora/f42/"
SUPPORT_URL="https://ask.fedoraproject.org/"
BUG_REPORT_URL="https://bugzilla.redhat.com/"
REDHAT_BUGZILLA_PRODUCT="Fedora"
REDHAT_BUGZILLA_PRODUCT_VERSION=42
REDHAT_SUPPORT_PRODUCT="Fedora"
REDHAT_SUPPORT_PRODUCT_VERSION=42
SUPPORT_END=2026-05-13
"""
ROCKY_9 = """\
NAME="Rocky Linux"
VERSION="9.3 (Blue Onyx)"
ID="rocky"
ID_LIKE="rhel centos fedora"
VERSION_ID="9.3"
PLATFORM_ID="platform:el9"
PRETTY_NAME="Rocky Linux 9.3 (Blue Onyx)"
ANSI_COLOR="0;32"
LOGO="fedora-logo-icon"
CPE_NAME="cpe:/o:rocky:rocky:9::baseos"
HOME_URL="https://rockylinux.org/"
BUG_REPORT_URL="https://bugs.rockylinux.org/"
SUPPORT_END="2032-05-31"
ROCKY_SUPPORT_PRODUCT="Rocky-Linux-9"
ROCKY_SUPPORT_PRODUCT_VERSION="9.3"
REDHAT_SUPPORT_PRODUCT="Rocky Linux"
REDHAT_SUPPORT_PRODUCT_VERSION="9.3"
"""
RHEL_9 = """\
NAME="Red Hat Enterprise Linux"
VERSION="9.4 (Plow)"
ID="rhel"
ID_LIKE="fedora"
VERSION_ID="9.4"
PLATFORM_ID="platform:el9"
PRETTY_NAME="Red Hat Enterprise Linux 9.4 (Plow)"
"""
ARCH = """\
NAME="Arch Linux"
PRETTY_NAME="Arch Linux"
ID=arch
BUILD_ID=rolling
VERSION_ID=20240101.0.204074
ANSI_COLOR="38;2;23;147;209"
HOME_URL="https://archlinux.org/"
DOCUMENTATION_URL="https://wiki.archlinux.org/"
SUPPORT_URL="https://bbs.archlinux.org/"
BUG_REPORT_URL="https://bugs.archlinux.org/"
PRIVACY_POLICY_URL="https://terms.archlinux.org/docs/privacy-policy/"
LOGO=archlinux-logo
"""
MANJARO = """\
NAME="Manjaro Linux"
PRETTY_NAME="Manjaro Linux"
ID=manjaro
ID_LIKE=arch
BUILD_ID=rolling
ANSI_COLOR="32;1;24;144;200"
HOME_URL="https://manjaro.org/"
DOCUMENTATION_URL="https://wiki.manjaro.org/"
SUPPORT_URL="https://forum.manjaro.org/"
BUG_REPORT_URL="https://docs.manjaro.org/reporting-bugs/"
PRIVACY_POLICY_URL="https://manjaro.org/privacy-policy/"
LOGO=manjarolinux
"""
ENDEAVOUROS = """\
NAME='EndeavourOS'
PRETTY_NAME='EndeavourOS'
ID='endeavouros'
ID_LIKE='arch'
BUILD_ID='2024.09.22'
"""
OPENSUSE_TUMBLEWEED = """\
NAME="openSUSE Tumbleweed"
# VERSION="20241120"
ID="opensuse-tumbleweed"
ID_LIKE="opensuse suse"
VERSION_ID="20241120"
PRETTY_NAME="openSUSE Tumbleweed"
"""
WSL2_KERNEL = "Linux version 5.15.167.4-microsoft-standard-WSL2 (root@f9c826d3017f) (gcc (GCC) 11.2.0) #1 SMP Tue Nov 5 00:21:55 UTC 2024\n"
NATIVE_KERNEL = (
    "Linux version 6.8.0-49-generic (buildd@lcy02-amd64-103) (x86_64-linux-gnu-gcc-13 (Ubuntu 13.2.0-23ubuntu4) 13.2.0) #49-Ubuntu\n"
)


@pytest.mark.parametrize(
    ("text", "key", "distro"),
    [
        pytest.param(DEBIAN_13, os_family.DEBIAN, "Debian GNU/Linux 13 (trixie)", id="debian-13"),
        pytest.param(UBUNTU_24_04, os_family.DEBIAN, "Ubuntu 24.04.3 LTS", id="ubuntu-24.04"),
        pytest.param(LINUX_MINT_22, os_family.DEBIAN, "Linux Mint 22", id="mint-22"),
        pytest.param(FEDORA_42, os_family.FEDORA, "Fedora Linux 42 (Forty Two)", id="fedora-42"),
        pytest.param(ROCKY_9, os_family.RHEL, "Rocky Linux 9.3 (Blue Onyx)", id="rocky-9"),
        pytest.param(RHEL_9, os_family.RHEL, "Red Hat Enterprise Linux 9.4 (Plow)", id="rhel-9"),
        pytest.param(ARCH, os_family.ARCH, "Arch Linux", id="arch"),
        pytest.param(MANJARO, os_family.ARCH, "Manjaro Linux", id="manjaro"),
        pytest.param(ENDEAVOUROS, os_family.ARCH, "EndeavourOS", id="endeavouros"),
    ],
)
def test_each_family_is_detected_from_its_os_release(text: str, key: str, distro: str) -> None:
    family = detect(system="Linux", os_release=text, proc_version=NATIVE_KERNEL, environ={})
    assert (family.key, family.distro, family.wsl) == (key, distro, False)


@pytest.mark.parametrize("text", [OPENSUSE_TUMBLEWEED, "ID=alpine\n", "ID=debian-like-but-not\nID_LIKE=archlinux\n", None, ""])
def test_a_linux_of_no_known_family_is_unknown_and_gets_no_package_commands(text: str | None) -> None:
    family = detect(system="Linux", os_release=text)
    assert family.key == os_family.UNKNOWN
    assert os_family.docker_install(family) == ()
    assert os_family.ca_trust(family, "/data/platform/ca.crt") == []
    assert "a family blueprint has no commands for" in family.label


@pytest.mark.parametrize(
    ("proc_version", "environ"),
    [(WSL2_KERNEL, {}), (NATIVE_KERNEL, {"WSL_DISTRO_NAME": "Ubuntu-24.04"})],
    ids=["kernel", "wsl-variable"],
)
def test_wsl2_is_detected_from_its_kernel_or_wsls_variable_and_keeps_the_distros_family(proc_version: str, environ: dict[str, str]) -> None:
    family = detect(system="Linux", os_release=UBUNTU_24_04, proc_version=proc_version, environ=environ)
    assert (family.key, family.wsl) == (os_family.DEBIAN, True)
    assert family.label == "Ubuntu 24.04.3 LTS (Debian/Ubuntu family, in WSL2)"


@pytest.mark.parametrize(("system", "key"), [("Darwin", os_family.MACOS), ("Windows", os_family.WINDOWS), ("FreeBSD", os_family.UNKNOWN)])
def test_macos_and_windows_are_told_by_the_platform_alone(system: str, key: str) -> None:
    assert detect(system=system, os_release=DEBIAN_13).key == key


def _argvs(commands_: tuple[Command, ...]) -> list[list[str]]:
    return [list(command.argv) for command in commands_]


@pytest.mark.parametrize(
    ("text", "argvs"),
    [
        pytest.param(DEBIAN_13, [["sudo", "apt-get", "update"], ["sudo", "apt-get", "install", "-y", "docker.io"]], id="debian"),
        pytest.param(UBUNTU_24_04, [["sudo", "apt-get", "update"], ["sudo", "apt-get", "install", "-y", "docker.io"]], id="ubuntu"),
        pytest.param(FEDORA_42, [["sudo", "dnf", "install", "-y", "moby-engine"]], id="fedora"),
        pytest.param(
            ROCKY_9,
            [
                ["sudo", "dnf", "install", "-y", "dnf-plugins-core"],
                ["sudo", "dnf", "config-manager", "--add-repo", "https://download.docker.com/linux/centos/docker-ce.repo"],
                ["sudo", "dnf", "install", "-y", "docker-ce", "docker-ce-cli", "containerd.io"],
            ],
            id="rocky",
        ),
        pytest.param(
            RHEL_9,
            [
                ["sudo", "dnf", "install", "-y", "dnf-plugins-core"],
                ["sudo", "dnf", "config-manager", "--add-repo", "https://download.docker.com/linux/rhel/docker-ce.repo"],
                ["sudo", "dnf", "install", "-y", "docker-ce", "docker-ce-cli", "containerd.io"],
            ],
            id="rhel",
        ),
        pytest.param(ARCH, [["sudo", "pacman", "-S", "--needed", "--noconfirm", "docker"]], id="arch"),
        pytest.param(MANJARO, [["sudo", "pacman", "-S", "--needed", "--noconfirm", "docker"]], id="manjaro"),
    ],
)
def test_each_family_installs_docker_engine_from_its_own_packages(text: str, argvs: list[list[str]]) -> None:
    assert _argvs(os_family.docker_install(detect(system="Linux", os_release=text))) == argvs


def test_a_command_fed_on_stdin_is_shown_as_the_pipe_a_shell_runs_the_same_way() -> None:
    command = Command(argv=("sudo", "tee", "/etc/sysctl.d/99-kind.conf"), stdin="a = 1\nb = it's\n")
    assert shlex.split(command.shown) == ["printf", "%s\\n", "a = 1", "b = it's", "|", "sudo", "tee", "/etc/sysctl.d/99-kind.conf"]


HOSTILE = "/home/dev/it's $(id) data/platform/ca.crt"


@pytest.mark.parametrize(
    ("family", "argv"),
    [
        (OsFamily(key=os_family.DEBIAN, distro="Ubuntu"), ["sudo", "cp", HOSTILE, "/usr/local/share/ca-certificates/blueprint.crt"]),
        (OsFamily(key=os_family.FEDORA, distro="Fedora"), ["sudo", "cp", HOSTILE, "/etc/pki/ca-trust/source/anchors/blueprint.crt"]),
        (OsFamily(key=os_family.RHEL, distro="Rocky"), ["sudo", "cp", HOSTILE, "/etc/pki/ca-trust/source/anchors/blueprint.crt"]),
        (OsFamily(key=os_family.ARCH, distro="Arch"), ["sudo", "trust", "anchor", "--store", HOSTILE]),
        (
            OsFamily(key=os_family.MACOS, distro="macOS"),
            [
                "sudo",
                "security",
                "add-trusted-cert",
                "-d",
                "-r",
                "trustRoot",
                "-p",
                "ssl",
                "-k",
                "/Library/Keychains/System.keychain",
                HOSTILE,
            ],
        ),
    ],
    ids=["debian", "fedora", "rhel", "arch", "macos"],
)
def test_the_ca_trust_command_of_each_family_quotes_the_real_ca_path(family: OsFamily, argv: list[str]) -> None:
    [line] = os_family.ca_trust(family, HOSTILE)
    assert shlex.split(line)[: len(argv)] == argv


def test_in_wsl2_the_ca_is_trusted_in_the_distro_and_in_windows_through_its_wsl_path() -> None:
    family = detect(system="Linux", os_release=ARCH, proc_version=WSL2_KERNEL, environ={"WSL_DISTRO_NAME": "Arch"})
    distro, windows = os_family.ca_trust(family, "/home/dev/blueprint/infra/data/shared/platform/ca.crt")
    assert distro == "sudo trust anchor --store /home/dev/blueprint/infra/data/shared/platform/ca.crt"
    assert windows.startswith(
        "certutil -addstore -f Root '\\\\wsl.localhost\\Arch\\home\\dev\\blueprint\\infra\\data\\shared\\platform\\ca.crt'"
    )


PHASE2 = {
    outputs.GITLAB_URL: "https://gitlab.local.example.net",
    outputs.REGISTRY_HOST: "registry.local.example.net",
    outputs.OPENBAO_ADDR: "https://127.0.0.1:8200",
    outputs.CA_CERT_FILE: "/home/dev/blue print/infra/data/shared/platform/ca.crt",
    outputs.ADMIN_TOKEN_FILE: "/home/dev/blue print/infra/data/shared/platform/secrets/gitlab-admin-token",
    outputs.GITLAB_ROOT_PASSWORD_FILE: "/home/dev/blue print/infra/data/shared/platform/secrets/gitlab-root-password",
    outputs.OPENBAO_ADMIN_PASSWORD_FILE: "/home/dev/blue print/infra/data/shared/platform/secrets/openbao-admin-password",
}


def test_the_up_summary_prints_the_ca_trust_command_of_this_family_with_the_real_ca_path() -> None:
    fedora = detect(system="Linux", os_release=FEDORA_42)
    text = report.summary({"phase1": {}, "phase2": PHASE2, "phase3": {}}, family=fedora)
    [line] = [line for line in text.splitlines() if "trust the CA:" in line]
    command = line.split("trust the CA:", 1)[1].strip()
    assert shlex.split(command) == [
        *("sudo", "cp", PHASE2[outputs.CA_CERT_FILE], "/etc/pki/ca-trust/source/anchors/blueprint.crt"),
        *("&&", "sudo", "update-ca-trust"),
    ]


def test_the_up_summary_of_an_unknown_family_names_the_ca_path_and_the_readme_section() -> None:
    text = report.summary({"phase1": {}, "phase2": PHASE2, "phase3": {}}, family=detect(system="Linux", os_release=OPENSUSE_TUMBLEWEED))
    assert f"trust the CA:   {PHASE2[outputs.CA_CERT_FILE]}   (docs/guide/bring-up.md, 'Trust the platform CA'" in text


BRING_UP = Path(__file__).parents[2] / "docs" / "guide" / "bring-up.md"
"""The guide that lists the prerequisites per family and the CA trust commands."""


def test_the_bring_up_guide_gives_the_ca_trust_command_of_every_family_for_the_data_folders_ca() -> None:
    guide = BRING_UP.read_text()
    section = guide[guide.index("### Trust the platform CA") :]
    section = section[: section.index("\n## ")]
    for key in (os_family.DEBIAN, os_family.FEDORA, os_family.ARCH, os_family.MACOS):
        [line] = os_family.ca_trust(OsFamily(key=key, distro=key), "<dataDir>/platform/ca.crt")
        assert f"`{line}`" in section, key
    assert "`uv run blueprint up` prints" in section


def test_up_ends_with_the_ca_trust_command_of_the_machine_it_runs_on(monkeypatch: pytest.MonkeyPatch) -> None:
    from cli.doctor import machine as real
    from tests.cli.doctor.fakes import FakeMachine
    from tests.cli.fake_runner import FakeRunner, context

    machine = FakeMachine(files={"/etc/os-release": ARCH})
    monkeypatch.setattr(real, "RealMachine", lambda: machine)
    runner = FakeRunner(existing={"phase1": {}, "phase2": PHASE2})
    ctx, out = context(runner, probe=lambda url, ca, headers, **_: "ok")
    assert phases.up(ctx, "2") == 0
    assert f"trust the CA:   sudo trust anchor --store {shlex.quote(PHASE2[outputs.CA_CERT_FILE])}\n" in out.getvalue()


@pytest.mark.parametrize("text", [DEBIAN_13, FEDORA_42, ROCKY_9, ARCH], ids=["debian", "fedora", "rocky", "arch"])
def test_the_bring_up_guide_gives_the_docker_commands_doctor_runs_for_each_family(text: str) -> None:
    guide = BRING_UP.read_text()
    section = guide[guide.index("## Prerequisites") : guide.index("## Names and trust")]
    for command in (*os_family.docker_install(detect(system="Linux", os_release=text)), os_family.DOCKER_START):
        assert f"`{command.shown}`" in section, command.shown
    assert f"`{os_family.MACOS_DOCKER_INSTALL.shown}`" in section


ORACLE_LINUX_9 = """\
NAME="Oracle Linux Server"
VERSION="9.4"
ID="ol"
ID_LIKE="fedora"
VARIANT="Server"
VARIANT_ID="server"
VERSION_ID="9.4"
PLATFORM_ID="platform:el9"
PRETTY_NAME="Oracle Linux Server 9.4"
ANSI_COLOR="0;31"
CPE_NAME="cpe:/o:oracle:linux:9:4:server"
HOME_URL="https://linux.oracle.com/"
BUG_REPORT_URL="https://github.com/oracle/oracle-linux"
"""
AMAZON_LINUX_2023 = """\
NAME="Amazon Linux"
VERSION="2023"
ID="amzn"
ID_LIKE="fedora"
VERSION_ID="2023"
PLATFORM_ID="platform:al2023"
PRETTY_NAME="Amazon Linux 2023"
ANSI_COLOR="0;33"
CPE_NAME="cpe:2.3:o:amazon:amazon_linux:2023"
HOME_URL="https://aws.amazon.com/linux/"
BUG_REPORT_URL="https://github.com/amazonlinux/amazon-linux-2023"
SUPPORT_END="2028-03-01"
"""


@pytest.mark.parametrize("text", [ORACLE_LINUX_9, AMAZON_LINUX_2023], ids=["oracle-linux-9", "amazon-linux-2023"])
def test_a_relative_of_fedora_by_id_like_alone_is_unknown_and_gets_no_fedora_or_rhel_packages(text: str) -> None:
    family = detect(system="Linux", os_release=text)
    assert family.key == os_family.UNKNOWN
    assert os_family.docker_install(family) == ()


def test_the_bring_up_guide_says_how_docker_starts_where_systemd_does_not_run() -> None:
    guide = BRING_UP.read_text()
    section = guide[guide.index("## Prerequisites") : guide.index("## Names and trust")]
    assert f"`{os_family.DOCKER_SERVICE_START.shown}`" in section
    assert "`sudo dockerd`" in section
