"""``tile``: split a perfect loop nest and move all outer loops above all inner ones."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from cursched.cursors import ForCursor
from cursched.errors import SchedulingError
from cursched.primitives.loops.loop_nests import reorder_loops
from cursched.primitives.loops.loop_split import split
from cursched.primitives.registry import PrimCursors, fail
from cursched.proc import Proc

__all__ = ["TileCursors", "TileNestError", "TileSizesError", "tile"]


class TileSizesError(SchedulingError):
    """tile, precondition 1: not one size (an int > 1) per loop."""


class TileNestError(SchedulingError):
    """tile, precondition 2: the loops are not a perfect nest, outer first (each the only
    statement of the one before)."""


@dataclass(frozen=True, repr=False, eq=False)
class TileCursors(PrimCursors):
    """What ``tile`` returns.

    Attributes:
        outer: the outer (tile-counting) loops, outermost first.
        inner: the inner (within-tile) loops, in the same order, below all of ``outer``.
    """

    outer: tuple[ForCursor, ...]
    inner: tuple[ForCursor, ...]


def _check_sizes(loops: Sequence[ForCursor], sizes: Sequence[int]) -> None:
    ok = len(sizes) == len(loops) and all(
        isinstance(s, int) and not isinstance(s, bool) and s > 1 for s in sizes
    )
    if not ok:
        raise fail(
            TileSizesError,
            "tile",
            f"wants one size > 1 per loop, got {list(sizes)} for {len(loops)} loops",
            loops[0] if loops else None,
        )


def _check_nest(loops: Sequence[ForCursor]) -> None:
    for a, b in itertools.pairwise(loops):
        body = a.body()
        if len(body) != 1 or body[0] != b:
            raise fail(
                TileNestError,
                "tile",
                f"loop {b.name()} is not the only statement of loop {a.name()}",
                a,
            )


def tile(
    p: Proc,
    loops: Sequence[ForCursor | str],
    sizes: Sequence[int],
    names: Sequence[tuple[str, str]] | None = None,
) -> tuple[Proc, TileCursors]:
    """Tile a perfect nest: ``i, j`` by ``(a, b)`` becomes ``io, jo, ii, ji``.

    Each loop is ``split`` with ``tail="perfect"`` (its asserts must prove that the size
    divides the trip count), then the inner loops are moved below all outer ones with
    ``reorder_loops``.

    Args:
        p: the proc.
        loops: the nest, outermost first (cursors or loop names).
        sizes: the tile size of each loop.
        names: ``(outer, inner)`` names per loop (default: ``split``'s, ``io``/``ii``).

    Returns:
        The new proc and ``TileCursors`` (``outer``, ``inner``).

    Preconditions:
        1. one size, an int > 1, per loop (``TileSizesError``).
        2. each loop is the only statement of the previous one (``TileNestError``).
        3. each size provably divides its loop's trip count (``split``'s error).

    Forwards/Kills:
        Each loop forwards to its outer loop (as ``split``); nothing dies.

    Example:
        ``tile(p, ["i", "j"], [4, 8])``::

            for i in seq(0, 16):             ->    for io in seq(0, 4):
                for j in seq(0, 32):                   for jo in seq(0, 4):
                    C[i, j] = 0.0                          for ii in seq(0, 4):
                                                               for ji in seq(0, 8):
                                                                   C[4 * io + ii, 8 * jo + ji] = 0.0
    """
    cur = [p.find_loop(x) if isinstance(x, str) else p.forward(x) for x in loops]
    fors = [c for c in cur if isinstance(c, ForCursor)]
    _check_sizes(fors, sizes)
    _check_nest(fors)
    outer: list[ForCursor] = []
    inner: list[ForCursor] = []
    for k, (loop, size) in enumerate(zip(fors, sizes, strict=True)):
        nm = tuple(names[k]) if names is not None else None
        p, s = split(p, p.forward(loop), size, nm, tail="perfect")
        outer.append(s.outer)
        inner.append(s.inner)
    # bubble every outer loop above the inner loops before it: i_o i_i j_o j_i -> i_o j_o ..
    for k in range(1, len(outer)):
        for m in range(k - 1, -1, -1):
            p, _ = reorder_loops(p, p.forward(inner[m]))
    outs = tuple(p.forward(c) for c in outer)
    ins = tuple(p.forward(c) for c in inner)
    return p, TileCursors(
        tuple(c for c in outs if isinstance(c, ForCursor)),
        tuple(c for c in ins if isinstance(c, ForCursor)),
    )
