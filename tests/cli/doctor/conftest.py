"""What every doctor test runs with."""

from __future__ import annotations

import pytest

from cli.doctor import install
from tests.cli.doctor.fakes import FAKE_PINS, REAL_PINS


@pytest.fixture(autouse=True)
def fake_release_files_pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake release files `serve_releases` serves stand pinned in place of the real ones; a test
    of the real pins says so (`real_pins`)."""
    monkeypatch.setattr(install, "PINS", FAKE_PINS)


@pytest.fixture
def real_pins(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SHA-256s versions.py pins, as `blueprint doctor` uses them."""
    monkeypatch.setattr(install, "PINS", REAL_PINS)
