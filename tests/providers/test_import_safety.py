"""The engine's provider host imports provider modules by reference: importing one must do nothing
(no client, no network, no heavy import) until a method is called."""

from __future__ import annotations

import subprocess
import sys

from stacks.config import PROJECT_DIR


def test_importing_the_providers_imports_no_client_library() -> None:
    code = (
        "import sys, providers.openbao_init, providers.openbao_kv, providers.host_secret, providers.ca_certificate;"
        "print(sorted(m for m in ('hvac', 'requests', 'cryptography') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_DIR, capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "[]"
