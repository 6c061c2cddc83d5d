"""Primitives on the proc as a whole: ``rename``."""

from __future__ import annotations

from typing import Annotated

from cursched.cursors import Editor
from cursched.cursors.edits import Rewrite
from cursched.errors import BadNameError
from cursched.primitives.arguments import NewName
from cursched.primitives.registry import PrimCursors, checks_passed, prim_cursors, primitive
from cursched.proc import Proc


class InvalidNameError(BadNameError):
    """rename, precondition 1: the new name is not a Python identifier (or is a keyword)."""


@prim_cursors
class RenameCursors(PrimCursors):
    """What ``rename`` returns: no cursors."""


@primitive
def rename(
    proc: Proc, name: Annotated[str, NewName(InvalidNameError, scope="none", what="proc name")]
) -> Rewrite[RenameCursors]:
    """Give the proc a new name.

    Args:
        proc: the proc to rewrite.
        name: the new name.

    Returns:
        The new proc and ``RenameCursors`` (no fields).

    Preconditions:
        1. ``name`` is a Python identifier and not a keyword (``InvalidNameError``).

    Forwards/Kills:
        Every cursor forwards unchanged. Nothing dies.

    Example:
        ``rename(p, "gemm_v2")``::

            def gemm(...):     ->    def gemm_v2(...):
                ...                      ...
    """
    checks_passed()
    ed = Editor(proc.ir())
    ed.set_proc(name=name)
    return ed.done(RenameCursors)
