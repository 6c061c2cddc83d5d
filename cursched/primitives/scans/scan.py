"""``scan_fuse``: fuse a running-value loop with a later loop that reduces through a
rescalable function of that value's final result (online softmax, flash attention).

The legality questions (which statements update what, how each term scales with the running
value, where each accumulator starts) are answered by ``cursched.primitives.scans.scan_checks`` and
``cursched.analysis.rescale``; this module holds the error classes, the cursors dataclass and
the rewrite.
"""

from __future__ import annotations

from cursched.analysis.checks import CommuteError, NotEqualError, check_commute, check_expr_equal
from cursched.cursors import (
    BlockCursor,
    BlockLoc,
    Editor,
    ExprCursor,
    ForCursor,
    NodeLoc,
    StmtCursor,
)
from cursched.cursors.edits import Rewrite
from cursched.ir.memory import DRAM
from cursched.ir.nodes import Alloc, Assign, BinOp, Const, Expr, Extern, For, Read, Stmt
from cursched.ir.paths import Path
from cursched.ir.symbols import Sym
from cursched.ir.types import DataType
from cursched.primitives.loops.loop_common import rename_stmt, safety, same_pairs
from cursched.primitives.registry import PrimCursors, checks_passed, fail, prim_cursors, primitive
from cursched.primitives.scans.scan_checks import (
    AccumulatorAliasError,
    AccumulatorIndexError,
    AccumulatorInitError,
    AccumulatorReadError,
    AccumulatorWritesError,
    NotRescalableError,
    ScanAnalysis,
    ScanBetweenError,
    ScanBoundsError,
    ScanFirstLoopError,
    ScanLoopOrderError,
    Update,
    analyse,
    expr_paths,
    map_running,
)
from cursched.proc import Proc

__all__ = [
    "AccumulatorAliasError",
    "AccumulatorIndexError",
    "AccumulatorInitError",
    "AccumulatorReadError",
    "AccumulatorWritesError",
    "NotRescalableError",
    "ScanBetweenError",
    "ScanBoundsError",
    "ScanFirstLoopError",
    "ScanFuseCursors",
    "ScanLoopOrderError",
    "scan_fuse",
]


@prim_cursors
class ScanFuseCursors(PrimCursors):
    """What ``scan_fuse`` returns.

    Attributes:
        fused: the fused loop (the second loop, grown).
        saved: the block of the previous-value allocation and the statement saving it
            (``m_prev: f32; m_prev = m``): read ``m_prev`` for the exclusive scan.
        factor: the block of the correction's allocation and statement
            (``alpha: f32; alpha = select(...)``).
        rescales: one statement per accumulator (``s = alpha * s``, or a loop nest for a
            tensor accumulator), in the order of the accumulators' updates.
        first_updates: the statements of the first loop that update the running value.
        second_updates: the accumulations whose terms read the running value.
        guards: the ``select`` expressions that keep infinities from making NaN: the
            correction's, then (for a ``fmax``/``fmin`` running value) the guarded running
            value inside each term.
    """

    fused: ForCursor
    saved: BlockCursor
    factor: BlockCursor
    rescales: tuple[StmtCursor, ...]
    first_updates: tuple[StmtCursor, ...]
    second_updates: tuple[StmtCursor, ...]
    guards: tuple[ExprCursor, ...]


# ------------------------------------------------------------------------- the new code


def _const(v: float, t: DataType) -> Const:
    return Const(v, t)


def _correction(a: ScanAnalysis, prev: Sym, t: DataType) -> Expr:
    """``exp(c * (m_prev - m))`` guarded so that equal running values (infinite ones
    included, where ``m_prev - m`` is NaN) give exactly 1."""
    rate = a.rate
    assert rate.base is not None
    p, m = Read(prev, (), t), a.running_read()
    if rate.c == 1:
        arg: Expr = BinOp("-", p, m, t)
    elif rate.c == -1:
        arg = BinOp("-", m, p, t)
    elif rate.c > 0:
        arg = BinOp("*", _const(float(rate.c), t), BinOp("-", p, m, t), t)
    else:
        arg = BinOp("*", _const(float(-rate.c), t), BinOp("-", m, p, t), t)
    e: Expr = Extern(rate.extern, (arg,), t)
    one = _const(1.0, t)
    if a.direction > 0:  # m only grows (fmax): m_prev < m or they are equal
        return Extern("select", (p, m, e, one), t)
    if a.direction < 0:
        return Extern("select", (m, p, e, one), t)
    inner = Extern("select", (m, p, e, one), t)
    return Extern("select", (p, m, e, inner), t)


def _safe_running(a: ScanAnalysis, t: DataType) -> Expr:
    """The running value as the terms read it, for a ``fmax`` (``fmin``) running value: the
    ``-inf`` (``inf``) it may start from, which would make a term NaN (``exp(-inf - -inf)``),
    is replaced by 0.0. While the running value is that infinity every value so far is too,
    and their terms are 0, as the first finite correction makes them anyway."""
    m = a.running_read()
    if a.direction > 0:
        return Extern("select", (_const(float("-inf"), t), m, m, _const(0.0, t)), t)
    return Extern("select", (m, _const(float("inf"), t), m, _const(0.0, t)), t)


def _rescale(u: Update, alpha: Sym, t: DataType) -> Stmt:
    """``acc = alpha * acc`` inside fresh copies of the loops its index uses (``alpha`` has
    the running value's precision ``t``, the product the accumulator's)."""
    acc, loops = u.stmt, u.loops
    env = {lp.iter: lp.iter.copy() for lp in loops}
    rd = Read(acc.sym, acc.idx, u.dtype)
    stmt: Stmt = acc.replace(rhs=BinOp("*", Read(alpha, (), t), rd, u.dtype))
    stmt = rename_stmt(stmt, env)
    for lp in reversed(loops):
        stmt = For(env[lp.iter], lp.lo, lp.hi, (stmt,), "seq")
        stmt = rename_stmt(stmt, env)
    return stmt


# ------------------------------------------------------------------------------ scan_fuse


@primitive
def scan_fuse(
    proc: Proc, first_loop: ForCursor, second_loop: ForCursor
) -> Rewrite[ScanFuseCursors]:
    """Fuse a running-value loop with a later loop that reduces through a rescalable
    function of the running value's final result, inserting the running correction.

    ``first_loop`` computes a running value ``m`` (``m = fmax(m, x[i])``); ``second_loop``,
    with the same bounds, accumulates terms that read the final ``m`` only in a rescalable way
    (``s += exp(x[i] - m)``, ``o[j] += exp(x[i] - m) * v[i, j]``, ``exp2``, ``expf``,
    ``exp(c * (t - m))``). The result is one loop that saves the previous running value,
    updates it, computes the correction ``alpha = exp(c * (m_prev - m))`` and rescales every
    accumulator before adding the new term, which reads the running value. Code after the loops
    (``y[i] = exp(x[i] - m) / s``, ``m + log(s)``) stays as it is. Loop bodies may be loop nests:
    after ``split`` of both loops the fusion happens at the tile level, one correction per tile
    (flash attention 2).

    The rewrite is exact over the reals (the corrections telescope) and a reassociation in
    floating point: results differ from the unfused loops by rounding, as for every reduction
    reorder. The guards (``select``) keep infinities exact where the reals say nothing: a
    leading ``-inf`` gives the same result as the unfused loops instead of NaN; a row whose
    every value is ``-inf`` (where the unfused loops compute NaN, ``exp(-inf - -inf)``) gives
    an empty sum, 0.

    Args:
        proc: the proc to rewrite.
        first_loop: the loop updating the running value.
        second_loop: a later loop in the same block, accumulating rescalable terms.

    Returns:
        The new proc and ``ScanFuseCursors``:
        ``fused``: the fused loop;
        ``saved``: the block ``m_prev: f32; m_prev = m`` (the exclusive scan value);
        ``factor``: the block ``alpha: f32; alpha = select(...)``;
        ``rescales``: one rescaling statement (or loop nest) per accumulator;
        ``first_updates``: the statements updating the running value;
        ``second_updates``: the accumulations that read the running value;
        ``guards``: the correction's ``select`` and, for ``fmax``/``fmin``, each term's guard.

    Preconditions:
        1. both loops are in the same block, ``first_loop`` before ``second_loop``
           (``ScanLoopOrderError``).
        2. equal bounds, proven (``ScanBoundsError``, with a counterexample).
        3. the statements between the loops do not depend on the first loop, so they can move
           before it (``ScanBetweenError``).
        4. the first loop is sequential and writes only the running value (assignments with
           one index free of its loop variables; local allocations allowed), and reads nothing
           the second loop writes (``ScanFirstLoopError``).
        5. the second loop reads the running value only inside the terms of accumulations, each
           term rescalable (rule table, then SMT), all at one rate, and does not write it;
           the rate makes the corrections shrink as the running value moves away from where
           it starts (a positive rate for ``fmax`` or a start at ``-inf``, a negative one for
           ``fmin`` or ``inf``), so that no correction is infinite (``NotRescalableError``,
           with a counterexample where SMT found one).
        6. each accumulator is written only by its own ``+=`` (``AccumulatorWritesError``),
        7. starts from zero: the last statement writing it before the loops is ``s = 0.0``
           or a loop nest zeroing every element the loop accumulates
           (``AccumulatorInitError``),
        8. is not read elsewhere in either loop (``AccumulatorReadError``),
        9. aliases nothing: not a window, no window of it exists (``AccumulatorAliasError``),
        10. is indexed by distinct loop variables of the loops around its update inside the
            second loop, or by expressions free of the second loop's variables, with bounds
            that need no other inner variable (``AccumulatorIndexError``).

    Forwards/Kills:
        ``second_loop`` forwards to ``fused``; ``first_loop`` dies (hint: "fused into `fused`
        by scan_fuse; its updates are `first_updates`"). The statements of both bodies keep
        their identity (accumulations whose terms now read the guarded running value are
        rebuilt and forward too); the statements between the loops move before ``fused``.

    Example:
        ``scan_fuse(p, "for i in _: _ #0", "for i in _: _ #1")``::

            m = -inf                              m = -inf
            for i in seq(0, n):                   s = 0.0
                m = fmax(m, x[i])          ->     for i in seq(0, n):
            s = 0.0                                   m_prev: f32
            for i in seq(0, n):                       m_prev = m
                s += exp(x[i] - m)                    m = fmax(m, x[i])
                                                      alpha: f32
                                                      alpha = select(m_prev, m, exp(m_prev - m), 1.0)
                                                      s = alpha * s
                                                      s += exp(x[i] - select(-inf, m, m, 0.0))
    """  # noqa: E501
    name = "scan_fuse"
    ir = proc.ir()
    p1, p2 = first_loop.path(), second_loop.path()
    l1, l2 = first_loop.node(), second_loop.node()
    assert isinstance(l1, For) and isinstance(l2, For)
    if p1[:-1] != p2[:-1] or p1[-1][0] != p2[-1][0] or p2[-1][1] <= p1[-1][1]:
        msg = "the second loop is not a later statement of the first loop's block"
        raise fail(ScanLoopOrderError, name, msg, second_loop)
    for what, e1, e2 in (("lower", l1.lo, l2.lo), ("upper", l1.hi, l2.hi)):
        try:
            check_expr_equal(ir, p1, e1, e2, primitive=name)
        except NotEqualError as e:
            e.message = f"{what} bounds differ: {e.message}"
            raise safety(ScanBoundsError, name, e, first_loop) from e
    parent, attr, k1, k2 = p1[:-1], p1[-1][0], p1[-1][1], p2[-1][1]
    between: tuple[Path, ...] = tuple((*parent, (attr, k)) for k in range(k1 + 1, k2))
    if between:
        try:
            check_commute(ir, (p1,), between, primitive=name)
        except CommuteError as e:
            e.message = f"a statement between the loops depends on the first: {e.message}"
            raise safety(ScanBetweenError, name, e, first_loop) from e
    a = analyse(ir, first_loop, second_loop, name)
    t = a.dtype

    # the fused body: save, first updates, correction, rescales, second body
    prev, alpha = Sym(f"{a.running.name}_prev"), Sym("alpha")
    body1 = tuple(rename_stmt(s, {l1.iter: l2.iter}) for s in l1.body)
    saved = (Alloc(prev, t, DRAM), Assign(prev, (), a.running_read()))
    factor_rhs = _correction(a, prev, t)
    factor = (Alloc(alpha, t, DRAM), Assign(alpha, (), factor_rhs))
    rescales = tuple(_rescale(u, alpha, t) for u in a.updates)
    # a running value that is no fmax/fmin gets no guard in the terms: infinities there are
    # read as they are, as in the unfused loops
    safe = _safe_running(a, t) if a.direction else a.running_read()
    body2, rebuilt = map_running(l2.body, a, safe) if a.direction else (l2.body, [])
    new_body = (*saved, *body1, *factor, *rescales, *body2)
    fused = l2.replace(body=new_body, mode="seq")

    checks_passed()
    ed = Editor(ir)
    if between:
        ed.move(BlockLoc(parent, attr, k1 + 1, k2), (parent, attr, k1))
    nb = len(between)
    loc = BlockLoc(parent, attr, k1 + nb, k1 + nb + 2)
    pairs = [*same_pairs(l1.body, body1), *rebuilt, (l2, fused)]
    out = ed.replace(
        loc,
        (fused,),
        same=pairs,
        hint="fused into `fused` by scan_fuse; its updates are `first_updates`",
    )
    fp = out.stmt_paths()[0]
    n1, nr = len(body1), len(rescales)
    at2 = 4 + n1 + nr

    def in_fused(offset: int, rel: Path) -> Path:
        (a0, k), *rest = rel
        return (*fp, (a0, k + offset), *rest)

    guards = [(*fp, ("body", 3 + n1), ("rhs", -1))]
    second: list[NodeLoc] = []
    for u in a.updates:
        sp = in_fused(at2, u.rel)
        second.append(NodeLoc(sp))
        if a.direction:
            rhs = (*sp, ("rhs", -1))
            guards += [(*rhs, *g) for g in expr_paths(ed.ir, rhs, safe)]
    return ed.done(
        ScanFuseCursors,
        fused=NodeLoc(fp),
        saved=BlockLoc(fp, "body", 0, 2),
        factor=BlockLoc(fp, "body", 2 + n1, 4 + n1),
        rescales=tuple(NodeLoc((*fp, ("body", 4 + n1 + j))) for j in range(nr)),
        first_updates=tuple(NodeLoc(in_fused(2, r)) for r in a.first_updates),
        second_updates=tuple(second),
        guards=tuple(NodeLoc(g) for g in guards),
    )
