"""``pack``: stage a window of a buffer in a new buffer with a packed (blocked) layout."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cursched.cursors import AllocCursor, BlockCursor, Cursor, StmtCursor
from cursched.ir.memory import DRAM, Memory
from cursched.primitives.buffers.allocs import lift_alloc
from cursched.primitives.buffers.dims import rearrange_dim
from cursched.primitives.buffers.dims_split import divide_dim
from cursched.primitives.buffers.stage import stage_mem
from cursched.primitives.loops.simplify import simplify
from cursched.primitives.registry import PrimCursors
from cursched.proc import Proc

__all__ = ["PackCursors", "pack"]


@dataclass(frozen=True, repr=False, eq=False)
class PackCursors(PrimCursors):
    """What ``pack`` returns.

    Attributes:
        alloc: the packed buffer's allocation (after the lifts).
        load: the nest copying the window in (invalid when the block does not read it).
        block: the staged block.
        store: the nest copying it back (invalid when the block does not write it).
    """

    alloc: AllocCursor
    load: StmtCursor | Cursor
    block: BlockCursor
    store: StmtCursor | Cursor


def pack(
    p: Proc,
    block: BlockCursor | StmtCursor | str,
    window: str,
    name: str,
    divide: Sequence[tuple[int, int]] = (),
    order: Sequence[int] | None = None,
    lift: int = 0,
    memory: type[Memory] = DRAM,
) -> tuple[Proc, PackCursors]:
    """Copy ``window`` into a new buffer around ``block``, in a packed layout.

    ``stage_mem`` makes the buffer (the window's shape, row-major); each ``(dim, q)`` of
    ``divide`` splits dimension ``dim`` into ``size / q`` and ``q`` (``divide_dim``, applied in
    order, ``dim`` counted in the shape at that point); ``order`` permutes the dimensions
    (``rearrange_dim``); ``simplify`` tidies the indices; ``lift_alloc`` moves the allocation
    out of ``lift`` enclosing statements, so one buffer serves every iteration (BLIS packs a
    panel of B as ``[N / 16, KC, 16]``: ``divide=[(1, 16)], order=(1, 0, 2)``).

    Args:
        p: the proc.
        block: the statements that use the window.
        window: ``"B[lo:hi, ...]"`` as for ``stage_mem``.
        name: the packed buffer's name.
        divide: dimension splits, in order.
        order: the final permutation of dimensions (None: keep).
        lift: how many enclosing statements the allocation leaves.
        memory: the buffer's memory.

    Returns:
        The new proc and ``PackCursors`` (``alloc``, ``load``, ``block``, ``store``).

    Preconditions:
        Those of ``stage_mem``, ``divide_dim`` (each ``q`` provably divides its dimension),
        ``rearrange_dim`` and ``lift_alloc``, with their error classes.

    Forwards/Kills:
        As those primitives: ``block`` forwards to ``block``; rewritten accesses die.

    Example:
        ``pack(p, "for i in _: _", "B[0:K, 16 * jo:16 * jo + 16]", "Bp", lift=1)`` stages the
        panel once per ``jo`` in a buffer allocated above the ``jo`` loop.
    """
    p, st = stage_mem(p, block, window, name, memory=memory)
    alloc: AllocCursor = st.alloc
    for dim, q in divide:
        p, d = divide_dim(p, alloc, dim, q)
        alloc = d.alloc
    if order is not None:
        p, d = rearrange_dim(p, alloc, tuple(order))
        alloc = d.alloc
    if divide or order is not None:
        p, _ = simplify(p)
    if lift:
        p, la = lift_alloc(p, p.forward(alloc), lift)
        alloc = la.alloc
    a, blk = p.forward(alloc), p.forward(st.block)
    assert isinstance(a, AllocCursor) and isinstance(blk, BlockCursor)
    load, store = (_kept(p, c) for c in (st.load, st.store))
    return p, PackCursors(a, load, blk, store)


def _kept(p: Proc, c: StmtCursor | Cursor) -> StmtCursor | Cursor:
    """``c`` forwarded to ``p``, or ``c`` itself when it was invalid already."""
    if not c:
        return c
    f = p.forward(c)
    return f if isinstance(f, Cursor) else c
