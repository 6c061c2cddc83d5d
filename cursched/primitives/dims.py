"""Buffer dimensions: ``expand_dim``, ``resize_dim``, ``rearrange_dim``, ``divide_dim``,
``mult_dim`` and ``unroll_buffer``.

All six rewrite an allocation's shape and every access to it in its scope. ``_Plan`` holds
what they share: each use of the buffer is planned first (in its own context, so that index
arguments resolve to the loops around it and bounds are proven there), then the scope is
rebuilt in one replace, so a failed precondition leaves nothing half-done.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from cursched.analysis import affine as af
from cursched.analysis.checks import NotBoundedError, NotDivisibleError, check_divides, check_le
from cursched.analysis.context import context_of
from cursched.cursors import AllocCursor, BlockLoc, Cursor, Editor, ExprCursor, NodeLoc
from cursched.cursors.edits import Rewrite
from cursched.errors import SchedulingError
from cursched.ir.nodes import (
    Alloc,
    Const,
    Expr,
    Interval,
    Node,
    Point,
    Read,
    StrideExpr,
    WAccess,
    WindowExpr,
)
from cursched.ir.paths import Path
from cursched.ir.symbols import Sym
from cursched.ir.types import TensorType
from cursched.primitives.buffer_common import (
    Use,
    UseNode,
    buffer_scope,
    minus,
    new_access_locs,
    rebuild,
    scope_stmts,
    simplified,
    used_names,
    uses_of,
)
from cursched.primitives.loop_common import (
    BadIndexExpressionError,
    index_expr,
    int_const,
    safety,
    same_pairs,
)
from cursched.primitives.registry import Buffer, PrimCursors, fail, prim_cursors, primitive
from cursched.proc import Proc

# what a planned use becomes: the buffer it now uses and its new indices / window coordinates
Planned = tuple[Sym, tuple[Any, ...]]


class DimNotAllocError(SchedulingError):
    """A dimension primitive, precondition 1: the buffer is a parameter, not an allocation
    (its shape is the caller's)."""


class DimIndexError(SchedulingError):
    """A dimension primitive, precondition 2: a dimension number is out of range."""


class DimUseError(SchedulingError):
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


def _alloc_of(buf: Any, prim: str) -> Alloc:
    if not isinstance(buf, AllocCursor):
        raise fail(DimNotAllocError, prim, f"{buf.describe()} is not an allocation", buf)
    return buf.alloc()


def _shape(a: Alloc) -> tuple[Expr, ...]:
    return a.type.shape if isinstance(a.type, TensorType) else ()


def _dim(a: Alloc, dim: Any, prim: str, buf: Cursor) -> int:
    rank = len(_shape(a))
    if isinstance(dim, bool) or not isinstance(dim, int) or not 0 <= dim < rank:
        raise fail(DimIndexError, prim, f"dimension {dim!r} is not in 0..{rank - 1}", buf)
    return dim


def _coords(u: Use) -> tuple[Expr, ...] | tuple[WAccess, ...]:
    n = u.node
    assert not isinstance(n, StrideExpr)
    return n.idx


def _plan(
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


def _apply(
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


def _prove_in(
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


def _positive(
    proc: Proc, buf: AllocCursor, size: Expr, err: type[SchedulingError], prim: str
) -> None:
    try:
        check_le(proc.ir(), buf.path(), int_const(1), size, primitive=prim)
    except NotBoundedError as ex:
        raise safety(err, prim, ex, buf) from ex


def _expr(
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


def _recombine(a: af.Aff, k: int) -> af.Aff:
    """``k * (x / k) + x % k`` -> ``x``: undoes ``divide_dim`` when ``mult_dim`` merges back."""
    terms = dict(a.terms)
    for atom, c in a.terms:
        if isinstance(atom, af.Div) and atom.k == k and c % k == 0:
            m = af.Mod(atom.num, k)
            if terms.get(m) == c // k and terms.get(atom) == c:
                del terms[atom], terms[m]
                return _recombine(af.Aff.of(terms, a.const) + atom.num.scale(c // k), k)
    return a


# ------------------------------------------------------------------------------ expand_dim


class ExpandDimSizeError(SchedulingError):
    """expand_dim, precondition 4: the size is not an affine expression proven positive."""


class ExpandDimIndexExprError(SchedulingError):
    """expand_dim, precondition 5: the index does not resolve at some access (it may use the
    sizes and the loops around each access)."""


class ExpandDimBoundsError(SchedulingError):
    """expand_dim, precondition 6: the index is not proven inside ``0 <= index < size`` at
    some access."""


@primitive
def expand_dim(proc: Proc, buf: Buffer, size: Any, index: Any) -> Rewrite[DimCursors]:
    """Add a new outermost dimension to an allocation; every access uses ``index`` in it.

    Args:
        proc: the proc to rewrite.
        buf: the allocation (a cursor or a buffer name).
        size: the new dimension's size (an int, an expression or its text, over the sizes
            and loops around the allocation).
        index: the index every access uses in the new dimension (text such as ``"i"``,
            resolved at each access, so it may name loops inside the allocation's scope).

    Returns:
        The new proc and ``DimCursors``: ``alloc``: the allocation; ``accesses``: the
        rewritten accesses.

    Preconditions:
        1. ``buf`` is an allocation (``DimNotAllocError``).
        3. no ``stride`` of it and no whole-buffer call argument (``DimUseError``).
        4. ``size`` is affine and proven >= 1 (``ExpandDimSizeError``).
        5. ``index`` resolves at every access (``ExpandDimIndexExprError``).
        6. ``0 <= index < size`` at every access, proven (``ExpandDimBoundsError``).

    Forwards/Kills:
        ``buf`` forwards to ``alloc``; statements keep their identity; rewritten read and
        window expressions die (hint: "rewritten by expand_dim").

    Example:
        ``expand_dim(p, "t", "n", "i")``::

            t: f32 @ DRAM              ->    t: f32[n] @ DRAM
            for i in seq(0, n):              for i in seq(0, n):
                t = x[i]                         t[i] = x[i]
                y[i] = t                         y[i] = t[i]
    """
    prim = "expand_dim"
    a = _alloc_of(buf, prim)
    assert isinstance(buf, AllocCursor)
    n = _expr(proc, buf.path(), size, prim, buf, "size", ExpandDimSizeError)
    _positive(proc, buf, n, ExpandDimSizeError, prim)

    def per_use(u: Use) -> Planned:
        i = _expr(proc, u.path, index, prim, buf, "index", ExpandDimIndexExprError)
        _prove_in(proc, u.path, int_const(0), i, n, True, ExpandDimBoundsError, prim, buf)
        if isinstance(u.node, WindowExpr):
            return a.sym, (Point(i), *u.node.idx)
        return a.sym, (i, *_coords(u))

    _, plans = _plan(proc, buf, prim, per_use)
    t = a.type
    elem = t.elem if isinstance(t, TensorType) else t
    new = a.replace(type=TensorType(elem, (n, *_shape(a))))
    ed, aloc, _, locs = _apply(proc, buf, prim, (new,), plans)
    return ed.done(DimCursors, alloc=aloc, accesses=locs)


# ------------------------------------------------------------------------------ resize_dim


class ResizeDimSizeError(SchedulingError):
    """resize_dim, precondition 4: the size is not an affine expression proven positive."""


class ResizeDimOffsetError(SchedulingError):
    """resize_dim, precondition 5: the offset is not affine in the sizes and loops around the
    allocation."""


class ResizeDimBoundsError(SchedulingError):
    """resize_dim, precondition 6: an access leaves ``offset <= i < offset + size``."""


@primitive
def resize_dim(
    proc: Proc, buf: Buffer, dim: int, size: Any, offset: Any = 0
) -> Rewrite[DimCursors]:
    """Change the size of one dimension; accesses shift by ``-offset``.

    Args:
        proc: the proc to rewrite.
        buf: the allocation.
        dim: the dimension.
        size: its new size.
        offset: the old index that becomes index 0.

    Returns:
        The new proc and ``DimCursors`` (``alloc``, ``accesses``).

    Preconditions:
        1. ``buf`` is an allocation (``DimNotAllocError``).
        2. ``dim`` is a dimension of it (``DimIndexError``).
        3. no ``stride``/whole-buffer use (``DimUseError``).
        4. ``size`` is affine and proven >= 1 (``ResizeDimSizeError``).
        5. ``offset`` is affine (``ResizeDimOffsetError``).
        6. every access lies in ``offset <= i < offset + size``, proven
           (``ResizeDimBoundsError``, with a counterexample).

    Forwards/Kills:
        ``buf`` forwards to ``alloc``; rewritten accesses die.

    Example:
        ``resize_dim(p, "t", 0, 4, "i")``::

            t: f32[n + 4] @ DRAM       ->    t: f32[4] @ DRAM
            t[i + 1] = x[0]                  t[1] = x[0]
    """
    prim = "resize_dim"
    a = _alloc_of(buf, prim)
    assert isinstance(buf, AllocCursor)
    d = _dim(a, dim, prim, buf)
    n = _expr(proc, buf.path(), size, prim, buf, "size", ResizeDimSizeError)
    _positive(proc, buf, n, ResizeDimSizeError, prim)
    off = _expr(proc, buf.path(), offset, prim, buf, "offset", ResizeDimOffsetError)

    def per_use(u: Use) -> Planned:
        idx = list(_coords(u))
        c = idx[d]
        if isinstance(c, Interval):
            lo, hi = minus(c.lo, off), minus(c.hi, off)
            _prove_in(proc, u.path, int_const(0), lo, hi, False, ResizeDimBoundsError, prim, buf)
            _prove_in(proc, u.path, lo, hi, n, False, ResizeDimBoundsError, prim, buf)
            idx[d] = Interval(lo, hi)
        else:
            e = c.pt if isinstance(c, Point) else c
            new = minus(e, off)
            _prove_in(proc, u.path, int_const(0), new, n, True, ResizeDimBoundsError, prim, buf)
            idx[d] = Point(new) if isinstance(c, Point) else new
        return a.sym, tuple(idx)

    _, plans = _plan(proc, buf, prim, per_use)
    shape = list(_shape(a))
    shape[d] = n
    assert isinstance(a.type, TensorType)
    new = a.replace(type=dataclasses.replace(a.type, shape=tuple(shape)))
    ed, aloc, _, locs = _apply(proc, buf, prim, (new,), plans)
    return ed.done(DimCursors, alloc=aloc, accesses=locs)


# --------------------------------------------------------------------------- rearrange_dim


class RearrangeDimPermError(SchedulingError):
    """rearrange_dim, precondition 2: the argument is not a permutation of the dimensions."""


@primitive
def rearrange_dim(proc: Proc, buf: Buffer, permutation: Any) -> Rewrite[DimCursors]:
    """Permute the dimensions of an allocation: new dimension ``k`` is old ``permutation[k]``.

    Args:
        proc: the proc to rewrite.
        buf: the allocation.
        permutation: a permutation of ``0 .. rank - 1``.

    Returns:
        The new proc and ``DimCursors`` (``alloc``, ``accesses``).

    Preconditions:
        1. ``buf`` is an allocation (``DimNotAllocError``).
        2. ``permutation`` permutes its dimensions (``RearrangeDimPermError``).
        3. no ``stride``/whole-buffer use, and every window keeps its ranged dimensions in
           order (a transposed window would change the callee's view; ``DimUseError``).

    Forwards/Kills:
        ``buf`` forwards to ``alloc``; rewritten accesses die.

    Example:
        ``rearrange_dim(p, "t", (1, 0))``::

            t: f32[4, 8] @ DRAM        ->    t: f32[8, 4] @ DRAM
            t[i, j] = x[i, j]                t[j, i] = x[i, j]
    """
    prim = "rearrange_dim"
    a = _alloc_of(buf, prim)
    assert isinstance(buf, AllocCursor)
    rank = len(_shape(a))
    perm = tuple(permutation) if isinstance(permutation, list | tuple) else ()
    if sorted(perm) != list(range(rank)) or any(isinstance(x, bool) for x in perm) or not rank:
        raise fail(
            RearrangeDimPermError,
            prim,
            f"{permutation!r} is not a permutation of 0..{rank - 1}",
            buf,
        )

    def per_use(u: Use) -> Planned:
        idx = _coords(u)
        if isinstance(u.node, WindowExpr):
            ranged = [perm[k] for k in range(rank) if isinstance(idx[perm[k]], Interval)]
            if ranged != sorted(ranged):
                raise fail(DimUseError, prim, "a window would be transposed", buf)
        return a.sym, tuple(idx[perm[k]] for k in range(rank))

    _, plans = _plan(proc, buf, prim, per_use)
    shape = _shape(a)
    assert isinstance(a.type, TensorType)
    new = a.replace(type=dataclasses.replace(a.type, shape=tuple(shape[p] for p in perm)))
    ed, aloc, _, locs = _apply(proc, buf, prim, (new,), plans)
    return ed.done(DimCursors, alloc=aloc, accesses=locs)


# ------------------------------------------------------------------------------ divide_dim


class DivideDimQuotientError(SchedulingError):
    """divide_dim, precondition 4: the quotient is not an integer greater than 1."""


class DivideDimNotDivisibleError(SchedulingError):
    """divide_dim, precondition 5: the quotient does not provably divide the dimension."""


@primitive
def divide_dim(proc: Proc, buf: Buffer, dim: int, quotient: int) -> Rewrite[DimCursors]:
    """Split dimension ``dim`` of size ``n`` into ``n / quotient`` and ``quotient``.

    Args:
        proc: the proc to rewrite.
        buf: the allocation.
        dim: the dimension to split.
        quotient: the size of the new inner dimension.

    Returns:
        The new proc and ``DimCursors`` (``alloc``, ``accesses``).

    Preconditions:
        1. ``buf`` is an allocation (``DimNotAllocError``).
        2. ``dim`` is a dimension of it (``DimIndexError``).
        3. no ``stride``/whole-buffer use; windows index ``dim`` at a point (``DimUseError``).
        4. ``quotient`` is an integer > 1 (``DivideDimQuotientError``).
        5. it divides the dimension's size, proven (``DivideDimNotDivisibleError``).

    Forwards/Kills:
        ``buf`` forwards to ``alloc``; rewritten accesses die.

    Example:
        ``divide_dim(p, "t", 0, 4)``::

            t: f32[16] @ DRAM          ->    t: f32[4, 4] @ DRAM
            t[i] = x[i]                      t[i / 4, i % 4] = x[i]
    """
    prim = "divide_dim"
    a = _alloc_of(buf, prim)
    assert isinstance(buf, AllocCursor)
    d = _dim(a, dim, prim, buf)
    if isinstance(quotient, bool) or not isinstance(quotient, int) or quotient < 2:
        raise fail(
            DivideDimQuotientError, prim, f"quotient must be an int > 1, got {quotient!r}", buf
        )
    q = quotient
    size = _shape(a)[d]
    try:
        check_divides(proc.ir(), buf.path(), q, size, primitive=prim)
    except NotDivisibleError as ex:
        raise safety(DivideDimNotDivisibleError, prim, ex, buf) from ex

    def per_use(u: Use) -> Planned:
        idx = list(_coords(u))
        c = idx[d]
        if isinstance(c, Interval):
            raise fail(DimUseError, prim, "a window ranges over the divided dimension", buf)
        e = c.pt if isinstance(c, Point) else c
        ea = af.to_aff(e)
        assert ea is not None, "indices are quasi-affine"
        ranges = context_of(proc.ir(), u.path).ranges()
        hi, lo = simplified(af.div(ea, q), ranges), simplified(af.mod(ea, q), ranges)
        pair: list[Any] = [Point(hi), Point(lo)] if isinstance(c, Point) else [hi, lo]
        return a.sym, (*idx[:d], *pair, *idx[d + 1 :])

    _, plans = _plan(proc, buf, prim, per_use)
    shape = list(_shape(a))
    sa = af.to_aff(size)
    outer = simplified(af.div(sa, q)) if sa is not None else size
    shape[d : d + 1] = [outer, int_const(q)]
    assert isinstance(a.type, TensorType)
    new = a.replace(type=dataclasses.replace(a.type, shape=tuple(shape)))
    ed, aloc, _, locs = _apply(proc, buf, prim, (new,), plans)
    return ed.done(DimCursors, alloc=aloc, accesses=locs)


# -------------------------------------------------------------------------------- mult_dim


class MultDimNotConstError(SchedulingError):
    """mult_dim, precondition 4: the lower dimension's size is not a constant."""


@primitive
def mult_dim(proc: Proc, buf: Buffer, hi_dim: int, lo_dim: int) -> Rewrite[DimCursors]:
    """Merge dimension ``lo_dim`` (constant size ``c``) into ``hi_dim``: ``[hi * c + lo]``.

    Args:
        proc: the proc to rewrite.
        buf: the allocation.
        hi_dim: the dimension that becomes the merged one.
        lo_dim: the dimension (of constant size) that disappears.

    Returns:
        The new proc and ``DimCursors`` (``alloc``, ``accesses``).

    Preconditions:
        1. ``buf`` is an allocation (``DimNotAllocError``).
        2. ``hi_dim`` and ``lo_dim`` are two different dimensions (``DimIndexError``).
        3. no ``stride``/whole-buffer use; windows index ``hi_dim`` at a point
           (``DimUseError``).
        4. ``lo_dim``'s size is a constant (``MultDimNotConstError``).

    Forwards/Kills:
        ``buf`` forwards to ``alloc``; rewritten accesses die.

    Example:
        ``mult_dim(p, "t", 0, 1)``::

            t: f32[n, 4] @ DRAM        ->    t: f32[4 * n] @ DRAM
            t[i, j] = x[i]                   t[4 * i + j] = x[i]
    """
    prim = "mult_dim"
    a = _alloc_of(buf, prim)
    assert isinstance(buf, AllocCursor)
    h, lo_d = _dim(a, hi_dim, prim, buf), _dim(a, lo_dim, prim, buf)
    if h == lo_d:
        raise fail(DimIndexError, prim, "hi_dim and lo_dim must differ", buf)
    shape = _shape(a)
    c = shape[lo_d]
    if not (isinstance(c, Const) and isinstance(c.value, int)):
        raise fail(MultDimNotConstError, prim, "the lower dimension's size is not a constant", buf)
    k = int(c.value)

    def merged(hi_e: Expr, lo_e: Expr) -> Expr:
        x, y = af.to_aff(hi_e), af.to_aff(lo_e)
        assert x is not None and y is not None, "indices are quasi-affine"
        return simplified(_recombine(x.scale(k) + y, k))

    def per_use(u: Use) -> Planned:
        idx = list(_coords(u))
        ch, cl = idx[h], idx[lo_d]
        if isinstance(ch, Interval):
            raise fail(DimUseError, prim, "a window ranges over the higher dimension", buf)
        he = ch.pt if isinstance(ch, Point) else ch
        new: Any
        if isinstance(cl, Interval):
            new = Interval(merged(he, cl.lo), merged(he, cl.hi))
        elif isinstance(cl, Point):
            new = Point(merged(he, cl.pt))
        else:
            new = merged(he, cl)
        idx[h] = new
        del idx[lo_d]
        return a.sym, tuple(idx)

    _, plans = _plan(proc, buf, prim, per_use)
    ha = af.to_aff(shape[h])
    nshape = list(shape)
    nshape[h] = simplified(ha.scale(k)) if ha is not None else shape[h]
    del nshape[lo_d]
    assert isinstance(a.type, TensorType)
    new = a.replace(type=dataclasses.replace(a.type, shape=tuple(nshape)))
    ed, aloc, _, locs = _apply(proc, buf, prim, (new,), plans)
    return ed.done(DimCursors, alloc=aloc, accesses=locs)


# --------------------------------------------------------------------------- unroll_buffer


class UnrollBufferNotConstError(SchedulingError):
    """unroll_buffer, precondition 4: the dimension's size is not a constant."""


class UnrollBufferIndexError(SchedulingError):
    """unroll_buffer, precondition 5: an access indexes the dimension with a non-constant."""


@prim_cursors
class UnrollBufferCursors(PrimCursors):
    """What ``unroll_buffer`` returns.

    Attributes:
        allocs: the new allocations, one per index of the unrolled dimension.
    """

    allocs: tuple[AllocCursor, ...]


@primitive
def unroll_buffer(proc: Proc, buf: Buffer, dim: int) -> Rewrite[UnrollBufferCursors]:
    """Replace an allocation by one allocation per index of a constant dimension.

    Args:
        proc: the proc to rewrite.
        buf: the allocation.
        dim: the dimension to unroll.

    Returns:
        The new proc and ``UnrollBufferCursors``: ``allocs``: ``name_0``, ``name_1``, ...

    Preconditions:
        1. ``buf`` is an allocation (``DimNotAllocError``).
        2. ``dim`` is a dimension of it (``DimIndexError``).
        3. no ``stride``/whole-buffer use; windows keep a ranged dimension (``DimUseError``).
        4. ``dim``'s size is a constant (``UnrollBufferNotConstError``).
        5. every access indexes ``dim`` with a constant (``UnrollBufferIndexError``).

    Forwards/Kills:
        Kills ``buf`` (hint: "unrolled by unroll_buffer; use .allocs[k]"); statements keep
        their identity; rewritten accesses die.

    Example:
        ``unroll_buffer(p, "t", 0)``::

            t: f32[2] @ DRAM           ->    t_0: f32 @ DRAM
            t[0] = x[0]                      t_1: f32 @ DRAM
            t[1] = x[1]                      t_0 = x[0]
                                             t_1 = x[1]
    """
    prim = "unroll_buffer"
    a = _alloc_of(buf, prim)
    assert isinstance(buf, AllocCursor)
    d = _dim(a, dim, prim, buf)
    shape = _shape(a)
    c = shape[d]
    if not (isinstance(c, Const) and isinstance(c.value, int)):
        raise fail(UnrollBufferNotConstError, prim, "the dimension's size is not a constant", buf)
    taken = used_names(proc.ir())
    syms: list[Sym] = []
    for k in range(int(c.value)):
        nm, j = f"{a.sym.name}_{k}", 0
        while nm in taken:
            j += 1
            nm = f"{a.sym.name}_{k}_{j}"
        taken.add(nm)
        syms.append(Sym(nm))

    def per_use(u: Use) -> Planned:
        idx = list(_coords(u))
        x = idx[d]
        if isinstance(x, Interval):
            raise fail(UnrollBufferIndexError, prim, "a window ranges over the dimension", buf)
        e = x.pt if isinstance(x, Point) else x
        ea = af.to_aff(e)
        ea = None if ea is None else af.simplify_aff(ea)
        if ea is None or not ea.is_const() or not 0 <= ea.const < len(syms):
            raise fail(
                UnrollBufferIndexError,
                prim,
                "an access indexes the dimension with a non-constant",
                buf,
            )
        del idx[d]
        if isinstance(u.node, WindowExpr) and not any(isinstance(w, Interval) for w in idx):
            raise fail(DimUseError, prim, "a window would lose all its ranged dimensions", buf)
        return syms[ea.const], tuple(idx)

    _, plans = _plan(proc, buf, prim, per_use)
    rest_shape = tuple(s for k, s in enumerate(shape) if k != d)
    assert isinstance(a.type, TensorType)
    t = dataclasses.replace(a.type, shape=rest_shape) if rest_shape else a.type.elem
    news = tuple(Alloc(s, t, a.mem) for s in syms)
    ed, aloc, _, _ = _apply(proc, buf, prim, news, plans, keep_alloc=False)
    first = aloc.path
    *parent, (attr, k0) = first
    allocs = tuple(NodeLoc((*parent, (attr, k0 + j))) for j in range(len(news)))
    return ed.done(UnrollBufferCursors, allocs=allocs)


__all__ = [
    "DimCursors",
    "DimIndexError",
    "DimNotAllocError",
    "DimUseError",
    "DivideDimNotDivisibleError",
    "DivideDimQuotientError",
    "ExpandDimBoundsError",
    "ExpandDimIndexExprError",
    "ExpandDimSizeError",
    "MultDimNotConstError",
    "RearrangeDimPermError",
    "ResizeDimBoundsError",
    "ResizeDimOffsetError",
    "ResizeDimSizeError",
    "UnrollBufferCursors",
    "UnrollBufferIndexError",
    "UnrollBufferNotConstError",
    "divide_dim",
    "expand_dim",
    "mult_dim",
    "rearrange_dim",
    "resize_dim",
    "unroll_buffer",
]
