"""CI deploys with an account whose rights end at the apps namespace."""

from __future__ import annotations

from pathlib import Path

import yaml

from stacks import outputs
from tests.plans import fake_command, planned, run_script


def test_the_deployer_role_is_namespaced_and_names_no_wildcard() -> None:
    result = planned("phase2")
    assert not result.find("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")
    role = result.one("kubernetes:rbac.authorization.k8s.io/v1:Role", "ci-access-role")["inputs"]
    assert role["metadata"]["namespace"] == "apps"
    for rule in role["rules"]:
        assert "*" not in rule["resources"] + rule["verbs"] + rule["apiGroups"]


def test_the_deploy_kubeconfig_is_a_secret_made_after_the_binding() -> None:
    result = planned("phase2")
    command = result.one("command:local:Command", "ci-access-kubeconfig")
    assert result.one("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "ci-access-binding")["urn"] in command["dependsOn"]
    assert command["additionalSecretOutputs"] == ["stdout"]
    assert "create token ci-deployer" in command["inputs"]["create"]
    assert result.outputs[outputs.DEPLOY_KUBECONFIG] == {"secret": True}
    assert result.outputs[outputs.APPS_NAMESPACE]["value"] == "apps"


def test_the_deploy_kubeconfig_targets_the_apps_namespace_from_inside_the_cluster(tmp_path: Path) -> None:
    fake_command(tmp_path, "kind", 'echo "apiVersion: v1"\n')
    fake_command(tmp_path, "kubectl", 'case "$*" in *"create token"*) echo the-token ;; *) printf "CA PEM" ;; esac\n')
    done = run_script(planned("phase2").one("command:local:Command", "ci-access-kubeconfig"), "create", path_prefix=tmp_path)
    assert done.returncode == 0, done.stderr
    config = yaml.safe_load(done.stdout)
    assert config["clusters"][0]["cluster"]["server"] == "https://kubernetes.default.svc"
    assert config["users"][0]["user"]["token"] == "the-token"
    assert config["contexts"][0]["context"]["namespace"] == "apps"
