"""sched/attention.py: runs as a file, golden output of the attention row and of flash
attention 2 (with AVX2 and with AVX-512 instructions), float32 checks against float64 numpy
with the issue's tolerances (interpreter and C), equivalence with the naive procs, patterns
only at the start."""

from __future__ import annotations

import re
import shutil
import sys
from types import ModuleType

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from cursched import Memory, Proc
from cursched.codegen.c.unit import generate_unit
from cursched.platforms.x86 import AVX512, cpu_features, isa
from cursched.testing import assert_equivalent

from .scripts import ROOT, assert_history_replays, load_module, run_file

SCRIPT = ROOT / "sched" / "attention.py"
HAS_AVX512 = set(AVX512.requires) <= cpu_features()
needs_avx512 = pytest.mark.skipif(not HAS_AVX512, reason="this CPU lacks AVX-512F")


def with_tile_asserts(p, **tiles):  # type: ignore[no-untyped-def]
    """benchmarks/online_softmax.py's ``with_tile_asserts``."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        bench = load_module(ROOT / "benchmarks" / "online_softmax.py", "softmax_bench_tiles")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return bench.with_tile_asserts(p, **tiles)


def test_runs_as_a_file() -> None:
    out = run_file(SCRIPT)
    assert out.startswith("def attention_row(Nk: size")
    assert "ok: the attention row and flash attention 2 match numpy" in out
    steps = {"avx512": 173, "avx2": 221, None: 106}[isa()]  # the default: the CPU's widest
    assert f"# schedule of attention: {steps} step(s)" in out


def test_attention_row(script: ModuleType, golden) -> None:  # type: ignore[no-untyped-def]
    p = script.schedule_row(script.attention_row)
    golden.check(p)
    assert str(p).count("for i in seq(0, Nk):") == 1  # one pass over the keys
    assert script.check_row(p, 40, 8, compiled=False, seed=3) == []
    assert script.check_row(p, 200, 32, compiled=True, seed=4) == []
    assert_equivalent(script.attention_row, p, sizes={"Nk": 12, "D": 4}, trials=2)


@pytest.fixture(scope="module")
def flash(script: ModuleType) -> Proc:
    """The schedule with AVX2 instructions (scheduled once for the module)."""
    p = script.schedule_flash(script.attention, vector="avx2")
    assert isinstance(p, Proc)
    return p


@pytest.fixture(scope="module")
def flash512(script: ModuleType) -> Proc:
    """The schedule with AVX-512 instructions (scheduled once for the module)."""
    p = script.schedule_flash(script.attention, vector="avx512")
    assert isinstance(p, Proc)
    return p


@pytest.fixture(params=["avx2", "avx512"])
def flash_isa(request: pytest.FixtureRequest, flash: Proc, flash512: Proc) -> Proc:
    """Each instruction set's schedule, for the tests that run it (skipped on a CPU without
    it)."""
    if request.param == "avx512" and not HAS_AVX512:
        pytest.skip("this CPU lacks AVX-512F")
    return flash if request.param == "avx2" else flash512


def test_default_is_the_widest_instruction_set_of_the_cpu(script: ModuleType) -> None:
    default = script.schedule_flash(script.attention)
    assert str(default) == str(script.schedule_flash(script.attention, vector=isa() or False))


def test_flash_attention(script: ModuleType, flash: Proc, golden) -> None:  # type: ignore[no-untyped-def]
    p = flash
    golden.check(p)
    text = str(p)
    # query tiles in parallel, key tiles inside; one correction per key tile
    assert text.index("for rt in par(0, Nq / 64):") < text.index("for io in seq(0, Nk / 64):")
    assert text.count("alpha[rr] = select(") == 1
    # no allocation in the key loop but vector registers; K and V staged once per call
    # before the query tiles (packed by micro-kernel, transposed by key tile), never in them
    keys = text.split("for io in seq(0, Nk / 64):", 1)[1].split("\n        for i", 1)[0]
    allocs = re.findall(r"(\w+): f32\[[^]]*\] @ (\w+)", keys)
    tiles = {"s_acc", "s_tail", "o_acc", "o_tail", "qt_v", "qt_tail", "w_v", "w_tail"}
    assert {a for a, _ in allocs} >= tiles | {"m_v", "exp_w"}
    assert {mem for _, mem in allocs} == {"AVX2"}
    assert text.count("Vt: f32[Nk / 64, D, 64] @ DRAM") == 1
    assert text.count("Kp: f32[Nk / 64, 16, D, 4] @ DRAM") == 1
    for copy in ("Vt[vo, i13, vi] = V[64 * vo + vi, i13]", "Kp[ko, kq, i14, kj] = K[64 * ko + "):
        assert text.index(copy) < text.index("for rt in par")
    tiles_loop = text.split("for rt in par", 1)[1]
    assert "Vt:" not in tiles_loop and "Kp:" not in tiles_loop and "Kt" not in text
    # the micro-kernels: 4 keys (head columns) x 3 vectors of rows in registers (rows 0-47
    # of a query tile), x 2 vectors (rows 48-63), the vectors of rows loaded once per step of
    # the reduction (k, ii) for all 4 broadcasts
    for acc, vec, vectors in (("s", "qt", 3), ("o", "w", 3), ("s", "qt", 2), ("o", "w", 2)):
        tile = "acc" if vectors == 3 else "tail"
        assert f"{acc}_{tile}: f32[4, {vectors}, 8] @ AVX2" in text
        assert f"{vec}_{'v' if vectors == 3 else 'tail'}: f32[{vectors}, 8] @ AVX2" in text
    qk = "mm256_fmadd_ps_broadcast(s_acc[ij, rv, 0:8], qt_v[rv, 0:8], Kp[io, iq, k, ij:ij + 1])"
    pv = "mm256_fmadd_ps_broadcast(o_acc[dj, rv, 0:8], w_v[rv, 0:8], Vt[io, 4 * dq + dj, ii:"
    assert qk in text and pv in text
    # (Qt by vectors of rows: Qt[row / 8, d, row % 8], one vector of rows a window of 8)
    for step, vec, n, operand in (
        ("k", "qt_v", 3, r"Qt\[3 \* rq \+ \1, k, 0:8\]\)"),
        ("ii", "w_v", 3, r"w\[ii, 24 \* rq \+ 8 \* \1:"),
        ("k", "qt_tail", 2, r"Qt\[2 \* rq \+ \1 \+ 6, k, 0:8\]\)"),
        ("ii", "w_tail", 2, r"w\[ii, 16 \* rq \+ 8 \* \1 \+ 48:"),
    ):
        load = (
            rf"for {step} in seq\(0, \w+\):\n\s+{vec}: f32\[{n}, 8\] @ AVX2\n\s+for (\w+) in"
            rf" seq\(0, {n}\):\n\s+mm256_loadu_ps_reg\({vec}\[\1, 0:8\], {operand}"
        )
        assert re.search(load, text), load
    assert text.count("Qt: f32[8, D, 8] @ DRAM") == 1
    for op in ("mm256_max_ps(m_v[rv, 0:8]", "mm256_sub_guarded_ps(", "mm256_exp_ps(exp_w"):
        assert op in text
    assert script.check_flash(p, 64, 64, 3, compiled=False, seed=1) == []
    for d in (64, 67, 3):  # head columns past a multiple of 4 in the tail loop
        assert script.check_flash(p, 128, 192, d, compiled=True, seed=2) == []
    assert_equivalent(script.attention, p, sizes={"Nq": 64, "Nk": 64, "D": 3}, trials=1)


def test_flash_attention_avx512(script: ModuleType, flash512: Proc, golden) -> None:  # type: ignore[no-untyped-def]
    p = flash512
    golden.check(p)
    text = str(p)
    assert text.index("for rt in par(0, Nq / 64):") < text.index("for io in seq(0, Nk / 64):")
    assert text.count("alpha[rr] = select(") == 1
    keys = text.split("for io in seq(0, Nk / 64):", 1)[1].split("\n        for i", 1)[0]
    allocs = re.findall(r"(\w+): f32\[[^]]*\] @ (\w+)", keys)
    assert {a for a, _ in allocs} >= {"s_acc", "o_acc", "qt_v", "w_v", "m_v", "exp_w"}
    assert {mem for _, mem in allocs} == {"AVX512"}
    # a query tile of 64 rows is one micro-kernel tile: 4 keys (head columns) x 4 vectors of
    # 16 rows, 16 accumulators, no tile of leftover rows
    for name in ("s_acc", "o_acc"):
        assert f"{name}: f32[4, 4, 16] @ AVX512" in text
    for name in ("qt_v", "w_v"):
        assert f"{name}: f32[4, 16] @ AVX512" in text
    assert "s_tail" not in text and "o_tail" not in text
    assert text.count("Kp: f32[Nk / 64, 16, D, 4] @ DRAM") == 1
    assert text.count("Qt: f32[4, D, 16] @ DRAM") == 1  # Qt[row / 16, d, row % 16]
    qk = "mm512_fmadd_ps_broadcast(s_acc[ij, rv, 0:16], qt_v[rv, 0:16], Kp[io, iq, k, ij:ij + 1])"
    pv = "mm512_fmadd_ps_broadcast(o_acc[dj, rv, 0:16], w_v[rv, 0:16], Vt[io, 4 * dq + dj, ii:"
    assert qk in text and pv in text
    for op in (
        "mm512_loadu_ps_reg(qt_v[i0, 0:16], Qt[4 * rq + i0, k, 0:16])",
        "mm512_max_ps(m_v[rv, 0:16]",
        "mm512_sub_guarded_ps(",
        "mm512_exp_ps(exp_w",
        "mm512_acc_ps(l_v",
    ):
        assert op in text, op
    assert "mm256" not in text and "AVX2" not in text
    assert script.check_flash(p, 64, 64, 3, compiled=False, seed=1) == []
    if HAS_AVX512:
        for d in (64, 67, 3):  # head columns past a multiple of 4 in the tail loop
            assert script.check_flash(p, 128, 192, d, compiled=True, seed=2) == []
    assert_equivalent(script.attention, p, sizes={"Nq": 64, "Nk": 64, "D": 3}, trials=1)


@pytest.mark.parametrize("vector", ["avx2", "avx512"])
def test_flash_attention_other_tiles(script: ModuleType, vector: str) -> None:
    if isa() is None or (vector == "avx512" and not HAS_AVX512):
        pytest.skip(f"this CPU lacks {vector}")
    base = with_tile_asserts(script.attention, Nq=16, Nk=16)
    q = script.schedule_flash(base, key_tile=16, query_tile=16, vector=vector)
    assert "for rr in seq(0, 16):" in str(q) and "for iq in seq(0, 4):" in str(q)
    assert script.check_flash(q, 32, 48, 16, compiled=True, seed=5) == []
    assert_equivalent(base, q, sizes={"Nq": 16, "Nk": 32, "D": 5}, trials=1)
    # a query tile of 32 rows: with AVX2 a 24-row tile, then one of 8 rows (one vector);
    # with AVX-512 one tile of two vectors
    r = script.schedule_flash(script.attention, key_tile=64, query_tile=32, vector=vector)
    tile = "s_tail: f32[4, 1, 8] @ AVX2" if vector == "avx2" else "s_acc: f32[4, 2, 16] @ AVX512"
    assert tile in str(r)
    assert script.check_flash(r, 64, 128, 19, compiled=True, seed=6) == []


def test_flash_attention_independent_of_the_thread_count(
    script: ModuleType, flash_isa: Proc
) -> None:
    f = flash_isa.compile()
    x = script.inputs(256, 128, 64, seed=7)  # 4 query tiles
    outs = []
    for threads in (1, 2, 3):
        o, lse = np.zeros((256, 64), np.float32), np.zeros(256, np.float32)
        with threadpool_limits(limits=threads, user_api="openmp"):
            f(256, 128, 64, x["Q"], x["K"], x["V"], o, lse)
        outs.append((o, lse))
    assert any(i["user_api"] == "openmp" for i in threadpool_info())  # the limits applied
    for o, lse in outs[1:]:
        assert np.array_equal(o, outs[0][0]) and np.array_equal(lse, outs[0][1])


def special_inputs(script: ModuleType) -> dict[str, np.ndarray]:
    """Inputs whose scores have leading -inf (rows 0-31), +inf (32-47), NaN (row 50), an
    infinite value (row 5 of V) and one row of all -inf scores (row 60)."""
    x = script.inputs(64, 128, 16, seed=3)
    q, k, v = x["Q"], x["K"], x["V"]
    k[:, 0] = np.abs(k[:, 0]) + 0.1
    k[0:3, 1] = -np.inf  # keys 0-2: -inf scores for rows with q[:, 1] > 0
    q[:, 1] = np.abs(q[:, 1]) + 0.1
    q[32:48, 1] *= -1  # +inf scores there
    q[50, 2] = np.nan
    v[5, 4] = np.inf
    q[60, :] = 0.0
    q[60, :2] = (-np.inf, 1.0)  # every score of row 60 is -inf (k[:, 0] > 0, k[:3, 1] = -inf)
    return x


def test_flash_attention_infinities_and_nan_as_unfused(script: ModuleType, flash_isa: Proc) -> None:
    x = special_inputs(script)
    outs = []
    for p in (script.attention, flash_isa):
        o, lse = np.zeros((64, 16), np.float32), np.zeros(64, np.float32)
        p.compile()(64, 128, 16, x["Q"], x["K"], x["V"], o, lse)
        outs.append((o, lse))
    (o0, l0), (o1, l1) = outs
    with np.errstate(invalid="ignore"):
        assert np.isfinite(o0[0:32, :4]).all()  # the leading -inf rows stay finite
    assert np.isnan(o0[50]).all() and np.isnan(o0[32:48]).all()
    np.testing.assert_allclose(o1, o0, rtol=1e-5, atol=1e-6, equal_nan=True)
    # the documented difference: the all -inf row sums nothing (l = 0) instead of NaN
    assert np.isnan(l0[60]) and l1[60] == -np.inf
    keep = np.arange(64) != 60
    np.testing.assert_allclose(l1[keep], l0[keep], rtol=1e-5, atol=1e-6, equal_nan=True)


def test_patterns_only_at_the_start() -> None:
    text = SCRIPT.read_text(encoding="utf-8")
    body = text.split("def schedule_flash", 1)[1].split("def inputs", 1)[0]
    lines = [ln for ln in body.splitlines() if re.search(r"\b(find\w*|at)\(", ln)]
    assert len(lines) == 3 and all("p.find" in ln for ln in lines), lines
    steps = body.split("# 1.", 1)[1]
    assert not re.search(r"\b(find\w*|at)\(", steps)


def test_histories_replay(script: ModuleType, flash: Proc, flash512: Proc) -> None:
    # the instructions and memories the history names
    instrs = {
        k: v
        for k, v in vars(script).items()
        if (isinstance(v, Proc) and v.is_instr()) or (isinstance(v, type) and issubclass(v, Memory))
    }
    for name, sched in (
        ("attention_row", script.schedule_row),
        ("attention", lambda _: flash),
        ("attention", lambda _: flash512),
    ):
        base = getattr(script, name)
        assert_history_replays(sched(base), **{name: base}, **instrs)


def test_vector_instructions_in_the_inner_loops_of_the_c(flash: Proc) -> None:
    c = generate_unit("fa", [flash.ir()]).c_source
    # the micro-kernels' bodies: fused multiply-adds with a broadcast, tiles of registers
    for call in (
        "s_acc[ij][rv] = _mm256_fmadd_ps(qt_v[rv], _mm256_broadcast_ss((Kp + ",
        "o_acc[dj][rv] = _mm256_fmadd_ps(w_v[rv], _mm256_broadcast_ss((Vt + ",
        '_mm256_loadu_ps((Qt + ((3 * rq + i0) * (8 * D) + k * 8))); __asm__("" : "+x"(qt_v[i0]));',
        'w_v[qv] = _mm256_loadu_ps((w + (ii * 64 + 24 * rq + 8 * qv))); __asm__("" : "+x"(w_v[qv]));',
        "m_v[rv] = _mm256_blendv_ps(_mm256_max_ps(m_v[rv], score_v)",
        "exp_w = cs_exp256_ps(arg_w);",
        "__m256 s_acc[4][3];",
        "__m256 o_acc[4][3];",
        "__m256 s_tail[4][2];",
        "__m256 o_tail[4][2];",
    ):
        assert call in c, call
    assert "cs_fmax_float(" not in c  # no scalar running max left
    assert c.count("expf(") == 1  # the one scalar exp: the correction, once per tile and row


def _inner_loops() -> ModuleType:
    return load_module(ROOT / "tools" / "inner_loops.py", "inner_loops_tool")


@pytest.mark.skipif(shutil.which("objdump") is None, reason="needs objdump (binutils)")
@pytest.mark.skipif(isa() is None, reason="this CPU lacks AVX2+FMA")
def test_micro_kernels_keep_their_operands_in_registers(flash: Proc) -> None:
    # the compiled inner loops of QK^T and PV (whole tiles, then the tiles of rows 48-63):
    # per step 12 (8) FMAs, 4 broadcasts (the keys or head columns) and 3 (2) vector loads
    # (the rows), no store (no accumulator in memory); gcc folding the rows' loads into the
    # FMAs read a vector per FMA instead
    loops = _inner_loops().fma_loops(str(flash.compile().lib_path))
    kernels = [lp for lp in loops if lp.broadcasts == 4 and lp.stores == 0]
    counts = sorted((lp.fmas, lp.vector_loads) for lp in kernels)
    assert counts == [(8, 2), (8, 2), (12, 3), (12, 3)], "\n".join(lp.summary() for lp in loops)


def test_avx512_instructions_in_the_inner_loops_of_the_c(flash512: Proc) -> None:
    c = generate_unit("fa", [flash512.ir()]).c_source
    for call in (
        "s_acc[ij][rv] = _mm512_fmadd_ps(qt_v[rv], _mm512_set1_ps(*(Kp + ",
        "o_acc[dj][rv] = _mm512_fmadd_ps(w_v[rv], _mm512_set1_ps(*(Vt + ",
        "_mm512_loadu_ps((Qt + ((4 * rq + i0) * (16 * D) + k * 16)));"
        ' __asm__("" : "+v"(qt_v[i0]));',
        '_mm512_loadu_ps((w + (ii * 64 + 64 * rq + 16 * qv))); __asm__("" : "+v"(w_v[qv]));',
        "m_v[rv] = _mm512_mask_mov_ps(_mm512_max_ps(m_v[rv], score_v)",
        "exp_w = cs_exp512_ps(arg_w);",
        "__m512 s_acc[4][4];",
        "__m512 o_acc[4][4];",
    ):
        assert call in c, call
    assert "cs_fmax_float(" not in c and "__m256" not in c
    assert c.count("expf(") == 1  # the one scalar exp: the correction, once per tile and row


@pytest.mark.skipif(shutil.which("objdump") is None, reason="needs objdump (binutils)")
@needs_avx512
def test_avx512_micro_kernels_keep_their_operands_in_registers(flash512: Proc) -> None:
    # the compiled inner loops of QK^T and PV: per step 16 FMAs, 4 broadcasts (the keys or
    # head columns, folded into the FMAs' memory operands) and 4 vector loads (the rows), no
    # store (no accumulator in memory)
    loops = _inner_loops().fma_loops(str(flash512.compile().lib_path))
    kernels = [lp for lp in loops if lp.broadcasts == 4 and lp.stores == 0]
    counts = sorted((lp.fmas, lp.vector_loads) for lp in kernels)
    assert counts == [(16, 4), (16, 4)], "\n".join(lp.summary() for lp in loops)


@needs_avx512
def test_avx512_and_avx2_kernels_are_bitwise_equal(
    script: ModuleType, flash: Proc, flash512: Proc
) -> None:
    # the same reductions in the same order (each score over the head dimension, each row's
    # max, sum and output over the keys, each product fused into its add), only 16 rows per
    # instruction instead of 8: the outputs are the same bits
    x = script.inputs(128, 192, 67, seed=8)
    outs = []
    for p in (flash, flash512):
        o, lse = np.zeros((128, 67), np.float32), np.zeros(128, np.float32)
        p.compile()(128, 192, 67, x["Q"], x["K"], x["V"], o, lse)
        outs.append((o, lse))
    assert np.array_equal(outs[0][0], outs[1][0]) and np.array_equal(outs[0][1], outs[1][1])
