"""What every test runs with."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stacks.config import defaults_only


@pytest.fixture(autouse=True, scope="session")
def stack_files_of_the_defaults() -> Iterator[None]:
    """Plans in tests read Pulumi.yaml's defaults alone, never the stack files a user has edited
    (Pulumi.<stack>.yaml): a test that means the defaults gets them, whatever a checkout's stack
    files say. A test that wants a stack file points `stacks.config.STACK_FILES_DIR` at its own.
    """
    with defaults_only():
        yield
