"""CI deploys with an account whose rights end at the apps namespace."""

from __future__ import annotations

from stacks import outputs
from tests.plans import planned


def test_the_deployer_role_is_namespaced_and_names_no_wildcard() -> None:
    result = planned("phase2")
    assert not result.find("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")
    role = result.one("kubernetes:rbac.authorization.k8s.io/v1:Role", "ci-access-role")["inputs"]
    assert role["metadata"]["namespace"] == "apps"
    for rule in role["rules"]:
        assert "*" not in rule["resources"] + rule["verbs"] + rule["apiGroups"]


def test_the_token_secret_is_bound_to_the_deployer_and_exported_by_name() -> None:
    result = planned("phase2")
    token = result.one("kubernetes:core/v1:Secret", "ci-access-token")["inputs"]
    assert token["type"] == "kubernetes.io/service-account-token"
    assert token["metadata"]["annotations"] == {"kubernetes.io/service-account.name": "ci-deployer"}
    assert result.outputs[outputs.DEPLOY_TOKEN_SECRET]["value"] == "ci-deployer-token"
    assert result.outputs[outputs.APPS_NAMESPACE]["value"] == "apps"
