"""The SigV4 signer of verify's MinIO checks (cli/verify/s3sign.py), against AWS's own published
example and botocore's signer (an implementation independent of ours)."""

from __future__ import annotations

import datetime

import pytest

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


@pytest.mark.parametrize("path", ["/b/a b", "/b/a+b", "/b/x?y", "/b/a%20b", "/b/ünï"])
def test_a_path_the_wire_would_carry_otherwise_than_it_is_signed_is_refused_not_sent(path: str) -> None:
    """urllib3 sends a path as given (cut at `?`, `%XX` kept) while SigV4 signs it encoded, so only
    characters that encoding leaves alone may be sent."""
    with pytest.raises(ValueError, match="cannot be sent as signed"):
        signed("HEAD", "127.0.0.1:9000", path, AWS_EXAMPLE_KEY, region="us-east-1", now=datetime.datetime.now(datetime.UTC))


def test_a_header_is_sent_as_given_and_signed_with_its_spaces_collapsed() -> None:
    """SigV4 trims and collapses a value's spaces in the canonical request alone; what is sent stays."""
    stand_in = S3StandIn()
    stand_in.hold({"runner-cache": "right-secret-key-0123456789"}, {"runner-cache": ("runner-cache",)})
    copy = {"x-amz-copy-source": "/runner-cache/a  b"}
    key = ("runner-cache", "right-secret-key-0123456789")
    headers = signed("PUT", "127.0.0.1:9000", "/git-lfs/k", key, region="us-east-1", now=datetime.datetime.now(datetime.UTC), headers=copy)
    assert headers["x-amz-copy-source"] == "/runner-cache/a  b"
    assert stand_in.answer("PUT", "/git-lfs/k", headers) == "AccessDenied"  # signed right: the policy answers


def test_the_checks_build_no_request_for_a_key_outside_what_is_signed_as_sent() -> None:
    from cli.verify import data

    with pytest.raises(ValueError, match="cannot be sent as signed"):
        data._request(data.WRITE, "git-lfs", "a b", "runner-cache")


@pytest.mark.parametrize("wire", ["/b/a+b", "/b/a%2Bb", "/b/%c3%bcn"])
def test_the_stand_in_checks_a_signature_on_the_path_as_minio_reads_it_not_as_it_came(wire: str) -> None:
    """MinIO decodes the path it receives and encodes it again (s3utils.EncodePath) before it checks the
    signature: a client's `+` or `%2B` is the one key `a+b` (botocore's own request, signed on `a%2Bb`), `%c3` is `%C3`."""
    from urllib.parse import quote, unquote

    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    stand_in = S3StandIn()
    stand_in.hold({"runner-cache": "right-secret-key-0123456789"}, {"runner-cache": ("b",)})
    request = AWSRequest(method="HEAD", url=f"http://127.0.0.1:9000{quote(unquote(wire), safe='/~')}")
    request.headers["x-amz-content-sha256"] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    S3SigV4Auth(Credentials("runner-cache", "right-secret-key-0123456789"), "s3", "us-east-1").add_auth(request)
    headers = {name.lower(): value for name, value in request.headers.items()} | {"host": "127.0.0.1:9000"}
    assert stand_in.answer("HEAD", wire, headers) == "NoSuchKey"
