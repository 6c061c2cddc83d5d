"""expand_dim, resize_dim, rearrange_dim, divide_dim, mult_dim, unroll_buffer: golden output,
one negative test per precondition, forwarding (alloc -> alloc, rewritten accesses die),
differential equivalence (interpreter; C for a sample)."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import (
    DRAM,
    divide_dim,
    expand_dim,
    lift_alloc,
    mult_dim,
    proc,
    rearrange_dim,
    resize_dim,
    unroll_buffer,
)
from cursched.cursors import AllocCursor
from cursched.errors import StaleCursorError
from cursched.primitives.buffers.dims import (
    DimIndexError,
    DimNotAllocError,
    DimUseError,
    DivideDimNotDivisibleError,
    DivideDimQuotientError,
    ExpandDimBoundsError,
    ExpandDimIndexExprError,
    ExpandDimSizeError,
    MultDimNotConstError,
    RearrangeDimPermError,
    ResizeDimBoundsError,
    ResizeDimOffsetError,
    ResizeDimSizeError,
    UnrollBufferIndexError,
    UnrollBufferNotConstError,
)
from cursched.testing import assert_equivalent


@proc
def rows(n: size, x: f32[n, 16] @ DRAM, y: f32[n, 16] @ DRAM):
    for i in seq(0, n):
        t: f32[16] @ DRAM
        for j in seq(0, 16):
            t[j] = x[i, j]
        for j in seq(0, 16):
            y[i, j] = t[j] * 2.0


@proc
def scal(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        s: f32 @ DRAM
        s = x[i]
        y[i] = s + s


@proc
def two_is(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    s: f32 @ DRAM
    for i in seq(0, n):
        s = x[i]
    for i in seq(0, n):
        y[i] = s


@proc
def off(x: f32[8] @ DRAM):
    t: f32[10] @ DRAM
    for j in seq(0, 4):
        t[j + 2] = x[j]
    for j in seq(0, 4):
        x[j + 4] = t[j + 2]


@proc
def pair(x: f32[2] @ DRAM, y: f32[2] @ DRAM):
    t: f32[2, 3] @ DRAM
    for k in seq(0, 3):
        t[0, k] = x[0]
        t[1, k] = x[1]
    y[0] = t[0, 2]
    y[1] = t[1, 1]


@proc
def addv(a: [f32][4] @ DRAM, b: [f32][4] @ DRAM):
    for k in seq(0, 4):
        a[k] += b[k]


@proc
def windowed(n: size, x: f32[n, 4] @ DRAM):
    t: f32[n, 4] @ DRAM
    for i in seq(0, n):
        for k in seq(0, 4):
            t[i, k] = 1.0
    for i in seq(0, n):
        addv(x[i, 0:4], t[i, 0:4])


@proc
def ones(a: [f32][2, 2] @ DRAM):  # noqa: RUF016
    for r in seq(0, 2):
        for s in seq(0, 2):
            a[r, s] = 1.0


@proc
def win2(x: f32[2, 2] @ DRAM):
    t: f32[2, 2] @ DRAM
    ones(t[0:2, 0:2])
    for r in seq(0, 2):
        for s in seq(0, 2):
            x[r, s] = t[r, s]


@proc
def strided(n: size, x: f32[n] @ DRAM):
    t: f32[n] @ DRAM
    for i in seq(0, n):
        t[i] = 1.0
        if stride(t, 0) == 1:
            x[i] = t[i]


# ------------------------------------------------------------------------------ expand_dim


def test_expand_dim_then_lift(golden) -> None:  # type: ignore[no-untyped-def]
    t = rows.find_alloc_or_arg("t")
    old_read = rows.find("t[_] * 2.0").lhs()
    p, d = expand_dim(rows, t, "n", "i")
    assert isinstance(d.alloc, AllocCursor) and p.forward(t) == d.alloc
    assert len(d.accesses) == 2
    assert not p.forward(old_read)  # the rewritten access died
    p2, c = lift_alloc(p, d.alloc)
    golden.check(p2)
    assert p2.forward(t) == c.alloc
    assert_equivalent(rows, p2, trials=3)


def test_expand_dim_scalar() -> None:
    p, c = expand_dim(scal, "s", "n", "i")
    assert "s: f32[n] @ DRAM" in str(p) and "y[i] = s[i] + s[i]" in str(p)
    assert len(c.accesses) == 3
    p, _ = lift_alloc(p, c.alloc)
    assert_equivalent(scal, p, trials=3)
    f = p.compile()
    x = np.arange(5, dtype=np.float32)
    y = np.zeros(5, dtype=np.float32)
    f(5, x, y)
    np.testing.assert_array_equal(y, 2 * x)


def test_expand_dim_index_is_resolved_at_the_allocation() -> None:
    # resolved at each access, `i` would name two different loops here and s[i] would no
    # longer carry the last value of the first loop into the second
    with pytest.raises(ExpandDimIndexExprError):
        expand_dim(two_is, "s", "n", "i")
    p, _ = expand_dim(two_is, "s", "n", "n - 1")
    assert_equivalent(two_is, p, trials=3)


def test_expand_dim_window_gets_a_point() -> None:
    p, _ = expand_dim(windowed, "t", 3, 1)
    assert "addv(x[i, 0:4], t[1, i, 0:4])" in str(p)
    assert_equivalent(windowed, p, trials=2)


def test_expand_dim_argument() -> None:
    with pytest.raises(DimNotAllocError):
        expand_dim(rows, "x", 2, 0)


def test_expand_dim_stride_use() -> None:
    with pytest.raises(DimUseError, match="stride"):
        expand_dim(strided, "t", 2, 0)


@pytest.mark.parametrize("size", [0, "n - 1", "i", "n * n"])
def test_expand_dim_bad_size(size: object) -> None:
    with pytest.raises(ExpandDimSizeError):
        expand_dim(scal, "s", size, 0)


def test_expand_dim_index_unresolved() -> None:
    with pytest.raises(ExpandDimIndexExprError):
        expand_dim(scal, "s", "n", "k")


def test_expand_dim_index_out_of_range() -> None:
    with pytest.raises(ExpandDimBoundsError) as e:
        expand_dim(scal, "s", "n", "i + 1")
    assert "counterexample" in str(e.value)


# ------------------------------------------------------------------------------ resize_dim


def test_resize_dim(golden) -> None:  # type: ignore[no-untyped-def]
    p, c = resize_dim(off, "t", 0, 4, 2)
    golden.check(p)
    assert len(c.accesses) == 2
    assert_equivalent(off, p, trials=2)


def test_resize_dim_bad_dim() -> None:
    with pytest.raises(DimIndexError):
        resize_dim(off, "t", 1, 4, 2)


def test_resize_dim_bad_size() -> None:
    with pytest.raises(ResizeDimSizeError):
        resize_dim(off, "t", 0, "j", 2)


def test_resize_dim_bad_offset() -> None:
    with pytest.raises(ResizeDimOffsetError):
        resize_dim(off, "t", 0, 4, "q")


def test_resize_dim_access_outside() -> None:
    with pytest.raises(ResizeDimBoundsError):
        resize_dim(off, "t", 0, 3, 2)


# --------------------------------------------------------------------------- rearrange_dim


def test_rearrange_dim(golden) -> None:  # type: ignore[no-untyped-def]
    p, c = rearrange_dim(pair, "t", (1, 0))
    golden.check(p)
    assert c.alloc.shape()[0].value == 3  # type: ignore[attr-defined]
    assert_equivalent(pair, p, trials=2)


@pytest.mark.parametrize("perm", [(0, 0), (1,), (0, 1, 2), "10", (True, 0)])
def test_rearrange_dim_bad_permutation(perm: object) -> None:
    with pytest.raises(RearrangeDimPermError):
        rearrange_dim(pair, "t", perm)


def test_rearrange_dim_would_transpose_a_window() -> None:
    with pytest.raises(DimUseError, match="transposed"):
        rearrange_dim(win2, "t", (1, 0))
    p, _ = expand_dim(windowed, "t", 2, 0)
    p2, _ = rearrange_dim(p, "t", (1, 0, 2))  # moving a point dimension is fine
    assert "t[i, 0, 0:4]" in str(p2)
    assert_equivalent(windowed, p2, trials=2)


# ------------------------------------------------------------------------------ divide_dim


def test_divide_then_mult_dim(golden) -> None:  # type: ignore[no-untyped-def]
    p, c = divide_dim(rows, "t", 0, 4)
    assert "t[j / 4, j % 4] = x[i, j]" in str(p)
    assert_equivalent(rows, p, trials=2)
    p2, c2 = mult_dim(p, c.alloc, 0, 1)
    golden.check(p2)
    assert str(p2) == str(rows)  # k * (j / k) + j % k recombines to j
    assert p2.forward(rows.find_alloc_or_arg("t")) == c2.alloc


@pytest.mark.parametrize("q", [1, 0, 2.0, True])
def test_divide_dim_bad_quotient(q: object) -> None:
    with pytest.raises(DivideDimQuotientError):
        divide_dim(rows, "t", 0, q)


def test_divide_dim_not_divisible() -> None:
    with pytest.raises(DivideDimNotDivisibleError):
        divide_dim(rows, "t", 0, 5)


def test_divide_dim_window_over_dim() -> None:
    with pytest.raises(DimUseError, match="window"):
        divide_dim(windowed, "t", 1, 2)


# -------------------------------------------------------------------------------- mult_dim


def test_mult_dim_with_window(golden) -> None:  # type: ignore[no-untyped-def]
    p, c = mult_dim(windowed, "t", 0, 1)
    golden.check(p)
    assert len(c.accesses) == 2
    assert "t[4 * i:4 * i + 4]" in str(p)
    assert_equivalent(windowed, p, trials=2)


def test_mult_dim_same_dims() -> None:
    with pytest.raises(DimIndexError):
        mult_dim(pair, "t", 0, 0)


def test_mult_dim_lower_not_constant() -> None:
    with pytest.raises(MultDimNotConstError):
        mult_dim(windowed, "t", 1, 0)


# --------------------------------------------------------------------------- unroll_buffer


def test_unroll_buffer(golden) -> None:  # type: ignore[no-untyped-def]
    t = pair.find_alloc_or_arg("t")
    p, c = unroll_buffer(pair, t, 0)
    golden.check(p)
    assert [a.name() for a in c.allocs] == ["t_0", "t_1"]
    assert not p.forward(t)
    with pytest.raises(StaleCursorError, match=r"allocs\[k\]"):
        unroll_buffer(p, t, 0)
    assert_equivalent(pair, p, trials=2)


def test_unroll_buffer_not_constant() -> None:
    with pytest.raises(UnrollBufferNotConstError):
        unroll_buffer(windowed, "t", 0)


def test_unroll_buffer_variable_index() -> None:
    with pytest.raises(UnrollBufferIndexError):
        unroll_buffer(pair, "t", 1)
