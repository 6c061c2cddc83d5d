"""Corpus, part 1: the kernels people schedule (linear algebra, stencils, softmax family).

Each proc is followed by its registration: random inputs satisfying its asserts, and what
numpy says the outputs must be.
"""

from __future__ import annotations

import numpy as np

from cursched import DRAM, DRAM_STACK, proc

from .registry import ints, positive, randn, register, scalar

# ---------------------------------------------------------------------- linear algebra


@proc
def sgemm(M: size, N: size, K: size, A: f32[M, K] @ DRAM, B: f32[K, N] @ DRAM, C: f32[M, N] @ DRAM):
    for i in seq(0, M):
        for j in seq(0, N):
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[k, j]


register(
    sgemm,
    lambda r: dict(M=5, N=6, K=7, A=randn(r, 5, 7), B=randn(r, 7, 6), C=randn(r, 5, 6)),
    lambda M, N, K, A, B, C: dict(C=C + A.astype(np.float64) @ B),
    rtol=1e-4,
    atol=1e-5,
    features="reduce tensor_args",
)


@proc
def sgemm_tiled(M: size, N: size, K: size, A: f32[M, K], B: f32[K, N], C: f32[M, N]):
    assert M % 4 == 0
    for io in seq(0, M / 4):
        for j in seq(0, N):
            acc: f32[4] @ DRAM_STACK
            for ii in seq(0, 4):
                acc[ii] = 0.0
            for k in seq(0, K):
                for ii in seq(0, 4):
                    acc[ii] += A[4 * io + ii, k] * B[k, j]
            for ii in seq(0, 4):
                C[4 * io + ii, j] = acc[ii]


register(
    sgemm_tiled,
    lambda r: dict(M=8, N=3, K=5, A=randn(r, 8, 5), B=randn(r, 5, 3), C=randn(r, 8, 3)),
    lambda M, N, K, A, B, C: dict(C=A.astype(np.float64) @ B),
    rtol=1e-4,
    atol=1e-5,
    features="divisibility_assert index_div alloc_tensor dram_stack default_memory",
)


@proc
def gemv(M: size, N: size, A: f32[M, N], x: f32[N], y: f32[M]):
    for i in seq(0, M):
        y[i] = 0.0
        for j in seq(0, N):
            y[i] += A[i, j] * x[j]


register(
    gemv,
    lambda r: dict(M=4, N=9, A=randn(r, 4, 9), x=randn(r, 9), y=randn(r, 4)),
    lambda M, N, A, x, y: dict(y=A.astype(np.float64) @ x),
    rtol=1e-4,
    atol=1e-5,
)


@proc
def qgemm_i8(M: size, N: size, K: size, A: i8[M, K], B: i8[K, N], C: i32[M, N]):
    for i in seq(0, M):
        for j in seq(0, N):
            C[i, j] = 0
            for k in seq(0, K):
                C[i, j] += A[i, k] * B[k, j]


register(
    qgemm_i8,
    lambda r: dict(
        M=3,
        N=4,
        K=16,
        A=ints(r, -128, 128, 3, 16, dtype=np.int8),
        B=ints(r, -128, 128, 16, 4, dtype=np.int8),
        C=ints(r, -9, 9, 3, 4),
    ),
    lambda M, N, K, A, B, C: dict(C=A.astype(np.int32) @ B.astype(np.int32)),
    features="i8 i32 mixed_precision",
)


@proc
def dot_i8(n: size, a: i8[n], b: i8[n], out: i32):
    out = 0
    for i in seq(0, n):
        out += a[i] * b[i]


register(
    dot_i8,
    lambda r: dict(
        n=33,
        a=ints(r, -128, 128, 33, dtype=np.int8),
        b=ints(r, -128, 128, 33, dtype=np.int8),
        out=scalar(7, np.int32),
    ),
    lambda n, a, b, out: dict(out=np.array(np.dot(a.astype(np.int32), b.astype(np.int32)))),
    features="i8 i32 mixed_precision data_scalar_arg",
)


@proc
def transpose_par(M: size, N: size, A: f32[M, N], B: f32[N, M]):
    for i in par(0, M):
        for j in par(0, N):
            B[j, i] = A[i, j]


register(
    transpose_par,
    lambda r: dict(M=3, N=5, A=randn(r, 3, 5), B=randn(r, 5, 3)),
    lambda M, N, A, B: dict(B=A.T.copy()),
    features="par",
)


@proc
def saxpy_par(n: size, alpha: f32, x: f32[n], y: f32[n]):
    for i in par(0, n):
        y[i] += alpha * x[i]


register(
    saxpy_par,
    lambda r: dict(n=10, alpha=scalar(1.5), x=randn(r, 10), y=randn(r, 10)),
    lambda n, alpha, x, y: dict(y=y + np.float32(alpha) * x),
    features="par data_scalar_arg",
)

# --------------------------------------------------------------------------- stencils


@proc
def conv1d(n: size, k: size, x: f32[n], w: f32[k], y: f32[n]):
    assert k <= n
    for i in seq(0, n - k + 1):
        y[i] = 0.0
        for j in seq(0, k):
            y[i] += x[i + j] * w[j]


def _conv1d_ref(n: int, k: int, x: np.ndarray, w: np.ndarray, y: np.ndarray) -> dict:
    y[: n - k + 1] = np.correlate(x.astype(np.float64), w.astype(np.float64), "valid")
    return dict(y=y)


register(
    conv1d,
    lambda r: dict(n=12, k=3, x=randn(r, 12), w=randn(r, 3), y=randn(r, 12)),
    _conv1d_ref,
    rtol=1e-4,
    atol=1e-5,
    features="size_assert affine_bounds",
)


@proc
def blur3x3(H: size, W: size, inp: f32[H, W], out: f32[H, W]):
    assert H >= 3
    assert W >= 3
    for i in seq(1, H - 1):
        for j in seq(1, W - 1):
            s: f32
            s = 0.0
            for di in seq(0, 3):
                for dj in seq(0, 3):
                    s += inp[i + di - 1, j + dj - 1]
            out[i, j] = s / 9.0


def _blur3x3_ref(H: int, W: int, inp: np.ndarray, out: np.ndarray) -> dict:
    acc = sum(
        inp[di : H - 2 + di, dj : W - 2 + dj].astype(np.float64)
        for di in range(3)
        for dj in range(3)
    )
    out[1:-1, 1:-1] = acc / 9.0
    return dict(out=out)


register(
    blur3x3,
    lambda r: dict(H=6, W=7, inp=randn(r, 6, 7), out=randn(r, 6, 7)),
    _blur3x3_ref,
    rtol=1e-4,
    atol=1e-5,
    features="alloc_scalar data_div",
)


@proc
def blur_2pass(H: size, W: size, inp: f32[H, W], out: f32[H, W]):
    assert H >= 3
    assert W >= 3
    tmp: f32[H, W] @ DRAM
    for i in seq(0, H):
        for j in seq(1, W - 1):
            tmp[i, j] = (inp[i, j - 1] + inp[i, j] + inp[i, j + 1]) / 3.0
    for i in seq(1, H - 1):
        for j in seq(1, W - 1):
            out[i, j] = (tmp[i - 1, j] + tmp[i, j] + tmp[i + 1, j]) / 3.0


def _blur_2pass_ref(H: int, W: int, inp: np.ndarray, out: np.ndarray) -> dict:
    x = inp.astype(np.float64)
    t = (x[:, :-2] + x[:, 1:-1] + x[:, 2:]) / 3.0
    out[1:-1, 1:-1] = (t[:-2] + t[1:-1] + t[2:]) / 3.0
    return dict(out=out)


register(
    blur_2pass,
    lambda r: dict(H=5, W=8, inp=randn(r, 5, 8), out=randn(r, 5, 8)),
    _blur_2pass_ref,
    rtol=1e-4,
    atol=1e-5,
    features="alloc_tensor dram",
)


@proc
def prefix_sum(n: size, x: f32[n], y: f32[n]):
    y[0] = x[0]
    for i in seq(1, n):
        y[i] = y[i - 1] + x[i]


register(
    prefix_sum,
    lambda r: dict(n=17, x=randn(r, 17), y=randn(r, 17)),
    lambda n, x, y: dict(y=np.cumsum(x.astype(np.float64))),
    rtol=1e-4,
    atol=1e-5,
    features="scan",
)

# ---------------------------------------------------------------------- softmax family


@proc
def softmax3(n: size, x: f32[n], y: f32[n]):
    m: f32
    m = -inf
    for i in seq(0, n):
        m = fmaxf(m, x[i])
    s: f32
    s = 0.0
    for i in seq(0, n):
        y[i] = expf(x[i] - m)
        s += y[i]
    for i in seq(0, n):
        y[i] = y[i] / s


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max())
    return e / e.sum()


register(
    softmax3,
    lambda r: dict(n=11, x=randn(r, 11), y=randn(r, 11)),
    lambda n, x, y: dict(y=_softmax(x)),
    features="extern_fmaxf extern_expf inf alloc_scalar",
)


@proc
def softmax_online(n: size, x: f32[n], y: f32[n]):
    m: f32
    s: f32
    m = -inf
    s = 0.0
    for i in seq(0, n):
        mn: f32
        mn = fmaxf(m, x[i])
        s = s * expf(m - mn) + expf(x[i] - mn)
        m = mn
    for i in seq(0, n):
        y[i] = expf(x[i] - m) / s


register(
    softmax_online,
    lambda r: dict(n=9, x=randn(r, 9), y=randn(r, 9)),
    lambda n, x, y: dict(y=_softmax(x)),
    features="extern_fmaxf extern_expf inf",
)


@proc
def logsumexp(n: size, x: f32[n], out: f32):
    m: f32
    m = -inf
    for i in seq(0, n):
        m = fmax(m, x[i])
    s: f32
    s = 0.0
    for i in seq(0, n):
        s += exp(x[i] - m)
    out = m + log(s)  # noqa: F841 (writes the output scalar)


def _logsumexp(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    return np.array(x64.max() + np.log(np.exp(x64 - x64.max()).sum()))


register(
    logsumexp,
    lambda r: dict(n=13, x=randn(r, 13), out=scalar(0.0)),
    lambda n, x, out: dict(out=_logsumexp(x)),
    features="extern_fmax extern_exp extern_log data_scalar_arg",
)


@proc
def attention_row(n: size, d: size, q: f32[d], K: f32[n, d], V: f32[n, d], scale: f32, out: f32[d]):
    p: f32[n] @ DRAM
    for i in seq(0, n):
        p[i] = 0.0
        for k in seq(0, d):
            p[i] += q[k] * K[i, k]
        p[i] = p[i] * scale
    m: f32
    m = -inf
    for i in seq(0, n):
        m = fmaxf(m, p[i])
    s: f32
    s = 0.0
    for i in seq(0, n):
        p[i] = expf(p[i] - m)
        s += p[i]
    for k in seq(0, d):
        out[k] = 0.0
        for i in seq(0, n):
            out[k] += p[i] * V[i, k]
        out[k] = out[k] / s


def _attention_ref(n, d, q, K, V, scale, out):
    w = _softmax((K.astype(np.float64) @ q) * float(scale))
    return dict(out=w @ V)


register(
    attention_row,
    lambda r: dict(
        n=7,
        d=4,
        q=randn(r, 4),
        K=randn(r, 7, 4),
        V=randn(r, 7, 4),
        scale=scalar(0.5),
        out=randn(r, 4),
    ),
    _attention_ref,
    rtol=1e-4,
    atol=1e-5,
    features="data_scalar_arg alloc_tensor",
)


@proc
def layernorm(n: size, x: f32[n], gamma: f32[n], inv_n: f32, y: f32[n]):
    mean: f32
    mean = 0.0
    for i in seq(0, n):
        mean += x[i]
    mean = mean * inv_n
    var: f32
    var = 0.0
    for i in seq(0, n):
        var += (x[i] - mean) * (x[i] - mean)
    var = var * inv_n
    for i in seq(0, n):
        y[i] = gamma[i] * (x[i] - mean) / sqrt(var + 1e-05)


def _layernorm_ref(n, x, gamma, inv_n, y):
    x64 = x.astype(np.float64)
    return dict(y=gamma * (x64 - x64.mean()) / np.sqrt(x64.var() + 1e-5))


register(
    layernorm,
    lambda r: dict(
        n=16, x=randn(r, 16), gamma=positive(r, 16), inv_n=scalar(1 / 16), y=randn(r, 16)
    ),
    _layernorm_ref,
    rtol=1e-4,
    atol=1e-5,
    features="extern_sqrt float_literal data_scalar_arg",
)


@proc
def bias_relu(M: size, N: size, A: f32[M, N], b: f32[N], out: f32[M, N]):
    for i in seq(0, M):
        for j in seq(0, N):
            out[i, j] = relu(A[i, j] + b[j])


register(
    bias_relu,
    lambda r: dict(M=3, N=6, A=randn(r, 3, 6), b=randn(r, 6), out=randn(r, 3, 6)),
    lambda M, N, A, b, out: dict(out=np.maximum(A + b, 0)),
    features="extern_relu",
)


@proc
def swish_gate(n: size, x: f32[n], g: f32[n], y: f32[n]):
    for i in seq(0, n):
        y[i] = x[i] * sigmoid(g[i])


register(
    swish_gate,
    lambda r: dict(n=8, x=randn(r, 8), g=randn(r, 8), y=randn(r, 8)),
    lambda n, x, g, y: dict(y=x / (1.0 + np.exp(-g.astype(np.float64)))),
    features="extern_sigmoid",
)
