"""The checks of the data tier: the CloudNativePG cluster healthy with its databases and roles (as
kubectl reads its `Cluster` and `Database` objects), Valkey answering AUTH with the password
`blueprint secrets` lists, and MinIO holding every bucket, each consumer's user reaching its own and
refused listing, reading and writing the others' (HeadBucket, HeadObject, CopyObject from a key that
does not exist, signed by cli/verify/s3sign.py: nothing written). Valkey and
MinIO through a port-forward to their Service, as providers/cluster_access.py makes them for an
existing cluster, on kind too.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import json
import socket
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cli.doctor.machine import first_line
from cli.verify import s3sign
from cli.verify.checks import UP, Platform
from cli.verify.model import Verdict, failed, passed
from cli.verify.services import TIMEOUT, kv_read
from stacks import outputs

if TYPE_CHECKING:
    from providers.cluster_access import Target

POSTGRES, VALKEY = "PostgreSQL (CloudNativePG)", "Valkey AUTH"
POSTGRES_NAMESPACE = "postgres"
"""Where phase2 puts the CloudNativePG cluster (stacks/phase2.py POSTGRES_VOLUME)."""
HEALTHY = "Cluster in healthy state"
"""CloudNativePG's phase of a cluster with nothing pending (api/v1/cluster_types.go, PhaseHealthy)."""
RECONCILED = "reconciled"
"""A managed role that matches its spec (api/v1/cluster_types.go, RoleStatusReconciled)."""
VALKEY_PORT = 6379


def postgres_check(platform: Platform) -> Verdict:
    """The `Cluster` is healthy, its managed roles reconciled, and each `Database` applied."""
    from components import postgres as pg

    kinds = "clusters.postgresql.cnpg.io,databases.postgresql.cnpg.io"
    code, said = platform.kubectl("--namespace", POSTGRES_NAMESPACE, "get", kinds, "-o", "json")
    fix = f"{platform.kubectl_said('describe', 'cluster', pg.CLUSTER, namespace=POSTGRES_NAMESPACE)}; `{UP} --phase 2`"
    if code != 0:
        return failed(f"kubectl could not read the cluster: {first_line(said)}", fix)
    try:
        items = json.loads(said).get("items") or []
    except (ValueError, AttributeError):
        return failed("kubectl's answer was not a list", fix)
    cluster = next((item for item in items if item.get("kind") == "Cluster" and item["metadata"].get("name") == pg.CLUSTER), None)
    if cluster is None:
        return failed(f"no Cluster {pg.CLUSTER} in namespace {POSTGRES_NAMESPACE}", f"`{UP} --phase 2`")
    status: dict[str, Any] = cluster.get("status") or {}
    wrong = [] if status.get("phase") == HEALTHY else [f"phase {status.get('phase')!r}"]
    reconciled = ((status.get("managedRolesStatus") or {}).get("byStatus") or {}).get(RECONCILED) or []
    wrong += [f"role {role} not reconciled" for role in (pg.OPENBAO_ROLE,) if role not in reconciled]
    applied = {
        (item.get("spec") or {}).get("name")
        for item in items
        if item.get("kind") == "Database" and (item.get("status") or {}).get("applied")
    }
    wrong += [f"database {name} not applied" for name in (pg.GITLAB_DATABASE, pg.OPENBAO_DATABASE) if name not in applied]
    if wrong:
        return failed("; ".join(wrong), fix)
    return passed(f"healthy; databases {pg.GITLAB_DATABASE}, {pg.OPENBAO_DATABASE}; role {pg.OPENBAO_ROLE} reconciled")


def _kv_entries(platform: Platform, names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The KV entry holding each credential of `names` (credentials.py's names), by name ({} where
    OpenBao holds none): services.py `kv_read`. The caller registers the values that are secret
    (`_kv_secrets`): an entry also holds names, which masking would hide wherever they appear.
    """
    from credentials import PLATFORM

    paths = {credential.name: str(credential.path) for credential in PLATFORM if credential.name in names}
    read, _ = kv_read(platform, paths.values())
    return {name: read.get(path, {}) for name, path in paths.items()}


def _kv_secrets(platform: Platform, names: Sequence[str]) -> dict[str, str]:
    """The value of each credential of `names` in its KV entry ("" when it has none), registered as a secret of the run."""
    from credentials import PLATFORM

    keys = {credential.name: credential.key for credential in PLATFORM if credential.name in names}
    return {name: platform.secrets.add(str(entry.get(keys[name], ""))) for name, entry in _kv_entries(platform, names).items()}


def _service(platform: Platform, host: str, port: int) -> Target:
    """Port `port` of the Service whose name in the cluster is `host` (<service>.<namespace>.svc.cluster.local)."""
    from providers.cluster_access import Target

    service, namespace = (host.split(".") + [""])[:2]
    return Target(context=platform.context, namespace=namespace, service=service, port=port)


@contextlib.contextmanager
def _forward(platform: Platform, target: Target) -> Iterator[int]:
    """The local port of a port-forward to `target` (the platform's, or kubectl's own, which must start
    within TIMEOUT: kubectl that hangs on an API server that does not answer is said in seconds).
    """
    from providers.cluster_access import forwarded

    with (platform.forward or functools.partial(forwarded, start_seconds=TIMEOUT))(target) as port:
        yield port


def _auth(port: int, password: str) -> str:
    """Valkey's first answer line to `AUTH <password>` (RESP: an array of two bulk strings)."""
    word = password.encode()
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as connection:
        connection.sendall(b"*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n" % (len(word), word))
        return connection.recv(512).decode(errors="replace").split("\r\n", 1)[0]


def valkey_check(platform: Platform) -> Verdict:
    """Valkey answers AUTH with the recorded password, through a port-forward to its Service."""
    target = _service(platform, str(platform.of("phase2").get(outputs.REDIS_HOST)), VALKEY_PORT)
    password = _kv_secrets(platform, ["redis-password"])["redis-password"]
    if not password:
        return failed("OpenBao holds no Valkey password (secret/redis)", f"`{UP} --phase 2` writes it again")
    with _forward(platform, target) as port:
        said = platform.secrets.masked(_auth(port, password))
    if said != "+OK":
        return failed(
            f"Valkey refused the recorded password: {said[:120]}",
            f"{platform.kubectl_said('logs', f'deploy/{target.service}', namespace=target.namespace)}; `{UP} --phase 2`",
        )
    return passed(f"{target.service}.{target.namespace} accepts the recorded password")


MINIO_BUCKETS, MINIO_USERS = "MinIO buckets", "MinIO users"
S3_REGION = "us-east-1"
"""The region the requests are signed for. MinIO takes any while none is configured, as blueprint
leaves it (minio cmd/signature-v4-utils.go `isValidRegion`)."""
REACHED, DENIED, MISSING = "reached", "AccessDenied", "NoSuchBucket"
"""What a request got: what it asked (2xx), or MinIO's error code: for a HEAD, which has no body, in its
`x-minio-error-code` header (cmd/api-response.go `writeErrorResponseHeadersOnly`, MinIO since 2023);
otherwise in S3's XML error. MinIO checks the signature, then the user's policy, and only then looks
for the bucket or the object (see PROBES): an answer past AccessDenied means the policy let the user ask."""
REFUSED = frozenset({DENIED, "SignatureDoesNotMatch", "InvalidAccessKeyId"})
"""A key MinIO refuses: its policy, or the key itself (cmd/api-errors.go, each HTTP 403)."""
LIST, READ, WRITE = "HeadBucket", "HeadObject", "CopyObject"
PROBES = (LIST, READ, WRITE)
"""What `minio_users_check` asks on each bucket of another user, none of which writes anything. A
HeadBucket: MinIO authorises s3:ListBucket (cmd/bucket-handlers.go `HeadBucketHandler`). A HeadObject
of a key that does not exist: s3:GetObject, authorised after the lookup but before its NoSuchKey is
answered (cmd/object-handlers.go `headObjectHandler`: `authenticateRequest`, `getObjectInfo`,
`authorizeRequest`). A CopyObject into that bucket from a key of the user's own that does not exist:
s3:PutObject on the destination first, s3:GetObject on the source next (its own bucket: allowed), and
only then the source is read: NoSuchKey, nothing to write (`CopyObjectHandler`)."""


OPEN = frozenset({REACHED, "NoSuchKey", MISSING})
"""An answer past MinIO's policy: the request was let through (`minio_users_check`'s hole)."""
SKEW = datetime.timedelta(minutes=15)
"""How far a request's date may be from MinIO's clock (cmd/auth-handler.go `globalMaxSkewTime`)."""
CLOCK_FIX = (
    "set the container VM's clock: restart Docker Desktop, or `podman machine ssh sudo hwclock -s` "
    "(a VM's clock drifts while the laptop sleeps)"
)


def _now() -> datetime.datetime:
    """The clock of the machine blueprint runs on, which dates each request."""
    return datetime.datetime.now(datetime.UTC)


class _NoAnswer(Exception):
    """MinIO could not be asked (no key in OpenBao, no forward, no answer, a clock off): the check's
    failure, said, and its fix when it is not the setup Job's.
    """

    def __init__(self, said: str, fix: str = "") -> None:
        super().__init__(said)
        self.fix = fix


def _clock_off(headers: Mapping[str, str], now: datetime.datetime) -> str:
    """How far MinIO's clock (its answer's `Date`, which Go's HTTP server always sends) is from `now`,
    said, when past what MinIO allows: its refusal of the request says so only for some (a HEAD's is a bare 403).
    """
    from email.utils import parsedate_to_datetime

    try:
        off = parsedate_to_datetime(str(headers.get("Date", ""))) - now
    except (TypeError, ValueError):
        return ""
    if abs(off) <= SKEW:
        return ""
    return f"MinIO's clock is {round(abs(off).total_seconds() / 60)} min {'ahead of' if off > SKEW else 'behind'} this machine's"


def _minio_target(platform: Platform) -> Target:
    """MinIO's S3 port, from phase2's `minioEndpoint` (http://<service>.<namespace>.svc.cluster.local:<port>)."""
    from urllib.parse import urlsplit

    from components import minio as mn

    endpoint = urlsplit(str(platform.of("phase2").get(outputs.MINIO_ENDPOINT)))
    return _service(platform, str(endpoint.hostname), endpoint.port or mn.API_PORT)


def _minio_fix(platform: Platform, namespace: str) -> str:
    """How a MinIO failure is looked at and mended: its setup Job makes the buckets, the policies and the
    users, and runs again only when it is made again (an `up` compares inputs, and the Job's are the same).
    """
    from components import minio as mn

    selector = ",".join(f"{key}={value}" for key, value in mn.SERVER_LABELS.items())
    return (
        f"{platform.kubectl_said('get', 'jobs,pods', namespace=namespace)} and the setup Job's logs; to run it again, "
        f"{platform.kubectl_said('delete', 'job', '--selector', selector, namespace=namespace)}, then `pulumi refresh -s phase2` "
        f'(`-s dev` for the dev stack; in a shell that ran `eval "$(uv run blueprint env)"`) and `{UP} --phase 2`'
    )


def _ask_minio(platform: Platform, target: Target, probes: Mapping[str, Sequence[tuple[str, str]]]) -> dict[tuple[str, str, str], str]:
    """What MinIO answered each consumer's `probes` ((LIST, READ or WRITE, bucket) each), signed with
    that consumer's key as OpenBao holds it, by (consumer, probe, bucket): REACHED or MinIO's error
    code. Through a port-forward to MinIO's Service; nothing written. `_NoAnswer` at the first
    request that gets no answer (a forward whose pod is gone): every other would wait as long.
    """
    import secrets

    import urllib3

    from components import minio as mn
    from providers.cluster_access import ForwardError

    read = _kv_secrets(platform, [f"minio-{consumer}-secret-key" for consumer in probes])
    keys = {consumer: read[f"minio-{consumer}-secret-key"] for consumer in probes}
    if unread := [f"secret/minio/{consumer}" for consumer, key in keys.items() if not key]:
        raise _NoAnswer(f"OpenBao holds no secret key at {', '.join(unread)}")
    missing = f"blueprint-verify-{secrets.token_hex(8)}"  # a key no bucket holds
    found: dict[tuple[str, str, str], str] = {}
    # A pool of our own: no retry, no redirect, no proxy.
    pool = urllib3.PoolManager(timeout=urllib3.Timeout(connect=TIMEOUT, read=TIMEOUT), retries=False)
    try:
        with _forward(platform, target) as port:
            for consumer, asked in probes.items():
                for probe, bucket in asked:
                    method, path, extra = _request(probe, bucket, missing, mn.CONSUMERS[consumer][0])
                    now = _now()
                    headers = s3sign.signed(
                        method, f"127.0.0.1:{port}", path, (consumer, keys[consumer]), region=S3_REGION, now=now, headers=extra
                    )
                    answer = pool.request(method, f"http://127.0.0.1:{port}{path}", headers=headers, redirect=False)
                    found[consumer, probe, bucket] = _code(answer.status, answer.headers, answer.data)
                    if found[consumer, probe, bucket] not in OPEN and (off := _clock_off(answer.headers, now)):
                        raise _NoAnswer(f"{off}: MinIO refuses a request dated more than {SKEW.seconds // 60} min off its clock", CLOCK_FIX)
    except (ForwardError, urllib3.exceptions.HTTPError, OSError) as error:
        said = platform.secrets.masked(" ".join(_why(error).split()))[:300]
        raise _NoAnswer(f"MinIO did not answer at {target}: {said}") from None
    finally:
        pool.clear()
    return found


def _request(probe: str, bucket: str, key: str, own_bucket: str) -> tuple[str, str, dict[str, str]]:
    """(method, path, headers besides the signature's) of `probe` (PROBES) on `bucket`: `key` is one no
    bucket holds; a CopyObject's source is that key in `own_bucket`, the consumer's own. ValueError for
    a name that would not be sent as signed (s3sign.path).
    """
    if probe == LIST:
        return "HEAD", s3sign.path(bucket), {}
    if probe == READ:
        return "HEAD", s3sign.path(bucket, key), {}
    return "PUT", s3sign.path(bucket, key), {"x-amz-copy-source": s3sign.path(own_bucket, key)}


def _code(status: int, headers: Mapping[str, str], body: bytes) -> str:
    """REACHED for a 2xx, else MinIO's error code (see REACHED; a word, nothing else it sent), else the HTTP status."""
    import re

    if 200 <= status < 300:
        return REACHED
    word = re.compile(r"[A-Za-z]{1,64}")
    if word.fullmatch(named := str(headers.get("x-minio-error-code", ""))):
        return named
    found = re.search(rb"<Code>([A-Za-z]{1,64})</Code>", body[:4096])
    return found[1].decode() if found else f"HTTP {status}"


def _why(error: BaseException) -> str:
    """An error's own words, and of each error inside it only its kind (and the system's reason): never
    what the other end sent, which an error such as http.client's `BadStatusLine` repeats, escaped as
    repr() escapes it (past the masking of a secret it may repeat).
    """
    words = []
    for part in error.args or (str(error),):
        if isinstance(part, OSError) and part.strerror:
            words.append(f"{type(part).__name__}: {part.strerror}")
        elif isinstance(part, BaseException):
            words.append(type(part).__name__)
        elif isinstance(part, str):
            words.append(part)
    return ": ".join(words) or type(error).__name__


def minio_buckets_check(platform: Platform) -> Verdict:
    """Every bucket of components/minio.py's CONSUMERS exists, and its consumer's own key reaches it."""
    from components import minio as mn

    target = _minio_target(platform)
    fix = _minio_fix(platform, target.namespace)
    try:
        found = _ask_minio(platform, target, {consumer: [(LIST, bucket) for bucket in own] for consumer, own in mn.CONSUMERS.items()})
    except _NoAnswer as error:
        return failed(str(error), error.fix or fix)
    missing = [bucket for (_, _, bucket), code in found.items() if code == MISSING]
    wrong = [f"no bucket {', '.join(missing)}"] if missing else []
    for consumer in mn.CONSUMERS:
        if refused := [bucket for (user, _, bucket), code in found.items() if user == consumer and code in REFUSED]:
            wrong.append(
                f"{consumer} refused on {', '.join(refused)}: its key is not MinIO's, or its policy {mn.POLICY_PREFIX}{consumer} lacks them"
            )
    wrong += [f"{user} on {bucket}: {code}" for (user, _, bucket), code in found.items() if code not in {REACHED, MISSING, *REFUSED}]
    if wrong:
        return failed("; ".join(wrong), fix)
    return passed("; ".join(f"{consumer} reaches its {len(buckets)} bucket(s)" for consumer, buckets in mn.CONSUMERS.items()))


def minio_users_check(platform: Platform) -> Verdict:
    """Each consumer's key is refused (AccessDenied) listing, reading and writing every other
    consumer's bucket (PROBES).
    """
    from components import minio as mn

    every = dict.fromkeys(bucket for buckets in mn.CONSUMERS.values() for bucket in buckets)
    others = {consumer: [bucket for bucket in every if bucket not in own] for consumer, own in mn.CONSUMERS.items()}
    target = _minio_target(platform)
    fix = _minio_fix(platform, target.namespace)
    try:
        found = _ask_minio(
            platform, target, {user: [(probe, bucket) for bucket in buckets for probe in PROBES] for user, buckets in others.items()}
        )
    except _NoAnswer as error:
        return failed(str(error), error.fix or fix)

    def asked(let: Any) -> str:
        return ", ".join(f"{user}'s {probe} on {bucket} ({code})" for (user, probe, bucket), code in found.items() if let(code))

    # Three outcomes: refused by the policy (as wanted), let through (the hole), or refused before the
    # policy was asked (a key MinIO does not take...), which says nothing of the policy.
    wrong = [f"not refused: {open_to}; each user may reach its own buckets alone"] if (open_to := asked(OPEN.__contains__)) else []
    if unjudged := asked(lambda code: code not in OPEN and code != DENIED):
        wrong.append(
            f"could not be judged: {unjudged}; MinIO refused the request itself, before the user's policy (MinIO buckets says why)"
        )
    if wrong:
        return failed("; ".join(wrong), fix)
    return passed(
        "; ".join(
            f"{consumer} refused listing, reading and writing the other {len(buckets)} bucket(s)" for consumer, buckets in others.items()
        )
    )
