"""The reference interpreter, feature by feature, against numpy formulas."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import DRAM, InterpreterError, instr, proc
from cursched.interp import interpret


def f32(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------------------------- loops


@proc
def sgemm(n: size, m: size, k: size, A: f32[n, k] @ DRAM, B: f32[k, m] @ DRAM, C: f32[n, m] @ DRAM):
    for i in seq(0, n):
        for j in seq(0, m):
            for kk in seq(0, k):
                C[i, j] += A[i, kk] * B[kk, j]


def test_sgemm_64_matches_numpy() -> None:
    A, B = f32(64, 64, seed=1), f32(64, 64, seed=2)
    C = np.zeros((64, 64), np.float32)
    sgemm.interpret(64, 64, 64, A, B, C)
    np.testing.assert_allclose(C, A @ B, rtol=1e-4, atol=1e-4)


def test_arguments_by_name_and_mixed() -> None:
    A, B = f32(3, 5, seed=1), f32(5, 4, seed=2)
    C1 = np.zeros((3, 4), np.float32)
    C2 = np.zeros((3, 4), np.float32)
    interpret(sgemm.ir(), n=3, m=4, k=5, A=A, B=B, C=C1)
    interpret(sgemm, 3, 4, 5, A, C=C2, B=B)
    np.testing.assert_array_equal(C1, C2)
    np.testing.assert_allclose(C1, A @ B, rtol=1e-5, atol=1e-5)


@proc
def ranges(n: size, lo: index, hi: index, y: f32[n] @ DRAM):
    assert lo >= 0 and hi <= n
    for i in seq(lo, hi):
        y[i] += 1.0
    for i in par(lo + 1, hi + 0):
        y[i] += 10.0


@pytest.mark.parametrize(("lo", "hi"), [(0, 8), (2, 5), (5, 2), (3, 3)])
def test_seq_and_par_loop_bounds(lo: int, hi: int) -> None:
    y = np.zeros(8, np.float32)
    ranges.interpret(8, lo, hi, y)
    want = np.zeros(8, np.float32)
    want[lo:hi] += 1
    want[lo + 1 : hi] += 10
    np.testing.assert_array_equal(y, want)


@proc
def floors(n: size, x: f32[n] @ DRAM, y: f32[3] @ DRAM, z: f32[n] @ DRAM):
    for i in seq(0, n):
        y[(i - 4) % 3] += x[i]
    for i in seq(0, n):
        if (i - 4) / 3 == -1:
            z[i] = 1.0
        else:
            z[i] = 0.0


def test_control_division_and_modulo_are_floor() -> None:
    x = f32(10)
    y = np.zeros(3, np.float32)
    z = np.full(10, 7.0, np.float32)
    floors.interpret(10, x, y, z)
    want = np.zeros(3, np.float32)
    for i in range(10):
        want[(i - 4) % 3] += x[i]
    np.testing.assert_allclose(y, want, rtol=1e-6)
    np.testing.assert_array_equal(z, [1.0 if (i - 4) // 3 == -1 else 0.0 for i in range(10)])


@proc
def conds(n: size, flag: bool, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        if i < 2 or (i >= n - 2 and flag):
            y[i] = x[i]
        elif i == 3:
            y[i] = -x[i]
        else:
            pass


@pytest.mark.parametrize("flag", [True, False])
def test_if_else_and_or(flag: bool) -> None:
    x = f32(8)
    y = np.zeros(8, np.float32)
    conds.interpret(8, flag, x, y)
    want = np.zeros(8, np.float32)
    for i in range(8):
        if i < 2 or (i >= 6 and flag):
            want[i] = x[i]
        elif i == 3:
            want[i] = -x[i]
    np.testing.assert_array_equal(y, want)


@proc
def scoped(n: size, x: f32[n] @ DRAM):
    with scope("body"):
        for i in seq(0, n):
            x[i] = x[i] * 2.0


def test_scope_runs_its_body() -> None:
    x = f32(5)
    want = x * 2
    scoped.interpret(5, x)
    np.testing.assert_array_equal(x, want)


# ----------------------------------------------------------------------------- allocations


@proc
def rowsum(n: size, m: size, A: f32[n, m] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        acc: f32
        acc = 0.0
        tmp: f32[m] @ DRAM
        for j in seq(0, m):
            tmp[j] = A[i, j]
        for j in seq(0, m):
            acc += tmp[j]
        y[i] = acc


def test_allocations_scalar_and_tensor() -> None:
    A = f32(4, 6)
    y = np.zeros(4, np.float32)
    rowsum.interpret(4, 6, A, y)
    np.testing.assert_allclose(y, A.sum(axis=1), rtol=1e-5)


@proc
def uninit(y: f32[2] @ DRAM, z: i32[2] @ DRAM):
    t: f32[2]
    u: i32
    y[0] = t[1]
    z[0] = u


def test_allocations_are_filled_with_nan_or_garbage() -> None:
    y = np.zeros(2, np.float32)
    z = np.zeros(2, np.int32)
    uninit.interpret(y, z)
    assert np.isnan(y[0])
    assert z[0] == np.int32(np.uint32(0xDEADBEEF).view(np.int32))


# -------------------------------------------------------------------------------- externs


@proc
def all_externs(n: size, x: f32[n] @ DRAM, p: f32[n] @ DRAM, y: f32[13, n] @ DRAM):
    for i in seq(0, n):
        y[0, i] = select(x[i], 0.0, p[i], x[i])
        y[1, i] = relu(x[i])
        y[2, i] = sin(x[i])
        y[3, i] = sqrt(p[i])
        y[4, i] = exp(x[i])
        y[5, i] = expf(x[i])
        y[6, i] = exp2(x[i])
        y[7, i] = log(p[i])
        y[8, i] = fmax(x[i], p[i])
        y[9, i] = fmaxf(x[i], 0.5)
        y[10, i] = fmin(x[i], p[i])
        y[11, i] = sigmoid(x[i])
        y[12, i] = fmax(-inf, x[i])


def test_every_extern_against_numpy() -> None:
    x = f32(16)
    p = np.abs(f32(16, seed=3)) + np.float32(0.1)
    y = np.zeros((13, 16), np.float32)
    all_externs.interpret(16, x, p, y)
    want = [
        np.where(x < 0, p, x),
        np.maximum(x, 0),
        np.sin(x),
        np.sqrt(p),
        np.exp(x),
        np.exp(x),
        np.exp2(x),
        np.log(p),
        np.fmax(x, p),
        np.fmax(x, np.float32(0.5)),
        np.fmin(x, p),
        1 / (1 + np.exp(-x)),
        x,
    ]
    for row, w in enumerate(want):
        np.testing.assert_allclose(y[row], w, rtol=1e-6, err_msg=f"row {row}")
        assert y.dtype == np.float32


@proc
def running_max(n: size, x: f32[n] @ DRAM, m: f32[1] @ DRAM):
    m[0] = -inf
    for i in seq(0, n):
        m[0] = fmaxf(m[0], x[i])


def test_inf_literal() -> None:
    x = f32(9) - 100
    m = np.zeros(1, np.float32)
    running_max.interpret(9, x, m)
    assert m[0] == x.max()


# -------------------------------------------------------------------------------- windows


@proc
def set_row(n: size, A: f32[n, 8] @ DRAM, r: index):
    assert r >= 0 and r < n
    w = A[r, 0:8]
    for j in seq(0, 8):
        w[j] = 1.0 + w[j]


def test_window_writes_land_in_the_base_array() -> None:
    A = f32(3, 8)
    want = A.copy()
    want[1] += 1
    set_row.interpret(3, A, 1)
    np.testing.assert_array_equal(A, want)


@proc
def strides(n: size, m: size, W: [f32][n, m] @ DRAM, out: i32[2] @ DRAM):  # noqa: RUF016
    # stride is a control value: count it out in loops
    for _i in seq(0, stride(W, 0)):
        out[0] += 1
    for _i in seq(0, stride(W, 1)):
        out[1] += 1


def test_stride_is_in_elements() -> None:
    base = np.zeros((4, 10), np.float32)
    out = np.zeros(2, np.int32)
    strides.interpret(4, 3, base[:, 2:5], out)
    assert list(out) == [10, 1]
    out[:] = 0
    strides.interpret(2, 5, base[::2, ::2], out)
    assert list(out) == [20, 2]


@proc
def scale_window(n: size, x: [f32][n] @ DRAM, s: f32):
    for i in seq(0, n):
        x[i] = x[i] * s


@proc
def scale_columns(n: size, A: f32[n, 6] @ DRAM, s: f32):
    for j in seq(0, 3):
        scale_window(n, A[0:n, 2 * j], s)


def test_call_with_strided_window_writes_through() -> None:
    A = f32(5, 6)
    want = A.copy()
    want[:, 0:6:2] *= np.float32(3)
    scale_columns.interpret(5, A, np.array(3, np.float32))
    np.testing.assert_array_equal(A, want)


# ---------------------------------------------------------------------------------- calls


@proc
def add_to(x: f32, v: f32):
    x += v


@proc
def accumulate(n: size, a: f32[n] @ DRAM, total: f32, cells: f32[n] @ DRAM):
    for i in seq(0, n):
        add_to(total, a[i])
        add_to(cells[i], a[i])


def test_call_passes_data_scalars_by_reference() -> None:
    a = f32(6)
    total = np.zeros((), np.float32)
    cells = np.ones(6, np.float32)
    accumulate.interpret(6, a, total, cells)
    np.testing.assert_allclose(total, a.sum(), rtol=1e-5)
    np.testing.assert_array_equal(cells, np.float32(1) + a)


@proc
def fill4(n: size, x: [f32][n] @ DRAM):
    assert n % 4 == 0
    for i in seq(0, n):
        x[i] = 4.0


@proc
def fill_prefix(n: size, k: size, x: f32[n] @ DRAM):
    assert k <= n and k % 4 == 0
    fill4(k, x[0:k])


def test_callee_asserts_are_checked_at_the_call() -> None:
    x = np.zeros(9, np.float32)
    fill_prefix.interpret(9, 8, x)
    assert list(x) == [4.0] * 8 + [0.0]
    # without the caller's own assert, the callee's is what catches k = 6
    unchecked = fill_prefix.ir().replace(preds=fill_prefix.ir().preds[:0])
    with pytest.raises(InterpreterError, match=r"assert n % 4 == 0 failed at a call to proc fill4"):
        interpret(unchecked, 9, 6, x)


def test_compiled_closures_are_cached_per_procdef() -> None:
    from cursched.interp import compiled

    assert compiled(sgemm.ir()) is compiled(sgemm.ir())


@instr("{dst_data} = {src_data};")
def copy1(dst: [f32][1] @ DRAM, src: [f32][1] @ DRAM):
    dst[0] = src[0]


@proc
def copy_with_instr(n: size, A: f32[n, 4] @ DRAM, B: f32[n, 4] @ DRAM):
    for i in seq(0, n):
        row = A[i, 0:4]
        sub = row[1:3]
        for j in seq(0, 2):
            copy1(B[i, j : j + 1], sub[j : j + 1])


def test_instr_body_and_window_of_a_window() -> None:
    A = f32(3, 4)
    B = np.zeros((3, 4), np.float32)
    copy_with_instr.interpret(3, A, B)
    want = np.zeros((3, 4), np.float32)
    want[:, 0:2] = A[:, 1:3]
    np.testing.assert_array_equal(B, want)


@proc
def real_and_ints(n: size, x: R[n] @ DRAM, k: ui16[n] @ DRAM, y: R[n] @ DRAM, z: ui16[n] @ DRAM):
    for i in seq(0, n):
        y[i] = select(x[i], 0.0, -x[i], x[i]) + relu(x[i])
        z[i] = select(k[i], 100, k[i], 0) - 1


def test_r_is_f32_and_externs_on_integers() -> None:
    x = f32(6)
    k = np.array([0, 5, 99, 100, 1000, 7], np.uint16)
    y = np.zeros(6, np.float32)
    z = np.zeros(6, np.uint16)
    real_and_ints.interpret(6, x, k, y, z)
    np.testing.assert_array_equal(y, np.abs(x) + np.maximum(x, 0))
    assert list(z) == [65535, 4, 98, 65535, 65535, 6]
