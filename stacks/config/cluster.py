"""Which cluster the platform goes onto (`blueprint:cluster`), and the keys that belong to each kind.

`kind`: a kind cluster blueprint makes on this machine, with the keys it has always had. `existing`:
the cluster of `blueprint:kubeContext`, which blueprint reads and never makes nor deletes, with keys
of its own (the StorageClass, the gateway's exposure, node selectors). A key that belongs to the
other kind is refused, naming it (docs/design/decisions.md, the entry on `blueprint:cluster`), so
a value the program would ignore never looks as if it counted. `dev` stays kind's.
"""

from __future__ import annotations

import ipaddress
import json
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from components.engine import ENGINES  # the one list: what kind and blueprint run on
from stacks.config import NAMESPACE
from stacks.config.names import is_dns_label, is_dns_subdomain

if TYPE_CHECKING:
    from stacks.config.phases import _Checker

KIND = "kind"
EXISTING = "existing"
CLUSTERS = (KIND, EXISTING)
LOAD_BALANCER = "loadBalancer"
NODE_PORT = "nodePort"
EXPOSURES = (LOAD_BALANCER, NODE_PORT)

EXISTING_ONLY = (
    "kubeContext", "storageClass", "exposure", "gitlabNodeSelector", "jobNodeSelector", "gatewayServiceAnnotations",
    "loadBalancerSourceRanges", "loadBalancerClass", "tlsCertificate",
)  # fmt: skip
"""Keys that mean something on an existing cluster alone: refused with kind when not empty."""
KIND_ONLY = {
    "clusterName": "this key names the kind cluster blueprint makes",
    "gitlabNodes": "this key counts the kind nodes blueprint makes for GitLab",
    "runnerNodes": "this key counts the kind nodes blueprint makes for CI jobs",
    "httpPort": "kind publishes the gateway on this port of 127.0.0.1",
    "httpsPort": "kind publishes the gateway on this port of 127.0.0.1",
    "sshPort": "kind publishes GitLab's SSH on this port of 127.0.0.1",
    "openbaoPort": "kind publishes OpenBao on this port of 127.0.0.1",
    "apiServerPort": "kind publishes its API server on this port of 127.0.0.1",
    "headlamp": "phase1 installs Headlamp on the kind cluster it makes alone (on an existing cluster it installs nothing)",
    "headlampAdmin": "this key is Headlamp's, which phase1 installs on the kind cluster it makes alone",
    "imageCacheDir": "the image cache runs beside a kind cluster on this machine (an existing cluster's nodes pull on their own)",
    "containerEngine": "kind runs on this engine (an existing cluster needs none on this machine)",
}
"""Keys that mean something on kind alone, and why: refused with existing when not their default.
`imageCache` is kind's too, but its default is on: with existing it is ignored, whatever it says
(there is no image cache)."""

_LABEL_SYNTAX = "at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
# Label syntax: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set


@dataclass(frozen=True, kw_only=True)
class ClusterConfig:
    """Which cluster phase1 describes, and how the platform sits on an existing one."""

    cluster: str = KIND
    """KIND or EXISTING."""
    kube_context: str = ""
    """The kubeconfig context of the existing cluster ("" with kind)."""
    storage_class: str = ""
    """The StorageClass of the platform's claims on an existing cluster; "" is the cluster's default."""
    exposure: str = ""
    """LOAD_BALANCER or NODE_PORT on an existing cluster; "" with kind."""
    gitlab_node_selector: Mapping[str, str] = field(default_factory=dict)
    """Node labels GitLab's pods are pinned to on an existing cluster; empty: no selector."""
    job_node_selector: Mapping[str, str] = field(default_factory=dict)
    """Node labels CI jobs and the Runners are pinned to on an existing cluster; empty: no selector."""
    container_engine: str = ""
    """The engine kind runs on, one of ENGINES, or "" to detect one (kind only)."""
    gateway_service: Mapping[str, object] = field(default_factory=dict)
    """What the config adds to the gateway's Service on an existing cluster, as Envoy Gateway's
    KubernetesServiceSpec names it (`gateway_service_fields`); empty: nothing."""
    tls_certificate: str = ""
    """`<namespace>/<name>` of the kubernetes.io/tls Secret the gateway serves on an existing cluster;
    "" is the platform CA's wildcard certificate."""

    @property
    def existing(self) -> bool:
        return self.cluster == EXISTING


def label_key_problem(key: str) -> str | None:
    """Why `key` is no label key (an optional DNS-subdomain prefix and '/', then a name of at most 63), or None."""
    prefix, slash, name = key.rpartition("/")
    if slash and not is_dns_subdomain(prefix):
        return f"its prefix {prefix!r} is not a lowercase DNS subdomain of at most 253 characters"
    if len(name) > 63 or not _LABEL_NAME.fullmatch(name):
        return f"{name!r} is not a label name ({_LABEL_SYNTAX})"
    return None


def parse_selector(text: str) -> tuple[dict[str, str], str | None]:
    """The node labels `key=value,key=value` names, and why the text is not such a list (None when it is)."""
    selector: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, equals, value = item.partition("=")
        if not equals:
            return {}, f"{item!r} is not key=value"
        if problem := label_key_problem(key):
            return {}, f"the label key {key!r} is not valid: {problem}"
        if value and (len(value) > 63 or not _LABEL_NAME.fullmatch(value)):
            return (
                {},
                f"the value of {key} is not a label value ({_LABEL_SYNTAX})",
            )
        if key in selector:
            return {}, f"{key} is given twice"
        selector[key] = value
    return selector, None


def _selector_problem(text: str) -> str | None:
    problem = parse_selector(text)[1]
    return f"expected node labels as key=value,key=value (empty: any node): {problem}" if problem else None


def _storage_class_problem(name: str) -> str | None:
    if name and not is_dns_subdomain(name):
        return (
            "expected a StorageClass's name (a lowercase DNS subdomain: `kubectl get storageclass` lists them), "
            "or empty for the cluster's default"
        )
    return None


def parse_annotations(text: str) -> tuple[dict[str, str], str | None]:
    """The annotations a JSON object of strings names ("" is none), and why the text is not one (None when it is).
    JSON, not key=value: cloud annotations' values hold commas (AWS's subnet and security-group lists).
    """
    if not text.strip():
        return {}, None
    expected = 'expected a JSON object of annotation keys to strings, such as {"networking.gke.io/load-balancer-type": "Internal"}'
    try:
        parsed = json.loads(text)
    except ValueError:
        return {}, f"{expected} (empty: none); it is not JSON"
    if not isinstance(parsed, dict) or not all(isinstance(value, str) for value in parsed.values()):
        return {}, f"{expected} (empty: none)"
    for key in parsed:
        # Label keys' syntax, case aside: apimachinery's ValidateAnnotations checks IsQualifiedName(strings.ToLower(key)).
        if problem := label_key_problem(key.lower()):
            return {}, f"the annotation key {key!r} is not valid: {problem}"
    return dict(parsed), None


def parse_source_ranges(text: str) -> tuple[tuple[str, ...], str | None]:
    """The CIDRs `cidr,cidr` names ("" is none), and why the text is not such a list (None when it is)."""
    ranges = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        try:
            if "/" not in item:  # the API server takes a CIDR alone (core/v1 validation of loadBalancerSourceRanges)
                single = ipaddress.ip_address(item)
                return (), f"{item!r} is not a CIDR: give its prefix length, such as {single}/{single.max_prefixlen}"
            ranges.append(str(ipaddress.ip_network(item, strict=True)))
        except ValueError as error:
            host_bits = "has host bits set" in str(error)
            return (), f"{item!r} is not a CIDR" + (f" (did you mean {ipaddress.ip_network(item, strict=False)}?)" if host_bits else "")
    return tuple(ranges), None


def _source_ranges_problem(text: str) -> str | None:
    problem = parse_source_ranges(text)[1]
    return f"expected the CIDRs that may reach the load balancer, as cidr,cidr (empty: any address): {problem}" if problem else None


def _annotations_problem(text: str) -> str | None:
    return parse_annotations(text)[1]


def _load_balancer_class_problem(name: str) -> str | None:
    # A label-style key, as the API server checks spec.loadBalancerClass (core/v1 validation, ValidateQualifiedName).
    if name and (problem := label_key_problem(name)):
        return f"expected a load balancer class such as service.k8s.aws/nlb (empty: the cluster's default): {problem}"
    return None


def gateway_service_fields(annotations: Mapping[str, str], source_ranges: tuple[str, ...], class_name: str) -> dict[str, object]:
    """The fields of Envoy Gateway's KubernetesServiceSpec (v1.8.1, api/v1alpha1/shared_types.go) that
    these set: `annotations`, `loadBalancerSourceRanges`, `loadBalancerClass`, each only when given.
    """
    fields: dict[str, object] = {}
    if annotations:
        fields["annotations"] = dict(annotations)
    if source_ranges:
        fields["loadBalancerSourceRanges"] = list(source_ranges)
    if class_name:
        fields["loadBalancerClass"] = class_name
    return fields


def _tls_certificate_problem(ref: str) -> str | None:
    """A Secret's `<namespace>/<name>` (a DNS label, then a DNS subdomain), in a namespace of the user's."""
    if not ref:
        return None
    namespace, slash, name = ref.partition("/")
    if not (slash and is_dns_label(namespace) and is_dns_subdomain(name)):
        return (
            "expected <namespace>/<name> of a kubernetes.io/tls Secret you made, lowercase "
            "(`kubectl get secrets -A --field-selector type=kubernetes.io/tls` lists them), or empty for the platform CA's certificate"
        )
    from stacks.phase2 import namespaces  # here: phase2's program is heavy, and only this value needs it

    if namespace in namespaces():
        return (
            f"the namespace {namespace} is blueprint's own: phase2 makes it, and a destroy deletes it, and the Secret with it; "
            "keep the certificate in a namespace of yours"
        )
    return None


CONTEXT_MOST = 512
"""The longest `blueprint:kubeContext`: well above the names EKS, GKE and AKS write (an ARN is under 200)."""


def _context_problem(name: str) -> str | None:
    """A name as the kubeconfig spells it: no pasted spaces around it (a late "context not found"), no
    control or format character (U+202E would make every message that shows it lie), not a page of text.
    """
    expected = "expected a context's name from your kubeconfig (`kubectl config get-contexts` lists them)"
    if len(name) > CONTEXT_MOST:
        return f"{expected}, at most {CONTEXT_MOST} characters"
    if any(unicodedata.category(char) in ("Cc", "Cf") for char in name):
        return f"{expected}, with no control or format characters"
    if name != name.strip():
        return f"{expected}, with no spaces around it"
    return None


def _one_of(choices: tuple[str, ...], empty: str = "") -> Callable[[str], str | None]:
    def problem(value: str) -> str | None:
        if value in choices or (empty and not value):
            return None
        return f"expected {' or '.join(choices)}" + (f" (empty: {empty})" if empty else "")

    return problem


def cluster_config(check: _Checker) -> ClusterConfig:
    """The cluster keys read through `check`, which collects what is wrong with each value (what one
    key says of another: `across`, once every value of the phase is checked).
    """
    cluster = check.text("cluster", _one_of(CLUSTERS), example=EXISTING)
    context = check.text("kubeContext", _context_problem, example="<context>")
    storage_class = check.text("storageClass", _storage_class_problem, example="")
    exposure = check.text("exposure", _one_of(EXPOSURES, f"{LOAD_BALANCER} with existing"), example=LOAD_BALANCER)
    gitlab_selector = check.text("gitlabNodeSelector", _selector_problem, example="<label>=<value>")
    job_selector = check.text("jobNodeSelector", _selector_problem, example="<label>=<value>")
    engine = check.text("containerEngine", _one_of(ENGINES, "detect, Docker first"), example="podman")
    annotations = check.text("gatewayServiceAnnotations", _annotations_problem, example='{"<annotation>": "<value>"}')
    source_ranges = check.text("loadBalancerSourceRanges", _source_ranges_problem, example="<cidr>,<cidr>")
    class_name = check.text("loadBalancerClass", _load_balancer_class_problem, example="<class>")
    tls_certificate = check.text("tlsCertificate", _tls_certificate_problem, example="certificates/wildcard-tls")
    existing = cluster == EXISTING
    service = gateway_service_fields(parse_annotations(annotations)[0], parse_source_ranges(source_ranges)[0], class_name)
    return ClusterConfig(
        cluster=cluster if cluster in CLUSTERS else KIND,
        kube_context=context if existing else "",
        storage_class=storage_class if existing else "",
        exposure=(exposure or LOAD_BALANCER) if existing else "",
        gitlab_node_selector=parse_selector(gitlab_selector)[0] if existing else {},
        job_node_selector=parse_selector(job_selector)[0] if existing else {},
        container_engine="" if existing else engine,
        gateway_service=service if existing else {},
        tls_certificate=tls_certificate if existing else "",
    )


def across(check: _Checker) -> None:
    """What one key says of another: a key of the other kind of cluster, no context, `dev` on an
    existing one; none of it of a key refused already, nor of a secret's stand-in.
    """
    from stacks.config.schema import default_string  # here: stacks.outputs imports this module, and schema imports it

    cluster = check.raw.get("cluster", default_string("cluster"))
    if cluster not in CLUSTERS or "cluster" in check.stand_ins:
        return
    given = {key: check.raw.get(key, default_string(key)) for key in (*EXISTING_ONLY, *KIND_ONLY)}
    # A secret's stand-in is all there is of it outside the program; a refused value is said once.
    unchecked = {*check.stand_ins, *(key for key in given if any(error.startswith(f"{NAMESPACE}:{key} = ") for error in check.errors))}
    if cluster == KIND:
        for key in EXISTING_ONLY:
            if given[key] and key not in unchecked:
                why = f"it is for an existing cluster, and blueprint:cluster is {KIND}: remove it, or set blueprint:cluster to {EXISTING}"
                check.fail(key, given[key], why, "")
        return
    if check.stack == "dev":
        check.fail(
            "cluster",
            cluster,
            "the dev stack runs every phase on a kind cluster of its own and stays kind's; bring the platform onto an "
            "existing cluster with the phase1, phase2 and phase3 stacks (`uv run blueprint up`)",
            KIND,
        )
    if not given["kubeContext"] and "kubeContext" not in unchecked:
        why = (
            f"blueprint:cluster is {EXISTING}, which goes onto the cluster of a context in your kubeconfig: name it "
            "(`kubectl config get-contexts` lists them)"
        )
        check.fail("kubeContext", "", why, "<context>", with_key="cluster")
    for key, what in KIND_ONLY.items():
        if given[key] != default_string(key) and key not in unchecked:
            check.fail(key, given[key], f"blueprint:cluster is {EXISTING}, and {what}: remove it", default_string(key))
    exposure = check.raw.get("exposure", default_string("exposure"))
    for key in ("loadBalancerSourceRanges", "loadBalancerClass"):
        # Envoy Gateway sets them on a LoadBalancer alone (internal/infrastructure/kubernetes/resource ExpectedServiceSpec).
        if exposure == NODE_PORT and given[key] and key not in unchecked and "exposure" not in unchecked:
            why = (
                f"it is for a load balancer, and blueprint:exposure is {NODE_PORT}: remove it, or set blueprint:exposure to {LOAD_BALANCER}"
            )
            check.fail(key, given[key], why, "", with_key="exposure")
