"""The SigV4 signer of verify's MinIO checks (cli/verify/s3sign.py), against AWS's own published
example and botocore's signer (an implementation independent of ours)."""

from __future__ import annotations

import datetime

from cli.verify.s3sign import signed
from tests.cli.verify.s3 import S3StandIn

AWS_EXAMPLE_KEY = ("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
"""The example credentials of AWS's S3 SigV4 examples ("Examples: Signature Calculations in AWS
Signature Version 4", Amazon S3 API reference, sig-v4-header-based-auth)."""


def test_the_signature_is_the_one_aws_publishes_for_its_get_object_example() -> None:
    said = signed(
        "GET",
        "examplebucket.s3.amazonaws.com",
        "/test.txt",
        AWS_EXAMPLE_KEY,
        region="us-east-1",
        now=datetime.datetime(2013, 5, 24, tzinfo=datetime.UTC),
        headers={"Range": "bytes=0-9"},
    )
    assert said["authorization"] == (
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
    )


def test_botocore_takes_a_copy_signed_with_the_right_key_and_refuses_one_signed_with_another() -> None:
    stand_in = S3StandIn()
    stand_in.hold({"runner-cache": "right-secret-key-0123456789"}, {"runner-cache": ("runner-cache",)})
    copy = {"x-amz-copy-source": "/runner-cache/blueprint-verify-0"}
    now = datetime.datetime.now(datetime.UTC)

    def answer(secret: str) -> str:
        headers = signed("PUT", "127.0.0.1:9000", "/git-lfs/k", ("runner-cache", secret), region="us-east-1", now=now, headers=copy)
        return stand_in.answer("PUT", "/git-lfs/k", headers)

    assert answer("right-secret-key-0123456789") == "AccessDenied"  # signed right: the policy answers
    assert answer("wrong-secret-key-0123456789") == "SignatureDoesNotMatch"
