"""Corpus, part 2: procs that exercise the rest of the language one feature at a time.

Windows and calls, stride asserts, scopes, if/else with ``and``/``or``, ``pass``, control
arguments (``index``, ``bool``), floor ``/`` and ``%`` in indices, every data type, every
extern not used in part 1, memories and an ``@instr`` proc.
"""

# Window annotations like [f32][m, n] index a list with a tuple, which ruff flags.
# ruff: noqa: RUF016

from __future__ import annotations

import numpy as np

from cursched import DRAM, DRAM_STATIC, instr, proc

from .registry import ints, positive, randn, register, scalar

# -------------------------------------------------------------------- windows and calls


@proc
def scal(n: size, alpha: f32, x: [f32][n] @ DRAM):
    assert stride(x, 0) == 1
    for i in seq(0, n):
        x[i] = alpha * x[i]


register(
    scal,
    lambda r: dict(n=6, alpha=scalar(-2.0), x=randn(r, 6)),
    lambda n, alpha, x: dict(x=x * np.float32(alpha)),
    features="window_arg stride_assert data_scalar_arg",
)


@proc
def scale_rows(M: size, N: size, alpha: f32, A: f32[M, N] @ DRAM):
    for i in seq(0, M):
        scal(N, alpha, A[i, 0:N])


register(
    scale_rows,
    lambda r: dict(M=3, N=5, alpha=scalar(0.5), A=randn(r, 3, 5)),
    lambda M, N, alpha, A: dict(A=A * np.float32(alpha)),
    features="call window_expr",
)


@proc
def axpy_win(n: size, a: f32, x: [f32][n], y: [f32][n]):
    for i in seq(0, n):
        y[i] += a * x[i]


register(
    axpy_win,
    lambda r: dict(n=7, a=scalar(3.0), x=randn(r, 7), y=randn(r, 7)),
    lambda n, a, x, y: dict(y=y + np.float32(a) * x),
    features="window_arg",
)


@proc
def col_axpy(M: size, N: size, a: f32, A: f32[M, N], B: f32[M, N]):
    assert N >= 2
    for j in seq(0, N - 1):
        axpy_win(M, a, A[0:M, j], B[0:M, j + 1])


def _col_axpy_ref(M, N, a, A, B):
    B[:, 1:] += np.float32(a) * A[:, :-1]
    return dict(B=B)


register(
    col_axpy,
    lambda r: dict(M=4, N=3, a=scalar(-1.5), A=randn(r, 4, 3), B=randn(r, 4, 3)),
    _col_axpy_ref,
    features="call strided_window",
)


@proc
def row_sums(M: size, N: size, A: f32[M, N], out: f32[M]):
    for i in seq(0, M):
        row = A[i, 0:N]
        out[i] = 0.0
        for j in seq(0, N):
            out[i] += row[j]


register(
    row_sums,
    lambda r: dict(M=4, N=6, A=randn(r, 4, 6), out=randn(r, 4)),
    lambda M, N, A, out: dict(out=A.astype(np.float64).sum(axis=1)),
    rtol=1e-4,
    atol=1e-5,
    features="window_stmt",
)


@proc
def copy2d(m: size, n: size, dst: [f32][m, n] @ DRAM, src: [f32][m, n] @ DRAM):
    for i in seq(0, m):
        for j in seq(0, n):
            dst[i, j] = src[i, j]


register(
    copy2d,
    lambda r: dict(m=2, n=3, dst=randn(r, 2, 3), src=randn(r, 2, 3)),
    lambda m, n, dst, src: dict(dst=src.copy()),
    features="window_arg",
)


@proc
def copy_block(N: size, A: f32[N, N], B: f32[N, N]):
    assert N >= 5
    inner = A[1 : N - 1, 0:N]
    copy2d(2, N - 2, B[0:2, 2:N], inner[1:3, 1 : N - 1])


def _copy_block_ref(N, A, B):
    B[0:2, 2:N] = A[2:4, 1 : N - 1]
    return dict(B=B)


register(
    copy_block,
    lambda r: dict(N=5, A=randn(r, 5, 5), B=randn(r, 5, 5)),
    _copy_block_ref,
    features="window_of_window call",
)


@proc
def pad_copy(n: size, x: f32[n], y: f32[n + 2]):
    t: f32[n + 2] @ DRAM
    t[0] = 0.0
    t[n + 1] = 0.0
    for i in seq(0, n):
        t[i + 1] = x[i]
    for i in seq(0, n + 2):
        y[i] = t[i]


register(
    pad_copy,
    lambda r: dict(n=5, x=randn(r, 5), y=randn(r, 7)),
    lambda n, x, y: dict(y=np.pad(x, 1)),
    features="shape_expr alloc_tensor",
)


# ------------------------------------------------------------------------ control flow


@proc
def tril(n: size, A: f32[n, n], B: f32[n, n]):
    for i in seq(0, n):
        for j in seq(0, n):
            if j <= i:
                B[i, j] = A[i, j]
            else:
                B[i, j] = 0.0


register(
    tril,
    lambda r: dict(n=5, A=randn(r, 5, 5), B=randn(r, 5, 5)),
    lambda n, A, B: dict(B=np.tril(A)),
    features="if_else",
)


@proc
def band(n: size, A: f32[n, n], B: f32[n, n]):
    for i in seq(0, n):
        for j in seq(0, n):
            if i - j <= 1 and j - i <= 1:
                B[i, j] = A[i, j]
            if i == 0 or j == n - 1:
                B[i, j] += 1.0


def _band_ref(n, A, B):
    i, j = np.indices((n, n))
    keep = np.abs(i - j) <= 1
    B = np.where(keep, A, B)
    return dict(B=np.where((i == 0) | (j == n - 1), B + 1, B))


register(
    band,
    lambda r: dict(n=5, A=randn(r, 5, 5), B=randn(r, 5, 5)),
    _band_ref,
    features="if and or",
)


@proc
def shifted_copy(n: size, m: size, off: index, flag: bool, x: f32[m], y: f32[n]):
    assert off >= 0
    assert off + n <= m
    for i in seq(0, n):
        if flag:
            y[i] = x[i + off]
        else:
            pass


register(
    shifted_copy,
    lambda r: dict(n=4, m=9, off=3, flag=True, x=randn(r, 9), y=randn(r, 4)),
    lambda n, m, off, flag, x, y: dict(y=x[off : off + n].copy()),
    features="index_arg bool_arg pass",
)


@proc
def upsample2(n: size, m: size, x: f32[m], y: f32[n]):
    assert n == 2 * m
    for i in seq(0, n):
        y[i] = x[i / 2]


register(
    upsample2,
    lambda r: dict(n=10, m=5, x=randn(r, 5), y=randn(r, 10)),
    lambda n, m, x, y: dict(y=np.repeat(x, 2)),
    features="index_div",
)


@proc
def tile_repeat(n: size, x: f32[4], y: f32[n]):
    for i in seq(0, n):
        y[i] = x[i % 4]


register(
    tile_repeat,
    lambda r: dict(n=10, x=randn(r, 4), y=randn(r, 10)),
    lambda n, x, y: dict(y=np.resize(x, 10)),
    features="index_mod",
)


@proc
def maxpool2(n: size, m: size, x: f32[n], y: f32[m]):
    assert n == 2 * m
    for i in seq(0, m):
        y[i] = fmaxf(x[2 * i], x[2 * i + 1])


register(
    maxpool2,
    lambda r: dict(n=12, m=6, x=randn(r, 12), y=randn(r, 6)),
    lambda n, m, x, y: dict(y=x.reshape(6, 2).max(axis=1)),
    features="extern_fmaxf",
)


@proc
def vadd_blocked(n: size, x: f32[n], y: f32[n], z: f32[n]):
    assert n % 8 == 0
    for io in par(0, n / 8):
        for ii in seq(0, 8):
            z[8 * io + ii] = x[8 * io + ii] + y[8 * io + ii]


register(
    vadd_blocked,
    lambda r: dict(n=24, x=randn(r, 24), y=randn(r, 24), z=randn(r, 24)),
    lambda n, x, y, z: dict(z=x + y),
    features="divisibility_assert par index_div",
)


@proc
def scoped_stages(n: size, x: f32[n], y: f32[n]):
    with scope("square"):
        for i in seq(0, n):
            y[i] = x[i] * x[i]
    with scope("shift"):
        for i in seq(0, n):
            with scope("inner"):
                y[i] = y[i] - 1.0


register(
    scoped_stages,
    lambda r: dict(n=6, x=randn(r, 6), y=randn(r, 6)),
    lambda n, x, y: dict(y=x * x - 1),
    features="scope",
)

# ------------------------------------------------------------------- externs and types


@proc
def abs_select(n: size, x: f32[n], y: f32[n]):
    for i in seq(0, n):
        y[i] = select(x[i], 0.0, -x[i], x[i])


register(
    abs_select,
    lambda r: dict(n=9, x=randn(r, 9), y=randn(r, 9)),
    lambda n, x, y: dict(y=np.abs(x)),
    features="extern_select usub",
)


@proc
def min_reduce(n: size, x: f32[n], out: f32):
    out = inf
    for i in seq(0, n):
        out = fmin(out, x[i])


register(
    min_reduce,
    lambda r: dict(n=7, x=randn(r, 7), out=scalar(0.0)),
    lambda n, x, out: dict(out=np.array(x.min())),
    features="inf extern_fmin data_scalar_arg",
)


@proc
def clamp(n: size, lo: f32, hi: f32, x: f32[n], y: f32[n]):
    for i in seq(0, n):
        y[i] = fmin(fmax(x[i], lo), hi)


register(
    clamp,
    lambda r: dict(n=10, lo=scalar(-0.5), hi=scalar(0.75), x=randn(r, 10), y=randn(r, 10)),
    lambda n, lo, hi, x, y: dict(y=np.clip(x, lo, hi)),
    features="extern_fmin extern_fmax",
)


@proc
def trig_roots(n: size, x: f32[n], y: f32[n]):
    for i in seq(0, n):
        y[i] = sin(x[i]) + sqrt(x[i])


register(
    trig_roots,
    lambda r: dict(n=8, x=positive(r, 8), y=randn(r, 8)),
    lambda n, x, y: dict(y=np.sin(x.astype(np.float64)) + np.sqrt(x)),
    features="extern_sin extern_sqrt",
)


@proc
def exp2_log(n: size, x: f32[n], y: f32[n]):
    for i in seq(0, n):
        y[i] = exp2(x[i]) * log(x[i])


register(
    exp2_log,
    lambda r: dict(n=8, x=positive(r, 8), y=randn(r, 8)),
    lambda n, x, y: dict(y=np.exp2(x.astype(np.float64)) * np.log(x)),
    features="extern_exp2 extern_log",
)


@proc
def mixed_floats(n: size, h: f16[n], d: f64[n], r: R[n], outd: f64[n], outh: f16[n]):
    for i in seq(0, n):
        outd[i] = h[i] * d[i] + r[i]
        outh[i] = h[i] * 2.0 + d[i]


def _mixed_floats_ref(n, h, d, r, outd, outh):
    return dict(
        outd=h.astype(np.float64) * d + r.astype(np.float64),
        outh=(h * np.float16(2.0) + d.astype(np.float16)).astype(np.float16),
    )


register(
    mixed_floats,
    lambda r: dict(
        n=6,
        h=randn(r, 6, dtype=np.float16),
        d=randn(r, 6, dtype=np.float64),
        r=randn(r, 6),
        outd=randn(r, 6, dtype=np.float64),
        outh=randn(r, 6, dtype=np.float16),
    ),
    _mixed_floats_ref,
    rtol=1e-2,
    atol=1e-2,
    features="f16 f64 R mixed_precision",
)


@proc
def wrap_ints(n: size, u: ui8[n], w: ui16[n], v: i32[n]):
    for i in seq(0, n):
        u[i] = u[i] + 200
        w[i] = w[i] * 3
        v[i] = v[i] % 7 + v[i] / 5


def _wrap_ints_ref(n, u, w, v):
    v64 = v.astype(np.int64)
    trunc_div = np.trunc(v64 / 5).astype(np.int64)
    c_rem = np.fmod(v64, 7)
    return dict(
        u=((u.astype(np.int64) + 200) % 256).astype(np.uint8),
        w=((w.astype(np.int64) * 3) % 65536).astype(np.uint16),
        v=(c_rem + trunc_div).astype(np.int32),
    )


register(
    wrap_ints,
    lambda r: dict(
        n=9,
        u=ints(r, 0, 256, 9, dtype=np.uint8),
        w=ints(r, 0, 65536, 9, dtype=np.uint16),
        v=ints(r, -1000, 1000, 9),
    ),
    _wrap_ints_ref,
    features="ui8 ui16 i32 data_int_div data_int_mod",
)

# ------------------------------------------------------------- memories and instructions


@proc
def static_lut(n: size, x: f32[n], y: f32[n]):
    lut: f32[4] @ DRAM_STATIC
    for k in seq(0, 4):
        lut[k] = 0.25
    for i in seq(0, n):
        y[i] = x[i] * lut[i % 4]


register(
    static_lut,
    lambda r: dict(n=7, x=randn(r, 7), y=randn(r, 7)),
    lambda n, x, y: dict(y=x * np.float32(0.25)),
    features="dram_static alloc_tensor",
)


@instr("*{dst_data} = *{src_data};")
def copy1(dst: [f32][1] @ DRAM, src: [f32][1] @ DRAM):
    dst[0] = src[0]


register(
    copy1,
    lambda r: dict(dst=randn(r, 1), src=randn(r, 1)),
    lambda dst, src: dict(dst=src.copy()),
    features="instr",
)


@proc
def copy_with_instr(n: size, x: f32[n], y: f32[n]):
    for i in seq(0, n):
        copy1(y[i : i + 1], x[i : i + 1])


register(
    copy_with_instr,
    lambda r: dict(n=5, x=randn(r, 5), y=randn(r, 5)),
    lambda n, x, y: dict(y=x.copy()),
    features="call_instr",
)
