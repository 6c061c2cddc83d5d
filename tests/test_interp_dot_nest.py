"""Dot-product nests run by numpy (``cursched.interp.dot_nest``) against the loops.

``_run``'s body computes a nest ``for i: [for j:] [X[..] = c]; for k: X[..] += A[..] * B[..]``
with numpy when it is big enough; the general binding (views as arguments) runs the loops.
Both must give the same bits, special values included (infinities, NaN with payloads,
subnormals, overflow, integer wrap-around), and the numpy path must be the one taken.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from cursched import DRAM, InterpreterError, proc
from cursched.interp import compiled, interpret
from cursched.interp import dot_nest as dn
from cursched.ir.nodes import Assign


@proc
def mm_f32(
    M: size, N: size, K: size, A: f32[M, K] @ DRAM, B: f32[K, N] @ DRAM, C: f32[M, N] @ DRAM
):
    for i in seq(0, M):
        for j in seq(0, N):
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[k, j]


@proc
def mm_f64_init(
    M: size, N: size, K: size, A: f64[M, K] @ DRAM, B: f64[K, N] @ DRAM, C: f64[M, N] @ DRAM
):
    for i in seq(0, M):
        for j in seq(0, N):
            C[i, j] = 0.5
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[k, j]


@proc
def mm_transposed(
    M: size, N: size, K: size, A: f32[K, M] @ DRAM, B: f32[N, K] @ DRAM, C: f32[M, N] @ DRAM
):
    for i in seq(0, M):
        for j in seq(0, N):
            C[i, j] = -1.5
            for k in seq(0, K):
                C[i, j] += B[j, k] * A[k, i]


@proc
def mm_offset(
    M: size, N: size, K: size, A: f32[M, K] @ DRAM, B: f32[K, N] @ DRAM, C: f32[M, N] @ DRAM
):
    for i in seq(1, M):
        for j in seq(2, N):
            for k in seq(1, K - 1):
                C[i, j] += A[i, k] * B[k, j]


@proc
def gemv_f32(M: size, N: size, A: f32[M, N] @ DRAM, x: f32[N] @ DRAM, y: f32[M] @ DRAM):
    for i in seq(0, M):
        y[i] = 0.0
        for j in seq(0, N):
            y[i] += A[i, j] * x[j]


@proc
def broadcast_f32(
    M: size, N: size, K: size, A: f32[M, K] @ DRAM, x: f32[K] @ DRAM, C: f32[M, N] @ DRAM
):
    for i in seq(0, M):
        for j in seq(0, N):
            for k in seq(0, K):
                C[i, j] += A[i, k] * x[k]


@proc
def mm_i8(M: size, N: size, K: size, A: i8[M, K] @ DRAM, B: i8[K, N] @ DRAM, C: i32[M, N] @ DRAM):
    for i in seq(0, M):
        for j in seq(0, N):
            C[i, j] = 7
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[k, j]


@proc
def mm_i8_wrap(
    M: size, N: size, K: size, A: i8[M, K] @ DRAM, B: i8[K, N] @ DRAM, C: i8[M, N] @ DRAM
):
    for i in seq(0, M):
        for j in seq(0, N):
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[k, j]


@proc
def mm_u8(
    M: size, N: size, K: size, A: ui8[M, K] @ DRAM, B: ui8[K, N] @ DRAM, C: ui16[M, N] @ DRAM
):
    for i in seq(0, M):
        for j in seq(0, N):
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[k, j]


@proc
def mm_i32(
    M: size, N: size, K: size, A: i32[M, K] @ DRAM, B: i32[K, N] @ DRAM, C: i32[M, N] @ DRAM
):
    for i in seq(0, M):
        for j in seq(0, N):
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[k, j]


@proc
def triangle(N: size, A: f32[N, N] @ DRAM, B: f32[N, N] @ DRAM, C: f32[N, N] @ DRAM):
    for i in seq(0, N):
        for j in seq(0, N):
            for k in seq(0, i):
                C[i, j] += A[i, k] * B[k, j]


@proc
def out_of_bounds(
    M: size, K: size, d: index, A: f32[M, K] @ DRAM, x: f32[K] @ DRAM, y: f32[M] @ DRAM
):
    assert d == 0
    for i in seq(0, M):
        for k in seq(0, K + d):
            y[i] += A[i, k] * x[k]


def _floats(shape: tuple[int, ...], dt: Any, rng: np.random.Generator) -> np.ndarray:
    """Random floats of ``dt``, with infinities, NaNs with payloads, subnormals, huge values."""
    x = (rng.standard_normal(shape) * rng.choice([1e-3, 1.0, 1e18], shape)).astype(dt)
    flat = x.reshape(-1)
    bits = np.uint32 if dt == np.float32 else np.uint64
    special = [np.inf, -np.inf, 0.0, -0.0, np.finfo(dt).smallest_subnormal, np.finfo(dt).max]
    for v in special:
        flat[rng.integers(0, flat.size)] = v
    quiet = {np.float32: 0x7FC00000, np.float64: 0x7FF8000000000000}[dt]
    for payload in (1, 5):
        nan = np.array([quiet | payload], bits).view(dt)[0]
        flat[rng.integers(0, flat.size)] = nan
    flat[rng.integers(0, flat.size)] = -np.array([quiet | 3], bits).view(dt)[0]
    return x


def _ints(shape: tuple[int, ...], dt: Any, rng: np.random.Generator) -> np.ndarray:
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(f"u{a.itemsize}")


def _both(p: Any, sizes: list[int], arrays: list[np.ndarray]) -> None:
    """The fast run (numpy) and the general binding (views: the loops) give the same bits."""
    fast = [a.copy() for a in arrays]
    loops = [a.copy() for a in arrays]
    p.interpret(*sizes, *fast)
    p.interpret(*sizes, *(a[...] for a in loops))
    for f, g in zip(fast, loops, strict=True):
        assert np.array_equal(_bits(f), _bits(g))


def _spy(p: Any) -> list[bool]:
    """What the run's numpy nests return, call by call (True: numpy computed the nest)."""
    g = compiled(p.ir()).run.__globals__
    (name,) = [k for k in g if k.startswith("_dot")]
    calls: list[bool] = []
    inner = g[name]

    def spy(*args: Any) -> bool:
        calls.append(inner(*args))
        return calls[-1]

    g[name] = spy
    return calls


MATMULS = [
    (mm_f32, np.float32, np.float32, lambda M, N, K: [(M, K), (K, N), (M, N)]),
    (mm_f64_init, np.float64, np.float64, lambda M, N, K: [(M, K), (K, N), (M, N)]),
    (mm_transposed, np.float32, np.float32, lambda M, N, K: [(K, M), (N, K), (M, N)]),
    (mm_offset, np.float32, np.float32, lambda M, N, K: [(M, K), (K, N), (M, N)]),
    (broadcast_f32, np.float32, np.float32, lambda M, N, K: [(M, K), (K,), (M, N)]),
    (mm_i8, np.int8, np.int32, lambda M, N, K: [(M, K), (K, N), (M, N)]),
    (mm_i8_wrap, np.int8, np.int8, lambda M, N, K: [(M, K), (K, N), (M, N)]),
    (mm_u8, np.uint8, np.uint16, lambda M, N, K: [(M, K), (K, N), (M, N)]),
    (mm_i32, np.int32, np.int32, lambda M, N, K: [(M, K), (K, N), (M, N)]),
]


@proc
def mm_then_read(
    M: size, N: size, K: size, A: f32[M, K] @ DRAM, B: f32[K, N] @ DRAM, C: f32[M, N] @ DRAM
):
    for i in seq(0, M):
        for j in seq(0, N):
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[k, j]
    C[0, 0] = B[0, 0]


@proc
def mm_twice(
    M: size, N: size, K: size, A: f32[M, K] @ DRAM, B: f32[K, N] @ DRAM, C: f32[M, N] @ DRAM
):
    for _r in seq(0, 2):
        for i in seq(0, M):
            for j in seq(0, N):
                for k in seq(0, K):
                    C[i, j] += A[i, k] * B[k, j]


def test_lists_of_arrays_only_nests_read_are_made_where_the_loops_run() -> None:
    # A and B are read only by the nest: their lists are made only where its loops run (a
    # NaN result, a small nest, the checked copy); B read after the nest too: made first
    assert "A_3_d = None" in compiled(mm_f32.ir()).run_source
    source = compiled(mm_then_read.ir()).run_source
    assert "A_3_d = None" in source and "B_4_d = None" not in source
    rng = np.random.default_rng(4)
    for p in (mm_then_read, mm_twice, mm_f32):
        for M, N, K in [(5, 6, 7), (2, 2, 2)]:
            for keep in ("nan", "finite"):
                arrays = [_floats(s, np.float32, rng) for s in ((M, K), (K, N), (M, N))]
                _both(p, [M, N, K], [_finite(x, keep) if keep != "nan" else x for x in arrays])


def _finite(x: np.ndarray, keep: str) -> np.ndarray:
    """``x`` with its NaNs (``keep == "inf"``) or all its non-finite values replaced by 1."""
    if x.dtype.kind == "f":
        x[np.isnan(x) if keep == "inf" else ~np.isfinite(x)] = 1.0
    return x


@pytest.mark.parametrize("case", MATMULS, ids=lambda c: c[0].name())
@pytest.mark.parametrize("sizes", [(5, 6, 7), (1, 9, 70), (3, 1, 40), (2, 2, 1), (8, 8, 3)])
def test_numpy_nest_agrees_with_the_loops_bit_for_bit(case: Any, sizes: tuple[int, ...]) -> None:
    p, src, dst, shapes = case
    assert "_dot" in compiled(p.ir()).run_source  # the nest goes to numpy when big enough
    rng = np.random.default_rng(sum(sizes))
    make = _floats if np.dtype(src).kind == "f" else _ints
    a_shape, b_shape, c_shape = shapes(*sizes)
    calls = _spy(p)
    for keep in ("nan", "inf", "finite"):  # NaN: the loops run; else numpy, unless inf - inf
        C = _floats(c_shape, dst, rng) if np.dtype(dst).kind == "f" else _ints(c_shape, dst, rng)
        arrays = [make(a_shape, src, rng), make(b_shape, src, rng), C]
        _both(p, list(sizes), [_finite(x, keep) if keep != "nan" else x for x in arrays])
    M, N, K = sizes
    work = max(M - 1, 0) * max(N - 2, 0) * max(K - 2, 0) if p is mm_offset else M * N * K
    assert (calls[-1:] == [True]) == (work >= dn.MIN_WORK)  # finite values: numpy


@pytest.mark.parametrize("case", MATMULS, ids=lambda c: c[0].name())
def test_products_in_chunks_of_k_agree(case: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # a big nest's products are held a chunk of k at a time (dn.CHUNK products): the same
    # bits as in one go, and as the loops
    p, src, dst, shapes = case
    rng = np.random.default_rng(8)
    make = _floats if np.dtype(src).kind == "f" else _ints
    M, N, K = 4, 5, 23
    a_shape, b_shape, c_shape = shapes(M, N, K)
    arrays = [_finite(make(s, t, rng), "finite") for s, t in ((a_shape, src), (b_shape, src))]
    C = _floats(c_shape, dst, rng) if np.dtype(dst).kind == "f" else _ints(c_shape, dst, rng)
    arrays.append(_finite(C, "finite"))
    whole = [x.copy() for x in arrays]
    p.interpret(M, N, K, *whole)
    calls = _spy(p)
    monkeypatch.setattr(dn, "CHUNK", 3 * M * N)  # chunks of 3, then 2 at the end
    chunked = [x.copy() for x in arrays]
    p.interpret(M, N, K, *chunked)
    assert calls == [True]
    for w, c in zip(whole, chunked, strict=True):
        assert np.array_equal(_bits(w), _bits(c))
    _both(p, [M, N, K], arrays)


def test_gemv_and_small_nests() -> None:
    rng = np.random.default_rng(1)
    for M, N in [(4, 9), (8, 8), (30, 3), (1, 1)]:  # below and above dn.MIN_WORK
        _both(
            gemv_f32,
            [M, N],
            [
                _floats((M, N), np.float32, rng),
                _floats((N,), np.float32, rng),
                _floats((M,), np.float32, rng),
            ],
        )
    assert "_dot" in compiled(gemv_f32.ir()).run_source


def test_numpy_nest_values_match_a_sequential_reference() -> None:
    # not only the same as the loops: the per-operation float32 semantics, written out (no
    # NaN among the inputs: numpy computes the nest, and NaN comes only from inf - inf and
    # 0 * inf, the default NaN everywhere)
    rng = np.random.default_rng(2)
    A, B, C = (_floats(s, np.float32, rng) for s in ((6, 11), (11, 5), (6, 5)))
    for x in (A, B, C):
        x[~np.isfinite(x)] = 1.0
    A[:, 0] = 2.0
    B[0, 0] = -np.inf  # column 0 of the results is -inf
    A[3, :] = 1e30  # row 3 overflows to inf but for column 0 (inf - inf: NaN, no numpy)
    A[3, 0] = B[1:, 0] = 1.0
    B[1:, 1:] = abs(B[1:, 1:])  # (row 3's products all +inf: no inf - inf)
    ref = C.copy()
    with np.errstate(all="ignore"):
        for i in range(6):
            for j in range(5):
                for k in range(11):
                    ref[i, j] = np.float32(ref[i, j] + np.float32(A[i, k] * B[k, j]))
    calls = _spy(mm_f32)
    mm_f32.interpret(6, 5, 11, A, B, C)
    assert np.array_equal(_bits(C), _bits(ref))
    A[1, 1] = np.nan  # a NaN among the results: the loops compute the nest
    mm_f32.interpret(6, 5, 11, A, B, C)
    assert calls == [True, False]


def test_nests_that_are_not_boxes_or_not_proved_keep_their_loops() -> None:
    assert "_dot" not in compiled(triangle.ir()).run_source  # k's range depends on i
    rng = np.random.default_rng(3)
    _both(triangle, [9], [_floats((9, 9), np.float32, rng) for _ in range(3)])
    # an access past the end: the checked copy runs, and fails at that access
    A, x, y = np.ones((8, 10), np.float32), np.ones(10, np.float32), np.zeros(8, np.float32)
    without_assert = out_of_bounds.ir().replace(preds=())
    with pytest.raises(InterpreterError, match=r"out-of-bounds read A\[i, k\]: index \(0, 10\)"):
        interpret(without_assert, 8, 10, 1, A, x, y)
    assert y[0] == 10.0  # the loop's writes before the failing access are kept


def test_a_node_shared_with_a_statement_outside_the_nest_keeps_its_list() -> None:
    # the IR may share a node between places: a second nest whose body assigns the very
    # Read object of the first nest's A reads A outside a dot-product nest, so A's list is
    # made on entry (the scan is by occurrence, not by node identity)
    pd = mm_f32.ir()
    nest = pd.body[0]
    j_loop = nest.body[0]
    k_loop = j_loop.body[0]
    red = k_loop.body[0]
    shared = Assign(sym=red.sym, idx=red.idx, rhs=red.rhs.lhs, srcinfo=red.srcinfo)
    second = replace(nest, body=(replace(j_loop, body=(replace(k_loop, body=(shared,)),)),))
    both = pd.replace(body=(nest, second), name="mm_shared")
    source = compiled(both).run_source
    assert "A_3_d = None" not in source and "B_4_d = None" in source
    rng = np.random.default_rng(6)
    A, B, C = (_finite(_floats(s, np.float32, rng), "finite") for s in ((5, 7), (7, 6), (5, 6)))
    interpret(both, 5, 6, 7, A, B, C)
    assert np.array_equal(C, np.broadcast_to(A[:, -1:], (5, 6)))  # the last k's A[i, k]
