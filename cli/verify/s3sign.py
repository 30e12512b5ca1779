"""AWS Signature Version 4 for the few S3 requests `blueprint verify` sends MinIO (HeadBucket, HeadObject,
CopyObject): each with an empty body and no query string. As AWS specifies it, "Create a signed AWS API
request" (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html),
in S3's form (`x-amz-content-sha256` signed; the path encoded once: a no-op on the paths it takes). Our
own, not an SDK's: minio-py brought two compiled packages for this one kind of request
(docs/design/decisions.md, entry 61). Its tests check it against AWS's published S3 example and, for
every request the checks make, botocore's signer (tests/cli/verify/s3.py).
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import re
from collections.abc import Mapping

ALGORITHM = "AWS4-HMAC-SHA256"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
"""The payload hash of an empty body, which every request here has."""
AS_SENT = re.compile(r"[A-Za-z0-9._~/-]+")
"""The characters a path may hold: those SigV4's URI encoding (and MinIO's, s3utils.EncodePath) leaves
as they are, so the path signed is the path urllib3 sends (which it sends as given: `%XX` kept, cut at `?`)."""


def path(*parts: str) -> str:
    """The path `/<part>/<part>...`, or ValueError for a part that holds other characters than AS_SENT's."""
    for part in parts:
        if not AS_SENT.fullmatch(part) or "/" in part:
            raise ValueError(f"{part[:80]!r} cannot be sent as signed: only letters, digits and . _ ~ - may be")
    return "/" + "/".join(parts)


def signed(
    method: str,
    host: str,
    path: str,
    key: tuple[str, str],
    *,
    region: str,
    now: datetime.datetime,
    headers: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Every header of the request `method` `path` (no query; AS_SENT's characters alone, else
    ValueError) to `host`, its `Authorization` among them, signed with `key` (access key, secret key)
    for `region` at `now`; `headers` signed too.
    """
    if not AS_SENT.fullmatch(path):
        raise ValueError(f"{path[:80]!r} cannot be sent as signed: only letters, digits and / . _ ~ - may be")
    access, secret = key
    stamp = now.astimezone(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    sent = {"host": host, "x-amz-content-sha256": EMPTY_SHA256, "x-amz-date": stamp}
    sent |= {name.lower(): value for name, value in (headers or {}).items()}
    names = sorted(sent)
    lines = [f"{name}:{' '.join(sent[name].split())}" for name in names]  # collapsed where signed alone
    canonical = "\n".join([method, path, "", *lines, "", ";".join(names), EMPTY_SHA256])
    scope = f"{stamp[:8]}/{region}/s3/aws4_request"
    to_sign = "\n".join([ALGORITHM, stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    signing = f"AWS4{secret}".encode()
    for part in (stamp[:8], region, "s3", "aws4_request"):
        signing = hmac.new(signing, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(signing, to_sign.encode(), hashlib.sha256).hexdigest()
    sent["authorization"] = f"{ALGORITHM} Credential={access}/{scope}, SignedHeaders={';'.join(names)}, Signature={signature}"
    return sent
