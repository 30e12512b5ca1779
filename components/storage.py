"""Stable storage: every stateful volume of the platform at a fixed host path under the data folder (kind);
on an existing cluster, plain claims on its class, kept with preserveData (`Provisioned`: decisions.md, entry 52).

Pre-bound static PersistentVolumes, not a provisioner (docs/design/decisions.md, entry 9):

- each volume is a `hostPath` PV at `<node data path>/volumes/platform/<namespace>/<claim>`; every
  GitLab node mounts the same host folder, `<data folder>/volumes`, there, and the PV's node
  affinity sends its pod to one of them (no runner node mounts it: components/kind_cluster.py);
- the PV names the one claim it serves (`claimRef`), so the claim a chart or operator creates under
  a fixed name (`postgresql-cnpg-1`, `repo-data-gitlab-gitaly-0`, ...) binds to it, on this cluster or on a new
  one over the same folder;
- the PVs are in the non-default StorageClass `blueprint-static` (no provisioner), so nothing else
  lands on them and kind's `standard` stays the only default;
- `Retain`, always. Whether a destroy removes the data is `preserveData`'s, through the two folders
  this component claims before every PV and removes after them (`components/host_folder.py`):
  `<data folder>/platform` (host only) and `<data folder>/volumes/platform` (not `volumes` itself,
  a mount's source, which a wipe would remove under a running cluster).

Each volume's folder is its pod user's (`Volume.owner`), mode 0700, given away by a one-shot root
container when it is not yet: kubelet applies no fsGroup to hostPath volumes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.engine import DOCKER
from components.host_folder import HostFolderArgs, Subfolder, host_folder
from components.kind_cluster import NODE_LABEL_KEY, VOLUME_NODE_LABEL, VOLUMES_SUBDIR
from components.markers import DATA_LABEL, DATA_LABEL_VALUE

STORAGE_CLASS = "blueprint-static"
PLATFORM_SUBDIR = "platform"
"""The name of phase2's folders: `<data folder>/platform` and `<data folder>/volumes/platform`."""
VOLUME_MODE = "0700"
"""Every volume's folder: its pod's user alone."""


def folders_in(data_folder: str) -> tuple[str, str]:
    """phase2's two folders in the data folder `data_folder`: the platform's own (no node mounts it),
    and its volumes, inside the data folder's `volumes`, which every node mounts.
    """
    return f"{data_folder}/{PLATFORM_SUBDIR}", f"{data_folder}/{VOLUMES_SUBDIR}/{PLATFORM_SUBDIR}"


@dataclass(frozen=True, kw_only=True)
class Volume:
    namespace: str
    claim: str
    """Name of the PersistentVolumeClaim that will use the volume."""
    size: str
    owner: tuple[int, int]
    """(uid, gid) the volume's pod writes as: its folder is theirs, mode 0700."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.claim}"

    @property
    def folder(self) -> str:
        """Path relative to the volumes folder."""
        return f"{self.namespace}/{self.claim}"


@dataclass(frozen=True, kw_only=True)
class Provisioned:
    """Volumes a StorageClass of an existing cluster provisions: plain claims, no host path."""

    storage_class: str
    """The class every claim names; "": the cluster's default (the claim names none)."""
    keep: bool
    """preserveData: each claim, and each namespace holding one, stays on destroy."""

    @staticmethod
    def of(storage_class: object, keep: bool) -> Provisioned | None:
        """From phase1's outputs: its STORAGE_CLASS, which only an existing cluster's has (None: kind's), and preserveData."""
        return None if storage_class is None else Provisioned(storage_class=str(storage_class), keep=keep)

    def kept(self) -> pulumi.ResourceOptions:
        """The options of a claim or of a namespace holding one: left in the cluster by a destroy with keep."""
        return pulumi.ResourceOptions(retain_on_delete=self.keep)

    def namespace_labels(self, labels: dict[str, str]) -> dict[str, str]:
        """A namespace's `labels`, with the mark of one that holds the platform's data."""
        return {**labels, DATA_LABEL: DATA_LABEL_VALUE}


def provisioned_claim_spec(provisioned: Provisioned, volume: Volume) -> dict[str, Any]:
    """The spec of `volume`'s claim on an existing cluster: the class provisions it (no volumeName)."""
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"]}
    if provisioned.storage_class:
        spec["storageClassName"] = provisioned.storage_class
    return {**spec, "resources": {"requests": {"storage": volume.size}}}


@dataclass(frozen=True, kw_only=True)
class StorageArgs:
    host_path: str
    """Absolute host path of the platform folder (inside the data folder; no node mounts it)."""
    volumes_host_path: str
    """Absolute host path of the volumes folder (inside the data folder's `volumes`, which the nodes mount)."""
    volumes_node_path: str
    """Where the nodes see the volumes folder."""
    owner: str
    """`<project>/<stack>@<checkout id>` that owns both folders (`stacks.config.paths.folder_owner`)."""
    data_folder_owner: str
    """The owner of the data folder both folders are in (phase1's; in `dev`, dev's own): they are
    claimed only inside a folder it claimed."""
    preserve: bool
    """Keep the data on destroy."""
    wipe_image: str
    """An image already on the machine (the kind node image), for removing pod-owned files."""
    engine: str = DOCKER
    """The container engine `wipe_image` runs on (components/engine.py)."""
    layout: str
    """The layout this checkout leaves the stack's data in, which both folders' claims record
    (components/host_folder.py `HostFolderArgs.layout`)."""
    volumes: tuple[Volume, ...]
    stack_file: str
    """The stack file whose `blueprint:preserveData` both folders' deletes read again (`HostFolderArgs.stack_file`)."""
    inside: tuple[pulumi.Resource, ...] = ()
    """The claim of the folder both folders are inside, when it is in the same graph (`dev`): they
    are claimed after it, and released before it."""
    provisioned: Provisioned | None = None
    """On an existing cluster, the class that provisions the volumes: then only the platform folder
    is made here (the volumes' paths are unused); None: kind's static volumes."""

    def __post_init__(self) -> None:
        keys = [volume.key for volume in self.volumes]
        if len(set(keys)) != len(keys):
            raise ValueError(f"two volumes for one claim: {sorted(keys)}")


def persistent_volume(args: StorageArgs, volume: Volume) -> dict[str, Any]:
    """The PV spec that serves exactly `volume`'s claim from its host folder."""
    return {
        "capacity": {"storage": volume.size},
        "accessModes": ["ReadWriteOnce"],
        "persistentVolumeReclaimPolicy": "Retain",
        "storageClassName": STORAGE_CLASS,
        "claimRef": {"namespace": volume.namespace, "name": volume.claim},
        "hostPath": {"path": f"{args.volumes_node_path}/{volume.folder}", "type": "Directory"},
        # Only the nodes that mount the volumes folder have it: the scheduler places the pod there.
        "nodeAffinity": {
            "required": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": NODE_LABEL_KEY, "operator": "In", "values": [VOLUME_NODE_LABEL]}]}]
            }
        },
    }


def as_input(spec: object) -> Any:
    """A spec built as plain camelCase dicts and lists, passed where the SDK types a TypedDict:
    the wire format is the same, and the plan shows exactly this value.
    """
    return spec


def volume_name(volume: Volume) -> str:
    return f"blueprint-{volume.namespace}-{volume.claim}"


def bound_claim(
    name: str,
    volume: Volume,
    volume_resource: pulumi.Resource | None,
    namespace: pulumi.Input[str],
    opts: pulumi.ResourceOptions,
    provisioned: Provisioned | None = None,
) -> k8s.core.v1.PersistentVolumeClaim:
    """A claim, made by a component itself, that binds to `volume`'s PV (and waits for it); on an
    existing cluster (`provisioned`), one its class provisions, kept by a destroy with preserveData.
    """
    if provisioned is not None:
        return k8s.core.v1.PersistentVolumeClaim(
            name,
            metadata=k8s.meta.v1.ObjectMetaArgs(name=volume.claim, namespace=namespace, labels={DATA_LABEL: DATA_LABEL_VALUE}),
            spec=as_input(provisioned_claim_spec(provisioned, volume)),
            opts=pulumi.ResourceOptions.merge(opts, provisioned.kept()),
        )
    if volume_resource is None:
        raise ValueError(f"{volume.key}: a static volume's claim needs its PV")
    return k8s.core.v1.PersistentVolumeClaim(
        name,
        metadata=k8s.meta.v1.ObjectMetaArgs(name=volume.claim, namespace=namespace),
        spec=as_input(
            {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": STORAGE_CLASS,
                "volumeName": volume_name(volume),
                "resources": {"requests": {"storage": volume.size}},
            }
        ),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[volume_resource])),
    )


def data_namespace(
    name: str, namespace: str, labels: dict[str, str], provisioned: Provisioned | None, opts: pulumi.ResourceOptions
) -> k8s.core.v1.Namespace:
    """The namespace of a volume's claim: on an existing cluster, marked and kept with the claim
    (a namespace's delete would delete every claim in it); on kind, a plain one (the data is on the host).
    """
    if provisioned is None:
        return k8s.core.v1.Namespace(name, metadata={"name": namespace, "labels": labels}, opts=opts)
    return k8s.core.v1.Namespace(
        name,
        metadata={"name": namespace, "labels": provisioned.namespace_labels(labels)},
        opts=pulumi.ResourceOptions.merge(opts, provisioned.kept()),
    )


class Storage(pulumi.ComponentResource):
    """The platform folder, the volumes folder, the `blueprint-static` StorageClass and one PV per volume."""

    folder: pulumi.Resource
    """The command that owns the platform folder: whatever writes under it depends on it."""
    volumes_folder: pulumi.Resource
    """The command that owns the volumes folder and gives each volume's folder to its pod's user."""
    volumes: dict[str, k8s.core.v1.PersistentVolume]
    """The PVs by `<namespace>/<claim>`: what uses a volume depends on its PV. Claims name the
    StorageClass STORAGE_CLASS. None on an existing cluster (`provisioned`)."""
    provisioned: Provisioned | None
    """On an existing cluster, the class that provisions every volume; None: kind's static volumes."""

    def __init__(self, name: str, args: StorageArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("blueprint:index:Storage", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.provisioned = args.provisioned
        self.folder = host_folder(
            f"{name}-platform-folder",
            HostFolderArgs(
                path=args.host_path,
                owner=args.owner,
                preserve=args.preserve,
                wipe_image=args.wipe_image,
                engine=args.engine,
                layout=args.layout,
                stack_file=args.stack_file,
                parent_owner=args.data_folder_owner,
            ),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=list(args.inside))),
        )
        if args.provisioned is not None:
            # Nothing of the volumes on this machine: the cluster's class provisions each claim.
            self.volumes_folder, self.volumes = self.folder, {}
            self.register_outputs({})
            return
        self.volumes_folder = host_folder(
            f"{name}-volumes-folder",
            HostFolderArgs(
                path=args.volumes_host_path,
                owner=args.owner,
                preserve=args.preserve,
                wipe_image=args.wipe_image,
                engine=args.engine,
                layout=args.layout,
                stack_file=args.stack_file,
                parent_owner=args.data_folder_owner,
                subfolders=tuple(Subfolder(path=volume.folder, mode=VOLUME_MODE, owner=volume.owner) for volume in args.volumes),
            ),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=list(args.inside))),
        )
        storage_class = k8s.storage.v1.StorageClass(
            f"{name}-class",
            metadata={"name": STORAGE_CLASS},
            provisioner="kubernetes.io/no-provisioner",
            reclaim_policy="Retain",
            volume_binding_mode="Immediate",
            opts=child,
        )
        after_folder = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[self.volumes_folder, storage_class]))
        self.volumes = {
            volume.key: k8s.core.v1.PersistentVolume(
                f"{name}-{volume.namespace}-{volume.claim}",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=volume_name(volume), labels={"blueprint/volume": f"{volume.namespace}.{volume.claim}"}
                ),
                spec=as_input(persistent_volume(args, volume)),
                opts=after_folder,
            )
            for volume in args.volumes
        }
        self.register_outputs({})

    def pv(self, volume: Volume) -> tuple[k8s.core.v1.PersistentVolume, ...]:
        """`volume`'s PV, which what uses the volume waits for; none on an existing cluster."""
        return tuple(self.volumes[key] for key in [volume.key] if key in self.volumes)
