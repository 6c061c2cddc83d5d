"""Bounds checking at definition time: every access, window and call of a proc is in bounds.

``check_bounds`` walks the proc once, carrying the path context (asserts, loop ranges, if
conditions, visible windows and allocations). Each obligation (``0 <= idx < dim``, a window's
``0 <= lo <= hi <= dim``, a call argument's shape equal to the callee's parameter shape, the
callee's asserts) is first tried by the fast symbolic proof of ``affine.prove_nonneg`` and only
then by the SMT layer, which returns the counterexample shown in the ``BoundsError``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import assert_never

from cursched.analysis import affine as af
from cursched.analysis import smt
from cursched.analysis.context import PathContext, context_of
from cursched.errors import BoundsError, SrcInfo
from cursched.ir.nodes import (
    STMT_TYPES,
    Alloc,
    Assign,
    Call,
    Const,
    Expr,
    For,
    If,
    Interval,
    Pass,
    Point,
    ProcDef,
    Read,
    Reduce,
    Scope,
    Stmt,
    StrideExpr,
    WindowExpr,
    WindowStmt,
)
from cursched.ir.paths import Path, get_at
from cursched.ir.printer import print_expr, print_stmt
from cursched.ir.symbols import Sym
from cursched.ir.traversal import map_expr_children, stmt_exprs, subst_expr, walk_expr
from cursched.ir.types import INDEX, INT, SIZE, ControlType, TensorType


def check_bounds(p: ProcDef) -> ProcDef:
    """Prove every access, window and call of ``p`` in bounds.

    Every index must lie in ``[0, dim)`` of its buffer, every window interval inside its
    buffer, every call argument must have the callee's parameter shape, and every callee's
    asserts must follow from what holds at the call.

    Returns:
        ``p`` itself, so that the decorators can wrap the parser's result in one call.

    Raises:
        BoundsError: at the first obligation that cannot be proven, with the source location
            and a counterexample (values of sizes and loop variables).
    """
    _Checker(p).block(p.body, PathContext(p))
    return p


def check_stmt_bounds(p: ProcDef, path: Path) -> None:
    """``check_bounds`` for the one statement at ``path`` (in its context), e.g. a call that
    a primitive just made: its accesses, windows, argument shapes and callee asserts.

    Raises:
        BoundsError: as ``check_bounds``; ``counterexample`` is set on the error when an
            obligation was disproven.
    """
    s: Stmt = get_at(p, path)
    if not isinstance(s, STMT_TYPES):
        raise LookupError(f"no statement at {path}")
    ctx = context_of(p, path)
    _Checker(p).stmt(s, ctx)


class _Checker:
    def __init__(self, p: ProcDef) -> None:
        self.p = p
        self._props: dict[tuple[int, ...], list[af.Prop]] = {}
        self._bounds: dict[tuple[int, ...], tuple[list[af.SymBound], dict[Sym, af.Bound]]] = {}

    # -- walking -------------------------------------------------------------------------
    def block(self, body: tuple[Stmt, ...], ctx: PathContext) -> None:
        for s in body:
            self.stmt(s, ctx)
            ctx = ctx.declare(s)

    def stmt(self, s: Stmt, ctx: PathContext) -> None:
        for e in stmt_exprs(s):
            self.expr(e, s, ctx)
        match s:
            case Assign() | Reduce():
                self.access(s.sym, s.idx, s, ctx, s.srcinfo)
            case For():
                self.block(s.body, ctx.enter_loop(s))
            case If():
                self.block(s.body, ctx.enter_if(s.cond, True))
                self.block(s.orelse, ctx.enter_if(s.cond, False))
            case Scope():
                self.block(s.body, ctx)
            case Call():
                self.call(s, ctx)
            case Pass() | Alloc() | WindowStmt():
                pass
            case _:
                assert_never(s)

    def expr(self, e: Expr, s: Stmt, ctx: PathContext) -> None:
        for x in walk_expr(e):
            match x:
                case Read() if x.idx:
                    self.access(x.sym, x.idx, s, ctx, x.srcinfo or s.srcinfo)
                case WindowExpr():
                    self.window(x, s, ctx)
                case _:
                    pass

    # -- obligations ---------------------------------------------------------------------
    def access(
        self, sym: Sym, idx: tuple[Expr, ...], s: Stmt, ctx: PathContext, loc: SrcInfo | None
    ) -> None:
        shape = ctx.shape(sym)
        if shape is None or len(shape) != len(idx):
            return  # rank errors are the type checker's
        for d, (i, n) in enumerate(zip(idx, shape, strict=True)):
            what = partial(_index_text, i, sym, d, n)
            self.prove_le(None, i, n, strict=True, what=what, s=s, ctx=ctx, loc=loc)

    def window(self, w: WindowExpr, s: Stmt, ctx: PathContext) -> None:
        shape = ctx.shape(w.sym)
        if shape is None or len(shape) != len(w.idx):
            return
        loc = w.srcinfo or s.srcinfo
        for d, (c, n) in enumerate(zip(w.idx, shape, strict=True)):
            match c:
                case Point():
                    what = partial(_window_text, w, (c.pt,), d, n)
                    self.prove_le(None, c.pt, n, strict=True, what=what, s=s, ctx=ctx, loc=loc)
                case Interval():
                    what = partial(_window_text, w, (c.lo, c.hi), d, n)
                    self.prove_le(None, c.lo, c.hi, strict=False, what=what, s=s, ctx=ctx, loc=loc)
                    self.prove_le(c.hi, None, n, strict=False, what=what, s=s, ctx=ctx, loc=loc)
                case _:
                    assert_never(c)

    def call(self, s: Call, ctx: PathContext) -> None:
        callee = s.proc
        env: dict[Sym, Expr | Sym] = {}
        for param, arg in zip(callee.args, s.args, strict=True):
            if isinstance(param.type, ControlType):
                env[param.sym] = arg
                if param.type == SIZE:  # the callee assumes its sizes positive
                    self.prove_positive(arg, param.sym.name, callee.name, s, ctx)
                continue
            if not isinstance(param.type, TensorType):
                continue  # a data scalar: an element access, checked as a read
            want = tuple(subst_expr(d, env) for d in param.type.shape)
            have = self.arg_shape(arg, ctx)
            name = f"argument {param.sym.name} of {callee.name}"
            if have is None or len(have) != len(want):
                raise BoundsError(f"{name}: rank differs from the parameter's", s.srcinfo)
            for d, (h, w) in enumerate(zip(have, want, strict=True)):
                goal = af.to_aff(h), af.to_aff(w)
                what = partial(_shape_text, name, d, h, w)
                if goal[0] is None or goal[1] is None:
                    raise BoundsError(f"cannot prove {what()}", s.srcinfo)
                self.prove(af.Eq(goal[0] - goal[1]), what, s, ctx, s.srcinfo)
        strides = _arg_strides(callee, s.args, ctx)
        for pred in callee.preds:
            goal_p = af.to_prop(_subst_strides(subst_expr(pred, env), strides))
            text = f"assert {print_expr(pred)} of {callee.name}"
            if goal_p is None:
                raise BoundsError(f"cannot prove {text}", s.srcinfo)
            self.prove(goal_p, partial(str, text), s, ctx, s.srcinfo)

    def prove_positive(self, arg: Expr, name: str, callee: str, s: Call, ctx: PathContext) -> None:
        a = af.to_aff(arg)
        text = f"size {name} of {callee} is {print_expr(arg)}, which must be positive"
        if a is None:
            raise BoundsError(f"cannot prove {text}", s.srcinfo)
        self.prove(af.Ge(a - 1), partial(str, text), s, ctx, s.srcinfo)

    def arg_shape(self, arg: Expr, ctx: PathContext) -> tuple[Expr, ...] | None:
        match arg:
            case WindowExpr():
                return arg.type.shape
            case Read() if not arg.idx:
                return ctx.shape(arg.sym)
            case _:
                return None

    # -- proving -------------------------------------------------------------------------
    def prove_le(
        self,
        lo: Expr | None,
        x: Expr | None,
        hi: Expr,
        *,
        strict: bool,
        what: Callable[[], str],
        s: Stmt,
        ctx: PathContext,
        loc: SrcInfo | None,
    ) -> None:
        """Prove ``0 <= x`` (when ``lo`` is None and ``x`` given) and ``x <(=) hi``.

        With ``x`` None, prove ``lo <= hi`` only.
        """
        if x is None:
            assert lo is not None
            a, b = af.to_aff(lo), af.to_aff(hi)
            if a is None or b is None:
                raise BoundsError(f"cannot prove {what()} in bounds (not affine)", loc)
            self.prove(af.Ge(b - a), what, s, ctx, loc)
            return
        xa, ha = af.to_aff(x), af.to_aff(hi)
        if xa is None or ha is None:
            raise BoundsError(f"cannot prove {what()} in bounds (not affine)", loc)
        self.prove(af.Ge(xa), what, s, ctx, loc)
        self.prove(af.Ge(ha - xa - (1 if strict else 0)), what, s, ctx, loc)

    def prove(
        self,
        goal: af.Prop,
        what: Callable[[], str],
        s: Stmt,
        ctx: PathContext,
        loc: SrcInfo | None,
    ) -> None:
        if self._fast(goal, ctx):
            return
        res = smt.valid(goal, self.props(ctx))
        if res.ok:
            return
        text = print_stmt(s).splitlines()[0]
        err = BoundsError(
            f"out of bounds: {what()}\n  in: {text}\n"
            f"  counterexample: {smt.format_model(res.counterexample)}",
            loc,
        )
        err.counterexample = res.counterexample  # type: ignore[attr-defined]
        raise err

    # The facts of a context are computed once per position: many accesses share one.
    # Keys are node identities, stable while ``p`` is alive (it is, during the check).
    def _key(self, ctx: PathContext) -> tuple[int, ...]:
        return (*(id(lp) for lp in ctx.loops), -1, *(id(c) * 2 + t for c, t in ctx.conds))

    def props(self, ctx: PathContext) -> list[af.Prop]:
        key = self._key(ctx)
        out = self._props.get(key)
        if out is None:
            out = self._props[key] = ctx.props()
        return out

    def _fast(self, goal: af.Prop, ctx: PathContext) -> bool:
        match goal:
            case af.Ge():
                key = self._key(ctx)
                facts = self._bounds.get(key)
                if facts is None:
                    facts = self._bounds[key] = (ctx.loop_bounds(), ctx.ranges())
                return af.prove_nonneg(goal.aff, *facts)
            case af.Eq():
                return goal.aff.is_const() and goal.aff.const == 0
            case _:
                return False


def _buffer_stride(sym: Sym, dim: int, ctx: PathContext) -> Expr:
    """``stride(sym, dim)``, computed when ``sym`` is contiguous (an allocation or a tensor
    argument) and the later dimensions are constants; opaque otherwise."""
    opaque = StrideExpr(sym, dim, INDEX)
    if sym in ctx.windows:
        return opaque
    shape = ctx.shape(sym)
    if shape is None or any(
        a.sym is sym and a.type.window for a in ctx.proc.args if isinstance(a.type, TensorType)
    ):
        return opaque
    total = 1
    for d in shape[dim + 1 :]:
        n = af.to_aff(d)
        if n is None or not n.is_const():
            return opaque
        total *= n.const
    return Const(total, INT)


def _arg_strides(
    callee: ProcDef, args: tuple[Expr, ...], ctx: PathContext
) -> dict[tuple[Sym, int], Expr]:
    """The strides of each tensor parameter of ``callee`` as the call passes them."""
    out: dict[tuple[Sym, int], Expr] = {}
    for param, arg in zip(callee.args, args, strict=True):
        if not isinstance(param.type, TensorType):
            continue
        match arg:
            case WindowExpr():
                dims = [d for d, w in enumerate(arg.idx) if isinstance(w, Interval)]
                for k, d in enumerate(dims):
                    out[(param.sym, k)] = _buffer_stride(arg.sym, d, ctx)
            case Read():
                for k in range(param.type.rank()):
                    out[(param.sym, k)] = _buffer_stride(arg.sym, k, ctx)
            case _:
                pass
    return out


def _subst_strides(e: Expr, table: dict[tuple[Sym, int], Expr]) -> Expr:
    if isinstance(e, StrideExpr) and (e.sym, e.dim) in table:
        return table[(e.sym, e.dim)]
    return map_expr_children(e, lambda x: _subst_strides(x, table))


# Descriptions of obligations, built only when one fails.


def _index_text(i: Expr, sym: Sym, d: int, n: Expr) -> str:
    return f"index {print_expr(i)} of {sym.name} (dimension {d}, size {_show(n)})"


def _window_text(w: WindowExpr, coord: tuple[Expr, ...], d: int, n: Expr) -> str:
    what = "index" if len(coord) == 1 else "interval"
    text = ":".join(print_expr(x) for x in coord)
    return f"{what} {text} of window {print_expr(w)} (dimension {d}, size {_show(n)})"


def _shape_text(name: str, d: int, have: Expr, want: Expr) -> str:
    return f"shape of {name}: dimension {d} is {_show(have)}, the parameter wants {_show(want)}"


def _show(e: Expr) -> str:
    """A size as the user would write it (``N - 2``, not ``N - 1 - 1``)."""
    return print_expr(af.simplify_expr(e))
