"""Every pinned version the platform deploys, one line each, with where it comes from.

Bump a pin here and nowhere else; the plan (`blueprint plan <stack>`) shows what it changes.
"""

# renovate: datasource=github-releases depName=kubernetes-sigs/kind
KIND_VERSION = "v0.31.0"
# The node image kind v0.31.0 itself defaults to (pkg/apis/config/defaults/image.go at v0.31.0):
# Kubernetes 1.35, inside GitLab 19's tested range (1.33-1.35); images are built per kind release.
# renovate: datasource=docker depName=kindest/node
KIND_NODE_IMAGE = "kindest/node:v1.35.0@sha256:452d707d4862f52530247495d180205e029056831160e22870e37e3f6c1ac31f"

# renovate: datasource=helm registryUrl=https://kubernetes-sigs.github.io/headlamp/ depName=headlamp
HEADLAMP_CHART_VERSION = "0.45.0"
HEADLAMP_CHART_REPO = "https://kubernetes-sigs.github.io/headlamp/"
