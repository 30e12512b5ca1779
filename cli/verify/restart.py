"""`blueprint verify --deep`'s check of OpenBao: its pod, evicted, comes back unsealed on its own (the
static seal unseals it at every start, with the key from its environment: components/openbao.py), and
how many seconds that took.

It changes something: OpenBao answers nothing for those seconds. So it runs `after` every other check
of the run, whose answers it would spoil, but the timed commit (gitlab.py `deep_pipeline_check`),
which reads nothing from OpenBao and runs beside it; and only with `--deep`, never in `up`'s tally. It
evicts rather than deletes, so that a PodDisruptionBudget the user put on OpenBao is obeyed (only the
Eviction API honours one: kubernetes.io docs, "Disruptions"); blueprint's own OpenBao is one replica
(standalone mode) with none (the chart makes one in HA mode alone: openbao-helm values
`server.ha.disruptionBudget`).
"""

from __future__ import annotations

import itertools
import json
import re
import tempfile
from typing import Any

from cli.doctor.machine import first_line
from cli.verify.checks import Platform, ready
from cli.verify.model import Verdict, failed, passed, skipped
from cli.verify.services import TIMEOUT as HTTP_SECONDS
from components.openbao import RELEASE
from providers.cluster_access import START_SECONDS

OPENBAO_RESTART = "OpenBao pod restart"
NAMESPACE, POD = "openbao", f"{RELEASE}-0"
RESTART_SECONDS = 180.0
"""How long the new pod may take to be Ready and unsealed: seconds on kind (no one types a key), a
minute or two when an existing cluster schedules it on a node that pulls the image first."""
EVERY = 2.0
KUBECTL_SECONDS = 20.0
"""Each kubectl call's own timeout: the read before, the eviction, each read while it waits."""
BACK_SECONDS = KUBECTL_SECONDS + START_SECONDS + HTTP_SECONDS
"""One look at the new pod at most: its read, then OpenBao asked through a port-forward that starts anew."""
TIMEOUT = 2 * KUBECTL_SECONDS + RESTART_SECONDS + BACK_SECONDS + 10
"""The check's own timeout, from its parts (the read and the eviction, the wait, a last look begun just
before the wait ends, and a margin): the check says its own why before the runner gives it up."""
TROUBLESHOOTING = "docs/guide/troubleshooting.md"


def _pod(platform: Platform) -> tuple[dict[str, Any] | None, str]:
    """(the pod's JSON, "") or (None, what kubectl said)."""
    code, said = platform.kubectl("--namespace", NAMESPACE, "get", "pod", POD, "-o", "json", timeout=KUBECTL_SECONDS)
    if code != 0:
        return None, first_line(said)
    try:
        pod = json.loads(said)
    except ValueError:
        return None, "kubectl's answer was not a pod"
    return (pod, "") if isinstance(pod, dict) else (None, "kubectl's answer was not a pod")


def _evict(platform: Platform) -> tuple[int, str]:
    """Ask the API server to evict the pod (policy/v1 Eviction, POSTed to the pod's `eviction` subresource)."""
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": POD, "namespace": NAMESPACE}}
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="blueprint-eviction-") as file:
        json.dump(body, file)
        file.flush()
        return platform.kubectl(
            "create", "--raw", f"/api/v1/namespaces/{NAMESPACE}/pods/{POD}/eviction", "-f", file.name, timeout=KUBECTL_SECONDS
        )


def _back(platform: Platform, old_uid: str) -> None:
    """Nothing once a new pod is Ready and OpenBao answers unsealed; `poll.NotYet` saying what is missing."""
    from cli.verify.services import _openbao_props
    from providers.openbao_api import OpenBao
    from providers.poll import NotYet

    pod, said = _pod(platform)
    if pod is None:
        raise NotYet(f"no {POD} yet ({said})")
    if (pod.get("metadata") or {}).get("uid") == old_uid:
        raise NotYet(f"the old {POD} is still there")
    if not ready(pod):
        raise NotYet(f"the new {POD} is not Ready ({(pod.get('status') or {}).get('phase', '?')})")
    try:
        seal = OpenBao(_openbao_props(platform)).seal_status()  # a new session: a port-forward finds the new pod
    except Exception as error:
        raise NotYet(f"OpenBao does not answer ({platform.secrets.masked(str(error))[:120]})") from None
    if not seal.get("initialized") or seal.get("sealed"):
        raise NotYet("OpenBao answers sealed" if seal.get("initialized") else "OpenBao answers not initialised")


def openbao_restart_check(platform: Platform) -> Verdict:
    """OpenBao's pod, evicted, is replaced by one that is Ready and unsealed within RESTART_SECONDS; the seconds it took."""
    from providers import poll

    logs = platform.kubectl_said("logs", POD, namespace=NAMESPACE)
    pod, said = _pod(platform)
    if pod is None:
        return failed(
            f"kubectl could not read {POD}: {said}", f"{platform.kubectl_said('get', 'pods', namespace=NAMESPACE)}; {TROUBLESHOOTING}"
        )
    old_uid = str((pod.get("metadata") or {}).get("uid"))
    platform.close()  # the run's OpenBao tokens, their checks all done (`after`): revoked while OpenBao answers
    code, said = _evict(platform)
    if code != 0:
        return _refused(platform, said)
    began, why = poll.CLOCK.now(), ""
    for pause in itertools.chain([0.0], poll.within(RESTART_SECONDS, EVERY)):
        poll.CLOCK.sleep(pause)
        try:
            _back(platform, old_uid)
        except poll.NotYet as not_yet:
            why = str(not_yet)
            continue
        return passed(f"{POD} came back Ready and unsealed {poll.CLOCK.now() - began:.0f} s after its eviction")
    return failed(
        f"{POD} did not come back unsealed within {RESTART_SECONDS:g} s of its eviction: {why}",
        f"{logs} says why (a seal key the server cannot read, its database); "
        f"{platform.kubectl_said('describe', 'pod', POD, namespace=NAMESPACE)}; {TROUBLESHOOTING}",
    )


BUDGET = re.compile(r"poddisruptionbudget|disruption budget", re.IGNORECASE)
"""The API server's refusals for a budget (pkg/registry/core/pod/storage/eviction.go): 429 "Cannot evict
pod as it would violate the pod's disruption budget.", 500 "This pod has more than one
PodDisruptionBudget, which the eviction subresource does not support."."""


def _refused(platform: Platform, said: str) -> Verdict:
    """The eviction refused: a budget the user set is a skip; the rest a failure saying what kubectl said it was."""
    line = first_line(said)
    if BUDGET.search(said):
        return skipped(f"not restarted: a PodDisruptionBudget forbids evicting {POD} (yours: blueprint's OpenBao has none): {line}")
    if "(TooManyRequests)" in said:  # API Priority and Fairness: the server is busy, nothing is wrong
        return failed(
            f"kubectl could not evict {POD}: the API server asked to try again later ({line})",
            "run `uv run blueprint verify --deep` again in a minute",
        )
    if "(Forbidden)" in said:
        return failed(
            f"kubectl could not evict {POD}: {line}",
            f"a Forbidden: your kubeconfig's user needs `create` on `pods/eviction` in namespace {NAMESPACE}; {TROUBLESHOOTING}",
        )
    return failed(
        f"kubectl could not evict {POD}: {line}", f"{platform.kubectl_said('get', 'pods', namespace=NAMESPACE)}; {TROUBLESHOOTING}"
    )
