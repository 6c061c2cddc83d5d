"""The x86 instructions: each replaces its loop (``replace`` proves its asserts), compiles,
and computes what its body says (compiled C against the interpreter on random inputs, and
bitwise against the scalar C code where the instruction promises it). AVX-512 ones are built
here (compile-only on a CPU without AVX-512) and run where the CPU has it."""

from __future__ import annotations

import numpy as np
import pytest

from cursched import DRAM, Proc, insert_noop_call, proc, replace, set_memory
from cursched.analysis.bounds import check_bounds
from cursched.frontend import parse_source
from cursched.ir.nodes import Const
from cursched.ir.types import ControlType, DataType, TensorType
from cursched.platforms import x86
from cursched.platforms.x86 import (
    AVX2,
    cpu_features,
    mm256_add_ps,
    mm256_broadcast_ss,
    mm256_broadcast_ss_scalar,
    mm256_exp_ps,
    mm256_fmadd_ps,
    mm256_fmadd_ps_broadcast,
    mm256_loadu_ps,
    mm256_loadu_ps_reg,
    mm256_maskload_ps,
    mm256_maskstore_ps,
    mm256_max_ps,
    mm256_min_ps,
    mm256_mul_ps,
    mm256_reduce_add_ps,
    mm256_reduce_max_ps,
    mm256_setzero_ps,
    mm256_storeu_ps,
)
from cursched.primitives.calls.replace import ReplaceAssertError, ReplaceMemoryError

HAS_AVX2 = {"avx2", "fma"} <= cpu_features()
pytestmark = pytest.mark.skipif(not HAS_AVX2, reason="this CPU lacks AVX2+FMA")

SPECIAL = np.array(
    [
        *(np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e-45, -1e-45),
        *(1.17549435e-38, 3.4028235e38, -3.4028235e38, 88.72283, 88.72284, 89.0, -87.33654),
        *(-103.97, -104.0, -150.0, 1e-8, 0.5, -0.5, 0.34657359, -0.34657359),
    ],
    dtype=np.float32,
)


def _in_dram(p: Proc, *bufs: str) -> Proc:
    """``p`` with its registers in DRAM: the scalar C code, the reference of the bitwise
    tests."""
    for b in bufs:
        p, _ = set_memory(p, b, DRAM)
    return p


def _replace_all(p: Proc, steps: list[tuple[str, Proc]]) -> Proc:
    for pattern, ins in steps:
        p, _ = replace(p, p.find_loop(pattern), ins)
    return p


def _binop(body: str) -> Proc:
    """``z = op(x, y)`` through registers, ``body`` the middle loop's statement."""
    src = f"""
def vop(x: f32[8] @ DRAM, y: f32[8] @ DRAM, z: f32[8] @ DRAM):
    a: f32[8] @ AVX2
    b: f32[8] @ AVX2
    c: f32[8] @ AVX2
    for i in seq(0, 8):
        a[i] = x[i]
    for i in seq(0, 8):
        b[i] = y[i]
    for i in seq(0, 8):
        c[i] = z[i]
    for i in seq(0, 8):
        {body}
    for i in seq(0, 8):
        z[i] = c[i]
"""
    return _parse(src, {"DRAM": DRAM, "AVX2": AVX2})


def _parse(src: str, env: dict[str, object]) -> Proc:
    return Proc(check_bounds(parse_source(src, env)))


BINOPS: dict[str, tuple[str, Proc]] = {
    "add": ("c[i] = a[i] + b[i]", mm256_add_ps),
    "mul": ("c[i] = a[i] * b[i]", mm256_mul_ps),
    "max": ("c[i] = fmaxf(a[i], b[i])", mm256_max_ps),
    "min": ("c[i] = fmin(a[i], b[i])", mm256_min_ps),
    "fmadd": ("c[i] += a[i] * b[i]", mm256_fmadd_ps),
}


def _vectorised(name: str) -> tuple[Proc, Proc]:
    body, ins = BINOPS[name]
    plain = _binop(body)
    steps = [("i #0", mm256_loadu_ps)] * 3 + [("i #0", ins), ("i #0", mm256_storeu_ps)]
    return plain, _replace_all(plain, steps)


@pytest.mark.parametrize("name", sorted(BINOPS))
def test_binary_instruction_matches_interpreter(name: str) -> None:
    plain, vec = _vectorised(name)
    assert f"mm256_{name}_ps" in str(vec)
    f = vec.compile()
    rng = np.random.default_rng(1)
    for trial in range(20):
        x, y, z = (rng.standard_normal(8).astype(np.float32) for _ in range(3))
        if trial % 2:  # the special values, pairwise
            x, y = rng.choice(SPECIAL, 8), rng.choice(SPECIAL, 8)
        want = z.copy()
        plain.interpret(x, y, want)
        got = z.copy()
        f(x, y, got)
        if name == "fmadd":  # one rounding in C, two in the interpreter
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-30)
        else:
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_follow_the_scalar_nan_rule(name: str) -> None:
    """Bitwise equal to the scalar C code (``cs_fmax_float``) on every pair of specials."""
    plain, vec = _vectorised(name)
    scalar, vector = _in_dram(plain, "a", "b", "c").compile(), vec.compile()
    xs, ys = np.meshgrid(SPECIAL, SPECIAL)
    xs, ys = xs.ravel(), ys.ravel()
    for k in range(0, len(xs) - 7, 8):
        x, y = xs[k : k + 8].copy(), ys[k : k + 8].copy()
        a, b = np.zeros(8, np.float32), np.zeros(8, np.float32)
        scalar(x, y, a)
        vector(x, y, b)
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32)), (x, y, a, b)


@proc
def scalar_exp(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    for i in seq(0, n):
        y[i] = expf(x[i])


@proc
def vector_exp(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
    assert n % 8 == 0
    a: f32[8] @ AVX2
    for io in seq(0, n / 8):
        for i in seq(0, 8):
            a[i] = x[8 * io + i]
        for i in seq(0, 8):
            a[i] = expf(a[i])
        for i in seq(0, 8):
            y[8 * io + i] = a[i]


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in ulps between float32 arrays (ordered integer representation)."""

    def ordered(v: np.ndarray) -> np.ndarray:
        i = v.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(2**31) - i, i)

    return np.abs(ordered(a) - ordered(b))


def _exp_inputs(n: int) -> np.ndarray:
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2**32, n // 2, dtype=np.uint64).astype(np.uint32).view(np.float32)
    useful = rng.uniform(-104, 89, n - n // 2).astype(np.float32)
    xs = np.concatenate([SPECIAL, bits, useful])
    return xs[: len(xs) // 8 * 8].copy()


def test_vector_exp_against_glibc() -> None:
    vec = _replace_all(
        vector_exp, [("i #0", mm256_loadu_ps), ("i #0", mm256_exp_ps), ("i #0", mm256_storeu_ps)]
    )
    assert "cs_exp256_ps" in vec.compile().c_source
    xs = _exp_inputs(10**6)
    want, got = np.empty_like(xs), np.empty_like(xs)
    scalar_exp.compile()(len(xs), xs, want)  # glibc's expf: the default build calls libm
    vec.compile()(len(xs), xs, got)
    nan = np.isnan(want)
    assert np.array_equal(nan, np.isnan(got))
    # NaN in, the same NaN out as glibc (the input quieted, its sign and payload kept)
    assert np.array_equal(got[nan].view(np.uint32), want[nan].view(np.uint32))
    assert np.array_equal(got[nan].view(np.uint32), xs[nan].view(np.uint32) | 0x400000)
    ulps = _ulps(got[~nan], want[~nan])
    print(f"\nmm256_exp_ps vs glibc expf on {len(xs)} floats: max {ulps.max()} ulp")
    assert ulps.max() <= 1
    specials = dict(zip(SPECIAL.tolist(), got[: len(SPECIAL)].tolist(), strict=True))
    assert specials[-np.inf] == 0.0 and specials[np.inf] == np.inf and specials[89.0] == np.inf
    assert specials[-150.0] == 0.0 and specials[0.0] == 1.0


@proc
def reductions(x: f32[8] @ DRAM, s: f32 @ DRAM, m: f32 @ DRAM):
    a: f32[8] @ AVX2
    for i in seq(0, 8):
        a[i] = x[i]
    for i in seq(0, 8):
        s += a[i]
    for i in seq(0, 8):
        m = fmaxf(m, a[i])


def test_horizontal_reductions_are_the_scalar_loop_bitwise() -> None:
    vec = _replace_all(
        reductions,
        [("i #0", mm256_loadu_ps), ("i #0", mm256_reduce_add_ps), ("i #0", mm256_reduce_max_ps)],
    )
    scalar, vector = _in_dram(reductions, "a").compile(), vec.compile()
    rng = np.random.default_rng(3)
    for trial in range(30):
        x = (rng.standard_normal(8) * 10.0 ** rng.integers(-6, 6, 8)).astype(np.float32)
        if trial % 3 == 0:
            x[rng.integers(0, 8, 3)] = rng.choice(SPECIAL, 3)
        s1, m1 = np.float32(rng.standard_normal()), np.float32(-np.inf)
        outs = []
        for f in (scalar, vector):
            s, m = np.array(s1), np.array(m1)
            f(x, s, m)
            outs.append((s.view(np.uint32), m.view(np.uint32)))
        assert outs[0] == outs[1], (x, outs)


@proc
def broadcasts(x: f32[2] @ DRAM, y: f32[16] @ DRAM):
    a: f32[8] @ AVX2
    b: f32[8] @ AVX2
    c: f32[8] @ AVX2
    for i in seq(0, 8):
        a[i] = x[0]
    for i in seq(0, 8):
        b[i] = x[1]
    for i in seq(0, 8):
        c[i] = 0.0
    for i in seq(0, 8):
        c[i] += a[i] * b[i]
    for i in seq(0, 8):
        y[i] = c[i]
    for i in seq(0, 8):
        y[8 + i] = a[i]


def test_broadcast_zero_fmadd() -> None:
    p = _replace_all(
        broadcasts,
        [
            ("i #0", mm256_broadcast_ss),
            ("i #0", mm256_broadcast_ss),
            ("i #0", mm256_setzero_ps),
            ("i #0", mm256_fmadd_ps),
            ("i #0", mm256_storeu_ps),
            ("i #0", mm256_storeu_ps),
        ],
    )
    x, y = np.array([3.0, -2.0], np.float32), np.zeros(16, np.float32)
    p.compile()(x, y)
    assert y.tolist() == [-6.0] * 8 + [3.0] * 8


@proc
def reused(x: f32[16] @ DRAM, b: f32[4] @ DRAM, y: f32[4, 8] @ DRAM):
    v: f32[8] @ AVX2
    for i in seq(0, 8):
        v[i] = x[8 + i]
    for j in seq(0, 4):
        acc: f32[8] @ AVX2
        for i in seq(0, 8):
            acc[i] = 0.0
        for i in seq(0, 8):
            acc[i] += v[i] * b[j]
        for i in seq(0, 8):
            y[j, i] = acc[i]


def test_load_to_register_is_a_load_its_value_used_by_every_fma() -> None:
    p = _replace_all(
        reused,
        [
            ("i #0", mm256_loadu_ps_reg),
            ("i #0", mm256_setzero_ps),
            ("i #0", mm256_fmadd_ps_broadcast),
            ("i #0", mm256_storeu_ps),
        ],
    )
    f = p.compile()
    assert '__asm__("" : "+x"(v));' in f.c_source  # the register pin
    rng = np.random.default_rng(4)
    x, b = rng.standard_normal(16).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    y, want = np.zeros((4, 8), np.float32), np.zeros((4, 8), np.float32)
    f(x, b, y)
    reused.interpret(x, b, want)
    np.testing.assert_allclose(y, want, rtol=1e-6)
    assert np.array_equal(y, b[:, None] * x[None, 8:])  # one product per lane: exact


def test_masked_load_and_store_of_a_tail() -> None:
    @proc
    def tail(n: size, x: f32[n] @ DRAM, y: f32[n] @ DRAM):
        assert n <= 8
        t: f32[8] @ AVX2
        for i in seq(0, n):
            t[i] = x[i]
        for i in seq(0, n):
            y[i] = t[i]

    p = _replace_all(tail, [("i #0", mm256_maskload_ps), ("i #0", mm256_maskstore_ps)])
    f = p.compile()
    assert "_mm256_maskload_ps" in f.c_source and "_mm256_maskstore_ps" in f.c_source
    for n in range(1, 9):
        x = np.arange(1, n + 1, dtype=np.float32)
        y = np.zeros(n, np.float32)
        f(n, x, y)
        assert np.array_equal(x, y)


@proc
def column(K: size, A: f32[8, K] @ DRAM, y: f32[8] @ DRAM):
    t: f32[8] @ AVX2
    for i in seq(0, 8):
        t[i] = A[i, 0]
    for i in seq(0, 8):
        y[i] = t[i]


def test_replace_refuses_a_strided_load() -> None:
    # a column of A has stride K: _mm256_loadu_ps would read a row
    with pytest.raises(ReplaceAssertError, match=r"stride\(src, 0\) == 1"):
        replace(column, column.find_loop("i #0"), mm256_loadu_ps)


@proc
def dram_only(x: f32[8] @ DRAM, y: f32[8] @ DRAM):
    for i in seq(0, 8):
        y[i] = x[i]


def test_replace_refuses_the_wrong_memory() -> None:
    with pytest.raises(ReplaceMemoryError):
        replace(dram_only, dram_only.find_loop("i"), mm256_loadu_ps)


def test_broadcast_scalar_from_a_register_value() -> None:
    @proc
    def bs(s: f32 @ DRAM, y: f32[8] @ DRAM):
        a: f32[8] @ AVX2
        for i in seq(0, 8):
            a[i] = s
        for i in seq(0, 8):
            y[i] = a[i]

    p = _replace_all(bs, [("i #0", mm256_broadcast_ss_scalar), ("i #0", mm256_storeu_ps)])
    y = np.zeros(8, np.float32)
    p.compile()(np.array(2.5, np.float32), y)
    assert y.tolist() == [2.5] * 8


def _avx512_wrapper(names: list[str]) -> Proc:
    """A proc calling each instruction of ``names`` once: registers for their AVX512
    parameters, a 16-float DRAM tensor for the others, ``n`` (1 <= n < 16) for sizes."""
    calls: list[str] = []
    regs: list[str] = []
    env: dict[str, object] = {"DRAM": DRAM, "AVX512": x86.AVX512}
    for name in names:
        ins = env[name] = getattr(x86, name)
        args: list[str] = []
        for a in ins.ir().args:
            t = a.type
            if isinstance(t, ControlType):
                args.append("n")
            elif isinstance(t, DataType):
                args.append("s")
            elif isinstance(t, TensorType) and a.mem is x86.AVX512:
                regs.append(f"    r{len(regs)}: f32[16] @ AVX512")
                args.append(f"r{len(regs) - 1}[0:16]")
            else:
                assert isinstance(t, TensorType)
                e = t.shape[0]
                args.append(f"d[0:{e.value}]" if isinstance(e, Const) else "d[0:n]")
        calls.append(f"    {name}({', '.join(args)})")
    src = "\n".join(
        ["def w(n: size, d: f32[16] @ DRAM, s: f32 @ DRAM):", "    assert n < 16", *regs, *calls]
    )
    return _parse(src, env)


def test_every_avx512_instruction_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each AVX-512 template compiles (with -mavx512f here); the code runs only where the
    CPU has AVX-512 (tests/platforms/test_x86_memory_hooks.py runs a copy there)."""
    names = list(x86.avx512.__all__)
    assert len(names) >= 15
    monkeypatch.setenv("CURSCHED_CPU_FEATURES", ",".join(sorted(cpu_features() | {"avx512f"})))
    f = _avx512_wrapper(names).compile(extra_cflags=("-mavx512f",))
    for n in names:
        template = getattr(x86, n).ir().instr.c_template
        head = template.split("(")[0].split("= ")[-1]
        assert head in f.c_source, n


@proc
def masked_merge(n: size, x: f32[n] @ DRAM, y: f32[8] @ DRAM, z: f32[8] @ DRAM):
    assert n <= 8
    t: f32[8] @ AVX2
    for i in seq(0, 8):
        t[i] = y[i]
    for i in seq(0, n):
        t[i] = x[i]
    for i in seq(0, 8):
        z[i] = t[i]


def test_masked_load_keeps_the_other_lanes() -> None:
    """The body leaves lanes n..7 alone, so the instruction must too (maskload alone zeroes
    them): checked against the interpreter for every n."""
    p = _replace_all(
        masked_merge,
        [("i #0", mm256_loadu_ps), ("i #0", mm256_maskload_ps), ("i #0", mm256_storeu_ps)],
    )
    f = p.compile()
    y = np.arange(10, 18, dtype=np.float32)
    for n in range(1, 9):
        x = -np.arange(1, n + 1, dtype=np.float32)
        want, got = np.zeros(8, np.float32), np.zeros(8, np.float32)
        masked_merge.interpret(n, x, y, want)
        f(n, x, y, got)
        assert np.array_equal(want, got), (n, want, got)


@proc
def masked_update(n: size, y: f32[8] @ DRAM, s: f32[1] @ DRAM, z: f32[8] @ DRAM):
    assert n <= 8
    t: f32[8] @ AVX2
    b: f32[8] @ AVX2
    for i in seq(0, 8):
        t[i] = y[i]
    for i in seq(0, 8):
        b[i] = z[i]
    for i in seq(0, n):
        t[i] += b[i] * s[0]
    for i in seq(0, 8):
        z[i] = t[i]


def test_masked_fmadd_keeps_the_other_lanes() -> None:
    """``mm256_mask_fmadd_ps_broadcast`` updates lanes i < n only (the sgemm's masked edge
    tile): against the interpreter for every n, lanes n..7 keep y's values."""
    steps = [("i #0", mm256_loadu_ps), ("i #0", mm256_loadu_ps)]
    steps += [("i #0", x86.mm256_mask_fmadd_ps_broadcast), ("i #0", mm256_storeu_ps)]
    f = _replace_all(masked_update, steps).compile()
    assert "_mm256_blendv_ps(" in f.c_source
    y = np.arange(10, 18, dtype=np.float32)
    s = np.array([0.5], np.float32)
    for n in range(1, 9):
        want, got = -np.arange(8, dtype=np.float32), -np.arange(8, dtype=np.float32)
        masked_update.interpret(n, y, s, want)
        f(n, y, s, got)
        assert np.array_equal(want, got), (n, want, got)
        assert np.array_equal(got[n:], y[n:])


@proc
def add_into(x: f32[8] @ DRAM, y: f32[16] @ DRAM):
    t: f32[8] @ AVX2
    for i in seq(0, 8):
        t[i] = x[i]
    for i in seq(0, 8):
        y[i] += t[i]


def test_store_add_and_prefetch() -> None:
    """``mm256_storeu_add_ps`` is the body's ``y += t`` bit for bit; ``mm_prefetch`` goes in
    with ``insert_noop_call`` (it changes nothing) and compiles to ``_mm_prefetch``."""
    p = _replace_all(add_into, [("i #0", mm256_loadu_ps), ("i #0", x86.mm256_storeu_add_ps)])
    p, _ = insert_noop_call(p, p.body()[0].after(), x86.mm_prefetch, ["y[0:16]"])
    f = p.compile()
    assert "_mm_prefetch(" in f.c_source and "_mm256_add_ps(_mm256_loadu_ps(" in f.c_source
    rng = np.random.default_rng(2)
    x = rng.standard_normal(8).astype(np.float32)
    y0 = rng.standard_normal(16).astype(np.float32)
    want, got = y0.copy(), y0.copy()
    add_into.interpret(x, want)
    f(x, got)
    assert np.array_equal(want, got)
