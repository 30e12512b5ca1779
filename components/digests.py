"""Digests a pod template carries so that a change of what its process reads once, at start, rolls it.

A plain digest of a secret would have to be a secret itself, which hides a release's whole values in
every diff; an HMAC keyed with one of the secrets tells nothing of any of them, and lets no one
without that key test a guess (a password a user chose by hand included), so it can be a plain value.
"""

from __future__ import annotations

import hashlib
import hmac
import json


def keyed_digest(key: str, value: object) -> str:
    """HMAC-SHA256 of `value` (as sorted JSON), keyed with `key`."""
    return hmac.new(key.encode(), json.dumps(value, sort_keys=True).encode(), hashlib.sha256).hexdigest()
