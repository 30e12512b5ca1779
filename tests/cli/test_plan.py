"""The offline plan's contract (docs/reference/plan.md): what `blueprint plan <stack> --json` prints,
which both users and this test suite rely on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cli import stand_ins
from cli.main import main
from cli.plan import SECRET, UNKNOWN, ProgramFailed, _run, plan
from stacks import outputs
from stacks.config import PROJECT_DIR
from stacks.config.schema import stack_config
from tests.plans import COMMAND, kind_config_of, planned, planned_as

CONTRACT_FIELDS = [
    "urn", "type", "name", "custom", "parent", "dependsOn", "provider", "inputs", "protect",
    "retainOnDelete", "deletedWith", "deleteBeforeReplace", "ignoreChanges", "replaceOnChanges",
    "additionalSecretOutputs",
]  # fmt: skip


def test_every_resource_carries_exactly_the_contract_fields() -> None:
    for resource in planned("phase1", headlamp="true").resources:
        assert list(resource) == CONTRACT_FIELDS, resource["urn"]


def test_plan_names_project_and_stack() -> None:
    document = json.loads(planned("phase1").to_json())
    assert (document["project"], document["stack"]) == ("blueprint", "phase1")
    assert list(document) == ["project", "stack", "resources", "outputs"]


def test_only_the_stack_root_has_no_parent() -> None:
    roots = [r["type"] for r in planned("phase1", headlamp="true").resources if r["parent"] is None]
    assert roots == ["pulumi:pulumi:Stack"]


def test_parents_and_dependencies_come_before_their_dependents() -> None:
    seen: set[str] = set()
    for resource in planned("phase1", headlamp="true").resources:
        assert resource["parent"] is None or resource["parent"] in seen, resource["urn"]
        assert set(resource["dependsOn"]) <= seen, resource["urn"]
        seen.add(resource["urn"])


def test_secret_output_shows_only_that_it_is_secret() -> None:
    assert planned("phase2").outputs[outputs.DEPLOY_KUBECONFIG] == {"secret": True}


def test_plain_output_shows_its_value() -> None:
    assert planned("phase1").outputs[outputs.CLUSTER_NAME] == {"secret": False, "value": "blueprint"}


def test_secret_inputs_are_redacted() -> None:
    provider = planned("phase1", headlamp="true").one("pulumi:providers:kubernetes", "kind-kubernetes")
    assert provider["inputs"]["kubeconfig"] == SECRET


def test_no_secret_value_appears_anywhere_in_the_json() -> None:
    text = planned("phase1", headlamp="true").to_json()
    assert "client-key-data" not in text, "the stand-in kubeconfig leaked into the plan"


def test_property_dependencies_count_as_dependencies() -> None:
    result = planned("phase1", headlamp="true")
    cluster = result.one(COMMAND, "kind-cluster")
    provider = result.one("pulumi:providers:kubernetes", "kind-kubernetes")
    assert cluster["urn"] in provider["dependsOn"]


def test_resources_name_the_provider_they_are_registered_with() -> None:
    result = planned("phase1", headlamp="true")
    provider = result.one("pulumi:providers:kubernetes", "kind-kubernetes")
    release = result.one("kubernetes:helm.sh/v3:Release", "headlamp-chart")
    assert release["provider"] == f"{provider['urn']}::kind-kubernetes-id"


def test_numbers_keep_their_integer_form() -> None:
    assert kind_config_of(planned("phase1"))["networking"]["apiServerPort"] == 6443
    assert planned("phase1").outputs[outputs.HTTPS_PORT]["value"] == 443
    assert '"value": 443.0' not in planned("phase1").to_json()


def test_plans_of_an_unchanged_program_are_identical_within_a_process() -> None:
    assert plan("phase1").to_json() == plan("phase1").to_json()


def test_plans_of_an_unchanged_program_are_byte_identical_across_processes() -> None:
    """The plan of a process of its own against this one's, whose string hashes differ (this
    process's are random, unless its environment fixes them: the other's are fixed otherwise)."""
    seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"
    env = {**os.environ, "PYTHONHASHSEED": seed}
    command = [sys.executable, str(Path(__file__).parent / "programs" / "main_with_defaults.py"), "plan", "phase1", "--json"]
    command += ["--config", "blueprint:headlamp=true"]
    elsewhere = subprocess.run(command, env=env, cwd=PROJECT_DIR, capture_output=True, check=True, timeout=60).stdout
    assert elsewhere.decode() == plan("phase1", {"blueprint:headlamp": "true"}).to_json()


def test_stack_reference_resolves_to_the_upstream_planned_outputs() -> None:
    result = plan("phase2", program=Path(__file__).parent / "programs" / "reads_phase1.py")
    assert result.outputs["upstreamClusterName"] == {"secret": False, "value": "blueprint"}


def test_a_value_derived_from_an_upstream_secret_output_stays_secret() -> None:
    config, secret_keys = stack_config("phase3")
    program = Path(__file__).parent / "programs" / "reads_phase2.py"
    result = _run("phase3", config, secret_keys, program, {"phase2": planned("phase2")})
    assert result.outputs["upstreamDeployUser"] == {"secret": True}
    assert result.raw_outputs["upstreamDeployUser"] == ("ci-deployer", True)


def test_the_offline_plan_answers_kind_get_kubeconfig_with_the_upstream_clusters_stand_in() -> None:
    """The invoke phase2 runs (`stacks.phase1.kind_kubeconfig`) gets the kubeconfig the cluster's command
    would print: the same server, on the port phase1's config publishes."""
    config, secret_keys = stack_config("phase2")
    program = Path(__file__).parent / "programs" / "reads_kind_kubeconfig.py"
    result = _run("phase2", config, secret_keys, program, {"phase1": planned("phase1", apiServerPort="7443")})
    assert result.raw_outputs["server"] == ("https://127.0.0.1:7443", True)


def test_the_cluster_command_alone_prints_a_kubeconfig_in_the_plan() -> None:
    """Another command runs `kind get kubeconfig` for itself (Postgres' adoption of its data) and prints
    no kubeconfig: the plan gives its stand-in to the command that makes the cluster alone."""
    printing = [
        command["name"]
        for command in planned("dev").find(COMMAND)
        if "kind-" in stand_ins.provider_outputs(COMMAND, command["name"], command["inputs"])["stdout"]
    ]
    assert printing == ["kind-cluster"]


def test_stack_reference_is_recorded_with_the_upstream_name() -> None:
    result = plan("phase2", program=Path(__file__).parent / "programs" / "reads_phase1.py")
    [reference] = result.find("pulumi:pulumi:StackReference")
    assert reference["inputs"]["name"] == "organization/blueprint/phase1"


def test_tree_shows_every_resource_and_hides_secrets() -> None:
    result = planned("phase2")
    tree = result.to_tree()
    for resource in result.resources:
        assert resource["name"] in tree
    assert f"{outputs.DEPLOY_KUBECONFIG}: {SECRET}" in tree


def test_program_failure_reports_what_was_registered_before_it() -> None:
    with pytest.raises(ProgramFailed) as failed:
        plan("nonesuch")
    assert [r["type"] for r in failed.value.registered] == ["pulumi:pulumi:Stack"]


def test_plan_command_prints_one_json_object_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "phase1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stack"] == "phase1"


def test_plan_command_prints_a_tree_without_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "phase1"]) == 0
    assert capsys.readouterr().out.startswith("blueprint/phase1: ")


def test_config_override_changes_the_plan(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "phase1", "--json", "--config", "blueprint:gitlabNodes=2"]) == 0
    cluster = next(r for r in json.loads(capsys.readouterr().out)["resources"] if r["name"] == "kind-cluster")
    assert len(yaml.safe_load(cluster["inputs"]["stdin"])["nodes"]) == 4


def test_the_stack_may_follow_a_config_override(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--config", "blueprint:gitlabNodes=2", "phase1", "--json", "--config", "blueprint:runnerNodes=2"]) == 0
    cluster = next(r for r in json.loads(capsys.readouterr().out)["resources"] if r["name"] == "kind-cluster")
    assert len(yaml.safe_load(cluster["inputs"]["stdin"])["nodes"]) == 5


def test_bad_config_exits_non_zero_naming_the_key(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "phase1", "--config", "blueprint:gitlabNodes=0"]) == 1
    captured = capsys.readouterr()
    assert "blueprint:gitlabNodes" in captured.err
    assert captured.out == ""


def test_an_override_without_a_namespace_is_blueprints_as_pulumi_config_set_takes_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "phase1", "--json", "--config", "gitlabNodes=2"]) == 0
    cluster = next(r for r in json.loads(capsys.readouterr().out)["resources"] if r["name"] == "kind-cluster")
    assert len(yaml.safe_load(cluster["inputs"]["stdin"])["nodes"]) == 4


def test_an_override_without_an_equals_sign_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["plan", "phase1", "--config", "gitlabNodes"])
    assert exited.value.code == 2
    assert "expected KEY=VALUE, such as blueprint:gitlabNodes=2, got 'gitlabNodes'" in capsys.readouterr().err


def test_the_tree_with_overrides_shows_each_with_the_value_it_replaced_and_what_it_changed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "phase3", "--config", "blueprint:pipelineTimeout=900", "--config", "gitlabNodes=2"]) == 0
    out = capsys.readouterr().out
    assert '  blueprint:pipelineTimeout="900"  (on phase3; was "600")' in out
    assert '  blueprint:gitlabNodes="2"  (on phase1; was "3")' in out
    assert (
        "they change 4 resources: apps-redis-pipeline, apps-redis-slave-pipeline, apps-guestbook-pipeline, apps-shared-code-pipeline"
    ) in out


def test_an_override_that_no_stack_of_the_chain_reads_is_refused_naming_the_stacks_that_do(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "phase1", "--config", "blueprint:pipelineTimeout=900"]) == 1
    assert "--config blueprint:pipelineTimeout: phase1 does not read it, nor do the stacks it reads from; phase3 (and dev) do" in (
        capsys.readouterr().err
    )


def test_an_override_that_changes_nothing_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "phase1", "--config", "blueprint:gitlabNodes=3"]) == 0
    assert "they change nothing in this plan" in capsys.readouterr().out


def test_urns_chain_parent_types_as_the_engine_does_without_the_stack() -> None:
    result = planned("phase1", headlamp="true")
    assert result.one("blueprint:index:KindCluster", "kind")["urn"] == "urn:pulumi:phase1::blueprint::blueprint:index:KindCluster::kind"
    assert (
        result.one(COMMAND, "kind-cluster")["urn"]
        == "urn:pulumi:phase1::blueprint::blueprint:index:KindCluster$command:local:Command::kind-cluster"
    )


def test_a_duplicate_urn_fails_the_plan_as_it_fails_an_up() -> None:
    with pytest.raises(ProgramFailed) as failed:
        plan("phase1", program=Path(__file__).parent / "programs" / "duplicate_urn.py")
    assert "duplicate resource URN" in str(failed.value.cause)


def test_a_preview_shows_what_only_a_provider_computes_as_unknown() -> None:
    """The CA certificate is minted by pulumi-tls: a preview cannot know it, nor what is made of it."""
    assert planned_as("preview", "phase2").one(COMMAND, "tls-ca-file")["inputs"]["stdin"] == UNKNOWN
    assert planned("phase2").one(COMMAND, "tls-ca-file")["inputs"]["stdin"].startswith("-----BEGIN CERTIFICATE-----")


def test_a_preview_keeps_an_unknown_secret_secret() -> None:
    provider = planned_as("preview", "phase1", headlamp="true").one("pulumi:providers:kubernetes", "kind-kubernetes")
    assert provider["inputs"]["kubeconfig"] == SECRET


def test_a_preview_keeps_what_the_program_knows() -> None:
    preview, up = planned_as("preview", "phase1"), planned("phase1")
    assert preview.one(COMMAND, "kind-cluster")["inputs"] == up.one(COMMAND, "kind-cluster")["inputs"]


def test_the_preview_json_says_it_is_a_preview(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "phase1", "--preview", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["preview"] is True
    assert document["outputs"][outputs.CLUSTER_NAME]["value"] == "blueprint"


def test_the_destroy_json_gives_each_resource_its_fate_and_each_folder_its_own(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "phase1", "--destroy", "--json", "--config", "blueprint:preserveData=true"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert {r["destroy"] for r in document["resources"]} <= {"delete", "retain", "forget"}
    fates = {r["name"]: r["destroy"] for r in document["resources"]}
    assert (fates["kind-cluster"], fates["kind-data-folder"]) == ("delete", "retain")
    planned_outputs = planned("phase1").outputs
    assert document["folders"] == [
        {"path": planned_outputs[outputs.DATA_DIR]["value"], "destroy": "keep"},
        {"path": planned_outputs[outputs.IMAGE_CACHE_DIR]["value"], "destroy": "keep"},
    ]


def test_the_destroy_tree_says_why_each_resource_meets_its_fate(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "phase1", "--destroy"]) == 0
    tree = capsys.readouterr().out
    assert "kind-cluster  [delete]" in tree
    assert "host folders:\n  wipe  " in tree


def test_overrides_reach_the_upstream_stack_that_reads_the_key() -> None:
    """phase3 takes preserveData from phase2's outputs, which take it from phase1's config."""
    result = planned("phase3", preserveData="true")
    assert result.one("pulumi:pulumi:StackReference", "organization/blueprint/phase2")["urn"]
    assert planned("phase2", preserveData="true").outputs[outputs.PRESERVE_DATA]["value"] is True


def test_preview_and_destroy_cannot_be_asked_together(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["plan", "phase1", "--preview", "--destroy"])
    assert exited.value.code == 2


def test_a_preview_keeps_a_secret_output_secret_though_unknown() -> None:
    assert planned_as("preview", "phase2").outputs[outputs.DEPLOY_KUBECONFIG] == {"secret": True}


def test_a_preview_of_dev_knows_nothing_a_provider_without_a_cluster_would_return() -> None:
    """Before the cluster exists its kubeconfig is unknown, and so is all the Kubernetes provider
    returns, even the names the program gave: what the engine previews for `pulumi up -s dev`."""
    result = planned_as("preview", "dev")
    assert result.outputs[outputs.APPS_NAMESPACE] == {"secret": False, "value": UNKNOWN}
    assert planned_as("preview", "phase2").outputs[outputs.APPS_NAMESPACE] == {"secret": False, "value": "apps"}


def test_a_plan_whose_resource_fails_says_its_error_once(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Not again, traceback and all, for each output that waited on it, when the garbage collector frees them later."""
    import gc

    import cli.plan

    real = cli.plan._StandInMocks.new_resource

    def failing(self: cli.plan._StandInMocks, args: object) -> object:
        if getattr(args, "name", "") == "kind-cluster":
            raise RuntimeError("kind-cluster: it failed")
        return real(self, args)  # type: ignore[arg-type]

    monkeypatch.setattr(cli.plan._StandInMocks, "new_resource", failing)
    with pytest.raises(ProgramFailed) as failed:
        plan("phase1")
    assert str(failed.value.cause) == "kind-cluster: it failed"
    del failed  # its traceback holds the program's frames, and they the outputs
    gc.collect()
    assert not [record.getMessage() for record in caplog.records if "never retrieved" in record.getMessage()]
