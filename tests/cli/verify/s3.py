"""A local stand-in for MinIO's S3 API, as `blueprint verify`'s MinIO checks meet it: HeadBucket answered
200, 403 or 404 as MinIO answers it, after checking each request's AWS Signature V4 with botocore's
signer (AWS's own implementation, independent of minio-py, which the checks sign with).

MinIO's order, which the stand-in keeps (minio cmd/bucket-handlers.go `HeadBucketHandler`): the
signature first (a key MinIO does not know: `InvalidAccessKeyId`; a signature that does not match:
`SignatureDoesNotMatch`), then the user's policy (`AccessDenied`), then the bucket (`NoSuchBucket`).
A HEAD's error has no body (`writeErrorResponseHeadersOnly`); anything but a HEAD is refused and
recorded, so a test can show that nothing was written.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import re
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

AUTHORIZATION = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/s3/aws4_request,\s*"
    r"SignedHeaders=(?P<signed>[a-z0-9;-]+),\s*Signature=(?P<signature>[0-9a-f]{64})"
)
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
STATUS = {"InvalidAccessKeyId": 403, "SignatureDoesNotMatch": 403, "AccessDenied": 403, "NoSuchBucket": 404}
"""MinIO's HTTP status for each error code (cmd/api-errors.go)."""


@dataclass
class S3StandIn:
    """What MinIO holds: its users' secret keys, its buckets, and the buckets each user's policy allows."""

    port: int = 0
    keys: dict[str, str] = field(default_factory=dict)
    buckets: set[str] = field(default_factory=set)
    allowed: dict[str, set[str]] = field(default_factory=dict)
    requests: list[tuple[str, str, str]] = field(default_factory=list)
    """Each request: (method, path, the code it got or "200")."""

    def hold(self, keys: Mapping[str, str], allowed: Mapping[str, Any], buckets: Any = None) -> None:
        """MinIO as a test needs it: `allowed` user -> buckets; every allowed bucket exists unless `buckets` says."""
        self.keys = dict(keys)
        self.allowed = {user: set(names) for user, names in allowed.items()}
        self.buckets = set(buckets) if buckets is not None else {name for names in self.allowed.values() for name in names}
        self.requests = []

    def answer(self, method: str, path: str, headers: Mapping[str, str]) -> str:
        """The error code MinIO would give this HeadBucket (`headers` by lowercase name), or "200"."""
        user, refused = self._signed_by(method, path, headers)
        if refused:
            return refused
        bucket = path.lstrip("/").split("/", 1)[0].split("?", 1)[0]
        if bucket not in self.allowed.get(user, set()):
            return "AccessDenied"
        return "200" if bucket in self.buckets else "NoSuchBucket"

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
        request = AWSRequest(method=method, url=f"http://{headers['host']}{path}", headers={name: headers[name] for name in signed})
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
            self.send_header("Content-Length", "0")
            self.end_headers()

        def refuse(self) -> None:
            stand_in.requests.append((self.command, self.path, "MethodNotAllowed"))
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_PUT = do_POST = do_DELETE = refuse

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
