"""Primitives on a loop's iteration range: ``cut_loop``, ``shift_loop``, ``join_loops``.

Each is a rewrite registered with ``@primitive`` (``cursched.primitives.registry``).
"""

from __future__ import annotations

from typing import Annotated, Any

from cursched.analysis import affine as af
from cursched.analysis.checks import (
    NotBoundedError,
    NotEqualError,
    ParallelError,
    check_expr_equal,
    check_le,
    check_parallel,
)
from cursched.analysis.context import context_of
from cursched.cursors import BlockLoc, Editor, ForCursor, NodeLoc
from cursched.cursors.edits import Rewrite
from cursched.errors import (
    NotProvenError,
    OutOfBoundsError,
    RaceError,
    ShapeMismatchError,
)
from cursched.ir.alpha import alpha_equal
from cursched.ir.nodes import Expr, For, ProcDef
from cursched.primitives.arguments import Index
from cursched.primitives.loops.loop_common import (
    aff,
    expr_of,
    fresh_copy,
    rename_stmt,
    safety,
    same_pairs,
    subst_simplify,
)
from cursched.primitives.registry import PrimCursors, checks_passed, fail, prim_cursors, primitive
from cursched.proc import Proc

# --------------------------------------------------------------------------------- cut_loop


class CutOutOfRangeError(OutOfBoundsError):
    """cut_loop, precondition 2: the cut point is not provably within ``[lo, hi]``."""


@prim_cursors
class CutLoopCursors(PrimCursors):
    """What ``cut_loop`` returns.

    Attributes:
        first: the loop over ``[lo, at)`` (the original loop forwards here).
        second: the loop over ``[at, hi)``.
    """

    first: ForCursor
    second: ForCursor


@primitive
def cut_loop(
    proc: Proc, loop: ForCursor, at: Annotated[Any, Index(at="loop", what="cut point")]
) -> Rewrite[CutLoopCursors]:
    """Cut a loop into two consecutive loops at an iteration.

    Args:
        proc: the proc to rewrite.
        loop: the loop (a cursor or a loop name).
        at: the first iteration of the second loop: an int, an integer control expression,
            or its text over the sizes and enclosing loop variables (``"n - 4"``).

    Returns:
        The new proc and ``CutLoopCursors``:
        ``first``: the loop ``seq(lo, at)``; ``second``: the loop ``seq(at, hi)``.

    Preconditions:
        1. ``at`` is a quasi-affine expression of the sizes and enclosing loop variables
           (``BadIndexExpressionError``).
        2. ``lo <= at <= hi`` wherever the loop runs, proven (``CutOutOfRangeError``, with a
           counterexample).

    Forwards/Kills:
        ``loop`` forwards to ``first``, whose body is the original body (every statement
        keeps its identity); ``second`` holds fresh copies. Nothing dies.

    Example:
        ``cut_loop(p, "i", "n - 1")``::

            for i in seq(0, n):        ->    for i in seq(0, n - 1):
                x[i] = 0.0                       x[i] = 0.0
                                             for i in seq(n - 1, n):
                                                 x[i] = 0.0
    """
    name = "cut_loop"
    ir, path, L = proc.ir(), loop.path(), loop.loop()
    cut: Expr = at  # resolved by the registry (arguments.Index)
    for lo, hi in ((L.lo, cut), (cut, L.hi)):
        try:
            check_le(ir, path, lo, hi, primitive=name)
        except NotBoundedError as e:
            raise safety(CutOutOfRangeError, name, e, loop) from e
    first = L.replace(hi=cut)
    it2 = L.iter.copy()
    body2 = fresh_copy(L.body, {L.iter: it2})
    second = For(it2, cut, L.hi, body2, L.mode)
    checks_passed()
    ed = Editor(ir)
    out = ed.replace(loop.as_block().block(), (first, second), same=[(L, first)])
    p1, p2 = out.stmt_paths()
    return ed.done(CutLoopCursors, first=NodeLoc(p1), second=NodeLoc(p2))


# ------------------------------------------------------------------------------- shift_loop


class ShiftNegativeError(NotProvenError):
    """shift_loop, precondition 2: the new lower bound is not provably non-negative."""


@prim_cursors
class ShiftLoopCursors(PrimCursors):
    """What ``shift_loop`` returns.

    Attributes:
        loop: the shifted loop.
    """

    loop: ForCursor


@primitive
def shift_loop(
    proc: Proc, loop: ForCursor, new_lo: Annotated[Any, Index(at="loop", what="new lower bound")]
) -> Rewrite[ShiftLoopCursors]:
    """Shift a loop's iteration range to start at ``new_lo``, compensating in the body.

    Args:
        proc: the proc to rewrite.
        loop: the loop (a cursor or a loop name).
        new_lo: the new lower bound: an int, an integer control expression or its text.

    Returns:
        The new proc and ``ShiftLoopCursors``:
        ``loop``: the shifted loop ``seq(new_lo, new_lo + hi - lo)``.

    Preconditions:
        1. ``new_lo`` is a quasi-affine expression of the sizes and enclosing loop variables
           (``BadIndexExpressionError``).
        2. ``0 <= new_lo``, proven (``ShiftNegativeError``, with a counterexample), as in Exo.

    Forwards/Kills:
        ``loop`` forwards to ``loop`` (it keeps its iteration variable). Statements of the
        body forward to their rewritten selves; rewritten index expressions die.

    Example:
        ``shift_loop(p, "i", 0)``::

            for i in seq(1, n):        ->    for i in seq(0, n - 1):
                x[i] = 0.0                       x[i + 1] = 0.0
    """
    name = "shift_loop"
    ir, path, L = proc.ir(), loop.path(), loop.loop()
    new: Expr = new_lo  # resolved by the registry (arguments.Index)
    try:
        check_le(ir, path, 0, new, primitive=name)
    except NotBoundedError as e:
        raise safety(ShiftNegativeError, name, e, loop) from e
    lo, hi, nlo = aff(L.lo), aff(L.hi), aff(new)
    ranges = dict(context_of(ir, path).ranges())
    shifted = af.Aff.var(L.iter) + (lo - nlo)
    env = {L.iter: expr_of(shifted)}
    # the loop keeps its variable: reads of i become i + (lo - new_lo), simplified
    body = tuple(subst_simplify(s, env, ranges) for s in L.body)
    moved = L.replace(lo=new, hi=expr_of(af.simplify_aff(nlo + hi - lo, ranges)), body=body)
    checks_passed()
    ed = Editor(ir)
    out = ed.replace(loop.as_block().block(), (moved,), same=same_pairs(L.body, body))
    return ed.done(ShiftLoopCursors, loop=NodeLoc(out.stmt_paths()[0]))


# ------------------------------------------------------------------------------- join_loops


class JoinNotAdjacentError(ShapeMismatchError):
    """join_loops, precondition 1: the second loop does not directly follow the first."""


class JoinBodiesDifferError(ShapeMismatchError):
    """join_loops, precondition 2: the bodies differ (up to the loop variables)."""


class JoinNotContiguousError(NotProvenError):
    """join_loops, precondition 3: the first loop's ``hi`` is not provably the second's
    ``lo``, or the ranges are not provably ``lo1 <= hi1 <= hi2``."""


class JoinParallelError(RaceError):
    """join_loops, precondition 4: two ``par`` loops would join into a racy ``par`` loop."""


class JoinAxisError(ShapeMismatchError):
    """join_loops, precondition 5: the loops are bound to different CUDA axes, or one is
    bound and the other not (the joined loop would be one bound ``seq`` loop, or the second
    range would silently move to another axis)."""


def _check_join_axes(a: For, b: For, first: ForCursor) -> None:
    """Precondition 5 (campaign finding, seed 2026 schedule 10217: a loop bound to
    ``threadIdx.y`` joined with a ``seq`` one became a ``seq`` loop still bound, which
    ``verify_proc`` rejects; the same rule as ``fuse``'s ``FuseAxisError``)."""
    if a.axis != b.axis:
        msg = f"the loops are bound to {a.axis or 'no axis'} and {b.axis or 'no axis'}"
        raise fail(JoinAxisError, "join_loops", msg, first)


@prim_cursors
class JoinLoopsCursors(PrimCursors):
    """What ``join_loops`` returns.

    Attributes:
        loop: the joined loop.
    """

    loop: ForCursor


def _bodies_equal(ir: ProcDef, a: For, b: For) -> bool:
    body_b = tuple(rename_stmt(s, {b.iter: a.iter}) for s in b.body)
    pa = ProcDef("body", ir.args, (), a.body)
    pb = ProcDef("body", ir.args, (), body_b)
    return alpha_equal(pa, pb)


@primitive
def join_loops(proc: Proc, first: ForCursor, second: ForCursor) -> Rewrite[JoinLoopsCursors]:
    """Join two consecutive loops with the same body over adjacent ranges into one loop.

    Args:
        proc: the proc to rewrite.
        first: the loop over ``[lo, mid)``.
        second: the loop over ``[mid, hi)`` right after it.

    Returns:
        The new proc and ``JoinLoopsCursors``:
        ``loop``: the loop over ``[lo, hi)``.

    Preconditions:
        1. ``second`` directly follows ``first`` (``JoinNotAdjacentError``).
        2. the bodies are equal up to renaming the loop variable and bound names
           (``JoinBodiesDifferError``).
        3. ``first.hi == second.lo`` and ``first.lo <= first.hi <= second.hi``, proven
           (``JoinNotContiguousError``, with a counterexample).
        4. two ``par`` loops join into a race-free ``par`` loop (``JoinParallelError``); a
           ``seq`` and a ``par`` loop join into a ``seq`` loop.
        5. both loops bound to the same CUDA axis, or neither bound (``JoinAxisError``).

    Forwards/Kills:
        ``first`` forwards to ``loop`` (with its body); ``second`` dies (hint: "joined into
        `loop`").

    Example:
        ``join_loops(p, "i #0", "i #1")``::

            for i in seq(0, 4):        ->    for i in seq(0, n):
                x[i] = 0.0                       x[i] = 0.0
            for i in seq(4, n):
                x[i] = 0.0
    """
    name = "join_loops"
    ir = proc.ir()
    p1, p2 = first.path(), second.path()
    if p1[:-1] != p2[:-1] or p1[-1][0] != p2[-1][0] or p2[-1][1] != p1[-1][1] + 1:
        msg = "the second loop does not directly follow the first"
        raise fail(JoinNotAdjacentError, name, msg, second)
    a, b = first.loop(), second.loop()
    if not _bodies_equal(ir, a, b):
        raise fail(JoinBodiesDifferError, name, "the two loop bodies differ", second)
    _check_join_axes(a, b, first)
    try:
        check_expr_equal(ir, p1, a.hi, b.lo, primitive=name)
        check_le(ir, p1, a.lo, a.hi, primitive=name)
        check_le(ir, p1, b.lo, b.hi, primitive=name)
    except (NotEqualError, NotBoundedError) as e:
        raise safety(JoinNotContiguousError, name, e, first) from e
    mode = a.mode if a.mode == b.mode else "seq"
    joined = a.replace(hi=b.hi, mode=mode)
    ed = Editor(ir)
    loc = BlockLoc(p1[:-1], p1[-1][0], p1[-1][1], p1[-1][1] + 2)
    out = ed.replace(loc, (joined,), same=[(a, joined)], hint="joined into `loop`")
    path = out.stmt_paths()[0]
    if mode == "par":
        try:
            check_parallel(ed.ir, path, primitive=name)
        except ParallelError as e:
            raise safety(JoinParallelError, name, e, first) from e
    return ed.done(JoinLoopsCursors, loop=NodeLoc(path))
