"""``simplify``: affine simplification of every index and bound, constant folding of control
expressions, dead branches and empty loops removed (issue 6, part B).

Registered with ``@primitive`` (``cursched.primitives.registry``); follows Exo 1.0's
``simplify``, which schedules call after steps that leave arithmetic behind.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import assert_never

from cursched.analysis import affine as af
from cursched.analysis.affine_tidy import tidy_expr
from cursched.analysis.checks_loops import decide_in
from cursched.analysis.context import PathContext, proc_context
from cursched.cursors import BlockLoc, Editor, NodeLoc
from cursched.cursors.edits import Rewrite
from cursched.cursors.stmts import StmtCursor
from cursched.ir.nodes import (
    Alloc,
    Assign,
    BinOp,
    Call,
    Const,
    Expr,
    For,
    If,
    Pass,
    ProcDef,
    Read,
    Reduce,
    Scope,
    Stmt,
    WindowExpr,
    WindowStmt,
)
from cursched.ir.paths import Path
from cursched.ir.symbols import Sym
from cursched.ir.traversal import free_syms_expr, map_type, stmt_blocks, stmt_exprs, subst_expr
from cursched.ir.types import ControlType, DataType, TensorType
from cursched.primitives.registry import PrimCursors, checks_passed, prim_cursors, primitive
from cursched.proc import Proc


@prim_cursors
class SimplifyCursors(PrimCursors):
    """What ``simplify`` returns.

    Attributes:
        changed: the statements whose own expressions (indices, bounds, conditions,
            right-hand sides, shapes, call arguments) were rewritten, in program order.
    """

    changed: tuple[StmtCursor, ...]


def _equalities(ctx: PathContext) -> dict[Sym, Expr]:
    """``x == c`` facts of the enclosing taken branches (``if M == 16 and ...:``): inside,
    the control variable ``x`` is the constant ``c``."""
    out: dict[Sym, Expr] = {}

    def visit(c: Expr) -> None:
        if isinstance(c, BinOp) and c.op == "and":
            visit(c.lhs)
            visit(c.rhs)
        elif isinstance(c, BinOp) and c.op == "==":
            for a, b in ((c.lhs, c.rhs), (c.rhs, c.lhs)):
                control = isinstance(a, Read) and isinstance(a.type, ControlType)
                if control and not a.idx and a.type.is_integer() and isinstance(b, Const):  # type: ignore[union-attr]
                    out[a.sym] = b  # type: ignore[union-attr]

    for cond, taken in ctx.conds:
        if taken:
            visit(cond)
    return out


class _Simplifier:
    """Rebuilds a proc body; remembers (old, new) statement pairs and the changed ones."""

    def __init__(self) -> None:
        self.pairs: list[tuple[Stmt, Stmt]] = []
        self.changed: set[int] = set()

    def expr(self, e: Expr, ctx: PathContext) -> Expr:
        eqs = _equalities(ctx)
        if eqs and free_syms_expr(e) & set(eqs):
            new = tidy_expr(subst_expr(e, eqs), ctx.ranges())
            return e if new == e else new
        return tidy_expr(e, ctx.ranges())  # the same node (identity kept) when unchanged

    def block(self, stmts: tuple[Stmt, ...], ctx: PathContext) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for s in stmts:
            for x in self.stmt(s, ctx):
                out.append(x)
                ctx = ctx.declare(x)
        if stmts and not out:
            return (Pass(),)  # a block never becomes empty
        return tuple(out)

    def stmt(self, s: Stmt, ctx: PathContext) -> list[Stmt]:
        new: Stmt
        match s:
            case Assign() | Reduce():
                idx = tuple(self.expr(i, ctx) for i in s.idx)
                new = s.replace(idx=idx, rhs=self.expr(s.rhs, ctx))
            case Pass():
                new = s
            case If():
                cond = self.expr(s.cond, ctx)
                decided = bool(cond.value) if isinstance(cond, Const) else decide_in(ctx, cond)
                if decided is not None:
                    branch = s.body if decided else s.orelse
                    return list(self.block(branch, ctx.enter_if(cond, decided)))
                body = self.block(s.body, ctx.enter_if(cond, True))
                orelse = self.block(s.orelse, ctx.enter_if(cond, False))
                new = s.replace(cond=cond, body=body, orelse=orelse)
            case For():
                head = s.replace(lo=self.expr(s.lo, ctx), hi=self.expr(s.hi, ctx))
                lo, hi = af.to_aff(head.lo), af.to_aff(head.hi)
                if lo is not None and hi is not None:
                    top = af.aff_range(af.simplify_aff(hi - lo, ctx.ranges()), ctx.ranges())[1]
                    if top is not None and top <= 0:
                        return []  # the loop never runs an iteration
                new = head.replace(body=self.block(s.body, ctx.enter_loop(head)))
            case Alloc():
                t = map_type(s.type, lambda e: self.expr(e, ctx))
                assert isinstance(t, DataType | TensorType)
                new = s.replace(type=t)
            case Call():
                new = s.replace(args=tuple(self.expr(a, ctx) for a in s.args))
            case WindowStmt():
                rhs = self.expr(s.rhs, ctx)
                assert isinstance(rhs, WindowExpr)
                new = s.replace(rhs=rhs)
            case Scope():
                new = s.replace(body=self.block(s.body, ctx))
            case _:
                assert_never(s)
        if new is not s:
            self.pairs.append((s, new))
            old_e, new_e = stmt_exprs(s), stmt_exprs(new)
            if len(old_e) != len(new_e) or any(
                a is not b for a, b in zip(old_e, new_e, strict=True)
            ):
                self.changed.add(id(new))
        return [new]


def _stmt_paths(body: tuple[Stmt, ...], prefix: Path, attr: str) -> Iterator[tuple[Path, Stmt]]:
    for k, s in enumerate(body):
        path = (*prefix, (attr, k))
        yield path, s
        for sub_attr, sub in stmt_blocks(s):
            yield from _stmt_paths(sub, path, sub_attr)


@primitive
def simplify(proc: Proc) -> Rewrite[SimplifyCursors]:
    """Simplify the whole proc: indices and bounds in affine normal form, constants folded,
    dead branches and empty loops removed.

    Args:
        proc: the proc to rewrite.

    Returns:
        The new proc and ``SimplifyCursors``:
        ``changed``: the statements whose own expressions were rewritten.

    Preconditions:
        None: every rewrite is an identity of integer arithmetic (floor division and modulo
        folded only where the enclosing loop ranges decide them), or drops code that the
        asserts, loop ranges and enclosing conditions prove never runs. Data arithmetic is
        left as written (folding it would round differently from the destination's
        precision).

    What it does:
        1. every integer control expression (indices, loop bounds, shapes, window bounds,
           call arguments) is rebuilt from its affine normal form under the ranges of the
           enclosing loops (``4 * io + ii`` for ``io * 4 + 4 - 4 + ii``; ``(4 * io + ii) / 4``
           becomes ``io`` when ``0 <= ii < 4``);
        2. comparisons the ranges decide become ``True``/``False``; ``and``/``or`` with a
           constant operand are folded; inside the taken branch of ``if x == c`` (or a
           conjunction holding it), the control variable ``x`` is replaced by ``c``;
        3. an ``if`` whose condition is always true (false) where it stands is replaced by
           its body (``else`` branch), proven by SMT from the asserts, enclosing loops and
           conditions;
        4. a loop whose trip count is at most 0 by the loop ranges is removed;
        a block left empty holds a ``pass``.

    Forwards/Kills:
        Statements and blocks forward to their simplified selves (a kept branch's
        statements too); rewritten expressions die; a removed ``if`` or loop and its dead
        statements die (hint: "removed by simplify").

    Example:
        ``simplify(p)``::

            for io in seq(0, n / 4):                 ->    for io in seq(0, n / 4):
                for ii in seq(0, 4):                           for ii in seq(0, 4):
                    x[io * 4 + 4 - 4 + ii] = 0.0                   x[4 * io + ii] = 0.0
                    if ii < 4:                                     y[ii] = 1.0
                        y[(4 * io + ii) % 4] = 1.0
    """
    ir: ProcDef = proc.ir()
    s = _Simplifier()
    body = s.block(ir.body, proc_context(ir))
    checks_passed()
    ed = Editor(ir)
    out = ed.replace(
        BlockLoc((), "body", 0, len(ir.body)), body, same=s.pairs, hint="removed by simplify"
    )
    assert out.hi == len(body)
    changed = tuple(
        NodeLoc(path) for path, x in _stmt_paths(ed.ir.body, (), "body") if id(x) in s.changed
    )
    return ed.done(SimplifyCursors, changed=changed)


__all__ = ["simplify"]
