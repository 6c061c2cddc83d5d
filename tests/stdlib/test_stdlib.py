"""cursched.stdlib: each schedule's output (golden), its cursors (they point into the new
proc; old ones forward or are tombstones), its errors, and a differential check."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import DRAM, Proc, proc
from cursched.cursors import CallCursor, ForCursor
from cursched.cursors.kinds import Tombstone
from cursched.platforms.x86 import (
    AVX2,
    mm256_add_ps,
    mm256_loadu_ps,
    mm256_max_ps,
    mm256_mul_ps,
    mm256_reduce_add_ps,
    mm256_storeu_ps,
)
from cursched.primitives.loops.loop_shapes import UnrollNotConstantError
from cursched.primitives.loops.loop_split import SplitNotPerfectError
from cursched.stdlib import (
    TileNestError,
    TileSizesError,
    VectorizeAccessError,
    VectorizeBodyError,
    VectorizeNoInstrError,
    VectorizeWidthError,
    pack,
    replace_all,
    tile,
    unroll_all,
    vectorize,
)
from cursched.testing import assert_equivalent


@proc
def matmul(
    M: size, N: size, K: size, A: f32[M, K] @ DRAM, B: f32[K, N] @ DRAM, C: f32[M, N] @ DRAM
):
    assert M % 4 == 0
    assert N % 8 == 0
    for i in seq(0, M):
        for j in seq(0, N):
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[k, j]


def _points_into(p: Proc, cursors: object) -> None:
    for c in cursors:  # type: ignore[attr-defined]
        for one in c if isinstance(c, tuple) else (c,):
            if one:
                assert one.proc() is p, one


def test_tile(golden) -> None:  # type: ignore[no-untyped-def]
    i = matmul.find_loop("i")
    p, t = tile(matmul, ["i", "j"], [4, 8])
    golden.check(p)
    _points_into(p, t)
    assert [c.name() for c in t.outer] == ["io", "jo"]
    assert [c.name() for c in t.inner] == ["ii", "ji"]
    assert p.forward(i) == t.outer[0]  # the loop forwards to its outer loop
    assert_equivalent(matmul, p, trials=2, sizes={"M": 8, "N": 16, "K": 3})


def test_tile_three_deep_with_names() -> None:
    p, t = tile(matmul, ["i", "j"], [2, 4], [("a", "b"), ("c", "d")])
    assert [c.name() for c in t.outer] == ["a", "c"]
    assert t.outer[0].body()[0] == t.outer[1] and t.outer[1].body()[0] == t.inner[0]
    assert [c.name() for c in t.inner] == ["b", "d"]
    assert_equivalent(matmul, p, trials=1, sizes={"M": 4, "N": 8, "K": 6})


def test_tile_preconditions() -> None:
    with pytest.raises(TileSizesError):
        tile(matmul, ["i", "j"], [4])
    with pytest.raises(TileSizesError):
        tile(matmul, ["i", "j"], [4, 1])
    with pytest.raises(TileNestError):
        tile(matmul, ["i", "k"], [4, 2])
    with pytest.raises(SplitNotPerfectError):  # 3 does not divide M (only M % 4 == 0 is known)
        tile(matmul, ["i", "j"], [3, 8])


@proc
def add8(x: f32[16] @ DRAM, y: f32[16] @ DRAM, z: f32[16] @ DRAM):
    a: f32[2, 8] @ AVX2
    b: f32[2, 8] @ AVX2
    for r in seq(0, 2):
        for i in seq(0, 8):
            a[r, i] = x[8 * r + i]
        for i in seq(0, 8):
            b[r, i] = y[8 * r + i]
        for i in seq(0, 8):
            a[r, i] = a[r, i] + b[r, i]
        for i in seq(0, 8):
            z[8 * r + i] = a[r, i]
    for i in seq(0, 16):
        z[i] += 1.0


def test_replace_all(golden) -> None:  # type: ignore[no-untyped-def]
    old = add8.find_loop("i #0")
    p, r = replace_all(add8, [mm256_loadu_ps, mm256_add_ps, mm256_storeu_ps])
    golden.check(p)
    _points_into(p, r)
    assert len(r.calls) == 4 and all(isinstance(c, CallCursor) for c in r.calls)
    assert [c.node().proc.name for c in r.calls] == [
        "mm256_loadu_ps",
        "mm256_loadu_ps",
        "mm256_add_ps",
        "mm256_storeu_ps",
    ]
    assert isinstance(p.forward(old), Tombstone)  # replaced: dead, with its story
    assert "for i in seq(0, 16)" in str(p)  # the non-matching loop is left alone
    assert_equivalent(add8, p, trials=3)


def test_unroll_all(golden) -> None:  # type: ignore[no-untyped-def]
    r = add8.find_loop("r")
    p, u = unroll_all(add8, r)
    golden.check(p)
    _points_into(p, u)
    assert "for i in seq(0, 16)" in str(p)  # the loop not asked for stays
    assert isinstance(p.forward(r), Tombstone)
    assert_equivalent(add8, p, trials=2)


def test_unroll_all_nested_and_its_precondition() -> None:
    _, u = unroll_all(add8, ["r"])
    assert not any(isinstance(s, ForCursor) for s in u.stmts)  # nested loops went too
    assert len(u.stmts) == 2 * 4 * 8
    with pytest.raises(UnrollNotConstantError):
        unroll_all(matmul, "i")


@proc
def colsum(M: size, N: size, A: f32[M, N] @ DRAM, y: f32[N] @ DRAM):
    assert N % 4 == 0
    for jo in seq(0, N / 4):
        for i in seq(0, M):
            for ji in seq(0, 4):
                y[4 * jo + ji] += A[i, 4 * jo + ji]


def test_pack(golden) -> None:  # type: ignore[no-untyped-def]
    loop = colsum.find_loop("i")
    p, pk = pack(colsum, loop, "A[0:M, 4 * jo:4 * jo + 4]", "Ap", lift=1)
    golden.check(p)
    _points_into(p, pk)
    assert pk.alloc.name() == "Ap" and "Ap: f32[M, 4] @ DRAM" in str(p)
    assert p.forward(loop) == pk.block[0]
    assert p.body()[0] == pk.alloc  # allocated once, above the jo loop
    assert_equivalent(colsum, p, trials=2, sizes={"M": 5, "N": 8})


def test_pack_blocked_layout() -> None:
    p, _ = pack(colsum, "for i in _: _", "A[0:M, 4 * jo:4 * jo + 4]", "Ap", [(1, 2)], (1, 0, 2))
    assert "Ap: f32[2, M, 2] @ DRAM" in str(p)
    assert_equivalent(colsum, p, trials=2, sizes={"M": 3, "N": 8})


@proc
def vmax(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, z: f32[n] @ DRAM):
    for i in seq(0, n):
        z[i] = fmaxf(x[i], y[i])


VMAX = [mm256_loadu_ps, mm256_max_ps, mm256_storeu_ps]


def test_vectorize(golden) -> None:  # type: ignore[no-untyped-def]
    loop = vmax.find_loop("i")
    p, v = vectorize(vmax, loop, 8, AVX2, VMAX)
    golden.check(p)
    _points_into(p, v)
    assert p.forward(loop) == v.outer and v.tail.name() == "ii"
    assert [c.node().proc.name for c in v.calls] == [
        "mm256_loadu_ps",
        "mm256_loadu_ps",
        "mm256_max_ps",
        "mm256_storeu_ps",
    ]
    assert sorted(a.name() for a in v.allocs) == ["x_v", "y_v", "z_v"]
    for n in (8, 21):
        assert_equivalent(vmax, p, trials=2, sizes={"n": n})
    x = np.array([np.nan, 1, -0.0, 3, np.inf, 5, 6, 7, 8, np.nan, 1], np.float32)
    y = np.array([1, np.nan, 0.0, -3, 4, np.nan, 6, 7, 8, 2, np.nan], np.float32)
    z = np.zeros(11, np.float32)
    p.compile()(11, x, y, z)
    assert np.array_equal(z, np.fmax(x, y))


@proc
def vmax_twice(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM, z: f32[n] @ DRAM):
    for i in seq(0, n):
        z[i] = fmaxf(x[i], y[i])
    for j in seq(0, n):
        z[j] = fmaxf(z[j], y[j])


def test_vectorize_two_loops_over_the_same_buffers() -> None:
    # the second loop's registers get names of their own (the first one's are taken)
    p, a = vectorize(vmax_twice, "i", 8, AVX2, VMAX)
    p, b = vectorize(p, "j", 8, AVX2, VMAX)
    assert sorted(x.name() for x in a.allocs) == ["x_v", "y_v", "z_v"]
    assert sorted(x.name() for x in b.allocs) == ["y_v_", "z_v_"]
    assert_equivalent(vmax_twice, p, trials=2, sizes={"n": 21})


@proc
def vsum(n: size, x: f32[n] @ DRAM, s: f32 @ DRAM):
    assert n % 8 == 0
    for i in seq(0, n):
        s += x[i]


def test_vectorize_a_reduction_without_tail() -> None:
    p, v = vectorize(vsum, "i", 8, AVX2, [mm256_loadu_ps, mm256_reduce_add_ps])
    assert not v.tail  # 8 divides n: no tail loop
    assert "mm256_reduce_add_ps(s, x_v[0:8])" in str(p)
    # lane order is the scalar order: bitwise equal
    x = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    s1, s2 = np.array(1.5, np.float32), np.array(1.5, np.float32)
    vsum.compile()(64, x, s1)
    p.compile()(64, x, s2)
    assert s1.tobytes() == s2.tobytes()


@proc
def strided(n: size, x: f32[n, 2] @ DRAM, z: f32[n] @ DRAM):
    for i in seq(0, n):
        z[i] = x[i, 0] + x[i, 1]


@proc
def scaled(n: size, x: f32[n] @ DRAM, z: f32[n] @ DRAM):
    for i in seq(0, n):
        z[i] = x[i] * 2.0


@proc
def twice(n: size, x: f32[2 * n] @ DRAM, z: f32[n] @ DRAM):
    for i in seq(0, n):
        z[i] = x[2 * i]


@proc
def has_if(n: size, x: f32[n] @ DRAM):
    for i in seq(0, n):
        if i < 3:
            x[i] = 0.0


def test_vectorize_preconditions() -> None:
    with pytest.raises(VectorizeWidthError):
        vectorize(vmax, "i", 4, AVX2, VMAX)
    with pytest.raises(VectorizeBodyError):
        vectorize(has_if, "i", 8, AVX2, VMAX)
    with pytest.raises(VectorizeAccessError):
        vectorize(twice, "i", 8, AVX2, VMAX)
    with pytest.raises(VectorizeAccessError):  # x[i, 0] and x[i, 1]: two windows of x
        vectorize(strided, "i", 8, AVX2, [mm256_loadu_ps, mm256_add_ps, mm256_storeu_ps])
    with pytest.raises(VectorizeNoInstrError):  # no instruction multiplies by a constant
        vectorize(scaled, "i", 8, AVX2, [mm256_loadu_ps, mm256_mul_ps, mm256_storeu_ps])
