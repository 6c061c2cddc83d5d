"""Single-thread sgemm on this CPU: numpy (OpenBLAS at 1 thread), the cursched schedule of
sched/sgemm_x86.py, and exo-lang's AVX2 6 x 16 micro-kernel, measured in one run.

For each n in the list: best of N interleaved runs (numpy, ours, numpy, ours, ...) of
``C = A @ B`` (n x n float32), GFLOP/s by wall clock and by the thread's CPU time (the
machine is shared: CPU time excludes the time other processes hold the core), the ratio to
numpy, and the percentage of the peak measured in the same run by an FMA throughput probe
(12 independent chains of 256-bit FMAs, or 512-bit with AVX-512, in registers).
``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE`` are removed from this process's environment
before numpy is imported, so OpenBLAS picks its kernel from the CPU; the kernel it runs is
printed.

The micro-kernels are also timed alone on L1-resident data (``C[6, 16] += A @ B``, KC =
384, repeated in a C loop, best of N interleaved), as the yardstick of the full sgemm in the
same run: ours (``ukernel_rows``: A as rows, Exo's layout; ``ukernel_packed``: the packed
panel of the sgemm's AVX2 target; on an AVX-512 CPU also the 14 x 32
``ukernel_packed_avx512`` the sgemm runs there) and exo-lang's own AVX2 example
``examples/avx2_matmul/x86_matmul.py`` (``rank_k_reduce_6x16_scheduled``), built at run
time by the installed exo-lang from a copy of its repository: ``--exo PATH`` (the example
file, a checkout of github.com/exo-lang/exo, or its bare git directory; default
``$CURSCHED_EXO_REPO``). Without exo-lang or the example, its row says why it was skipped.
Nothing of Exo's is copied into cursched.

``--blocks KCxMCB,...`` times more cache blockings of the schedule in the same loop (one
ratio column each, by CPU time).

Run: python benchmarks/sgemm.py [--quick] [--reps N] [--sizes 256,512,...] [--exo PATH]
"""

from __future__ import annotations

import os

_UNSET = {
    k: os.environ.pop(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in os.environ
}

import argparse
import ctypes
import runpy
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cursched.codegen.build import build_library
from cursched.platforms.x86 import cpu_features, cpu_vendor, isa

SIZES = [256, 384, 512, 768, 1024, 1536, 2048, 1000, 1999]

_PROBE = """
#include <immintrin.h>
#include <stdint.h>
#define V {v}
#define FMA(a) a = {fma}(a, x, y)
void cs_fma_probe(int64_t n, float *out) {{
    /* distinct starts: from equal starts the 12 chains are one value, and gcc computes a
       single chain (one FMA per iteration, its latency: the peak read 1.5x too high) */
    V a0 = {set1}(1.0f), a1 = {set1}(1.01f), a2 = {set1}(1.02f), a3 = {set1}(1.03f);
    V a4 = {set1}(1.04f), a5 = {set1}(1.05f), a6 = {set1}(1.06f), a7 = {set1}(1.07f);
    V a8 = {set1}(1.08f), a9 = {set1}(1.09f), a10 = {set1}(1.1f), a11 = {set1}(1.11f);
    const V x = {set1}(0.999999f), y = {set1}(1e-7f);
    for (int64_t i = 0; i < n; i++) {{
        FMA(a0); FMA(a1); FMA(a2); FMA(a3); FMA(a4); FMA(a5);
        FMA(a6); FMA(a7); FMA(a8); FMA(a9); FMA(a10); FMA(a11);
    }}
    a0 = {add}({add}({add}(a0, a1), {add}(a2, a3)), {add}({add}(a4, a5), {add}(a6, a7)));
    a0 = {add}(a0, {add}({add}(a8, a9), {add}(a10, a11)));
    {store}(out, a0);
}}
"""


def cpu_model() -> str:
    """The CPU's model name, family and model from ``/proc/cpuinfo`` (or ``platform``)."""
    info: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, val = line.partition(":")
            info.setdefault(key.strip(), val.strip())
    except OSError:
        import platform

        return platform.processor() or "unknown"
    return (
        f"{info.get('model name', '?')} (family {info.get('cpu family', '?')},"
        f" model {info.get('model', '?')}), flags avx2={'avx2' in info.get('flags', '')}"
    )


def probe_fmas(lib: str) -> int | None:
    """FMAs per iteration of the probe's loop in the built ``lib`` (``objdump``), or None
    without binutils: the wave-2 probe's 12 chains had equal starts, gcc merged them into one,
    and its "peak" (one FMA's latency per step counted as 12 FMAs) was 1.5x the real one."""
    sys.path.insert(0, str(ROOT / "tools"))
    from inner_loops import fma_loops

    try:
        loops = fma_loops(lib)
    except FileNotFoundError:
        return None
    return max((loop.fmas for loop in loops), default=0)


def fma_probe(width: int) -> tuple[float, float]:
    """Peak FLOP/s of this core (wall, CPU time): 12 independent FMA chains, best of 5."""
    m = "_mm512" if width == 16 else "_mm256"
    src = _PROBE.format(
        v="__m512" if width == 16 else "__m256",
        fma=f"{m}_fmadd_ps",
        set1=f"{m}_set1_ps",
        add=f"{m}_add_ps",
        store=f"{m}_storeu_ps",
    )
    built = build_library("cs_fma_probe", src, ("-O2", "-march=native", "-fPIC", "-shared"))
    fmas = probe_fmas(str(built.lib_path))
    if fmas is not None and fmas != 12:  # the flop count below assumes 12 FMAs a step
        raise SystemExit(f"FMA probe: its loop has {fmas} FMAs, not 12 (objdump)")
    fn = ctypes.CDLL(str(built.lib_path)).cs_fma_probe
    fn.argtypes = [ctypes.c_int64, ctypes.c_void_p]
    out = np.zeros(16, np.float32)
    n = 5_000_000
    flops = n * 12 * 2 * width
    wall, cpu = [], []
    for _ in range(5):
        w, c = time.perf_counter(), time.thread_time()
        fn(n, out.ctypes.data)
        cpu.append(time.thread_time() - c)
        wall.append(time.perf_counter() - w)
    return flops / min(wall), flops / min(cpu)


EXAMPLE = "examples/avx2_matmul/x86_matmul.py"

_UK_HARNESS = """
#include <stdint.h>
#include <time.h>
static double cs_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}
double cs_time_rows(int64_t kc, int64_t reps, float *a, float *b, float *c) {
    double t0 = cs_now();
    for (int64_t r = 0; r < reps; r++) ukernel_rows_avx2(kc, a, kc, 1, b, 16, 1, c, 16, 1);
    return cs_now() - t0;
}
double cs_time_packed(int64_t kc, int64_t reps, float *a, float *b, float *c) {
    double t0 = cs_now();
    for (int64_t r = 0; r < reps; r++) ukernel_packed_avx2(kc, a, 6, 1, b, 16, 1, c, 16, 1);
    return cs_now() - t0;
}
"""

_WIDE_HARNESS = """
double cs_time_wide(int64_t kc, int64_t reps, float *a, float *b, float *c) {
    double t0 = cs_now();
    for (int64_t r = 0; r < reps; r++) ukernel_packed_avx512(kc, a, 14, 1, b, 32, 1, c, 32, 1);
    return cs_now() - t0;
}
"""

_EXO_HARNESS = """
double cs_time_exo(int64_t kc, int64_t reps, float *a, float *b, float *c) {
    double t0 = cs_now();
    for (int64_t r = 0; r < reps; r++) rank_k_reduce_6x16_scheduled(0, kc, a, b, c);
    return cs_now() - t0;
}
"""


def exo_example_source(where: str) -> tuple[str | None, str]:
    """The text of Exo's AVX2 example from ``where`` (the file, a checkout, or a bare git
    directory), or None and why not."""
    if not where:
        return None, "no copy of the exo repository (--exo PATH or $CURSCHED_EXO_REPO)"
    path = Path(where)
    if path.is_file():
        return path.read_text(), str(path)
    if (path / EXAMPLE).is_file():
        return (path / EXAMPLE).read_text(), str(path / EXAMPLE)
    git = subprocess.run(
        ["git", f"--git-dir={path}", "show", f"HEAD:{EXAMPLE}"], capture_output=True, text=True
    )
    if git.returncode == 0:
        return git.stdout, f"{path} (git) HEAD:{EXAMPLE}"
    return None, f"{EXAMPLE} not found under {path}"


def exo_microkernel_c(where: str) -> tuple[str | None, str]:
    """Exo's example micro-kernel compiled to C by the installed exo-lang, or None and why."""
    try:
        import exo
    except ImportError as e:
        return None, f"exo-lang is not installed ({e})"
    text, origin = exo_example_source(where)
    if text is None:
        return None, origin
    tmp = Path(__import__("tempfile").mkdtemp()) / "x86_matmul.py"
    tmp.write_text(text)
    out = sys.stdout  # the example silences stdout when imported
    try:
        ns = runpy.run_path(str(tmp), run_name="exo_example")
    finally:
        sys.stdout = out
    c, h = exo.compile_procs_to_strings([ns["avx"]], "exo_uk.h")
    version = getattr(exo, "__version__", "1.0")
    return h + c.replace('#include "exo_uk.h"', ""), f"exo-lang {version}, {origin}"


def bench_microkernels(reps: int, exo_where: str) -> None:
    """Ours and Exo's 6 x 16 micro-kernels alone on L1 data, interleaved, best of ``reps``."""
    from cursched.codegen.c import generate_unit

    mod = runpy.run_path(str(ROOT / "sched" / "sgemm_x86.py"), run_name="sgemm_x86")
    t = mod["AVX2_TARGET"]
    fast = [mod["schedule_microkernel"](mod["microkernel"](t, k), t) for k in ("rows", "packed")]
    wide = isa() == "avx512"  # and the AVX-512 target's 14 x 32 kernel, the sgemm's there
    if wide:
        w = mod["AVX512_TARGET"]
        fast.append(mod["schedule_microkernel"](mod["microkernel"](w, "packed"), w))
    src = generate_unit("cs_uk", [p.ir() for p in fast]).c_source + _UK_HARNESS
    src += _WIDE_HARNESS if wide else ""
    exo_c, exo_note = exo_microkernel_c(exo_where)
    if exo_c is not None:
        src += exo_c + _EXO_HARNESS
    built = build_library("cs_uk_bench", src, ("-O3", "-march=native", "-fPIC", "-shared"))
    lib = ctypes.CDLL(str(built.lib_path))
    kc, calls = 384, 20_000
    rng = np.random.default_rng(1)
    a = rng.standard_normal(6 * kc).astype(np.float32) * 1e-3
    b = rng.standard_normal(kc * 16).astype(np.float32) * 1e-3
    c = np.zeros(6 * 16, np.float32)
    names = ["rows", "packed"] + (["exo"] if exo_c is not None else []) + (["wide"] * wide)
    best = dict.fromkeys(names, 1e9)
    aw = rng.standard_normal(14 * kc).astype(np.float32) * 1e-3
    bw = rng.standard_normal(kc * 32).astype(np.float32) * 1e-3
    cw = np.zeros(14 * 32, np.float32)
    for _ in range(reps):
        for name in names:
            fn = getattr(lib, f"cs_time_{name}")
            fn.restype = ctypes.c_double
            data = (aw, bw, cw) if name == "wide" else (a, b, c)
            ptrs = [ctypes.c_void_p(x.ctypes.data) for x in data]
            best[name] = min(best[name], fn(ctypes.c_int64(kc), ctypes.c_int64(calls), *ptrs))
    tile = {"wide": 14 * 32}
    gf = {k: 2.0 * tile.get(k, 6 * 16) * kc * calls / v / 1e9 for k, v in best.items()}
    print(f"micro-kernels alone, 6 x 16, KC = {kc}, L1 data, by thread CPU time:")
    print(f"  ours (A rows, Exo's layout)  {gf['rows']:6.1f} GF/s")
    print(f"  ours (A packed, the sgemm's) {gf['packed']:6.1f} GF/s")
    if exo_c is not None:
        print(f"  exo example ({exo_note})  {gf['exo']:6.1f} GF/s;"
              f" ours (rows) / exo = {gf['rows'] / gf['exo']:.2f}")  # fmt: skip
    else:
        print(f"  exo example: skipped ({exo_note})")
    if wide:
        print(f"  ours AVX-512 14 x 32 (A packed, the sgemm's here) {gf['wide']:6.1f} GF/s")
    print()


def _time(f: Callable[[], object]) -> tuple[float, float]:
    w, c = time.perf_counter(), time.thread_time()
    f()
    return time.perf_counter() - w, time.thread_time() - c


def bench_sizes(sizes: list[int], reps: int, peak: tuple[float, float], blocks: str) -> None:
    """numpy against the schedule, at each n, interleaved; ``blocks`` (``"KCxMCB,..."``, or
    empty for the script's own) adds one column per cache blocking, timed in the same loop."""
    mod = runpy.run_path(str(ROOT / "sched" / "sgemm_x86.py"), run_name="sgemm_x86")
    t0 = time.perf_counter()
    ours = {"ours": mod["schedule"](mod["sgemm"]).compile()}
    for spec in (s for s in blocks.split(",") if s):
        kc, mcb = (int(x) for x in spec.split("x"))
        ours[spec] = mod["schedule_tuned"](mod["sgemm"], kc, mcb).compile()
    t = mod["target"]()
    tuning = f", B's rows loaded by {t.bload.name()}" if t.bload else ""
    tuning += ", A and B always packed" if not t.rows_k else f", rows in place at K <= {t.rows_k}"
    print(f"schedule + compile: {time.perf_counter() - t0:.1f} s; ours: {t.name} {t.mr} x {t.nr},"
          f" KC = {t.kc}, MC = {t.mr * t.mcb}{tuning} (CPU maker: {cpu_vendor()})\n")  # fmt: skip
    extra = [k for k in ours if k != "ours"]
    head = (
        f"{'n':>5} | {'numpy GF/s':>10} {'ours GF/s':>9} {'ours/np':>7} {'% peak':>6} |"
        f" {'numpy GF/s':>10} {'ours GF/s':>9} {'ours/np':>7} {'% peak':>6} | {'rel err':>7}"
        + "".join(f" | {k + ' /np':>14}" for k in extra)
    )
    print(f"{'':5} | {'by wall clock':^36} | {'by thread CPU time':^36} |")
    print(head)
    print("-" * len(head))
    rng = np.random.default_rng(0)
    for n in sizes:
        a = rng.standard_normal((n, n)).astype(np.float32)
        b = rng.standard_normal((n, n)).astype(np.float32)
        c, c_np = np.empty((n, n), np.float32), np.empty((n, n), np.float32)
        best = {k: [1e9, 1e9] for k in ["np", *ours]}
        runs: dict[str, Callable[[], object]] = {
            "np": lambda a=a, b=b, c_np=c_np: np.matmul(a, b, out=c_np)
        }
        for k, f in ours.items():
            runs[k] = lambda n=n, a=a, b=b, c=c, f=f: f(n, n, n, a, b, c)
        errs = []
        want = a.astype(np.float64) @ b.astype(np.float64)
        for _ in range(reps):
            for name, f in runs.items():
                c.fill(np.nan)
                w, cpu = _time(f)
                best[name][0] = min(best[name][0], w)
                best[name][1] = min(best[name][1], cpu)
                if name != "np":
                    errs.append(float(np.max(np.abs(c - want)) / np.max(np.abs(want))))
        fl = 2.0 * n**3
        cols = []
        for k in (0, 1):
            g_np, g_ours = fl / best["np"][k] / 1e9, fl / best["ours"][k] / 1e9
            pct = 100 * g_ours * 1e9 / peak[k]
            cols.append(f"{g_np:10.1f} {g_ours:9.1f} {g_ours / g_np:7.2f} {pct:5.0f}%")
        more = "".join(f" | {best['np'][1] / best[k][1]:14.2f}" for k in extra)
        print(f"{n:5d} | {cols[0]} | {cols[1]} | {max(errs):7.1e}{more}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="n = 256, 512, 1000 only, 2 runs")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sizes", default="")
    ap.add_argument("--blocks", default="",
                    help="more cache blockings, same run: KCxMCB,... (by CPU time)")  # fmt: skip
    ap.add_argument("--exo", default=os.environ.get("CURSCHED_EXO_REPO", ""),
                    help="exo's example file, a checkout, or its bare git directory")  # fmt: skip
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s] or SIZES
    reps = args.reps
    if args.quick:
        sizes, reps = [256, 512, 1000], 2
    print(f"unset in this process before importing numpy: {_UNSET or 'none was set'}")
    feats = cpu_features()
    print(f"CPU: {cpu_model()}")
    print(f"CPU: isa() = {isa()}, avx2={'avx2' in feats} fma={'fma' in feats}"
          f" avx512f={'avx512f' in feats}; load average {os.getloadavg()[0]:.1f}"
          f" on {os.cpu_count()} CPUs")  # fmt: skip
    with threadpool_limits(1):
        for info in threadpool_info():
            if info.get("user_api") == "blas":
                print(
                    f"numpy BLAS: {info.get('internal_api')} {info.get('version')},"
                    f" kernel (core type) {info.get('architecture')},"
                    f" threads {info.get('num_threads')}"
                )
        width = 16 if isa() == "avx512" else 8
        peak = fma_probe(width)
        print(
            f"FMA probe ({width * 32}-bit): {peak[0] / 1e9:.1f} GFLOP/s by wall clock,"
            f" {peak[1] / 1e9:.1f} by CPU time\n"
        )
        if isa() in ("avx2", "avx512"):  # the AVX2 micro-kernels run on both
            bench_microkernels(max(reps, 3), args.exo)
        bench_sizes(sizes, reps, peak, args.blocks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
