"""blueprint's configuration, declared once in `Pulumi.yaml` and checked before any resource.

Here, what all of it shares: the namespace, the checkout it reads from, and the error it raises.
Its modules:

- `schema`: what Pulumi.yaml declares (keys, types, defaults), what the stack files set, what
  Pulumi passed the program, and which stacks read which key;
- `phases`: each phase's typed config and the checks of its values, and what is wrong with the
  keys and values a stack is given;
- `paths`: the data folder, the image cache folder and the checkout id, and the folders refused
  for them.
"""

from __future__ import annotations

from pathlib import Path

import pulumi

NAMESPACE = "blueprint"
"""The project's config namespace: `blueprint:<key>`."""
PROJECT_DIR = Path(__file__).resolve().parent.parent.parent
"""The checkout: Pulumi.yaml and the stack files are at its top."""


class ConfigError(pulumi.RunError):
    """One or more config values are invalid; the message names each key, its value and the fix."""
