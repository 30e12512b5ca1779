"""AWS Signature Version 4 for the few S3 requests `blueprint verify` sends MinIO (HeadBucket,
HeadObject, CopyObject): each with an empty body and no query string. As AWS specifies it, "Create a
signed AWS API request" (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html),
in S3's form (`x-amz-content-sha256` signed; the path encoded once). Our own, not an SDK's: minio-py
brought two compiled packages for this one kind of request (docs/design/decisions.md, entry 61). Its
tests check it against AWS's published S3 example and, for every request the checks make, botocore's
signer (tests/cli/verify/s3.py).
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
from collections.abc import Mapping
from urllib.parse import quote

ALGORITHM = "AWS4-HMAC-SHA256"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
"""The payload hash of an empty body, which every request here has."""


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
    """Every header of the request `method` `path` (no query) to `host`, its `Authorization` among
    them, signed with `key` (access key, secret key) for `region` at `now`; `headers` signed too.
    """
    access, secret = key
    stamp = now.astimezone(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    sent = {"host": host, "x-amz-content-sha256": EMPTY_SHA256, "x-amz-date": stamp}
    sent |= {name.lower(): " ".join(value.split()) for name, value in (headers or {}).items()}
    names = sorted(sent)
    lines = [f"{name}:{sent[name]}" for name in names]
    canonical = "\n".join([method, quote(path, safe="/"), "", *lines, "", ";".join(names), EMPTY_SHA256])
    scope = f"{stamp[:8]}/{region}/s3/aws4_request"
    to_sign = "\n".join([ALGORITHM, stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    signing = f"AWS4{secret}".encode()
    for part in (stamp[:8], region, "s3", "aws4_request"):
        signing = hmac.new(signing, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(signing, to_sign.encode(), hashlib.sha256).hexdigest()
    sent["authorization"] = f"{ALGORITHM} Credential={access}/{scope}, SignedHeaders={';'.join(names)}, Signature={signature}"
    return sent
