"""CI deploys with an account whose rights end at the apps namespace, with a token that an `up`
makes again before it expires (a year's token made once would stop every deploy a year later)."""

from __future__ import annotations

import base64
import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from apps_manifest import APPS_DIR
from components.ci_access import KUBECONFIG_SCRIPT, RENEW_DAYS
from providers.deploy_kubeconfig import PROVIDER_VERSION, DeployKubeconfigError, DeployKubeconfigProvider
from stacks import outputs
from tests.plans import fake_command, planned
from tests.providers.engine import as_engine_loads, outputs_of

KUBECONFIG = "pulumi-python:dynamic/blueprint:DeployKubeconfig"
DAY = 86400


def jwt(expires: int) -> str:
    """A token shaped as the TokenRequest API's: base64url header, claims and signature."""

    def part(data: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'RS256'})}.{part({'exp': expires, 'sub': 'system:serviceaccount:apps:ci-deployer'})}.c2ln"


@pytest.fixture
def provider() -> DeployKubeconfigProvider:
    return as_engine_loads(DeployKubeconfigProvider())


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Fake `kind` and `kubectl` first on PATH; `kubectl create token` prints the token in `token`."""
    bin_ = tmp_path / "bin"
    fake_command(bin_, "kind", 'echo "apiVersion: v1"\n')
    fake_command(
        bin_,
        "kubectl",
        f'echo "$*" >> {tmp_path / "kubectl.log"}\n'
        f'case "$*" in *"create token"*) cat {tmp_path / "token"} ;;\n'
        f'  *"get secrets -l"*) cat {tmp_path / "anchors"} 2>/dev/null || true ;;\n'
        # Anchors the deployer unlabelled are listed only when the listing selects by no label.
        f'  *"get secrets"*) cat {tmp_path / "anchors"} {tmp_path / "unlabelled"} 2>/dev/null || true ;;\n'
        f'  *"create -f -"*) cat >> {tmp_path / "created"}; printf "uid-of-new-anchor" ;; *delete*) ;; *) printf "CA PEM" ;; esac\n',
    )
    (tmp_path / "token").write_text(jwt(int(time.time()) + 365 * DAY))
    monkeypatch.setenv("PATH", f"{bin_}:{os.environ['PATH']}")
    return tmp_path


def props(**extra: object) -> dict[str, object]:
    """The inputs CiAccess gives the kubeconfig (as the wire carries them: ints as floats)."""
    inputs = {
        "kind_cluster_name": "blueprint",
        "namespace": "apps",
        "namespace_uid": "uid-1",
        "service_account_uid": "sa-uid-1",
        "script": KUBECONFIG_SCRIPT,
        "environment": planned("phase2").one(KUBECONFIG, "ci-access-kubeconfig")["inputs"]["environment"],
    }
    return {**inputs, "renew_days": float(RENEW_DAYS), "provider_version": PROVIDER_VERSION, **extra}


def test_the_deployer_role_is_namespaced_and_names_no_wildcard() -> None:
    result = planned("phase2")
    assert not result.find("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")
    role = result.one("kubernetes:rbac.authorization.k8s.io/v1:Role", "ci-access-role")["inputs"]
    assert role["metadata"]["namespace"] == "apps"
    for rule in role["rules"]:
        assert "*" not in rule["resources"] + rule["verbs"] + rule["apiGroups"]


def test_the_deploy_kubeconfig_is_a_secret_made_after_the_binding() -> None:
    result = planned("phase2")
    kubeconfig = result.one(KUBECONFIG, "ci-access-kubeconfig")
    assert result.one("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "ci-access-binding")["urn"] in kubeconfig["dependsOn"]
    assert kubeconfig["additionalSecretOutputs"] == ["kubeconfig"]
    assert 'create token "$DEPLOYER"' in kubeconfig["inputs"]["script"]
    assert kubeconfig["inputs"]["environment"]["DEPLOYER"] == "ci-deployer"
    assert result.outputs[outputs.DEPLOY_KUBECONFIG] == {"secret": True}
    assert result.outputs[outputs.APPS_NAMESPACE]["value"] == "apps"


def test_the_deploy_kubeconfig_targets_the_apps_namespace_from_inside_the_cluster(tools: Path, provider: DeployKubeconfigProvider) -> None:
    config = yaml.safe_load(outputs_of(provider.create(props()))["kubeconfig"])
    assert config["clusters"][0]["cluster"]["server"] == "https://kubernetes.default.svc"
    assert config["users"][0]["user"]["token"] == (tools / "token").read_text()
    assert config["contexts"][0]["context"]["namespace"] == "apps"


def test_the_recorded_expiry_is_the_tokens_own(tools: Path, provider: DeployKubeconfigProvider) -> None:
    """The API server may grant less than the year asked for (--service-account-max-token-expiration)."""
    (tools / "token").write_text(jwt(1_900_000_000))
    assert outputs_of(provider.create(props()))["expires_at"] == 1_900_000_000


def test_a_second_up_with_a_fresh_token_changes_nothing(tools: Path, provider: DeployKubeconfigProvider) -> None:
    olds = outputs_of(provider.create(props()))
    assert provider.diff("apps/deploy-kubeconfig", olds, props()).changes is False


def test_an_up_within_the_renewal_window_makes_a_new_token(tools: Path, provider: DeployKubeconfigProvider) -> None:
    """No input changed a year later: only the recorded expiry can tell the token is nearly void."""
    (tools / "token").write_text(jwt(int(time.time()) + 10 * DAY))
    olds = outputs_of(provider.create(props()))
    assert provider.diff("apps/deploy-kubeconfig", olds, props()).changes is True
    (tools / "token").write_text(jwt(int(time.time()) + 365 * DAY))
    renewed = outputs_of(provider.update("apps/deploy-kubeconfig", olds, props()))
    assert renewed["kubeconfig"] != olds["kubeconfig"]
    assert provider.diff("apps/deploy-kubeconfig", renewed, props()).changes is False


def test_a_new_namespace_gets_a_new_token(tools: Path, provider: DeployKubeconfigProvider) -> None:
    olds = outputs_of(provider.create(props()))
    assert provider.diff("apps/deploy-kubeconfig", olds, props(namespace_uid="uid-2")).changes is True


def test_a_new_service_account_gets_a_new_token(tools: Path, provider: DeployKubeconfigProvider) -> None:
    """Deleting the account voids its tokens (how CI's access is revoked); the account `up` makes
    again has a new uid, and CI must get a token of it at once, not at the next renewal."""
    olds = outputs_of(provider.create(props()))
    assert provider.diff("apps/deploy-kubeconfig", olds, props(service_account_uid="sa-uid-2")).changes is True


def test_the_kubeconfig_follows_the_service_accounts_uid() -> None:
    result = planned("phase2")
    account = result.one("kubernetes:core/v1:ServiceAccount", "ci-access-deployer")
    kubeconfig = result.one(KUBECONFIG, "ci-access-kubeconfig")
    assert "service_account_uid" in kubeconfig["inputs"]
    assert account["urn"] in kubeconfig["dependsOn"]


def gateway_api_kinds_the_apps_render() -> set[str]:
    kinds = set()
    for template in APPS_DIR.glob("*/chart/templates/*.yaml"):
        text = template.read_text()
        if "gateway.networking.k8s.io/" in text:
            kinds |= {line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("kind:")}
    return kinds


def test_the_deployer_may_manage_only_the_gateway_api_kinds_the_apps_render() -> None:
    """HTTPRoutes, attached to GitLab's Gateway; never a Gateway of its own, which would take
    listeners of the shared class beside GitLab's."""
    assert gateway_api_kinds_the_apps_render() == {"HTTPRoute"}
    role = planned("phase2").one("kubernetes:rbac.authorization.k8s.io/v1:Role", "ci-access-role")["inputs"]
    granted = {resource for rule in role["rules"] if "gateway.networking.k8s.io" in rule["apiGroups"] for resource in rule["resources"]}
    assert granted == {"httproutes"}


POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"


def admission(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A credential policy's spec and its binding's, as planned."""
    result = planned("phase2")
    return result.one(POLICY, f"ci-access-{name}")["inputs"]["spec"], result.one(BINDING, f"ci-access-{name}-binding")["inputs"]["spec"]


@pytest.mark.parametrize("name", ["ci-deployer-no-token-secrets", "ci-deployer-no-deployer-pods"])
def test_each_credential_policy_denies_in_the_apps_namespace_only(name: str) -> None:
    policy, binding = admission(name)
    assert policy["failurePolicy"] == "Fail"
    assert (binding["policyName"], binding["validationActions"]) == (name, ["Deny"])
    assert binding["matchResources"] == {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "apps"}}}


def test_no_service_account_token_secret_can_be_made_in_the_apps_namespace() -> None:
    """Such a Secret holds a token of no expiry for any account of the namespace, ci-deployer's
    included: it would survive every renewal. (CEL checked with cel-python against both kinds.)"""
    policy, _ = admission("ci-deployer-no-token-secrets")
    [rule] = policy["matchConstraints"]["resourceRules"]
    assert (rule["apiGroups"], rule["resources"], sorted(rule["operations"])) == ([""], ["secrets"], ["CREATE", "UPDATE"])
    [validation] = policy["validations"]
    assert validation["expression"] == "!has(object.type) || object.type != 'kubernetes.io/service-account-token'"


def test_no_pod_in_the_apps_namespace_runs_as_the_deployer() -> None:
    """A pod of ci-deployer holds its token as long as it runs, and asks for tokens by account name:
    it would outlive the account's deletion, the one way to revoke CI's access."""
    policy, _ = admission("ci-deployer-no-deployer-pods")
    [rule] = policy["matchConstraints"]["resourceRules"]
    assert (rule["apiGroups"], rule["resources"], sorted(rule["operations"])) == ([""], ["pods"], ["CREATE", "UPDATE"])
    [validation] = policy["validations"]
    assert validation["expression"] == "!has(object.spec.serviceAccountName) || object.spec.serviceAccountName != 'ci-deployer'"


def test_the_deployer_gets_its_rights_only_once_the_credential_policies_are_bound() -> None:
    result = planned("phase2")
    role_binding = result.one("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "ci-access-binding")
    credential_bindings = [binding for binding in result.find(BINDING) if binding["name"].startswith("ci-access-")]
    for binding in credential_bindings:
        assert binding["urn"] in role_binding["dependsOn"], binding["name"]
    assert len(credential_bindings) == 2


def test_a_failed_script_names_the_cluster_and_what_to_check(tools: Path, provider: DeployKubeconfigProvider) -> None:
    fake_command(tools / "bin", "kind", 'echo "ERROR: no such cluster" >&2; exit 1\n')
    with pytest.raises(DeployKubeconfigError, match=r"on kind cluster blueprint failed \(exit 1\): ERROR: no such cluster; check"):
        provider.create(props())


def test_the_renewed_kubeconfig_is_what_ci_gets() -> None:
    """The group variable takes the resource's output: a renewal updates it in the same run (`dev`),
    or on phase3's `up` right after phase2's (`blueprint up` runs both)."""
    result = planned("dev")
    kubeconfig = result.one(KUBECONFIG, "ci-access-kubeconfig")["urn"]
    [variable] = [v for v in result.find("pulumi-python:dynamic/gitlab:GroupVariable") if v["inputs"]["key"] == "DEPLOY_KUBECONFIG"]
    assert kubeconfig in variable["dependsOn"]


def test_the_revocation_steps_refresh_the_deployers_service_account() -> None:
    """The security guide's steps to cut CI's access: the refresh must target the very account `up` makes
    again, or `up` would still believe it exists and make no new token."""
    guide = (Path(__file__).parents[2] / "docs" / "guide" / "security.md").read_text()
    [target] = re.findall(r"pulumi refresh -s phase2 --yes --target '([^']+)'", guide)
    account = planned("phase2").one("kubernetes:core/v1:ServiceAccount", "ci-access-deployer")
    assert target == account["urn"]
    assert "kubectl --context kind-blueprint -n apps delete serviceaccount ci-deployer" in guide


def _kubectl_whose_ca_appears_after(tools: Path, failures: int) -> None:
    """`kubectl get configmap kube-root-ca.crt` fails as for a namespace made seconds ago (NotFound)
    `failures` times, then prints the CA; `sleep` returns at once (counted in `slept`)."""
    count = tools / "asked"
    configmap = (
        f"n=$(cat {count} 2>/dev/null || echo 0); echo $((n+1)) > {count}; "
        f'if [ "$n" -lt {failures} ]; then echo \'Error from server (NotFound): configmaps "kube-root-ca.crt" not found\' >&2; exit 1; fi; '
        'printf "%s\\n" "-----BEGIN CERTIFICATE-----" "MIIB" "-----END CERTIFICATE-----"'
    )
    anchors = '*"get secrets"*) ;; *"create -f -"*) cat > /dev/null; printf "uid-of-new-anchor" ;;'
    fake_command(tools / "bin", "kubectl", f'case "$*" in *"create token"*) cat {tools / "token"} ;; {anchors} *) {configmap} ;; esac\n')
    fake_command(tools / "bin", "sleep", f'echo "$*" >> {tools / "slept"}\n')


def test_the_clusters_ca_is_asked_again_until_the_new_namespace_has_it(tools: Path, provider: DeployKubeconfigProvider) -> None:
    _kubectl_whose_ca_appears_after(tools, failures=3)
    config = yaml.safe_load(outputs_of(provider.create(props()))["kubeconfig"])
    ca = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]).decode()
    assert ca == "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    assert (tools / "slept").read_text().splitlines() == ["2"] * 3


def test_a_kubeconfig_without_the_clusters_ca_is_never_made(tools: Path, provider: DeployKubeconfigProvider) -> None:
    """An empty certificate-authority-data would be recorded, and handed to CI, until the token's renewal."""
    _kubectl_whose_ca_appears_after(tools, failures=1000)
    with pytest.raises(DeployKubeconfigError, match=r"kube-root-ca\.crt in namespace apps gave no CA certificate after 15 tries") as failed:
        provider.create(props())
    assert 'configmaps "kube-root-ca.crt" not found' in str(failed.value)


def kubectl_calls(tools: Path) -> list[str]:
    return (tools / "kubectl.log").read_text().splitlines()


def test_each_token_is_bound_to_a_secret_of_its_own_that_voids_it_when_deleted(tools: Path, provider: DeployKubeconfigProvider) -> None:
    """A token of the TokenRequest API cannot be revoked by itself; one bound to an object dies with it."""
    outs = outputs_of(provider.create(props()))
    anchor = outs["anchor"]
    assert re.fullmatch(r"ci-deployer-token-[0-9a-f]{8}", anchor)
    created = yaml.safe_load((tools / "created").read_text())
    assert created["metadata"] == {"name": anchor, "labels": {"blueprint/deploy-token-of": "ci-deployer"}}
    [request] = [call for call in kubectl_calls(tools) if "create token" in call]
    assert "--bound-object-kind=Secret" in request
    assert f"--bound-object-name={anchor} --bound-object-uid=uid-of-new-anchor" in request


def test_a_token_whose_kubeconfig_never_reached_the_state_is_voided_by_the_next_run(
    tools: Path, provider: DeployKubeconfigProvider
) -> None:
    """A run killed after the script (its answer lost) left a live token bound to an anchor no state
    names; the next run deletes that anchor, and keeps the one of the token the state recorded (CI's)."""
    recorded = outputs_of(provider.create(props()))
    lost = "ci-deployer-token-0badc0de"
    (tools / "anchors").write_text(f"secret/{recorded['anchor']}\nsecret/{lost}\nsecret/an-app-secret\n")
    (tools / "kubectl.log").unlink()
    renewed = outputs_of(provider.update("apps/deploy-kubeconfig", recorded, props(service_account_uid="sa-uid-2")))
    deleted = [call for call in kubectl_calls(tools) if " delete " in f" {call} "]
    assert deleted == [f"--kubeconfig {deleted[0].split()[1]} -n apps delete secret/{lost} --ignore-not-found"]
    assert renewed["anchor"] not in (recorded["anchor"], lost)


def test_an_anchor_the_deployer_unlabelled_is_still_voided_by_the_next_run(tools: Path, provider: DeployKubeconfigProvider) -> None:
    """The deployer may edit Secrets in apps, so it could take the label off its anchor to keep its
    token past a renewal; the sweep goes by the name, which no one can change."""
    recorded = outputs_of(provider.create(props()))
    kept_by_ci = "ci-deployer-token-0badc0de"
    (tools / "unlabelled").write_text(f"secret/{recorded['anchor']}\nsecret/{kept_by_ci}\nsecret/an-app-secret\n")
    (tools / "kubectl.log").unlink()
    provider.update("apps/deploy-kubeconfig", recorded, props(service_account_uid="sa-uid-2"))
    deleted = [call for call in kubectl_calls(tools) if " delete " in f" {call} "]
    assert [call.split()[-2] for call in deleted] == [f"secret/{kept_by_ci}"]


def test_the_admin_kubeconfig_reaches_the_script_without_a_file_in_the_temporary_folder(
    tools: Path, provider: DeployKubeconfigProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run killed mid-script (no trap runs on SIGKILL) must leave no admin credential in the temporary folder."""
    temporary = tools / "tmp"
    temporary.mkdir()
    monkeypatch.setenv("TMPDIR", str(temporary))
    fake_command(tools / "bin", "kind", 'echo "apiVersion: v1 # the admin kubeconfig"\n')
    read, kept = tools / "read", tools / "kept"
    real = (tools / "bin" / "kubectl").read_text().split("\n", 1)[1]
    # Each call: what its --kubeconfig holds, and any file of the temporary folder that holds it.
    fake_command(tools / "bin", "kubectl", f'cat "$2" >> {read}; grep -rl "admin kubeconfig" "$TMPDIR" >> {kept} || true\n{real}')
    provider.create(props())
    assert set(read.read_text().splitlines()) == {"apiVersion: v1 # the admin kubeconfig"}
    assert kept.read_text() == ""
