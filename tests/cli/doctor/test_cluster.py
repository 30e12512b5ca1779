"""`blueprint doctor` with `blueprint:cluster=existing`: the existing cluster checked with kubectl before
anything exists, each finding with its fix; none of this machine's engine, kind, ports or memory."""

from __future__ import annotations

import base64
import re
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

import versions
from cli.doctor import cluster, existing_cluster_checks
from cli.doctor.checks import PULUMI_MIN_VERSION, Check
from cli.doctor.cluster import CLUSTER_WIDE, CNPG_RELEASE
from components.markers import NAMESPACE_OWNER_LABEL
from components.runner import IMAGE_BUILD_NAMESPACE
from stacks.config.cluster import EXISTING, NODE_PORT, ClusterConfig
from stacks.config.schema import default_string
from tests.cli.doctor.fake_kubectl import (
    AUTOPILOT_REFUSAL,
    CONTEXT,
    GKE_STANDARD_RWO,
    KYVERNO_REFUSAL,
    POD_SECURITY_REFUSAL,
    PREMIUM_RWO,
    ClusterMachine,
    FakeCluster,
    cnpg_crd,
    daemonset,
    gateway_crd,
)
from tests.cli.doctor.fakes import doctor_output, without
from tests.plans import planned
from tests.tls_certificates import certificate_pem, issuer

EXISTING_CLUSTER = ClusterConfig(cluster=EXISTING, kube_context=CONTEXT, exposure="loadBalancer")


def checked(fake: FakeCluster | None = None, config: ClusterConfig = EXISTING_CLUSTER, **machine: object) -> dict[str, Check]:
    on = ClusterMachine(cluster=fake or FakeCluster(), **machine)  # type: ignore[arg-type]
    return {check.name: check for check in existing_cluster_checks(on, config, pulumi_min_version=PULUMI_MIN_VERSION)}


def failed(results: dict[str, Check]) -> list[str]:
    return [name for name, check in results.items() if not check.ok]


def test_a_healthy_cluster_passes_every_check() -> None:
    # A managed cluster's nodes trust the public roots alone: a healthy setup brings its certificate.
    domain = default_string("domain")
    ca = issuer()
    secret = " ".join(
        ["kubernetes.io/tls", *(base64.b64encode(pem.encode()).decode() for pem in (certificate_pem([f"*.{domain}"], by=ca), ca.pem))]
    )
    fake = FakeCluster(secrets={"certs/wildcard-tls": secret})
    results = checked(fake, replace(EXISTING_CLUSTER, tls_certificate="certs/wildcard-tls"))
    assert failed(results) == []
    assert [name for name, check in results.items() if check.advice] == []
    assert results[cluster.STORAGE].found.startswith("standard-rwo (pd.csi.storage.gke.io, reclaimPolicy Delete), the cluster's default")


def test_the_doctor_checks_the_existing_cluster_of_phase1s_config_and_not_this_machines_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "Pulumi.phase1.yaml").write_text(f"config:\n  blueprint:cluster: existing\n  blueprint:kubeContext: {CONTEXT}\n")
    monkeypatch.setattr("stacks.config.schema.STACK_FILES_DIR", tmp_path)
    code, output = doctor_output([], without(ClusterMachine(), "docker", "kind"))
    assert code == 0, output
    assert f"PASS  {cluster.CONTEXT}" in output
    assert "PASS  Gateway API CRDs" in output
    for kind_only in ("Docker", "kind", "port ", "memory", "CPUs", "inotify", "image cache", "platform names"):
        assert not re.search(rf"^(PASS|FAIL|WARN)  {kind_only}", output, re.MULTILINE), kind_only


def test_a_context_missing_from_the_kubeconfig_fails_naming_the_ones_there_and_the_fix() -> None:
    results = checked(FakeCluster(contexts=("staging",)))
    check = results[cluster.CONTEXT]
    assert failed(results) == [cluster.CONTEXT]
    assert "no context 'prod' in your kubeconfig (~/.kube/config): it has staging" in check.found
    assert "gcloud container clusters get-credentials" in check.fix
    assert "blueprint:kubeContext: <context>" in check.fix


def test_an_api_server_that_does_not_answer_fails_and_stops_the_checks_after_it() -> None:
    down = "Unable to connect to the server: dial tcp 10.0.0.2:443: i/o timeout\n"
    results = checked(FakeCluster(unreachable=down))
    assert failed(results) == [cluster.API]
    assert list(results)[-2:] == [cluster.CONTEXT, cluster.API]
    assert "dial tcp 10.0.0.2:443: i/o timeout" in results[cluster.API].found
    assert "`kubectl --context prod get --raw /version` says what is wrong" in results[cluster.API].fix


def test_kubernetes_older_than_1_30_fails_naming_the_admission_policies_that_need_it() -> None:
    check = checked(FakeCluster(version="v1.29.8-eks-a737599"))[cluster.VERSION]
    assert not check.ok
    assert check.found.startswith("v1.29.8-eks-a737599, older than 1.30: blueprint's admission policies")
    assert check.fix.startswith("upgrade the cluster to Kubernetes 1.33 or later")


@pytest.mark.parametrize("version", ["v1.31.4", "v1.36.0+k3s1"])
def test_kubernetes_outside_gitlabs_tested_range_is_a_warning(version: str) -> None:
    check = checked(FakeCluster(version=version))[cluster.VERSION]
    assert check.ok
    assert check.advice
    assert "GitLab 19 is tested on 1.33 to 1.35" in check.found


def test_a_kubectl_two_minors_from_the_cluster_is_a_warning_naming_the_supported_range() -> None:
    check = checked(FakeCluster(version="v1.33.1"))["kubectl"]
    assert check.ok
    assert "outside kubectl's supported version skew of the cluster's v1.33.1 (v1.32 to v1.34)" in check.found
    assert "https://kubernetes.io/docs/tasks/tools/" in check.advice


def test_no_default_storage_class_fails_when_none_is_named_and_says_how_to_make_one_the_default() -> None:
    check = checked(FakeCluster(storage_classes=[PREMIUM_RWO]))[cluster.STORAGE]
    assert not check.ok
    assert check.found == "blueprint:storageClass is empty and the cluster has no default StorageClass; it has premium-rwo"
    assert "blueprint:storageClass: <class>" in check.fix
    patch = """'{"metadata":{"annotations":{"storageclass.kubernetes.io/is-default-class":"true"}}}'"""
    assert f"kubectl --context prod patch storageclass <class> -p {patch}" in check.fix


def test_a_named_storage_class_the_cluster_lacks_fails_listing_the_ones_it_has() -> None:
    config = ClusterConfig(cluster=EXISTING, kube_context=CONTEXT, storage_class="fast", exposure="loadBalancer")
    check = checked(config=config)[cluster.STORAGE]
    assert not check.ok
    assert check.found == "no StorageClass 'fast' (blueprint:storageClass); the cluster has standard-rwo, premium-rwo"
    assert "blueprint:storageClass: <class>" in check.fix


def test_a_named_storage_class_the_cluster_has_passes_without_a_default() -> None:
    config = ClusterConfig(cluster=EXISTING, kube_context=CONTEXT, storage_class="premium-rwo", exposure="loadBalancer")
    assert checked(FakeCluster(storage_classes=[PREMIUM_RWO]), config=config)[cluster.STORAGE].ok


def test_a_user_who_may_not_create_crds_or_cluster_roles_fails_naming_them() -> None:
    denied = {"customresourcedefinitions.apiextensions.k8s.io", "clusterroles.rbac.authorization.k8s.io"}
    check = checked(FakeCluster(denied=denied))[cluster.PERMISSIONS]
    assert not check.ok
    assert check.found.startswith(
        "your user may not create customresourcedefinitions.apiextensions.k8s.io, clusterroles.rbac.authorization.k8s.io:"
    )
    assert "cluster-admin" in check.fix
    assert "auth can-i create <resource> --all-namespaces" in check.fix


def test_permissions_are_asked_for_every_cluster_wide_kind_outside_any_namespace() -> None:
    machine = ClusterMachine()
    existing_cluster_checks(machine, EXISTING_CLUSTER, pulumi_min_version=PULUMI_MIN_VERSION)
    wide = [call for call in machine.calls if call[4:6] == ["auth", "can-i"] and call[7] in CLUSTER_WIDE]
    assert [call[7] for call in wide] == list(CLUSTER_WIDE)
    assert all(call[-1] == "--all-namespaces" for call in wide)


def test_a_user_who_may_not_port_forward_or_exec_in_phase2s_namespaces_fails_naming_each() -> None:
    denied = {"pods/portforward openbao", "pods/exec gitlab"}
    check = checked(FakeCluster(denied=denied))[cluster.NAMESPACED_PERMISSIONS]
    assert not check.ok
    assert check.found.startswith("your user may not create pods/portforward in openbao, pods/exec in gitlab: `up` reaches")
    assert "`create` on pods/portforward and pods/exec in namespaces gitlab and openbao" in check.fix
    assert "auth can-i create pods/portforward --namespace gitlab" in check.fix


def test_port_forward_and_exec_are_asked_in_the_namespaces_up_uses_them_in() -> None:
    machine = ClusterMachine()
    existing_cluster_checks(machine, EXISTING_CLUSTER, pulumi_min_version=PULUMI_MIN_VERSION)
    asked = [call[7:] for call in machine.calls if call[4:6] == ["auth", "can-i"] and call[7] not in CLUSTER_WIDE]
    assert asked == [
        ["pods/portforward", "--namespace", "gitlab"],
        ["pods/portforward", "--namespace", "openbao"],
        ["pods/exec", "--namespace", "gitlab"],
    ]


def test_with_a_brought_certificate_the_reference_grant_is_asked_in_its_secrets_namespace() -> None:
    """phase2 makes it there, in a namespace of the user's, which no right in phase2's own namespaces implies."""
    brought = replace(EXISTING_CLUSTER, tls_certificate="certs/wildcard-tls")
    check = checked(FakeCluster(denied={"referencegrants.gateway.networking.k8s.io certs"}), brought)[cluster.NAMESPACED_PERMISSIONS]
    assert not check.ok
    assert "referencegrants.gateway.networking.k8s.io in certs" in check.found
    assert "a ReferenceGrant beside your certificate" in check.found
    assert "`create` on referencegrants.gateway.networking.k8s.io in namespace certs" in check.fix


def test_a_namespace_of_phase2s_that_is_someone_elses_fails_as_phase1_would_refuse_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "checkout-id").write_text("0123456789abcdef\n")
    monkeypatch.setattr("stacks.config.paths.CHECKOUT_ID_FILE", tmp_path / "checkout-id")
    taken = {"gitlab": {"team": "dev-tools"}, "minio": {NAMESPACE_OWNER_LABEL: "0123456789abcdef"}, "monitoring": {}}
    results = checked(FakeCluster(namespaces=taken))
    check = results[cluster.NAMESPACES]
    assert failed(results) == [cluster.NAMESPACES]
    assert check.found.startswith("the cluster of context prod already has the namespace gitlab, which phase2 makes")
    assert "Choose another cluster (blueprint:kubeContext), or remove or rename them" in check.fix
    assert f"label namespace gitlab {NAMESPACE_OWNER_LABEL}=0123456789abcdef" in check.fix


def test_with_no_checkout_id_yet_every_namespace_of_phase2s_that_exists_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No stack of this checkout ever ran, so none of the cluster's namespaces is its own."""
    monkeypatch.setattr("stacks.config.paths.CHECKOUT_ID_FILE", tmp_path / "none")
    check = checked(FakeCluster(namespaces={"apps": {NAMESPACE_OWNER_LABEL: "0123456789abcdef"}}))[cluster.NAMESPACES]
    assert not check.ok
    assert "already has the namespace apps" in check.found


def test_a_new_checkout_on_a_shared_backend_is_told_that_up_takes_the_platforms_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second operator's clone has no id before its first `up`, which takes the one phase1 recorded on the backend."""
    monkeypatch.setattr("stacks.config.paths.CHECKOUT_ID_FILE", tmp_path / "none")
    env = {"PULUMI_BACKEND_URL": "s3://team-state/blueprint?region=eu-west-1&awssdk=v2"}
    check = checked(FakeCluster(namespaces={"apps": {NAMESPACE_OWNER_LABEL: "0123456789abcdef"}}), env=env)[cluster.NAMESPACES]
    assert not check.ok
    assert check.fix.startswith(
        "if the platform's phase1 is on the backend PULUMI_BACKEND_URL names (s3://team-state/blueprint), this checkout has "
        "no id yet: `uv run blueprint up` takes the one recorded there"
    )


def test_gateway_api_crds_of_another_bundle_version_fail_naming_both_bundles() -> None:
    check = checked(FakeCluster(crds=gateway_crd("v1.3.0", "standard")))[cluster.GATEWAY]
    assert not check.ok
    assert check.found.startswith(
        f"Gateway API v1.3.0 standard is installed; blueprint installs {versions.GATEWAY_API_BUNDLE_VERSION} experimental"
    )
    assert "remove them" in check.fix
    assert "turn its Gateway API off" in check.fix


def test_gateway_api_crds_of_the_bundle_blueprint_installs_pass() -> None:
    """As they are after blueprint's own up: the doctor passes again."""
    check = checked(FakeCluster(crds=gateway_crd(versions.GATEWAY_API_BUNDLE_VERSION, "experimental")))[cluster.GATEWAY]
    assert check.ok
    assert "the bundle blueprint installs" in check.found


def test_an_installed_cloudnative_pg_fails_naming_its_helm_release_and_how_to_remove_it() -> None:
    check = checked(FakeCluster(crds=cnpg_crd("pg-operator", "databases")))[cluster.CNPG]
    assert not check.ok
    assert "by Helm release pg-operator in namespace databases" in check.found
    assert "two operators" in check.found
    assert "`helm uninstall pg-operator -n databases`" in check.fix
    assert "deletes every cluster they hold" in check.fix


def test_a_cloudnative_pg_installed_without_helm_fails_too() -> None:
    check = checked(FakeCluster(crds=cnpg_crd()))[cluster.CNPG]
    assert not check.ok
    assert "by something other than Helm" in check.found


def test_blueprints_own_cloudnative_pg_passes() -> None:
    assert checked(FakeCluster(crds=cnpg_crd(*CNPG_RELEASE)))[cluster.CNPG].ok


def test_a_build_pod_autopilot_refuses_fails_naming_gke_autopilot() -> None:
    check = checked(FakeCluster(pod_refusal=AUTOPILOT_REFUSAL))[cluster.BUILDS]
    assert not check.ok
    assert check.found.startswith("GKE Autopilot refuses a pod like the image builds' (seccomp and AppArmor Unconfined")
    assert "autogke-disallow-unconfined-seccomp" in check.found
    assert "use a GKE Standard cluster" in check.fix


def test_a_build_pod_another_policy_refuses_fails_with_the_policys_message() -> None:
    check = checked(FakeCluster(pod_refusal=KYVERNO_REFUSAL))[cluster.BUILDS]
    assert not check.ok
    assert "the cluster's admission refuses a pod like the image builds'" in check.found
    assert "restrict-seccomp" in check.found
    assert "namespace gitlab-runner-image-build" in check.fix


def test_a_privileged_namespace_a_policy_refuses_fails() -> None:
    refusal = 'Error from server: admission webhook "validation.gatekeeper.sh" denied the request: [psa-labels] privileged is not allowed'
    check = checked(FakeCluster(namespace_refusal=refusal))[cluster.BUILDS]
    assert not check.ok
    assert "refuses a namespace labelled Pod Security `privileged`" in check.found


def test_pod_security_of_the_default_namespace_is_a_warning_since_blueprints_namespace_is_privileged() -> None:
    check = checked(FakeCluster(pod_refusal=POD_SECURITY_REFUSAL))[cluster.BUILDS]
    assert check.ok
    assert check.advice
    assert "namespace default's Pod Security level refuses it" in check.found


def test_the_trial_pod_is_tried_in_a_dry_run_with_the_image_build_runners_build_container() -> None:
    """What the runner's config.toml gives its build container (as the plan has it), camelCased, is the trial pod's."""
    fake = FakeCluster()
    checked(fake)
    namespace, pod = fake.tried
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    container = pod["spec"]["containers"][0]
    release = planned("phase2").one("kubernetes:helm.sh/v3:Release", "image-build-runner-chart")
    toml = tomllib.loads(release["inputs"]["values"]["runners"]["config"])
    build = toml["runners"][0]["kubernetes"]["build_container_security_context"]

    def camel(key: str) -> str:
        first, *rest = key.split("_")
        return first + "".join(word.title() for word in rest)

    assert {camel(key): value for key, value in build.items()} == container["securityContext"]
    assert container["image"] == toml["runners"][0]["kubernetes"]["image"] == versions.BUILDKIT_IMAGE
    assert cluster.BUILD_NAMESPACE == IMAGE_BUILD_NAMESPACE


def test_no_sign_of_a_load_balancer_is_a_warning_only_naming_the_node_port_fallback() -> None:
    results = checked(FakeCluster(provider_ids=["kind://docker/blueprint/node"]))
    check = results[cluster.LOAD_BALANCER]
    assert check.ok
    assert check.found.startswith("no sign the cluster provisions load balancers")
    assert "blueprint:exposure: nodePort" in check.advice
    assert failed(results) == []


def test_no_sign_of_a_load_balancer_fails_no_doctor_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "Pulumi.phase1.yaml").write_text(f"config:\n  blueprint:cluster: existing\n  blueprint:kubeContext: {CONTEXT}\n")
    monkeypatch.setattr("stacks.config.schema.STACK_FILES_DIR", tmp_path)
    code, output = doctor_output([], ClusterMachine(cluster=FakeCluster(provider_ids=[])))
    assert "WARN  load balancer" in output
    assert code == 0, output


@pytest.mark.parametrize(
    ("fake", "said"),
    [
        (FakeCluster(provider_ids=[], load_balancers=["ingress/traefik 203.0.113.7"]), "Service ingress/traefik has one"),
        (FakeCluster(provider_ids=["k3s://server-1"]), "k3s (its ServiceLB)"),
        (FakeCluster(provider_ids=[], crds={"ipaddresspools.metallb.io": {}}), "MetalLB is installed"),
    ],
)
def test_a_sign_of_a_load_balancer_passes_saying_which(fake: FakeCluster, said: str) -> None:
    check = checked(fake)[cluster.LOAD_BALANCER]
    assert (check.ok, check.advice) == (True, "")
    assert said in check.found


def test_a_pending_load_balancer_service_is_no_sign() -> None:
    check = checked(FakeCluster(provider_ids=[], load_balancers=["ingress/traefik"]))[cluster.LOAD_BALANCER]
    assert check.advice


def test_with_node_port_exposure_no_load_balancer_is_needed() -> None:
    config = ClusterConfig(cluster=EXISTING, kube_context=CONTEXT, exposure=NODE_PORT)
    check = checked(FakeCluster(provider_ids=[]), config=config)[cluster.LOAD_BALANCER]
    assert (check.ok, check.advice, check.found) == (True, "", "not needed: blueprint:exposure is nodePort")


def test_without_kubectl_the_cluster_is_not_checked_and_fix_installs_it() -> None:
    machine = without(ClusterMachine(), "kubectl")
    results = {check.name: check for check in existing_cluster_checks(machine, EXISTING_CLUSTER, pulumi_min_version=PULUMI_MIN_VERSION)}
    assert failed(results) == ["kubectl", cluster.CONTEXT]
    assert "uv run blueprint doctor --fix" in results["kubectl"].fix
    assert results[cluster.CONTEXT].found == "not checked: kubectl is missing (above)"


def test_every_failure_says_its_fix() -> None:
    fakes = [
        FakeCluster(contexts=()),
        FakeCluster(unreachable="Unable to connect to the server: EOF"),
        FakeCluster(version="v1.28.0", storage_classes=[PREMIUM_RWO], denied={"namespaces"}),
        FakeCluster(crds={**gateway_crd("v1.2.1", "standard"), **cnpg_crd("cnpg", "default")}, pod_refusal=AUTOPILOT_REFUSAL),
    ]
    for fake in fakes:
        for check in checked(fake).values():
            assert check.ok or check.fix, check


def test_the_default_storage_class_is_the_one_annotated_default() -> None:
    unannotated = {**GKE_STANDARD_RWO, "metadata": {"name": "standard-rwo"}}
    assert not checked(FakeCluster(storage_classes=[unannotated, PREMIUM_RWO]))[cluster.STORAGE].ok


def test_the_doctor_output_says_how_many_checks_passed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "Pulumi.phase1.yaml").write_text(f"config:\n  blueprint:cluster: existing\n  blueprint:kubeContext: {CONTEXT}\n")
    monkeypatch.setattr("stacks.config.schema.STACK_FILES_DIR", tmp_path)
    code, output = doctor_output(["--phase", "2"], ClusterMachine(cluster=FakeCluster(denied={"namespaces"})))
    assert code == 1
    assert "FAIL  cluster-wide permissions" in output
    assert "fix: use a context whose user is the cluster's admin" in output


def test_a_secret_context_is_not_checked_and_says_so() -> None:
    results = {check.name: check for check in existing_cluster_checks(ClusterMachine(), None, pulumi_min_version=PULUMI_MIN_VERSION)}
    assert results[cluster.CONTEXT].found == "not checked: blueprint:kubeContext is a secret, so not known here"
    assert failed(results) == []


def test_the_doctor_does_not_guess_a_context_set_as_a_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "    secure: v1:AAAABBBBCCCC\n"
    (tmp_path / "Pulumi.phase1.yaml").write_text(f"config:\n  blueprint:cluster: existing\n  blueprint:kubeContext:\n{secret}")
    monkeypatch.setattr("stacks.config.schema.STACK_FILES_DIR", tmp_path)
    machine = ClusterMachine()
    _, output = doctor_output([], machine)
    assert "PASS  cluster context" in output
    assert "not checked: blueprint:kubeContext is a secret" in output
    assert not [call for call in machine.calls if call[:2] == ["kubectl", "--context"]]


def test_of_two_default_storage_classes_the_doctor_names_the_one_phase1_takes() -> None:
    """EKS after adding gp3: gp2 and gp3 both say default. Kubernetes, and phase1, take the newest; the
    doctor says the same class, whatever kubectl's order (by name)."""
    from components.existing_cluster import DEFAULT_CLASS_ANNOTATIONS, default_storage_class

    def default(name: str, made: str) -> dict[str, object]:
        annotations = {DEFAULT_CLASS_ANNOTATIONS[0]: "true"}
        return {"metadata": {"name": name, "annotations": annotations, "creationTimestamp": made}, "provisioner": "ebs.csi.aws.com"}

    gp2, gp3 = default("gp2", "2025-06-01T00:00:00Z"), default("gp3", "2024-01-01T00:00:00Z")
    assert default_storage_class({"items": [gp2, gp3]}) == "gp2"
    found = checked(FakeCluster(storage_classes=[gp2, gp3]))[cluster.STORAGE].found
    assert found.startswith("gp2 (ebs.csi.aws.com, reclaimPolicy Delete), the cluster's default")


def test_no_sign_of_a_networkpolicy_enforcer_is_a_warning_naming_what_ci_jobs_could_reach() -> None:
    check = checked(FakeCluster(daemonsets=[daemonset("kube-system", "kube-proxy")]))[cluster.NETWORK_POLICY]
    assert check.ok
    assert check.found == "no sign of a network plugin that enforces NetworkPolicy"
    assert "a job can reach Postgres, OpenBao and Valkey" in check.advice
    assert "EKS: the VPC CNI's enableNetworkPolicy" in check.advice


def test_eks_vpc_cni_without_its_policy_agent_on_is_no_sign_of_enforcement() -> None:
    aws_node = daemonset("kube-system", "aws-node", **{"aws-network-policy-agent": ["--enable-network-policy=false"]})
    assert checked(FakeCluster(daemonsets=[aws_node]))[cluster.NETWORK_POLICY].advice


@pytest.mark.parametrize(
    ("fake", "said"),
    [
        (FakeCluster(), "GKE Dataplane V2 (DaemonSet kube-system/anetd)"),
        (FakeCluster(daemonsets=[daemonset("calico-system", "calico-node")]), "Calico (DaemonSet calico-system/calico-node)"),
        (
            FakeCluster(
                daemonsets=[daemonset("kube-system", "aws-node", **{"aws-network-policy-agent": ["--enable-network-policy=true"]})]
            ),
            "the VPC CNI's network policy agent",
        ),
        (FakeCluster(daemonsets=[], provider_ids=["k3s://server-1"]), "k3s's embedded network policy controller"),
    ],
)
def test_a_known_networkpolicy_enforcer_passes_naming_it(fake: FakeCluster, said: str) -> None:
    check = checked(fake)[cluster.NETWORK_POLICY]
    assert (check.ok, check.advice) == (True, "")
    assert check.found.startswith(said)


NLB = "service.k8s.aws/nlb"
ON_EKS = FakeCluster(provider_ids=["aws:///us-east-1a/i-0abc"], load_balancers=["kube-system/old-elb a1.elb.amazonaws.com"])
"""EKS without the AWS Load Balancer Controller: the cloud's own controller gave a classless Service an address."""


def with_class(class_name: str) -> ClusterConfig:
    return replace(EXISTING_CLUSTER, gateway_service={"loadBalancerClass": class_name})


def test_with_a_load_balancer_class_the_clouds_own_controller_is_no_sign_and_the_doctor_warns() -> None:
    check = checked(ON_EKS, config=with_class(NLB))[cluster.LOAD_BALANCER]
    assert check.ok
    assert check.found.startswith(f"no sign anything serves blueprint:loadBalancerClass {NLB}")
    assert "AWS Load Balancer Controller is not installed (no CRD targetgroupbindings.elbv2.k8s.aws)" in check.found
    assert "install the AWS Load Balancer Controller first" in check.advice


def test_with_a_load_balancer_class_its_controllers_crd_passes() -> None:
    fake = replace(ON_EKS, crds={"targetgroupbindings.elbv2.k8s.aws": {}})
    check = checked(fake, config=with_class(NLB))[cluster.LOAD_BALANCER]
    assert (check.ok, check.advice) == (True, "")
    assert "the AWS Load Balancer Controller is installed" in check.found


def test_with_a_load_balancer_class_a_service_of_that_class_with_an_address_passes() -> None:
    fake = replace(
        ON_EKS, load_balancers=[*ON_EKS.load_balancers, "web/shop lb.example.net"], load_balancer_classes={"web/shop": "example.com/lb"}
    )
    check = checked(fake, config=with_class("example.com/lb"))[cluster.LOAD_BALANCER]
    assert (check.ok, check.advice) == (True, "")
    assert "Service web/shop has one" in check.found
    unknown = checked(ON_EKS, config=with_class("example.com/lb"))[cluster.LOAD_BALANCER]
    assert "install the controller of that class first" in unknown.advice
