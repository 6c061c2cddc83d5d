"""cursched.platforms.x86.avx512_arith: each instruction replaces its loop and computes its
body bitwise (compiled against the interpreter and against the scalar C code, on random values
and every pair of special values), and the pinned load is a load; ``mm512_exp_ps`` against
glibc's ``expf`` (every special value, 10^6 random floats); ``mm512_transpose16_ps`` and its
prefetching variant are the copy's transpose bitwise (NaN payloads, strided tiles)."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import DRAM, Proc, proc, replace
from cursched.platforms.x86 import (
    AVX512,
    cpu_features,
    mm512_acc_ps,
    mm512_div_ps,
    mm512_exp_ps,
    mm512_fmadd_ps_broadcast,
    mm512_loadu_ps,
    mm512_loadu_ps_reg,
    mm512_setzero_ps,
    mm512_storeu_ps,
    mm512_sub_guarded_ps,
    mm512_sub_ps,
    mm512_transpose16_ps,
    mm512_transpose16_ps_prefetch,
)

from .test_x86_instrs import SPECIAL, _exp_inputs, _in_dram, _parse, _replace_all, _ulps, scalar_exp

pytestmark = pytest.mark.skipif(
    not set(AVX512.requires) <= cpu_features(), reason="this CPU lacks AVX-512F"
)

OPS: dict[str, tuple[str, Proc]] = {
    "sub": ("c[i] = a[i] - b[i]", mm512_sub_ps),
    "div": ("c[i] = a[i] / b[i]", mm512_div_ps),
    "acc": ("c[i] += a[i]", mm512_acc_ps),
    "sub_guarded": ("c[i] = a[i] - select(-inf, b[i], b[i], 0.0)", mm512_sub_guarded_ps),
}


def _binop16(body: str) -> Proc:
    """``z = op(x, y)`` through 16-lane registers, ``body`` the middle loop's statement."""
    src = f"""
def vop(x: f32[16] @ DRAM, y: f32[16] @ DRAM, z: f32[16] @ DRAM):
    a: f32[16] @ AVX512
    b: f32[16] @ AVX512
    c: f32[16] @ AVX512
    for i in seq(0, 16):
        a[i] = x[i]
    for i in seq(0, 16):
        b[i] = y[i]
    for i in seq(0, 16):
        c[i] = z[i]
    for i in seq(0, 16):
        {body}
    for i in seq(0, 16):
        z[i] = c[i]
"""
    return _parse(src, {"DRAM": DRAM, "AVX512": AVX512})


@pytest.mark.parametrize("name", sorted(OPS))
def test_arith_instruction_is_the_scalar_code_bitwise(name: str) -> None:
    body, ins = OPS[name]
    plain = _binop16(body)
    steps = [("i #0", mm512_loadu_ps)] * 3 + [("i #0", ins), ("i #0", mm512_storeu_ps)]
    vec = _replace_all(plain, steps)
    assert f"mm512_{name}_ps(c[0:16]" in str(vec)
    scalar, vector = _in_dram(plain, "a", "b", "c").compile(), vec.compile()
    rng = np.random.default_rng(2)
    pairs = [(a, b) for a in SPECIAL for b in SPECIAL]
    for k in range(0, len(pairs), 16):
        x = np.resize(np.array([a for a, _ in pairs[k : k + 16]], np.float32), 16)
        y = np.resize(np.array([b for _, b in pairs[k : k + 16]], np.float32), 16)
        if k % 32:
            x, y = rng.standard_normal((2, 16)).astype(np.float32) * 10
        z = rng.standard_normal(16).astype(np.float32)
        want, got, interp = z.copy(), z.copy(), z.copy()
        with np.errstate(all="ignore"):
            scalar(x, y, want)
            vector(x, y, got)
            plain.interpret(x, y, interp)
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
        np.testing.assert_array_equal(got, interp)  # NaN = NaN, whatever its payload


def test_sub_guarded_keeps_minus_inf_rows_finite() -> None:
    """The guard: a running max of -inf (or NaN) is subtracted as 0 (-0.0 stays -0.0)."""
    plain = _binop16(OPS["sub_guarded"][0])
    steps = [("i #0", mm512_loadu_ps)] * 3 + [("i #0", mm512_sub_guarded_ps)]
    vec = _replace_all(plain, [*steps, ("i #0", mm512_storeu_ps)])
    x = np.array([-np.inf, 1, 2, 3, -np.inf, 5, 6, 7, -0.0, -0.0, 0.0, np.nan] + [1] * 4, "f4")
    m = np.array(
        [-np.inf, -np.inf, np.nan, 3, 1, np.inf, 0, -0.0, -np.inf, 0.0, np.nan, 2] * 1 + [0] * 4,
        np.float32,
    )
    z = np.zeros(16, np.float32)
    vec.compile()(x, m, z)
    want = [-np.inf, 1, 2, 0, -np.inf, -np.inf, 6, 7, -0.0, -0.0, 0.0, np.nan] + [1] * 4
    np.testing.assert_array_equal(z, np.array(want, np.float32))
    assert np.signbit(z[8]) and np.signbit(z[9]) and not np.signbit(z[10])
    # a signaling NaN x with a guarded m: the lane bitwise the compiled scalar code's
    snan = np.array([0x7FA00001], np.uint32).view(np.float32)[0]
    x[:2], m[:2] = snan, (-np.inf, np.nan)
    want = np.zeros(16, np.float32)
    _in_dram(plain, "a", "b", "c").compile()(x, m, want)
    vec.compile()(x, m, z)
    np.testing.assert_array_equal(z.view(np.uint32), want.view(np.uint32))


@proc
def reused16(x: f32[32] @ DRAM, b: f32[4] @ DRAM, y: f32[4, 16] @ DRAM):
    v: f32[16] @ AVX512
    for i in seq(0, 16):
        v[i] = x[16 + i]
    for j in seq(0, 4):
        acc: f32[16] @ AVX512
        for i in seq(0, 16):
            acc[i] = 0.0
        for i in seq(0, 16):
            acc[i] += v[i] * b[j]
        for i in seq(0, 16):
            y[j, i] = acc[i]


def test_load_to_register_is_a_load_its_value_used_by_every_fma() -> None:
    p = _replace_all(
        reused16,
        [
            ("i #0", mm512_loadu_ps_reg),
            ("i #0", mm512_setzero_ps),
            ("i #0", mm512_fmadd_ps_broadcast),
            ("i #0", mm512_storeu_ps),
        ],
    )
    f = p.compile()
    assert '__asm__("" : "+v"(v));' in f.c_source  # the register pin, any of 32 registers
    rng = np.random.default_rng(4)
    x, b = rng.standard_normal(32).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    y = np.zeros((4, 16), np.float32)
    f(x, b, y)
    assert np.array_equal(y, b[:, None] * x[None, 16:])  # one product per lane: exact


@proc
def vector_exp16(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    assert n % 16 == 0
    a: f32[16] @ AVX512
    for io in seq(0, n / 16):
        for i in seq(0, 16):
            a[i] = x[16 * io + i]
        for i in seq(0, 16):
            a[i] = expf(a[i])
        for i in seq(0, 16):
            y[16 * io + i] = a[i]


def test_vector_exp_against_glibc() -> None:
    vec = _replace_all(
        vector_exp16,
        [("i #0", mm512_loadu_ps), ("i #0", mm512_exp_ps), ("i #0", mm512_storeu_ps)],
    )
    assert "_mm512_scalef_ps(p, n)" in vec.compile().c_source  # the one-instruction scaling
    xs = _exp_inputs(10**6)
    xs = xs[: len(xs) // 16 * 16].copy()
    want, got = np.empty_like(xs), np.empty_like(xs)
    scalar_exp.compile()(len(xs), xs, want)  # glibc's expf: the default build calls libm
    vec.compile()(len(xs), xs, got)
    nan = np.isnan(want)
    assert np.array_equal(nan, np.isnan(got))
    # NaN in, the same NaN out as glibc (the input quieted, its sign and payload kept)
    assert np.array_equal(got[nan].view(np.uint32), want[nan].view(np.uint32))
    assert np.array_equal(got[nan].view(np.uint32), xs[nan].view(np.uint32) | 0x400000)
    ulps = _ulps(got[~nan], want[~nan])
    print(f"\nmm512_exp_ps vs glibc expf on {len(xs)} floats: max {ulps.max()} ulp")
    assert ulps.max() <= 1
    specials = dict(zip(SPECIAL.tolist(), got[: len(SPECIAL)].tolist(), strict=True))
    assert specials[-np.inf] == 0.0 and specials[np.inf] == np.inf and specials[89.0] == np.inf
    assert specials[-150.0] == 0.0 and specials[0.0] == 1.0
    head = xs[: len(SPECIAL)]
    tiny = got[np.flatnonzero(head == np.float32(-103.97))[0]]
    assert 0 < tiny < 1.2e-38  # e^-103.97 is subnormal: rounded once, not flushed to 0


@proc
def transpose_tiles(x: f32[32, 48] @ DRAM, y: f32[48, 32] @ DRAM):
    for io in seq(0, 2):
        for jo in seq(0, 3):
            for ii in seq(0, 16):
                for ji in seq(0, 16):
                    y[16 * jo + ji, 16 * io + ii] = x[16 * io + ii, 16 * jo + ji]


@pytest.mark.parametrize("ins", [mm512_transpose16_ps, mm512_transpose16_ps_prefetch])
def test_transpose_is_the_copy_bitwise(ins: Proc) -> None:
    p, _ = replace(transpose_tiles, transpose_tiles.find_loop("ii"), ins)
    text = str(p)
    assert f"{ins.name()}(y[16 * jo:16 * jo + 16, 16 * io:16 * io + 16], x[16 * io:" in text
    rng = np.random.default_rng(6)
    x = rng.standard_normal((32, 48)).astype(np.float32)
    bits = x.view(np.uint32)
    bits[0, 1], bits[17, 40], bits[5, 5] = 0x7FA00001, 0xFFC12345, 0x80000000  # sNaN, NaN, -0
    x[3, 9], x[30, 2] = np.inf, -np.inf
    y, want = np.zeros((48, 32), np.float32), np.zeros((48, 32), np.float32)
    p.compile()(x, y)  # tiles of a 48-float (src) and a 32-float (dst) row stride
    transpose_tiles.compile()(x, want)
    np.testing.assert_array_equal(y.view(np.uint32), x.T.copy().view(np.uint32))
    np.testing.assert_array_equal(y.view(np.uint32), want.view(np.uint32))
