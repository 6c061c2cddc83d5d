"""sched/sgemm_x86.py: the BLIS-style schedule is right (numpy at odd sizes, interpreter at
small ones), its micro-kernel C is vector instructions with no scalar inner loop, the ISA
follows the CPU, and a stride that does not hold keeps ``replace`` from using it."""

from __future__ import annotations

import re
from types import ModuleType

import numpy as np
import pytest

from cursched import Proc
from cursched.analysis.bounds import check_bounds
from cursched.codegen.c import generate_unit
from cursched.frontend import parse_source
from cursched.ir.memory import DRAM
from cursched.platforms.x86 import cpu_features
from cursched.primitives.calls.replace import ReplaceAssertError, replace
from cursched.testing import assert_equivalent

from .scripts import ROOT, run_file

SCRIPT = ROOT / "sched" / "sgemm_x86.py"
pytestmark = pytest.mark.skipif(
    not {"avx2", "fma"} <= cpu_features(), reason="this CPU lacks AVX2+FMA"
)


@pytest.fixture(scope="module")
def scheduled(script: ModuleType) -> Proc:
    return script.schedule(script.sgemm, script.AVX2_TARGET)


@pytest.fixture(scope="module")
def scheduled512(script: ModuleType) -> Proc:
    """The AVX-512 schedule (scheduling needs no AVX-512; compiling it does)."""
    return script.schedule(script.sgemm, script.AVX512_TARGET)


def test_runs_as_a_file() -> None:
    out = run_file(SCRIPT)
    assert out.startswith("def sgemm(M: size")
    assert "ok: matches numpy" in out


def test_final_proc_golden(scheduled: Proc, golden) -> None:  # type: ignore[no-untyped-def]
    golden.check(scheduled)


def test_matches_numpy_at_odd_sizes(script: ModuleType, scheduled: Proc) -> None:
    sizes = [(1, 1, 1), (5, 15, 255), (6, 16, 256), (7, 17, 257), (150, 33, 513), (97, 200, 64)]
    assert script.check(scheduled, sizes) <= 1e-5


@pytest.mark.parametrize(
    "m, n, k",
    [
        (7, 17, 385),  # a whole 6 x 16 tile, both edges, a K block and a remainder (384 + 1)
        (5, 7, 3),  # no whole tile: the bottom edge's masked kernel only
        (13, 45, 2),  # 16 + 16 + 8 + 5 columns, 6 + 6 + 1 rows: every edge kernel
        (6, 24, 1),  # right edge of exactly one 8-wide strip, no masked part, no bottom edge
    ],
)
def test_interpreter_agrees_with_the_compiled_code(scheduled: Proc, m: int, n: int, k: int) -> None:
    rng = np.random.default_rng(5)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c1, c2 = np.full((m, n), np.nan, np.float32), np.full((m, n), np.nan, np.float32)
    scheduled.interpret(m, n, k, a, b, c1)
    scheduled.compile()(m, n, k, a, b, c2)
    np.testing.assert_allclose(c1, c2, rtol=1e-5, atol=1e-5)


def test_schedule_is_equivalent_to_the_plain_proc(script: ModuleType, scheduled: Proc) -> None:
    assert_equivalent(script.sgemm, scheduled, trials=1, sizes={"M": 7, "N": 17, "K": 3})


def _function(c: str, name: str) -> str:
    start = c.index(f"void {name}(")
    return c[start : c.index("\n}\n", start)]


def test_microkernel_is_vector_code_without_a_scalar_inner_loop(scheduled: Proc) -> None:
    c = scheduled.compile().c_source
    for name in ("ukernel_packed_avx2",):
        body = _function(c, name)
        assert body.count("_mm256_fmadd_ps(") == 12, name  # the 6 x 2 register tile
        assert body.count("_mm256_loadu_ps(") == 12 + 2 and body.count("_mm256_storeu_ps(") == 12
        assert "__m256 Ct[6][2];" in body
        # the tile accumulates from zero, C's 6 rows prefetched before the k loop (both lines
        # of each row: numpy's C is not 64-byte aligned), added at the end (BLIS's kernel)
        head = body[: body.index("for (")]
        assert head.count("_mm256_setzero_ps()") == 12 and head.count("_mm_prefetch(") == 12
        assert head.count(") + 60, _MM_HINT_T0)") == 6
        assert body.count("_mm256_add_ps(_mm256_loadu_ps(") == 12
        assert len(re.findall(r"\bfor \(", body)) == 1, "only the k loop is left"
        assert "+=" not in body and "*restrict" in body.split("{", 1)[0]
    # the edges: masked registers where a row is shorter than one, each row of the tile its
    # own registers (guarded by ``if i < MV``), no scalar loop
    lanes = {"ukernel_edge_16_avx2": 12, "ukernel_edge_8_avx2": 6, "ukernel_edge_masked_avx2": 6}
    for name, fmas in lanes.items():
        body = _function(c, name)
        assert body.count("_mm256_fmadd_ps(") == fmas, name
        assert len(re.findall(r"\bfor \(", body)) == 1, "only the k loop is left"
        assert "+=" not in body and "Ct[i" not in body, name
        assert body.count("if (5 < MV)") == 3, name  # the load, the update, the store
    masked = _function(c, "ukernel_edge_masked_avx2")
    assert (
        masked.count("_mm256_maskload_ps(") == 6 + 1 and masked.count("_mm256_maskstore_ps(") == 6
    )
    assert "_mm256_loadu_ps(" not in masked and "_mm256_storeu_ps(" not in masked
    # the packed buffers are allocated once, outside every loop (the K remainder's and the
    # right edge's in their ``if``, one level down), and kept between calls (DRAM_KEPT)
    body = _function(c, "sgemm")
    assert "malloc(" not in body and "free(" not in body
    allocs = [ln for ln in body.splitlines() if ln.lstrip().startswith("float *restrict")]
    names = sorted(ln.split("restrict ")[1].split(" ")[0] for ln in allocs)
    assert names == ["Ap", "Aq", "At", "Au", "Be", "Bp", "Bq"], allocs
    assert all(ln.startswith(("    float *", "        float *")) for ln in allocs), allocs
    assert body.count("cs_keep(&cs_kept_") == 7


def test_no_scalar_update_of_c_is_left(scheduled: Proc) -> None:
    """Every update of C, edges included, is a micro-kernel call: no scalar edge loop."""
    text = str(scheduled)
    assert "+=" not in text
    calls = set(re.findall(r"(ukernel_\w+)\(", text))
    assert calls == {
        "ukernel_packed_first_avx2", "ukernel_packed_avx2", "ukernel_edge_16_avx2",
        "ukernel_edge_8_avx2", "ukernel_edge_masked_avx2",
    }  # fmt: skip


def test_whole_tiles_are_not_zeroed_by_a_pass(scheduled: Proc, scheduled512: Proc) -> None:
    """C is zeroed only right of the whole panels and below the whole row tiles: the whole
    tiles get their first K block's kernel, which writes C: the remainder's (it runs before
    the K blocks) when ``K % KC > 0``, else the first K block's (``ko = 0``, its own copy)."""
    for p, (mr, nr, mc, kc) in (
        (scheduled, (6, 16, 192, 384)),
        (scheduled512, (14, 32, 168, 1024)),
    ):
        lines = str(p).splitlines()
        top = [ln for ln in lines if ln.startswith("    for i in seq(")]
        assert top == [
            f"    for i in seq(0, {mc} * (M / {mc})):",
            f"    for i in seq({mc} * (M / {mc}), {mr} * (M / {mr})):",
            f"    for i in seq({mr} * (M / {mr}), M):",
        ], top
        zeros = [i for i, ln in enumerate(lines) if ln.endswith("C[i, j] = 0.0")]
        assert [lines[i - 1].strip() for i in zeros[:2]] == [
            f"for j in seq({nr} * (N / {nr}), N):"
        ] * 2
        assert lines[zeros[2] - 1].strip() == "for j in seq(0, N):"
        assert len(zeros) == 3, "no other zeroing"
        first = lines.index(f"    if K % {kc} > 0:")
        orelse = lines.index("    else:", first)
        end = next(i for i in range(orelse + 1, len(lines)) if re.match(r"    \S", lines[i]))
        for lo, hi, start in ((first, orelse, "0"), (orelse, end, "1")):
            part = lines[lo:hi]
            blocks = part.index(f"        for ko in seq({start}, K / {kc}):")
            firsts = [i for i, ln in enumerate(part) if "_first_" in ln]
            assert firsts and max(firsts) < blocks, "the first K block's kernels come first"


@pytest.mark.parametrize(
    "isa, kind", [("avx2", "packed"), ("avx512", "packed"), ("avx512", "edge")]
)
def test_first_block_kernels_write_c_without_reading_it(
    script: ModuleType, isa: str, kind: str
) -> None:
    """The first K block's kernels (``C = A @ B`` on the tile: a zeroing, then the product)
    store their registers from zero: no load of C, no add; compiled, they equal the
    interpreted plain version with C's window full of NaN (never read), the rest of the
    bigger array untouched; the edge kernel at every row count."""
    t = script.AVX2_TARGET if isa == "avx2" else script.AVX512_TARGET
    if isa not in cpu_features() and f"{isa}f" not in cpu_features():
        pytest.skip(f"this CPU lacks {isa}")
    if kind == "packed":
        plain = script.microkernel(t, "packed", first=True)
        fast = script.schedule_microkernel(plain, t)
    else:
        plain = script.edge_microkernel(t, t.nr, first=True)
        fast = script.schedule_edge_microkernel(plain, t, t.nr)
    c = _function(generate_unit("uk", [fast.ir()]).c_source, fast.name())
    v = "_mm256" if isa == "avx2" else "_mm512"
    regs = t.mr * t.nr // t.lanes
    assert c.count(f"{v}_setzero_ps()") == regs and c.count(f"{v}_storeu_ps(") == regs
    loads = re.findall(rf"{v}_loadu_ps\(\(?(\w+)", c)
    assert loads and set(loads) == {"B"}, "B's row only: C is not read"
    assert f"{v}_add_ps(" not in c and "+=" not in c
    f = fast.compile()
    rng = np.random.default_rng(9)
    for mv in range(1, t.mr + 1) if kind == "edge" else [t.mr]:
        k = 37
        a = rng.standard_normal((k, t.mr) if kind == "packed" else (mv, k)).astype(np.float32)
        b = rng.standard_normal((k, t.nr)).astype(np.float32)
        big = rng.standard_normal((t.mr + 3, t.nr + 5)).astype(np.float32)
        big[1 : 1 + mv, 2 : 2 + t.nr] = np.nan
        want, got = big.copy(), big.copy()
        sizes = (k,) if kind == "packed" else (k, mv)
        plain.interpret(*sizes, a, b, want[1 : 1 + mv, 2 : 2 + t.nr])
        f(*sizes, a, b, got[1 : 1 + mv, 2 : 2 + t.nr])
        assert not np.isnan(want[1 : 1 + mv, 2 : 2 + t.nr]).any()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"{mv} rows")


@pytest.mark.parametrize("width", [16, 8, None])
def test_edge_microkernels_match_their_plain_version(script: ModuleType, width: int | None) -> None:
    """Every row count and (masked) width: the compiled, register-blocked edge kernel equals
    the interpreted plain one (C's other elements untouched: C is a window of a bigger array)."""
    t = script.AVX2_TARGET
    plain = script.edge_microkernel(t, width)
    f = script.schedule_edge_microkernel(plain, t, width).compile()
    rng = np.random.default_rng(7)
    for mv in range(1, 7):
        for nv in [width] if width else range(1, 9):
            k = 5
            a = rng.standard_normal((mv, k)).astype(np.float32)
            b = rng.standard_normal((k, nv)).astype(np.float32)
            big = rng.standard_normal((8, 20)).astype(np.float32)
            want, got = big.copy(), big.copy()
            sizes = (k, mv) if width else (k, mv, nv)
            plain.interpret(*sizes, a, b, want[1 : 1 + mv, 2 : 2 + nv])
            f(*sizes, a, b, got[1 : 1 + mv, 2 : 2 + nv])
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=f"{mv} x {nv}")


def test_the_isa_follows_the_cpu(script: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CURSCHED_CPU_FEATURES", "avx,avx2,fma")
    assert script.target() is script.AVX2_TARGET
    monkeypatch.setenv("CURSCHED_CPU_FEATURES", "avx,avx2,fma,avx512f")
    monkeypatch.setenv("CURSCHED_CPU_VENDOR", "intel")
    assert script.target() is script.AVX512_INTEL_TARGET
    monkeypatch.setenv("CURSCHED_CPU_VENDOR", "amd")
    t = script.target()
    assert t is script.AVX512_TARGET and (t.mr, t.nr) == (14, 32)
    fast = script.schedule_microkernel(script.microkernel(t, "packed"), t)
    c = generate_unit("uk", [fast.ir()]).c_source
    # k in chunks of 16 (and the tail): 28 FMAs in each; one row of C prefetched per chunk
    assert c.count("_mm512_fmadd_ps(") == 2 * 28 and "__m512 Ct[14][2];" in c
    loops = re.findall(r"for \(int_fast64_t (\w+) = 0; \1 < ([^;]+);", c)
    assert loops == [("ko", "KC / 16"), ("ki", "16"), ("ki", "KC % 16")], loops
    head, chunk = c.split("for (int_fast64_t ko", 1)
    assert "_mm_prefetch(" not in head and chunk.count("(C + ko % 14 * C_stride_0)") == 2
    edge = script.schedule_edge_microkernel(script.edge_microkernel(t, None), t, None)
    c = generate_unit("uk", [edge.ir()]).c_source
    assert c.count("_mm512_mask3_fmadd_ps(") == 14 and "__m512 Ct[14];" in c
    assert c.count("_mm512_mask_loadu_ps(") == 15 and c.count("_mm512_mask_storeu_ps(") == 14


@pytest.mark.skipif("avx512f" not in cpu_features(), reason="this CPU lacks AVX-512")
@pytest.mark.parametrize(
    "maker, kc, mcb, rows_k",
    [("amd", 1024, 12, 512), ("amd", 16, 2, 512), ("amd", 16, 2, 0), ("intel", 16, 2, 0)],
)
def test_avx512_target_matches_numpy(
    script: ModuleType, maker: str, kc: int, mcb: int, rows_k: int
) -> None:
    """The AVX-512 schedule (AMD's target, or Intel's: B loaded with a prefetch), with its
    own blocking and with a small one (many K blocks, MC blocks and their tails at small
    sizes), at sizes with every edge and a K remainder; a K of at most ``rows_k`` runs on A's
    rows in place (and on B's when N is as short), a deeper one packs them (each case at M =
    200: whole MC blocks; ``rows_k`` 0: always packed)."""
    base = script.AVX512_INTEL_TARGET if maker == "intel" else script.AVX512_TARGET
    t = base._replace(kc=kc, mcb=mcb, rows_k=rows_k)
    p = script.schedule(script.sgemm, t)
    sizes = [(1, 1, 1), (15, 33, 17), (29, 70, 2 * kc + 3), (61, 95, kc), (14, 32, kc + 1)]
    sizes += [(200, 70, 300), (200, 530, 300), (200, 70, 700)]
    assert script.check(p, sizes) <= 1e-5
    if kc >= 64:
        return
    # the interpreter (the instructions' bodies) agrees: every kernel, 2 K blocks; the right
    # edge's 19 columns (2 strips of 8, 3 masked) in the MC blocks and (45 rows) their tail;
    # K = 2 KC: the first K block is ko = 0 (no remainder), its kernels write C
    rng = np.random.default_rng(11)
    f = p.compile()
    for m, n, k in ((31, 83, 2 * kc + 5), (45, 83, 2 * kc + 5), (45, 83, 2 * kc)):
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        c1, c2 = np.full((m, n), np.nan, np.float32), np.full((m, n), np.nan, np.float32)
        p.interpret(m, n, k, a, b, c1)
        f(m, n, k, a, b, c2)
        np.testing.assert_allclose(c1, c2, rtol=1e-5, atol=1e-5)


def test_avx512_final_proc_golden(scheduled512: Proc, golden) -> None:  # type: ignore[no-untyped-def]
    golden.check(scheduled512)


@pytest.fixture(scope="module")
def scheduled512_intel(script: ModuleType) -> Proc:
    """The AVX-512 schedule with Intel's tuning (B prefetched by the kernels' loads, A and B
    always packed)."""
    return script.schedule(script.sgemm, script.AVX512_INTEL_TARGET)


def test_avx512_intel_final_proc_golden(scheduled512_intel: Proc, golden) -> None:  # type: ignore[no-untyped-def]
    golden.check(scheduled512_intel)


def test_avx512_intel_target_prefetches_b_and_packs(
    script: ModuleType, scheduled512: Proc, scheduled512_intel: Proc
) -> None:
    """Intel's target differs from AMD's in two fields only: its kernels' loads of B
    prefetch 3 KiB ahead (one ``_mm_prefetch`` per load, the loads otherwise the same; the
    edge kernels' loads of C do not prefetch), and a short K packs A and B like a deep one
    (``rows_k = 0``: no kernel reads A's rows in place but the bottom edge's, as with a deep
    K)."""
    intel, amd = script.AVX512_INTEL_TARGET, script.AVX512_TARGET
    assert intel._replace(bload=amd.bload, rows_k=amd.rows_k) == amd
    kernel = {
        t: script.schedule_microkernel(script.microkernel(t, "packed"), t) for t in (intel, amd)
    }
    c_intel, c_amd = (generate_unit("uk", [kernel[t].ir()]).c_source for t in (intel, amd))
    b_row = r"Bv\[\d\] = _mm512_loadu_ps\("
    loads = len(re.findall(b_row, c_amd))
    assert loads == len(re.findall(b_row, c_intel)) == 4  # 2 vectors, k chunked and its tail
    assert c_intel.count("+ 3072, _MM_HINT_T0)") == loads and "3072" not in c_amd
    edge = script.schedule_edge_microkernel(script.edge_microkernel(intel, 32), intel, 32)
    c_edge = generate_unit("uk", [edge.ir()]).c_source
    c_loads = re.findall(r"Ct\[\d+\]\[\d\] = _mm512_loadu_ps\(.*", c_edge)
    b_loads = re.findall(r"Bv\[\d\] = _mm512_loadu_ps\(.*", c_edge)
    assert len(c_loads) == 28 and not any("_mm_prefetch" in line for line in c_loads)
    assert b_loads and all("+ 3072, _MM_HINT_T0)" in line for line in b_loads)
    # whole 14-row tiles on A's rows in place (MV = 14), and B's rows in place: AMD's short K
    in_place = (r", 14, A\[", r", B\[")
    for pattern in in_place:
        assert re.search(pattern, str(scheduled512)), pattern
        assert not re.search(pattern, str(scheduled512_intel)), pattern


@pytest.mark.skipif("avx512f" not in cpu_features(), reason="this CPU lacks AVX-512")
def test_avx512_intel_target_matches_numpy(script: ModuleType, scheduled512_intel: Proc) -> None:
    """Intel's schedule at sizes with every edge, a short K (packed here) and a deep one."""
    sizes = [(1, 1, 1), (15, 33, 17), (200, 530, 300), (29, 70, 1024 + 3), (181, 95, 1024)]
    assert script.check(scheduled512_intel, sizes) <= 1e-5


def test_avx512_right_edge_runs_in_the_blocks_on_packed_a(scheduled512: Proc) -> None:
    """With AVX-512 the right edge's row tiles are calls of the transposed kernel on the
    packed panels of A (``Ap``, ``At``, ``Aq``, ``Au``), in strips of 8 columns of ``Be``;
    only the corner and a short K's rows in place use the masked kernel; no scalar update."""
    text = str(scheduled512)
    assert "+=" not in text
    calls = re.findall(r"(ukernel_\w+)\((.*)\)", text)
    assert {name for name, _ in calls} == {
        "ukernel_packed_avx512", "ukernel_edge_32_avx512",
        "ukernel_packed_first_avx512", "ukernel_edge_32_first_avx512",
        "ukernel_edge_masked_avx512", "ukernel_right_packed_avx512",
    }  # fmt: skip
    right = [args for name, args in calls if name == "ukernel_right_packed_avx512"]
    panels = sorted({args.split(", ")[2].split("[")[0] for args in right})
    assert panels == ["Ap", "Aq", "At", "Au"], panels
    assert all(", Be[" in args for args in right)


def test_right_microkernel_is_vector_code(script: ModuleType, golden) -> None:  # type: ignore[no-untyped-def]
    """Per k: one masked load of A's 14 packed floats and one broadcast-FMA per column, each
    column its own register (``if j < NV``); zeroed before the loop, added after it (the
    scheduled proc's golden: the new instructions' calls)."""
    t = script.AVX512_TARGET
    fast = script.schedule_right_microkernel(script.right_microkernel(t), t)
    golden.check(fast)
    c = _function(generate_unit("uk", [fast.ir()]).c_source, "ukernel_right_packed_avx512")
    head, rest = c.split("for (int_fast64_t k = 0; k < KC; k++) {", 1)
    loop, tail = rest.split("\n    }\n", 1)
    assert "__m512 Ct[8];" in head and head.count("_mm512_mask_mov_ps(") == 8
    assert loop.count("_mm512_mask_loadu_ps(") == 1 and loop.count("_mm512_mask3_fmadd_ps(") == 8
    assert "for (" not in loop and "+=" not in loop
    assert [c.count(f"if ({j} < NV)") for j in (1, 7)] == [3, 3]
    assert tail.count("_mm512_storeu_ps(cs_l_, Ct[") == 8


@pytest.mark.skipif("avx512f" not in cpu_features(), reason="this CPU lacks AVX-512")
def test_right_microkernel_matches_its_plain_version(script: ModuleType) -> None:
    """Every column count: the compiled transposed kernel equals the interpreted plain one (C
    a window of a bigger array, its other elements untouched)."""
    t = script.AVX512_TARGET
    plain = script.right_microkernel(t)
    f = script.schedule_right_microkernel(plain, t).compile()
    rng = np.random.default_rng(8)
    for nv in range(1, 9):
        for k in (1, 37):
            a = rng.standard_normal((k, 14)).astype(np.float32)
            b = rng.standard_normal((k, nv)).astype(np.float32)
            big = rng.standard_normal((17, 12)).astype(np.float32)
            want, got = big.copy(), big.copy()
            plain.interpret(k, nv, a, b, want[2:16, 3 : 3 + nv])
            f(k, nv, a, b, got[2:16, 3 : 3 + nv])
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=f"{nv}, {k}")


def test_replace_refuses_a_b_whose_rows_are_strided(script: ModuleType) -> None:
    """With B a window of any strides, ``stride(B, 1) == 1`` of the micro-kernel is not
    provable: ``replace`` refuses, naming the assert."""
    src = """
def strided(K: size, A: f32[6, K] @ DRAM, B: [f32][K, 16] @ DRAM, C: f32[6, 16] @ DRAM):
    for k in seq(0, K):
        for i in seq(0, 6):
            for j in seq(0, 16):
                C[i, j] += A[i, k] * B[k, j]
"""
    p = Proc(check_bounds(parse_source(src, {"DRAM": DRAM})))
    uk = script.microkernel(script.AVX2_TARGET, "rows")
    with pytest.raises(ReplaceAssertError, match=r"stride\(B, 1\) == 1"):
        replace(p, p.find_loop("k"), uk)


@pytest.mark.skipif(not {"avx2", "fma"} <= cpu_features(), reason="this CPU lacks AVX2+FMA")
def test_sanitized_build_runs_the_intrinsics(scheduled: Proc) -> None:
    # sanitized builds once lacked -march=native, so intrinsics did not compile at all
    m, n, k = 13, 37, 300
    rng = np.random.default_rng(3)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.full((m, n), np.nan, np.float32)
    scheduled.compile(sanitize=True)(m, n, k, a, b, c)
    want = a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(c - want).max() <= 1e-5 * (np.abs(a) @ np.abs(b)).max()
