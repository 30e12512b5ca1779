"""`python -m cli.main`, reading no stack file (Pulumi.yaml's defaults alone), as every test plans:
how a test runs the command in a process of its own, whatever a checkout's stack files say."""

import sys

from cli.main import main
from stacks.config.schema import defaults_only

with defaults_only():
    sys.exit(main())
