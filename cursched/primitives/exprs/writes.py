"""Write primitives: ``merge_writes``, ``split_write``, ``fold_into_reduce``,
``lift_reduce_constant``.

They turn assignments and reductions into one another. Some are exact and some reassociate
floating-point sums; each docstring says which. Exact means bit for bit under
docs/semantics.md (a right-hand side is computed in its destination's precision, so
``a = b; a += c`` and ``a = b + c`` round the same way). Reassociating ``(a + b) + c`` into
``a + (b + c)`` is exact on integers (control values, wrapping data integers) and not on
floats, as in Exo, which accepts these rewrites too; our tests compare such results with a
tolerance.
"""

from __future__ import annotations

from cursched.analysis import smt
from cursched.analysis.checks_exprs import ValueChangedError, check_unchanged
from cursched.analysis.context import context_of
from cursched.cursors import BlockCursor, BlockLoc, Cursor, Editor, NodeLoc, StmtCursor
from cursched.cursors.edits import Rewrite
from cursched.cursors.tree import walk
from cursched.errors import DependenceError, NotProvenError, SchedulingError, ShapeMismatchError
from cursched.ir.nodes import Assign, BinOp, Const, Expr, For, ProcDef, Read, Reduce, Stmt
from cursched.ir.paths import Path
from cursched.ir.printer import print_expr
from cursched.ir.types import TensorType
from cursched.primitives.exprs.expr_common import (
    buffers_read,
    buffers_written,
    decl_type,
    dest_type,
    fresh,
    index_equal,
    same_expr,
)
from cursched.primitives.registry import PrimCursors, checks_passed, fail, prim_cursors, primitive
from cursched.proc import Proc

# ----------------------------------------------------------------------------------- errors


class NotTwoWritesError(ShapeMismatchError):
    """merge_writes, precondition 1: the block is not two assignments or reductions."""


class DifferentTargetsError(NotProvenError):
    """merge_writes, precondition 2: the two statements may write different elements."""


class SecondReadsTargetError(DependenceError):
    """merge_writes, precondition 3: the second right-hand side reads the written buffer."""


class NotAWriteError(ShapeMismatchError):
    """split_write, precondition 1: the statement is not an assignment or a reduction."""


class RhsNotAdditionError(ShapeMismatchError):
    """split_write, precondition 2: the right-hand side is not an addition."""


class SplitReadsTargetError(DependenceError):
    """split_write, precondition 3: the second operand reads the written buffer."""


class FoldNotAssignError(ShapeMismatchError):
    """fold_into_reduce, precondition 1: the statement is not an assignment."""


class NotAnAccumulationError(ShapeMismatchError):
    """fold_into_reduce, precondition 2: the assignment is not ``a = a + e`` (same element)."""


class NotZeroThenLoopError(ShapeMismatchError):
    """lift_reduce_constant, precondition 1: the block is not ``x = 0`` then a loop."""


class NotScaledReductionError(ShapeMismatchError):
    """lift_reduce_constant, precondition 2: the loop body is not reductions ``x += c * e``
    into the zeroed element with one factor ``c``."""


class FactorNotInvariantError(NotProvenError):
    """lift_reduce_constant, precondition 3: the factor may change inside the loop."""


# ---------------------------------------------------------------------------------- cursors


@prim_cursors
class WriteCursors(PrimCursors):
    """What ``merge_writes``, ``fold_into_reduce`` and ``lift_reduce_constant`` return.

    Attributes:
        stmt: the resulting statement (the merged write, the reduction, or the new scaling
            assignment after the loop).
    """

    stmt: StmtCursor


@prim_cursors
class SplitWriteCursors(PrimCursors):
    """What ``split_write`` returns.

    Attributes:
        first: the write of the left operand (``a = b`` or ``a += b``).
        second: the reduction by the right operand (``a += c``).
    """

    first: StmtCursor
    second: StmtCursor


def _unchanged(
    prim: str,
    ir: ProcDef,
    at: Path,
    expr: Expr,
    write: Stmt,
    cls: type[SchedulingError],
    message: str,
    where: Cursor,
) -> None:
    """Raise ``cls`` when ``write`` (run at ``at``) may change the value of ``expr``."""
    try:
        check_unchanged(ir, at, expr, (write,), primitive=prim)
    except ValueChangedError as e:
        if e.counterexample is not None:
            message += f"\n  counterexample: {smt.format_model(e.counterexample)}"
        err = fail(cls, prim, message, where)
        err.counterexample = e.counterexample  # type: ignore[attr-defined]
        raise err from e


# ----------------------------------------------------------------------------- merge_writes


@primitive
def merge_writes(proc: Proc, block: BlockCursor) -> Rewrite[WriteCursors]:
    """Merge two consecutive writes of the same element into one.

    ``a = b; a = c`` and ``a += b; a = c`` -> ``a = c`` (exact: the first write is dead);
    ``a = b; a += c`` -> ``a = b + c`` (exact); ``a += b; a += c`` -> ``a += b + c``
    (reassociates: exact on integers, not on floats).

    Args:
        proc: the proc to rewrite.
        block: the two statements (a block cursor or a pattern such as ``"a = _; a += _"``).

    Returns:
        The new proc and ``WriteCursors``:
        ``stmt``: the merged statement.

    Preconditions:
        1. the block holds two statements, each ``=`` or ``+=`` (``NotTwoWritesError``).
        2. they write the same buffer at indices proven equal (``DifferentTargetsError``).
        3. the first write leaves the value of the second right-hand side unchanged: no
           element it reads is written by the first (through windows too; proven by the
           dependence test, with a counterexample) (``SecondReadsTargetError``).

    Forwards/Kills:
        When the second is ``=``, the first dies (hint: "overwritten; removed by
        merge_writes") and the second keeps its identity. Otherwise both die (hint: "merged
        by merge_writes; use .stmt"); their right-hand sides live on inside the new one.

    Example:
        ``merge_writes(p, "y[_] = _; y[_] += _")``::

            y[i] = x[i]          ->    y[i] = x[i] + 2.0 * x[i]
            y[i] += 2.0 * x[i]
    """
    prim = "merge_writes"
    ir = proc.ir()
    nodes = block.stmts()
    if len(nodes) != 2 or not all(isinstance(s, Assign | Reduce) for s in nodes):
        msg = f"wants two consecutive = or += statements, got {block.describe()}"
        raise fail(NotTwoWritesError, prim, msg, block)
    s1, s2 = nodes
    assert isinstance(s1, Assign | Reduce) and isinstance(s2, Assign | Reduce)
    ctx = context_of(ir, block.paths()[0])
    same = s1.sym is s2.sym and all(
        index_equal(a, b, ctx) for a, b in zip(s1.idx, s2.idx, strict=True)
    )
    if not same:
        raise fail(
            DifferentTargetsError, prim, "the two statements may write different elements", block
        )
    _unchanged(
        prim,
        ir,
        block.paths()[0],
        s2.rhs,
        s1,
        SecondReadsTargetError,
        f"the second right-hand side {print_expr(s2.rhs)} reads what the first writes",
        block,
    )
    loc = block.block()
    checks_passed()
    ed = Editor(ir)
    if isinstance(s2, Assign):
        first = loc.stmt_paths()[0]
        one = BlockLoc(loc.parent, loc.attr, loc.lo, loc.lo + 1)
        ed.delete(one, hint="overwritten; removed by merge_writes")
        return ed.done(WriteCursors, stmt=NodeLoc(first))
    t = dest_type(ir, s1)
    assert t is not None, "a write's destination is data"
    rhs = BinOp("+", s1.rhs, s2.rhs, t)
    new: Stmt = (
        Assign(s1.sym, s1.idx, rhs) if isinstance(s1, Assign) else Reduce(s1.sym, s1.idx, rhs)
    )
    out = ed.replace(loc, (new,), hint="merged by merge_writes; use .stmt")
    return ed.done(WriteCursors, stmt=NodeLoc(out.stmt_paths()[0]))


# ------------------------------------------------------------------------------ split_write


@primitive
def split_write(proc: Proc, stmt: StmtCursor) -> Rewrite[SplitWriteCursors]:
    """Split a write of a sum into two writes: the inverse of ``merge_writes``' sums.

    ``a = b + c`` -> ``a = b; a += c`` (exact); ``a += b + c`` -> ``a += b; a += c``
    (reassociates: exact on integers, not on floats).

    Args:
        proc: the proc to rewrite.
        stmt: the write (a cursor or a pattern such as ``"y[_] = _"``).

    Returns:
        The new proc and ``SplitWriteCursors``:
        ``first``: ``a = b`` (or ``a += b``);
        ``second``: ``a += c``.

    Preconditions:
        1. ``stmt`` is ``=`` or ``+=`` (``NotAWriteError``).
        2. its right-hand side is an addition ``b + c`` (``RhsNotAdditionError``).
        3. ``c`` does not read the written element (through windows too; proven by the
           dependence test, with a counterexample) (``SplitReadsTargetError``).

    Forwards/Kills:
        Kills the statement (hint: "split by split_write; use .first and .second"); ``b`` and
        ``c`` live on in the new statements.

    Example:
        ``split_write(p, "y[_] = _")``::

            y[i] = x[i] + 2.0 * x[i]    ->    y[i] = x[i]
                                              y[i] += 2.0 * x[i]
    """
    prim = "split_write"
    ir = proc.ir()
    s = stmt.node()
    if not isinstance(s, Assign | Reduce):
        raise fail(NotAWriteError, prim, f"{stmt.describe()} is not = or +=", stmt)
    if not (isinstance(s.rhs, BinOp) and s.rhs.op == "+"):
        msg = f"the right-hand side {print_expr(s.rhs)} is not an addition"
        raise fail(RhsNotAdditionError, prim, msg, stmt)
    b, c = s.rhs.lhs, s.rhs.rhs
    one: Stmt = Assign(s.sym, s.idx, b) if isinstance(s, Assign) else Reduce(s.sym, s.idx, b)
    _unchanged(
        prim,
        ir,
        stmt.path(),
        c,
        one,
        SplitReadsTargetError,
        f"the second operand {print_expr(c)} reads what the statement writes",
        stmt,
    )
    two = Reduce(s.sym, tuple(fresh(i) for i in s.idx), c)
    checks_passed()
    ed = Editor(ir)
    out = ed.replace(
        stmt.as_block().block(), (one, two), hint="split by split_write; use .first and .second"
    )
    p1, p2 = out.stmt_paths()
    return ed.done(SplitWriteCursors, first=NodeLoc(p1), second=NodeLoc(p2))


# ------------------------------------------------------------------------- fold_into_reduce


@primitive
def fold_into_reduce(proc: Proc, assign: StmtCursor) -> Rewrite[WriteCursors]:
    """Turn ``a = a + e`` into ``a += e`` (exact: both compute ``a + e`` in ``a``'s precision).

    Args:
        proc: the proc to rewrite.
        assign: the assignment (a cursor or a pattern such as ``"y[_] = _"``).

    Returns:
        The new proc and ``WriteCursors``:
        ``stmt``: the reduction.

    Preconditions:
        1. ``assign`` is an assignment (``FoldNotAssignError``).
        2. its right-hand side is ``a + e`` whose left operand reads the written element
           (same buffer, indices proven equal) (``NotAnAccumulationError``).

    Forwards/Kills:
        Kills the assignment and the read of ``a`` (hint: "folded by fold_into_reduce; use
        .stmt"); ``e`` lives on in the reduction.

    Example:
        ``fold_into_reduce(p, "y[_] = _")``::

            y[i] = y[i] + x[i]    ->    y[i] += x[i]
    """
    prim = "fold_into_reduce"
    ir = proc.ir()
    s = assign.node()
    if not isinstance(s, Assign):
        raise fail(FoldNotAssignError, prim, f"{assign.describe()} is not an assignment", assign)
    ctx = context_of(ir, assign.path())
    rhs = s.rhs
    ok = (
        isinstance(rhs, BinOp)
        and rhs.op == "+"
        and isinstance(rhs.lhs, Read)
        and rhs.lhs.sym is s.sym
        and len(rhs.lhs.idx) == len(s.idx)
        and all(index_equal(a, b, ctx) for a, b in zip(rhs.lhs.idx, s.idx, strict=True))
    )
    if not ok or not isinstance(rhs, BinOp):
        msg = f"{print_expr(rhs)} is not `{s.sym.name} + e` reading the written element"
        raise fail(NotAnAccumulationError, prim, msg, assign)
    checks_passed()
    ed = Editor(ir)
    out = ed.replace(
        assign.as_block().block(),
        (Reduce(s.sym, s.idx, rhs.rhs),),
        hint="folded by fold_into_reduce; use .stmt",
    )
    return ed.done(WriteCursors, stmt=NodeLoc(out.stmt_paths()[0]))


# --------------------------------------------------------------------- lift_reduce_constant


def _is_zero(e: object) -> bool:
    return isinstance(e, Const) and not isinstance(e.value, bool) and e.value == 0


@primitive
def lift_reduce_constant(proc: Proc, block: BlockCursor) -> Rewrite[WriteCursors]:
    """Take a constant factor out of a reduction loop: ``x = 0; for i: x += c * e`` ->
    ``x = 0; for i: x += e; x = c * x``.

    Distributes ``c`` over the sum: exact on integers (wrapping included), NOT on floats,
    where the products round differently and a non-finite ``c`` turns a loop that runs zero
    times into ``c * 0`` (NaN) instead of 0; accepted as in Exo.

    Args:
        proc: the proc to rewrite.
        block: the two statements ``x = 0`` and the loop (a block cursor or a pattern).

    Returns:
        The new proc and ``WriteCursors``:
        ``stmt``: the new ``x = c * x`` after the loop.

    Preconditions:
        1. the block is an assignment of zero followed by a loop (``NotZeroThenLoopError``).
        2. every statement of the loop body is a reduction ``x += c * e`` into the zeroed
           element (indices proven equal), with the same factor ``c``
           (``NotScaledReductionError``).
        3. ``c`` does not use the loop variable nor read a buffer the loop writes
           (``FactorNotInvariantError``).

    Forwards/Kills:
        The assignment, the loop and the reductions keep their identity; the factors in the
        reductions die (hint: "lifted out of the loop by lift_reduce_constant; use .stmt").

    Example:
        ``lift_reduce_constant(p, p.find("s = _").expand(0, 1))``::

            s = 0.0                       ->    s = 0.0
            for i in seq(0, n):                 for i in seq(0, n):
                s += a * x[i]                       s += x[i]
                                                s = a * s
    """
    prim = "lift_reduce_constant"
    ir = proc.ir()
    nodes = block.stmts()
    zero, loop = nodes if len(nodes) == 2 else (None, None)
    if not (isinstance(zero, Assign) and _is_zero(zero.rhs) and isinstance(loop, For)):
        msg = f"wants `x = 0` followed by a loop, got {block.describe()}"
        raise fail(NotZeroThenLoopError, prim, msg, block)
    ctx = context_of(ir, (*block.paths()[1], ("body", 0)))
    factor = None
    for s in loop.body:
        ok = (
            isinstance(s, Reduce)
            and s.sym is zero.sym
            and all(index_equal(a, b, ctx) for a, b in zip(s.idx, zero.idx, strict=True))
            and isinstance(s.rhs, BinOp)
            and s.rhs.op == "*"
        )
        if ok and isinstance(s, Reduce) and isinstance(s.rhs, BinOp):
            factor = factor if factor is not None else s.rhs.lhs
            ok = same_expr(factor, s.rhs.lhs, ctx)
        if not ok:
            msg = f"the loop body is not only `{zero.sym.name} += c * e` into the zeroed element"
            raise fail(NotScaledReductionError, prim, msg, block)
    assert factor is not None, "a loop body is never empty"
    uses_iter = any(getattr(n, "sym", None) is loop.iter for _, n in walk(factor))
    written = buffers_written(loop.body, ctx.windows)
    if uses_iter or buffers_read(factor, ctx.windows) & written:
        msg = f"the factor {print_expr(factor)} may change inside the loop"
        raise fail(FactorNotInvariantError, prim, msg, block)
    t = dest_type(ir, zero)
    decl = decl_type(ir, zero.sym)
    elem = decl.elem if isinstance(decl, TensorType) else decl
    assert t is not None and elem is not None, "a write's destination is data"
    body = tuple(
        s.replace(rhs=s.rhs.rhs) if isinstance(s, Reduce) and isinstance(s.rhs, BinOp) else s
        for s in loop.body
    )
    new_loop = loop.replace(body=body)
    here = Read(zero.sym, tuple(fresh(i) for i in zero.idx), elem)
    scale = Assign(zero.sym, tuple(fresh(i) for i in zero.idx), BinOp("*", fresh(factor), here, t))
    same = [(a, b) for a, b in zip(loop.body, body, strict=True) if a is not b]
    checks_passed()
    ed = Editor(ir)
    loc = block.block()
    out = ed.replace(
        loc,
        (zero, new_loop, scale),
        same=[(loop, new_loop), *same],
        hint="lifted out of the loop by lift_reduce_constant; use .stmt",
    )
    return ed.done(WriteCursors, stmt=NodeLoc(out.stmt_paths()[2]))


__all__ = [
    "DifferentTargetsError",
    "FactorNotInvariantError",
    "FoldNotAssignError",
    "NotAWriteError",
    "NotAnAccumulationError",
    "NotScaledReductionError",
    "NotTwoWritesError",
    "NotZeroThenLoopError",
    "RhsNotAdditionError",
    "SecondReadsTargetError",
    "SplitReadsTargetError",
    "SplitWriteCursors",
    "WriteCursors",
    "fold_into_reduce",
    "lift_reduce_constant",
    "merge_writes",
    "split_write",
]
