"""``divide_with_recompute``: overlapped tiling of a loop (Exo 1.0's primitive of that name).

A stencil's producer loop is divided into ``outer_hi`` tiles of ``outer_stride`` iterations,
each tile widened so that the tiles together still cover the whole range: neighbouring tiles
then recompute a few iterations, which is what lets a consumer be fused tile by tile without
sharing rows between tiles (Halide's ``compute_at`` with recomputation).

Registered with ``@primitive`` (``cursched.primitives.registry``).
"""

from __future__ import annotations

from typing import Annotated, Any

from cursched.analysis import affine as af
from cursched.analysis import smt
from cursched.analysis.checks import NotBoundedError, ParallelError, check_le, check_parallel
from cursched.analysis.checks_loops import NotIdempotentError, check_idempotent
from cursched.analysis.context import context_of
from cursched.cursors import BlockLoc, Editor, ForCursor, NodeLoc
from cursched.cursors.edits import Rewrite
from cursched.cursors.stmts import BlockCursor
from cursched.errors import (
    BadArgumentError,
    BadNameError,
    DependenceError,
    NotProvenError,
)
from cursched.ir.nodes import Expr, For
from cursched.ir.symbols import Sym
from cursched.primitives.arguments import NewName
from cursched.primitives.loops.loop_common import (
    aff,
    expr_of,
    index_expr,
    int_const,
    safety,
    same_pairs,
    subst_simplify,
)
from cursched.primitives.registry import PrimCursors, fail, prim_cursors, primitive
from cursched.proc import Proc


class RecomputeNamesError(BadNameError):
    """divide_with_recompute, precondition 1: the new names are not two different identifiers."""


class RecomputeStrideError(BadArgumentError):
    """divide_with_recompute, precondition 2: the stride is not a positive integer."""


class RecomputeTooManyTilesError(NotProvenError):
    """divide_with_recompute, precondition 4: ``outer_hi * outer_stride`` may exceed the
    loop's trip count (the tiles would run iterations the loop never had)."""


class RecomputeNoTileError(NotProvenError):
    """divide_with_recompute, precondition 5: the loop may run while ``outer_hi`` is not
    positive (no tile would run its iterations)."""


class RecomputeDependenceError(DependenceError):
    """divide_with_recompute, precondition 6: iterations of the loop depend on each other
    (tiles run them out of order)."""


class RecomputeNotIdempotentError(NotProvenError):
    """divide_with_recompute, precondition 7: the body is not idempotent (overlapping tiles
    run some iterations twice)."""


@prim_cursors
class DivideWithRecomputeCursors(PrimCursors):
    """What ``divide_with_recompute`` returns.

    Attributes:
        outer: the loop over tiles (the original loop's cursors forward here).
        inner: the loop inside a tile, ``outer_stride`` plus the overlap iterations.
        body: the rewritten body inside ``inner``.
    """

    outer: ForCursor
    inner: ForCursor
    body: BlockCursor


def _check_stride(stride: Any, loop: ForCursor) -> int:
    if isinstance(stride, bool) or not isinstance(stride, int) or stride < 1:
        msg = f"outer_stride must be a positive integer, got {stride!r}"
        raise fail(RecomputeStrideError, "divide_with_recompute", msg, loop)
    return stride


def _check_cover(proc: Proc, loop: ForCursor, tiles: Expr, stride: int) -> None:
    """Preconditions 4 and 5: the tiles start inside the range, and some tile runs when the
    loop does (``outer_hi >= 1`` wherever ``lo < hi``)."""
    name = "divide_with_recompute"
    ir, path, L = proc.ir(), loop.path(), loop.loop()
    n_tiled = expr_of(aff(tiles).scale(stride))
    try:
        check_le(ir, path, n_tiled, expr_of(aff(L.hi) - aff(L.lo)), primitive=name)
    except NotBoundedError as e:
        raise safety(RecomputeTooManyTilesError, name, e, loop) from e
    runs_then_tiles = af.Or((af.le(aff(L.hi), aff(L.lo)), af.le(af.Aff.num(1), aff(tiles))))
    res = smt.valid(runs_then_tiles, context_of(ir, path).props())
    if not res.ok:
        msg = "the loop may run while outer_hi < 1, so no tile would run its iterations"
        err = fail(RecomputeNoTileError, name, msg, loop)
        err.counterexample = res.counterexample  # type: ignore[attr-defined]
        raise err


def _check_reorderable(proc: Proc, loop: ForCursor) -> None:
    """Preconditions 6 and 7: the tiles run iterations out of order and some of them twice,
    which is the same as the loop exactly when no iteration depends on another and running
    one iteration again changes nothing."""
    name = "divide_with_recompute"
    ir, path = proc.ir(), loop.path()
    try:
        check_parallel(ir, path, primitive=name)
    except ParallelError as e:
        raise safety(RecomputeDependenceError, name, e, loop) from e
    body = tuple((*path, ("body", k)) for k in range(len(loop.loop().body)))
    try:
        check_idempotent(ir, body, primitive=name)
    except NotIdempotentError as e:
        raise safety(RecomputeNotIdempotentError, name, e, loop) from e


def _tidy_extent(n: af.Aff, ext: af.Aff, stride: int, facts: list[af.Prop]) -> af.Aff:
    """The inner trip count ``n`` in the simplest form proven equal to it under the asserts:
    ``S`` when the tiles cover the range exactly, ``S + N % S`` for ``outer_hi = N / S``
    (``H - 4 * (H / 4) + 6`` reads ``6`` when ``H % 4 == 0`` is asserted)."""
    n = af.simplify_aff(n)
    # ``(H + 2) % 4`` is ``2`` when the asserts make 4 divide ``H``
    cands = [af.Aff.num(stride), af.Aff.num(stride + ext.const % stride)]
    cands.append(af.simplify_aff(af.mod(ext, stride) + stride))
    for cand in cands:
        if cand == n or smt.valid(af.Eq(n - cand), facts).ok:
            return cand
    return n


@primitive
def divide_with_recompute(
    proc: Proc,
    loop: ForCursor,
    outer_hi: Any,
    outer_stride: int,
    new_iters: Annotated[tuple[str, str], NewName(RecomputeNamesError, at="loop", count=2)],
    unsafe_skip_checks: bool = False,
) -> Rewrite[DivideWithRecomputeCursors]:
    """Divide a loop into ``outer_hi`` overlapping tiles ``outer_stride`` apart.

    With ``N = hi - lo`` and ``S = outer_stride``, the inner loop runs
    ``S + (N - outer_hi * S)`` iterations, so the last tile ends at ``hi`` and every tile
    but the last recomputes the first iterations of the next one.

    Args:
        proc: the proc to rewrite.
        loop: the loop (a cursor, or a loop name such as ``"y"``).
        outer_hi: the number of tiles: an int, a control expression or its text
            (``"H / 32"``).
        outer_stride: the distance between the starts of consecutive tiles.
        new_iters: the names of the tile and the in-tile iteration variables.
        unsafe_skip_checks: skip preconditions 6 and 7 (you promise the iterations are
            independent and idempotent).

    Returns:
        The new proc and ``DivideWithRecomputeCursors``:
        ``outer``: the loop over tiles; ``inner``: the loop in a tile; ``body``: the block of
        the rewritten body.

    Preconditions:
        1. ``new_iters`` are two different identifiers (``RecomputeNamesError``).
        2. ``outer_stride`` is a positive integer (``RecomputeStrideError``).
        3. ``outer_hi`` is a quasi-affine expression of the sizes and enclosing loop
           variables (``BadIndexExpressionError``).
        4. ``outer_hi * outer_stride <= hi - lo`` is proven (``RecomputeTooManyTilesError``,
           with a counterexample).
        5. ``outer_hi >= 1`` wherever the loop runs (``RecomputeNoTileError``): Exo 1.0 does
           not check this, and with ``outer_hi = 0`` drops every iteration.
        6. no iteration depends on another (``RecomputeDependenceError``, from
           ``cursched.analysis.checks.check_parallel``): the tiles run iterations out of
           order.
        7. the body is idempotent (``RecomputeNotIdempotentError``, from
           ``cursched.analysis.checks_loops.check_idempotent``): overlapping tiles run it
           twice for some iterations. Exo 1.0 checks only this one of 6 and 7.

    Forwards/Kills:
        ``loop`` forwards to ``outer``; the body statements forward to their rewritten
        copies in ``inner``; loops nested in the body keep their identity. Rewritten index
        expressions die. Both new loops are ``seq``, also for a ``par`` loop (parallel tiles
        would write their overlap at the same time).

    Example:
        ``divide_with_recompute(p, "y", "H / 4", 4, ["yo", "yi"])`` (``H % 4 == 0``)::

            for y in seq(0, H + 2):       ->    for yo in seq(0, H / 4):
                t[y] = 2.0 * x[y]                   for yi in seq(0, 6):
                                                        t[4 * yo + yi] = 2.0 * x[4 * yo + yi]
    """
    name = "divide_with_recompute"
    oname, iname = new_iters  # checked by the registry (arguments.NewName)
    stride = _check_stride(outer_stride, loop)
    ir, path, L = proc.ir(), loop.path(), loop.loop()
    tiles = index_expr(ir, path, outer_hi, name, loop, "outer_hi")
    _check_cover(proc, loop, tiles, stride)
    if not unsafe_skip_checks:
        _check_reorderable(proc, loop)
    io, ii = Sym(oname), Sym(iname)
    lo, ext = aff(L.lo), aff(L.hi) - aff(L.lo)
    ctx = context_of(ir, path)
    inner_n = _tidy_extent(ext - aff(tiles).scale(stride) + stride, ext, stride, ctx.props())
    ranges = dict(ctx.ranges())
    ranges[io], ranges[ii] = (0, None), (0, None)
    env = {L.iter: expr_of(lo + af.Aff.var(io).scale(stride) + af.Aff.var(ii))}
    body = tuple(subst_simplify(s, env, ranges) for s in L.body)
    # both loops are sequential: two tiles running in parallel would write the elements of
    # their overlap at the same time (a race, even with equal values)
    inner = For(ii, int_const(0), expr_of(inner_n), body, "seq")
    outer = For(io, int_const(0), tiles, (inner,), "seq")
    ed = Editor(ir)
    out = ed.replace(
        loop.as_block().block(),
        (outer,),
        same=[(L, outer), *same_pairs(L.body, body)],
        hint="divided by divide_with_recompute",
    )
    opath = out.stmt_paths()[0]
    ipath = (*opath, ("body", 0))
    return ed.done(
        DivideWithRecomputeCursors,
        outer=NodeLoc(opath),
        inner=NodeLoc(ipath),
        body=BlockLoc(ipath, "body", 0, len(body)),
    )


__all__ = [
    "DivideWithRecomputeCursors",
    "RecomputeDependenceError",
    "RecomputeNamesError",
    "RecomputeNoTileError",
    "RecomputeNotIdempotentError",
    "RecomputeStrideError",
    "RecomputeTooManyTilesError",
    "divide_with_recompute",
]
