"""``unroll_all``: unroll loops and every loop nested in them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cursched.cursors import BlockCursor, ForCursor, StmtCursor
from cursched.primitives.loops.loop_shapes import unroll_loop
from cursched.primitives.registry import PrimCursors
from cursched.proc import Proc
from cursched.stdlib._walk import nested_blocks

__all__ = ["UnrollAllCursors", "unroll_all"]


@dataclass(frozen=True, repr=False, eq=False)
class UnrollAllCursors(PrimCursors):
    """What ``unroll_all`` returns.

    Attributes:
        stmts: the statements the loops became, in program order per loop (no loop among
            them: nested loops are unrolled too).
    """

    stmts: tuple[StmtCursor, ...]


def unroll_all(
    p: Proc, loops: ForCursor | str | Sequence[ForCursor | str]
) -> tuple[Proc, UnrollAllCursors]:
    """Fully unroll each loop of ``loops`` and every loop inside it.

    Args:
        p: the proc.
        loops: a loop or a sequence of loops (cursors of ``p`` or an ancestor, or names).

    Returns:
        The new proc and ``UnrollAllCursors`` (``stmts``).

    Preconditions:
        1. every loop reached, nested ones included, has constant bounds
           (``UnrollNotConstantError`` from ``unroll_loop``).

    Forwards/Kills:
        As ``unroll_loop``, for each loop: the loops and their statements die.

    Example:
        ``unroll_all(p, "i")``::

            for i in seq(0, 2):          ->    x[0, 0] = 0.0
                for j in seq(0, 2):            x[0, 1] = 0.0
                    x[i, j] = 0.0              x[1, 0] = 0.0
                                               x[1, 1] = 0.0
    """
    todo: list[ForCursor | str] = [loops] if isinstance(loops, ForCursor | str) else list(loops)
    leaves: list[StmtCursor] = []
    while todo:
        item = todo.pop(0)
        loop = p.find_loop(item) if isinstance(item, str) else p.forward(item)
        p, made = unroll_loop(p, loop)
        inner: list[ForCursor] = []
        for copy in made.copies:
            for s in copy:
                _collect(s, inner, leaves)
        todo = [*inner, *todo]
    out = [p.forward(s) for s in leaves]
    return p, UnrollAllCursors(tuple(s for s in out if isinstance(s, StmtCursor) and s))


def _collect(s: StmtCursor, loops: list[ForCursor], leaves: list[StmtCursor]) -> None:
    """Sort ``s`` into a loop to unroll or a leaf, looking into ifs and scopes."""
    if isinstance(s, ForCursor):
        loops.append(s)
        return
    leaves.append(s)
    for b in nested_blocks(s):
        assert isinstance(b, BlockCursor)
        for t in b:
            _collect(t, loops, leaves)
