"""blueprint offers no wheel and no sdist: it runs from its checkout.

It is a Pulumi program, which needs Pulumi.yaml, the stack files, apps/ and charts/ beside its
modules; a wheel would install modules that import but cannot run. The editable install that
`uv sync` makes (a .pth putting the checkout on sys.path) is the only build allowed, and every
other one stops with one sentence. hatchling loads this file by path
(pyproject.toml, [tool.hatch.build.hooks.custom]); it is not part of the program.
"""

from __future__ import annotations

from typing import Any

from hatchling.builders.config import BuilderConfig
from hatchling.builders.hooks.plugin.interface import BuildHookInterface

REFUSAL = (
    "blueprint is not distributed as a wheel or an sdist: it runs from its checkout "
    "(clone the repository, then `uv run blueprint up` in that folder)."
)


class RunsFromItsCheckout(BuildHookInterface[BuilderConfig]):
    """Lets the editable wheel through and refuses every other build."""

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if (self.target_name, version) != ("wheel", "editable"):
            raise SystemExit(REFUSAL)  # an expected refusal: its sentence, without a traceback
