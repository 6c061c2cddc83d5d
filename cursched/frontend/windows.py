"""Windows: ``A[i, 0:8]``, a strided view of a tensor, in a window statement or a call.

A window has one coordinate per dimension of its tensor: a point (the dimension disappears)
or an interval ``lo:hi`` (omitted bounds are ``0`` and the dimension's size). At least one
interval is needed (a window of one element would be a scalar). Intervals whose bounds are
constant are checked here (empty, negative, past a constant size: the last two are
``BoundsError``); the rest is the analysis' definition-time bounds check.
"""

from __future__ import annotations

import ast
import dataclasses

from cursched.errors import BoundsError
from cursched.frontend.exprs import ExprParser
from cursched.frontend.typecheck import const_eval, extent, fresh
from cursched.ir.nodes import Const, Expr, Interval, Point, WAccess, WindowExpr
from cursched.ir.types import INT, TensorType


def is_window(node: ast.expr) -> bool:
    """Whether ``node`` is written as a window (a subscript with a slice)."""
    if not isinstance(node, ast.Subscript):
        return False
    sl = node.slice
    coords = sl.elts if isinstance(sl, ast.Tuple) else [sl]
    return any(isinstance(c, ast.Slice) for c in coords)


def window(exprs: ExprParser, node: ast.Subscript) -> WindowExpr:
    """The window ``node`` denotes, typed as a window tensor type."""
    ctx = exprs.ctx
    var = exprs.var(node.value)
    name = var.sym.name
    if not isinstance(var.type, TensorType):
        ctx.type_error(node, f"'{name}' is not a tensor; windows of scalars are not allowed")
    if var.mem is not None and not var.mem.windowable:
        ctx.type_error(node, f"memory {var.mem.name()} does not allow windows")
    coords = exprs.indices(node)
    if len(coords) != var.type.rank():
        ctx.type_error(
            node, f"'{name}' has rank {var.type.rank()} but the window has {len(coords)}"
        )
    accesses: list[WAccess] = []
    shape: list[Expr] = []
    for c, dim in zip(coords, var.type.shape, strict=True):
        loc = ctx.loc(c)
        if not isinstance(c, ast.Slice):
            accesses.append(Point(exprs.integer(c, "a window index"), srcinfo=loc))
            continue
        if c.step is not None:
            ctx.parse_error(c, "slices with a step are not in the language")
        lo = Const(0, INT, srcinfo=loc) if c.lower is None else exprs.integer(c.lower, "a bound")
        hi = (
            dataclasses.replace(fresh(dim), srcinfo=loc)
            if c.upper is None
            else exprs.integer(c.upper, "a bound")
        )
        _check_interval(exprs, c, lo, hi, dim)
        accesses.append(Interval(lo, hi, srcinfo=loc))
        shape.append(extent(lo, hi, loc))
    if not shape:
        ctx.type_error(node, "a window needs at least one slice (lo:hi)")
    wtype = TensorType(var.type.elem, tuple(shape), window=True)
    return WindowExpr(var.sym, tuple(accesses), wtype, srcinfo=ctx.loc(node))


def _check_interval(exprs: ExprParser, node: ast.Slice, lo: Expr, hi: Expr, dim: Expr) -> None:
    a, b, n = const_eval(lo), const_eval(hi), const_eval(dim)
    if a is not None and b is not None and b <= a:
        exprs.ctx.type_error(node, f"empty window {a}:{b}")
    if a is not None and a < 0:
        raise BoundsError(f"window bound {a} is negative", exprs.ctx.loc(node))
    if b is not None and n is not None and b > n:
        msg = f"window bound {b} is past the dimension's size {n}"
        raise BoundsError(msg, exprs.ctx.loc(node))
