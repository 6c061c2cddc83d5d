"""sched/online_softmax.py: runs as a file, golden output of the derived procs (with AVX2 and
with AVX-512 instructions), float32 checks against a float64 numpy reference with the issue's
tolerances (rows starting with -inf, rows of equal values), equivalence with the two-pass
procs, the two instruction sets bitwise equal, and one pattern only."""

from __future__ import annotations

import re
import sys
from types import ModuleType

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from cursched import Memory, Proc
from cursched.codegen.c.unit import generate_unit
from cursched.platforms.x86 import AVX512, cpu_features, isa
from cursched.testing import assert_equivalent

from .scripts import ROOT, assert_history_replays, load_module, run_file

SCRIPT = ROOT / "sched" / "online_softmax.py"
HAS_AVX512 = set(AVX512.requires) <= cpu_features()
needs_avx512 = pytest.mark.skipif(not HAS_AVX512, reason="this CPU lacks AVX-512F")


def test_runs_as_a_file() -> None:
    out = run_file(SCRIPT)
    assert out.startswith("def softmax_denominator(R: size")
    assert "ok: denominator, softmax and log-sum-exp match numpy" in out


@pytest.fixture(scope="module")
def scheduled(script: ModuleType) -> dict[str, Proc]:
    """The three procs scheduled with AVX2 instructions, once for the module."""
    return {n: script.schedule(getattr(script, n), vector="avx2") for n in NAMES}


@pytest.fixture(scope="module")
def scheduled512(script: ModuleType) -> dict[str, Proc]:
    """The three procs scheduled with AVX-512 instructions, once for the module."""
    return {n: script.schedule(getattr(script, n), vector="avx512") for n in NAMES}


@pytest.fixture(params=["avx2", "avx512"])
def scheduled_isa(request: pytest.FixtureRequest, scheduled, scheduled512) -> dict[str, Proc]:  # type: ignore[no-untyped-def]
    """Each instruction set's procs, for the tests that run them (skipped on a CPU without
    it)."""
    if request.param == "avx512" and not HAS_AVX512:
        pytest.skip("this CPU lacks AVX-512F")
    return scheduled if request.param == "avx2" else scheduled512  # type: ignore[no-any-return]


NAMES = ("softmax_denominator", "softmax", "logsumexp")


def test_default_is_the_widest_instruction_set_of_the_cpu(script: ModuleType) -> None:
    default = script.schedule(script.softmax)
    assert str(default) == str(script.schedule(script.softmax, vector=isa() or False))


@pytest.mark.parametrize("name", NAMES)
def test_golden_numpy_equivalent(script: ModuleType, scheduled, golden, name: str) -> None:  # type: ignore[no-untyped-def]
    p, q = getattr(script, name), scheduled[name]
    golden.check(q, name=name)
    text = str(q)
    assert "for rt in par(0, R / 8):" in text and "for jo in seq(0, C / 64):" in text
    assert "alpha = alpha" not in text and "xt: f32[64, 8] @ DRAM" in text
    assert "mm256_max_ps(m_v[0:8], m_v[0:8], x_m[0:8])" in text
    assert "mm256_exp_ps(exp_s[0:8], arg_s[0:8])" in text
    if name == "softmax":  # the normalisation along the rows, 8 columns at a time
        assert "mm256_div_ps(y_v[0:8], exp_y[0:8], s_y[0:8])" in text
    assert script.check(q, script.rows(8, 64, 1), compiled=False) == []
    for seed in (0, 1):
        assert script.check(q, script.rows(16, 192, seed), compiled=True) == []
    assert_equivalent(p, q, sizes={"R": 8, "C": 64}, trials=1)


@pytest.mark.parametrize("name", NAMES)
def test_golden_avx512(script: ModuleType, scheduled512, golden, name: str) -> None:  # type: ignore[no-untyped-def]
    p, q = getattr(script, name), scheduled512[name]
    golden.check(q, name=name)
    text = str(q)
    # 16-row tiles; R % 8 == 0 does not prove 16 divides R: the rows past the last whole
    # tile (0 or 8) in 8-row tiles of AVX2 code
    assert "for rt in par(0, R / 16):" in text and "for rq in seq(0, R % 16 / 8):" in text
    main, tail = text.split("for rq in seq(0, R % 16 / 8):")
    assert "xt: f32[64, 16] @ DRAM" in main and "xt_t: f32[64, 8] @ DRAM" in tail
    assert "mm512_transpose16_ps_prefetch(xt[16 * io:16 * io + 16, 0:16], x[16 * rt:" in text
    assert "mm512_max_ps(m_v[0:16], m_v[0:16], x_m[0:16])" in text
    assert "mm512_sub_guarded_ps(arg_s[0:16], x_s[0:16], m_s[0:16])" in text
    assert "mm512_exp_ps(exp_s[0:16], arg_s[0:16])" in text
    assert "mm512_acc_ps(s_v[0:16], exp_s[0:16])" in text
    if name == "softmax":  # the normalisation along the rows, 16 columns at a time
        assert "mm512_div_ps(y_v[0:16], exp_y[0:16], s_y[0:16])" in text
        assert "mm256_div_ps(y_v_t[0:8], exp_y_t[0:8], s_y_t[0:8])" in tail
    assert "mm256" not in main and "AVX2" not in main
    assert "mm512" not in tail and "mm256_exp_ps(exp_s_t[0:8], arg_s_t[0:8])" in tail
    assert script.check(q, script.rows(16, 64, 1), compiled=False) == []
    assert script.check(q, script.rows(8, 64, 1), compiled=False) == []  # the tail only
    if HAS_AVX512:
        for r, seed in ((32, 0), (24, 1), (8, 2)):  # whole tiles; a tile and a tail; a tail
            assert script.check(q, script.rows(r, 192, seed), compiled=True) == []
    assert_equivalent(p, q, sizes={"R": 24, "C": 64}, trials=1)


def test_avx512_without_a_tail_where_the_asserts_prove_whole_tiles(script: ModuleType) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        bench = load_module(ROOT / "benchmarks" / "online_softmax.py", "softmax_bench_rows16")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    base = bench.with_tile_asserts(script.softmax, R=16)
    q = script.schedule(base, vector="avx512")
    assert "for rt in par(0, R / 16):" in str(q) and "seq(0, R % 16)" not in str(q)
    if HAS_AVX512:
        assert script.check(q, script.rows(32, 128, 2), compiled=True) == []
    assert_equivalent(base, q, sizes={"R": 16, "C": 64}, trials=1)


@needs_avx512
@pytest.mark.parametrize("r", [48, 40])
def test_the_instruction_sets_agree_bitwise(script: ModuleType, scheduled, scheduled512, r) -> None:  # type: ignore[no-untyped-def]
    """The same operations in the same order, each lane one row (the vector exps are the same
    value on every float), so the same bits; also for the rows past the last 16-row tile
    (40 rows: 8 of them), which run AVX2's code."""
    x = script.rows(r, 256, 7)
    x[2, 5], x[3, 7], x[4, 64:], x[5, :] = np.inf, np.nan, -np.inf, -np.inf
    x[6, :] = np.float32(-1e-40)  # subnormal
    x[7, ::3] = np.float32(88.5)  # near exp's overflow
    for name in NAMES:
        outs = []
        for procs in (scheduled, scheduled512):
            args = {
                "softmax": [np.zeros_like(x)],
                "softmax_denominator": [np.zeros(r, np.float32), np.zeros(r, np.float32)],
                "logsumexp": [np.zeros(r, np.float32)],
            }[name]
            with np.errstate(all="ignore"):
                procs[name].compile()(r, 256, x, *args)
            outs.append(args)
        for a, b in zip(*outs, strict=True):
            np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))


def test_avx512_c_calls_the_instructions_in_the_inner_loops(scheduled512) -> None:  # type: ignore[no-untyped-def]
    c = generate_unit("sm512", [scheduled512["softmax"].ir()]).c_source
    for call in (
        "cs_transpose16_ps((xt + 16 * io * 16), 16, (x + (16 * rt * C + 64 * jo + 16 * io)), C, 128);",
        "m_v = _mm512_mask_mov_ps(_mm512_max_ps(m_v, x_m), _mm512_cmp_ps_mask(x_m, x_m, _CMP_UNORD_Q)",
        "exp_s = cs_exp512_ps(arg_s);",
        "s_v = _mm512_add_ps(s_v, exp_s);",
        "exp_y = cs_exp512_ps(arg_y);",
        "y_v = _mm512_div_ps(exp_y, s_y);",
    ):
        assert call in c, call
    body = c.split("void softmax(", 1)[1]
    main, tail = body.split("for (int_fast64_t rq = 0; rq < R % 16 / 8; rq++)", 1)
    assert "cs_fmax_float(" not in body  # no scalar running max left
    assert main.count("expf(") == 1  # the one scalar exp there: the correction
    # the rows past the last 16-row tile: AVX2's 8-row code
    assert "exp_s_t = cs_exp256_ps(arg_s_t);" in tail and "_mm512" not in tail


def test_without_vector_instructions(script: ModuleType) -> None:
    q = script.schedule(script.softmax, vector=False)
    assert "mm256" not in str(q) and "for rt in par(0, R / 8):" in str(q)
    assert script.check(q, script.rows(16, 128), compiled=True) == []


def test_vector_instructions_in_the_inner_loops_of_the_c(scheduled) -> None:  # type: ignore[no-untyped-def]
    c = generate_unit("sm", [scheduled["softmax"].ir()]).c_source
    # the column loops' bodies: vector max, the guarded exponent, exp, add, divide
    for call in (
        "m_v = _mm256_blendv_ps(_mm256_max_ps(m_v, x_m)",
        "exp_s = cs_exp256_ps(arg_s);",
        "s_v = _mm256_add_ps(s_v, exp_s);",
        "exp_y = cs_exp256_ps(arg_y);",
        "y_v = _mm256_div_ps(exp_y, s_y);",
    ):
        assert call in c, call
    assert "cs_fmax_float(" not in c  # no scalar running max left
    assert c.count("expf(") == 1  # the one scalar exp: the correction, once per tile and row


def test_infinities_and_nan_as_the_unfused_program(script: ModuleType, scheduled_isa) -> None:  # type: ignore[no-untyped-def]
    scheduled = scheduled_isa
    x = script.rows(16, 128, 3)
    x[2, 5] = np.inf  # a row with +inf: NaN in both
    x[3, 7] = np.nan  # a row with NaN: NaN in both
    x[4, 64:] = -np.inf  # a row ending with -inf
    x[5, :] = -np.inf  # the documented difference: all -inf
    for name in NAMES:
        outs = []
        for p in (getattr(script, name), scheduled[name]):
            args = {
                "softmax": [np.zeros_like(x)],
                "softmax_denominator": [np.zeros(16, np.float32), np.zeros(16, np.float32)],
                "logsumexp": [np.zeros(16, np.float32)],
            }[name]
            with np.errstate(all="ignore"):
                p.compile()(16, 128, x, *args)
            outs.append(args)
        keep = np.arange(16) != 5
        for a, b in zip(*outs, strict=True):
            np.testing.assert_allclose(b[keep], a[keep], rtol=2e-6, atol=1e-7, equal_nan=True)
        if name == "softmax_denominator":  # unfused: NaN (exp(-inf - -inf)); fused: 0
            assert np.isnan(outs[0][1][5]) and outs[1][1][5] == 0.0
        if name == "softmax":
            assert np.isnan(outs[0][0][2]).all() and np.isfinite(outs[1][0][4]).all()


def test_results_independent_of_the_thread_count(scheduled_isa) -> None:  # type: ignore[no-untyped-def]
    f = scheduled_isa["softmax"].compile()
    x = np.random.default_rng(4).standard_normal((40, 256)).astype(np.float32)  # 5 or 2 tiles
    outs = []
    for threads in (1, 2, 3):
        y = np.zeros_like(x)
        with threadpool_limits(limits=threads, user_api="openmp"):
            f(40, 256, x, y)
        outs.append(y)
    assert all(np.array_equal(y, outs[0]) for y in outs[1:])


def test_patterns_only_at_the_start() -> None:
    text = SCRIPT.read_text(encoding="utf-8")
    body = text.split("def schedule", 1)[1].split("def _lane_operand", 1)[0]
    head, steps = body.split("# 1.", 1)
    assert len(re.findall(r"\b(find\w*|at)\(", head)) == 4
    assert not re.search(r"\b(find\w*|at)\(", steps)


def test_histories_replay(script: ModuleType, scheduled, scheduled512) -> None:  # type: ignore[no-untyped-def]
    env = {
        k: v
        for k, v in vars(script).items()
        if (isinstance(v, Proc) and v.is_instr()) or (isinstance(v, type) and issubclass(v, Memory))
    }
    for name in NAMES:
        base = getattr(script, name)
        assert_history_replays(scheduled[name], **{name: base}, **env)
        assert_history_replays(scheduled512[name], **{name: base}, **env)
