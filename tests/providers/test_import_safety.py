"""The engine's provider host imports provider modules by reference: importing one must do nothing
(no client, no network, no heavy import) until a method is called, and every dynamic provider must
come back from the engine's pickle as the class of the module it is written in."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pulumi.dynamic import ResourceProvider

from stacks.config import PROJECT_DIR
from tests.providers.engine import as_engine_loads

MODULES = sorted(f"providers.{path.stem}" for path in (PROJECT_DIR / "providers").glob("*.py") if path.stem != "__init__")


def test_importing_the_providers_imports_no_client_library() -> None:
    code = (
        f"import sys, {', '.join(MODULES)}; print(sorted(m for m in ('hvac', 'requests', 'urllib3', 'cryptography') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_DIR, capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "[]"


def providers() -> list[type[ResourceProvider]]:
    """Every dynamic provider class the modules of providers/ define."""
    import importlib

    found = []
    for name in MODULES:
        for value in vars(importlib.import_module(name)).values():
            if isinstance(value, type) and issubclass(value, ResourceProvider) and value.__module__ == name:
                found.append(value)
    return found


@pytest.mark.parametrize("provider", providers(), ids=lambda provider: f"{provider.__module__}.{provider.__qualname__}")
def test_every_provider_is_pickled_by_reference_to_its_own_module(provider: type[ResourceProvider]) -> None:
    """What the engine stores in `__provider` names the class where it is: moving one moves that name."""
    loaded = as_engine_loads(provider())
    assert type(loaded) is provider
