"""Whether the image cache served a bring-up's pulls: read at the end of each `up` of a platform that
runs an image cache (components/image_cache.py), kept beside the timings (cli/timings.py), and shown
by `up`'s summary and `blueprint verify`'s `bring_up`.

The signal is read-only and cheap: the repositories the cluster's pods run, per registry, against
what each registry's mirror holds, its `/v2/_catalog`. A pull-through registry lists the repositories
of its own storage, which holds what it fetched for a client (distribution registry/proxy/proxyregistry.go:
`Repositories` is the embedded registry's), in pages of at most `n`, the next named in a `Link` header
(registry/handlers/catalog.go). containerd asks the mirror first (the nodes' hosts.toml), so a
repository its mirror holds is one the mirror serves (one an earlier bring-up cached counts too: a
cheap signal, not a log of each pull); one it does not hold was pulled past it (the mirror down or
failing then). kind's own images (docker.io/kindest/...) are in the node image and never
pulled (kind pkg/build/nodeimage: the CNI and storage images it preloads).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.images import DOCKER_HUB, registry_of
from stacks import outputs

if TYPE_CHECKING:
    from cli.image_cache import DockerRun

FILE = "image-cache.json"
"""In the timings folder (cli/timings.py `folder`): the last `up`'s reading."""
SHOWN = 10
"""The repositories a mirror did not hold, named at most."""
PAGE = 100
"""Repositories asked per catalog page (the registry's own default; its maximum, `catalog.maxentries`, is 1000)."""
PAGES = 50
"""Pages read at most from one mirror: a cache of more than 5,000 repositories is said as unread."""
ASK_SECONDS = 5
"""curl's own limit on one request to a mirror (its `--max-time`): it ends in the node too, where the engine's
`exec` would leave it running if only the `exec` were stopped."""
EXEC_SECONDS = ASK_SECONDS + 3
"""The engine's `exec` of that curl, stopped (its process group) after this."""
PRELOADED = ("docker.io/kindest/",)
"""Repositories kind's node image holds already: its kindnetd, local-path-provisioner and -helper."""

Get = Callable[[str], tuple[int | None, Any, str]]
"""url -> (the HTTP status or None, the JSON body or None, the `Link` header or "" (or why there was no answer))."""


def repository(ref: str) -> str:
    """`<registry>/<repository>` of an image reference, without its tag or digest, as a registry names it:
    Docker Hub's official images under `library/` (distribution/reference normalize.go).
    """
    name = ref.split("@", 1)[0]
    registry = registry_of(name)
    first, slash, rest = name.partition("/")
    path = rest if slash and ("." in first or ":" in first or first == "localhost") else name
    last = path.rsplit("/", 1)
    last[-1] = last[-1].split(":", 1)[0]
    path = "/".join(last)
    if registry == DOCKER_HUB and "/" not in path:
        path = f"library/{path}"
    return f"{registry}/{path}"


def pod_images(said: str) -> list[str] | str:
    """Every image the pods of `kubectl get pods -A -o json` run (their init containers too), or why not."""
    try:
        pods = json.loads(said).get("items") or []
        return sorted(
            {
                str(container["image"])
                for pod in pods
                for key in ("containers", "initContainers")
                for container in (pod.get("spec") or {}).get(key) or []
                if container.get("image")
            }
        )
    except (ValueError, AttributeError, TypeError):
        return "kubectl's answer was not a pod list"


def catalog(address: str, get: Get) -> set[str] | str:
    """Every repository the mirror at `address` holds, page after page, or why it cannot be read."""
    found: set[str] = set()
    path = f"/v2/_catalog?n={PAGE}"
    for _ in range(PAGES):
        status, body, link = get(f"http://{address}{path}")
        if status != 200 or not isinstance(body, dict) or not isinstance(body.get("repositories"), list):
            return f"its /v2/_catalog did not answer ({link if status is None else f'HTTP {status}'})"
        found.update(str(name) for name in body["repositories"])
        if not (following := re.match(r"\s*<([^>]+)>\s*;\s*rel=\"?next\"?", link)):
            return found
        path = following[1] if following[1].startswith("/") else "/" + following[1].split("/", 3)[-1]
    return f"its catalog holds more than {PAGE * PAGES} repositories"


def reading(images: Iterable[str], mirrors: Mapping[str, str], get: Get) -> dict[str, Any]:
    """What the mirrors hold of the repositories `images` come from: `images` (pulled from a mirrored
    registry), `in_cache`, `not_in_cache` (the first SHOWN), `not_mirrored` (from a registry no
    mirror serves) and, when any, `unread` (a mirror whose catalog could not be read, with why).
    """
    wanted = sorted(name for name in {repository(ref) for ref in images} if not name.startswith(PRELOADED))
    from cli.verify.model import at_once

    held: dict[str, set[str]] = {}
    unread: list[str] = []
    registries = sorted({name.split("/", 1)[0] for name in wanted} & set(mirrors))
    # All at once: a mirror that does not answer costs its timeout once, not once per mirror.
    for registry, found in zip(registries, at_once(lambda registry: catalog(mirrors[registry], get), registries), strict=True):
        if isinstance(found, str):
            unread.append(f"{registry}: {found}")
        else:
            held[registry] = found
    mirrored = [name for name in wanted if name.split("/", 1)[0] in held]
    missing = [name for name in mirrored if name.split("/", 1)[1] not in held[name.split("/", 1)[0]]]
    return {
        "images": len(mirrored),
        "in_cache": len(mirrored) - len(missing),
        "not_in_cache": missing[:SHOWN],
        "not_mirrored": sum(1 for name in wanted if name.split("/", 1)[0] not in mirrors),
    } | ({"unread": unread} if unread else {})


def line(record: Mapping[str, Any]) -> str:
    """The record in one line, for `up`'s summary and verify's table."""
    said = f"image cache: its mirrors hold {record['in_cache']} of the {record['images']} repositories the pods pull through them"
    if record["not_in_cache"]:
        said += f" (pulled past them: {', '.join(record['not_in_cache'][:3])}{', ...' if len(record['not_in_cache']) > 3 else ''})"
    if record.get("unread"):
        said += f"; unread: {'; '.join(record['unread'])}"
    return said


def after_up(phase1: Mapping[str, Any], state_dir: Path, kubectl: Callable[[], tuple[int, str]], get: Get) -> str | None:
    """Read, record (the timings folder's FILE) and say whether the mirrors served the pulls; None, and
    no record, without an image cache (an existing cluster, or phase1 runs none). A record that cannot
    be written changes nothing of the up.
    """
    from cli.doctor.machine import first_line
    from cli.timings import folder

    target = folder(state_dir) / FILE
    mirrors = phase1.get(outputs.IMAGE_MIRRORS) or {}
    if outputs.on_existing(phase1) or not mirrors:
        with contextlib.suppress(OSError):  # no image cache now: no reading of one from before
            target.unlink(missing_ok=True)
        return None
    code, said = kubectl()
    images = pod_images(said) if code == 0 else f"kubectl could not list them ({first_line(said)[:200]})"
    record = reading(images, mirrors, get) if isinstance(images, list) else {**reading([], mirrors, get), "unread": [f"the pods: {images}"]}
    with contextlib.suppress(OSError):
        target.parent.mkdir(parents=True, exist_ok=True)
        written = target.with_name(f".{FILE}.{os.getpid()}")
        written.write_text(json.dumps(record, indent=1) + "\n")
        os.replace(written, target)
    return line(record)


def recorded(state_dir: Path) -> dict[str, Any] | None:
    """The last `up`'s reading, or None (none recorded, or not of this shape)."""
    from cli.timings import folder

    try:
        record = json.loads((folder(state_dir) / FILE).read_text())
    except (OSError, ValueError):
        return None
    counts = ("images", "in_cache", "not_mirrored")
    if not isinstance(record, dict) or any(type(record.get(key)) is not int for key in counts):
        return None
    if not isinstance(record.get("not_in_cache"), list):
        return None
    return record


def control_plane(cluster: str) -> str:
    """The node container of `cluster`'s control plane, as kind names it (kind pkg/cluster/internal/providers/common/namer.go):
    joined to the mirrors' network as every node is (components/scripts/image_cache_join.sh).
    """
    return f"{cluster}-control-plane"


def from_node(run: DockerRun, cluster: str) -> Get:
    """A `Get` that asks a mirror from a node of `cluster`, where containerd asks it: `docker exec <node> curl`
    (kind's node image has curl: kind images/base/Dockerfile), through `run`. Never from this machine: with
    Docker Desktop or a Podman machine the containers run in a VM, and their addresses do not route from
    the host (Docker Desktop docs, "Known limitations"). No proxy: a node's HTTP_PROXY (kind passes the
    host's on, pkg/cluster/internal/providers/docker/provision.go `getProxyEnv`) would answer for the mirror.
    """
    from cli.doctor.machine import first_line

    node = control_plane(cluster)

    def get(url: str) -> tuple[int | None, Any, str]:
        argv = ["curl", "--silent", "--show-error", "--include", "--noproxy", "*", "--max-time", str(ASK_SECONDS), url]
        code, said = run(["docker", "exec", node, *argv])
        # From curl's last status line (after any `100 Continue`): a warning the engine's CLI printed
        # on stderr may come first where the runner merges the streams.
        statuses = list(re.finditer(r"^HTTP/\S+ (\d{3})", said.replace("\r\n", "\n"), re.M))
        if code != 0 or not statuses:
            return None, None, f"{first_line(said)[:200] or f'exit {code}'} (asked from {node})"
        status = statuses[-1]
        head, _, body = status.string[status.start() :].partition("\n\n")
        links = [value.strip() for line in head.splitlines()[1:] for key, _, value in [line.partition(":")] if key.lower() == "link"]
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        return int(status[1]), parsed, links[0] if links else ""

    return get
