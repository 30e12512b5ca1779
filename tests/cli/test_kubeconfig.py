"""`blueprint kubeconfig`: the kind cluster's admin kubeconfig, printed or written 0600, with a fake
`kind` (and `docker`) on PATH and a fake runner for the stacks' outputs (no kind, Docker or Pulumi here).
"""

from __future__ import annotations

import io
import os
import re
import shlex
import stat
from pathlib import Path
from typing import Any

import pytest

from cli import commands
from cli.main import parser
from stacks import outputs
from stacks.config import schema
from tests.cli.fake_runner import FakeRunner
from tests.plans import fake_command

KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters:\n- name: kind-x\n"
README = Path(__file__).parents[2] / "README.md"


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH is this folder alone: what a test puts there (only shell builtins in the scripts) is all there is."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", str(folder))
    return folder


def fake_kind(bin_dir: Path, *, exit_code: int = 0, stderr: str = "") -> Path:
    """A `kind` that records its arguments in `kind.args` and prints KUBECONFIG, or fails with `stderr`."""
    calls = bin_dir / "kind.args"
    body = f'echo "$*" > {shlex.quote(str(calls))}\n'
    body += f"printf '%s' {shlex.quote(KUBECONFIG)}\n" if exit_code == 0 else f"echo {shlex.quote(stderr)} >&2\nexit {exit_code}\n"
    fake_command(bin_dir, "kind", body)
    return calls


def run(args: list[str], runner: FakeRunner) -> tuple[int, str]:
    out = io.StringIO()
    code = commands.main_for(commands.KUBECONFIG, parser().parse_args(["kubeconfig", *args]), runner, out)
    return code, out.getvalue()


UP = FakeRunner({"phase1": {outputs.CLUSTER_NAME: "my-cluster"}})


def test_kubeconfig_prints_what_kind_gives_for_the_cluster_the_stack_outputs(bin_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    calls = fake_kind(bin_dir)
    code, out = run([], UP)
    assert (code, out) == (0, KUBECONFIG)
    assert calls.read_text().split() == ["get", "kubeconfig", "--name", "my-cluster"]
    assert "stack phase1's output clusterName" in capsys.readouterr().err


def test_a_stack_that_is_not_up_takes_the_cluster_name_from_its_config_and_says_so(
    bin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = fake_kind(bin_dir)
    monkeypatch.setattr(schema, "STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.dev.yaml").write_text("config:\n  blueprint:clusterName: from-config\n")
    code, out = run(["--stack", "dev"], FakeRunner())
    assert (code, out) == (0, KUBECONFIG)
    assert calls.read_text().split()[-1] == "from-config"
    assert "stack dev is not up: the name its config gives" in capsys.readouterr().err


def test_a_secret_cluster_name_of_a_stack_not_up_is_refused_not_guessed(
    bin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = fake_kind(bin_dir)
    monkeypatch.setattr(schema, "STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.dev.yaml").write_text("config:\n  blueprint:clusterName:\n    secure: v1:abc\n")
    assert run(["--stack", "dev"], FakeRunner()) == (1, "")
    assert not calls.exists()  # no guess at the default name, which may be another stack's cluster
    assert "pulumi up -s dev" in capsys.readouterr().err


def test_a_written_kubeconfig_is_mode_0600_whatever_the_umask(bin_dir: Path, tmp_path: Path) -> None:
    fake_kind(bin_dir)
    target = tmp_path / "a folder" / "kube config"
    umask = os.umask(0)
    try:
        code, out = run(["--output", str(target)], UP)
    finally:
        os.umask(umask)
    assert code == 0
    assert target.read_text() == KUBECONFIG
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(path.name for path in target.parent.iterdir()) == ["kube config"]  # no temporary file left


def test_the_written_file_is_0600_from_its_first_byte(bin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_kind(bin_dir)
    modes: list[int] = []
    real_fdopen = os.fdopen

    def fdopen(fd: int, *args: Any, **kwargs: Any) -> Any:
        modes.append(stat.S_IMODE(os.fstat(fd).st_mode))  # before a byte is written to it
        return real_fdopen(fd, *args, **kwargs)

    monkeypatch.setattr(os, "fdopen", fdopen)
    umask = os.umask(0)
    try:
        assert run(["--output", str(tmp_path / "kubeconfig")], UP)[0] == 0
    finally:
        os.umask(umask)
    assert modes == [0o600]


def test_writing_says_how_to_use_it_with_the_path_quoted(bin_dir: Path, tmp_path: Path) -> None:
    fake_kind(bin_dir)
    target = tmp_path / "it's a; kube config"
    code, out = run(["--output", str(target)], UP)
    assert code == 0
    command = out[out.index("KUBECONFIG=") :].splitlines()[0]
    assert shlex.split(command) == [f"KUBECONFIG={target}", "kubectl", "get", "nodes"]
    assert "cluster-admin" in out


def test_an_earlier_kubeconfig_is_replaced_and_made_0600(bin_dir: Path, tmp_path: Path) -> None:
    fake_kind(bin_dir)
    target = tmp_path / "kubeconfig"
    target.write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    target.chmod(0o644)
    assert run(["--output", str(target)], UP)[0] == 0
    assert target.read_text() == KUBECONFIG
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_an_output_that_is_a_folder_is_refused(bin_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake_kind(bin_dir)
    folder = tmp_path / "kube"
    folder.mkdir()
    assert run(["--output", str(folder)], UP) == (1, "")
    assert list(folder.iterdir()) == []
    assert f"--output {folder} is a folder" in capsys.readouterr().err


def test_an_output_file_that_is_not_a_kubeconfig_is_refused_and_kept(
    bin_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_kind(bin_dir)
    target = tmp_path / "notes.txt"
    target.write_text("my notes\n")
    assert run(["--output", str(target)], UP) == (1, "")
    assert target.read_text() == "my notes\n"
    assert "is not a kubeconfig" in capsys.readouterr().err


def test_a_kubeconfig_holding_other_clusters_is_refused_and_kept(bin_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--output ~/.kube/config` must not wipe the contexts and credentials of every other cluster."""
    fake_kind(bin_dir)
    target = tmp_path / "config"
    mine = "apiVersion: v1\nkind: Config\nclusters:\n- name: prod\ncontexts:\n- name: prod\nusers:\n- name: prod-admin\n"
    target.write_text(mine)
    assert run(["--output", str(target)], UP) == (1, "")
    assert target.read_text() == mine
    assert "holds other clusters, contexts or users (prod, prod-admin)" in capsys.readouterr().err


@pytest.mark.parametrize(
    "text",
    [
        "apiVersion: v1\nkind: Config\nclusters: 5\n",
        "kind: Config\nclusters:\n  prod: {}\n",
        "kind: Config\nusers:\n- user: {}\n",
        "kind: Config\nclusters: " + "[" * 20_000 + "]" * 20_000 + "\n",
    ],
    ids=["a-number", "a-mapping", "an-entry-without-a-name", "nested-twenty-thousand-deep"],
)
def test_a_kubeconfig_whose_lists_are_malformed_is_refused_and_kept(bin_dir: Path, tmp_path: Path, text: str) -> None:
    fake_kind(bin_dir)
    target = tmp_path / "config"
    target.write_text(text)
    assert run(["--output", str(target)], UP) == (1, "")
    assert target.read_text() == text


def test_a_kubeconfig_of_this_cluster_alone_is_replaced(bin_dir: Path, tmp_path: Path) -> None:
    fake_kind(bin_dir)
    target = tmp_path / "config"
    target.write_text("apiVersion: v1\nkind: Config\nclusters:\n- name: kind-my-cluster\nusers:\n- name: kind-my-cluster\n")
    assert run(["--output", str(target)], UP)[0] == 0
    assert target.read_text() == KUBECONFIG


def test_no_kind_on_path_is_one_message_with_the_install_fix(bin_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run([], UP) == (1, "")
    err = capsys.readouterr().err
    assert "no `kind` on PATH" in err
    assert "uv run blueprint doctor --fix" in err
    assert "Traceback" not in err


def test_no_such_cluster_says_the_stack_is_not_up_and_how_to_bring_it_up(bin_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # What kind prints when no node carries the cluster's label (kubernetes-sigs/kind, pkg/cluster/internal/kubeconfig).
    fake_kind(bin_dir, exit_code=1, stderr="ERROR: could not locate any control plane nodes")
    assert run([], UP) == (1, "")
    err = capsys.readouterr().err
    assert "kind has no cluster named my-cluster" in err
    assert "`uv run blueprint up --phase 1`" in err


def test_docker_not_answering_is_named_with_its_fix(bin_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake_kind(bin_dir, exit_code=1, stderr="ERROR: failed to list nodes: command docker ps failed with error: exit status 1")
    fake_command(bin_dir, "docker", "echo 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock.' >&2\nexit 1\n")
    assert run([], UP) == (1, "")
    err = capsys.readouterr().err
    assert "Docker does not answer (not reachable: Cannot connect to the Docker daemon" in err
    assert re.search(r"fix: .*start", err), err


def test_another_kind_failure_shows_what_kind_said(bin_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake_kind(bin_dir, exit_code=1, stderr="ERROR: something else entirely")
    fake_command(bin_dir, "docker", "echo 27.0.1\n")  # Docker answers
    assert run([], UP) == (1, "")
    assert "`kind get kubeconfig --name my-cluster` failed: ERROR: something else entirely" in capsys.readouterr().err


def test_the_help_says_the_kubeconfig_is_cluster_admin(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parser().parse_args(["kubeconfig", "--help"])
    assert "cluster-admin" in " ".join(capsys.readouterr().out.split())


def test_the_readme_kubeconfig_commands_parse() -> None:
    lines = [line for line in README.read_text().splitlines() if "blueprint kubeconfig" in line]
    found = [re.search(r"blueprint kubeconfig[^`#]*", line) for line in lines]
    argvs = [shlex.split(match.group(0).strip())[1:] for match in found if match]
    assert any("--output" in argv for argv in argvs), lines
    for argv in argvs:
        parsed = parser().parse_args(argv)
        assert parsed.command == "kubeconfig"


def test_the_access_guide_says_the_kubeconfig_is_cluster_admin() -> None:
    text = (README.parent / "docs" / "guide" / "access.md").read_text()
    section = text[text.index("## kubectl") :].split("\n## ", 1)[0]
    assert "blueprint kubeconfig" in section
    assert "cluster-admin" in section


def test_an_output_that_cannot_be_written_is_one_message_without_a_traceback(
    bin_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_kind(bin_dir)
    (tmp_path / "a-file").write_text("")
    assert run(["--output", str(tmp_path / "a-file" / "kubeconfig")], UP) == (1, "")
    err = capsys.readouterr().err
    assert err.startswith("error: cannot write --output ")
    assert "Traceback" not in err


def test_an_output_that_is_a_link_is_refused_and_its_target_kept(bin_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake_kind(bin_dir)
    target = tmp_path / "elsewhere"
    target.write_text("apiVersion: v1\nkind: Config\n")
    (tmp_path / "kubeconfig").symlink_to(target)
    assert run(["--output", str(tmp_path / "kubeconfig")], UP) == (1, "")
    assert target.read_text() == "apiVersion: v1\nkind: Config\n"
    assert "is a symbolic link" in capsys.readouterr().err


ON_EXISTING = FakeRunner({"phase1": {outputs.CLUSTER_NAME: "gke-prod", outputs.CLUSTER_TYPE: "existing", outputs.KUBE_CONTEXT: "gke-prod"}})


@pytest.mark.parametrize("args", [[], ["--output", "kubeconfig"]])
def test_on_an_existing_cluster_the_way_is_the_users_own_context_and_kind_is_never_asked(
    bin_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    calls = fake_kind(bin_dir)
    code, out = run([arg.replace("kubeconfig", str(tmp_path / "kubeconfig")) for arg in args], ON_EXISTING)
    assert (code, out) == (0, ""), "nothing printed where a kubeconfig would be"
    assert not calls.exists(), "kind was asked"
    assert not (tmp_path / "kubeconfig").exists()
    said = capsys.readouterr().err
    assert "kubectl --context gke-prod" in said
    assert "error" not in said


def test_a_stack_not_up_whose_config_says_existing_names_that_context_and_asks_no_kind(
    bin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = fake_kind(bin_dir)
    monkeypatch.setattr(schema, "STACK_FILES_DIR", tmp_path)
    (tmp_path / "Pulumi.phase1.yaml").write_text("config:\n  blueprint:cluster: existing\n  blueprint:kubeContext: eks-a\n")
    assert run([], FakeRunner()) == (0, "")
    assert not calls.exists()
    assert "kubectl --context eks-a" in capsys.readouterr().err
