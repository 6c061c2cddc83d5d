"""Call primitives: ``inline`` (``extract_subproc`` is in ``extract.py``, ``call_eqv`` in
``call_eqv.py``, ``replace`` in ``replace.py``).

Registered with ``@primitive`` (``cursched.primitives.registry``). Calls pass control values
by value and tensors, windows and data scalars by reference (docs/semantics.md), so inlining
is substitution: a control parameter becomes its argument expression, an access of a tensor
parameter becomes an access of the argument's buffer through its window, a data scalar
becomes the scalar (or element) passed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cursched.analysis import affine as af
from cursched.analysis.context import PathContext, context_of
from cursched.cursors import BlockCursor, CallCursor, Editor, StmtCursor
from cursched.cursors.edits import Rewrite
from cursched.errors import ShapeMismatchError
from cursched.ir.nodes import (
    Assign,
    BinOp,
    Call,
    Expr,
    Interval,
    Point,
    ProcDef,
    Read,
    Reduce,
    Stmt,
    StrideExpr,
    WAccess,
    WindowExpr,
)
from cursched.ir.symbols import Sym
from cursched.ir.traversal import (
    map_expr_children,
    map_stmt_children,
)
from cursched.ir.types import INDEX, ControlType, DataType, TensorType
from cursched.primitives.loops.loop_common import fresh_copy
from cursched.primitives.registry import PrimCursors, checks_passed, fail, prim_cursors, primitive
from cursched.proc import Proc

# ----------------------------------------------------------------------------------- inline


class InlineNotCallError(ShapeMismatchError):
    """inline, precondition 1: the statement is not a call."""


@prim_cursors
class InlineCursors(PrimCursors):
    """What ``inline`` returns.

    Attributes:
        body: the inlined statements (the callee's body, substituted).
    """

    body: BlockCursor


@dataclass(frozen=True)
class _View:
    """A tensor parameter as the call passes it: buffer ``sym`` through ``coords`` (None:
    the whole buffer)."""

    sym: Sym
    coords: tuple[WAccess, ...] | None


def _plus(a: Expr, b: Expr) -> Expr:
    x, y = af.to_aff(a), af.to_aff(b)
    if x is None or y is None:
        return BinOp("+", a, b, INDEX)
    return af.simplify_expr(af.from_aff(x + y))


def _through(view: _View, idx: Sequence[Expr]) -> tuple[Expr, ...]:
    if view.coords is None:
        return tuple(idx)
    out: list[Expr] = []
    k = 0
    for c in view.coords:
        if isinstance(c, Point):
            out.append(c.pt)
        else:
            out.append(_plus(c.lo, idx[k]))
            k += 1
    return tuple(out)


def _window_through(view: _View, idx: Sequence[WAccess]) -> tuple[WAccess, ...]:
    if view.coords is None:
        return tuple(idx)
    out: list[WAccess] = []
    k = 0
    for c in view.coords:
        if isinstance(c, Point):
            out.append(c)
            continue
        w = idx[k]
        k += 1
        if isinstance(w, Point):
            out.append(Point(_plus(c.lo, w.pt)))
        else:
            out.append(Interval(_plus(c.lo, w.lo), _plus(c.lo, w.hi)))
    return tuple(out)


class _Inliner:
    def __init__(
        self,
        ctrl: Mapping[Sym, Expr],
        views: Mapping[Sym, _View],
        scalars: Mapping[Sym, Read],
        types: Mapping[Sym, Any],
    ) -> None:
        self.ctrl = ctrl
        self.views = views
        self.scalars = scalars
        self.types = types  # the declared type of each argument buffer

    def expr(self, e: Expr) -> Expr:
        x = map_expr_children(e, self.expr)
        match x:
            # fresh_copy substituted the integer control parameters (simplified); bool ones
            # (``if flag:``) are left to here.
            case Read() if x.sym in self.ctrl and not x.idx:
                return self.ctrl[x.sym]
            case Read() if x.sym in self.scalars:
                return self.scalars[x.sym]
            case Read() if x.sym in self.views:
                v = self.views[x.sym]
                if x.idx:
                    return Read(v.sym, _through(v, x.idx), x.type)
                if v.coords is None:
                    return Read(v.sym, (), self.types[v.sym])
                assert isinstance(x.type, TensorType)
                return WindowExpr(v.sym, v.coords, dataclasses.replace(x.type, window=True))
            case WindowExpr() if x.sym in self.views:
                v = self.views[x.sym]
                return x.replace(sym=v.sym, idx=_window_through(v, x.idx))
            case StrideExpr() if x.sym in self.views:
                v = self.views[x.sym]
                if v.coords is None:
                    return x.replace(sym=v.sym)
                dims = [d for d, c in enumerate(v.coords) if isinstance(c, Interval)]
                return x.replace(sym=v.sym, dim=dims[x.dim])
            case _:
                return x

    def stmt(self, s: Stmt) -> Stmt:
        x = map_stmt_children(s, self.stmt, self.expr)
        match x:
            case Assign() | Reduce() if x.sym in self.scalars:
                r = self.scalars[x.sym]
                return x.replace(sym=r.sym, idx=r.idx)
            case Assign() | Reduce() if x.sym in self.views:
                v = self.views[x.sym]
                return x.replace(sym=v.sym, idx=_through(v, x.idx))
            case _:
                return x


def _decl_types(ir: ProcDef, ctx: PathContext) -> dict[Sym, Any]:
    out: dict[Sym, Any] = {a.sym: a.type for a in ir.args}
    out.update({s: a.type for s, a in ctx.allocs.items()})
    out.update({s: w.rhs.type for s, w in ctx.windows.items()})
    return out


@primitive
def inline(proc: Proc, call: StmtCursor) -> Rewrite[InlineCursors]:
    """Replace a call by the callee's body, its parameters substituted by the arguments.

    Args:
        proc: the proc to rewrite.
        call: the call statement (a cursor or a pattern such as ``"scal(_)"``).

    Returns:
        The new proc and ``InlineCursors``:
        ``body``: the inlined statements.

    Preconditions:
        1. ``call`` is a call statement (``InlineNotCallError``). Nothing else can fail: the
           call's arguments were proven to fit the callee when the call was made, and the
           callee's asserts held there (they are dropped).

    Forwards/Kills:
        Kills the call (hint: "inlined by inline; use .body"). The callee's symbols defined
        inside its body (loop variables, allocations, windows) are renamed to fresh ones, so
        inlining the same proc twice never shares a variable.

    Example:
        ``inline(p, "scal(_)")`` with ``def scal(n: size, x: [f32][n]): for i in
        seq(0, n): x[i] = x[i] * 2.0``::

            scal(4, A[4 * io:4 * io + 4])    ->    for i in seq(0, 4):
                                                       A[4 * io + i] = A[4 * io + i] * 2.0
    """
    if not isinstance(call, CallCursor):
        raise fail(InlineNotCallError, "inline", f"{call.describe()} is not a call", call)
    s = call.node()
    assert isinstance(s, Call)
    callee = s.proc
    ir = proc.ir()
    ctx = context_of(ir, call.path())
    env: dict[Sym, Expr] = {}
    views: dict[Sym, _View] = {}
    scalars: dict[Sym, Read] = {}
    for param, arg in zip(callee.args, s.args, strict=True):
        match param.type:
            case ControlType():
                env[param.sym] = arg
            case DataType():
                assert isinstance(arg, Read)
                scalars[param.sym] = arg
            case TensorType():
                if isinstance(arg, WindowExpr):
                    views[param.sym] = _View(arg.sym, arg.idx)
                else:
                    assert isinstance(arg, Read)
                    views[param.sym] = _View(arg.sym, None)
    body = fresh_copy(callee.body, env, ctx.ranges())
    inl = _Inliner(env, views, scalars, _decl_types(ir, ctx))
    new = tuple(inl.stmt(x) for x in body)
    checks_passed()
    ed = Editor(ir)
    out = ed.replace(call.as_block().block(), new, hint="inlined by inline; use .body")
    return ed.done(InlineCursors, body=out)


__all__ = [
    "InlineCursors",
    "InlineNotCallError",
    "inline",
]
