"""The interpreter's generated code: aliasing, versioned loops, scalar replacement, the fast
argument binding, and the closure interpreter it replaced as a reference."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import DRAM, ArgumentError, InterpreterError, proc
from cursched.interp import compiled, interpret
from cursched.ir.nodes import ProcDef


@proc
def acc(n: size, dst: [f32][n] @ DRAM, src: [f32][n] @ DRAM):
    for q in seq(0, n):
        dst[q] += src[q]


@proc
def acc_call(n: size, t: f32[n + 1] @ DRAM):
    acc(n, t[1 : n + 1], t[0:n])


def test_overlapping_windows_of_one_buffer_see_each_others_writes() -> None:
    # issue 11, finding 1: the interpreter's meaning of a call on overlapping windows
    t = np.array([0, 1, 1, 1, 1], np.float32)
    acc_call.interpret(4, t)
    assert list(t) == [0, 1, 2, 3, 4]


def test_overlapping_view_arguments_share_one_list() -> None:
    # issue 11, finding 2: w = b[1:9], v = b[0:8] passed as two arguments
    b = np.array([0] + [1] * 8, np.float32)
    acc.interpret(8, b[1:9], b[0:8])
    assert list(b) == [0, 1, 2, 3, 4, 5, 6, 7, 8]


def test_same_array_twice_is_one_buffer() -> None:
    b = np.ones(8, np.float32)
    acc.interpret(8, b, b)
    assert list(b) == [2.0] * 8


@proc
def dot(n: size, a: f32[n] @ DRAM, b: f32[n] @ DRAM, out: f32 @ DRAM):
    out = 0.0
    for i in seq(0, n):
        out += a[i] * b[i]


def test_scalar_replaced_accumulator_with_aliasing_lists() -> None:
    # the accumulator is held in a local through the loop only when no other list of the
    # loop may be its list: here ``out`` is an element of ``a``, so the checked loop runs
    a = np.arange(1, 10, dtype=np.float32)
    b = np.ones(9, np.float32)
    ref = a.copy()
    ref[8] = 0  # out = 0.0 writes a[8], which the loop then reads as a[8]
    for i in range(9):
        ref[8] = np.float32(ref[8] + np.float32(ref[i] * np.float32(1)))
    dot.interpret(9, a, b, a[8:9])
    assert np.array_equal(a, ref)
    # and without aliasing, the accumulator is a local (scalar replacement)
    assert "finally:" in compiled(dot.ir()).source


@proc
def guarded(n: size, d: index, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    assert d == 0
    for i in seq(0, n + d):
        if i < n:
            y[i] = x[i] * 2.0


@proc
def overrun(n: size, d: index, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    assert d == 0
    for i in seq(0, n + d):
        y[i] = x[i]


def unchecked(p: object) -> ProcDef:
    """``p``'s IR without its asserts (so that it can run out of bounds)."""
    ir = p.ir()  # type: ignore[attr-defined]
    assert isinstance(ir, ProcDef)
    return ir.replace(preds=())


def test_versioned_loop_runs_checked_copy_when_the_range_overruns() -> None:
    x = np.arange(10, dtype=np.float32)
    y = np.zeros(10, np.float32)
    interpret(unchecked(guarded), 10, 4, x, y)  # accesses past n are guarded: no error
    assert list(y) == [2.0 * i for i in range(10)]
    y = np.zeros(10, np.float32)
    with pytest.raises(InterpreterError, match=r"out-of-bounds write y\[i\]: index 10"):
        interpret(unchecked(overrun), 10, 1, x, y)
    assert list(y) == list(x)  # the writes made before the error reach the array


def test_innermost_loops_are_versioned() -> None:
    body = compiled(overrun.ir()).source.split("def _entry")[0]
    fast, checked = body.split("\n    else:\n")
    assert "for i_" in fast and "_oob" not in fast  # the unchecked copy
    assert "_oob" in checked  # the checked copy keeps the checks


@proc
def strided(n: size, W: [f32][n, n] @ DRAM, out: f32[n] @ DRAM):  # noqa: RUF016
    for i in seq(0, n):
        for j in seq(0, n):
            out[i] += W[i, j]


@pytest.mark.parametrize("layout", ["contiguous", "view", "transposed", "broadcast"])
def test_layouts_agree_with_numpy(layout: str) -> None:
    base = np.arange(64, dtype=np.float32).reshape(8, 8)
    W = {
        "contiguous": base,
        "view": base[1:8, 1:8][::1, :],
        "transposed": base.T,
        "broadcast": np.broadcast_to(np.arange(7, dtype=np.float32), (7, 7)),
    }[layout]
    n = W.shape[0]
    out = np.zeros(n, np.float32)
    strided.interpret(n, W, out)
    assert np.array_equal(out, W.sum(axis=1, dtype=np.float32))


def test_fast_and_general_binding_agree() -> None:
    x = np.arange(12, dtype=np.float32)
    y1, y2 = np.zeros(12, np.float32), np.zeros(12, np.float32)
    guarded.interpret(12, 0, x, y1)  # plain ints, owned arrays: the generated binding
    guarded.interpret(np.int64(12), 0, x[:], y2.reshape(12))  # numpy int, views: the general one
    assert np.array_equal(y1, y2)
    cp = compiled(guarded.ir())
    assert cp.run(12, 0, x, np.zeros(12, np.float32))  # ran it
    assert not cp.run(np.int64(12), 0, x, y1)  # left it to the general binding
    with pytest.raises(ArgumentError, match="given twice"):
        interpret(guarded, 12, 0, x, y1, n=12)


@proc
def wraps(n: size, a: i8[n] @ DRAM, out: i32[n] @ DRAM, small: i8[n] @ DRAM):
    for i in seq(0, n):
        out[i] = a[i] * a[i] * a[i] * 1000
        small[i] = a[i] * 100


@proc
def rounds(n: size, a: f32[n] @ DRAM, h: f16[n] @ DRAM, d: f64[n] @ DRAM):
    for i in seq(0, n):
        h[i] = a[i] * a[i] + 1.0
        a[i] = a[i] * 3.0 + a[i] / 7.0
        d[i] = d[i] / 3.0


def test_integer_wrap_and_float_rounding_match_numpy() -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, 64).astype(np.int8)
    out, small = np.zeros(64, np.int32), np.zeros(64, np.int8)
    wraps.interpret(64, a, out, small)
    a32 = a.astype(np.int32)
    with np.errstate(over="ignore"):
        assert np.array_equal(out, a32 * a32 * a32 * np.int32(1000))
        assert np.array_equal(small, a * np.int8(100))
    f = rng.standard_normal(64).astype(np.float32) * 300
    h, d = np.zeros(64, np.float16), rng.standard_normal(64)
    f0, d0 = f.copy(), d.copy()
    rounds.interpret(64, f, h, d)
    with np.errstate(over="ignore"):
        assert np.array_equal(h, f0.astype(np.float16) * f0.astype(np.float16) + np.float16(1))
    assert np.array_equal(f, f0 * np.float32(3) + f0 / np.float32(7))
    assert np.array_equal(d, d0 / 3.0)
