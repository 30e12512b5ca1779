"""The one way blueprint builds a `requests` session: for the laptop's own services, nothing else.

Every caller (the GitLab client and the admin token's check, OpenBao's init and KV providers,
phase3's pre-flight, `blueprint status`) talks to a service on this machine, with a credential in
its headers. So a session here:

- takes nothing from the environment (`trust_env` off): no proxy, which would see the credential;
  no `REQUESTS_CA_BUNDLE`, which `requests` would put above the CA the caller names; no `.netrc`;
- follows no redirect: `requests` re-sends custom headers (`PRIVATE-TOKEN`, `X-Vault-Token`) to
  any host a redirect names (it strips only `Authorization`). A caller that needs one (GitLab's
  renamed project) follows it itself, on its own host only (providers/gitlab_api.py);
- trusts `ca_file` alone when one is named.

`requests` is imported at the call: the engine's provider host imports the providers by reference,
and an import must do nothing (tests/providers/test_import_safety.py).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import requests


def session(*, ca_file: str | None = None, headers: Mapping[str, str] | None = None) -> requests.Session:
    """A session that sends `headers` with every request, trusts `ca_file` (when named) and follows no redirect."""
    made = _no_redirects()()
    made.trust_env = False
    if ca_file is not None:
        made.verify = ca_file
    made.headers.update(headers or {})
    return made


@functools.cache
def _no_redirects() -> type[requests.Session]:
    """`requests.Session`, but a redirect ends at its 3xx answer, whatever `allow_redirects` a caller passes."""
    import requests

    class NoRedirects(requests.Session):
        def get_redirect_target(self, resp: requests.Response) -> str | None:
            return None

    return NoRedirects
