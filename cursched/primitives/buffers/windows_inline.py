"""``inline_window``: replace a window name by the accesses of the buffer it views.

A window ``y = x[i, 2:6]`` is an alias fixed when it is made: its coordinates are control
values, which never change in their scope. So every use of ``y`` after it can be rewritten to
an access of ``x`` (coordinates composed and simplified) with no check beyond the statement
being a window.
"""

from __future__ import annotations

from collections.abc import Sequence

from cursched.analysis import affine as af
from cursched.cursors import BlockLoc, Editor, NodeLoc, StmtCursor
from cursched.cursors.edits import Rewrite
from cursched.cursors.tree import stmt_list, walk
from cursched.errors import ShapeMismatchError
from cursched.ir.nodes import (
    Assign,
    BinOp,
    Expr,
    Interval,
    Point,
    Read,
    Reduce,
    StrideExpr,
    WAccess,
    WindowExpr,
    WindowStmt,
)
from cursched.ir.paths import Path, get_at
from cursched.ir.types import INDEX, TensorType
from cursched.primitives.exprs.binds import InlineCursors
from cursched.primitives.exprs.expr_common import fresh
from cursched.primitives.registry import checks_passed, fail, primitive
from cursched.proc import Proc


class NotAWindowError(ShapeMismatchError):
    """inline_window, precondition 1: the statement is not a window statement ``y = x[...]``."""


def _plus(lo: Expr, e: Expr) -> Expr:
    a, b = af.to_aff(lo), af.to_aff(e)
    if a is None or b is None:
        return BinOp("+", lo, e, INDEX)
    return af.from_aff(af.simplify_aff(a + b))


def _compose(
    window: tuple[WAccess, ...], inner: Sequence[Expr | WAccess], as_window: bool
) -> tuple[Expr | WAccess, ...]:
    """The coordinates in the viewed buffer of coordinates ``inner`` of the window (window
    coordinates when ``as_window``, plain indices otherwise)."""
    out: list[Expr | WAccess] = []
    rest = iter(inner)
    for w in window:
        match w:
            case Point():
                out.append(Point(fresh(w.pt)) if as_window else fresh(w.pt))
            case Interval():
                c = next(rest)
                match c:
                    case Point():
                        out.append(Point(_plus(w.lo, c.pt)))
                    case Interval():
                        out.append(Interval(_plus(w.lo, c.lo), _plus(w.lo, c.hi)))
                    case _:
                        out.append(_plus(w.lo, c))
    return tuple(out)


def _indices(xs: tuple[Expr | WAccess, ...]) -> tuple[Expr, ...]:
    out = tuple(x for x in xs if not isinstance(x, Point | Interval))
    assert len(out) == len(xs), "an access has plain indices"
    return out


def _coords(xs: tuple[Expr | WAccess, ...]) -> tuple[WAccess, ...]:
    out = tuple(x for x in xs if isinstance(x, Point | Interval))
    assert len(out) == len(xs), "a window has coordinates"
    return out


_Use = Read | WindowExpr | StrideExpr | Assign | Reduce


def _rewrite_use(cur: _Use, rhs: WindowExpr) -> _Use:
    x = rhs.sym
    match cur:
        case Read() if not cur.idx:  # the whole window, passed to a call
            whole = tuple(
                Point(fresh(w.pt)) if isinstance(w, Point) else Interval(fresh(w.lo), fresh(w.hi))
                for w in rhs.idx
            )
            assert isinstance(cur.type, TensorType), "a whole read of a window is a tensor"
            return WindowExpr(x, whole, cur.type)
        case Read():
            return Read(x, _indices(_compose(rhs.idx, cur.idx, False)), cur.type)
        case WindowExpr():
            return WindowExpr(x, _coords(_compose(rhs.idx, cur.idx, True)), cur.type)
        case StrideExpr():
            dims = [d for d, w in enumerate(rhs.idx) if isinstance(w, Interval)]
            return StrideExpr(x, dims[cur.dim], cur.type)
        case Assign() | Reduce():
            return cur.replace(sym=x, idx=_indices(_compose(rhs.idx, cur.idx, False)))


@primitive
def inline_window(proc: Proc, window: StmtCursor) -> Rewrite[InlineCursors]:
    """Replace the uses of a window name by accesses of the buffer it views, and delete the
    window statement.

    Args:
        proc: the proc to rewrite.
        window: the window statement ``y = x[...]`` (a cursor or a pattern ``"y = _"``).

    Returns:
        The new proc and ``InlineCursors``:
        ``reads``: the rewritten uses in program order: reads ``x[...]``, windows, strides,
        and the writes (``=``, ``+=``) that wrote through ``y``.

    Preconditions:
        1. ``window`` is a window statement (``NotAWindowError``). Nothing else can fail: a
           window is an alias fixed when it is made (its coordinates are control values,
           which never change in their scope).

    Forwards/Kills:
        Kills the window statement (hint: "inlined by inline_window; use .reads") and the
        reads, windows and strides of ``y``; statements writing through ``y`` keep their
        identity.

    Example:
        ``inline_window(p, "w = _")``::

            w = x[i, 2:6]      ->    y[i] = x[i, j + 2]
            y[i] = w[j]
    """
    prim = "inline_window"
    ir = proc.ir()
    node = window.node()
    if not isinstance(node, WindowStmt):
        msg = f"{window.describe()} is not a window statement"
        raise fail(NotAWindowError, prim, msg, window)
    w, rhs = node.sym, node.rhs
    *parent_, (attr, k) = window.path()
    parent = tuple(parent_)
    stmts = stmt_list(ir, parent, attr)
    uses: list[Path] = []
    for j in range(k + 1, len(stmts)):
        for path, n in walk(stmts[j], (*parent, (attr, j))):
            if isinstance(n, _Use) and n.sym is w:
                uses.append(path)
    checks_passed()
    ed = Editor(ir)
    ed.delete(BlockLoc(parent, attr, k, k + 1), hint="inlined by inline_window; use .reads")
    out: dict[Path, NodeLoc] = {}
    for path in sorted(uses, reverse=True):  # inner uses before the statements holding them
        loc = ed.forward(NodeLoc(path))
        assert isinstance(loc, NodeLoc)
        cur = get_at(ed.ir, loc.path)
        new = _rewrite_use(cur, rhs)
        same = [(cur, new)] if isinstance(cur, Assign | Reduce) else []
        hint = "rewritten by inline_window; use .reads"
        out[path] = ed.replace_node(loc, new, same=same, hint=hint)
    return ed.done(InlineCursors, reads=tuple(out[p] for p in sorted(uses)))


__all__ = ["NotAWindowError", "inline_window"]
