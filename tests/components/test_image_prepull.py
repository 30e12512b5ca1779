"""GitLab's images pulled onto the GitLab nodes while the data tier comes up, with nothing waiting
for the pulls."""

from __future__ import annotations

from typing import Any

import versions
from components.image_prepull import SHARED, container_name
from components.kind_cluster import GITLAB_NODE_LABEL, NODE_LABEL_KEY
from tests.plans import planned, waits_for
from tests.pod_security import violations
from tests.stacks.test_phase2 import longest_chain

DEPLOYMENT = "kubernetes:apps/v1:Deployment"


def prepull(**config: str) -> dict[str, Any]:
    """The pre-pull's Deployment in phase2's plan."""
    return dict(planned("phase2", **config).one(DEPLOYMENT, "gitlab-image-prepull-deployment"))


def pod(deployment: dict[str, Any]) -> dict[str, Any]:
    return dict(deployment["inputs"]["spec"]["template"])


def test_the_prepull_pulls_exactly_the_gitlab_charts_images() -> None:
    containers = pod(prepull())["spec"]["containers"]
    assert [container["image"] for container in containers] == list(versions.GITLAB_CHART_IMAGES)
    assert {container["imagePullPolicy"] for container in containers} == {"IfNotPresent"}


def test_the_prepull_runs_on_the_gitlab_nodes_only() -> None:
    assert pod(prepull())["spec"]["nodeSelector"] == {NODE_LABEL_KEY: GITLAB_NODE_LABEL}


def test_the_prepull_starts_as_soon_as_the_cluster_answers() -> None:
    result = planned("phase2")
    waits = waits_for(result, result.one(DEPLOYMENT, "gitlab-image-prepull-deployment")["urn"])
    names = {resource["name"] for resource in result.resources if resource["urn"] in waits}
    assert names <= {"kubernetes", "gitlab-namespace", "cluster-lease"}, names


def test_the_gitlab_release_does_not_wait_for_the_prepull() -> None:
    result = planned("phase2")
    prepull_urn = result.one(DEPLOYMENT, "gitlab-image-prepull-deployment")["urn"]
    assert prepull_urn not in waits_for(result, result.one("kubernetes:helm.sh/v3:Release", "gitlab-chart")["urn"])
    assert not [resource["name"] for resource in result.resources if prepull_urn in resource["dependsOn"]]


def test_one_pod_pulls_so_that_the_cache_fetches_each_layer_once() -> None:
    # The mirror sends a request for a layer it is still fetching to the registry itself: pods on every
    # GitLab node pulling at once would download each image once per node.
    assert prepull()["inputs"]["spec"]["replicas"] == 1


def test_pulumi_does_not_wait_for_the_pulls() -> None:
    assert prepull()["inputs"]["metadata"]["annotations"] == {"pulumi.com/skipAwait": "true"}


def test_an_image_that_cannot_be_pulled_holds_back_no_other_pull() -> None:
    spec = pod(prepull())["spec"]
    # Init containers run one after the other: only the copy of busybox is one.
    assert [container["name"] for container in spec["initContainers"]] == ["copy-busybox"]
    assert len(spec["containers"]) == len(versions.GITLAB_CHART_IMAGES)


def test_every_pulled_image_runs_only_the_static_busybox() -> None:
    spec = pod(prepull())["spec"]
    assert spec["initContainers"][0]["image"] == versions.STATIC_BUSYBOX_IMAGE
    assert "-musl@" in versions.STATIC_BUSYBOX_IMAGE  # the statically linked build
    assert {container["command"][0] for container in spec["containers"]} == {f"{SHARED}/busybox"}


def test_the_prepull_pods_pass_the_restricted_pod_security_level() -> None:
    assert violations(pod(prepull()), "restricted") == []


def test_container_names_are_dns_labels_naming_the_image() -> None:
    assert container_name(3, "registry.gitlab.com/gitlab-org/build/cng/gitaly:v19.1.4") == "pull-3-gitaly"
    assert container_name(12, "docker.io/envoyproxy/envoy:distroless-v1.38.1") == "pull-12-envoy"
    assert container_name(1, "busybox:1.37.0-musl@sha256:" + "0" * 64) == "pull-1-busybox"


def test_without_the_image_cache_nothing_is_prepulled() -> None:
    # Through the cache, an image the GitLab nodes all pull crosses the internet once; without it, once per node.
    result = planned("phase2", imageCache="false")
    assert not [resource for resource in result.resources if "prepull" in resource["name"]]


def test_the_prepull_does_not_lengthen_phase2s_longest_chain() -> None:
    with_prepull, _ = longest_chain(planned("phase2"))
    without, _ = longest_chain(planned("phase2", imageCache="false"))
    assert with_prepull == without


def test_in_dev_the_prepull_waits_for_the_mirrors_to_join_kinds_network() -> None:
    result = planned("dev")
    prepull_urn = result.one(DEPLOYMENT, "gitlab-image-prepull-deployment")["urn"]
    assert result.one("command:local:Command", "kind-image-cache-nodes-joined")["urn"] in waits_for(result, prepull_urn)
