"""The pipeline's build and deploy jobs, their scripts run as a runner runs them (`/bin/sh`, the nested
script lists flattened), with buildctl, kubectl and helm replaced by small recorders: the deploy runs the
image by the digest its build pushed, never by a tag that any branch's job may push over."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from apps_manifest import APPS_DIR
from tests.apps.test_charts import render

PIPELINE = APPS_DIR / "shared-code" / "templates" / "pipeline.yml"
DIGEST = "sha256:" + "5e" * 32
IMAGE = "registry.local.example.net/blueprint-apps/guestbook"
# What BuildKit writes to --metadata-file (moby/buildkit docs/usage/metadata.md), the descriptor's digest
# being the pushed manifest's too.
METADATA = {
    "containerimage.config.digest": "sha256:" + "2a" * 32,
    "containerimage.descriptor": {"digest": DIGEST, "mediaType": "application/vnd.oci.image.manifest.v1+json", "size": 506},
    "containerimage.digest": DIGEST,
}
# A stand-in for buildctl-daemonless.sh, kubectl and helm: records its arguments; as buildctl, writes the
# metadata file it is asked for (with the metadata in $FAKE_METADATA).
RECORDER = f"""#!{sys.executable}
import json, os, sys
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps([os.path.basename(sys.argv[0]), *sys.argv[1:]]) + "\\n")
if "--metadata-file" in sys.argv and os.environ.get("FAKE_METADATA"):
    with open(sys.argv[sys.argv.index("--metadata-file") + 1], "w") as out:
        out.write(os.environ["FAKE_METADATA"])
"""


def job(name: str) -> dict[str, Any]:
    return dict(yaml.safe_load(PIPELINE.read_text())[name])


def flattened(script: list[Any]) -> list[str]:
    return [line for item in script for line in (flattened(item) if isinstance(item, list) else [item])]


def run_job(name: str, project: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], list[list[str]]]:
    """Run `name`'s script in `project` (the job's working directory), as one shell, stopping at the first error."""
    tools = project.parent / "bin"
    tools.mkdir(exist_ok=True)
    for tool in ("buildctl-daemonless.sh", "kubectl", "helm"):
        (tools / tool).write_text(RECORDER)
        (tools / tool).chmod(0o755)
    log = project.parent / "calls.jsonl"
    base = {
        "PATH": f"{tools}:{os.environ['PATH']}",
        "HOME": str(project.parent),
        "FAKE_LOG": str(log),
        "APPS_NAMESPACE": "apps",
        "CI_PROJECT_NAME": "guestbook",
        "CI_HELM_CHART_DIR": "chart",
        "CI_REGISTRY": "registry.local.example.net",
        "CI_REGISTRY_IMAGE": IMAGE,
        "CI_COMMIT_SHORT_SHA": "abc123",
        "CI_SERVER_HOST": "gitlab.local.example.net",
        "CI_SERVER_TLS_CA_FILE": "/ca.crt",
        "APP_HOST": "guestbook.local.example.net",
    }
    script = "\n".join(flattened(job(name)["script"])).replace("/tmp/buildkitd.toml", str(project.parent / "buildkitd.toml"))
    done = subprocess.run(["/bin/sh", "-ec", script], cwd=project, env={**base, **env}, capture_output=True, text=True, check=False)
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return done, calls


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "Dockerfile").write_text("FROM scratch\n")
    return folder


def dotenv(project: Path) -> dict[str, str]:
    report = project / job("build-image")["artifacts"]["reports"]["dotenv"]
    return dict(line.split("=", 1) for line in report.read_text().splitlines())


def helm_values(calls: list[list[str]]) -> dict[str, Any]:
    """The values `helm upgrade` was given with --set, as a nested mapping."""
    [helm] = [call for call in calls if call[0] == "helm"]
    values: dict[str, Any] = {}
    for flag, value in zip(helm, helm[1:], strict=False):
        if flag == "--set":
            key, _, item = value.partition("=")
            if "[0]." in key:  # imagePullSecrets[0].name
                listed, _, leaf = key.partition("[0].")
                values[listed] = [{leaf: item}]
                continue
            *parents, leaf = key.split(".")
            parent = values
            for step in parents:
                parent = parent.setdefault(step, {})
            parent[leaf] = item
    return values


def test_the_build_hands_the_digest_it_pushed_to_the_deploy(project: Path) -> None:
    done, _ = run_job("build-image", project, {"FAKE_METADATA": json.dumps(METADATA, indent=2)})
    assert done.returncode == 0, done.stderr
    assert dotenv(project) == {"BUILT_IMAGE_DIGEST": DIGEST}


def test_the_build_reads_buildkits_metadata_however_it_is_laid_out(project: Path) -> None:
    done, _ = run_job("build-image", project, {"FAKE_METADATA": json.dumps(METADATA)})
    assert done.returncode == 0, done.stderr
    assert dotenv(project) == {"BUILT_IMAGE_DIGEST": DIGEST}


def test_a_build_without_a_digest_fails_rather_than_hand_on_nothing(project: Path) -> None:
    metadata = {key: value for key, value in METADATA.items() if key != "containerimage.digest"}
    done, _ = run_job("build-image", project, {"FAKE_METADATA": json.dumps(metadata)})
    assert done.returncode != 0
    assert "names no containerimage.digest" in done.stderr


def test_the_deploy_runs_the_image_by_the_digest_its_build_pushed(project: Path) -> None:
    done, calls = run_job("deploy", project, {"BUILT_IMAGE_DIGEST": DIGEST})
    assert done.returncode == 0, done.stderr
    values = helm_values(calls)
    assert values["image"] == {"repository": IMAGE, "digest": DIGEST}
    [deployment] = [doc for doc in render("guestbook", values) if doc["kind"] == "Deployment"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == f"{IMAGE}@{DIGEST}"


def test_the_deploy_refuses_an_image_without_its_builds_digest(project: Path) -> None:
    """Else it would deploy by the commit's tag, which an unprotected branch's job may have pushed over."""
    done, calls = run_job("deploy", project, {})
    assert done.returncode != 0
    assert "no BUILT_IMAGE_DIGEST from build-image" in done.stderr
    assert not [call for call in calls if call[0] == "helm"]


def test_a_project_without_a_dockerfile_deploys_its_chart_without_a_build(project: Path) -> None:
    """redis and redis-slave: a public image, no build-image job, no digest."""
    (project / "Dockerfile").unlink()
    done, calls = run_job("deploy", project, {})
    assert done.returncode == 0, done.stderr
    assert "image" not in helm_values(calls)


def test_the_deploy_gets_the_builds_dotenv() -> None:
    """GitLab hands a job the artifacts (dotenv reports included) of every job of an earlier stage,
    unless `needs` or `dependencies` narrow them; with `needs: build-image` a project without a
    Dockerfile (no build-image job) would have no valid pipeline."""
    pipeline = yaml.safe_load(PIPELINE.read_text())
    stages = pipeline["stages"]
    assert stages.index(job("build-image")["stage"]) < stages.index(job("deploy")["stage"])
    assert not {"needs", "dependencies"} & set(job("deploy"))
