"""A local stand-in for MinIO's S3 API, as `blueprint verify`'s MinIO checks meet it: HeadBucket,
HeadObject and CopyObject answered as MinIO answers them, after checking each request's AWS Signature
V4 with botocore's signer (AWS's own implementation, independent of cli/verify/s3sign.py, which the
checks sign with). It holds buckets but no object.

MinIO's order, which the stand-in keeps (minio cmd/bucket-handlers.go `HeadBucketHandler`,
cmd/object-handlers.go `headObjectHandler`, `CopyObjectHandler`, cmd/auth-handler.go): the signature
first (a request dated more than 15 min off MinIO's clock: `RequestTimeTooSkewed`, which MinIO's auth
middleware answers through `writeErrorResponse`, so a HEAD gets a bare 403; a key MinIO does not know:
`InvalidAccessKeyId`; a signature that does not match: `SignatureDoesNotMatch`), then the user's policy
(`AccessDenied`: for a HeadBucket its bucket rights; for a HeadObject s3:GetObject; for a CopyObject
s3:PutObject on the destination, then s3:GetObject on the source), then what is there (`NoSuchBucket`,
`NoSuchKey`). A HEAD's error has no body, its code in `x-minio-error-code`
(`writeErrorResponseHeadersOnly`); another's is S3's XML error. Anything else is refused and recorded,
so a test can show that nothing was written.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import hmac
import re
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import quote, unquote

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

AUTHORIZATION = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/s3/aws4_request,\s*"
    r"SignedHeaders=(?P<signed>[a-z0-9;-]+),\s*Signature=(?P<signature>[0-9a-f]{64})"
)
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
SKEW_SECONDS = 15 * 60
"""How far a request's date may be from MinIO's clock (cmd/auth-handler.go `globalMaxSkewTime`)."""
STATUS = {
    "RequestTimeTooSkewed": 403,
    "InvalidAccessKeyId": 403,
    "SignatureDoesNotMatch": 403,
    "AccessDenied": 403,
    "NoSuchBucket": 404,
    "NoSuchKey": 404,
}
"""MinIO's HTTP status for each error code (cmd/api-errors.go)."""


@dataclass
class S3StandIn:
    """What MinIO holds: its users' secret keys, its buckets, and what each user's policy allows: the
    buckets it holds every right on (`allowed`: s3:* on the bucket and its objects, as blueprint's
    policies), and the buckets whose objects alone it may read (`reads`: s3:GetObject) or write
    (`writes`: s3:PutObject), as MinIO's built-in `readonly` and `writeonly` policies grant them."""

    port: int = 0
    keys: dict[str, str] = field(default_factory=dict)
    buckets: set[str] = field(default_factory=set)
    allowed: dict[str, set[str]] = field(default_factory=dict)
    reads: dict[str, set[str]] = field(default_factory=dict)
    writes: dict[str, set[str]] = field(default_factory=dict)
    requests: list[tuple[str, str, str]] = field(default_factory=list)
    """Each request: (method, path, the code it got or "200")."""
    clock: float = 0
    """MinIO's clock (seconds since the epoch); 0: this machine's."""

    def hold(
        self,
        keys: Mapping[str, str],
        allowed: Mapping[str, Any],
        buckets: Any = None,
        *,
        reads: Mapping[str, Any] | None = None,
        writes: Mapping[str, Any] | None = None,
    ) -> None:
        """MinIO as a test needs it: `allowed` user -> buckets; every allowed bucket exists unless `buckets` says."""
        self.keys = dict(keys)
        self.allowed = {user: set(names) for user, names in allowed.items()}
        self.reads = {user: set(names) for user, names in (reads or {}).items()}
        self.writes = {user: set(names) for user, names in (writes or {}).items()}
        self.buckets = set(buckets) if buckets is not None else {name for names in self.allowed.values() for name in names}
        self.requests = []

    def answer(self, method: str, path: str, headers: Mapping[str, str]) -> str:
        """The error code MinIO would give this request (`headers` by lowercase name), or "200"."""
        with contextlib.suppress(ValueError):
            dated = datetime.datetime.strptime(headers.get("x-amz-date", ""), "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.UTC)
            if abs(dated.timestamp() - self.now()) > SKEW_SECONDS:
                return "RequestTimeTooSkewed"
        user, refused = self._signed_by(method, path, headers)
        if refused:
            return refused
        bucket, _, key = unquote(path).lstrip("/").partition("/")
        if method == "HEAD" and not key:  # HeadBucket
            if bucket not in self.allowed.get(user, set()):
                return "AccessDenied"
            return "200" if bucket in self.buckets else "NoSuchBucket"
        if method == "HEAD":  # HeadObject: the stand-in holds no object
            return self._may(user, "read", bucket) or self._missing(bucket)
        if method == "PUT" and key and (source := headers.get("x-amz-copy-source", "")).count("/") >= 2:  # CopyObject
            source_bucket = source.lstrip("/").partition("/")[0]
            return self._may(user, "write", bucket) or self._may(user, "read", source_bucket) or self._missing(source_bucket)
        return "MethodNotAllowed"

    def now(self) -> float:
        return self.clock or time.time()

    def _may(self, user: str, action: str, bucket: str) -> str:
        """ "" when `user`'s policy allows `action` ("read": s3:GetObject, "write": s3:PutObject) on `bucket`'s objects."""
        granted = self.allowed.get(user, set()) | (self.reads if action == "read" else self.writes).get(user, set())
        return "" if bucket in granted else "AccessDenied"

    def _missing(self, bucket: str) -> str:
        return "NoSuchKey" if bucket in self.buckets else "NoSuchBucket"

    def _signed_by(self, method: str, path: str, headers: Mapping[str, str]) -> tuple[str, str]:
        """(the user whose key signed the request, "") or ("", the error code): botocore computes the
        signature the request should carry, from the headers it says it signed."""
        found = AUTHORIZATION.fullmatch(headers.get("authorization", ""))
        if found is None:
            return "", "AccessDenied"
        user, signed = found["key"], found["signed"].split(";")
        if user not in self.keys:
            return "", "InvalidAccessKeyId"
        stamp = headers.get("x-amz-date", "")
        if "host" not in signed or "x-amz-date" not in signed or headers.get("x-amz-content-sha256") != EMPTY_SHA256:
            return "", "SignatureDoesNotMatch"
        if "x-amz-copy-source" in headers and "x-amz-copy-source" not in signed:  # stricter than MinIO: ours signs it
            return "", "SignatureDoesNotMatch"
        # On the path as MinIO reads it: decoded, then encoded again (s3utils.EncodePath, for the canonical
        # request), which botocore's S3 signer then uses as it is.
        canonical = quote(unquote(path), safe="/~")
        request = AWSRequest(method=method, url=f"http://{headers['host']}{canonical}", headers={name: headers[name] for name in signed})
        request.context["timestamp"] = stamp
        signer = S3SigV4Auth(Credentials(user, self.keys[user]), "s3", found["region"])
        expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
        if found["date"] != stamp[:8] or not hmac.compare_digest(expected, found["signature"]):
            return "", "SignatureDoesNotMatch"
        return user, ""


@contextlib.contextmanager
def running_s3() -> Iterator[S3StandIn]:
    """The stand-in on a loopback port, for the `with` block."""
    stand_in = S3StandIn()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as MinIO

        def do_HEAD(self) -> None:
            code = stand_in.answer("HEAD", self.path, {name.lower(): value for name, value in self.headers.items()})
            stand_in.requests.append(("HEAD", self.path, code))
            self.send_response(200 if code == "200" else STATUS[code])
            if code not in {"200", "RequestTimeTooSkewed"}:
                self.send_header("x-minio-error-code", code)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_PUT(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            code = stand_in.answer("PUT", self.path, {name.lower(): value for name, value in self.headers.items()})
            stand_in.requests.append(("PUT", self.path, code))
            if code == "MethodNotAllowed":
                self.send_response(405)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>stand-in</Message></Error>'.encode()
            self.send_response(STATUS[code])
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def refuse(self) -> None:
            stand_in.requests.append((self.command, self.path, "MethodNotAllowed"))
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = do_DELETE = refuse

        def date_time_string(self, timestamp: float | None = None) -> str:
            return super().date_time_string(timestamp or stand_in.now())

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    stand_in.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield stand_in
    finally:
        server.shutdown()
        server.server_close()
