"""Buffer dimensions, part one: ``expand_dim``, ``resize_dim``, ``rearrange_dim`` (part two,
``divide_dim``, ``mult_dim`` and ``unroll_buffer``, is ``dims_split``; both rewrite an
allocation's shape and every access in its scope through ``dims_common``).
"""

from __future__ import annotations

from typing import Any

from cursched.cursors import AllocCursor
from cursched.cursors.edits import Rewrite
from cursched.errors import BadArgumentError, NotProvenError, OutOfBoundsError
from cursched.ir.nodes import (
    Interval,
    Point,
    WindowExpr,
)
from cursched.primitives.buffers.buffer_common import (
    Use,
    minus,
)
from cursched.primitives.buffers.dims_common import (
    DimCursors,
    DimIndexError,
    DimNotAllocError,
    DimUseError,
    Planned,
    alloc_of,
    coords,
    dim_of,
    expr_arg,
    plan_uses,
    positive,
    prove_in,
    reshape,
    shape_of,
)
from cursched.primitives.loops.loop_common import (
    int_const,
)
from cursched.primitives.registry import Buffer, fail, primitive
from cursched.proc import Proc

# ------------------------------------------------------------------------------ expand_dim


class ExpandDimSizeError(NotProvenError):
    """expand_dim, precondition 4: the size is not an affine expression proven positive."""


class ExpandDimIndexExprError(BadArgumentError):
    """expand_dim, precondition 5: the index is not affine in the sizes and the loops around
    the allocation."""


class ExpandDimBoundsError(OutOfBoundsError):
    """expand_dim, precondition 6: the index is not proven inside ``0 <= index < size``."""


@primitive
def expand_dim(proc: Proc, buf: Buffer, size: Any, index: Any) -> Rewrite[DimCursors]:
    """Add a new outermost dimension to an allocation; every access uses ``index`` in it.

    Args:
        proc: the proc to rewrite.
        buf: the allocation (a cursor or a buffer name).
        size: the new dimension's size (an int, an expression or its text, over the sizes
            and loops around the allocation).
        index: the index every access uses in the new dimension (text such as ``"i"``),
            over the sizes and loops around the allocation, as in Exo: it is the same value
            for every access in the allocation's scope, which is what makes the rewrite exact
            (expand inside the loop, then ``lift_alloc``).

    Returns:
        The new proc and ``DimCursors``: ``alloc``: the allocation; ``accesses``: the
        rewritten accesses.

    Preconditions:
        1. ``buf`` is an allocation (``DimNotAllocError``).
        3. no ``stride`` of it and no whole-buffer call argument (``DimUseError``).
        4. ``size`` is affine and proven >= 1 (``ExpandDimSizeError``).
        5. ``index`` is affine in the sizes and loops around the allocation
           (``ExpandDimIndexExprError``).
        6. ``0 <= index < size`` there, proven (``ExpandDimBoundsError``, with a
           counterexample).

    Forwards/Kills:
        ``buf`` forwards to ``alloc``; statements keep their identity; rewritten read and
        window expressions die (hint: "rewritten by expand_dim").

    Example:
        ``expand_dim(p, "t", "n", "i")``::

            for i in seq(0, n):        ->    for i in seq(0, n):
                t: f32 @ DRAM                    t: f32[n] @ DRAM
                t = x[i]                         t[i] = x[i]
                y[i] = t                         y[i] = t[i]
    """
    prim = "expand_dim"
    a = alloc_of(buf, prim)
    assert isinstance(buf, AllocCursor)
    n = expr_arg(proc, buf.path(), size, prim, buf, "size", ExpandDimSizeError)
    positive(proc, buf, n, ExpandDimSizeError, prim)

    # resolved once, at the allocation: a name resolved at each access could mean different
    # loops at different accesses (two loops both called i), which would change the program
    i = expr_arg(proc, buf.path(), index, prim, buf, "index", ExpandDimIndexExprError)
    prove_in(proc, buf.path(), int_const(0), i, n, True, ExpandDimBoundsError, prim, buf)

    def per_use(u: Use) -> Planned:
        if isinstance(u.node, WindowExpr):
            return a.sym, (Point(i), *u.node.idx)
        return a.sym, (i, *coords(u))

    _, plans = plan_uses(proc, buf, prim, per_use)
    return reshape(proc, buf, prim, a, (n, *shape_of(a)), plans)


# ------------------------------------------------------------------------------ resize_dim


class ResizeDimSizeError(NotProvenError):
    """resize_dim, precondition 4: the size is not an affine expression proven positive."""


class ResizeDimOffsetError(BadArgumentError):
    """resize_dim, precondition 5: the offset is not affine in the sizes and loops around the
    allocation."""


class ResizeDimBoundsError(OutOfBoundsError):
    """resize_dim, precondition 6: an access leaves ``offset <= i < offset + size``."""


@primitive
def resize_dim(
    proc: Proc, buf: Buffer, dim: int, size: Any, offset: Any = 0
) -> Rewrite[DimCursors]:
    """Change the size of one dimension; accesses shift by ``-offset``.

    Args:
        proc: the proc to rewrite.
        buf: the allocation.
        dim: the dimension.
        size: its new size.
        offset: the old index that becomes index 0.

    Returns:
        The new proc and ``DimCursors`` (``alloc``, ``accesses``).

    Preconditions:
        1. ``buf`` is an allocation (``DimNotAllocError``).
        2. ``dim`` is a dimension of it (``DimIndexError``).
        3. no ``stride``/whole-buffer use (``DimUseError``).
        4. ``size`` is affine and proven >= 1 (``ResizeDimSizeError``).
        5. ``offset`` is affine (``ResizeDimOffsetError``).
        6. every access lies in ``offset <= i < offset + size``, proven
           (``ResizeDimBoundsError``, with a counterexample).

    Forwards/Kills:
        ``buf`` forwards to ``alloc``; rewritten accesses die.

    Example:
        ``resize_dim(p, "t", 0, 4, 2)``::

            t: f32[10] @ DRAM          ->    t: f32[4] @ DRAM
            for j in seq(0, 4):              for j in seq(0, 4):
                t[j + 2] = x[j]                  t[j] = x[j]
    """
    prim = "resize_dim"
    a = alloc_of(buf, prim)
    assert isinstance(buf, AllocCursor)
    d = dim_of(a, dim, prim, buf)
    n = expr_arg(proc, buf.path(), size, prim, buf, "size", ResizeDimSizeError)
    positive(proc, buf, n, ResizeDimSizeError, prim)
    off = expr_arg(proc, buf.path(), offset, prim, buf, "offset", ResizeDimOffsetError)

    def per_use(u: Use) -> Planned:
        idx = list(coords(u))
        c = idx[d]
        if isinstance(c, Interval):
            lo, hi = minus(c.lo, off), minus(c.hi, off)
            prove_in(proc, u.path, int_const(0), lo, hi, False, ResizeDimBoundsError, prim, buf)
            prove_in(proc, u.path, lo, hi, n, False, ResizeDimBoundsError, prim, buf)
            idx[d] = Interval(lo, hi)
        else:
            e = c.pt if isinstance(c, Point) else c
            new = minus(e, off)
            prove_in(proc, u.path, int_const(0), new, n, True, ResizeDimBoundsError, prim, buf)
            idx[d] = Point(new) if isinstance(c, Point) else new
        return a.sym, tuple(idx)

    _, plans = plan_uses(proc, buf, prim, per_use)
    shape = list(shape_of(a))
    shape[d] = n
    return reshape(proc, buf, prim, a, shape, plans)


# --------------------------------------------------------------------------- rearrange_dim


class RearrangeDimPermError(BadArgumentError):
    """rearrange_dim, precondition 2: the argument is not a permutation of the dimensions."""


@primitive
def rearrange_dim(proc: Proc, buf: Buffer, permutation: Any) -> Rewrite[DimCursors]:
    """Permute the dimensions of an allocation: new dimension ``k`` is old ``permutation[k]``.

    Args:
        proc: the proc to rewrite.
        buf: the allocation.
        permutation: a permutation of ``0 .. rank - 1``.

    Returns:
        The new proc and ``DimCursors`` (``alloc``, ``accesses``).

    Preconditions:
        1. ``buf`` is an allocation (``DimNotAllocError``).
        2. ``permutation`` permutes its dimensions (``RearrangeDimPermError``).
        3. no ``stride``/whole-buffer use, and every window keeps its ranged dimensions in
           order (a transposed window would change the callee's view; ``DimUseError``).

    Forwards/Kills:
        ``buf`` forwards to ``alloc``; rewritten accesses die.

    Example:
        ``rearrange_dim(p, "t", (1, 0))``::

            t: f32[4, 8] @ DRAM        ->    t: f32[8, 4] @ DRAM
            t[i, j] = x[i, j]                t[j, i] = x[i, j]
    """
    prim = "rearrange_dim"
    a = alloc_of(buf, prim)
    assert isinstance(buf, AllocCursor)
    rank = len(shape_of(a))
    perm = tuple(permutation) if isinstance(permutation, list | tuple) else ()
    if sorted(perm) != list(range(rank)) or any(isinstance(x, bool) for x in perm) or not rank:
        raise fail(
            RearrangeDimPermError,
            prim,
            f"{permutation!r} is not a permutation of 0..{rank - 1}",
            buf,
        )

    def per_use(u: Use) -> Planned:
        idx = coords(u)
        if isinstance(u.node, WindowExpr):
            ranged = [perm[k] for k in range(rank) if isinstance(idx[perm[k]], Interval)]
            if ranged != sorted(ranged):
                raise fail(DimUseError, prim, "a window would be transposed", buf)
        return a.sym, tuple(idx[perm[k]] for k in range(rank))

    _, plans = plan_uses(proc, buf, prim, per_use)
    shape = shape_of(a)
    return reshape(proc, buf, prim, a, [shape[p] for p in perm], plans)


# part two lives in dims_split; re-exported so that one import reaches every dimension primitive
from cursched.primitives.buffers.dims_split import (  # noqa: E402
    DivideDimNotDivisibleError,
    DivideDimQuotientError,
    MultDimNotConstError,
    UnrollBufferCursors,
    UnrollBufferIndexError,
    UnrollBufferNotConstError,
    divide_dim,
    mult_dim,
    unroll_buffer,
)

__all__ = [
    "DimCursors",
    "DimIndexError",
    "DimNotAllocError",
    "DimUseError",
    "DivideDimNotDivisibleError",
    "DivideDimQuotientError",
    "ExpandDimBoundsError",
    "ExpandDimIndexExprError",
    "ExpandDimSizeError",
    "MultDimNotConstError",
    "RearrangeDimPermError",
    "ResizeDimBoundsError",
    "ResizeDimOffsetError",
    "ResizeDimSizeError",
    "UnrollBufferCursors",
    "UnrollBufferIndexError",
    "UnrollBufferNotConstError",
    "divide_dim",
    "expand_dim",
    "mult_dim",
    "rearrange_dim",
    "resize_dim",
    "unroll_buffer",
]
