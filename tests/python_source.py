"""`ast.parse` for the tests that read the program's source.

CPython 3.11 before 3.11.8 keeps the AST converter's recursion count in state shared by every
thread, so a parse that another thread runs at the same moment (pytest rewriting a module a plan's
thread imports) can fail with "SystemError: AST constructor recursion depth mismatch"
(python/cpython#106905). The source is fine: parsing it again gives its tree.

A source is parsed once a process: the tests of the program's source (test_shape, test_call_sites,
test_program_text, test_shell) each read every module, which parsed anew cost them about 4 CPU-s.
The tree is shared: its readers only walk it, none changes it.
"""

from __future__ import annotations

import ast
import functools


@functools.cache
def parse(source: str) -> ast.Module:
    try:
        return ast.parse(source)
    except SystemError:
        return ast.parse(source)


@functools.cache
def nodes(source: str) -> tuple[ast.AST, ...]:
    """Every node of `source`'s tree, in `ast.walk`'s order: walked once a process, where each rule
    that reads every module walked it again (and test_call_sites twice a module)."""
    return tuple(ast.walk(parse(source)))
