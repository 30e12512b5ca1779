"""Every bad input is refused before anything exists: a table of them, each as a user would give it
(a stack file, the apps manifest, the command line), and each refused the same way. The command
exits non-zero without a traceback, with a message that names the input, its bad value and a fix;
and no resource is registered, neither by the command (the plan harness records every program
it runs) nor by the stack's own program run directly, which checks everything first itself.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import cli.plan
from apps_manifest import APPS_DIR
from cli import doctor
from cli.main import main
from cli.plan import ProgramFailed
from stacks.config import PROJECT_DIR, ConfigError
from stacks.config.schema import stack_config
from tests.apps_copy import copy_apps
from tests.cli.doctor.fakes import FakeMachine

PROGRAM = PROJECT_DIR / "__main__.py"
MANIFEST = (APPS_DIR / "apps_manifest.yaml").read_text()


@dataclass(frozen=True)
class Bad:
    """One bad input. `says` are what the message must hold: the input, the bad value and the fix."""

    argv: tuple[str, ...]
    says: tuple[str, ...]
    files: dict[str, str] = field(default_factory=dict)
    """Stack files (Pulumi.<stack>.yaml) by stack, as the user wrote them."""
    manifest: str | None = None
    """apps/apps_manifest.yaml as the user wrote it."""
    program: str | None = None
    """The stack whose own program must refuse it too, registering nothing (None: only the command can get it)."""
    env: dict[str, str] = field(default_factory=dict)
    """Environment variables the command runs with; `{tmp}` in a value is the test's own folder."""
    project: str | None = None
    """Pulumi.yaml as the user left it (the checkout's own when None)."""
    prepare: Callable[[Path], None] | None = None
    """Anything else the user's checkout holds, made in the test's folder (which holds the stack
    files and apps/): links, FIFOs, big or oddly named files."""


def a_legacy_backend(folder: Path) -> None:
    """A `file://` backend folder in Pulumi's legacy layout: another project's stack, no `.pulumi/meta.yaml`."""
    (folder / "team-state" / ".pulumi" / "stacks").mkdir(parents=True)
    (folder / "team-state" / ".pulumi" / "stacks" / "prod.json").write_text("{}")


def stack_file(**config: Any) -> str:
    return "config:\n" + "".join(f"  {key}: {value}\n" for key, value in config.items())


def config_case(stack: str, key: str, value: str, valid: str, fix: str = "") -> Bad:
    """A bad value of a key of ours in the stack file of the stack that reads it."""
    return Bad(
        argv=("plan", stack),
        files={stack: stack_file(**{f"blueprint:{key}": value})},
        says=(
            f"blueprint:{key} = ",
            valid,
            fix or f"fix: in Pulumi.{stack}.yaml, replace `config: {{}}` with `config:` and the line `  blueprint:{key}: ",
        ),
        program=stack,
    )


def manifest_case(edit: tuple[str, str], *says: str, stack: str = "phase3") -> Bad:
    """apps_manifest.yaml with one text replaced (`edit`: old, new)."""
    old, new = edit
    assert old in MANIFEST, old
    return Bad(argv=("plan", stack), manifest=MANIFEST.replace(old, new, 1), says=says, program=stack)


KiB, MiB = 1024, 1024 * 1024


def touched(path: Path) -> Path:
    """`path`, made an empty file (and its folders)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    return path


def sparse_files(*names: str, size: int) -> Callable[[Path], None]:
    """A `prepare` that makes files of `size` bytes at apps/<name>, sparse: however big, they cost
    nothing to make (nor to check: the check stats them, and reads none)."""

    def prepare(folder: Path) -> None:
        for name in names:
            os.truncate(touched(folder / "apps" / name), size)

    return prepare


def apps_file_case(name: str, *says: str, size: int = 1) -> Bad:
    """A file of `size` bytes at apps/<name>."""
    return Bad(argv=("plan", "phase3"), prepare=sparse_files(name, size=size), says=says, program="phase3")


def a_node_modules(folder: Path) -> None:
    """guestbook's node_modules/ left without a .gitignore: 3 files of 20 MiB and 30 of 100 KiB."""
    sparse_files(*(f"guestbook/node_modules/big-{index}" for index in range(3)), size=20 * MiB)(folder)
    sparse_files(*(f"guestbook/node_modules/small-{index}" for index in range(30)), size=100 * KiB)(folder)


def data_dir_case(make: Callable[[Path], object], *says: str, at: str = "data") -> Bad:
    """blueprint:dataDir naming `at` in a folder of the test's own, where `make` puts what is not a folder."""

    def prepare(folder: Path) -> None:
        there = folder / "host" / at
        (folder / "host").mkdir()
        make(there)
        (folder / "Pulumi.phase1.yaml").write_text(stack_file(**{"blueprint:dataDir": str(there)}))

    return Bad(argv=("plan", "phase1"), prepare=prepare, says=("blueprint:dataDir = ", *says), program="phase1")


ALIAS_BOMB = "config:\n" + "".join(
    f"  blueprint:{name}: &{name} [{', '.join([f'*{previous}'] * 9) if previous else ', '.join(['lol'] * 9)}]\n"
    for previous, name in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)
"""A "billion laughs": nine aliases of nine of nine..., 10^9 values once expanded, in a few hundred bytes."""
PROJECT = (PROJECT_DIR / "Pulumi.yaml").read_text()


def link(name: str, target: str) -> Callable[[Path], None]:
    return lambda folder: (folder / name).symlink_to(target)


def fifo(name: str) -> Callable[[Path], None]:
    def make(folder: Path) -> None:
        (folder / name).unlink(missing_ok=True)
        os.mkfifo(folder / name)

    return make


def folder_named(name: str) -> Callable[[Path], None]:
    return lambda folder: (folder / name).mkdir()


def raw_bytes(name: str, data: bytes) -> Callable[[Path], None]:
    def write(folder: Path) -> None:
        (folder / name).write_bytes(data)

    return write


def removed(name: str) -> Callable[[Path], None]:
    return lambda folder: (folder / name).unlink()


GUESTBOOK = "  - name: guestbook\n"
NO_PULUMI = {"PATH": "{tmp}/no-tools", "HOME": "{tmp}"}
"""A machine without the Pulumi CLI: nothing on PATH, and no tools `doctor --fix` installed under HOME."""
SHARED = next(folder for folder in ("/srv", "/mnt", "/opt", "/media") if Path(folder) not in PROJECT_DIR.parents)
"""A folder that holds others' and is not where this checkout is (that is refused for another reason)."""


def a_checkout(folder: Path) -> None:
    """The test's folder made a git checkout (before `OTHER_USERS` has git take it as another user's)."""
    environment = {name: value for name, value in os.environ.items() if name != "GIT_TEST_ASSUME_DIFFERENT_OWNER"}
    subprocess.run(["git", "init", "-q", str(folder)], check=True, env=environment)


def a_repository_in_apps(folder: Path) -> None:
    """A project with no .git of its own, and someone else's in its apps/ (`OTHER_USERS`)."""
    a_checkout(folder / "apps")


def a_checkout_without_git(folder: Path) -> None:
    """A checkout (its .git, which no git reads here) on a machine without git (`NO_GIT`)."""
    (folder / ".git").mkdir()


NO_GIT = {"PATH": "{tmp}/no-tools-here"}


OTHER_USERS = {"GIT_TEST_ASSUME_DIFFERENT_OWNER": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
"""git as it is in a checkout another user owns: it refuses it (git's own switch for that, tests/test_git_trust.py),
and no `safe.directory` of this machine's lets it through."""
GIT_REFUSES = ("apps/apps_manifest.yaml: git refuses to read this checkout, /", "`git config --global --add safe.directory /")
UNDER_THE_MANIFEST = ("\nthe apps manifest (read by ", "phase3):\n  apps/apps_manifest.yaml: git refuses to read this checkout")
"""The refusal is the manifest's problem, under its own heading (the command's names phase2 and phase3, the
program's phase3 alone), not under a stack's."""


CASES: dict[str, Bad] = {
    # phase1's values, in its stack file
    "gitlab-nodes-zero": config_case("phase1", "gitlabNodes", "0", "expected an integer from 1 to 10"),
    "gitlab-nodes-ten-thousand": config_case("phase1", "gitlabNodes", "10000", "'10000' is not valid: expected an integer from 1 to 10"),
    "gitlab-nodes-a-word": config_case("phase1", "gitlabNodes", "three", "'three' is not valid: expected an integer"),
    "runner-nodes-zero": config_case("phase1", "runnerNodes", "0", "'0' is not valid: expected an integer from 1 to 8"),
    "runner-nodes-ninety-nine": config_case("phase1", "runnerNodes", "99", "'99' is not valid: expected an integer from 1 to 8"),
    "cluster-name-underscore": config_case("phase1", "clusterName", "Blue_Print", "'Blue_Print' is not valid: expected a DNS-1123 label"),
    "cluster-name-too-long": config_case("phase1", "clusterName", "a" * 50, "of at most 49 characters"),
    "domain-an-ip-address": config_case("phase1", "domain", "10.0.0.1", "'10.0.0.1' is not valid: expected a DNS name, not an IP address"),
    "domain-one-label": config_case(
        "phase1", "domain", "localhost", "'localhost' is not valid: expected a lowercase DNS name of at least two"
    ),
    # The platform CA the machine trusts would vouch for every owner's names under a public suffix.
    "domain-a-public-suffix-of-icann": Bad(
        argv=("plan", "phase1", "--config", "blueprint:domain=co.uk"),
        says=(
            "blueprint:domain = 'co.uk' is not valid: co.uk is a public suffix",
            "the platform CA your machine trusts would vouch for all of them",
            "fix: give `--config blueprint:domain=local.example.net`",
        ),
    ),
    "domain-a-public-suffix-of-a-private-registry": Bad(
        argv=("plan", "phase1", "--config", "blueprint:domain=github.io"),
        says=("blueprint:domain = 'github.io' is not valid: github.io is a public suffix", "--config blueprint:domain=local.example.net"),
    ),
    "domain-a-public-suffix-in-the-stack-file": config_case(
        "phase1", "domain", "blogspot.com", "'blogspot.com' is not valid: blogspot.com is a public suffix"
    ),
    "domain-uppercase": config_case("phase1", "domain", "Example.COM", "'Example.COM' is not valid: expected a lowercase DNS name"),
    "domain-label-with-a-leading-dash": config_case("phase1", "domain", "-x.example.net", "'-x.example.net' is not valid"),
    "http-port-zero": config_case("phase1", "httpPort", "0", "'0' is not valid: expected an integer from 1 to 65535"),
    "https-port-too-high": config_case("phase1", "httpsPort", "70000", "'70000' is not valid: expected an integer from 1 to 65535"),
    "ssh-port-taken-by-http": config_case("phase1", "sshPort", "80", "'80' is not valid: blueprint:httpPort is port 80 too"),
    "openbao-port-a-word": config_case("phase1", "openbaoPort", "abc", "'abc' is not valid: expected an integer"),
    "api-server-port-negative": config_case("phase1", "apiServerPort", "-1", "'-1' is not valid: expected an integer from 1 to 65535"),
    "preserve-data-yes": config_case("phase1", "preserveData", "'yes'", "'yes' is not valid: expected true or false"),
    "headlamp-maybe": config_case("phase1", "headlamp", "maybe", "'maybe' is not valid: expected true or false"),
    "headlamp-admin-one": config_case("phase1", "headlampAdmin", "1", "'1' is not valid: expected true or false"),
    "data-dir-in-etc": config_case("phase1", "dataDir", "/etc/blueprint", "must not be inside /etc"),
    "data-dir-outside-infra-data": config_case(
        "phase1", "dataDir", "../data", "'../data' is not valid: a relative data folder must be inside"
    ),
    "data-dir-a-shared-folder-itself": config_case(
        "phase1", "dataDir", SHARED, f"'{SHARED}' is not valid: the data folder must not be {SHARED} itself"
    ),
    "data-dir-with-a-semicolon": config_case("phase1", "dataDir", "'/srv/a;b'", "'/srv/a;b' is not valid: the data folder's path may hold"),
    "data-dir-home-of-no-user": config_case("phase1", "dataDir", "~blueprint-no-such-user/x", "there is no user 'blueprint-no-such-user'"),
    # keys: the namespace, the name, the stack
    "misspelt-namespace": Bad(
        argv=("plan", "phase1"),
        files={"phase1": stack_file(**{"bluprint:gitlabNodes": 2})},
        says=(
            "bluprint:gitlabNodes = '2' (in Pulumi.phase1.yaml) is not read by blueprint",
            "write it as blueprint:gitlabNodes in Pulumi.phase1.yaml",
        ),
        program="phase1",
    ),
    "our-key-under-a-provider-namespace": Bad(
        argv=("plan", "phase1"),
        files={"phase1": stack_file(**{"kubernetes:domain": "x.example.net"})},
        says=("kubernetes:domain = 'x.example.net' (in Pulumi.phase1.yaml) is not read by blueprint", "write it as blueprint:domain"),
        program="phase1",
    ),
    "no-namespace-read-as-blueprints": Bad(
        argv=("plan", "phase1"),
        files={"phase1": stack_file(gitlabNodes=0)},
        says=(
            "blueprint:gitlabNodes = '0' is not valid",
            "fix: in Pulumi.phase1.yaml, replace `config: {}` with `config:` and the line `  blueprint:gitlabNodes: 3`",
        ),
        program="phase1",
    ),
    "headlamp-yes-as-pulumi-reads-it": config_case("phase1", "headlamp", "yes", "'yes' is not valid: expected true or false"),
    "preserve-data-capitalised-string": config_case("phase1", "preserveData", "'True'", "'True' is not valid: expected true or false"),
    "gitlab-nodes-a-fraction": config_case("phase1", "gitlabNodes", "2.5", "'2.5' is not valid: expected an integer"),
    "domain-too-long-for-a-certificate": config_case(
        "phase1",
        "domain",
        "a" * 30 + "." + "b" * 30 + ".net",
        "expected at most 62 characters: the platform's certificate is for *.<domain>",
    ),
    "headlamp-admin-without-headlamp": config_case(
        "phase1",
        "headlampAdmin",
        "true",
        "blueprint:headlamp is false: there is no Headlamp",
        "fix: in Pulumi.phase1.yaml, replace `config: {}` with `config:` and the line `  blueprint:headlampAdmin: false`",
    ),
    "stack-file-key-twice": Bad(
        argv=("plan", "phase1"),
        files={"phase1": "config:\n  blueprint:gitlabNodes: 2\n  blueprint:gitlabNodes: 3\n"},
        says=("Pulumi.phase1.yaml is not valid YAML: the key 'blueprint:gitlabNodes' is given twice (line 3, column 3)",),
    ),
    "stack-file-a-list": Bad(
        argv=("plan", "phase1"), files={"phase1": "- config\n"}, says=("Pulumi.phase1.yaml: expected a mapping", "`config: {}`")
    ),
    "stack-file-key-with-two-colons": Bad(
        argv=("plan", "phase1"),
        files={"phase1": stack_file(**{"blueprint:a:b": 1})},
        says=("'blueprint:a:b' is not a config key (Pulumi takes `<namespace>:<name>`)", "such as blueprint:gitlabNodes"),
    ),
    "override-an-unknown-key": Bad(
        argv=("plan", "phase1", "--config", "blueprint:gitlabNode=2"),
        says=(
            "blueprint:gitlabNode = '2' (in --config blueprint:gitlabNode) is not a blueprint setting",
            "did you mean blueprint:gitlabNodes?",
        ),
    ),
    "pipeline-timeout-base-60-is-text-to-pulumi": config_case(
        "phase3", "pipelineTimeout", "10:00", "'10:00' is not valid: expected an integer"
    ),
    "stack-file-same-key-two-spellings": Bad(
        argv=("plan", "phase1"),
        files={"phase1": "config:\n  gitlabNodes: 2\n  blueprint:gitlabNodes: 5\n"},
        says=("Pulumi.phase1.yaml: 'gitlabNodes' and 'blueprint:gitlabNodes' are the same key, blueprint:gitlabNodes; keep one of them",),
    ),
    "stack-file-key-a-list": Bad(
        argv=("plan", "phase1"),
        files={"phase1": "config:\n  ? [a]\n  : 1\n"},
        says=("Pulumi.phase1.yaml is not valid YAML: a key must be a name",),
    ),
    "override-a-misspelt-namespace": Bad(
        argv=("plan", "phase2", "--config", "bluprint:gitlabNodes=2"),
        says=("'bluprint:gitlabNodes' is not a blueprint setting", "write it as blueprint:gitlabNodes"),
    ),
    "manifest-name-a-list": manifest_case((GUESTBOOK, "  - name: [a]\n"), "`name` (['a']) must be a DNS-1123 label"),
    "domain-with-a-trailing-newline": Bad(
        argv=("plan", "phase1"),
        files={"phase1": "config:\n  blueprint:domain: |\n    my.example.net\n"},
        says=("blueprint:domain = 'my.example.net\\n' is not valid: expected a lowercase DNS name",),
        program="phase1",
    ),
    "misspelt-namespace-and-key": Bad(
        argv=("plan", "phase2"),
        files={"phase2": stack_file(**{"bluprint:gitlabnode": 2})},
        says=(
            "bluprint:gitlabnode = '2' (in Pulumi.phase2.yaml) is not read by blueprint",
            "write it as blueprint:gitlabNodes in Pulumi.phase1.yaml",
        ),
        program="phase2",
    ),
    "key-on-the-wrong-stack-with-a-bad-value-too": Bad(
        argv=("plan", "phase2"),
        files={"phase2": stack_file(**{"blueprint:pipelineTimeout": 30})},
        says=("is set on stack phase2, which does not read it", "once moved to phase3: blueprint:pipelineTimeout = '30' is not valid"),
        program="phase2",
    ),
    "override-of-another-namespace": Bad(
        argv=("plan", "phase1", "--config", "kubernetes:context=x"),
        says=("'kubernetes:context' is not a blueprint setting", "blueprint reads"),
    ),
    "override-a-key-with-two-colons": Bad(argv=("plan", "phase1", "--config", "a:b:c=1"), says=("'a:b:c' is not a blueprint setting",)),
    "manifest-host-on-a-project-that-does-not-deploy": manifest_case(
        ("    deploy: false\n", "    deploy: false\n    host: docs\n"),
        "`host: 'docs'` is for a project that deploys (nothing would answer there); set `deploy: true`, or remove `host`",
    ),
    "manifest-a-key-twice": manifest_case(
        ("  - name: redis-slave\n    deploy: true\n", "  - name: redis-slave\n    deploy: true\n    deploy: false\n"),
        "apps_manifest.yaml is not valid YAML: the key 'deploy' is given twice",
    ),
    "domain-empty": config_case("phase1", "domain", "", "blueprint:domain = '' is not valid"),
    "misspelt-key": Bad(
        argv=("plan", "phase1"),
        files={"phase1": stack_file(**{"blueprint:gitlabNode": 2})},
        says=("blueprint:gitlabNode = '2' (in Pulumi.phase1.yaml) is not a blueprint setting", "did you mean blueprint:gitlabNodes?"),
        program="phase1",
    ),
    "domain-on-phase2": Bad(
        argv=("plan", "phase2"),
        files={"phase2": stack_file(**{"blueprint:domain": "x.example.net"})},
        says=(
            "blueprint:domain = 'x.example.net' is set on stack phase2, which does not read it: phase1 reads it",
            "`pulumi config set -s phase1 blueprint:domain x.example.net`",
        ),
        program="phase2",
    ),
    "preserve-data-on-phase2": Bad(
        argv=("plan", "phase2"),
        files={"phase2": stack_file(**{"blueprint:preserveData": "true"})},
        says=("blueprint:preserveData = 'true' is set on stack phase2, which does not read it", "move its line from Pulumi.phase2.yaml"),
        program="phase2",
    ),
    "gitlab-nodes-on-phase3": Bad(
        argv=("plan", "phase3"),
        files={"phase3": stack_file(**{"blueprint:gitlabNodes": 2})},
        says=(
            "blueprint:gitlabNodes = '2' is set on stack phase3, which does not read it",
            "`pulumi config rm -s phase3 blueprint:gitlabNodes`",
        ),
        program="phase3",
    ),
    "pipeline-timeout-on-phase1": Bad(
        argv=("plan", "phase1"),
        files={"phase1": stack_file(**{"blueprint:pipelineTimeout": 900})},
        says=("blueprint:pipelineTimeout = '900' is set on stack phase1", "phase3 reads it", "to Pulumi.phase3.yaml"),
        program="phase1",
    ),
    "old-config-module-form-read-as-pulumi-reads-it": Bad(
        argv=("plan", "phase1"),
        files={"phase1": stack_file(**{"blueprint:config:gitlabNodes": 0})},
        says=(
            "blueprint:gitlabNodes = '0' is not valid",
            "fix: in Pulumi.phase1.yaml, replace `config: {}` with `config:` and the line `  blueprint:gitlabNodes: 3`",
        ),
        program="phase1",
    ),
    # phase3's values
    "pipeline-timeout-too-short": config_case("phase3", "pipelineTimeout", "5", "'5' is not valid: expected an integer from 60 to 7200"),
    "pipeline-timeout-too-long": config_case("phase3", "pipelineTimeout", "99999", "'99999' is not valid"),
    "pipeline-timeout-a-word": config_case("phase3", "pipelineTimeout", "soon", "'soon' is not valid"),
    # dev: every phase's problems at once
    "dev-reports-every-phase-at-once": Bad(
        argv=("plan", "dev"),
        files={"dev": stack_file(**{"blueprint:gitlabNodes": 0, "blueprint:pipelineTimeout": 5})},
        manifest=MANIFEST.replace("needs: [redis]", "needs: [guestbook]"),
        says=(
            "3 problems",
            "blueprint:gitlabNodes = '0' is not valid",
            "blueprint:pipelineTimeout = '5' is not valid",
            "`needs` goes round in a circle",
            "`pulumi config set -s dev blueprint:pipelineTimeout 600`",
        ),
        program="dev",
    ),
    # the stack files themselves
    "stack-file-not-yaml": Bad(
        argv=("plan", "phase1"),
        files={"phase1": "config:\n  blueprint:gitlabNodes: [3\n"},
        says=("Pulumi.phase1.yaml is not valid YAML", "(line 3, column 1)", "fix that line"),
    ),
    "stack-file-config-a-list": Bad(
        argv=("plan", "phase1"),
        files={"phase1": "config:\n  - blueprint:gitlabNodes: 3\n"},
        says=("Pulumi.phase1.yaml: `config:` must hold one `<namespace>:<key>: <value>` per line", "such as blueprint:gitlabNodes: 2"),
    ),
    # the apps manifest
    "manifest-name-a-path": manifest_case(
        (GUESTBOOK, "  - name: ../infra/data/shared/platform/secrets\n"),
        "`name` ('../infra/data/shared/platform/secrets') must be a DNS-1123 label",
        "it names the folder apps/<name>/",
    ),
    "manifest-name-uppercase": manifest_case((GUESTBOOK, "  - name: Guestbook\n"), "`name` ('Guestbook') must be a DNS-1123 label"),
    "manifest-chart-absolute": manifest_case(
        ("    chart: chart\n    build: true", "    chart: /etc\n    build: true"),
        "deploys, so `chart` ('/etc') must be a folder inside the project's own folder, without '..', such as chart",
    ),
    "manifest-chart-in-another-project": manifest_case(
        ("    chart: chart\n    build: true", "    chart: ../redis/chart\n    build: true"),
        "`chart` ('../redis/chart') must be a folder inside the project's own folder",
    ),
    "manifest-host-leading-dash": manifest_case(
        ("host: guestbook", "host: -x"), "`host: '-x'` must be a DNS-1123 label", "such as guestbook"
    ),
    "manifest-host-trailing-dash": manifest_case(("host: guestbook", "host: x-"), "`host: 'x-'` must be a DNS-1123 label"),
    "manifest-host-not-ascii": manifest_case(("host: guestbook", "host: gästebuch"), "`host: 'gästebuch'` must be a DNS-1123 label"),
    "manifest-host-of-the-platform": manifest_case(
        ("host: guestbook", "host: gitlab"), "`host: 'gitlab'` is the platform's own (gitlab, registry, kas, headlamp are); choose another"
    ),
    # Reserved whether or not phase1 installs Headlamp: an app there would take the dashboard's name.
    "manifest-host-of-headlamp": manifest_case(
        ("host: guestbook", "host: headlamp"),
        "`host: 'headlamp'` is the platform's own (gitlab, registry, kas, headlamp are); choose another",
    ),
    "manifest-chart-outside-a-project-that-does-not-deploy": manifest_case(
        (
            "  - name: shared-code          # first: the others include its CI templates\n    deploy: false\n",
            "  - name: shared-code\n    deploy: false\n    chart: /etc\n",
        ),
        "`chart: '/etc'` is for a project that deploys; set `deploy: true`, or remove `chart`",
    ),  # fmt: skip
    "manifest-shared-code-needs-a-project": manifest_case(
        ("    deploy: false\n", "    deploy: false\n    needs: [guestbook]\n"),
        "`needs: ['guestbook']`: shared-code goes first, since every pipeline includes its templates; remove it",
    ),
    "manifest-name-gitlab-keeps": manifest_case(
        (GUESTBOOK, "  - name: tree\n"), "`name` ('tree') must be none of the paths GitLab keeps for itself"
    ),
    "manifest-name-longer-than-a-helm-release": manifest_case(
        (GUESTBOOK, f"  - name: {'g' * 54}\n"), "must be a DNS-1123 label", "at most 53 characters (it is the app's Helm release too)"
    ),
    "manifest-needs-cycle": manifest_case(
        ("needs: [redis]", "needs: [guestbook]"),
        "`needs` goes round in a circle: guestbook -> redis-slave -> guestbook",
        "remove one of these needs",
    ),
    "manifest-needs-cycle-refused-by-phase2-too": manifest_case(
        ("needs: [redis]", "needs: [guestbook]"), "`needs` goes round in a circle", stack="phase2"
    ),
    "manifest-needs-a-project-that-does-not-deploy": manifest_case(
        ("needs: [redis, redis-slave]", "needs: [shared-code]"),
        "'guestbook' needs 'shared-code', which is not another deploying project",
        "name one of ['redis', 'redis-slave'], or remove it",
    ),
    "manifest-deploy-a-string": manifest_case(
        ("    deploy: true\n    chart: chart\n    build", "    deploy: 'yes'\n    chart: chart\n    build"),
        "`deploy: 'yes'` must be true or false",
    ),
    "manifest-builds-without-a-dockerfile": manifest_case(
        ("  - name: redis\n    deploy: true\n", "  - name: redis\n    build: true\n    deploy: true\n"),
        "builds, so apps/redis/Dockerfile must be among its files pushed; add it, or set `build: false`",
    ),
    "manifest-host-used-twice": manifest_case(
        ("  - name: redis\n    deploy: true\n", "  - name: redis\n    host: guestbook\n    deploy: true\n"),
        "`host: 'guestbook'` is 'guestbook''s too; give each project its own host",
    ),
    "manifest-unknown-key": manifest_case(
        ("    deploy: true\n    chart: chart\n    build", "    deploys: true\n    chart: chart\n    build"),
        "unknown key(s) deploys",
        "valid keys are",
    ),
    "manifest-without-shared-code": manifest_case(
        ("  - name: shared-code          # first: the others include its CI templates\n    deploy: false\n", ""),
        "the 'shared-code' project, whose templates every pipeline includes, is missing; put it back first",
    ),
    "manifest-not-yaml": Bad(
        argv=("plan", "phase3"),
        manifest="projects: [\n",
        says=("apps_manifest.yaml is not valid YAML", "(line 2, column 1)", "fix that line"),
    ),
    # the command line
    "plan-an-unknown-stack": Bad(
        argv=("plan", "nosuch"), says=("argument stack: invalid choice: 'nosuch'", "(choose from 'phase1', 'phase2', 'phase3', 'dev')")
    ),
    "doctor-an-unknown-stack": Bad(
        argv=("doctor", "--stack", "nosuch"), says=("argument --stack: invalid choice: 'nosuch'", "choose from")
    ),
    "up-an-unknown-phase": Bad(
        argv=("up", "--phase", "4"), says=("argument --phase: invalid choice: '4'", "choose from '1', '2', '3', 'all'")
    ),
    "override-without-a-value": Bad(
        argv=("plan", "phase1", "--config", "gitlabNodes"), says=("expected KEY=VALUE, such as blueprint:gitlabNodes=2, got 'gitlabNodes'",)
    ),
    "override-no-stack-of-the-chain-reads": Bad(
        argv=("plan", "phase1", "--config", "blueprint:pipelineTimeout=900"),
        says=("--config blueprint:pipelineTimeout: phase1 does not read it", "phase3 (and dev) do: plan one of them"),
    ),
    "override-a-bad-value": Bad(
        argv=("plan", "phase2", "--config", "blueprint:gitlabNodes=0"),
        says=("stack phase1:\n  blueprint:gitlabNodes = '0' is not valid", "fix: give `--config blueprint:gitlabNodes=3`"),
    ),
    "doctor-a-stack-file-that-is-not-yaml": Bad(
        argv=("doctor", "--stack", "phase3"),
        files={"phase1": "config:\n  blueprint:gitlabNodes: [\n", "phase3": "config:\n  blueprint:pipelineTimeout: [\n"},
        says=("Pulumi.phase3.yaml is not valid YAML", "fix that line"),
    ),
    "doctor-shows-every-phase-at-once": Bad(
        argv=("doctor",),
        files={"phase1": stack_file(**{"blueprint:gitlabNodes": 0}), "phase3": stack_file(**{"blueprint:pipelineTimeout": 5})},
        says=("stack phase1:", "blueprint:gitlabNodes = '0' is not valid", "stack phase3:", "blueprint:pipelineTimeout = '5' is not valid"),
    ),
    # the doctor's flags, and a checkout git refuses as another user's
    "doctor-yes-without-fix": Bad(argv=("doctor", "--yes"), says=("--yes is for --fix", "`uv run blueprint doctor --fix --yes`")),
    "plan-a-checkout-of-another-user": Bad(
        argv=("plan", "phase3"), env=OTHER_USERS, prepare=a_checkout, says=(*GIT_REFUSES, *UNDER_THE_MANIFEST), program="phase3"
    ),
    "doctor-a-checkout-of-another-user": Bad(argv=("doctor",), env=OTHER_USERS, prepare=a_checkout, says=GIT_REFUSES),
    # apps/: the files a project pushes, and where the data goes (issue 23, item 3) and the manifest's label (item 6)
    "apps-file-name-with-a-newline": apps_file_case(
        "guestbook/notes\n.txt",
        "apps/guestbook/'notes\\n.txt': its name holds a control, line-breaking or invisible formatting character ('\\n')",
        "rename it",
    ),
    "apps-file-name-with-a-tab": apps_file_case("guestbook/a\tb.txt", "apps/guestbook/'a\\tb.txt'", "('\\t')", "rename it"),
    "apps-file-name-with-an-escape": apps_file_case(
        "guestbook/static/\x1b[31mred.css", "apps/guestbook/'static/\\x1b[31mred.css'", "('\\x1b')", "rename it"
    ),
    "apps-file-a-60-mb-binary": apps_file_case(
        "guestbook/static/video.bin",
        "apps/guestbook/static/video.bin is 60 MiB, over the cap of 2 MiB a file",
        "remove apps/guestbook/static/video.bin from apps/guestbook/ (outside a git checkout every file is pushed",
        "or fetch what is bigger when the image is built or the pipeline runs",
        size=60 * MiB,
    ),
    "apps-project-over-its-total": Bad(
        argv=("plan", "phase3"),
        prepare=sparse_files(*(f"guestbook/static/photo-{index}.jpg" for index in range(5)), size=1800 * KiB),
        says=(
            "apps/guestbook: its files come to 8.9 MiB, over the cap of 8 MiB a project",
            "the biggest: static/ (8.8 MiB in 5 files)",
        ),
        program="phase3",
    ),
    "apps-a-node-modules-counted-whole-in-the-total": Bad(
        argv=("plan", "phase3"),
        prepare=a_node_modules,
        says=("apps/guestbook: its files come to 63 MiB, over the cap of 8 MiB a project", "node_modules/ (63 MiB in 33 files)"),
        program="phase3",
    ),
    "apps-300-files-over-the-cap": Bad(
        argv=("plan", "phase3"),
        prepare=sparse_files(*(f"guestbook/photos/photo-{index:03}.jpg" for index in range(300)), size=2 * MiB + 100 * KiB),
        says=("apps/guestbook/photos/photo-000.jpg is 2.1 MiB", "and 295 more files over the cap of 2 MiB a file", "295 in photos/"),
        program="phase3",
    ),
    "apps-file-name-with-a-line-separator": apps_file_case("guestbook/a\u2028b.txt", "apps/guestbook/'a\\u2028b.txt'", "rename it"),
    "apps-file-name-with-a-right-to-left-override": apps_file_case(
        "guestbook/invoice\u202etxt.exe", "apps/guestbook/'invoice\\u202etxt.exe'", "('\\u202e')", "rename it"
    ),
    "data-dir-a-file": data_dir_case(
        lambda there: there.write_text("not a folder\n"), "is a file, not a folder", "remove or move it, or give another folder"
    ),
    "data-dir-a-link-to-a-file": data_dir_case(lambda there: there.symlink_to(touched(there.parent / "a-file")), "is a link to a file"),
    "data-dir-a-link-that-leads-nowhere": data_dir_case(
        lambda there: there.symlink_to(there.parent / "gone"), "is a link that leads nowhere"
    ),
    "data-dir-inside-a-file": data_dir_case(lambda there: touched(there.parent), "goes through", "which is a file", at="a-file/data"),
    "data-dir-with-a-300-character-part": config_case(
        "phase1",
        "dataDir",
        f"/srv/blueprint/{'d' * 300}",
        "a part of its path is 300 bytes long ('dddd",
        "over the 255 bytes a file system takes for one name; shorten it",
    ),
    # on Linux (where the suite runs) a name takes 255 bytes; on macOS 255 UTF-16 units, where this one fits
    "data-dir-with-a-part-of-200-letters-but-400-bytes": config_case(
        "phase1", "dataDir", f"/srv/blueprint/{'é' * 200}", "a part of its path is 400 bytes long", "over the 255 bytes"
    ),
    # The manifest is no one stack's: phase2 and phase3 both read it (the program of each says so of itself).
    "manifest-problem-under-its-own-name-not-a-stacks": Bad(
        argv=("plan", "phase3"),
        manifest=MANIFEST.replace("needs: [redis]", "needs: [guestbook]"),
        says=("\nthe apps manifest (read by phase2 and phase3):\n  apps/apps_manifest.yaml: `needs` goes round in a circle",),
    ),
    # the command line and the commands that drive Pulumi (cli): an override given twice, the user's
    # passphrase file, and each such command refused before it writes blueprint's passphrase file
    "override-a-key-twice": Bad(
        argv=("plan", "phase1", "--config", "blueprint:gitlabNodes=2", "--config", "blueprint:gitlabNodes=3"),
        says=("argument --config: blueprint:gitlabNodes is given twice ('2', then '3': the last would win): give it once",),
    ),
    "override-a-key-twice-with-one-value": Bad(
        argv=("plan", "phase1", "--config", "blueprint:gitlabNodes=2", "--config", "blueprint:gitlabNodes=2"),
        says=("argument --config: blueprint:gitlabNodes is given twice (both '2'): give it once",),
    ),
    "override-a-key-twice-spelt-two-ways": Bad(
        argv=("plan", "phase1", "--config", "gitlabNodes=2", "--config", "blueprint:config:gitlabNodes=3"),
        says=(
            "argument --config: blueprint:gitlabNodes is given twice, as 'gitlabNodes' and as 'blueprint:config:gitlabNodes' "
            "(one key to Pulumi) ('2', then '3': the last would win): give it once",
        ),
    ),
    "override-a-long-value-twice": Bad(
        argv=("plan", "phase1", "--config", "blueprint:domain=" + "a" * 100_000, "--config", "blueprint:domain=" + "b" * 100_000),
        says=("argument --config: blueprint:domain is given twice", "(100000 characters)", "give it once"),
    ),
    "override-a-long-text-without-a-value": Bad(
        argv=("plan", "phase1", "--config", "g" * 100_000),
        says=("expected KEY=VALUE, such as blueprint:gitlabNodes=2", "(100000 characters)"),
    ),
    "passphrase-file-that-does-not-exist": Bad(
        argv=("preview",),
        env={"PULUMI_CONFIG_PASSPHRASE_FILE": "{tmp}/no-such-passphrase"},
        says=(
            "PULUMI_CONFIG_PASSPHRASE_FILE names",
            "no-such-passphrase', which does not exist",
            "Create it, holding your passphrase; or unset the variable (`unset PULUMI_CONFIG_PASSPHRASE_FILE`)",
        ),
    ),
    "passphrase-file-a-folder": Bad(
        argv=("up",),
        env={"PULUMI_CONFIG_PASSPHRASE_FILE": "{tmp}/apps"},
        says=("PULUMI_CONFIG_PASSPHRASE_FILE names", "apps', which is a folder", "unset PULUMI_CONFIG_PASSPHRASE_FILE"),
    ),
    "passphrase-file-a-dangling-link": Bad(
        argv=("status",),
        env={"PULUMI_CONFIG_PASSPHRASE_FILE": "{tmp}/passphrase"},
        prepare=lambda folder: (folder / "passphrase").symlink_to(folder / "gone"),
        says=("PULUMI_CONFIG_PASSPHRASE_FILE names", "passphrase', a link to", "gone', which does not exist"),
    ),
    "passphrase-file-a-fifo": Bad(
        argv=("kubeconfig",),
        env={"PULUMI_CONFIG_PASSPHRASE_FILE": "{tmp}/passphrase"},
        prepare=lambda folder: os.mkfifo(folder / "passphrase"),
        says=("PULUMI_CONFIG_PASSPHRASE_FILE names", "passphrase', which is not a regular file", "unset PULUMI_CONFIG_PASSPHRASE_FILE"),
    ),
    "passphrase-file-missing-for-secrets-show": Bad(
        argv=("secrets", "--show", "gitlab-root-password"),
        env={"PULUMI_CONFIG_PASSPHRASE_FILE": "{tmp}/no-such-passphrase"},
        says=("PULUMI_CONFIG_PASSPHRASE_FILE names", "which does not exist"),
    ),
    "passphrase-file-missing-for-env": Bad(
        argv=("env",),
        env={"PULUMI_CONFIG_PASSPHRASE_FILE": "{tmp}/no-such-passphrase"},
        says=("PULUMI_CONFIG_PASSPHRASE_FILE names", "which does not exist"),
    ),
    "config-home-of-ten-thousand-characters": Bad(
        argv=("env",),
        env={"XDG_CONFIG_HOME": "{tmp}/" + "c" * 10_000},
        says=("blueprint cannot use its passphrase file '", "characters) (File name too long)"),
    ),
    "up-with-a-bad-stack-file": Bad(
        argv=("up",), files={"phase1": stack_file(**{"blueprint:gitlabNodes": 0})}, says=("blueprint:gitlabNodes = '0' is not valid",)
    ),
    "preview-with-a-bad-stack-file": Bad(
        argv=("preview", "--phase", "3"),
        files={"phase3": stack_file(**{"blueprint:pipelineTimeout": 5})},
        says=("blueprint:pipelineTimeout = '5' is not valid",),
    ),
    "destroy-with-a-bad-phase1-stack-file": Bad(
        argv=("destroy", "--yes"),
        files={"phase1": stack_file(**{"blueprint:dataDir": "/etc/blueprint"})},
        says=("blueprint:dataDir = '/etc/blueprint' is not valid", "must not be inside /etc"),
    ),
    "destroy-wipe-cache-keeping-phase1": Bad(
        argv=("destroy", "--phase", "2", "--wipe-cache"),
        says=("--wipe-cache removes the image cache", "this destroy (phase 2) keeps phase1 up", "without --wipe-cache"),
    ),
    "status-without-the-pulumi-cli": Bad(
        argv=("status",), env=NO_PULUMI, says=("blueprint status needs the Pulumi CLI", "no `pulumi` on PATH", "fix:")
    ),
    "kubeconfig-without-the-pulumi-cli": Bad(
        argv=("kubeconfig",), env=NO_PULUMI, says=("blueprint kubeconfig needs the Pulumi CLI", "no `pulumi` on PATH")
    ),
    "secrets-show-without-the-pulumi-cli": Bad(
        argv=("secrets", "--show", "gitlab-root-password"), env=NO_PULUMI, says=("needs the Pulumi CLI", "no `pulumi` on PATH")
    ),
    "cache-prune-without-the-pulumi-cli": Bad(
        argv=("cache", "prune"), env=NO_PULUMI, says=("blueprint cache needs the Pulumi CLI", "no `pulumi` on PATH")
    ),
    "destroy-without-the-pulumi-cli": Bad(
        argv=("destroy", "--yes"), env=NO_PULUMI, says=("blueprint destroy needs the Pulumi CLI", "no `pulumi` on PATH")
    ),
    # git about the checkout (issue 23's review of the doctor work): a repository not the project's, no git
    "plan-a-repository-in-apps-of-another-user": Bad(
        argv=("plan", "phase3"),
        env=OTHER_USERS,
        prepare=a_repository_in_apps,
        says=("git refuses the repository at /", "which holds apps/ but is not this project's folder", "do not add it to safe.directory"),
        program="phase3",
    ),
    "plan-a-checkout-without-git": Bad(
        argv=("plan", "phase3"),
        env=NO_GIT,
        prepare=a_checkout_without_git,
        says=("apps/apps_manifest.yaml: git cannot be run", "and this checkout is a git repository (/", "install git"),
        program="phase3",
    ),
    # the YAML files blueprint reads (yaml_files): a regular file of bounded size, nesting and aliases, each refusal its own fix
    "stack-file-a-fifo": Bad(
        argv=("plan", "phase1"),
        prepare=fifo("Pulumi.phase1.yaml"),
        says=("Pulumi.phase1.yaml is a FIFO (a named pipe), not a regular file", "replace it with the YAML file itself"),
    ),
    "stack-file-a-dangling-link": Bad(
        argv=("plan", "phase1"),
        prepare=link("Pulumi.phase1.yaml", "Pulumi.gone.yaml"),
        says=("Pulumi.phase1.yaml is a link to Pulumi.gone.yaml, which does not exist", "point the link at the file, or remove it"),
    ),
    "stack-file-a-link-to-dev-zero": Bad(
        argv=("plan", "phase1"),
        prepare=link("Pulumi.phase1.yaml", "/dev/zero"),
        says=("Pulumi.phase1.yaml is a device (through the link to /dev/zero), not a regular file",),
    ),
    "stack-file-a-folder": Bad(
        argv=("plan", "phase1"),
        prepare=folder_named("Pulumi.phase1.yaml"),
        says=("Pulumi.phase1.yaml is a folder, not a file", "remove or rename the folder"),
    ),
    "stack-file-not-utf-8": Bad(
        argv=("plan", "phase1"),
        prepare=raw_bytes("Pulumi.phase1.yaml", b"config:\n  blueprint:domain: caf\xe9.example.net\n"),
        says=("Pulumi.phase1.yaml is not UTF-8 text (line 2, column 24 holds the byte 0xe9)", "save it as UTF-8"),
    ),
    "stack-file-too-big": Bad(
        argv=("plan", "phase1"),
        files={"phase1": "config: {}\n" + "#" * 65_536 + "\n"},
        says=("Pulumi.phase1.yaml holds more than 65,536 bytes, the most blueprint reads", "is it the file you meant?"),
    ),
    "stack-file-an-alias-bomb": Bad(
        argv=("plan", "phase1"),
        files={"phase1": ALIAS_BOMB},
        says=("Pulumi.phase1.yaml cannot be read: its aliases (*name) expand", "excessive aliasing", "with fewer aliases"),
    ),
    "stack-file-an-alias-naming-itself": Bad(
        argv=("plan", "phase1"),
        files={"phase1": "config:\n  blueprint:domain: &a [*a]\n"},
        says=("Pulumi.phase1.yaml cannot be read: an alias (*name) names the value that holds it", "remove that alias"),
    ),
    "stack-file-nested-twenty-thousand-deep": Bad(
        argv=("plan", "phase1"),
        files={"phase1": "config:\n  blueprint:domain: " + "[" * 20_000 + "]" * 20_000 + "\n"},
        says=("Pulumi.phase1.yaml cannot be read: values nest more than 100 deep (line 2", "write its values out flatter"),
    ),
    "stack-file-config-misspelt": Bad(
        argv=("plan", "phase1"),
        files={"phase1": "confg:\n  blueprint:gitlabNodes: 2\n"},
        says=("Pulumi.phase1.yaml: 'confg' is not a key of a stack file, and Pulumi would ignore it", "did you mean config?"),
    ),
    "project-file-a-key-without-its-default": Bad(
        argv=("plan", "phase1"),
        project=PROJECT.replace("    default: blueprint\n", "", 1),
        says=("Pulumi.yaml: the config key 'clusterName' declares no `default:`", "`git diff Pulumi.yaml` shows what changed"),
    ),
    "project-file-a-key-without-its-default-and-a-key-of-another-namespace": Bad(
        argv=("plan", "phase1", "--config", "x:clusterName=1"),
        project=PROJECT.replace("    default: blueprint\n", "", 1),
        says=("'x:clusterName' is not a blueprint setting", "Pulumi.yaml lists them"),
    ),
    "project-file-missing": Bad(
        argv=("plan", "phase1"),
        prepare=removed("Pulumi.yaml"),
        says=("Pulumi.yaml is missing; blueprint runs from its checkout, which holds it", "checkout -- Pulumi.yaml"),
    ),
    "project-file-not-yaml": Bad(
        argv=("plan", "phase1"),
        project="name: blueprint\nconfig: [\n",
        says=("Pulumi.yaml is not valid YAML", "fix that line"),
    ),
    "project-file-a-list": Bad(
        argv=("plan", "phase1"),
        project="- name\n",
        says=("Pulumi.yaml: expected a mapping with the project's `name:` and its `config:` declarations",),
    ),
    "override-a-value-of-a-hundred-thousand-characters": Bad(
        argv=("plan", "phase1", "--config", "blueprint:domain=" + "a" * 100_000),
        says=("blueprint:domain = 'aaaaaaaaaa", "aaa…' (100000 characters) is not valid: expected a lowercase DNS name"),
    ),
    "override-an-integer-of-a-hundred-thousand-digits": Bad(
        argv=("plan", "phase1", "--config", "blueprint:gitlabNodes=" + "1" * 100_000),
        says=("blueprint:gitlabNodes = '1111111111", "…' (100000 characters) is not valid: expected an integer from 1 to 10"),
    ),
    "stack-file-an-unknown-key-of-a-hundred-thousand-characters": Bad(  # sixty thousand: the file's cap is 64 KiB
        argv=("plan", "phase1"),
        files={"phase1": stack_file(**{"blueprint:x": "y" * 60_000})},
        says=(
            "blueprint:x = 'yyyy",
            "…' (60000 characters) (in Pulumi.phase1.yaml) is not a blueprint setting",
        ),
        program="phase1",
    ),
    "override-without-a-value-of-a-hundred-thousand-characters": Bad(
        argv=("plan", "phase1", "--config", "g" * 100_000),
        says=("expected KEY=VALUE, such as blueprint:gitlabNodes=2, got 'gggg", "…' (100000 characters)"),
    ),
    "override-a-key-of-a-hundred-thousand-characters-in-another-namespace": Bad(
        argv=("plan", "phase1", "--config", "x:" + "k" * 100_000 + "=1"),
        says=(
            "'x:kkkk",
            "…' (100002 characters) is not a blueprint setting",
        ),
    ),
    "cluster-name-of-a-hundred-thousand-characters-with-the-image-cache-on": Bad(
        argv=("plan", "phase1", "--config", "blueprint:imageCache=true", "--config", "blueprint:clusterName=" + "c" * 100_000),
        says=("blueprint:clusterName = 'cccc", "…' (100000 characters) is not valid: expected a DNS-1123 label"),
    ),
    "data-dir-home-of-a-user-of-a-hundred-thousand-characters": Bad(
        argv=("plan", "phase1", "--config", "blueprint:dataDir=~" + "u" * 100_000),
        says=("blueprint:dataDir = '~uuu", "is not valid: there is no user 'uuuu", "…' (100000 characters) on this machine"),
    ),
    "manifest-an-alias-bomb": Bad(
        argv=("plan", "phase3"),
        manifest=ALIAS_BOMB,
        says=("apps_manifest.yaml cannot be read: its aliases (*name) expand", "excessive aliasing"),
    ),
    "manifest-a-fifo": Bad(
        argv=("plan", "phase3"),
        prepare=fifo("apps/apps_manifest.yaml"),
        says=("apps_manifest.yaml is a FIFO (a named pipe), not a regular file",),
    ),
    "manifest-missing": Bad(
        argv=("plan", "phase3"),
        prepare=removed("apps/apps_manifest.yaml"),
        says=("apps_manifest.yaml is missing; phase2 and phase3 read it", "git checkout -- apps/apps_manifest.yaml"),
    ),
    "manifest-unknown-keys-of-two-kinds": manifest_case(
        ("    deploy: true\n    chart: chart\n    build", "    deploys: true\n    1: x\n    chart: chart\n    build"),
        "unknown key(s) 1, deploys",
    ),
    "manifest-host-of-a-hundred-thousand-characters": manifest_case(
        ("host: guestbook", "host: " + "g" * 60_000), "`host: 'gggg", "…' (60000 characters)` must be a DNS-1123 label"
    ),
    # yaml_files and the host-folder delete (yaml): a stack file read the same way by both, bounded by
    # what it holds with its aliases expanded, and as fast as a 64 KiB file can be.
    "stack-file-preserve-data-spelt-twice": Bad(
        argv=("plan", "phase1"),
        files={"phase1": "config:\n  preserveData: false\n  blueprint:preserveData: true\n"},
        says=("'preserveData' and 'blueprint:preserveData' are the same key", "keep one of them"),
    ),
    "stack-file-preserve-data-no": Bad(
        argv=("plan", "phase1"),
        files={"phase1": "config:\n  blueprint:preserveData: no\n"},
        says=("blueprint:preserveData = 'no' is not valid",),
        program="phase1",
    ),
    "stack-file-aliases-expanding-to-megabytes": Bad(
        argv=("plan", "phase1"),
        files={"phase1": "config:\n  blueprint:domain: &a " + "a" * 60_000 + "\n  blueprint:x: [" + ", ".join(["*a"] * 1_000) + "]\n"},
        says=("Pulumi.phase1.yaml cannot be read: with its aliases (*name) expanded, it holds", "characters of text", "fewer aliases"),
    ),
    "stack-file-a-key-of-aliases": Bad(
        argv=("plan", "phase1"),
        files={"phase1": "x: &a " + "a" * 30_000 + "\n? [" + ", ".join(["*a"] * 900) + "]\n: 1\n"},
        says=("Pulumi.phase1.yaml cannot be read: with its aliases (*name) expanded, it holds",),
    ),
    "stack-file-a-key-of-sixty-thousand-characters": Bad(
        argv=("plan", "phase1"),
        files={"phase1": "config:\n  ? blueprint:" + "k" * 60_000 + "\n  : 1\n"},  # an explicit key: a plain one ends at 1,024
        says=("'blueprint:kkkk", "…' (60010 characters) = '1' (in Pulumi.phase1.yaml) is not a blueprint setting"),
    ),
    "stack-file-merge-key-repeated": Bad(
        argv=("plan", "phase1"),
        files={"phase1": "a: &a {b: 1}\nconfig:\n" + "  <<: *a\n" * 7_000},
        says=("Pulumi.phase1.yaml is not valid YAML: the key '<<' is given twice (line 4, column 3)",),
    ),
    "stack-file-64-kib-of-values": Bad(
        argv=("plan", "phase1"),
        files={"phase1": "config:\n  blueprint:domain: [" + ",".join(["1"] * 32_700) + "]\n"},
        says=("blueprint:domain = '[1, 1, 1, 1", "…' (98100 characters) is not valid"),
        program="phase1",
    ),
    # blueprint:cluster (issue 24): existing needs a context; a key of the other kind of cluster is
    # refused by name, never ignored; dev stays kind's.
    "cluster-existing-without-a-context": Bad(
        argv=("plan", "phase1"),
        files={"phase1": stack_file(**{"blueprint:cluster": "existing"})},
        says=(
            "blueprint:kubeContext = '' is not valid: blueprint:cluster is existing",
            "`kubectl config get-contexts` lists them",
            "the line `  blueprint:kubeContext: <context>`",
        ),
        program="phase1",
    ),
    "cluster-existing-without-a-context-on-the-command-line": Bad(
        argv=("plan", "phase2", "--config", "blueprint:cluster=existing"),
        says=(
            "blueprint:kubeContext = '' is not valid: blueprint:cluster is existing",
            "fix: give `--config blueprint:kubeContext=<context>`",
        ),
    ),
    # A context is named as the kubeconfig spells it: a pasted space, a control or format character (a
    # right-to-left override that makes messages lie), or a page of text is refused before anything is asked.
    **{
        f"kube-context-{case}": Bad(
            argv=("plan", "phase1", "--config", "blueprint:cluster=existing", "--config", f"blueprint:kubeContext={value}"),
            says=(f"blueprint:kubeContext = {shown}", "is not valid: expected a context's name from your kubeconfig", why),
        )
        for case, value, shown, why in (
            ("with-spaces-around-it", " prod ", "' prod '", "no spaces around it"),
            ("with-a-format-character", "prod\u202eedoc", "'prod\\u202eedoc'", "no control or format characters"),
            ("with-a-control-character", "prod\x85", "'prod\\x85'", "no control or format characters"),
            ("of-a-page-of-text", "p" * 100_000, "'pppp", "at most 512 characters"),
        )
    },
    "cluster-a-word-of-its-own": config_case("phase1", "cluster", "k3s", "'k3s' is not valid: expected kind or existing"),
    "kube-context-with-kind": config_case(
        "phase1", "kubeContext", "prod", "'prod' is not valid: it is for an existing cluster, and blueprint:cluster is kind"
    ),
    "storage-class-with-kind": Bad(
        argv=("plan", "phase1", "--config", "blueprint:storageClass=gp3"),
        says=("blueprint:storageClass = 'gp3' is not valid: it is for an existing cluster", "fix: give `--config blueprint:storageClass=`"),
    ),
    "exposure-with-kind": config_case("phase1", "exposure", "loadBalancer", "'loadBalancer' is not valid: it is for an existing cluster"),
    "gitlab-node-selector-with-kind": config_case("phase1", "gitlabNodeSelector", "pool=gitlab", "it is for an existing cluster"),
    "gitlab-nodes-on-an-existing-cluster": Bad(
        argv=("plan", "phase1"),
        files={"phase1": stack_file(**{"blueprint:cluster": "existing", "blueprint:kubeContext": "prod", "blueprint:gitlabNodes": 5})},
        says=(
            "blueprint:gitlabNodes = '5' is not valid: blueprint:cluster is existing, and this key counts the kind nodes",
            "the line `  blueprint:gitlabNodes: 3`",
        ),
        program="phase1",
    ),
    "headlamp-on-an-existing-cluster": Bad(
        argv=(
            "plan",
            "phase1",
            "--config",
            "blueprint:cluster=existing",
            "--config",
            "blueprint:kubeContext=prod",
            "--config",
            "blueprint:headlamp=true",
        ),
        says=("blueprint:headlamp = 'true' is not valid: blueprint:cluster is existing", "fix: give `--config blueprint:headlamp=false`"),
    ),
    "container-engine-on-an-existing-cluster": Bad(
        argv=("plan", "phase1"),
        files={
            "phase1": stack_file(
                **{"blueprint:cluster": "existing", "blueprint:kubeContext": "prod", "blueprint:containerEngine": "podman"}
            )
        },
        says=("blueprint:containerEngine = 'podman' is not valid: blueprint:cluster is existing", "an existing cluster needs none"),
        program="phase1",
    ),
    "container-engine-a-word-of-its-own": config_case("phase1", "containerEngine", "lxc", "'lxc' is not valid: expected docker or podman"),
    "exposure-a-word-of-its-own": Bad(
        argv=("plan", "phase1"),
        files={"phase1": stack_file(**{"blueprint:cluster": "existing", "blueprint:kubeContext": "prod", "blueprint:exposure": "ingress"})},
        says=("blueprint:exposure = 'ingress' is not valid: expected loadBalancer or nodePort", "blueprint:exposure: loadBalancer"),
        program="phase1",
    ),
    "job-node-selector-not-key-value": Bad(
        argv=("plan", "phase1"),
        files={
            "phase1": stack_file(**{"blueprint:cluster": "existing", "blueprint:kubeContext": "prod", "blueprint:jobNodeSelector": "pool"})
        },
        says=("blueprint:jobNodeSelector = 'pool' is not valid: expected node labels as key=value,key=value", "'pool' is not key=value"),
        program="phase1",
    ),
    "dev-on-an-existing-cluster": Bad(
        argv=("plan", "dev"),
        files={"dev": stack_file(**{"blueprint:cluster": "existing", "blueprint:kubeContext": "prod"})},
        says=(
            "blueprint:cluster = 'existing' is not valid: the dev stack runs every phase on a kind cluster of its own",
            "with the phase1, phase2 and phase3 stacks",
            "the line `  blueprint:cluster: kind`",
        ),
        program="dev",
    ),
    # WP5: the container engine (issue 24, Podman under kind)
    "container-engine-unknown": config_case("phase1", "containerEngine", "lxc", "'lxc' is not valid: expected docker or podman"),
    "container-engine-capitalised": config_case("phase1", "containerEngine", "Podman", "'Podman' is not valid: expected docker or podman"),
    # The gateway's Service on an existing cluster: who can reach it (issue 24).
    "gateway-service-annotations-with-kind": config_case(
        "phase1", "gatewayServiceAnnotations", '\'{"a.io/b": "c"}\'', "it is for an existing cluster"
    ),
    "gateway-service-annotations-not-json": Bad(
        argv=("plan", "phase1"),
        files={
            "phase1": stack_file(
                **{"blueprint:cluster": "existing", "blueprint:kubeContext": "prod", "blueprint:gatewayServiceAnnotations": "internal=true"}
            )
        },
        says=("blueprint:gatewayServiceAnnotations = 'internal=true' is not valid: expected a JSON object", "it is not JSON"),
        program="phase1",
    ),
    "load-balancer-source-range-not-a-cidr": Bad(
        argv=("plan", "phase1"),
        files={
            "phase1": stack_file(
                **{"blueprint:cluster": "existing", "blueprint:kubeContext": "prod", "blueprint:loadBalancerSourceRanges": "10.1.2.3/8"}
            )
        },
        says=("blueprint:loadBalancerSourceRanges = '10.1.2.3/8' is not valid", "(did you mean 10.0.0.0/8?)"),
        program="phase1",
    ),
    "load-balancer-class-with-a-node-port": Bad(
        argv=("plan", "phase1"),
        files={
            "phase1": stack_file(
                **{
                    "blueprint:cluster": "existing",
                    "blueprint:kubeContext": "prod",
                    "blueprint:exposure": "nodePort",
                    "blueprint:loadBalancerClass": "service.k8s.aws/nlb",
                }
            )
        },
        says=(
            "blueprint:loadBalancerClass = 'service.k8s.aws/nlb' is not valid: it is for a load balancer",
            "or set blueprint:exposure to loadBalancer",
        ),
        program="phase1",
    ),
    "load-balancer-source-ranges-with-kind": config_case(
        "phase1", "loadBalancerSourceRanges", "10.0.0.0/8", "it is for an existing cluster"
    ),
    # The brought wildcard certificate (issue 24 item 13, blueprint:tlsCertificate): a Secret named as
    # <namespace>/<name>, on an existing cluster alone.
    "tls-certificate-not-namespace-slash-name": Bad(
        argv=("plan", "phase1"),
        files={
            "phase1": stack_file(
                **{"blueprint:cluster": "existing", "blueprint:kubeContext": "prod", "blueprint:tlsCertificate": "wildcard-tls"}
            )
        },
        says=(
            "blueprint:tlsCertificate = 'wildcard-tls' is not valid: expected <namespace>/<name> of a kubernetes.io/tls Secret",
            "blueprint:tlsCertificate: certificates/wildcard-tls",
        ),
        program="phase1",
    ),
    "tls-certificate-with-kind": config_case(
        "phase1", "tlsCertificate", "certificates/wildcard-tls", "'certificates/wildcard-tls' is not valid: it is for an existing cluster"
    ),
    # blueprint verify (issue 25): where the report goes, said before any check runs.
    "verify --output in a folder that does not exist": Bad(
        argv=("verify", "--output", "/nonexistent/dir/r.json"),
        says=("--output /nonexistent/dir/r.json", "its folder /nonexistent/dir does not exist", "fix: name a file"),
    ),
    "verify --output naming a folder": Bad(argv=("verify", "--output", "/"), says=("--output /: is a folder", "fix: name a file")),
    # Security fixes of session 31: a brought certificate in a namespace that blueprint makes, and a
    # destroy deletes with the Secret in it.
    "tls-certificate-in-a-namespace-blueprint-owns": Bad(
        argv=("plan", "phase1"),
        files={
            "phase1": stack_file(
                **{"blueprint:cluster": "existing", "blueprint:kubeContext": "prod", "blueprint:tlsCertificate": "gitlab/wildcard-tls"}
            )
        },
        says=(
            "blueprint:tlsCertificate = 'gitlab/wildcard-tls' is not valid: the namespace gitlab is blueprint's own",
            "a destroy deletes it, and the Secret with it",
            "blueprint:tlsCertificate: certificates/wildcard-tls",
        ),
        program="phase1",
    ),
    # The state's backend (issue 24): a file:// folder in Pulumi's legacy layout, where stacks have no project.
    "backend-folder-in-pulumis-legacy-layout": Bad(
        argv=("up",),
        env={"PULUMI_BACKEND_URL": "file://{tmp}/team-state"},
        prepare=a_legacy_backend,
        says=("PULUMI_BACKEND_URL names (file://", "team-state) is in Pulumi's legacy layout", "`pulumi state upgrade`"),
    ),
}


@pytest.fixture(scope="session")
def unchanged_apps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An apps folder as the checkout's, for the cases that neither change nor name the test's own (most): made once."""
    apps = tmp_path_factory.mktemp("unchanged") / "apps"
    copy_apps(apps)
    return apps


def apps_state(apps: Path) -> list[tuple[str, int, int, int]]:
    """Each path in `apps`, with its mode, size and modification time."""
    state = []
    for path in apps.rglob("*"):
        got = path.lstat()
        state.append((str(path), got.st_mode, got.st_size, got.st_mtime_ns))
    return sorted(state)


@pytest.fixture(scope="session")
def unchanged_apps_state(unchanged_apps: Path) -> list[tuple[str, int, int, int]]:
    """apps_state of the shared apps folder, as made: each case that shares it must leave it so (read
    once, not before each case: the case before left it as made, or failed)."""
    return apps_state(unchanged_apps)


@pytest.fixture
def world(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    unchanged_apps: Path,
    unchanged_apps_state: list[tuple[str, int, int, int]],
) -> Iterator[list[list[dict[str, Any]]]]:
    """Stack files of the test's own, an apps folder (the test's own when its case changes it, else
    one the cases share, checked unchanged after each), a fake machine for the doctor, and the
    record of every program the plan harness runs (what each one registered).
    """
    monkeypatch.setattr("stacks.config.schema.STACK_FILES_DIR", tmp_path)
    shutil.copy2(PROJECT_DIR / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    monkeypatch.setattr("stacks.config.schema.PROJECT_FILE", tmp_path / "Pulumi.yaml")
    case: Bad = request.node.callspec.params["case"]
    shared = case.manifest is None and case.prepare is None and not any("{tmp}/apps" in value for value in case.env.values())
    apps = unchanged_apps if shared else tmp_path / "apps"
    if not shared:
        copy_apps(apps)
    monkeypatch.setattr("apps_manifest.MANIFEST", apps / "apps_manifest.yaml")
    machine = FakeMachine()
    monkeypatch.setattr(doctor, "RealMachine", lambda: machine)
    # Where blueprint keeps its passphrase: a refusal must leave it unwritten.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE_FILE", raising=False)
    runs: list[list[dict[str, Any]]] = []
    real_run = cli.plan._run

    def recorded(*args: Any, **kwargs: Any) -> Any:
        try:
            result = real_run(*args, **kwargs)
        except ProgramFailed as failed:
            runs.append(failed.registered)
            raise
        runs.append(result.resources)
        return result

    monkeypatch.setattr(cli.plan, "_run", recorded)
    yield runs
    if shared:
        assert apps_state(apps) == unchanged_apps_state, "a case changed the apps folder the cases share"


def given(case: Bad, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for stack, text in case.files.items():
        (folder / f"Pulumi.{stack}.yaml").write_text(text)
    if case.manifest is not None:
        (folder / "apps" / "apps_manifest.yaml").write_text(case.manifest)
    if case.project is not None:
        (folder / "Pulumi.yaml").write_text(case.project)
    for name, value in case.env.items():
        monkeypatch.setenv(name, value.format(tmp=folder))
    if case.prepare is not None:
        case.prepare(folder)


ANSWER_WITHIN = 20
"""Seconds a refusal may take, on a busy laptop: a hostile file must not hang the command."""
OUTPUT_AT_MOST = 20_000
"""Characters a refusal may print: enough for every problem at once, not for the bad value whole."""


class NoAnswer(Exception):
    pass


@contextlib.contextmanager
def answer_within(seconds: int) -> Iterator[None]:
    """Stop the command (with a NoAnswer) when it has not answered in `seconds`: a hang fails the test."""

    def stop(signum: int, frame: FrameType | None) -> None:
        raise NoAnswer(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_bad_input_is_refused_by_name_with_its_value_and_fix_before_anything_is_registered(
    case: Bad, world: list[list[dict[str, Any]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    given(case, tmp_path, monkeypatch)
    said = io.StringIO()
    started = time.monotonic()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said), answer_within(ANSWER_WITHIN):
        code: int | str | None
        try:
            code = main(list(case.argv))
        except SystemExit as exited:  # a usage error: argparse's own exit
            code = exited.code
    took = time.monotonic() - started
    message = said.getvalue()
    assert code not in (0, None), message
    assert "Traceback" not in message
    assert len(message) <= OUTPUT_AT_MOST, f"{len(message)} characters: {message[:2000]}"
    assert took < ANSWER_WITHIN
    assert not (tmp_path / "xdg").exists(), "the command wrote to the user's config folder before it refused"
    for part in case.says:
        assert part in message, f"{part!r} not in:\n{message}"
    assert all(run == [] for run in world), "the command's program registered resources"
    if case.program is not None:
        config, secret_keys = stack_config(case.program)
        with pytest.raises(ProgramFailed) as failed:
            cli.plan._run(case.program, config, secret_keys, PROGRAM, {})
        assert isinstance(failed.value.cause, ConfigError)
        assert [resource["type"] for resource in failed.value.registered] == ["pulumi:pulumi:Stack"]
        for part in case.says:
            assert part in str(failed.value.cause), f"the program's own message lacks {part!r}"


def test_the_table_holds_at_least_fifty_bad_inputs() -> None:
    assert len(CASES) >= 50
