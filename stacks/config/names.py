"""Kubernetes' name syntaxes, once for every config check (apimachinery pkg/util/validation:
IsDNS1123Label, IsDNS1123Subdomain).
"""

from __future__ import annotations

import re

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_LABEL = re.compile(_LABEL)
_DNS_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")


def is_dns_label(text: str, most: int = 63) -> bool:
    """Lowercase letters, digits and '-', starting and ending with a letter or digit, at most `most` long."""
    return len(text) <= most and _DNS_LABEL.fullmatch(text) is not None


def is_dns_subdomain(text: str) -> bool:
    """DNS labels joined by '.', at most 253 long."""
    return len(text) <= 253 and _DNS_SUBDOMAIN.fullmatch(text) is not None
