"""Dot-product nests of ``_run``'s body run by numpy, bit for bit as the loops would run.

A nest ``for i: [for j:] [X[i, j] = c]; for k: X[i, j] += A[..] * B[..]`` (the indices of
``A`` and ``B`` each a loop variable) over arrays of ``_run``'s arguments computes, for each
element of ``X``, the same sequence of operations whatever the order of the elements: the
element's products, each rounded, added in order of ``k``, each sum rounded. Its elements are
independent lanes (``X``'s index is the lane variables, so each iteration of the lane loops
writes its own element, and ``A`` and ``B`` are other arrays: ``_run``'s arrays are distinct
objects owning their memory). So numpy may compute all the lanes at once:

- floats (``X``, ``A`` and ``B`` of one type, f32 or f64): the products by one float
  multiply (numpy's f32 operations are IEEE's, rounded once, as ``_R``'s rounding of the
  exact double product is; a double sum of two f32 values rounded to f32 is the f32 sum),
  the first added to ``X`` (or ``c``), then ``np.add.accumulate`` along ``k``, which adds in
  order, each sum rounded (a result that is NaN is left to the loops: which NaN comes out of
  an operation on two is the build's choice);
- integers: the exact products and sums modulo 2**64 (int64 arrays wrap), wrapped to ``X``'s
  type once: wrapping commutes with + and * (``X``'s type is at most 64 bits), which is what
  the loops compute, each operation wrapped.

The loops stay for the other cases, and for small nests (numpy's cost per call is more than
their run: ``MIN_WORK``); the compiler emits the nest only where its accesses were proved in
bounds (numpy's slices would clip, not fail).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from cursched.interp import nest_analysis as na
from cursched.interp.exprs import fits
from cursched.interp.values import quiet_numpy, restore_numpy, to_python
from cursched.ir.nodes import Assign, BinOp, Const, Expr, For, Read, Reduce, Stmt
from cursched.ir.symbols import Sym
from cursched.ir.types import TensorType

__all__ = ["CHUNK", "MIN_WORK", "DotNest", "dot_nest", "runner"]

#: Nests of fewer multiply-adds run as loops: numpy's fixed cost (a few microseconds) is
#: more than a loop's run below this (a whole ``_run``, best of 400: sgemm at 5x6x7, 210
#: multiply-adds, loops 26.8 us, numpy 7.2 us; gemv at 4x9, 36, loops 5.1 us, numpy 5.9 us).
MIN_WORK = 64


@dataclass(frozen=True)
class DotNest:
    """A dot-product nest (see the module docstring).

    Attributes:
        loops: the lane loops (one or two), then the reduction loop.
        dst: ``X``; its index is the lane variables in order.
        init: ``c`` of ``X[..] = c`` before the reduction loop, or None (``X`` is added to).
        lhs, rhs: ``A`` and ``B`` (the product's operands, in order), each with the positions
            in ``loops`` of its indices' variables.
        dtype: ``X``'s element type.
        nodes: the accesses' nodes (by identity), which must have been proved in bounds.
    """

    loops: tuple[For, ...]
    dst: Sym
    init: int | float | None
    lhs: tuple[Sym, tuple[int, ...]]
    rhs: tuple[Sym, tuple[int, ...]]
    dtype: np.dtype[Any]
    nodes: tuple[int, ...]


def _var(e: Expr) -> Sym | None:
    return e.sym if isinstance(e, Read) and not e.idx else None


def _shape(body: tuple[Stmt, ...]) -> tuple[Assign | None, For, Reduce] | None:
    """``[X[..] = c]; for k: X[..] += A[..] * B[..]`` as (init, loop, reduce), else None."""
    init = body[0] if len(body) == 2 else None
    last = body[-1]
    if len(body) not in (1, 2) or (init is not None and not isinstance(init, Assign)):
        return None
    if not isinstance(last, For) or len(last.body) != 1 or not isinstance(last.body[0], Reduce):
        return None
    return init, last, last.body[0]


def _operand(
    e: Expr, positions: Mapping[Sym, int], arrays: Mapping[Sym, TensorType]
) -> tuple[Sym, tuple[int, ...]] | None:
    if not isinstance(e, Read) or e.sym not in arrays or len(e.idx) != arrays[e.sym].rank():
        return None
    pos = []
    for i in e.idx:
        v = _var(i)
        if v is None or v not in positions:
            return None
        pos.append(positions[v])
    if not pos or len(set(pos)) != len(pos):
        return None
    return e.sym, tuple(pos)


def _types_fit(dt: np.dtype[Any], srcs: list[np.dtype[Any]]) -> bool:
    if dt.kind == "f":
        return dt.itemsize in (4, 8) and all(s == dt for s in srcs)
    return dt.kind in "iu" and all(s.kind in "iu" and fits(s, dt) for s in srcs)


def dot_nest(s: For, arrays: Mapping[Sym, TensorType]) -> DotNest | None:
    """The dot-product nest ``s`` is, over the tensors ``arrays`` (``_run``'s arguments of a
    type numpy indexes in place), or None."""
    lanes = [s]
    body = s.body
    if len(body) == 1 and isinstance(body[0], For) and _shape(body) is None:
        lanes.append(body[0])
        body = body[0].body
    found = _shape(body)
    if found is None:
        return None
    init, inner, red = found
    loops = (*lanes, inner)
    positions = {lp.iter: k for k, lp in enumerate(loops)}
    if len(positions) != len(loops) or red.sym not in arrays:
        return None
    if not all(na.invariant(e, set(positions)) for lp in loops for e in (lp.lo, lp.hi)):
        return None  # a range that depends on the nest (a triangle) is no box
    if tuple(_var(i) for i in red.idx) != tuple(lp.iter for lp in lanes):
        return None
    init_value = None
    if init is not None:
        if init.sym is not red.sym or not isinstance(init.rhs, Const):
            return None
        if tuple(_var(i) for i in init.idx) != tuple(lp.iter for lp in lanes):
            return None
        init_value = init.rhs.value
    if not isinstance(red.rhs, BinOp) or red.rhs.op != "*":
        return None
    lhs = _operand(red.rhs.lhs, positions, arrays)
    rhs = _operand(red.rhs.rhs, positions, arrays)
    if lhs is None or rhs is None or red.sym in (lhs[0], rhs[0]):
        return None
    dt = arrays[red.sym].elem.np_dtype
    if not _types_fit(dt, [arrays[lhs[0]].elem.np_dtype, arrays[rhs[0]].elem.np_dtype]):
        return None
    if isinstance(init_value, bool) or (dt.kind != "f" and isinstance(init_value, float)):
        return None
    nodes = (id(red), id(red.rhs.lhs), id(red.rhs.rhs)) + (() if init is None else (id(init),))
    return DotNest(loops, red.sym, init_value, lhs, rhs, dt, nodes)


Ranges = tuple[slice, ...]


def _picker(positions: tuple[int, ...]) -> Callable[[Ranges], tuple[slice, ...]]:
    """A function of the loops' ranges -> the ranges at ``positions``, as a tuple."""
    if len(positions) == 1:
        (only,) = positions
        return lambda ranges: (ranges[only],)
    return operator.itemgetter(*positions)


def _view_maker(
    positions: tuple[int, ...], target: tuple[int, ...]
) -> Callable[[np.ndarray[Any, Any], Ranges], np.ndarray[Any, Any]]:
    """A function of (array, loop ranges) -> the array's elements over the ranges, with one
    axis per loop, in the order ``target`` (positions in the nest; a loop the array's
    indices do not name is an axis of length 1)."""
    order = tuple(sorted(range(len(positions)), key=lambda d: target.index(positions[d])))
    expand = tuple(slice(None) if p in positions else None for p in target)
    pick = _picker(positions)
    if order == tuple(range(len(order))):
        return lambda a, ranges: a[pick(ranges)][expand]
    return lambda a, ranges: a[pick(ranges)].transpose(order)[expand]


def runner(plan: DotNest) -> Callable[..., bool]:
    """The function ``(X, A, B, ranges) -> bool`` running the nest ``plan`` on numpy arrays,
    the ranges (slices) of its loops all non-empty and its accesses in bounds: False, with
    ``X`` untouched, when a float result is NaN (the loops must run: see below)."""
    depth = len(plan.loops)
    # products laid out (k, lanes...): each step of the reduction adds a contiguous slab
    target = (depth - 1, *range(depth - 1))
    lhs_view = _view_maker(plan.lhs[1], target)
    rhs_view = _view_maker(plan.rhs[1], target)
    lanes = _picker(tuple(range(depth - 1)))
    dt = plan.dtype
    # ``c`` as the loops store it (cast to X's type); an integer as int64 (modulo 2**64)
    init = None if plan.init is None else to_python(plan.init, dt)
    start = None if init is None else dt.type(init)
    if dt.kind != "f":
        wrapped = None if init is None else (int(init) + 2**63) % 2**64 - 2**63
        return _int_runner(lhs_view, rhs_view, lanes, dt, wrapped)

    def run_float(x: Any, a: Any, b: Any, ranges: Ranges) -> bool:
        xs = x[lanes(ranges)]
        av, bv = lhs_view(a, ranges), rhs_view(b, ranges)
        last: Any = xs if start is None else start
        token = quiet_numpy()  # overflow and NaN are the defined results, not errors
        try:
            n = ranges[-1].stop - ranges[-1].start
            for lo, hi in _chunks(n, xs.size):
                # slab 0 the sum so far (X, c, or the last chunk's), then the products
                p = np.empty((hi - lo + 1, *xs.shape), dt)
                p[0] = last
                if hi - lo == n:
                    np.multiply(av, bv, out=p[1:])
                else:
                    np.multiply(_rows(av, lo, hi), _rows(bv, lo, hi), out=p[1:])
                # in order of k, lane by lane: each partial sum, rounded, plus the next
                # product (the sum first, as the loops' ``acc + x * y``)
                _accumulate(p, axis=0, out=p)
                last = p[-1]
            top = _max(last, None)
        finally:
            restore_numpy(token)
        if top != top:
            # a NaN among the results (their maximum is NaN): which NaN an operation on two
            # NaNs returns is the build's choice (numpy's differs from Python's, and by
            # layout), so the loops give this result. Without a NaN among the results no
            # operation met one (a NaN operand of + or * gives a NaN result, carried on to
            # the end), and IEEE alone decides every bit, in any order of the operands
            return False
        xs[...] = last
        return True

    return run_float


_accumulate = np.add.accumulate

#: At most this many products are held at once (a nest's products are computed in chunks of
#: ``k``, so that a big nest takes no more memory than a few megabytes beyond its arrays).
CHUNK = 1 << 20


def _chunks(n: int, lanes: int) -> tuple[tuple[int, int], ...]:
    """The positions 0 to ``n`` along ``k``'s axis in chunks (lo, hi) of at most ``CHUNK``
    products over ``lanes`` lanes (at least one position per chunk)."""
    if n * lanes <= CHUNK:
        return ((0, n),)
    step = max(1, CHUNK // max(1, lanes))
    return tuple((lo, min(n, lo + step)) for lo in range(0, n, step))


def _rows(v: Any, lo: int, hi: int) -> Any:
    """``v``'s elements at ``lo:hi`` along its first axis (all of them when the axis has
    length 1: an operand that does not name ``k`` is the same at every position)."""
    return v if v.shape[0] == 1 else v[lo:hi]


#: ``np.maximum.reduce``, the cheapest test for a NaN among the lanes (their maximum is NaN:
#: ``maximum`` propagates NaN; a sum would also be NaN for inf - inf).
_max = np.maximum.reduce


def _int_runner(
    lhs_view: Callable[..., Any],
    rhs_view: Callable[..., Any],
    lanes: Callable[[Ranges], tuple[slice, ...]],
    dt: np.dtype[Any],
    init: int | None,
) -> Callable[..., bool]:
    """``runner`` of an integer nest (``init``: ``c`` modulo 2**64, as an int64)."""

    def run_int(x: Any, a: Any, b: Any, ranges: Ranges) -> bool:
        xs = x[lanes(ranges)]
        av, bv = lhs_view(a, ranges), rhs_view(b, ranges)
        total: Any = xs if init is None else init
        n = ranges[-1].stop - ranges[-1].start
        for lo, hi in _chunks(n, xs.size):
            # slab 0 the sum so far (X, c, or the last chunks'), then the products
            p = np.empty((hi - lo + 1, *xs.shape), np.int64)
            p[0] = total  # (X's type into int64: exact, or modulo 2**64 for uint64)
            if hi - lo == n:
                np.multiply(av, bv, out=p[1:], dtype=np.int64, casting="unsafe")
            else:
                u, v = _rows(av, lo, hi), _rows(bv, lo, hi)
                np.multiply(u, v, out=p[1:], dtype=np.int64, casting="unsafe")
            total = p.sum(axis=0)  # modulo 2**64, as every int64 array operation
        xs[...] = total.astype(dt, casting="unsafe")
        return True

    return run_int
