"""OpenBao's static seal key: a file the seal cannot take is refused before anything waits for it.

A server given such a file only exits, and an `up` would wait for it in vain. `providers/host_secret.py`
checks a restored key file the same way (`static_key_problem`).
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from providers.openbao_errors import OpenBaoInitError

STATIC_KEY_BYTES = 32


def static_key_problem(value: str) -> str | None:
    """Why OpenBao's static seal cannot take `value` as its key, or None. It reads 64 bytes as hex, 44
    as base64, 43 as unpadded URL-safe base64 and 32 as the raw key, refuses any other length, and
    needs 32 bytes in the end for AES-256 (go-kms-wrapping wrappers/static/static.go `SetConfig`).
    """
    raw = value.encode()
    forms = {64: "64 hex digits", 44: "44 characters of base64", 43: "43 characters of unpadded URL-safe base64"}
    try:
        if len(raw) == 64:
            key = bytes.fromhex(value)
        elif len(raw) == 44:
            key = base64.b64decode(raw, validate=True)
        elif len(raw) == 43:
            if b"+" in raw or b"/" in raw:  # Python maps the alternative alphabet onto the standard one, Go does not
                raise ValueError("not URL-safe")
            key = base64.b64decode(raw + b"=", altchars=b"-_", validate=True)
        elif len(raw) == STATIC_KEY_BYTES:
            return None
        else:
            return (
                f"it is {len(raw)} bytes long; the static seal takes 32 bytes as the key itself, 64 hex digits, or 44 (43 "
                f"unpadded) characters of base64"
            )
    except ValueError:
        return f"it is {len(raw)} bytes long, so OpenBao reads it as {forms[len(raw)]}, and it is not that"
    if len(key) != STATIC_KEY_BYTES:
        return f"it is {forms[len(raw)]} of a {len(key)}-byte key, and the static seal needs a 32-byte one"
    return None


def check_seal_key_file(props: dict[str, Any]) -> None:
    """Refuse a seal key file the static seal cannot take: OpenBao would only exit, and `up` wait for it in vain."""
    path = Path(str(props["seal_key_file"]))
    try:
        value = path.read_text().strip()
    except FileNotFoundError:
        return  # nothing to tell: HostSecret writes it back before the server gets it
    except (OSError, UnicodeDecodeError) as error:
        raise OpenBaoInitError(f"OpenBao's seal key {path} cannot be read ({type(error).__name__})") from None
    if (why := static_key_problem(value)) is not None:
        raise OpenBaoInitError(
            f"OpenBao's seal key {path} is no key its static seal can take: {why}. OpenBao cannot start with it. Restore the "
            f"file from a backup of the data folder (the key OpenBao's storage is sealed with), then run `uv run blueprint up` again."
        )
