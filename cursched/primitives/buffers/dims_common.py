"""What the dimension primitives share (``dims``, ``dims_split``).

Each use of the buffer is planned first (``_plan``: in its own context, so that index
arguments resolve to the loops around it and bounds are proven there), then the scope is
rebuilt in one replace (``_apply``), so a failed precondition leaves nothing half-done.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from cursched.analysis import affine as af
from cursched.analysis.checks import NotBoundedError, check_le
from cursched.cursors import AllocCursor, BlockLoc, Cursor, Editor, ExprCursor, NodeLoc
from cursched.cursors.edits import Rewrite
from cursched.errors import BadArgumentError, IndirectUseError, SchedulingError, ShapeMismatchError
from cursched.ir.nodes import (
    Alloc,
    Expr,
    Node,
    Read,
    StrideExpr,
    WAccess,
    WindowExpr,
)
from cursched.ir.paths import Path
from cursched.ir.symbols import Sym
from cursched.ir.types import DataType, TensorType
from cursched.primitives.buffers.buffer_common import (
    Use,
    UseNode,
    buffer_scope,
    new_access_locs,
    rebuild,
    scope_stmts,
    uses_of,
)
from cursched.primitives.loops.loop_common import (
    BadIndexExpressionError,
    index_expr,
    int_const,
    safety,
    same_pairs,
)
from cursched.primitives.registry import PrimCursors, fail, prim_cursors
from cursched.proc import Proc

# what a planned use becomes: the buffer it now uses and its new indices / window coordinates
Planned = tuple[Sym, tuple[Any, ...]]


class DimNotAllocError(ShapeMismatchError):
    """A dimension primitive, precondition 1: the buffer is a parameter, not an allocation
    (its shape is the caller's)."""


class DimIndexError(BadArgumentError):
    """A dimension primitive, precondition 2: a dimension number is out of range."""


class DimUseError(IndirectUseError):
    """A dimension primitive, precondition 3: the buffer is used in a way the rewrite cannot
    follow (``stride``, the whole buffer passed to a call, or a window the new layout cannot
    express)."""


@prim_cursors
class DimCursors(PrimCursors):
    """What ``expand_dim``, ``resize_dim``, ``rearrange_dim``, ``divide_dim`` and ``mult_dim``
    return.

    Attributes:
        alloc: the rewritten allocation.
        accesses: every rewritten access (reads, windows: expressions; writes: statements).
    """

    alloc: AllocCursor
    accesses: tuple[ExprCursor | Cursor, ...]


def alloc_of(buf: Any, prim: str) -> Alloc:
    if not isinstance(buf, AllocCursor):
        raise fail(DimNotAllocError, prim, f"{buf.describe()} is not an allocation", buf)
    return buf.alloc()


def shape_of(a: Alloc) -> tuple[Expr, ...]:
    return a.type.shape if isinstance(a.type, TensorType) else ()


def dim_of(a: Alloc, dim: Any, prim: str, buf: Cursor) -> int:
    rank = len(shape_of(a))
    if isinstance(dim, bool) or not isinstance(dim, int) or not 0 <= dim < rank:
        raise fail(DimIndexError, prim, f"dimension {dim!r} is not in 0..{rank - 1}", buf)
    return dim


def coords(u: Use) -> tuple[Expr, ...] | tuple[WAccess, ...]:
    n = u.node
    assert not isinstance(n, StrideExpr)
    return n.idx


def plan_uses(
    proc: Proc,
    buf: AllocCursor,
    prim: str,
    per_use: Callable[[Use], Planned],
) -> tuple[list[Use], dict[int, Planned]]:
    ir = proc.ir()
    stmts, paths = scope_stmts(ir, buffer_scope(ir, buf))
    sym = buf.alloc().sym
    uses = uses_of(stmts[1:], paths[1:], sym)
    plans: dict[int, Planned] = {}
    for u in uses:
        n = u.node
        whole = isinstance(n, Read) and isinstance(n.type, TensorType)
        if isinstance(n, StrideExpr) or whole:
            what = "stride" if isinstance(n, StrideExpr) else "the whole buffer passed to a call"
            raise fail(DimUseError, prim, f"{sym.name} is used as {what}", buf)
        plans[id(n)] = per_use(u)
    return uses, plans


def apply_plans(
    proc: Proc,
    buf: AllocCursor,
    prim: str,
    new_allocs: tuple[Alloc, ...],
    plans: dict[int, Planned],
    keep_alloc: bool = True,
) -> tuple[Editor, NodeLoc, BlockLoc, tuple[Any, ...]]:
    ir = proc.ir()
    scope = buffer_scope(ir, buf)
    stmts, _ = scope_stmts(ir, scope)
    old = buf.alloc()

    def fix(o: UseNode, new: UseNode) -> Node:
        sym, idx = plans[id(o)]
        if isinstance(new, WindowExpr):
            return new.replace(sym=sym, idx=idx)
        return new.replace(sym=sym, idx=idx)

    rest = rebuild(stmts[1:], old.sym, fix)
    ed = Editor(ir)
    same: list[tuple[Any, Any]] = list(same_pairs(stmts[1:], rest))
    if keep_alloc:
        same.append((old, new_allocs[0]))
    hint = f"rewritten by {prim}" if keep_alloc else f"unrolled by {prim}; use .allocs[k]"
    out = ed.replace(scope, (*new_allocs, *rest), same=same, hint=hint)
    k = len(new_allocs)
    rest_loc = BlockLoc(out.parent, out.attr, out.lo + k, out.hi)
    syms = {a.sym for a in new_allocs}
    return ed, NodeLoc(out.stmt_paths()[0]), rest_loc, new_access_locs(rest, rest_loc, syms)


def reshape(
    proc: Proc,
    buf: AllocCursor,
    prim: str,
    a: Alloc,
    shape: Sequence[Expr],
    plans: dict[int, Planned],
) -> Rewrite[DimCursors]:
    """Give allocation ``a`` the tensor shape ``shape`` and rewrite its uses as ``plans`` say:
    the last step of every primitive that changes one allocation's dimensions in place."""
    t = a.type
    shaped = tuple(shape)
    if isinstance(t, TensorType):
        new_type = dataclasses.replace(t, shape=shaped)
    else:
        assert isinstance(t, DataType), "an allocation is data"
        new_type = TensorType(t, shaped)
    ed, aloc, _, locs = apply_plans(proc, buf, prim, (a.replace(type=new_type),), plans)
    return ed.done(DimCursors, alloc=aloc, accesses=locs)


def prove_in(
    proc: Proc,
    path: Path,
    lo: Expr,
    e: Expr,
    hi: Expr,
    strict: bool,
    err: type[SchedulingError],
    prim: str,
    buf: Cursor,
) -> None:
    try:
        check_le(proc.ir(), path, lo, e, primitive=prim)
        check_le(proc.ir(), path, e, hi, strict=strict, primitive=prim)
    except NotBoundedError as ex:
        raise safety(err, prim, ex, buf) from ex


def positive(
    proc: Proc, buf: AllocCursor, size: Expr, err: type[SchedulingError], prim: str
) -> None:
    try:
        check_le(proc.ir(), buf.path(), int_const(1), size, primitive=prim)
    except NotBoundedError as ex:
        raise safety(err, prim, ex, buf) from ex


def expr_arg(
    proc: Proc,
    path: Path,
    value: Any,
    prim: str,
    buf: Cursor,
    what: str,
    err: type[SchedulingError],
) -> Expr:
    try:
        return index_expr(proc.ir(), path, value, prim, buf, what)
    except BadIndexExpressionError as ex:
        raise fail(err, prim, str(ex).splitlines()[0].removeprefix(f"{prim}: "), buf) from ex


def recombine(a: af.Aff, k: int) -> af.Aff:
    """``k * (x / k) + x % k`` -> ``x``: undoes ``divide_dim`` when ``mult_dim`` merges back."""
    terms = dict(a.terms)
    for atom, c in a.terms:
        if isinstance(atom, af.Div) and atom.k == k and c % k == 0:
            m = af.Mod(atom.num, k)
            if terms.get(m) == c // k and terms.get(atom) == c:
                del terms[atom], terms[m]
                return recombine(af.Aff.of(terms, a.const) + atom.num.scale(c // k), k)
    return a


__all__ = [
    "DimCursors",
    "DimIndexError",
    "DimNotAllocError",
    "DimUseError",
    "Planned",
    "alloc_of",
    "apply_plans",
    "coords",
    "dim_of",
    "expr_arg",
    "plan_uses",
    "positive",
    "prove_in",
    "recombine",
    "shape_of",
]
