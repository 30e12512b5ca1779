"""The tests of `stacks/config/`, one module per module of it."""

from __future__ import annotations

import pytest

from stacks.config import ConfigError
from stacks.config.phases import parse_phase1


def error_for(**raw: str) -> str:
    """The message phase1's config of these raw values (key without namespace) is refused with."""
    with pytest.raises(ConfigError) as error:
        parse_phase1(raw)
    return str(error.value)
